//! process_load: a ring of relay processes passing messages through pipes (contest's
//! process_load stresses the scheduler with many context switches). The load process writes
//! `messages` 64-byte messages into the first relay's stdin and reads them back from the last
//! relay's stdout; each relay (`sweetspot __worker relay`, in the load's process group) copies
//! its stdin to its stdout.

use super::counter::Counter;
use crate::{Error, Result};
use std::io::{Read, Write};
use std::process::{Command, Stdio};

const MSG: usize = 64;

pub(super) fn run(procs: u32, messages: u32, counter: &Counter) -> Result<()> {
    let exe = std::env::current_exe().map_err(|e| Error::io("finding sweetspot's binary", e))?;
    let spawn_err = |e| Error::io("starting a process_load relay", e);
    let mut first = Command::new(&exe)
        .args(["__worker", "relay"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(spawn_err)?;
    let mut input = first
        .stdin
        .take()
        .ok_or_else(|| Error::Failed("relay stdin".into()))?;
    let mut prev = first
        .stdout
        .take()
        .ok_or_else(|| Error::Failed("relay stdout".into()))?;
    for _ in 1..procs.max(1) {
        let mut c = Command::new(&exe)
            .args(["__worker", "relay"])
            .stdin(Stdio::from(prev))
            .stdout(Stdio::piped())
            .spawn()
            .map_err(spawn_err)?;
        prev = c
            .stdout
            .take()
            .ok_or_else(|| Error::Failed("relay stdout".into()))?;
    }
    let mut output = prev;
    let err = |e| Error::io("passing a process_load message", e);
    let msg = [0x5au8; MSG];
    for _ in 0..messages.max(1) {
        input.write_all(&msg).map_err(err)?;
    }
    let mut buf = [0u8; MSG];
    loop {
        output.read_exact(&mut buf).map_err(err)?;
        counter.add(1);
        input.write_all(&buf).map_err(err)?;
    }
}

/// Copies stdin to stdout until either closes.
pub(super) fn relay() -> Result<()> {
    let mut i = std::io::stdin().lock();
    let mut o = std::io::stdout().lock();
    let mut buf = [0u8; MSG];
    loop {
        let n = i.read(&mut buf).map_err(|e| Error::io("relay read", e))?;
        if n == 0 {
            return Ok(());
        }
        if o.write_all(&buf[..n]).and_then(|_| o.flush()).is_err() {
            return Ok(());
        }
    }
}

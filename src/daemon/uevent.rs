//! Disks appearing, from the kernel's uevents: a `NETLINK_KOBJECT_UEVENT` socket bound to the
//! kernel's multicast group (1), read through tokio's [`AsyncFd`] (no thread, no busy poll).
//! Only the `block` subsystem's whole disks (`DEVTYPE=disk`) count, and only messages whose
//! sender is the kernel (netlink port 0): udev's re-broadcasts (group 2, `libudev` header)
//! and other processes are ignored. When the socket cannot be opened (a kernel without
//! netlink, a seccomp filter), the daemon says so and finds new disks by its `/sys/block`
//! poll alone.
//!
//! A message is `ACTION@DEVPATH\0` and then `KEY=VALUE\0` pairs (kernel
//! `lib/kobject_uevent.c`); the ones read here are `ACTION`, `SUBSYSTEM`, `DEVTYPE` and
//! `DEVNAME`.

use nix::sys::socket::{
    AddressFamily, NetlinkAddr, SockFlag, SockProtocol, SockType, bind, recvfrom, socket,
};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use tokio::io::unix::AsyncFd;

/// The kernel's uevent multicast group (udev's own re-broadcasts are group 2).
const KERNEL_GROUP: u32 = 1;

/// Bytes read per message: the kernel's `UEVENT_BUFFER_SIZE` is 2048.
const BUF: usize = 8192;

/// One disk's uevent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    /// `add`, `change`, `remove`, ...; `overflow` when the socket's buffer overflowed and
    /// events were lost (look at every disk).
    pub action: String,
    /// The disk's kernel name (`DEVNAME`, e.g. `loop3`); empty for `overflow`.
    pub name: String,
}

/// Parses one kernel uevent message; `None` unless it is of a whole block disk.
pub(crate) fn parse(msg: &[u8]) -> Option<Event> {
    let mut fields = msg.split(|&b| b == 0).skip(1);
    let (mut action, mut subsystem, mut devtype, mut name) = (None, None, None, None);
    for f in fields.by_ref() {
        let f = std::str::from_utf8(f).ok()?;
        match f.split_once('=') {
            Some(("ACTION", v)) => action = Some(v),
            Some(("SUBSYSTEM", v)) => subsystem = Some(v),
            Some(("DEVTYPE", v)) => devtype = Some(v),
            Some(("DEVNAME", v)) => name = Some(v),
            _ => {}
        }
    }
    if subsystem != Some("block") || devtype != Some("disk") {
        return None;
    }
    Some(Event {
        action: action?.to_string(),
        // DEVNAME is relative to /dev; a disk's is its sysfs name (`loop3`, `dm-0`).
        name: name?.rsplit('/').next()?.to_string(),
    })
}

/// The uevent socket.
pub(crate) struct Watch {
    fd: AsyncFd<OwnedFd>,
}

impl Watch {
    /// Opens and binds the socket (inside the tokio runtime, with its I/O driver).
    pub(crate) fn open() -> io::Result<Watch> {
        let fd = socket(
            AddressFamily::Netlink,
            SockType::Datagram,
            SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
            SockProtocol::NetlinkKObjectUEvent,
        )?;
        bind(fd.as_raw_fd(), &NetlinkAddr::new(0, KERNEL_GROUP))?;
        // SAFETY: an `OwnedFd` is a valid open descriptor that stays open, and its
        // `as_raw_fd` the same one, until the `AsyncFd` (its owner now) is dropped.
        let fd = unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
            .map_err(io::Error::from)?;
        Ok(Watch { fd })
    }

    /// Waits for disk events and returns those that arrived together (at least one).
    pub(crate) async fn next(&self) -> io::Result<Vec<Event>> {
        let mut buf = vec![0u8; BUF];
        loop {
            let mut guard = self.fd.readable().await?;
            let mut out = Vec::new();
            loop {
                let r = guard.try_io(|fd| {
                    recvfrom::<NetlinkAddr>(fd.get_ref().as_raw_fd(), &mut buf)
                        .map_err(io::Error::from)
                });
                match r {
                    Ok(Ok((n, from))) => {
                        // Only the kernel's own messages (port 0).
                        if from.is_some_and(|a| a.pid() == 0)
                            && let Some(e) = parse(&buf[..n])
                        {
                            out.push(e);
                        }
                    }
                    Ok(Err(e)) if e.raw_os_error() == Some(libc::ENOBUFS) => out.push(Event {
                        action: "overflow".into(),
                        name: String::new(),
                    }),
                    Ok(Err(e)) => return Err(e),
                    // Drained: the readiness is cleared.
                    Err(_would_block) => break,
                }
            }
            if !out.is_empty() {
                return Ok(out);
            }
        }
    }
}

/// Waits on `w`'s next events; never returns when there is no socket (the poll finds disks).
pub(crate) async fn next(w: &Option<Watch>) -> io::Result<Vec<Event>> {
    match w {
        Some(w) => w.next().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn parses_kernel_messages_of_whole_disks_only() {
        let m = b"change@/devices/virtual/block/loop3\0ACTION=change\0\
            DEVPATH=/devices/virtual/block/loop3\0SUBSYSTEM=block\0MAJOR=7\0MINOR=3\0\
            DEVNAME=loop3\0DEVTYPE=disk\0DISKSEQ=12\0SEQNUM=4242\0";
        assert_eq!(
            parse(m),
            Some(Event {
                action: "change".into(),
                name: "loop3".into()
            })
        );
        let part = b"add@/devices/virtual/block/loop3/loop3p1\0ACTION=add\0\
            SUBSYSTEM=block\0DEVNAME=loop3p1\0DEVTYPE=partition\0";
        assert_eq!(parse(part), None);
        let net = b"add@/devices/virtual/net/veth0\0ACTION=add\0SUBSYSTEM=net\0";
        assert_eq!(parse(net), None);
        assert_eq!(parse(b"garbage"), None);
    }

    #[test]
    fn the_socket_opens_here() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        rt.block_on(async { Watch::open().map(|_| ()) }).unwrap();
    }
}

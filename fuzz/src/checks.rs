//! What each fuzz target asserts of one input, one function per parser. Shared by the
//! libFuzzer targets (`fuzz/fuzz_targets/`, nightly) and by the stable replay test
//! `tests/cli/fuzz_corpus.rs`, which runs every file of `fuzz/corpus/` and `fuzz/regressions/`
//! through these same functions on every `cargo test`.
//!
//! For every parser: no panic, and a refusal is bad input (exit code 2: `Error::BadInput` or
//! `Error::BadFile`) with a message; a `BadFile` names the file it was given and a line that
//! exists in it. Where cheap, an invariant of what it accepts:
//! - profile: exported again ([`Profile::to_toml`]) and re-parsed, it is equal;
//! - emulate spec: its canonical form parses, to the same canonical form;
//! - surface: the simulated device built from it gives a finite, positive time for every
//!   load at its default setting and at every listed point;
//! - daemon config: a `quiet_hours` it accepted reads as a window.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use sweetspot::Error;
use sweetspot::bench::emulate::spec::Spec;
use sweetspot::bench::sim::SimDevice;
use sweetspot::bench::surface::Surface;
use sweetspot::profile::model::Profile;
use sweetspot::types::{KnobValue, Setting};

/// The file name every parser is given (errors must name it).
const FILE: &str = "fuzz-input.toml";

/// Asserts that `e`, a refusal of `text` by `parser`, is bad input naming the file and an
/// existing line.
fn refused(parser: &str, text: &str, e: &Error) {
    let code = e.exit_code();
    assert_eq!(
        code, 2,
        "{parser}: refused with exit {code}, not 2: {e} ({e:?})\n{text:?}"
    );
    assert!(
        !e.to_string().trim().is_empty(),
        "{parser}: empty message for {text:?}"
    );
    if let Error::BadFile { path, line, .. } = e {
        assert_eq!(path, Path::new(FILE), "{parser}: names another file: {e}");
        let lines = text.matches('\n').count() + 1;
        if let Some(l) = line {
            assert!(
                (1..=lines).contains(l),
                "{parser}: line {l} of {lines}: {e}\n{text:?}"
            );
        }
    }
}

/// A policy (`sweetspot::tune::policy::parse`).
pub fn policy(text: &str) {
    match sweetspot::tune::policy::parse(text, Path::new(FILE), "fuzz", FILE) {
        Ok(p) => {
            let _ = p.objective.label();
        }
        Err(e) => refused("policy", text, &e),
    }
}

/// A surface file (`Surface::parse`), then the simulated device built from it.
pub fn surface(text: &str) {
    let s = match Surface::parse(Path::new(FILE), text) {
        Ok(s) => s,
        Err(e) => return refused("surface", text, &e),
    };
    let loads = s.loads();
    let mut settings = vec![Setting::new()];
    for p in &s.points {
        let mut set: Setting = p
            .knobs
            .iter()
            .map(|(k, v)| (k.clone(), KnobValue::Int(*v)))
            .collect();
        if let Some(sched) = &p.scheduler {
            set.insert("scheduler".into(), KnobValue::Name(sched.clone()));
        }
        settings.push(set);
    }
    let dev = SimDevice::new(s, 0);
    for set in &settings {
        for &l in &loads {
            let m = dev.expected(set, l);
            let t = m.as_ref().map(|m| m.time_s);
            assert!(
                t.is_some_and(|t| t.is_finite() && t > 0.0),
                "surface: {l} at {set:?}: time {t:?}\n{text:?}"
            );
        }
    }
}

/// A profile (`sweetspot::profile::file::parse`); an accepted one exported and re-parsed is
/// equal.
pub fn profile(text: &str) {
    let p = match sweetspot::profile::file::parse(text, Path::new(FILE)) {
        Ok(p) => p,
        Err(e) => return refused("profile", text, &e),
    };
    let out = p
        .to_toml()
        .unwrap_or_else(|e| panic!("profile: accepted but not exported: {e}\n{text:?}"));
    let back: Profile = sweetspot::profile::file::parse(&out, Path::new(FILE))
        .unwrap_or_else(|e| panic!("profile: its export is refused: {e}\n{text:?}\n{out}"));
    assert!(back == p, "profile: export changed it\n{text:?}\n{out}");
}

/// A daemon config (`sweetspot::daemon::config::parse`).
pub fn daemon_config(text: &str) {
    match sweetspot::daemon::config::parse(text, Path::new(FILE)) {
        Ok(c) => {
            let _ = (c.interval_label(), c.named());
            if let Some(q) = &c.quiet_hours {
                let w = sweetspot::daemon::config::quiet_window(q);
                assert!(
                    w.is_some(),
                    "daemon config: quiet_hours {q:?} accepted, unread"
                );
            }
        }
        Err(e) => refused("daemon config", text, &e),
    }
}

/// An `--emulate` SPEC (`Spec::parse`); an accepted one's canonical form parses to itself.
pub fn emulate_spec(text: &str) {
    let s = match Spec::parse(text) {
        Ok(s) => s,
        Err(e) => return refused("emulate spec", text, &e),
    };
    let c = s.canonical();
    let again = Spec::parse(&c)
        .unwrap_or_else(|e| panic!("emulate spec: canonical {c:?} refused: {e}\n{text:?}"));
    assert_eq!(
        again.canonical(),
        c,
        "emulate spec: canonical form moved\n{text:?}"
    );
    let _ = s.name();
}

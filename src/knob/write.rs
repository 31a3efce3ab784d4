//! The low-level knob write both the apply and the restore path use: whether a knob already
//! holds a value, and one write read back and checked. Below [`super::apply`] and
//! [`super::restore`], so neither imports the other for it; it journals nothing (the callers
//! do, before they call it).

use super::io::{KnobIo, parse_int, read_value, write_text};
use super::validate::Write;
use super::{KnobValue, catalogue};
use crate::{Error, Result};

/// True when the knob already holds exactly `v` (no write needed).
pub(super) fn same(v: &KnobValue, read: &str) -> bool {
    match v {
        KnobValue::Name(n) => read == n,
        KnobValue::Int(i) => parse_int(read) == Some(*i),
    }
}

/// True when `read` (a value as the kernel prints it) is what `w` asked for ([`holds`]).
fn honoured(w: &Write, read: &str) -> bool {
    let jiffies = catalogue::kept_in_jiffies(w.scheduler.as_deref(), &w.name);
    holds(&w.value, jiffies, read)
}

/// True when a knob that reads `read` holds `v`: equal, or, for a knob the kernel keeps in
/// `jiffies` ([`catalogue::kept_in_jiffies`]), `v` rounded up to a jiffy: above `v` by less
/// than [`catalogue::JIFFY_TOLERANCE_MS`] (0 stays 0). That is what a write of `v` reads back
/// as, so `verify`, `status` and the daemon judge drift as the write path judges
/// "honoured"; every other knob must read back exactly (bfq's `slice_idle` 8 is not 0).
pub(crate) fn holds(v: &KnobValue, jiffies: bool, read: &str) -> bool {
    match v {
        KnobValue::Name(n) => read == n,
        KnobValue::Int(v) => parse_int(read).is_some_and(|r| {
            r == *v || (jiffies && *v > 0 && r > *v && r - v < catalogue::JIFFY_TOLERANCE_MS)
        }),
    }
}

/// True when `knob`, as discovered now, holds `v` ([`holds`], with the knob's own jiffies
/// fact): the one judgement of drift for `verify`, `status` and the daemon.
pub(crate) fn knob_holds(knob: &super::Knob, v: &KnobValue) -> bool {
    let jiffies = catalogue::kept_in_jiffies(knob.scheduler.as_deref(), &knob.name);
    holds(v, jiffies, &knob.current.to_string())
}

/// Writes `"{v}\n"` (`X`/`NO_X` for a feature flag), reads it back, and fails unless the
/// kernel honoured it.
pub(super) fn write_checked(io: &dyn KnobIo, w: &Write) -> Result<()> {
    let value = w.value.to_string();
    io.write(
        &w.path,
        &format!("{}\n", write_text(w.order, &w.name, &w.value)),
    )
    .map_err(|source| Error::KnobWrite {
        knob: w.name.clone(),
        value: value.clone(),
        path: w.path.clone(),
        source,
    })?;
    let read = read_value(io, &w.path, w.order, &w.name)?;
    if !honoured(w, &read) {
        return Err(Error::NotHonoured {
            knob: w.name.clone(),
            wrote: value,
            read,
        });
    }
    Ok(())
}

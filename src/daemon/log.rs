//! The daemon's log lines, for journald: one line per event on stderr, no colour, no time
//! (the journal stamps each line), and a `<N>` syslog priority prefix (sd-daemon(3):
//! `<3>` error, `<4>` warning, `<6>` info, `<7>` debug and trace), which journald reads off
//! a service's stderr (`SyslogLevelPrefix=yes`, its default), so `journalctl -p warning`
//! works. Without `$JOURNAL_STREAM` (not under systemd) the level is a word instead.

use std::fmt;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::FmtContext;
use tracing_subscriber::fmt::format::{FormatEvent, FormatFields, Writer};
use tracing_subscriber::registry::LookupSpan;

/// The `<N>` prefix of a level (sd-daemon(3)).
pub(crate) fn priority(level: &Level) -> u8 {
    match *level {
        Level::ERROR => 3,
        Level::WARN => 4,
        Level::INFO => 6,
        _ => 7,
    }
}

/// A [`FormatEvent`] writing `<N>message` (journald) or `LEVEL message`.
pub(crate) struct Journald {
    /// True: `<N>` prefixes; false: the level's name.
    pub prefix: bool,
}

impl Journald {
    /// Prefixes when stderr goes to the journal (`$JOURNAL_STREAM` is set, systemd.exec(5)).
    pub(crate) fn detect() -> Journald {
        Journald {
            prefix: std::env::var_os("JOURNAL_STREAM").is_some(),
        }
    }
}

impl<S, N> FormatEvent<S, N> for Journald
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let level = event.metadata().level();
        if self.prefix {
            write!(w, "<{}>", priority(level))?;
        } else {
            write!(w, "{level:>5} ")?;
        }
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_follow_sd_daemon() {
        assert_eq!(priority(&Level::ERROR), 3);
        assert_eq!(priority(&Level::WARN), 4);
        assert_eq!(priority(&Level::INFO), 6);
        assert_eq!(priority(&Level::TRACE), 7);
    }
}

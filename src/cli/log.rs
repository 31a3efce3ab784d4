//! The command line's log lines on stderr: `sweetspot: warning: message`, the shape of the
//! command's own errors (`sweetspot: error: …`) and of other Linux tools' diagnostics, with
//! no time, no target and no colour. The daemon writes its own, for the journal
//! ([`crate::daemon::log`]).

use std::fmt;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::FmtContext;
use tracing_subscriber::fmt::format::{FormatEvent, FormatFields, Writer};
use tracing_subscriber::registry::LookupSpan;

/// A [`FormatEvent`] writing `sweetspot: LEVEL: message` (`error`, `warning`, `info`,
/// `debug`, `trace`).
pub(super) struct Diagnostic;

/// The word a [`Diagnostic`] line gives a level.
fn word(level: &Level) -> &'static str {
    match *level {
        Level::ERROR => "error",
        Level::WARN => "warning",
        Level::INFO => "info",
        Level::DEBUG => "debug",
        Level::TRACE => "trace",
    }
}

impl<S, N> FormatEvent<S, N> for Diagnostic
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
        write!(w, "sweetspot: {}: ", word(event.metadata().level()))?;
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_level_has_its_word() {
        assert_eq!(word(&Level::ERROR), "error");
        assert_eq!(word(&Level::WARN), "warning");
        assert_eq!(word(&Level::INFO), "info");
        assert_eq!(word(&Level::DEBUG), "debug");
        assert_eq!(word(&Level::TRACE), "trace");
    }
}

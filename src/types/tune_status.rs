//! Where a tune stands: the `tunes.status` column, stored as text (`running`, `done`, …) and
//! read back with [`TuneStatus::from_str`](std::str::FromStr::from_str), so an unknown status
//! in a database is an error naming it.

use super::owner::Unknown;
use std::fmt;
use std::str::FromStr;

/// A tune's status. A tune starts `running` and ends `done`, `interrupted`, `failed` or
/// `recovered`; a stopped tune whose trials a later tune took over becomes `resumed`.
/// `killed` is never stored: `history` and `status` show it for a `running` row whose process
/// is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TuneStatus {
    /// Started and not finished (or its process died without finishing it).
    Running,
    /// Finished with a verdict.
    Done,
    /// Stopped by a signal (Ctrl-C, SIGTERM) before its verdict; resumable.
    Interrupted,
    /// Ended by an error before its verdict.
    Failed,
    /// Found dead by the next command, whose recovery put its knobs back; resumable.
    Recovered,
    /// Stopped, and a later tune took its finished trials over.
    Resumed,
    /// Shown only (never stored): a `running` row whose process is gone.
    Killed,
}

impl TuneStatus {
    /// Every status, for tests and for listing.
    pub(crate) const ALL: [TuneStatus; 7] = [
        TuneStatus::Running,
        TuneStatus::Done,
        TuneStatus::Interrupted,
        TuneStatus::Failed,
        TuneStatus::Recovered,
        TuneStatus::Resumed,
        TuneStatus::Killed,
    ];

    /// The status's text, as stored and shown.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            TuneStatus::Running => "running",
            TuneStatus::Done => "done",
            TuneStatus::Interrupted => "interrupted",
            TuneStatus::Failed => "failed",
            TuneStatus::Recovered => "recovered",
            TuneStatus::Resumed => "resumed",
            TuneStatus::Killed => "killed",
        }
    }

    /// True for a tune stopped before its verdict whose trials a new tune may take over
    /// (`interrupted` or `recovered`).
    pub(crate) fn is_resumable(self) -> bool {
        matches!(self, TuneStatus::Interrupted | TuneStatus::Recovered)
    }
}

impl fmt::Display for TuneStatus {
    /// Its text, padded as asked (`{:<11}`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for TuneStatus {
    type Err = Unknown;

    /// The status `s` names. Errors: any other text ([`Unknown`]).
    fn from_str(s: &str) -> Result<Self, Unknown> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| Unknown {
                what: "tune status",
                text: s.to_string(),
            })
    }
}

/// A status equals its text (`t.status == "done"`), as the integration tests and JSON
/// readers hold it.
impl PartialEq<&str> for TuneStatus {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl serde::Serialize for TuneStatus {
    /// As its text (`"done"`), as `history --json` printed it when statuses were strings.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_round_trips_through_its_stored_text() {
        let texts: Vec<&str> = TuneStatus::ALL.iter().map(|t| t.as_str()).collect();
        assert_eq!(
            texts,
            [
                "running",
                "done",
                "interrupted",
                "failed",
                "recovered",
                "resumed",
                "killed"
            ]
        );
        for t in TuneStatus::ALL {
            assert_eq!(t.to_string().parse::<TuneStatus>(), Ok(t));
        }
        assert_eq!(format!("[{:<7}]", TuneStatus::Done), "[done   ]");
        assert!(TuneStatus::Done == "done" && TuneStatus::Done != "Done");
    }

    #[test]
    fn unknown_text_is_an_error_naming_it() {
        let e = "Done".parse::<TuneStatus>().unwrap_err();
        assert_eq!(e.to_string(), "unknown tune status 'Done'");
    }
}

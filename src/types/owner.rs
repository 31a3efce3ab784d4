//! Who journaled a knob's original: the owner of an undo journal entry. Stored in the
//! `journal.owner` column as text (`set`, `bench`, `profile`, `tune:<id>`). Read back from a
//! database with `Owner::read`: text sweetspot never writes is kept as [`Owner::Unknown`], so
//! such a row still protects the knob for other writers (it is another owner's change) while
//! `restore` refuses to write it. [`Owner::from_str`](std::str::FromStr::from_str) is the strict
//! parse, an error naming unknown text.

use std::fmt;
use std::str::FromStr;

/// The owner of a journal entry: the command whose writes it undoes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Owner {
    /// `sweetspot set` (text `set`).
    Set,
    /// A `sweetspot bench` on a real device (text `bench`); a killed one's entries are put
    /// back by the next command.
    Bench,
    /// `sweetspot profile apply` and the daemon's own writes (text `profile`).
    Profile,
    /// The tune with this `tunes.id` (text `tune:<id>`).
    Tune(i64),
    /// Text that names none of the above (a newer sweetspot's owner, a damaged or edited
    /// row), kept as read. `restore` reports such a row and leaves it open; every other rule
    /// counts it as another writer's change.
    Unknown(String),
}

impl Owner {
    /// The owner stored as `text`: the one it names ([`Owner::from_str`](FromStr::from_str)),
    /// else [`Owner::Unknown`] holding it.
    pub(crate) fn read(text: &str) -> Owner {
        text.parse()
            .unwrap_or_else(|_| Owner::Unknown(text.to_string()))
    }

    /// The tune this owner is, if it is one.
    pub(crate) fn tune_id(&self) -> Option<i64> {
        match self {
            Owner::Tune(id) => Some(*id),
            _ => None,
        }
    }
}

impl fmt::Display for Owner {
    /// Its stored text, padded as asked (`{:<8}`); an unknown owner's text is shown on one
    /// line (`super::text::shown`: control characters escaped), as it may be anything.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Owner::Set => f.pad("set"),
            Owner::Bench => f.pad("bench"),
            Owner::Profile => f.pad("profile"),
            Owner::Tune(id) => f.pad(&format!("tune:{id}")),
            Owner::Unknown(text) => f.pad(&super::text::shown(text)),
        }
    }
}

/// Text that names no [`Owner`] (or [`super::TuneStatus`]): the text, shown on one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unknown {
    /// What was being read: `journal owner`, `tune status`.
    pub what: &'static str,
    /// The text read.
    pub text: String,
}

impl fmt::Display for Unknown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown {} '{}'",
            self.what,
            super::text::shown(&self.text)
        )
    }
}

impl std::error::Error for Unknown {}

impl FromStr for Owner {
    type Err = Unknown;

    /// The owner `s` names (a tune's id in its one decimal form, as [`Owner`]'s `Display`
    /// writes it, so a filter by owner matches the stored text). Errors: any other text
    /// ([`Unknown`]).
    fn from_str(s: &str) -> Result<Self, Unknown> {
        match s {
            "set" => Ok(Owner::Set),
            "bench" => Ok(Owner::Bench),
            "profile" => Ok(Owner::Profile),
            _ => s
                .strip_prefix("tune:")
                .and_then(|id| {
                    id.parse::<i64>()
                        .ok()
                        .filter(|n| *n >= 0 && n.to_string() == id)
                })
                .map(Owner::Tune)
                .ok_or_else(|| Unknown {
                    what: "journal owner",
                    text: s.to_string(),
                }),
        }
    }
}

impl serde::Serialize for Owner {
    /// As its stored text (`tune:3`), as `restore --json` printed it when owners were strings.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_owner_round_trips_through_its_stored_text() {
        for (o, text) in [
            (Owner::Set, "set"),
            (Owner::Bench, "bench"),
            (Owner::Profile, "profile"),
            (Owner::Tune(42), "tune:42"),
        ] {
            assert_eq!(o.to_string(), text);
            assert_eq!(text.parse::<Owner>(), Ok(o));
        }
        assert_eq!(format!("[{:>7}]", Owner::Tune(3)), "[ tune:3]");
    }

    #[test]
    fn unknown_text_is_an_error_naming_it() {
        for bad in [
            "", "Set", "tune:", "tune:x", "tune:-1", "tune:+1", "tune:07", "tune: 1", "daemon\n",
        ] {
            let e = bad.parse::<Owner>().unwrap_err();
            assert_eq!(e.text, bad);
            assert!(e.to_string().starts_with("unknown journal owner '"), "{e}");
        }
        assert_eq!(
            "daemon\n".parse::<Owner>().unwrap_err().to_string(),
            "unknown journal owner 'daemon\\n'"
        );
    }

    #[test]
    fn read_keeps_unknown_text_and_writes_it_back_unchanged() {
        assert_eq!(Owner::read("tune:9"), Owner::Tune(9));
        assert_eq!(Owner::read("daemon"), Owner::Unknown("daemon".into()));
        assert_eq!(Owner::read("tune:07").to_string(), "tune:07");
        assert_eq!(Owner::read("tune:07").tune_id(), None);
        assert_eq!(Owner::read("x\ny").to_string(), "x\\ny");
    }
}

//! `status`'s typed values: what holds for a device ([`State`]), when it is retuned
//! ([`Retune`]) and which config is shown ([`ConfigShown`]). `status --json` prints them as
//! objects tagged by `kind` (docs/json.md, docs/schemas/status.schema.json); the text table
//! prints their sentences ([`State::text`], [`Retune::text`], [`ConfigShown::text`]), so the
//! two never say different things.

use crate::output::json::Stamp;
use crate::types::KnobValue;
use serde::{Serialize, Serializer};

/// Serializes Unix seconds as a time's RFC 3339 text (its `_epoch_s` twin beside it).
fn rfc3339<S: Serializer>(at: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&Stamp::new(*at).rfc3339)
}

/// As [`rfc3339`], `None` staying `null`.
fn rfc3339_opt<S: Serializer>(at: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
    at.map(|a| Stamp::new(a).rfc3339).serialize(s)
}

/// A knob of the sweet spot that differs on the disk now (the daemon not running).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Off {
    /// Knob name.
    pub knob: String,
    /// Its value now; `None`: it does not exist now (its scheduler is not active).
    pub now: Option<KnobValue>,
    /// The sweet spot's value.
    pub sweet_spot: KnobValue,
}

/// A knob another writer holds at another value than the sweet spot's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Contest {
    /// Knob name.
    pub knob: String,
    /// The value the other writer keeps (a number for a numeric knob).
    #[serde(serialize_with = "crate::types::setting::serialize_printed")]
    pub value: String,
}

/// What holds for an enrolled device now.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum State {
    /// No sweet spot stored (the device may be absent too: `device` is then `null`).
    NeverTuned,
    /// Tuned, but no disk has its identity now.
    Absent,
    /// The daemon is not running; `off` lists the sweet spot's knobs that differ on the disk
    /// now (empty: it is at its sweet spot).
    NotManaged {
        /// The knobs away from the sweet spot.
        off: Vec<Off>,
    },
    /// `sweetspot restore` put it back at `at` (Unix s) while the daemon ran: left alone
    /// until the daemon restarts or reloads its config.
    Restored {
        /// When, RFC 3339 in JSON.
        #[serde(serialize_with = "rfc3339")]
        at: i64,
        /// When, Unix s.
        at_epoch_s: i64,
    },
    /// Another writer keeps these knobs: left alone until the daemon reloads its config.
    Contested {
        /// The knobs and the other writer's values.
        knobs: Vec<Contest>,
    },
    /// The daemon runs but has not applied the sweet spot.
    NotApplied,
    /// The daemon applied the sweet spot and watches it. `host_not_managed`: its host-wide
    /// knobs the daemon does not manage (not applied yet; or put back by `restore` at
    /// `host_restored_at`); empty when it manages them all.
    Managed {
        /// Host-wide knobs of the sweet spot not managed now.
        host_not_managed: Vec<String>,
        /// When `restore` put them back (RFC 3339 in JSON), else `None`.
        #[serde(serialize_with = "rfc3339_opt")]
        host_restored_at: Option<i64>,
        /// The same, Unix s.
        host_restored_at_epoch_s: Option<i64>,
    },
}

impl State {
    /// The sentence `status` prints; `present`: a disk has the identity now.
    pub(crate) fn text(&self, present: bool) -> String {
        match self {
            State::NeverTuned if present => "never tuned".to_string(),
            State::NeverTuned => "never tuned, absent".to_string(),
            State::Absent => "absent".to_string(),
            State::NotManaged { off } => {
                let now = if off.is_empty() {
                    "at its sweet spot".to_string()
                } else {
                    off.iter()
                        .map(|o| {
                            let now = o.now.as_ref().map_or("absent".into(), |v| v.to_string());
                            format!("{} is {now}, sweet spot {}", o.knob, o.sweet_spot)
                        })
                        .collect::<Vec<_>>()
                        .join("; ")
                };
                format!("not managed (the daemon is not running): {now}")
            }
            State::Restored { at, .. } => format!(
                "restored by `sweetspot restore` at {}: not managed until the daemon restarts \
                 or reloads its config (SIGHUP)",
                Stamp::new(*at).rfc3339
            ),
            State::Contested { knobs } => format!(
                "contested: {}; left alone until the daemon reloads its config (SIGHUP: \
                 `systemctl reload sweetspot`), which applies the sweet spot again",
                knobs
                    .iter()
                    .map(|c| format!("{} (another writer keeps {})", c.knob, c.value))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            State::NotApplied => {
                "not applied yet (the daemon has not applied its sweet spot)".to_string()
            }
            State::Managed {
                host_not_managed, ..
            } if host_not_managed.is_empty() => "managed".to_string(),
            State::Managed {
                host_not_managed,
                host_restored_at: Some(at),
                ..
            } => format!(
                "managed, but not its host-wide {}: restored by `sweetspot restore` at {}, not \
                 managed until the daemon restarts or reloads its config (SIGHUP)",
                host_not_managed.join(", "),
                Stamp::new(*at).rfc3339
            ),
            State::Managed {
                host_not_managed, ..
            } => format!(
                "managed, but not its host-wide {}: not applied yet",
                host_not_managed.join(", ")
            ),
        }
    }
}

/// When the daemon retunes a device, and why ([`super::super::retune::due`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Retune {
    /// The daemon is tuning it now.
    Tuning,
    /// Due now: never tuned.
    NeverTuned,
    /// Due now: its sweet spot was tuned on another kernel release than the running one.
    KernelChanged {
        /// The release it was tuned on.
        tuned_on: String,
        /// The running release.
        running: String,
    },
    /// Due now: the retune interval elapsed at `at` (Unix s).
    IntervalElapsed {
        /// When, RFC 3339 in JSON.
        #[serde(serialize_with = "rfc3339")]
        at: i64,
        /// When, Unix s.
        at_epoch_s: i64,
    },
    /// Due at `at` (Unix s, in the future): the interval after its sweet spot.
    Scheduled {
        /// When, RFC 3339 in JSON.
        #[serde(serialize_with = "rfc3339")]
        at: i64,
        /// When, Unix s.
        at_epoch_s: i64,
    },
    /// Not retuned: its sweet spot's policy is one a retune cannot run (the daemon keeps the
    /// device at it; `waiting` is `kept`).
    Kept,
    /// Due at `at`: the last retune failed and the daemon backs off until then.
    Backoff {
        /// When, RFC 3339 in JSON.
        #[serde(serialize_with = "rfc3339")]
        at: i64,
        /// When, Unix s.
        at_epoch_s: i64,
    },
    /// Due at `at`: a flash device's write budget holds a retune only then
    /// ([`crate::daemon::write_budget`]).
    WriteBudget {
        /// When, RFC 3339 in JSON.
        #[serde(serialize_with = "rfc3339")]
        at: i64,
        /// When, Unix s.
        at_epoch_s: i64,
    },
}

impl Retune {
    /// The sentence `status` prints: `every` is the interval as people read it (`7 days`),
    /// `present` whether a disk has the identity now.
    pub(crate) fn text(&self, every: &str, present: bool) -> String {
        let when = match self {
            Retune::Tuning => return "tuning now".to_string(),
            Retune::Kept => {
                return "not retuned: its sweet spot's policy is one a retune cannot run (see \
                        waiting)"
                    .to_string();
            }
            Retune::NeverTuned if present => return "due now: never tuned".to_string(),
            Retune::NeverTuned => return "due when it is present: never tuned".to_string(),
            Retune::KernelChanged { tuned_on, running } => {
                format!("due now: tuned on {tuned_on}, running {running} (the sweet spot is stale)")
            }
            Retune::IntervalElapsed { at, .. } => format!(
                "due now (the interval elapsed at {}; every {every})",
                Stamp::new(*at).rfc3339
            ),
            Retune::Scheduled { at, .. } => {
                format!("due {} (every {every})", Stamp::new(*at).rfc3339)
            }
            Retune::Backoff { at, .. } => format!(
                "due {} (the last retune failed; every {every})",
                Stamp::new(*at).rfc3339
            ),
            Retune::WriteBudget { at, .. } => format!(
                "due {} (its write budget holds a retune then; every {every})",
                Stamp::new(*at).rfc3339
            ),
        };
        if present {
            when
        } else {
            format!("{when}, when it is present")
        }
    }
}

/// Where the config `status` shows came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ConfigSource {
    /// `--config`.
    Given,
    /// The running daemon's (read from its command line).
    RunningDaemon,
    /// The default path (no daemon runs).
    Default,
    /// The default path, because the running daemon's config does not load.
    DefaultNotRunningDaemon,
}

/// The config whose enrolled devices and retune interval `status` shows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct ConfigShown {
    /// Its path.
    pub path: std::path::PathBuf,
    /// Where it came from.
    pub source: ConfigSource,
    /// False: the file does not exist, so the built-in defaults are shown.
    pub exists: bool,
}

impl ConfigShown {
    /// `<path> (given)`, `<path>: absent, built-in defaults (the default)`, ….
    pub(crate) fn text(&self) -> String {
        let source = match self.source {
            ConfigSource::Given => "given",
            ConfigSource::RunningDaemon => "the running daemon's",
            ConfigSource::Default => "the default",
            ConfigSource::DefaultNotRunningDaemon => "the default, not the running daemon's",
        };
        format!(
            "{}{} ({source})",
            self.path.display(),
            if self.exists {
                ""
            } else {
                ": absent, built-in defaults"
            }
        )
    }
}

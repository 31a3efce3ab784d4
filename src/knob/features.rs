//! The CPU scheduler's feature flags (debugfs `sched/features`): the flags the catalogue
//! knows (`FEATURES`), and the file's text format. Reading it gives every flag, as `X` when
//! on and `NO_X` when off (`sched_feat_show`, kernel/sched/debug.c); writing `NO_X` turns X off
//! and `X` turns it on (`sched_feat_write`). Discovery and debugfs are in [`super::sched`].

use crate::types::KnobValue;

/// Source of the feature flags: their names and defaults.
pub(crate) const FEATURES_SOURCE: &str = "kernel/sched/features.h";

/// One scheduler feature flag the catalogue knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Feature {
    /// The flag, e.g. `NEXT_BUDDY`.
    pub name: &'static str,
    /// Its default and the kernels that have it.
    pub note: &'static str,
}

const fn ft(name: &'static str, note: &'static str) -> Feature {
    Feature { name, note }
}

/// Feature flags of kernel/sched/features.h: those of current kernels (defaults as of 6.12–6.18)
/// and the legacy ones of the 2009 CFS debate. A kernel's own list is read from
/// `sched/features`; a flag not listed here is shown by `knobs` but not tuned.
#[rustfmt::skip]
pub(crate) static FEATURES: &[Feature] = &[
    ft("PLACE_LAG", "default on (6.6+, EEVDF): keep a waking task's lag"),
    ft("PLACE_DEADLINE_INITIAL", "default on (6.6+): a new task starts with half a slice"),
    ft("PLACE_REL_DEADLINE", "default on (6.12+)"),
    ft("RUN_TO_PARITY", "default on (6.6+): run the current task until it is eligible no more"),
    ft("PREEMPT_SHORT", "default on (6.12+): a shorter slice may preempt"),
    ft("NEXT_BUDDY", "default off: prefer the last woken task"),
    ft("PICK_BUDDY", "default on (6.12+)"),
    ft("CACHE_HOT_BUDDY", "default on: buddies count as cache hot for migration"),
    ft("DELAY_DEQUEUE", "default on (6.12+)"),
    ft("DELAY_ZERO", "default on (6.12+)"),
    ft("WAKEUP_PREEMPTION", "default on: a waking task may preempt"),
    ft("HRTICK", "default off: high-resolution tick for slices"),
    ft("HRTICK_DL", "default off"),
    ft("NONTASK_CAPACITY", "default on"),
    ft("TTWU_QUEUE", "default on (off with PREEMPT_RT): queue remote wakeups"),
    ft("SIS_UTIL", "default on: limit the idle-CPU scan by utilisation"),
    ft("WARN_DOUBLE_CLOCK", "default off: a debugging check"),
    ft("RT_PUSH_IPI", "default on"),
    ft("RT_RUNTIME_SHARE", "default off"),
    ft("LB_MIN", "default off"),
    ft("ATTACH_AGE_LOAD", "default on"),
    ft("WA_IDLE", "default on: wake-affine to an idle CPU"),
    ft("WA_WEIGHT", "default on"),
    ft("WA_BIAS", "default on"),
    ft("UTIL_EST", "default on"),
    ft("LATENCY_WARN", "default off: a debugging check"),
    // Before EEVDF (6.6).
    ft("GENTLE_FAIR_SLEEPERS", "default on, before 6.6: halve the sleeper credit"),
    ft("START_DEBIT", "default on, before 6.6: a new task starts a slice late"),
    ft("LAST_BUDDY", "default on, before 6.6"),
    ft("SIS_PROP", "default off, before 6.6"),
    // The 2009 debate (2.6.2x).
    ft("NEW_FAIR_SLEEPERS", "default on, 2.6.24-2.6.31: credit a waking sleeper"),
    ft("NORMALIZED_SLEEPER", "2.6.2x"),
    ft("AFFINE_WAKEUPS", "default on, 2.6.2x"),
    ft("SYNC_WAKEUPS", "default on, 2.6.2x"),
];

/// True when `name` is a feature flag the catalogue knows.
pub(crate) fn is_feature(name: &str) -> bool {
    FEATURES.iter().any(|f| f.name == name)
}

/// The feature flags listed in `sched/features` text: (flag, on).
pub(crate) fn parse_features(text: &str) -> Vec<(String, bool)> {
    text.split_whitespace()
        .map(|w| match w.strip_prefix("NO_") {
            Some(x) => (x.to_string(), false),
            None => (w.to_string(), true),
        })
        .collect()
}

/// `"1"` when flag `name` is on in `sched/features` text, `"0"` when off; `None` when the
/// kernel does not list it.
pub(crate) fn feature_state(text: &str, name: &str) -> Option<&'static str> {
    parse_features(text)
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, on)| if on { "1" } else { "0" })
}

/// What to write to `sched/features` for flag `name` at `value`: `X` (1) or `NO_X` (0).
pub(crate) fn feature_write(name: &str, value: &KnobValue) -> String {
    match value.as_int() {
        Some(0) => format!("NO_{name}"),
        _ => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_read_as_on_and_off_and_write_as_x_or_no_x() {
        let text = "PLACE_LAG NO_NEXT_BUDDY WAKEUP_PREEMPTION NO_HRTICK";
        assert_eq!(feature_state(text, "PLACE_LAG"), Some("1"));
        assert_eq!(feature_state(text, "NEXT_BUDDY"), Some("0"));
        assert_eq!(feature_state(text, "NO_NEXT_BUDDY"), None);
        assert_eq!(feature_state(text, "START_DEBIT"), None);
        assert_eq!(
            feature_write("NEXT_BUDDY", &KnobValue::Int(0)),
            "NO_NEXT_BUDDY"
        );
        assert_eq!(
            feature_write("NEXT_BUDDY", &KnobValue::Int(1)),
            "NEXT_BUDDY"
        );
        assert!(is_feature("NEW_FAIR_SLEEPERS") && !is_feature("NO_PLACE_LAG"));
    }
}

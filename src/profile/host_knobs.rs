//! The host-wide knobs of a profile's `[host]`, gathered from the exported sweet spots: the
//! device tunes' host-wide knobs, oldest sweet spot first so the newest wins, then the host's
//! own sweet spot (`tune --host`), which decides every host-wide knob it tuned, including
//! those it kept at their default (a device's older value of one is dropped, not exported).

use crate::types::{KnobValue, Setting};
use std::collections::BTreeMap;

/// Host-wide knob values with the sweet spot (identity) each came from.
#[derive(Debug, Default)]
pub struct HostKnobs {
    knobs: Setting,
    from: BTreeMap<String, String>,
}

impl HostKnobs {
    /// Sets `k` to `v` from the sweet spot of `from`, warning when an earlier one (merged
    /// before) set it to another value: the later wins.
    pub fn set(&mut self, k: String, v: KnobValue, from: &str) {
        if let Some(old) = self.knobs.get(&k)
            && *old != v
        {
            tracing::warn!(
                "host-wide {k}: exporting {v} from the sweet spot of {from} over {old} from \
                 the sweet spot of {}",
                self.from.get(&k).map_or("another device", String::as_str)
            );
        }
        self.from.insert(k.clone(), from.to_string());
        self.knobs.insert(k, v);
    }

    /// Drops `k`, which the host's own sweet spot `from` tuned and keeps at `kept` (its
    /// default, or the zero member of a pair it sets the other of), warning when an earlier
    /// sweet spot had set it.
    pub fn keep(&mut self, k: &str, kept: &KnobValue, from: &str) {
        if let Some(old) = self.knobs.remove(k) {
            tracing::warn!(
                "host-wide {k}: not exporting {old} from the sweet spot of {}: the host's own \
                 sweet spot {from}, which tuned {k}, keeps it at {kept}",
                self.from.get(k).map_or("another device", String::as_str)
            );
        }
        self.from.remove(k);
    }

    /// The knobs gathered.
    pub fn into_setting(self) -> Setting {
        self.knobs
    }
}

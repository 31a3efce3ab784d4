//! The host-wide knobs of a profile's `[host]`, gathered from the exported sweet spots: the
//! device tunes' host-wide knobs, oldest sweet spot first so the newest wins, then the host's
//! own sweet spot (`tune --host`), which decides every host-wide knob it tuned, including
//! those it kept at their default (a device's older value of one is dropped, not exported).
//! The members of an exclusive pair (`dirty_ratio`/`dirty_bytes`, …: writing one zeroes the
//! other, `catalogue::exclusive_partner`) never both end up in it: the later one set
//! drops the other, which `profile apply` would refuse as a whole.

use crate::knob::catalogue;

use crate::types::{KnobValue, Setting};
use std::collections::BTreeMap;

/// Host-wide knob values with the sweet spot (identity) each came from.
#[derive(Debug, Default)]
pub(crate) struct HostKnobs {
    knobs: Setting,
    from: BTreeMap<String, String>,
}

impl HostKnobs {
    /// Sets `k` to `v` from the sweet spot of `from`, warning when an earlier one (merged
    /// before) set it to another value: the later wins.
    pub(crate) fn set(&mut self, k: String, v: KnobValue, from: &str) {
        if let Some(old) = self.knobs.get(&k)
            && *old != v
        {
            tracing::warn!(
                "host-wide {k}: exporting {v} from the sweet spot of {from} over {old} from \
                 the sweet spot of {}",
                self.from.get(&k).map_or("another device", String::as_str)
            );
        }
        if v != KnobValue::Int(0)
            && let Some(p) = catalogue::exclusive_partner(&k)
            && let Some(old) = self.knobs.remove(p)
        {
            tracing::warn!(
                "host-wide {k}: exporting {v} from the sweet spot of {from}, which drops {p} = \
                 {old} from the sweet spot of {} (writing one zeroes the other)",
                self.from.get(p).map_or("another device", String::as_str)
            );
            self.from.remove(p);
        }
        self.from.insert(k.clone(), from.to_string());
        self.knobs.insert(k, v);
    }

    /// Drops `k`, which the host's own sweet spot `from` tuned and keeps at `kept` (its
    /// default, or the zero member of a pair it sets the other of), warning when an earlier
    /// sweet spot had set it.
    pub(crate) fn keep(&mut self, k: &str, kept: &KnobValue, from: &str) {
        // Its partner too: writing that would zero the value the host's tune decided on.
        for name in std::iter::once(k).chain(catalogue::exclusive_partner(k)) {
            if let Some(old) = self.knobs.remove(name) {
                let keeps = if name == k {
                    format!("keeps it at {kept}")
                } else {
                    format!("keeps {k} at {kept} (writing {name} would zero {k})")
                };
                tracing::warn!(
                    "host-wide {name}: not exporting {old} from the sweet spot of {}: the \
                     host's own sweet spot {from}, which tuned {k}, {keeps}",
                    self.from.get(name).map_or("another device", String::as_str)
                );
            }
            self.from.remove(name);
        }
    }

    /// The knobs gathered.
    pub(crate) fn into_setting(self) -> Setting {
        self.knobs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(v: i64) -> KnobValue {
        KnobValue::Int(v)
    }

    #[test]
    fn the_later_member_of_an_exclusive_pair_drops_the_other() {
        let mut h = HostKnobs::default();
        h.set("dirty_ratio".into(), int(10), "wwid:a");
        h.set("swappiness".into(), int(10), "wwid:a");
        h.set("dirty_bytes".into(), int(1 << 28), "wwid:b");
        let s = h.into_setting();
        assert_eq!(
            s.into_iter().collect::<Vec<_>>(),
            [
                ("dirty_bytes".to_string(), int(1 << 28)),
                ("swappiness".to_string(), int(10))
            ]
        );
    }

    #[test]
    fn the_hosts_own_kept_knob_drops_a_devices_partner_too() {
        let mut h = HostKnobs::default();
        h.set("dirty_bytes".into(), int(1 << 28), "wwid:b");
        h.set("dirty_background_ratio".into(), int(5), "wwid:b");
        h.keep("dirty_ratio", &int(20), "host:x");
        let s = h.into_setting();
        assert_eq!(
            s.into_iter().collect::<Vec<_>>(),
            [("dirty_background_ratio".to_string(), int(5))]
        );
    }
}

//! `profile export --match model`: one entry per model (and firmware revision). Disks of one
//! model whose sweet spots set the same knobs share an entry: that is what a model match is
//! for. Its provenance (`name`, `kernel`, `policy`, `tuned_at`, `improvement`, `baseline`) is
//! the newest sweet spot's, and the others are named in a comment. Disks whose sweet spots
//! differ cannot share one, and the profile must not hold two entries with the same match
//! ([`super::file::parse`]), so that export is refused, naming the disks and each knob that
//! differs.

use super::model::DeviceEntry;
use crate::types::KnobValue;
use crate::{Error, Result};
use std::collections::{BTreeSet, HashMap};

/// One exported sweet spot, before entries of one match are merged.
#[derive(Clone, Debug)]
pub(crate) struct Member {
    /// Its entry (under `--match model`, the model match).
    pub entry: DeviceEntry,
    /// Its device identity (`wwid:…`).
    pub identity: String,
    /// `(created_at, id)` of the sweet spot: the newest provides a merged entry's provenance.
    pub order: (i64, i64),
}

impl Member {
    /// `sda (wwid:naa.…)`, or the identity alone when no name was stored.
    fn label(&self) -> String {
        if self.entry.name.is_empty() {
            self.identity.clone()
        } else {
            format!("{} ({})", self.entry.name, self.identity)
        }
    }

    fn name(&self) -> &str {
        if self.entry.name.is_empty() {
            &self.identity
        } else {
            &self.entry.name
        }
    }
}

/// One entry per match, in the order of each match's first member: members that share a
/// match become one entry when their knobs are equal. Errors (exit 2): members of one match
/// whose knobs differ.
pub(crate) fn merge(members: Vec<Member>) -> Result<Vec<DeviceEntry>> {
    let mut groups: Vec<Vec<Member>> = Vec::new();
    // Each match's group by its fields (one look-up per member, not a pass over the groups).
    let mut group_of: HashMap<[Option<String>; 6], usize> = HashMap::new();
    for m in members {
        let key = m.entry.matches.fields().map(|(_, v)| v.clone());
        match group_of.get(&key) {
            Some(&g) => groups[g].push(m),
            None => {
                group_of.insert(key, groups.len());
                groups.push(vec![m]);
            }
        }
    }
    groups.into_iter().map(one).collect()
}

fn one(mut group: Vec<Member>) -> Result<DeviceEntry> {
    if group.len() == 1 {
        return Ok(group.remove(0).entry);
    }
    let names: Vec<String> = group.iter().map(Member::label).collect();
    let diff = differences(&group);
    if !diff.is_empty() {
        return Err(Error::BadInput(format!(
            "--match model: {} are {} {}, but their sweet spots differ ({}), and one model \
             entry sets one value: export them with --match identity, or one of them with \
             --device",
            and(&names),
            if group.len() == 2 { "both" } else { "all" },
            group[0].entry.matches.describe(),
            diff.join("; ")
        )));
    }
    tracing::info!(
        "--match model: one entry for {}: their sweet spots set the same knobs",
        and(&names)
    );
    let newest = (0..group.len())
        .max_by_key(|&i| group[i].order)
        .unwrap_or_default();
    let mut entry = group.remove(newest).entry;
    entry.also = group.iter().map(Member::label).collect();
    Ok(entry)
}

/// Per knob that not every member sets alike: `fifo_batch: 8 on sda, 4 on sdb` (`not set`
/// where a member leaves it at its default).
fn differences(group: &[Member]) -> Vec<String> {
    let knobs: BTreeSet<&String> = group.iter().flat_map(|m| m.entry.knobs.keys()).collect();
    let mut out = Vec::new();
    for k in knobs {
        let mut values: Vec<(Option<&KnobValue>, Vec<&str>)> = Vec::new();
        for m in group {
            let v = m.entry.knobs.get(k);
            match values.iter_mut().find(|(x, _)| *x == v) {
                Some((_, on)) => on.push(m.name()),
                None => values.push((v, vec![m.name()])),
            }
        }
        if values.len() > 1 {
            let each: Vec<String> = values
                .iter()
                .map(|(v, on)| {
                    let v = v.map_or_else(|| "not set".to_string(), ToString::to_string);
                    let on: Vec<String> = on.iter().map(|s| s.to_string()).collect();
                    format!("{v} on {}", and(&on))
                })
                .collect();
            out.push(format!("{k}: {}", each.join(", ")));
        }
    }
    out
}

/// `a`, `a and b`, `a, b and c`.
fn and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The comment on a merged entry: `one entry for 2 disks of this model whose sweet spots set
/// the same knobs: sdb (below, the newest) and sda (wwid:…)`.
pub(crate) fn shared(d: &DeviceEntry) -> String {
    let mut all = vec![format!("{} (below, the newest)", d.name)];
    all.extend(d.also.iter().cloned());
    format!(
        "one entry for {} disks of this model whose sweet spots set the same knobs: {}",
        all.len(),
        and(&all)
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::profile::Match;

    fn member(name: &str, order: i64, knobs: &[(&str, i64)]) -> Member {
        Member {
            entry: DeviceEntry {
                name: name.into(),
                matches: Match {
                    model: Some("X".into()),
                    ..Match::default()
                },
                kernel: "6.18.0".into(),
                policy: "quick".into(),
                tuned_at: format!("2026-12-0{order}T08:00:00Z"),
                improvement: None,
                knobs: knobs
                    .iter()
                    .map(|(k, v)| (k.to_string(), (*v).into()))
                    .collect(),
                baseline: Default::default(),
                also: Vec::new(),
            },
            identity: format!("wwid:{name}"),
            order: (order, order),
        }
    }

    #[test]
    fn equal_knobs_become_one_entry_with_the_newest_provenance() {
        let m = [
            member("sda", 1, &[("fifo_batch", 8)]),
            member("sdb", 3, &[("fifo_batch", 8)]),
            member("sdc", 2, &[("fifo_batch", 8)]),
        ];
        let out = merge(m.to_vec()).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].name, "sdb");
        assert_eq!(out[0].tuned_at, "2026-12-03T08:00:00Z");
        assert_eq!(out[0].also, ["sda (wwid:sda)", "sdc (wwid:sdc)"]);
        assert_eq!(
            shared(&out[0]),
            "one entry for 3 disks of this model whose sweet spots set the same knobs: sdb \
             (below, the newest), sda (wwid:sda) and sdc (wwid:sdc)"
        );
    }

    #[test]
    fn differing_knobs_are_named_per_knob_and_disk() {
        let m = vec![
            member("sda", 1, &[("fifo_batch", 8)]),
            member("sdb", 2, &[("fifo_batch", 4), ("read_ahead_kb", 256)]),
            member("sdc", 3, &[("fifo_batch", 8)]),
        ];
        let e = merge(m).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            "--match model: sda (wwid:sda), sdb (wwid:sdb) and sdc (wwid:sdc) are all model X, \
             but their sweet spots differ (fifo_batch: 8 on sda and sdc, 4 on sdb; \
             read_ahead_kb: not set on sda and sdc, 256 on sdb), and one model entry sets one \
             value: export them with --match identity, or one of them with --device"
        );
    }
}

//! Profile entries that match one disk. A fleet entry (`model`, with or without `firmware`)
//! can share a disk with a narrower entry: `model` with `firmware`, or one naming the disk
//! (`wwid`, `serial`+`model`, `by_path`, `backing_file`). On such a disk the narrowest entry
//! applies, wherever it is in the file, and `profile apply` and `verify` say which entries
//! matched the disk and which one applied. A fleet default with a per-disk exception works the
//! same on every machine. File order would not: udev lets the last rule's write win, TuneD
//! gives a device to one plugin instance.
//!
//! Two entries equally narrow on one disk (both name one disk: `wwid W` and `wwid W` with
//! `model M`) give no rule to choose by: `resolve` refuses them with exit 2, naming the
//! file, line and field, before anything is written. Where the file alone shows the overlap
//! (one entry's match sets every field of another's, and more) the reader says so at load
//! (`nested`): a warning naming the entry that will apply, or the same error when neither
//! is narrower.

use super::facts::DiskFacts;
use super::model::{DeviceEntry, Match, Profile};
use crate::device::Device;
use crate::sysroot::SysRoot;
use crate::{Error, Result};
use serde::Serialize;
use std::collections::HashMap;

/// How many disks a match can name. Of the entries matching one disk, the narrowest applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Reach {
    /// `model` alone: every disk of the model.
    Model,
    /// `model` with `firmware`: the model's disks at that firmware revision.
    Firmware,
    /// `wwid`, `serial`+`model`, `by_path` or `backing_file` (with anything else): one disk.
    Disk,
}

impl Reach {
    /// The reach of `m`.
    pub(crate) fn of(m: &Match) -> Reach {
        let one = [&m.wwid, &m.serial, &m.by_path, &m.backing_file];
        if one.iter().any(|f| f.is_some()) {
            Reach::Disk
        } else if m.firmware.is_some() {
            Reach::Firmware
        } else {
            Reach::Model
        }
    }

    fn name(self) -> &'static str {
        match self {
            Reach::Model => "model alone",
            Reach::Firmware => "model and firmware",
            Reach::Disk => "one disk",
        }
    }

    fn both(self) -> &'static str {
        match self {
            Reach::Model => "both name a model alone",
            Reach::Firmware => "both name a model and firmware",
            Reach::Disk => "both name one disk",
        }
    }
}

/// True when `b` sets every field `a` sets, to the same value, and more: every disk `b`
/// matches, `a` matches too.
pub(crate) fn narrows(b: &Match, a: &Match) -> bool {
    b != a
        && a.fields()
            .iter()
            .zip(b.fields())
            .all(|((_, x), (_, y))| x.is_none() || *x == y)
}

/// One present disk that several entries match.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Overlap {
    /// The disk (kernel name).
    pub device: String,
    /// The entries that match it (indices of `[[device]]`), in file order.
    pub entries: Vec<usize>,
    /// The one that applies to it: the narrowest.
    pub applies: usize,
    /// What the log and `verify` say about it.
    pub message: String,
}

/// Which entry applies to which present disk.
#[derive(Clone, Debug)]
pub(crate) struct Resolved<'a> {
    /// `(entry index, disk)`, entries in file order: each disk once, with its narrowest entry.
    pub targets: Vec<(usize, &'a Device)>,
    /// The disks several entries match.
    pub overlaps: Vec<Overlap>,
    /// Per entry (index of `[[device]]`): true when it matches one of the disks looked at,
    /// whether or not it is the one that applies there.
    pub matched: Vec<bool>,
}

/// The fields a match is indexed by, in this order: the first one a match sets is its key.
/// Every match the profile reader accepts sets one of them; one that sets none is compared
/// with every disk.
const KEYS: [&str; 5] = ["wwid", "serial", "by_path", "backing_file", "model"];

/// The value of field `key` of `m` ([`KEYS`]).
fn field<'m>(m: &'m Match, key: &str) -> Option<&'m str> {
    let v = match key {
        "wwid" => &m.wwid,
        "serial" => &m.serial,
        "by_path" => &m.by_path,
        "backing_file" => &m.backing_file,
        _ => &m.model,
    };
    v.as_deref()
}

/// A profile's entries by the value of their key field, so the entries that can match a disk
/// are found by at most five look-ups instead of a pass over every entry: a match equals a
/// disk only where its key field does.
struct Index<'p> {
    by: HashMap<(&'static str, &'p str), Vec<usize>>,
    rest: Vec<usize>,
}

impl<'p> Index<'p> {
    fn of(profile: &'p Profile) -> Index<'p> {
        let mut by: HashMap<(&'static str, &'p str), Vec<usize>> = HashMap::new();
        let mut rest = Vec::new();
        for (i, d) in profile.devices.iter().enumerate() {
            match KEYS
                .iter()
                .find_map(|k| field(&d.matches, k).map(|v| (*k, v)))
            {
                Some(key) => by.entry(key).or_default().push(i),
                None => rest.push(i),
            }
        }
        Index { by, rest }
    }

    /// The entries matching the disk of `facts`, in file order.
    fn hits(&self, profile: &Profile, facts: &DiskFacts) -> Vec<usize> {
        let mut out: Vec<usize> = KEYS
            .iter()
            .filter_map(|k| field(&facts.id, k).and_then(|v| self.by.get(&(*k, v))))
            .flatten()
            .chain(&self.rest)
            .copied()
            .filter(|&i| facts.matches(&profile.devices[i].matches))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// The entry that applies to each disk of `present` (only the one named `only`, when given).
/// Errors (exit 2): a disk two equally narrow entries match, with the file, line and field of
/// the later one when the profile was read from a file.
pub(crate) fn resolve<'a>(
    root: &SysRoot,
    present: &'a [Device],
    profile: &Profile,
    only: Option<&str>,
) -> Result<Resolved<'a>> {
    let reach = |i: usize| Reach::of(&profile.devices[i].matches);
    let mut won: Vec<Vec<&Device>> = vec![Vec::new(); profile.devices.len()];
    let mut matched = vec![false; profile.devices.len()];
    let mut overlaps = Vec::new();
    let index = Index::of(profile);
    for dev in present.iter().filter(|p| only.is_none_or(|o| o == p.name)) {
        let hits = index.hits(profile, &DiskFacts::of(root, dev));
        for &i in &hits {
            matched[i] = true;
        }
        let Some(top) = hits.iter().map(|&i| reach(i)).max() else {
            continue;
        };
        let best: Vec<usize> = hits.iter().copied().filter(|&i| reach(i) == top).collect();
        if let [first, second, ..] = best[..] {
            return Err(tie(profile, &dev.name, first, second, top));
        }
        let applies = best[0];
        if hits.len() > 1 {
            let others: Vec<usize> = hits.iter().copied().filter(|&i| i != applies).collect();
            let mut wider: Vec<&str> = others.iter().map(|&i| reach(i).name()).collect();
            wider.dedup();
            let message = format!(
                "{}: {} profile entries match it: {} applies, not {}: the narrowest match \
                 applies ({} over {})",
                dev.name,
                hits.len(),
                label(profile, applies),
                others
                    .iter()
                    .map(|&i| label(profile, i))
                    .collect::<Vec<_>>()
                    .join(" nor "),
                top.name(),
                wider.join(" and ")
            );
            overlaps.push(Overlap {
                device: dev.name.clone(),
                entries: hits,
                applies,
                message,
            });
        }
        won[applies].push(dev);
    }
    let targets = won
        .into_iter()
        .enumerate()
        .flat_map(|(i, disks)| disks.into_iter().map(move |d| (i, d)))
        .collect();
    Ok(Resolved {
        targets,
        overlaps,
        matched,
    })
}

/// The entry that applies to the disk `dev`: of the entries matching it, the narrowest, as
/// [`resolve`] picks it for `profile apply`; `None` when none matches. The daemon manages what
/// it applied by this, so it never expects (or re-applies) a broader entry's value.
/// Errors: as [`resolve`]'s (two equally narrow entries match `dev`, exit 2).
pub(crate) fn entry_for<'p>(
    root: &SysRoot,
    dev: &Device,
    profile: &'p Profile,
) -> Result<Option<&'p DeviceEntry>> {
    let r = resolve(root, std::slice::from_ref(dev), profile, None)?;
    Ok(r.targets.first().map(|&(i, _)| &profile.devices[i]))
}

/// How entry `i`'s match `m` relates to the earlier entry `j`'s `other` (`at_j`: ` (line N)`
/// or empty), when one narrows the other: `(refuse, message)`, `refuse` when neither is
/// narrower by [`Reach`], so `apply` would refuse every disk both match.
pub(crate) fn nested(
    i: usize,
    m: &Match,
    j: usize,
    other: &Match,
    at_j: &str,
) -> Option<(bool, String)> {
    let (how, applies) = if narrows(m, other) {
        ("narrower", i)
    } else if narrows(other, m) {
        ("wider", j)
    } else {
        return None;
    };
    let (mine, theirs) = (m.describe(), other.describe());
    if Reach::of(m) == Reach::of(other) {
        return Some((
            true,
            format!(
                "{mine} and device[{j}]'s{at_j} {theirs} can match the same disk, and neither \
                 is narrower ({}): give a disk one entry",
                Reach::of(m).both()
            ),
        ));
    }
    Some((
        false,
        format!(
            "{mine} is {how} than device[{j}]'s{at_j} {theirs}: on a disk both match, \
             device[{applies}] applies"
        ),
    ))
}

/// `device[i] (line N, <match>)`, or with the name when tuned instead of the line.
fn label(p: &Profile, i: usize) -> String {
    let d = &p.devices[i];
    let line = p
        .origin
        .as_ref()
        .and_then(|o| o.match_lines.get(i).copied().flatten());
    match line {
        Some(l) => format!("device[{i}] (line {l}, {})", d.matches.describe()),
        None if d.name.is_empty() => format!("device[{i}] ({})", d.matches.describe()),
        None => format!("device[{i}] ({}, {})", d.name, d.matches.describe()),
    }
}

/// The refusal of entries `first` and `second`, equally narrow, on disk `dev`.
fn tie(p: &Profile, dev: &str, first: usize, second: usize, reach: Reach) -> Error {
    let Some(o) = &p.origin else {
        return Error::BadInput(format!(
            "profile entries {} and {} both match {dev}, and neither is narrower ({}): give a \
             disk one entry",
            label(p, first),
            label(p, second),
            reach.both()
        ));
    };
    let line = |i: usize| o.match_lines.get(i).copied().flatten();
    Error::BadFile {
        path: o.path.clone(),
        line: line(second),
        field: format!("device[{second}].match"),
        msg: format!(
            "matches {dev} as device[{first}]{} does, and neither is narrower ({}): give a \
             disk one entry",
            line(first)
                .map(|l| format!(" (line {l})"))
                .unwrap_or_default(),
            reach.both()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pairs: &[(&str, &str)]) -> Match {
        let mut m = Match::default();
        for (k, v) in pairs {
            let v = Some((*v).to_string());
            match *k {
                "wwid" => m.wwid = v,
                "model" => m.model = v,
                "firmware" => m.firmware = v,
                "serial" => m.serial = v,
                _ => unreachable!(),
            }
        }
        m
    }

    #[test]
    fn narrower_means_every_field_and_more() {
        let model = m(&[("model", "X")]);
        let fw = m(&[("model", "X"), ("firmware", "1")]);
        assert!(narrows(&fw, &model) && !narrows(&model, &fw));
        assert!(!narrows(&model, &model), "the same match is a duplicate");
        assert!(!narrows(&m(&[("model", "Y"), ("firmware", "1")]), &model));
        assert!(narrows(&m(&[("model", "X"), ("serial", "S")]), &model));
        assert!(
            !narrows(&m(&[("wwid", "W")]), &model),
            "only sysfs can tell"
        );
        assert_eq!(
            (
                Reach::of(&model),
                Reach::of(&fw),
                Reach::of(&m(&[("wwid", "W")]))
            ),
            (Reach::Model, Reach::Firmware, Reach::Disk)
        );
    }

    #[test]
    fn nested_warns_when_one_is_narrower_by_kind_and_refuses_when_not() {
        let (model, fw) = (
            m(&[("model", "X")]),
            m(&[("model", "X"), ("firmware", "1")]),
        );
        assert_eq!(
            nested(1, &model, 0, &fw, " (line 3)"),
            Some((
                false,
                "model X is wider than device[0]'s (line 3) model X firmware 1: on a disk both \
                 match, device[0] applies"
                    .into()
            ))
        );
        let (w, wm) = (m(&[("wwid", "W")]), m(&[("wwid", "W"), ("model", "X")]));
        let (refuse, msg) = nested(1, &wm, 0, &w, "").unwrap();
        assert!(refuse, "{msg}");
        assert!(
            msg.ends_with("(both name one disk): give a disk one entry"),
            "{msg}"
        );
        assert_eq!(nested(1, &w, 0, &fw, ""), None, "no field in common");
    }
}

//! Reading a profile file: its ownership and mode, its TOML, and what it asks for, each
//! refused with the file, line and field (exit 2) before anything is applied.
//!
//! - A profile is made to be applied as root unattended (the boot unit, the udev rule of
//!   `examples/`), so a profile file is read under [`trust::Origin::System`] whoever names
//!   it, by `profile apply` and `verify` alike: as root it must be owned by root, and neither
//!   it nor a directory above it writable by a group other than root's or by everyone (one
//!   rule, [`crate::trust`]); otherwise others could choose what root writes to sysfs.
//! - `version` must be `VERSION`; every `[[device]]` needs a `match` with no empty value
//!   and one way of naming a disk (not `wwid` and `backing_file`: a disk has one identity),
//!   and no two entries the same `match` (the last one's knobs would win, and `verify` would
//!   find the first one's drifted for ever); an entry whose `match` narrows another's (every
//!   field of it, and more) is named with a warning, or refused when neither is narrower by
//!   kind ([`super::overlap`]); `tuned_at` is a time as export writes it
//!   (`2026-12-01T08:00:00Z`); every knob must be one sweetspot knows (the catalogue,
//!   `src/knob/catalogue.rs`), with an integer value within the catalogue's safe bounds (a
//!   `scheduler` is a name); `[host]` takes host-wide knobs only.

use super::model::{Match, Origin, Profile, ProfileImprovement, VERSION};
use crate::knob::catalogue;
use crate::tomlfile::{TomlFile, span_of};
use crate::trust;
use crate::types::time::parse_rfc3339;
use crate::types::{KnobValue, Setting};
use crate::{Error, Result};
use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;

/// Reads and validates the profile at `path`, after checking who may have written it and
/// every directory above it ([`crate::trust`], under [`trust::Origin::System`]: see the
/// module doc). Errors: [`crate::Error::BadInput`] (exit 2) when it cannot be read or is refused
/// (naming its owner, mode and the fix); [`crate::Error::BadFile`] for its contents ([`parse`]).
pub(crate) fn load(path: &Path) -> Result<Profile> {
    let text = trust::read_to_string(path, "profile", trust::Origin::System)?;
    parse(&text, path)
}

/// Parses and validates a profile text; `path` names it in errors.
pub fn parse(text: &str, path: &Path) -> Result<Profile> {
    let f = TomlFile::new(path, text);
    // Parsed once: the document gives both the profile and the spans of its keys.
    let (p, doc): (Profile, _) = f.parse_with_doc()?;
    let span = |keys: &[&str], idx: Option<usize>| span_of(doc.get_ref(), keys, idx);
    let err = |at: Option<Range<usize>>, field: String, msg: String| f.err_at(at, field, msg);
    let line_of = |at: Range<usize>| f.line(&at);
    if p.version != VERSION {
        return Err(err(
            span(&["version"], None),
            "version".into(),
            format!(
                "unknown version {} (this sweetspot reads version {VERSION})",
                p.version
            ),
        ));
    }
    let bad_time = |t: &str| {
        format!("'{t}' is not a time as export writes it (RFC 3339 UTC, e.g. 2026-12-01T08:00:00Z)")
    };
    let mut earlier = Earlier::default();
    for (i, d) in p.devices.iter().enumerate() {
        let m = &d.matches;
        check_match_shape(m, i, &err, &span)?;
        if let Some(j) = earlier.same(m) {
            let first = span(&["device", "match"], Some(j))
                .map(|at| format!(" (line {})", line_of(at)))
                .unwrap_or_default();
            return Err(err(
                span(&["device", "match"], Some(i)),
                format!("device[{i}].match"),
                format!(
                    "the same match as device[{j}]{first}, {}: give a disk one entry",
                    m.describe()
                ),
            ));
        }
        // One entry narrowing another (super::overlap): said here, with the file and line.
        for j in earlier.related(m) {
            let e = &p.devices[j];
            let at = span(&["device", "match"], Some(j))
                .map(|at| format!(" (line {})", line_of(at)))
                .unwrap_or_default();
            if let Some((refuse, msg)) = super::overlap::nested(i, m, j, &e.matches, &at) {
                let e = err(
                    span(&["device", "match"], Some(i)),
                    format!("device[{i}].match"),
                    msg,
                );
                if refuse {
                    return Err(e);
                }
                tracing::warn!("{e}");
            }
        }
        earlier.add(i, m);
        if parse_rfc3339(&d.tuned_at).is_none() {
            return Err(err(
                span(&["device", "tuned_at"], Some(i)),
                format!("device[{i}].tuned_at"),
                bad_time(&d.tuned_at),
            ));
        }
        check_device_text(d, i, &err, &span)?;
        check_knobs(&d.knobs, false).map_err(|(k, msg)| {
            err(
                span(&["device", "knobs", &k], Some(i)),
                format!("device[{i}].knobs.{k}"),
                msg,
            )
        })?;
    }
    if let Some(h) = &p.host {
        check_host(h, &err, &span, &bad_time)?;
    }
    let match_lines = (0..p.devices.len())
        .map(|i| span(&["device", "match"], Some(i)).map(line_of))
        .collect();
    let path = path.to_path_buf();
    Ok(Profile {
        origin: Some(Origin { path, match_lines }),
        ..p
    })
}

/// Builds a file:line: field: message error at a span (the line when the span is known).
type ErrAt<'a> = dyn Fn(Option<Range<usize>>, String, String) -> Error + 'a;
/// The span of a key path in the profile, in entry `idx` of an array of tables.
type SpanOf<'a> = dyn Fn(&[&str], Option<usize>) -> Option<Range<usize>> + 'a;

/// The checks of one `[[device]]`'s `match` on its own (entry `i`): no empty field, at least
/// one way to name a disk and only one (a disk has one identity, `crate::device::identity`),
/// no model or firmware beside a loop device's `backing_file` (no `device/` in sysfs), and
/// a serial with its model. Errors (exit 2): the field's line and name.
fn check_match_shape(m: &Match, i: usize, err: &ErrAt, span: &SpanOf) -> Result<()> {
    for (k, v) in m.fields() {
        if v.as_deref().is_some_and(|v| v.trim().is_empty()) {
            return Err(err(
                span(&["device", "match", k], Some(i)),
                format!("device[{i}].match.{k}"),
                "must not be empty".into(),
            ));
        }
    }
    let any = [&m.wwid, &m.serial, &m.model, &m.by_path, &m.backing_file]
        .iter()
        .any(|f| f.is_some());
    if !any {
        return Err(err(
            span(&["device"], Some(i)),
            format!("device[{i}].match"),
            "missing: give wwid, serial+model, by_path, backing_file, or model".into(),
        ));
    }
    // A disk has one identity ([`crate::device::identity`]) and a match is read against
    // it: two kinds in one match (wwid and backing_file) would match no disk at all.
    let kinds: Vec<&str> = [
        ("wwid", &m.wwid),
        ("serial", &m.serial),
        ("by_path", &m.by_path),
        ("backing_file", &m.backing_file),
    ]
    .iter()
    .filter(|(_, v)| v.is_some())
    .map(|(k, _)| *k)
    .collect();
    if let [first, second, ..] = kinds[..] {
        return Err(err(
            span(&["device", "match", second], Some(i)),
            format!("device[{i}].match.{second}"),
            format!(
                "{first} and {second} are two ways to name a disk, and a disk has one \
                 identity: this entry would match none; give one of wwid, serial+model, \
                 by_path, backing_file"
            ),
        ));
    }
    // A loop device has no `device/` in sysfs, so no model or firmware to match.
    if m.backing_file.is_some() {
        let extra = [("model", &m.model), ("firmware", &m.firmware)]
            .into_iter()
            .find(|(_, v)| v.is_some());
        if let Some((k, _)) = extra {
            return Err(err(
                span(&["device", "match", k], Some(i)),
                format!("device[{i}].match.{k}"),
                format!(
                    "a loop device (backing_file) has no {k} in sysfs: this entry would \
                     match none; drop {k}"
                ),
            ));
        }
    }
    if m.serial.is_some() && m.model.is_none() {
        return Err(err(
            span(&["device", "match", "serial"], Some(i)),
            format!("device[{i}].match.serial"),
            "a serial needs its model".into(),
        ));
    }
    Ok(())
}

/// The free text of `[[device]]` entry `i` (name, kernel, policy, match fields, the
/// improvement's and baseline's) free of control characters, and a sane improvement.
/// Errors (exit 2): the field's line and name.
fn check_device_text(
    d: &super::model::DeviceEntry,
    i: usize,
    err: &ErrAt,
    span: &SpanOf,
) -> Result<()> {
    let mut texts = vec![
        (vec!["name".to_string()], d.name.clone()),
        (vec!["kernel".into()], d.kernel.clone()),
        (vec!["policy".into()], d.policy.clone()),
    ];
    for (k, v) in d.matches.fields() {
        if let Some(v) = v {
            texts.push((vec!["match".into(), k.into()], v.clone()));
        }
    }
    if let Some((keys, msg)) = control_text(texts, d.improvement.as_ref(), &d.baseline) {
        let mut at = vec!["device"];
        at.extend(keys.iter().map(String::as_str));
        let field = crate::types::text::shown(&keys.join("."));
        return Err(err(span(&at, Some(i)), format!("device[{i}].{field}"), msg));
    }
    if let Some((k, msg)) = d.improvement.as_ref().and_then(bad_improvement) {
        return Err(err(
            span(&["device", "improvement", k], Some(i)),
            format!("device[{i}].improvement.{k}"),
            msg,
        ));
    }
    Ok(())
}

/// The checks of `[host]`: its `tuned_at` a time as export writes it, no control character
/// in its free text, a sane improvement, host-wide catalogue knobs only. Errors (exit 2):
/// the field's line and name.
fn check_host(
    h: &super::model::Host,
    err: &ErrAt,
    span: &SpanOf,
    bad_time: &dyn Fn(&str) -> String,
) -> Result<()> {
    if let Some(t) = h.tuned_at.as_deref()
        && parse_rfc3339(t).is_none()
    {
        return Err(err(
            span(&["host", "tuned_at"], None),
            "host.tuned_at".into(),
            bad_time(t),
        ));
    }
    let texts = [
        ("name", &h.name),
        ("kernel", &h.kernel),
        ("policy", &h.policy),
    ]
    .into_iter()
    .filter_map(|(k, v)| Some((vec![k.to_string()], v.clone()?)))
    .collect();
    if let Some((keys, msg)) = control_text(texts, h.improvement.as_ref(), &h.baseline) {
        let mut at = vec!["host"];
        at.extend(keys.iter().map(String::as_str));
        let field = crate::types::text::shown(&keys.join("."));
        return Err(err(span(&at, None), format!("host.{field}"), msg));
    }
    if let Some((k, msg)) = h.improvement.as_ref().and_then(bad_improvement) {
        return Err(err(
            span(&["host", "improvement", k], None),
            format!("host.improvement.{k}"),
            msg,
        ));
    }
    check_knobs(&h.knobs, true).map_err(|(k, msg)| {
        err(
            span(&["host", "knobs", &k], None),
            format!("host.knobs.{k}"),
            msg,
        )
    })?;
    Ok(())
}

/// A match's set fields, `(name, value)` in [`Match::fields`] order: equal keys, equal matches.
type Key<'a> = Vec<(&'static str, &'a str)>;

fn key_of(m: &Match) -> Key<'_> {
    m.fields()
        .into_iter()
        .filter_map(|(k, v)| v.as_deref().map(|v| (k, v)))
        .collect()
}

/// The entries read so far, indexed so each new one finds its duplicate and the entries it
/// nests with ([`super::overlap::nested`]) without a pass over all of them (which made a
/// 20,000-entry fleet profile take minutes).
#[derive(Default)]
pub(super) struct Earlier<'a> {
    /// Each match's key, with its entry.
    exact: HashMap<Key<'a>, usize>,
    /// Each `(field, value)` pair, with the entries whose match sets it, in file order.
    pairs: HashMap<(&'static str, &'a str), Vec<usize>>,
}

impl<'a> Earlier<'a> {
    /// Adds entry `i`, whose match is `m`.
    pub(super) fn add(&mut self, i: usize, m: &'a Match) {
        let key = key_of(m);
        for pair in &key {
            self.pairs.entry(*pair).or_default().push(i);
        }
        self.exact.entry(key).or_insert(i);
    }

    /// The first earlier entry with the same match.
    pub(super) fn same(&self, m: &Match) -> Option<usize> {
        self.exact.get(&key_of(m)).copied()
    }

    /// The earlier entries that may nest with `m`, in file order: every one whose match sets
    /// a part of `m`'s fields to `m`'s values (`m` narrows it), and every one that sets all of
    /// them and more (found among the entries of `m`'s least shared pair). A superset of the
    /// entries [`super::overlap::nested`] says something about.
    pub(super) fn related(&self, m: &Match) -> Vec<usize> {
        let key = key_of(m);
        let mut out: Vec<usize> = (1u32..(1 << key.len()) - 1)
            .filter_map(|mask| {
                let part: Key<'_> = (0..key.len())
                    .filter(|b| mask & (1 << b) != 0)
                    .map(|b| key[b])
                    .collect();
                self.exact.get(&part).copied()
            })
            .collect();
        let rarest = key
            .iter()
            .filter_map(|pair| self.pairs.get(pair))
            .min_by_key(|v| v.len());
        // A wider match sets every pair of `m`: with no earlier entry on some pair, none is.
        if key.iter().all(|pair| self.pairs.contains_key(pair)) {
            out.extend(rarest.into_iter().flatten());
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// The first of an entry's free texts (`texts`, each with its keys under the entry; then the
/// improvement's objective, and the baseline's knob names and values, which nothing else
/// checks) that holds a control character, as (its keys, why). Export refuses to write such a
/// text ([`crate::profile::escape`]), so reading one would accept a profile that cannot be
/// written back.
fn control_text(
    mut texts: Vec<(Vec<String>, String)>,
    imp: Option<&ProfileImprovement>,
    baseline: &Setting,
) -> Option<(Vec<String>, String)> {
    if let Some(i) = imp {
        let objective = vec!["improvement".into(), "objective".into()];
        texts.push((objective, i.objective.clone()));
    }
    for (k, v) in baseline {
        texts.push((vec!["baseline".into(), k.clone()], k.clone()));
        texts.push((vec!["baseline".into(), k.clone()], v.to_string()));
    }
    let (keys, v) = texts
        .into_iter()
        .find(|(_, v)| v.chars().any(crate::types::text::is_control))?;
    let why = format!(
        "'{}' holds a control character: a profile cannot carry it (export refuses it too)",
        crate::types::text::shown(&v)
    );
    Some((keys, why))
}

/// The field of `imp` that is not a finite number (`nan`, `inf`), with why: export writes only
/// measured figures, and a NaN would be shown as the evidence and compare unequal to itself.
fn bad_improvement(imp: &ProfileImprovement) -> Option<(&'static str, String)> {
    let [lo, hi] = imp.ci95;
    [("ratio", imp.ratio), ("ci95", lo), ("ci95", hi)]
        .into_iter()
        .find(|(_, x)| !x.is_finite())
        .map(|(k, x)| (k, format!("'{x}' is not a finite number")))
}

/// The first knob of `knobs` that is unknown, misplaced, out of its safe bounds, not under
/// the scheduler the same entry sets, or the second member of an exclusive pair, with why.
pub(crate) fn check_knobs(
    knobs: &Setting,
    host: bool,
) -> std::result::Result<(), (String, String)> {
    let scheduler = knobs.get("scheduler").and_then(|v| v.as_name());
    for (k, v) in knobs {
        if let Some(p) = catalogue::exclusive_partner(k)
            && knobs.contains_key(p)
            && k.as_str() > p
        {
            return Err((
                k.clone(),
                format!("{p} is set too: writing one zeroes the other (give only one)"),
            ));
        }
        let under = catalogue::schedulers_with(k);
        if let Some(s) = scheduler
            && !under.is_empty()
            && !under.contains(&s)
        {
            return Err((
                k.clone(),
                format!(
                    "an iosched knob of {}, not of scheduler {s}",
                    under.join(", ")
                ),
            ));
        }
        let Some(order) = catalogue::order_of(k) else {
            let hint = catalogue::did_you_mean(k, catalogue::known_names());
            return Err((k.clone(), format!("not a knob sweetspot knows{hint}")));
        };
        if host != order.is_host() {
            let place = if host {
                "a device knob: put it in its [[device]]"
            } else {
                "host-wide: put it under [host]"
            };
            return Err((k.clone(), place.into()));
        }
        match (k.as_str(), v) {
            ("scheduler", KnobValue::Name(n)) if is_name(n) => {}
            ("scheduler", _) => {
                return Err((k.clone(), format!("'{v}': expected a scheduler name")));
            }
            (_, KnobValue::Int(x)) => {
                let fact = catalogue::lookup(None, k).or_else(|| {
                    catalogue::schedulers_with(k)
                        .first()
                        .and_then(|s| catalogue::lookup(Some(s), k))
                });
                if let Some(f) = fact
                    && !(f.min..=f.max).contains(x)
                {
                    return Err((
                        k.clone(),
                        format!(
                            "'{x}' is outside its safe bounds {}–{} {}",
                            f.min, f.max, f.unit
                        )
                        .trim_end()
                        .to_string(),
                    ));
                }
            }
            (_, KnobValue::Name(_)) => {
                return Err((k.clone(), format!("'{v}': expected an integer")));
            }
        }
    }
    Ok(())
}

fn is_name(n: &str) -> bool {
    !n.is_empty()
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Found by the fuzz target `profile` (fuzz/regressions/profile/): a NaN ratio was
    /// accepted, shown as the evidence, and the profile was not equal to itself read back.
    #[test]
    fn an_improvement_that_is_not_a_finite_number_is_refused_with_its_line() {
        let entry = "version = 1\n[[device]]\nname = \"sda\"\nmatch = { wwid = \"naa.1\" }\n\
                     kernel = \"6.18.0\"\npolicy = \"quick\"\ntuned_at = \"2026-12-01T08:00:00Z\"\n";
        let host = "version = 1\n[host]\nknobs = { dirty_ratio = 10 }\n";
        for (text, want) in [
            (
                format!(
                    "{entry}improvement = {{ objective = \"io_load Ratio\", ratio = nan, \
                     ci95 = [2.05, 2.37], runs = 24 }}\n"
                ),
                "p.toml:8: device[0].improvement.ratio: 'NaN' is not a finite number",
            ),
            (
                format!(
                    "{entry}\n\n[device.improvement]\nobjective = \"t\"\nratio = 1.5\n\
                     ci95 = [1.0, inf]\nruns = 4\n"
                ),
                "p.toml:13: device[0].improvement.ci95: 'inf' is not a finite number",
            ),
            (
                format!(
                    "{host}improvement = {{ objective = \"t\", ratio = 1.2, ci95 = [-nan, 1], \
                     runs = 2 }}\n"
                ),
                "p.toml:4: host.improvement.ci95: 'NaN' is not a finite number",
            ),
        ] {
            let e = parse(&text, Path::new("p.toml")).unwrap_err();
            assert_eq!(e.to_string(), want, "{text}");
            assert_eq!(e.exit_code(), 2);
        }
        // Found by the replay of the fuzz corpus (fuzz/regressions/profile/) once export
        // refused control characters: a profile it could not write back was read.
        for (text, want) in [
            (
                entry.replace("name = \"sda\"", "name = \"\tsda\""),
                "p.toml:3: device[0].name: '\\tsda' holds a control character",
            ),
            (
                entry.replace("naa.1", "naa.\\n1"),
                "p.toml:4: device[0].match.wwid: 'naa.\\n1' holds a control character",
            ),
            (
                format!("{entry}baseline = {{ \"a\\nb\" = 1 }}\n"),
                "p.toml:8: device[0].baseline.a\\nb: 'a\\nb' holds a control character",
            ),
            (
                format!("{host}policy = \"q\\u001b\"\n"),
                "p.toml:4: host.policy: 'q\\u{1b}' holds a control character",
            ),
        ] {
            let e = parse(&text, Path::new("p.toml")).unwrap_err();
            assert!(e.to_string().starts_with(want), "{text}: {e}");
            assert_eq!(e.exit_code(), 2);
        }
        // Finite figures still read.
        let ok = format!(
            "{entry}improvement = {{ objective = \"t\", ratio = 2.2, ci95 = [2.05, 2.37], \
             runs = 24 }}\n"
        );
        let p = parse(&ok, Path::new("p.toml")).unwrap();
        assert_eq!(p.devices[0].improvement.as_ref().unwrap().ratio, 2.2);
    }
}

//! The profile of the sweet spots in the database: the latest per (identity, kernel,
//! policy), each carrying only the knobs it changed from its baseline (and the scheduler its
//! iosched knobs belong to, `pinned_scheduler`), host-wide knobs gathered under `[host]`
//! with the host's own sweet spot (`tune --host`).

use super::fleet;
use super::host_knobs::HostKnobs;
use super::model::{DeviceEntry, Host, Match, Profile, ProfileImprovement, VERSION};
use crate::device::{self, Device};
use crate::knob::catalogue;
use crate::store::Store;
use crate::store::tunes::SweetSpotRow;
use crate::sysroot::SysRoot;
use crate::types::time::rfc3339;
use crate::types::{ApplyOrder, KnobValue, Setting, text};
use crate::{Error, Result};
use std::collections::BTreeMap;

/// How device entries match their disks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MatchBy {
    /// One disk: wwid, model+serial, bus path or loop backing file.
    Identity,
    /// Every disk of the tuned disk's model (and firmware revision where sysfs has one): a
    /// sweet spot found on one board applies to every identical board.
    Model,
}

/// What to export.
#[derive(Clone, Debug)]
pub(crate) struct Select<'a> {
    /// Only this device: a kernel name present now, or a stored identity.
    pub device: Option<&'a str>,
    /// Only sweet spots of this policy.
    pub policy: Option<&'a str>,
    /// Identity or model matches.
    pub by: MatchBy,
    /// Only the sweet spots of these device identities (the daemon's enrolled disks), and
    /// the host's own (`tune --host`); `None`: every one.
    pub only: Option<&'a [String]>,
    /// A boot profile to write (`profile export`): an entry whose iosched knobs' scheduler
    /// cannot be told is refused (exit 2). Otherwise (`profile apply` and `verify` without a
    /// file, the daemon: they act on the disks present now) that entry is built without a
    /// scheduler, with a warning, and the rest of the profile still applies.
    pub export: bool,
    /// Per identity, the policy whose sweet spot rules the device by the user's decision (the
    /// daemon's config: [`crate::daemon::config::DaemonConfig::ruling_policies`]); `None`: no
    /// decision named ([`SweetSpotRow::rules_over`]).
    pub keep: Option<&'a BTreeMap<String, String>>,
}

/// The knobs of `spot` that differ from its baseline (default setting).
pub(crate) fn changed(spot: &SweetSpotRow) -> Setting {
    spot.setting
        .iter()
        .filter(|(k, v)| spot.default_setting.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

use crate::bench::user_testbed::{HOST_PREFIX, is_host_identity};

/// A built profile, and the stored sweet spots it had to leave out.
#[derive(Clone, Debug)]
pub(crate) struct Built {
    /// The profile.
    pub profile: Profile,
    /// Identities (`scratch:…`, `sim:…`, `virtual:…`) of selected sweet spots left out
    /// because they name nothing that lasts past the run, so `profile export` can say why a
    /// profile is empty.
    pub transient: Vec<String>,
    /// Per device where sweet spots of several policies (or kernels) were stored, which one
    /// the profile holds and why: `verify` names the sweet spot it checks.
    pub choices: Vec<String>,
}

/// Builds the profile ([`build_noting`] without its list of what was left out).
pub(crate) fn build(store: &Store, root: &SysRoot, sel: &Select) -> Result<Profile> {
    build_noting(store, root, sel).map(|b| b.profile)
}

/// Builds the profile: one `[[device]]` entry per lasting device identity, and `[host]` with
/// the host-wide knobs of every exported sweet spot plus the host's own sweet spot
/// (`tune --host`, identity `host:<hostname>`; `--device host` selects it alone, as does
/// `--device host:<hostname>`). Of several host identities (the database of another host,
/// a renamed host) the running host's is exported, else the newest. Where two sweet spots
/// set one host knob to different values, the host's own wins over a device's, and a newer
/// device's over an older one's, each named in a warning; a knob the host's own sweet spot
/// tuned and kept at its default is not exported from a device's ([`super::host_knobs`]).
///
/// Errors (exit 2): `--device` names nothing present nor stored; a `--match model` entry
/// whose disk is not present now (its model is read from sysfs) or has no model; disks of
/// one model (and firmware) whose sweet spots set different knobs, which would be one match
/// ([`super::fleet`]: equal ones become one entry). Sweet spots
/// of simulated and scratch devices are left out (listed in [`Built::transient`]): they
/// name nothing that survives the run.
pub(crate) fn build_noting(store: &Store, root: &SysRoot, sel: &Select) -> Result<Built> {
    let present = device::list(root).unwrap_or_default();
    let all_hosts = sel.device == Some("host");
    let wanted_identity = sel.device.filter(|_| !all_hosts).map(|d| {
        present
            .iter()
            .find(|p| p.name == d)
            .map_or_else(|| d.to_string(), |p| p.identity.clone())
    });
    let (latest, choices) = ruling(store, sel, wanted_identity.as_deref(), all_hosts)?;
    nothing_stored(sel, &latest)?;
    let (hosts, spots): (Vec<SweetSpotRow>, Vec<SweetSpotRow>) = latest
        .into_values()
        .partition(|s| is_host_identity(&s.identity));
    let mut members = Vec::new();
    let mut transient = Vec::new();
    // Host-wide knobs of the device tunes, merged oldest first after the loop.
    let mut device_host_knobs = Vec::new();
    for spot in spots {
        let Some(identity_match) = Match::from_identity(&spot.identity) else {
            tracing::info!("{}: not a lasting identity; not exported", spot.identity);
            transient.push(spot.identity.clone());
            continue;
        };
        let matches = match sel.by {
            MatchBy::Identity => identity_match,
            MatchBy::Model => model_match(root, &present, &spot.identity)?,
        };
        let (member, host_knobs) = device_member(store, &present, sel, &spot, matches)?;
        device_host_knobs.push(host_knobs);
        members.push(member);
    }
    // Disks of one model (`--match model`): one entry when their knobs are equal.
    let devices = fleet::merge(members)?;
    let own = pick_host(root, hosts);
    let mut host = Host {
        knobs: merged_host_knobs(device_host_knobs, own.as_ref()),
        ..Host::default()
    };
    if let Some(spot) = own {
        host_provenance(&mut host, &spot);
    }
    let mut profile = Profile {
        version: VERSION,
        devices,
        host: (!host.knobs.is_empty() || host.is_tuned()).then_some(host),
        origin: None,
    };
    vet(&mut profile, sel.export)?;
    Ok(Built {
        profile,
        transient,
        choices,
    })
}

/// The host-wide knobs one device's sweet spot set, with its `(created_at, id)` order and
/// its identity: merged oldest first into `[host]` ([`merged_host_knobs`]).
type DeviceHostKnobs = ((i64, i64), String, Setting);

/// Refuses (exit 2) a `--device` or `--policy` selection that found no sweet spot in
/// `latest`.
fn nothing_stored(sel: &Select, latest: &BTreeMap<String, SweetSpotRow>) -> Result<()> {
    if let Some(d) = sel.device
        && latest.is_empty()
    {
        return Err(Error::BadInput(format!(
            "profile export: no sweet spot stored for device '{d}'{} (see `sweetspot history`)",
            sel.policy
                .map(|p| format!(" and policy '{p}'"))
                .unwrap_or_default()
        )));
    }
    if let Some(p) = sel.policy
        && latest.is_empty()
    {
        return Err(Error::BadInput(format!(
            "profile export: no sweet spot stored with policy '{p}' (see `sweetspot history`)"
        )));
    }
    Ok(())
}

/// The `[[device]]` entry of one device's sweet spot `spot` matching its disks by `matches`:
/// its device knobs changed from the baseline (with the scheduler its iosched knobs belong
/// to pinned), and apart from it the host-wide knobs it set.
fn device_member(
    store: &Store,
    present: &[Device],
    sel: &Select,
    spot: &SweetSpotRow,
    matches: Match,
) -> Result<(fleet::Member, DeviceHostKnobs)> {
    let mut knobs = Setting::new();
    let mut host_knobs = Setting::new();
    for (k, v) in without_zero_pair_member(changed(spot)) {
        if is_host_knob(&k) {
            host_knobs.insert(k, v);
        } else {
            knobs.insert(k, v);
        }
    }
    let device_host_knobs = (
        (spot.created_at, spot.id),
        spot.identity.clone(),
        host_knobs,
    );
    let mut baseline: Setting = spot
        .default_setting
        .iter()
        .filter(|(k, _)| !is_host_knob(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    // iosched knobs exist only under their scheduler: the entry pins it, in every format,
    // so it applies whatever scheduler the disk comes up on.
    let pinned = match pinned_scheduler(store, present, spot, &knobs) {
        Err(e) if !sel.export => {
            tracing::warn!("{e} (built without a scheduler)");
            None
        }
        r => r?,
    };
    if let Some(s) = pinned {
        baseline
            .entry("scheduler".into())
            .or_insert_with(|| s.clone());
        knobs.insert("scheduler".into(), s);
    }
    let member = fleet::Member {
        entry: DeviceEntry {
            name: tuned_name(spot),
            matches,
            kernel: spot.kernel.clone(),
            policy: spot.policy.clone(),
            tuned_at: rfc3339(spot.created_at),
            improvement: improvement(spot),
            knobs,
            baseline,
            also: Vec::new(),
        },
        identity: spot.identity.clone(),
        order: (spot.created_at, spot.id),
    };
    Ok((member, device_host_knobs))
}

/// The `[host]` knobs: the devices' host-wide knobs, oldest first, then the host's own
/// sweet spot `own` (`tune --host`), which wins over them ([`HostKnobs`]).
fn merged_host_knobs(
    mut device_host_knobs: Vec<DeviceHostKnobs>,
    own: Option<&SweetSpotRow>,
) -> Setting {
    let mut merged = HostKnobs::default();
    device_host_knobs.sort_by_key(|(order, ..)| *order);
    for (_, identity, knobs) in device_host_knobs {
        for (k, v) in knobs {
            merged.set(k, v, &identity);
        }
    }
    if let Some(spot) = own {
        let set = without_zero_pair_member(changed(spot));
        // Every host-wide knob it tuned is its to decide: kept at the default (or the zero
        // member of a pair), a device's older value of it is dropped.
        for (k, kept) in spot.setting.iter().filter(|(k, _)| is_host_knob(k)) {
            if !set.contains_key(k) {
                merged.keep(k, kept, &spot.identity);
            }
        }
        for (k, v) in set {
            merged.set(k, v, &spot.identity);
        }
    }
    merged.into_setting()
}

/// Fills `host`'s provenance (name, kernel, policy, time, improvement, baseline) from the
/// host's own sweet spot `spot`.
fn host_provenance(host: &mut Host, spot: &SweetSpotRow) {
    host.name = Some(spot.identity[HOST_PREFIX.len()..].to_string());
    host.kernel = Some(spot.kernel.clone());
    host.policy = Some(spot.policy.clone());
    host.tuned_at = Some(rfc3339(spot.created_at));
    host.improvement = improvement(spot);
    host.baseline = spot
        .default_setting
        .iter()
        .filter(|(k, _)| is_host_knob(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
}

/// The sweet spot that rules each selected device, one per disk (or a disk would get two and
/// the last written would win: [`SweetSpotRow::rules_over`]), and per device where several
/// policies (or kernels) have one, which one and why ([`Built::choices`]). Rows come oldest
/// first. A replaced significant sweet spot is a warning ([`dropped`]); other choices are
/// logged at info.
fn ruling(
    store: &Store,
    sel: &Select,
    wanted_identity: Option<&str>,
    all_hosts: bool,
) -> Result<(BTreeMap<String, SweetSpotRow>, Vec<String>)> {
    let kernel = device::kernel_release();
    let mut latest: BTreeMap<String, SweetSpotRow> = BTreeMap::new();
    let mut choices: BTreeMap<String, String> = BTreeMap::new();
    for s in store.sweet_spots(wanted_identity)? {
        if sel.policy.is_some_and(|p| p != s.policy)
            || (all_hosts && !is_host_identity(&s.identity))
            || sel
                .only
                .is_some_and(|ids| !is_host_identity(&s.identity) && !ids.contains(&s.identity))
        {
            continue;
        }
        let named = sel
            .keep
            .and_then(|k| k.get(&s.identity))
            .map(String::as_str);
        let Some(old) = latest.get(&s.identity) else {
            latest.insert(s.identity.clone(), s);
            continue;
        };
        // An earlier sweet spot of the same policy and kernel (a retune's predecessor, kept
        // as history) is simply superseded: there is no choice to name.
        let choice = old.policy != s.policy || old.kernel != s.kernel;
        if s.rules_over(old, &kernel, named) {
            if choice {
                if let Some(msg) = dropped(old, &s, sel.export) {
                    // Said once, at warn: `verify` does not repeat it.
                    tracing::warn!("{msg}");
                    choices.remove(&s.identity);
                } else {
                    // `profile export` exports; apply, verify and the daemon use the profile.
                    let msg = format!(
                        "{}: {} the sweet spot of policy {} on {} over policy {} on {}",
                        s.identity,
                        if sel.export { "exporting" } else { "using" },
                        s.policy,
                        s.kernel,
                        old.policy,
                        old.kernel
                    );
                    tracing::info!("{msg}");
                    choices.insert(s.identity.clone(), msg);
                }
            }
            latest.insert(s.identity.clone(), s);
        } else {
            let msg = format!(
                "{}: {} the sweet spot of {}; the newer answer of {} does not replace it ({})",
                s.identity,
                if sel.export { "exporting" } else { "using" },
                old.describe(),
                s.describe(),
                if named.is_some_and(|p| p == old.policy) {
                    "the daemon's config names its policy for the device"
                } else {
                    "an answer that is not significant never replaces another policy's \
                     significant sweet spot"
                }
            );
            tracing::info!("{msg}");
            choices.insert(s.identity.clone(), msg);
        }
    }
    Ok((latest, choices.into_values().collect()))
}

/// The warning when `new` (of another policy or kernel) replaces `old`, a significant sweet
/// spot with other values: what is dropped (policy, knobs and values, improvement) and how to
/// get it back; `None` when `old` held nothing `new` loses (not significant, or the same
/// changes).
fn dropped(old: &SweetSpotRow, new: &SweetSpotRow, export: bool) -> Option<String> {
    if !old.significant || changed(old) == changed(new) {
        return None;
    }
    Some(format!(
        "{id}: {verb} the sweet spot of {new_d} and DROPPING the sweet spot of {old_d}; to \
         get it back, add `\"{id}\" = \"{p}\"` under [keep] in {cfg} and reload the daemon \
         (`systemctl reload sweetspot`), or without the daemon `sweetspot profile export \
         --device {id} --policy {p} --out {p}.toml && sweetspot profile apply {p}.toml`",
        id = old.identity,
        verb = if export { "exporting" } else { "using" },
        new_d = new.describe(),
        old_d = old.describe(),
        p = old.policy,
        cfg = crate::types::paths::DAEMON_CONFIG,
    ))
}

/// Checks every knob a sweet spot read back from the database would put in the profile (and
/// so in a udev rule, a sysctl.d line, a TuneD section, or the daemon's writes) as a profile
/// file's own knobs are checked ([`super::file`]): a knob the catalogue knows, in its place
/// (device or host), with a value within its safe bounds (`src/knob/catalogue.rs`). The
/// database is root's, but a path or value read back from it is re-validated before it can
/// reach a write (SECURITY.md).
///
/// `export` (`profile export`): a knob that fails refuses the whole export, exit 2
/// ([`Error::BadInput`] naming the entry, the knob and why), nothing written. Else (the
/// daemon, which must go on keeping the other disks): that knob is left out of its entry,
/// with a warning naming the same.
fn vet(profile: &mut Profile, export: bool) -> Result<()> {
    let mut sets: Vec<(&str, &mut Setting, bool)> = profile
        .devices
        .iter_mut()
        .map(|d| (d.name.as_str(), &mut d.knobs, false))
        .collect();
    if let Some(h) = profile.host.as_mut() {
        sets.push(("[host]", &mut h.knobs, true));
    }
    for (name, knobs, is_host) in sets {
        while let Err((k, why)) = super::file::check_knobs(knobs, is_host) {
            let msg = format!(
                "database: the sweet spot of {}: knob '{}': {}",
                text::shown(name),
                text::shown(&k),
                text::shown(&why)
            );
            if export {
                return Err(Error::BadInput(format!("{msg}; nothing exported")));
            }
            tracing::warn!("{msg}; left out");
            knobs.remove(&k);
        }
    }
    Ok(())
}

/// The scheduler to pin with an entry's `knobs` when they set knobs of an `iosched/`
/// directory but not the scheduler (the sweet spot did not change it): a disk that comes up
/// on another scheduler has none of those files, and `profile apply` refuses the profile.
/// `None` when `knobs` has no iosched knob or sets the scheduler already. From, in order:
/// - the sweet spot's setting (a tuned scheduler kept at its default);
/// - its report's `fixed_scheduler` (the scheduler active, and not tuned, during the tune);
/// - the journal of its tune (sweet spots stored before the report had it): the scheduler
///   recorded with the tune's first entry of one of the knobs;
/// - the catalogue: the one scheduler that has every one of the knobs, among those the disk
///   offers now when it is present, else among a current kernel's (5.0 and later: none,
///   mq-deadline, bfq, kyber) for a sweet spot tuned on one.
///
/// Errors (exit 2): none of these names one scheduler (a sweet spot of a legacy kernel with
/// neither a report nor a journal saying it).
fn pinned_scheduler(
    store: &Store,
    present: &[Device],
    spot: &SweetSpotRow,
    knobs: &Setting,
) -> Result<Option<KnobValue>> {
    let iosched: Vec<&str> = knobs
        .keys()
        .filter(|k| catalogue::order_of(k) == Some(ApplyOrder::Iosched))
        .map(String::as_str)
        .collect();
    if iosched.is_empty() || knobs.contains_key("scheduler") {
        return Ok(None);
    }
    if let Some(s) = spot.setting.get("scheduler") {
        return Ok(Some(s.clone()));
    }
    if let Some(s) = spot.evidence["fixed_scheduler"].as_str() {
        return Ok(Some(KnobValue::Name(s.to_string())));
    }
    if let Some(tune) = spot.tune_id
        && let Some(s) = store.journal_tune_scheduler(tune, &iosched)?
    {
        return Ok(Some(KnobValue::Name(s)));
    }
    let offered = present
        .iter()
        .find(|d| d.identity == spot.identity)
        .map(|d| d.schedulers.clone());
    let current = spot
        .kernel
        .split('.')
        .next()
        .and_then(|m| m.parse::<u32>().ok())
        .is_some_and(|major| major >= 5);
    let mut owners: Vec<&str> = catalogue::ELEVATORS
        .iter()
        .copied()
        .filter(|s| {
            iosched
                .iter()
                .all(|k| catalogue::schedulers_with(k).contains(s))
        })
        .filter(|s| match &offered {
            Some(list) => list.iter().any(|o| o == s),
            None => !current || CURRENT_ELEVATORS.contains(s),
        })
        .collect();
    owners.dedup();
    match owners[..] {
        [one] => Ok(Some(KnobValue::Name(one.to_string()))),
        _ => Err(Error::BadInput(format!(
            "profile export: the sweet spot of {} sets {}, which {} only under {}, and the \
             database does not say which scheduler was active when it was tuned: retune it \
             (`sweetspot tune --device …`), or export it as TOML and add the scheduler to its \
             knobs",
            spot.identity,
            iosched.join(", "),
            if iosched.len() == 1 {
                "exists"
            } else {
                "exist"
            },
            iosched
                .iter()
                .flat_map(|k| catalogue::schedulers_with(k))
                .fold(Vec::new(), |mut v, s| {
                    if !v.contains(&s) {
                        v.push(s);
                    }
                    v
                })
                .join(" or ")
        ))),
    }
}

/// The I/O schedulers of kernels 5.0 and later (the legacy single-queue ones went in 5.0).
const CURRENT_ELEVATORS: &[&str] = &["none", "mq-deadline", "bfq", "kyber"];

fn is_host_knob(k: &str) -> bool {
    catalogue::order_of(k).is_some_and(ApplyOrder::is_host)
}

/// The host sweet spot to export: the running host's (`host:<its hostname>`), else the
/// newest; the others are named at -v.
fn pick_host(root: &SysRoot, hosts: Vec<SweetSpotRow>) -> Option<SweetSpotRow> {
    let me = crate::bench::user_testbed::host_identity(root);
    let best = hosts
        .iter()
        .max_by_key(|s| (s.identity == me, s.created_at, s.id))?
        .id;
    let mut chosen = None;
    for s in hosts {
        if s.id == best {
            chosen = Some(s);
        } else {
            tracing::info!(
                "{}: another host's sweet spot; not exported (this host is {me})",
                s.identity
            );
        }
    }
    chosen
}

/// `knobs` without the zero member of an exclusive pair whose other member is set: writing
/// `dirty_bytes` already zeroes `dirty_ratio` (mm/page-writeback.c), and a 0 written after it
/// would undo it (0 is EINVAL for the `*_bytes` member). Every format then writes the
/// non-zero member only.
fn without_zero_pair_member(knobs: Setting) -> Setting {
    let keep: Setting = knobs
        .iter()
        .filter(|(k, v)| {
            **v != crate::types::KnobValue::Int(0)
                || catalogue::exclusive_partner(k).is_none_or(|p| !knobs.contains_key(p))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    keep
}

/// The kernel name the device had when tuned: the report's target label up to the first
/// space (`loop0 (scratch)` → `loop0`).
fn tuned_name(spot: &SweetSpotRow) -> String {
    spot.evidence["target"]["label"]
        .as_str()
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or("")
        .to_string()
}

/// The improvement of a significant sweet spot, from its stored report.
fn improvement(spot: &SweetSpotRow) -> Option<ProfileImprovement> {
    if !spot.significant {
        return None;
    }
    let ev = &spot.evidence;
    let imp = &ev["objective"]["improvement"];
    let ci = imp["ci95"].as_array()?;
    Some(ProfileImprovement {
        objective: ev["objective"]["name"].as_str()?.to_string(),
        ratio: round3(imp["ratio"].as_f64()?),
        ci95: [round3(ci.first()?.as_f64()?), round3(ci.get(1)?.as_f64()?)],
        runs: ev["runs"].as_u64()?,
    })
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// A fleet match: the model (and firmware revision) of the present disk with `identity`.
fn model_match(root: &SysRoot, present: &[Device], identity: &str) -> Result<Match> {
    let d = present
        .iter()
        .find(|d| d.identity == identity)
        .ok_or_else(|| {
            Error::BadInput(format!(
                "--match model: {identity} is not present now, so its model cannot be read"
            ))
        })?;
    let attr =
        |rel: &str| device::read_attr(&root.block_dev(&d.name).join(rel)).filter(|s| !s.is_empty());
    let model = attr("device/model").ok_or_else(|| {
        Error::BadInput(format!(
            "--match model: {} ({identity}) has no device/model in sysfs",
            d.name
        ))
    })?;
    Ok(Match {
        model: Some(model),
        // `device/rev` (SCSI/ATA) only: NVMe keeps its firmware on the controller
        // (`firmware_rev`), which the udev rule's ATTRS{rev} would not see.
        firmware: attr("device/rev"),
        ..Match::default()
    })
}

//! Where a known sweet spot comes from, for `tune --confirm [PROFILE|IDENTITY]` and the
//! daemon's retune (`solver/confirm.rs` runs its check before any search):
//! - nothing named: this device's own stored sweet spot for the policy, else one of another
//!   disk of the same model (`model-serial:` identities, a fleet of one model);
//! - an existing file: a profile (sweetspot's TOML, read under [`crate::trust`] like
//!   `profile apply`), whose entry for this disk is the one `profile apply` would use;
//! - anything else: a device identity whose sweet spot for the policy is in the database.
//!
//! Only significant sweet spots are known ones ("keep the default" has nothing to confirm).
//! The setting found is trusted only once it is a point of the policy's grid on this device
//! ([`grid_point`]): every value there has passed the knob catalogue.

use crate::device::identity::parse_model_serial;
use crate::knob::setting_label;
use crate::store::Store;
use crate::store::tunes::SweetSpotRow;
use crate::sysroot::SysRoot;
use crate::tune::space::Space;
use crate::types::{Setting, TargetInfo};
use crate::{Error, Result};
use std::path::Path;

/// A known sweet spot and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Known {
    /// The knobs it sets (knob → value); knobs it does not name stay at this device's
    /// default.
    pub setting: Setting,
    /// Where it came from, for the report and the log: `sweet spot #12 of wwid:… (6.18.0)`,
    /// `profile /etc/sweetspot/profile.toml, entry sda`.
    pub source: String,
    /// The improvement it was stored with (> 1 better), when its evidence or profile entry
    /// gives one: it sizes the confirm (`solver/confirm.rs`).
    pub improvement: Option<f64>,
}

/// The sweet spot `--confirm` names for `target` and `policy`: `arg` as in the module docs
/// (`None`: this device's, else its model's). `root` and `device` (the kernel name, `None`
/// for a simulation) find a profile's entry. Errors (exit 2): no such sweet spot, a profile
/// that is refused or does not parse, or whose entries do not match this disk.
pub fn resolve(
    store: &Store,
    arg: Option<&str>,
    target: &TargetInfo,
    policy: &str,
    root: &SysRoot,
    device: Option<&str>,
) -> Result<Known> {
    match arg {
        Some(a) if Path::new(a).is_file() => from_profile(Path::new(a), root, device),
        // Every identity has a `kind:` prefix; a path without one names a file.
        Some(a) if !a.contains(':') && (a.contains('/') || a.ends_with(".toml")) => {
            Err(Error::BadInput(format!(
                "--confirm {a}: {}",
                if Path::new(a).is_dir() {
                    "a directory, not a profile file"
                } else {
                    "no such profile file"
                }
            )))
        }
        Some(id) => from_store(store, id, policy, &target.kernel)?.ok_or_else(|| {
            Error::BadInput(format!(
                "--confirm {id}: neither a profile file nor a device identity with a \
                 significant sweet spot for policy '{policy}' in the database"
            ))
        }),
        None => own_or_model(store, target, policy)?.ok_or_else(|| {
            Error::BadInput(format!(
                "--confirm: no significant sweet spot for policy '{policy}' is stored for {} \
                 or another disk of its model: tune it first, or name a profile or an identity",
                target.identity
            ))
        }),
    }
}

/// This device's stored sweet spot for `policy`, else the newest of another disk of the
/// same model (its `model-serial:` identity's model); `None` when neither exists. What the
/// daemon confirms before it searches.
pub fn own_or_model(store: &Store, target: &TargetInfo, policy: &str) -> Result<Option<Known>> {
    if let Some(k) = from_store(store, &target.identity, policy, &target.kernel)? {
        return Ok(Some(k));
    }
    let Some(model) = model_of(&target.identity) else {
        return Ok(None);
    };
    let same_model: Vec<SweetSpotRow> = store
        .sweet_spots(None)?
        .into_iter()
        .filter(|s| s.identity != target.identity && model_of(&s.identity) == Some(model.clone()))
        .collect();
    Ok(pick(&same_model, policy, &target.kernel).map(|s| known_of(s, "a disk of its model")))
}

/// The model in a `model-serial:` identity.
fn model_of(identity: &str) -> Option<String> {
    let rest = identity.strip_prefix("model-serial:")?;
    parse_model_serial(rest).map(|(model, _)| model)
}

/// `identity`'s significant sweet spot for `policy`: the running `kernel`'s if any, else the
/// newest.
fn from_store(store: &Store, identity: &str, policy: &str, kernel: &str) -> Result<Option<Known>> {
    let spots = store.sweet_spots(Some(identity))?;
    Ok(pick(&spots, policy, kernel).map(|s| known_of(s, "stored")))
}

/// The significant sweet spot of `policy` among `spots`: the running `kernel`'s first, then
/// the newest.
fn pick<'a>(spots: &'a [SweetSpotRow], policy: &str, kernel: &str) -> Option<&'a SweetSpotRow> {
    spots
        .iter()
        .filter(|s| s.significant && s.policy == policy)
        .max_by_key(|s| (s.kernel == kernel, s.created_at, s.id))
}

/// A stored sweet spot as a known one: the knobs it changed from its default.
fn known_of(s: &SweetSpotRow, whose: &str) -> Known {
    let setting = s
        .setting
        .iter()
        .filter(|(k, v)| s.default_setting.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Known {
        setting,
        source: format!(
            "{whose} sweet spot #{} of {} (kernel {}, policy {})",
            s.id, s.identity, s.kernel, s.policy
        ),
        improvement: s.evidence["objective"]["improvement"]["ratio"].as_f64(),
    }
}

/// The entry of the profile at `path` that `profile apply` would use for disk `device`.
fn from_profile(path: &Path, root: &SysRoot, device: Option<&str>) -> Result<Known> {
    let profile = crate::profile::file::load(path)?;
    let shown = path.display();
    let Some(name) = device else {
        return Err(Error::BadInput(format!(
            "--confirm {shown}: a simulated device matches no profile entry; name a device \
             identity with a stored sweet spot instead"
        )));
    };
    let present = crate::device::list(root)?;
    let resolved = crate::profile::overlap::resolve(root, &present, &profile, Some(name))?;
    let Some(i) = resolved.targets.first().map(|t| t.0) else {
        return Err(Error::BadInput(format!(
            "--confirm {shown}: no entry of the profile matches {name}"
        )));
    };
    let e = &profile.devices[i];
    Ok(Known {
        setting: e.knobs.clone(),
        source: format!(
            "profile {shown}, entry {} ({})",
            e.name,
            e.matches.describe()
        ),
        improvement: e.improvement.as_ref().map(|i| i.ratio),
    })
}

/// The grid point of `space` that sets `known`'s knobs and, of those, agrees with this
/// device's default on the most other knobs: the policy's other knobs stay at the default
/// where the grid allows (a `fifo_batch` known from a disk whose default scheduler was
/// mq-deadline brings mq-deadline with it on a disk whose default is none: the knob exists
/// only under it). Errors (exit 2): a knob the policy does not tune, or a value that is not
/// one of the grid's on this device (the message names the setting and where it came from).
pub fn grid_point(space: &Space, known: &Known) -> Result<usize> {
    if let Some(k) = known.setting.keys().find(|k| !space.knobs.contains(*k)) {
        return Err(Error::BadInput(format!(
            "--confirm: the known sweet spot ({}) sets {k}, which this policy does not tune \
             on this device (it tunes {})",
            known.source,
            space.knobs.join(", ")
        )));
    }
    let default = &space.points[space.default];
    let agree = |p: &Setting| {
        default
            .iter()
            .filter(|(k, v)| p.get(*k) == Some(*v))
            .count()
    };
    let found = (0..space.len())
        .filter(|&i| {
            let p = &space.points[i];
            known.setting.iter().all(|(k, v)| p.get(k) == Some(v))
        })
        .max_by_key(|&i| (agree(&space.points[i]), std::cmp::Reverse(i)));
    found.ok_or_else(|| {
        Error::BadInput(format!(
            "--confirm: the known sweet spot {} ({}) is not a setting of this policy's grid \
             on this device",
            setting_label(&known.setting),
            known.source
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::identity::model_serial;
    use crate::tune::policy::Policy;

    fn target(identity: &str, kernel: &str) -> TargetInfo {
        TargetInfo {
            label: "sda".into(),
            identity: identity.into(),
            kernel: kernel.into(),
        }
    }

    fn fb(v: i64) -> Setting {
        [("fifo_batch".to_string(), v.into())].into()
    }

    /// Stores a sweet spot of `identity` on `kernel` for `policy`: fifo_batch 16 → `best`.
    fn store_spot(s: &Store, identity: &str, kernel: &str, policy: &str, best: i64, sig: bool) {
        let ev = serde_json::json!({"objective": {"improvement": {"ratio": 1.8}}});
        s.insert_sweet_spot(
            &target(identity, kernel),
            policy,
            None,
            &fb(best),
            &fb(16),
            sig,
            &ev,
        )
        .unwrap();
    }

    #[test]
    fn this_devices_significant_spot_of_the_policy_is_the_known_one_the_running_kernels_first() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("s.db")).unwrap();
        let me = model_serial("WDC WD10", "A1");
        store_spot(&s, &me, "6.18", "quick", 8, true);
        store_spot(&s, &me, "6.19", "quick", 4, true);
        store_spot(&s, &me, "6.18", "quick", 64, false);
        store_spot(&s, &me, "6.18", "desktop", 2, true);
        let k = own_or_model(&s, &target(&me, "6.18"), "quick")
            .unwrap()
            .unwrap();
        assert_eq!((k.setting, k.improvement), (fb(8), Some(1.8)));
        assert!(
            k.source
                .starts_with("stored sweet spot #1 of model-serial:"),
            "{}",
            k.source
        );
        let k = own_or_model(&s, &target(&me, "6.20"), "quick")
            .unwrap()
            .unwrap();
        assert_eq!(k.setting, fb(4), "another kernel: the newest");
        assert_eq!(
            own_or_model(&s, &target(&me, "6.18"), "throughput").unwrap(),
            None
        );
    }

    #[test]
    fn another_disk_of_the_same_model_lends_its_spot_and_a_named_identity_is_looked_up() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("s.db")).unwrap();
        let twin = model_serial("WDC WD10", "B2");
        store_spot(&s, &twin, "6.18", "quick", 8, true);
        store_spot(&s, &model_serial("Other", "C3"), "6.18", "quick", 2, true);
        let me = target(&model_serial("WDC WD10", "A1"), "6.18");
        let k = own_or_model(&s, &me, "quick").unwrap().unwrap();
        assert_eq!(k.setting, fb(8));
        assert!(
            k.source.starts_with("a disk of its model sweet spot #1"),
            "{}",
            k.source
        );
        let root = SysRoot::default();
        let named = resolve(&s, Some(&twin), &me, "quick", &root, None).unwrap();
        assert_eq!(named.setting, fb(8));
        let e = resolve(&s, Some("/nonexistent/p.toml"), &me, "quick", &root, None).unwrap_err();
        assert!(
            e.to_string().ends_with("p.toml: no such profile file"),
            "{e}"
        );
        let e = resolve(&s, Some("/tmp"), &me, "quick", &root, None).unwrap_err();
        assert!(
            e.to_string().ends_with("a directory, not a profile file"),
            "{e}"
        );
        let e = resolve(&s, Some("wwid:nothing"), &me, "quick", &root, None).unwrap_err();
        assert!(
            e.to_string()
                .contains("--confirm wwid:nothing: neither a profile"),
            "{e}"
        );
        let alone = target("wwid:naa.1", "6.18");
        let e = resolve(&s, None, &alone, "quick", &root, None).unwrap_err();
        assert!(matches!(e, Error::BadInput(_)), "{e:?}");
        assert!(
            e.to_string()
                .contains("no significant sweet spot for policy 'quick'"),
            "{e}"
        );
    }

    #[test]
    fn a_profiles_entry_for_this_disk_is_the_known_spot() {
        let t = crate::testkit::tree::FakeTree::new();
        for (name, dev, wwid) in [
            ("sda", "8:0", "naa.1"),
            ("sdb", "8:16", "naa.2"),
            ("sdc", "8:32", "naa.3"),
        ] {
            t.disk(name, dev, "none [mq-deadline] kyber bfq", 64)
                .set(name, "device/wwid", wwid);
        }
        let path = t.dir.path().join("profile.toml");
        let entry = |name: &str, wwid: &str, fb: i64, ratio: f64| {
            format!(
                "[[device]]\nname = \"{name}\"\nmatch = {{ wwid = \"{wwid}\" }}\nkernel = \"6.18\"\n\
                 policy = \"quick\"\ntuned_at = \"2026-12-01T08:00:00Z\"\n\
                 improvement = {{ objective = \"io_load Ratio\", ratio = {ratio}, ci95 = [1.1, 2.0], runs = 24 }}\n\
                 knobs = {{ fifo_batch = {fb} }}\nbaseline = {{ fifo_batch = 16 }}\n"
            )
        };
        let text = format!(
            "version = 1\n{}{}",
            entry("sda", "naa.1", 8, 1.5),
            entry("sdb", "naa.2", 4, 1.7)
        );
        std::fs::write(&path, text).unwrap();
        let s = Store::open(&t.dir.path().join("s.db")).unwrap();
        let me = target("wwid:naa.2", "6.18");
        let arg = path.to_str().unwrap();
        let k = resolve(&s, Some(arg), &me, "quick", &t.root, Some("sdb")).unwrap();
        assert_eq!((k.setting, k.improvement), (fb(4), Some(1.7)));
        assert!(k.source.contains("entry sdb (wwid naa.2)"), "{}", k.source);
        let e = resolve(
            &s,
            Some(arg),
            &target("wwid:naa.3", "6.18"),
            "quick",
            &t.root,
            Some("sdc"),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .ends_with("no entry of the profile matches sdc"),
            "{e}"
        );
    }

    fn space_of(file: &str) -> Space {
        let surface = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
        let sim = crate::bench::sim::SimDevice::open(&surface, 1).unwrap();
        let pol: Policy = crate::tune::policy::resolve(
            "quick",
            Path::new("/nonexistent"),
            crate::trust::Origin::Named,
        )
        .unwrap();
        Space::build(&crate::bench::Testbed::space(&sim), &pol, None).unwrap()
    }

    fn space() -> Space {
        space_of("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml")
    }

    #[test]
    fn a_known_knob_that_exists_under_one_scheduler_brings_the_scheduler() {
        // Default bfq; fifo_batch only under mq-deadline.
        let space = space_of("data/surfaces/flat-scheduler.toml");
        let known = |setting: Setting| Known {
            setting,
            source: "test".into(),
            improvement: None,
        };
        let p = grid_point(&space, &known(fb(256))).unwrap();
        assert_eq!(
            setting_label(&space.points[p]),
            "fifo_batch=256 scheduler=mq-deadline"
        );
        let kyber: Setting = [("scheduler".to_string(), "kyber".into())].into();
        let p = grid_point(&space, &known(kyber)).unwrap();
        assert_eq!(setting_label(&space.points[p]), "scheduler=kyber");
    }

    #[test]
    fn a_known_spot_must_be_a_point_of_the_grid() {
        let space = space();
        let known = |setting: Setting| Known {
            setting,
            source: "test".into(),
            improvement: None,
        };
        let p = grid_point(&space, &known(fb(8))).unwrap();
        assert_eq!(space.points[p]["fifo_batch"].to_string(), "8");
        let e = grid_point(&space, &known(fb(12))).unwrap_err();
        assert!(e.to_string().contains("fifo_batch=12"), "{e}");
        assert!(matches!(e, Error::BadInput(_)));
        let ra: Setting = [("read_ahead_kb".to_string(), 256.into())].into();
        let e = grid_point(&space, &known(ra)).unwrap_err();
        assert!(
            e.to_string()
                .contains("sets read_ahead_kb, which this policy does not tune"),
            "{e}"
        );
    }
}

//! Retuning in idle windows: when an enrolled device is due (`due`: never tuned, the kernel
//! release changed, or the interval elapsed), and the machine has been idle long enough
//! outside quiet hours, the daemon tunes it in a thread of its own (`Job`) with the real
//! testbed ([`RealDevice::device`]: its work directory `.sweetspot-bench-XXXXXX` on the
//! device's first writable mounted filesystem, removed after the run) under the device's lock
//! held for `sweetspot daemon`. The main loop stops it through `crate::signals::request_stop`
//! when the machine stops being idle or SIGTERM arrives: the tune abandons its run, restores
//! the device (to the kernel's values it started from) and keeps the finished trials, and the
//! daemon then puts the device back at its sweet spot (before it exits, on SIGTERM).

use super::config::DaemonConfig;
use crate::bench::Testbed;
use crate::bench::contest_run::BenchOptions;
use crate::bench::device_testbed::RealDevice;
use crate::device::Device;
use crate::lock::{DeviceLock, Holder};
use crate::store::Store;
use crate::store::tunes::SweetSpotRow;
use crate::sysroot::SysRoot;
use crate::tune::report::Report;
use crate::tune::resume::Resume;
use crate::tune::run::{self, Request};
use crate::types::Owner;
use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::Duration;

/// The device class `[policy]` names: `nvme`, `mmc` (by kernel name), `rotational`, else
/// `ssd`.
pub(crate) fn class(dev: &Device) -> &'static str {
    if dev.name.starts_with("nvme") {
        "nvme"
    } else if dev.name.starts_with("mmcblk") {
        "mmc"
    } else if dev.rotational {
        "rotational"
    } else {
        "ssd"
    }
}

/// The policy a retune of `dev` runs, or why the daemon does not retune it (`Err`), from its
/// ruling sweet spot `spot` ([`crate::store::tunes::SweetSpotRow::rules_over`]), in order:
/// 1. the policy the config names for the device (`[keep]`, or an identity's `[policy]`
///    entry): the user's decision;
/// 2. the policy that found its sweet spot, when significant: a retune with another policy
///    would answer another question (a `quick` retune of a `fio-readahead` sweet spot);
/// 3. `[policy]`'s class entry, else `default_policy` ([`DaemonConfig::policy_for`]).
///
/// A kept policy a retune cannot run (its own `[benchmark]`, io_other: [`super::config::cannot_retune`];
/// or no policy of that name: neither built in nor in `/etc/sweetspot/policies`) keeps the
/// device at its sweet spot, not retuned: `Err` says so, with the command that retunes it by
/// hand.
pub(crate) fn policy_of(
    cfg: &DaemonConfig,
    dev: &Device,
    spot: Option<&SweetSpotRow>,
) -> std::result::Result<String, String> {
    let fallback = cfg.policy_for(&dev.identity, class(dev));
    if let Some(spec) = cfg.policy.get(&dev.identity) {
        return Ok(spec.clone());
    }
    let (kept, why) = match (cfg.keep.get(&dev.identity), spot) {
        (Some(p), _) => (p.as_str(), "the config's [keep] names it for the device"),
        (None, Some(s)) if s.significant => (s.policy.as_str(), "it found the device's sweet spot"),
        _ => return Ok(fallback.to_string()),
    };
    if super::config::policy_name(fallback) == kept {
        return Ok(fallback.to_string());
    }
    // A name read back from the database is looked up by name only (built in, or
    // `/etc/sweetspot/policies/<name>.toml` under the system's trust rules), never as a path.
    let by_name = !kept.is_empty() && !kept.contains('/') && !kept.ends_with(".toml");
    let resolved = if by_name {
        crate::tune::policy::resolve(
            kept,
            Path::new(crate::tune::policy::SYSTEM_DIR),
            crate::trust::Origin::System,
        )
    } else {
        Err(Error::BadInput("not a policy name".into()))
    };
    let refusal = match resolved {
        Ok(pol) => match super::config::cannot_retune(&pol, kept) {
            None => return Ok(kept.to_string()),
            Some(r) => r,
        },
        Err(e) => format!("'{kept}': {e}"),
    };
    let what = spot.filter(|s| s.policy == kept).map_or_else(
        || format!("policy {kept}: none stored yet"),
        SweetSpotRow::describe,
    );
    Err(format!(
        "at its sweet spot ({what}), not retuned: policy {kept} rules it ({why}) and a \
         retune cannot run it ({refusal}); retune it by hand with `sweetspot tune --device {} \
         --policy FILE --apply` (FILE: policy {kept}'s file), or name the policy to retune it \
         with under [policy] in the daemon's config",
        dev.name
    ))
}

/// Whether a device is due for a retune at `now` (Unix s): `Ok(why)` (never tuned, the kernel
/// changed, the interval elapsed), or `Err(due_at)` (Unix s).
pub(crate) fn due(
    spot: Option<&SweetSpotRow>,
    kernel: &str,
    now: i64,
    cfg: &DaemonConfig,
) -> std::result::Result<String, i64> {
    let Some(s) = spot else {
        return Ok("never tuned".into());
    };
    if s.kernel != kernel {
        return Ok(format!(
            "tuned on kernel {}, running {kernel} (the sweet spot is stale)",
            s.kernel
        ));
    }
    let at = interval_due_at(s, cfg);
    if now >= at {
        Ok(format!(
            "the retune interval ({}) elapsed",
            cfg.interval_label()
        ))
    } else {
        Err(at)
    }
}

/// When the retune interval of sweet spot `s` elapses (Unix s): its `created_at` plus the
/// interval, rounded up to whole seconds. [`due`] and `status` both take it from here.
pub(crate) fn interval_due_at(s: &SweetSpotRow, cfg: &DaemonConfig) -> i64 {
    // The interval is at most ten years (`config::MAX_INTERVAL_DAYS`); a `created_at` near
    // the end of time (a damaged row) saturates rather than wrapping into the past.
    s.created_at.saturating_add(cfg.interval_s().ceil() as i64)
}

/// Minutes after local midnight now (localtime_r(3), so `TZ` and /etc/localtime count).
pub(crate) fn local_minutes() -> u32 {
    // SAFETY: `time(NULL)` only reads the clock; `localtime_r` writes into the `tm` we own
    // (zeroed, a valid `struct tm`) and is thread-safe.
    unsafe {
        let t = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return 0;
        }
        (tm.tm_hour * 60 + tm.tm_min) as u32
    }
}

/// True when `minute` (after midnight) is inside the window `(start, end)`, which may wrap
/// midnight; start == end is an empty window.
pub(crate) fn in_window(minute: u32, (start, end): (u32, u32)) -> bool {
    if start <= end {
        (start..end).contains(&minute)
    } else {
        minute >= start || minute < end
    }
}

/// The host-wide knobs (vm, CPU scheduler: [`crate::knob::ApplyOrder::is_host`]) that
/// `policy` tunes, by name.
pub(crate) fn host_knobs(policy: &crate::tune::policy::Policy) -> Vec<&str> {
    policy
        .knobs
        .keys()
        .map(String::as_str)
        .filter(|k| crate::knob::catalogue::order_of(k).is_some_and(|o| o.is_host()))
        .collect()
}

/// True for the journal owners whose open entries hold a sweet spot, which a retune of the
/// device puts back first (it measures from the kernel's values) and the daemon applies again
/// when it ends: `profile` (the daemon's own writes and `profile apply`'s) and `tune:<id>` (a
/// `tune --device D --apply`). Any other owner's open entry (an admin's `set`, a killed
/// `bench`) keeps the retune from starting ([`journaled`]).
fn holds_a_sweet_spot(owner: &Owner) -> bool {
    matches!(owner, Owner::Profile | Owner::Tune(_))
}

/// The open journal entries a retune of `dev` touches: the device's own (under its name and
/// identity) and the host-wide ones of `host` (the policy's host-wide knobs and their
/// exclusive partners), as `(sweet spots, others)` (`holds_a_sweet_spot`).
///
/// The rule (the undo journal is sacred): a retune does not start while another owner's
/// change of those knobs is journaled and not restored. It would start from that value, not
/// the kernel's, and restoring only the sweet spots' entries under it would leave the later
/// owner's entry holding a value sweetspot wrote (a full `restore` then left the knob at the
/// daemon's value: [`crate::knob::apply::restore_except`] now hands the original down in
/// that case, too). The daemon says so (`contested`) and retunes once `sweetspot restore`
/// has put those knobs back. Errors: the store's.
pub(crate) fn journaled(
    store: &Store,
    dev: &Device,
    host: &[&str],
) -> Result<(
    Vec<crate::store::journal::JournalEntry>,
    Vec<crate::store::journal::JournalEntry>,
)> {
    let on_host = |k: &str| {
        host.contains(&k)
            || crate::knob::catalogue::exclusive_partner(k).is_some_and(|p| host.contains(&p))
    };
    Ok(store
        .journal_open(None, None)?
        .into_iter()
        .filter(|e| match &e.device {
            Some(d) => *d == dev.name && e.identity.as_deref() == Some(dev.identity.as_str()),
            None => on_host(&e.knob),
        })
        .partition(|e| holds_a_sweet_spot(&e.owner)))
}

/// Why a retune of `dev` waits for `others` (another owner's open entries, [`journaled`]):
/// `fifo_batch (\`sweetspot set\`) is journaled and not restored: a retune would start from
/// it; \`sweetspot restore sda\` puts it back`.
pub(crate) fn contested_by(dev: &Device, others: &[crate::store::journal::JournalEntry]) -> String {
    let mut what: Vec<String> = others
        .iter()
        .map(|e| {
            let who = match &e.owner {
                Owner::Set => "`sweetspot set`".to_string(),
                Owner::Bench => "a killed `sweetspot bench`".to_string(),
                o => o.to_string(),
            };
            let host = if e.device.is_none() { " host-wide" } else { "" };
            format!("{}{host} ({who})", e.knob)
        })
        .collect();
    what.sort();
    what.dedup();
    let one = what.len() == 1;
    format!(
        "{} {} changed by another owner and journaled, not restored: a retune would start \
         from {}, not the kernel's values; `sweetspot restore {}` puts {} back",
        what.join(", "),
        if one { "is" } else { "are" },
        if one { "it" } else { "them" },
        dev.name,
        if one { "it" } else { "them" }
    )
}

/// Why a retune of `dev` may not start now: another owner's change of its knobs (or of the
/// host-wide knobs its policy tunes) is journaled and not restored ([`journaled`],
/// [`contested_by`]); `None` when nothing stands in its way. A policy that cannot be resolved
/// (or none, [`policy_of`]) gives `None` here: [`Job::start`] says why. Errors: the store's.
pub(crate) fn contested(
    store: &Store,
    cfg: &DaemonConfig,
    dev: &Device,
    spot: Option<&SweetSpotRow>,
) -> Result<Option<String>> {
    let Ok(name) = policy_of(cfg, dev, spot) else {
        return Ok(None);
    };
    let Ok(policy) = crate::tune::policy::resolve(
        &name,
        Path::new(crate::tune::policy::SYSTEM_DIR),
        crate::trust::Origin::System,
    ) else {
        return Ok(None);
    };
    let (_, others) = journaled(store, dev, &host_knobs(&policy))?;
    Ok((!others.is_empty()).then(|| contested_by(dev, &others)))
}

/// The real testbed's options for a retune: `[retune]`'s job scale, load size (MiB) and lead
/// time (s), and `root`'s `/proc`. Errors: those of [`BenchOptions::new`].
fn bench_options(cfg: &DaemonConfig, root: &SysRoot) -> Result<BenchOptions> {
    let mut opts = BenchOptions::new()?;
    opts.job_scale = cfg.retune.job_scale;
    opts.sizes = opts.sizes.with_mib(cfg.retune.load_mib);
    opts.lead = Duration::from_secs_f64(cfg.retune.lead_s);
    opts.proc_root = root.proc.clone();
    Ok(opts)
}

/// Puts the sweet spots' journaled values on `dev` (and on the `host` knobs) back to what
/// they were before them. Errors: another owner's change is journaled ([`contested_by`]);
/// those of the store and the restore.
fn restore_sweet_spots(
    store: &mut Store,
    root: &SysRoot,
    dev: &Device,
    host: &[&str],
) -> Result<()> {
    let (spots, others) = journaled(store, dev, host)?;
    if !others.is_empty() {
        return Err(Error::BadInput(contested_by(dev, &others)));
    }
    let ids: Vec<i64> = spots.iter().map(|e| e.id).collect();
    crate::knob::apply::restore_except(&crate::knob::io::RealIo, store, root, None, None, &|e| {
        !ids.contains(&e.id)
    })?;
    Ok(())
}

/// The body of a retune's thread: tunes device `name` with `policy` (at most `budget` trials,
/// else the policy's) on the real testbed with its own database connections to `db`, under
/// `lock`, going on from a stopped retune of the same device, kernel and policy if any.
fn run_retune(
    db: &Path,
    root: &SysRoot,
    name: &str,
    opts: BenchOptions,
    policy: &crate::tune::policy::Policy,
    budget: Option<u32>,
    lock: &DeviceLock,
) -> Result<Report> {
    let store = Store::open(db)?;
    let mut tb = RealDevice::device(Store::open(db)?, root, name, None, opts)?;
    // An earlier retune of the same device, kernel and policy that was stopped
    // goes on where it stopped (its finished trials replayed).
    let resume = Resume::find(
        &store,
        &tb.target(),
        &policy.name,
        budget.unwrap_or(policy.budget),
        &tb.sizes(),
    )?;
    if let Some(r) = &resume {
        tracing::info!(
            "{name}: resuming tune #{} (its {} finished trials are reused)",
            r.from_tune,
            r.trials()
        );
    }
    let known = known_on_grid(&store, &tb, policy, name)?;
    let req = Request {
        policy,
        budget,
        seed: rand::random(),
        apply: false,
        quiet: true,
        lock,
        resume: resume.as_ref(),
        confirm: known.as_ref(),
    };
    run::tune(&store, db, &mut tb, &req)
}

/// The sweet spot a retune of `name` confirms before it searches: the device's own stored
/// one for `policy`, else one of another disk of its model ([`crate::tune::known`]), if it is
/// a point of the policy's grid on the device now (the log says when it is not, and the
/// retune searches).
fn known_on_grid(
    store: &Store,
    tb: &RealDevice,
    policy: &crate::tune::policy::Policy,
    name: &str,
) -> Result<Option<crate::tune::known::Known>> {
    let Some(known) = crate::tune::known::own_or_model(store, &tb.target(), &policy.name)? else {
        return Ok(None);
    };
    let space = crate::tune::space::Space::build(&tb.space(), policy, tb.zoned().as_deref())?;
    match crate::tune::known::grid_point(&space, &known) {
        Ok(_) => {
            tracing::info!(
                "{name}: confirming {} ({}) before any search",
                crate::knob::setting_label(&known.setting),
                known.source
            );
            Ok(Some(known))
        }
        Err(e) => {
            tracing::info!("{name}: searching: {e}");
            Ok(None)
        }
    }
}

/// A retune running in its own thread.
pub(crate) struct Job {
    /// The device's identity.
    pub identity: String,
    /// Its kernel name.
    pub device: String,
    /// The policy.
    pub policy: String,
    /// Why it was due.
    pub why: String,
    /// Set once the main loop asked it to stop: why.
    pub stopping: Option<String>,
    /// True when it holds the host's lock (its policy tunes host-wide knobs): the manager
    /// leaves those alone until it ends.
    pub host: bool,
    handle: JoinHandle<Result<Report>>,
}

impl Job {
    /// Takes `dev`'s lock for `sweetspot daemon` (refused, naming the holder, when a CLI
    /// `tune`, `set`, ... has it), and the host's lock ([`crate::lock::HOST`]) too when the
    /// policy ([`policy_of`] of `dev` and its ruling sweet spot `spot`) has host-wide knobs
    /// ([`host_knobs`]), and starts the tune in a thread with its own database
    /// connection. The sweet spots' values on the device (and on the policy's host-wide
    /// knobs) are put back to what they were before them (the kernel's), so the tune measures
    /// against those ([`journaled`]). Errors: the lock is held; another owner's change is
    /// journaled ([`journaled`], [`contested_by`]); no writable mounted filesystem; an unknown
    /// policy; those of the restore.
    pub(crate) fn start(
        store: &mut Store,
        db: &Path,
        root: &SysRoot,
        dev: &Device,
        cfg: &DaemonConfig,
        spot: Option<&SweetSpotRow>,
        why: String,
    ) -> Result<Job> {
        if !dev.mounts.iter().any(|m| m.writable) {
            return Err(Error::BadInput(format!(
                "{}: no writable mounted filesystem (a retune writes its loads only there)",
                dev.name
            )));
        }
        let policy_name = policy_of(cfg, dev, spot).map_err(Error::BadInput)?;
        let policy = crate::tune::policy::resolve(
            &policy_name,
            Path::new(crate::tune::policy::SYSTEM_DIR),
            crate::trust::Origin::System,
        )?;
        let lock = DeviceLock::acquire(
            &crate::lock::path(db, root, &dev.identity),
            &dev.name,
            Holder::me("daemon"),
        )?;
        // A policy with host-wide knobs (vm, kernel.sched_*, debugfs sched) writes the whole
        // host's: one writer for them too (refused, naming the holder, when a CLI has it).
        let host = host_knobs(&policy);
        let host_lock = if host.is_empty() {
            None
        } else {
            Some(DeviceLock::acquire(
                &crate::lock::path(db, root, crate::lock::HOST),
                &crate::lock::host_label(&host),
                Holder::me("daemon"),
            )?)
        };
        let opts = bench_options(cfg, root)?;
        // The tune compares candidates with the device's values when it starts: the kernel's,
        // not the old sweet spot, so the sweet spots' values are put back first (journaled;
        // the daemon applies the sweet spot, the new one or else the old, when the tune ends,
        // also when it is stopped or fails). Another owner's change refuses the start (under
        // the locks, so no `set` comes between). Last before the thread, so that nothing else
        // refuses the start after it.
        restore_sweet_spots(store, root, dev, &host)?;
        let host_lock_taken = host_lock.is_some();
        let (db, root, name): (PathBuf, SysRoot, String) =
            (db.to_path_buf(), root.clone(), dev.name.clone());
        let budget = cfg.retune.budget;
        let handle = std::thread::Builder::new()
            .name("retune".into())
            .spawn(move || -> Result<Report> {
                let _host_lock = host_lock;
                run_retune(&db, &root, &name, opts, &policy, budget, &lock)
            })
            .map_err(|e| Error::io("starting the retune thread", e))?;
        Ok(Job {
            identity: dev.identity.clone(),
            device: dev.name.clone(),
            policy: policy_name,
            why,
            stopping: None,
            host: host_lock_taken,
            handle,
        })
    }

    /// True once the tune has ended (its device restored, its lock released).
    pub(crate) fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }

    /// Waits for the tune to end and gives its result.
    pub(crate) fn join(self) -> Result<Report> {
        self.handle
            .join()
            .unwrap_or_else(|_| Err(Error::Failed("the retune thread panicked".into())))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn spot(kernel: &str, created_at: i64) -> SweetSpotRow {
        SweetSpotRow {
            id: 1,
            identity: "wwid:x".into(),
            kernel: kernel.into(),
            policy: "quick".into(),
            tune_id: None,
            setting: Default::default(),
            default_setting: Default::default(),
            significant: false,
            evidence: serde_json::Value::Null,
            created_at,
        }
    }

    #[test]
    fn due_when_never_tuned_kernel_changed_or_interval_elapsed() {
        let mut cfg = DaemonConfig::default();
        assert_eq!(due(None, "6.18", 0, &cfg).unwrap(), "never tuned");
        assert!(
            due(Some(&spot("6.1", 0)), "6.18", 0, &cfg)
                .unwrap()
                .contains("stale")
        );
        assert_eq!(
            due(Some(&spot("6.18", 100)), "6.18", 200, &cfg),
            Err(100 + 7 * 86_400)
        );
        cfg.retune_interval_s = Some(2.0);
        assert_eq!(due(Some(&spot("6.18", 100)), "6.18", 101, &cfg), Err(102));
        assert!(
            due(Some(&spot("6.18", 100)), "6.18", 102, &cfg)
                .unwrap()
                .contains("(2 s) elapsed")
        );
    }

    fn dev() -> Device {
        Device {
            name: "sda".into(),
            identity: "wwid:x".into(),
            dev: "8:0".into(),
            rotational: false,
            zoned: "none".into(),
            schedulers: vec!["none".into()],
            scheduler: "none".into(),
            size_bytes: 1 << 30,
            writable: true,
            mounts: Vec::new(),
        }
    }

    /// The daemon retunes with the policy that found the sweet spot, not `default_policy`;
    /// one a retune cannot run keeps the device at its sweet spot, not retuned, and says so.
    #[test]
    fn a_retune_keeps_the_policy_that_found_the_sweet_spot() {
        let mut cfg = DaemonConfig::default();
        let mut s = spot("6.18", 0);
        s.policy = "desktop".into();
        s.significant = true;
        s.setting = [("read_ahead_kb".to_string(), 256.into())].into();
        s.default_setting = [("read_ahead_kb".to_string(), 16.into())].into();
        s.evidence = serde_json::json!({"objective": {"improvement": {"ratio": 1.54}}});
        assert_eq!(policy_of(&cfg, &dev(), Some(&s)).unwrap(), "desktop");
        assert_eq!(policy_of(&cfg, &dev(), None).unwrap(), "quick");
        // "keep the default": nothing to keep; the configured policy.
        let mut plain = s.clone();
        plain.significant = false;
        assert_eq!(policy_of(&cfg, &dev(), Some(&plain)).unwrap(), "quick");
        // A user benchmark's policy (not built in, not in /etc/sweetspot/policies): kept.
        s.policy = "fio-readahead-test-only".into();
        let e = policy_of(&cfg, &dev(), Some(&s)).unwrap_err();
        assert!(
            e.starts_with(
                "at its sweet spot (policy fio-readahead-test-only on 6.18: read_ahead_kb \
                 16 → 256, 1.54× better), not retuned: policy fio-readahead-test-only rules it \
                 (it found the device's sweet spot) and a retune cannot run it ('fio-readahead-\
                 test-only': unknown policy"
            ),
            "{e}"
        );
        assert!(
            e.contains("`sweetspot tune --device sda --policy FILE --apply`"),
            "{e}"
        );
        // A stored name is never taken for a path.
        s.policy = "/tmp/evil.toml".into();
        let e = policy_of(&cfg, &dev(), Some(&s)).unwrap_err();
        assert!(e.contains("('/tmp/evil.toml': not a policy name)"), "{e}");
        // The user's decision: an identity's [policy] entry, or [keep].
        cfg.policy.insert("wwid:x".into(), "throughput".into());
        assert_eq!(policy_of(&cfg, &dev(), Some(&s)).unwrap(), "throughput");
        cfg.policy.clear();
        cfg.keep.insert("wwid:x".into(), "desktop".into());
        assert_eq!(policy_of(&cfg, &dev(), Some(&s)).unwrap(), "desktop");
    }

    #[test]
    fn quiet_windows_may_wrap_midnight() {
        assert!(in_window(9 * 60, (8 * 60, 18 * 60)));
        assert!(!in_window(18 * 60, (8 * 60, 18 * 60)));
        assert!(in_window(23 * 60, (22 * 60, 6 * 60)));
        assert!(in_window(60, (22 * 60, 6 * 60)));
        assert!(!in_window(12 * 60, (22 * 60, 6 * 60)));
        assert!(!in_window(5, (5, 5)));
        assert!(local_minutes() < 24 * 60);
    }
}

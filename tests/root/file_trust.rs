//! Who may have written a file that makes root run a command or write a knob (issue 31, item
//! 2; the rule is `src/trust.rs`'s): a policy whose `[benchmark] command` root would run, in
//! a file `nobody` may write, is refused (exit 2, naming the file, its owner, its mode and the
//! fix) before the command runs, whether it is named with `--policy FILE` or found in
//! `/etc/sweetspot/policies/`; so is a daemon config, or a policy it names, not root's. A
//! root-owned 0644 policy runs. These need root (`chown`); CI runs them as root.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::os::unix::fs::{PermissionsExt, chown};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `nobody`'s uid and gid on Debian (base-passwd: 65534).
const NOBODY: u32 = 65534;

/// A policy that tunes the fake tree's `sched_autogroup_enabled` against a benchmark whose
/// command creates `marker` (and prints a figure), owned by `uid` with `mode`.
fn marker_policy(path: &Path, marker: &Path, uid: u32, mode: u32) {
    std::fs::write(
        path,
        format!(
            "budget = 6\ncheck_pairs = 2\n[knobs.sched_autogroup_enabled]\n[benchmark]\n\
             command = \"touch {}; echo n 5\"\nregex = 'n ([0-9]+)'\nmaximize = \"n\"\n",
            marker.display()
        ),
    )
    .unwrap();
    chown(path, Some(uid), Some(uid)).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `sweetspot tune --host -q --policy <policy>` on a fake host tree under `t`: (exit code,
/// stderr).
fn tune(t: &Path, policy: &str) -> (Option<i32>, String) {
    tune_as(t, policy, None)
}

/// [`tune`] as if run by `sudo` from the user `sudo_uid` (`SUDO_UID` set), or by root itself.
fn tune_as(t: &Path, policy: &str, sudo_uid: Option<u32>) -> (Option<i32>, String) {
    let (sys, proc_, _) = common::autogroup_host(t);
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("sweetspot"));
    cmd.env_remove("SUDO_UID");
    if let Some(uid) = sudo_uid {
        cmd.env("SUDO_UID", uid.to_string());
    }
    let out = cmd
        .current_dir(t)
        .arg("--db")
        .arg(t.join("s.db"))
        .arg("--sysfs-root")
        .arg(&sys)
        .arg("--procfs-root")
        .arg(&proc_)
        .args(["tune", "--host", "-q", "--seed", "1", "--policy", policy])
        .output()
        .unwrap();
    common::code_and_stderr(out)
}

#[test]
fn a_policy_anyone_may_write_named_with_policy_file_is_refused_before_its_command_runs() {
    let Some(_gate) = common::root::needs_root("chown") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let marker = t.path().join("MARKER");
    let policy = t.path().join("evil.toml");
    marker_policy(&policy, &marker, NOBODY, 0o666);
    let (code, err) = tune(t.path(), policy.to_str().unwrap());
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "policy {}: it is world-writable (owner nobody (uid 65534), group nogroup (gid \
             65534), mode 0666): whoever can write it could make root write kernel knobs or run \
             commands; fix: chmod o-w {}",
            policy.display(),
            policy.display()
        )),
        "{err}"
    );
    assert!(!marker.exists(), "root ran the policy's command");

    // Root's own 0644 file: accepted, and its command runs.
    marker_policy(&policy, &marker, 0, 0o644);
    let (code, err) = tune(t.path(), policy.to_str().unwrap());
    assert_eq!(code, Some(0), "{err}");
    assert!(marker.exists(), "{err}");
}

#[test]
fn a_policy_named_with_policy_file_must_be_roots_or_the_sudo_users() {
    let Some(_gate) = common::root::needs_root("chown") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let marker = t.path().join("MARKER");
    let policy = t.path().join("theirs.toml");
    // nobody's own file, writable by nobody else.
    marker_policy(&policy, &marker, NOBODY, 0o644);
    let (code, err) = tune_as(t.path(), policy.to_str().unwrap(), None);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "policy {}: it is owned by nobody (uid 65534), not root (no sudo user: SUDO_UID \
             unset)",
            policy.display()
        )),
        "{err}"
    );
    let (code, err) = tune_as(t.path(), policy.to_str().unwrap(), Some(4321));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("not root or uid 4321, who ran this"), "{err}");
    assert!(!marker.exists(), "root ran another user's command");
    // Run by nobody under sudo: their own policy.
    let (code, err) = tune_as(t.path(), policy.to_str().unwrap(), Some(NOBODY));
    assert_eq!(code, Some(0), "{err}");
    assert!(marker.exists(), "{err}");
}

/// Removes on drop what it made under `/etc/sweetspot/policies/`: the file, and the
/// directories it created (only those, only when empty).
struct EtcPolicy {
    file: PathBuf,
    made: Vec<PathBuf>,
}

impl EtcPolicy {
    fn new(name: &str) -> EtcPolicy {
        let dir = Path::new(sweetspot::tune::policy::SYSTEM_DIR);
        let made: Vec<PathBuf> = dir
            .ancestors()
            .take_while(|a| !a.exists())
            .map(Path::to_path_buf)
            .collect();
        std::fs::create_dir_all(dir).unwrap();
        for d in &made {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        EtcPolicy {
            file: dir.join(format!("{name}.toml")),
            made,
        }
    }
}

impl Drop for EtcPolicy {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
        for d in &self.made {
            let _ = std::fs::remove_dir(d);
        }
    }
}

#[test]
fn a_policy_in_the_policies_directory_must_be_roots() {
    let Some(_gate) = common::root::needs_root("chown") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let marker = t.path().join("MARKER");
    let name = format!("sweetspot-test-file-trust-{}", std::process::id());
    let etc = EtcPolicy::new(&name);
    // Anyone may write it: refused.
    marker_policy(&etc.file, &marker, NOBODY, 0o666);
    let (code, err) = tune(t.path(), &name);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "policy {}: it is world-writable (owner nobody (uid 65534), group nogroup (gid \
             65534), mode 0666)",
            etc.file.display()
        )) && err.contains(&format!("fix: chmod o-w {}", etc.file.display())),
        "{err}"
    );
    assert!(!marker.exists(), "root ran the policy's command");
    // Only nobody may write it: still refused there (a default path is root's alone), which
    // `--policy FILE` of the same file would accept.
    marker_policy(&etc.file, &marker, NOBODY, 0o644);
    let (code, err) = tune(t.path(), &name);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "policy {}: it is owned by nobody (uid 65534), not root (owner nobody (uid 65534), \
             group nogroup (gid 65534), mode 0644)",
            etc.file.display()
        )) && err.contains(&format!("fix: chown root {}", etc.file.display())),
        "{err}"
    );
    assert!(!marker.exists(), "root ran the policy's command");
    // Root's: found by name and run.
    marker_policy(&etc.file, &marker, 0, 0o644);
    let (code, err) = tune(t.path(), &name);
    assert_eq!(code, Some(0), "{err}");
    assert!(marker.exists(), "{err}");
}

/// `sweetspot daemon --config <cfg>` on an empty fake sysfs: its exit code and stderr once it
/// exits, or `None` when it is still running after `secs` (then it is stopped with SIGTERM).
fn daemon(dir: &Path, cfg: &Path, secs: u64) -> Option<(Option<i32>, String)> {
    let sys = dir.join("sys");
    std::fs::create_dir_all(sys.join("block")).unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
        .env_remove("SWEETSPOT_DB")
        .arg("--db")
        .arg(dir.join("s.db"))
        .arg("--sysfs-root")
        .arg(&sys)
        .args(["daemon", "--config"])
        .arg(cfg)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if t0.elapsed() > Duration::from_secs(secs) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let running = status.is_none();
    if running {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    (!running).then(|| common::code_and_stderr(out))
}

#[test]
fn the_daemon_reads_only_a_config_and_policies_root_owns_even_one_given_with_config() {
    let Some(_gate) = common::root::needs_root("chown") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let cfg = t.path().join("daemon.toml");
    std::fs::write(&cfg, "poll_s = 1\n").unwrap();
    std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o644)).unwrap();
    chown(&cfg, Some(NOBODY), Some(NOBODY)).unwrap();
    let (code, err) = daemon(t.path(), &cfg, 20).expect("the daemon refused its config");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "daemon config {}: it is owned by nobody (uid 65534), not root (owner nobody (uid \
             65534), group nogroup (gid 65534), mode 0644)",
            cfg.display()
        )) && err.contains(&format!("fix: chown root {}", cfg.display())),
        "{err}"
    );

    // Root's config naming a policy nobody owns: the daemon would run it unattended.
    let policy = t.path().join("p.toml");
    std::fs::write(
        &policy,
        "loads = [\"no_load\", \"io_load\"]\nbudget = 8\n[objective]\nminimize = \"ratio\"\n\
         loads = [\"io_load\"]\n[knobs.read_ahead_kb]\n",
    )
    .unwrap();
    chown(&policy, Some(NOBODY), Some(NOBODY)).unwrap();
    std::fs::set_permissions(&policy, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::write(
        &cfg,
        format!("poll_s = 1\ndefault_policy = \"{}\"\n", policy.display()),
    )
    .unwrap();
    chown(&cfg, Some(0), Some(0)).unwrap();
    let (code, err) = daemon(t.path(), &cfg, 20).expect("the daemon refused the policy");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "{}:2: default_policy: '{}': policy {}: it is owned by nobody (uid 65534), not root",
            cfg.display(),
            policy.display(),
            policy.display()
        )),
        "{err}"
    );

    // Both root's: the daemon runs (until SIGTERM).
    chown(&policy, Some(0), Some(0)).unwrap();
    assert!(
        daemon(t.path(), &cfg, 3).is_none(),
        "a root-owned config and policy are accepted"
    );
}

/// A profile chooses what root writes at boot: root's file in a directory `nobody` owns (who
/// could swap it for another) is refused, naming the directory; the old check looked at the
/// file alone.
#[test]
fn a_profile_in_a_directory_another_user_owns_is_refused() {
    let Some(_gate) = common::root::needs_root("chown") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let sub = t.path().join("profiles");
    std::fs::create_dir(&sub).unwrap();
    chown(&sub, Some(NOBODY), Some(NOBODY)).unwrap();
    let file = sub.join("p.toml");
    std::fs::write(&file, "version = 1\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let sys = t.path().join("sys");
    std::fs::create_dir_all(sys.join("block")).unwrap();
    let apply = || {
        common::code_and_stderr(
            Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
                .arg("--db")
                .arg(t.path().join("s.db"))
                .arg("--sysfs-root")
                .arg(&sys)
                .args(["profile", "apply"])
                .arg(&file)
                .output()
                .unwrap(),
        )
    };
    let (code, err) = apply();
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "profile {}: directory {} above it is owned by nobody (uid 65534), not root",
            file.display(),
            sub.display()
        )) && err.contains(&format!("fix: chown root {}", sub.display())),
        "{err}"
    );
    chown(&sub, Some(0), Some(0)).unwrap();
    let (code, err) = apply();
    assert_eq!(code, Some(0), "{err}");
}

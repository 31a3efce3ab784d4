//! One real run of contest: the reference job timed while one load competes with it, in a
//! work directory on the target filesystem; or, the same way, the start-up judge's start-up
//! ([`crate::bench::startup`]) instead of the job (`Bencher::run_startup`).
//!
//! A run goes: make the job cold (or warm, for cacherun) → `syncfs` → start the load (its own
//! process group) → wait the lead time → start the job (its own process group) and time it →
//! kill the load's whole group and reap it → clean the load's output and `syncfs`, so one run's
//! dirty pages do not spill into the next. A run is abandoned (both groups killed,
//! [`Error::Interrupted`]) when [`crate::signals::abort_run`] says so: on the first Ctrl-C or
//! SIGTERM under `bench`, on the second under `tune` (the first lets the run finish).

use crate::bench::group::{Exit, Group};
use crate::bench::job::{self, JobSpec};
use crate::bench::leader;
use crate::bench::loads::{self, LoadSizes, LoadSpec, counter::Counter};
use crate::bench::startup::{self, StartupSpec};
use crate::bench::{Load, Run, fsutil, stale};
use crate::{Error, Result};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Default lead: how long a load runs before the job starts, s.
pub(crate) const LEAD_S: f64 = 2.0;

/// What a run times while the load competes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Foreground {
    /// The reference job (built-in or `--job`).
    Job,
    /// One start-up of the start-up judge.
    Startup,
}

/// How real runs are made; built from the CLI's `TargetArgs` or by tests.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Scale of the built-in job (1.0: no_load ≈ 6 s on 2 cores).
    pub job_scale: f64,
    /// A shell command replacing the built-in job (`--job`), run with `sh -c` in the target
    /// directory.
    pub job_command: Option<String>,
    /// Load sizes.
    pub sizes: LoadSizes,
    /// How long a load runs before the job starts.
    pub lead: Duration,
    /// Drop the whole page cache before each cold run (`--drop-caches`).
    pub drop_caches: bool,
    /// Where io_other writes.
    pub other_dir: Option<PathBuf>,
    /// sweetspot's binary, re-executed as `__worker` (tests pass the built binary).
    pub exe: PathBuf,
    /// procfs root (for `--drop-caches`).
    pub proc_root: PathBuf,
    /// A user benchmark ([`crate::bench::user_job`]) runs in the work directory instead of the
    /// job and contest's loads: neither is made, so no free space is asked for them (the
    /// benchmark's own needs are its own; sweetspot cannot know them).
    pub user_benchmark: bool,
}

impl BenchOptions {
    /// Defaults: scale 1, built-in job, default sizes, lead `LEAD_S`, this executable.
    pub fn new() -> Result<BenchOptions> {
        Ok(BenchOptions {
            job_scale: 1.0,
            job_command: None,
            sizes: LoadSizes::default(),
            lead: Duration::from_secs_f64(LEAD_S),
            drop_caches: false,
            other_dir: None,
            exe: std::env::current_exe().map_err(|e| Error::io("finding sweetspot's binary", e))?,
            proc_root: PathBuf::from("/proc"),
            user_benchmark: false,
        })
    }
}

/// Runs the job and loads in a work directory (`.sweetspot-bench-XXXXXX`) under a target
/// directory; the work directory is removed on drop.
#[derive(Debug)]
pub struct Bencher {
    target: PathBuf,
    job: JobSpec,
    /// The start-up judge's tree, made at its first run.
    startup: Option<StartupSpec>,
    opts: BenchOptions,
    prepared: BTreeSet<Load>,
    last_load_pgid: Option<i32>,
    scratchpad: tempfile::TempDir,
    /// The run directory's owner lock ([`stale::own`]).
    _owner: nix::fcntl::Flock<std::fs::File>,
    work: tempfile::TempDir,
    /// The work directory's owner lock, so a later run's [`stale::sweep_work`] removes it
    /// after a SIGKILL.
    _work_owner: nix::fcntl::Flock<std::fs::File>,
}

impl Bencher {
    /// Creates the work directory under `target`, checks free space for the job and the largest
    /// default load, and generates the job's files (neither for a user benchmark:
    /// [`BenchOptions::user_benchmark`]). Errors: not enough space (exit 2, naming
    /// how much is needed), an unwritable target, a bad `--job-scale`.
    pub fn new(target: &Path, opts: BenchOptions) -> Result<Bencher> {
        if !target.is_dir() {
            return Err(Error::BadInput(format!(
                "{}: not a directory",
                target.display()
            )));
        }
        if let Some(d) = &opts.other_dir
            && !d.is_dir()
        {
            return Err(Error::BadInput(format!(
                "--other-dir {}: not a directory",
                d.display()
            )));
        }
        // A killed run's work directory holds hundreds of MiB the space check would miss.
        for what in stale::sweep_work(target) {
            tracing::warn!("leftover of a killed run: {what}");
        }
        let work = tempfile::Builder::new()
            .prefix(stale::WORK_PREFIX)
            .tempdir_in(target)
            .map_err(|e| {
                Error::io(
                    format!("creating a work directory in {}", target.display()),
                    e,
                )
            })?;
        let work_owner =
            stale::own(work.path()).map_err(|e| Error::io("locking the work directory", e))?;
        let job = JobSpec::scaled(&work.path().join("job"), opts.job_scale)?;
        if !opts.user_benchmark {
            let largest = Load::ALL
                .iter()
                .map(|&l| loads::bytes_needed(l, &opts.sizes))
                .max()
                .unwrap_or(0);
            fsutil::check_space(
                target,
                job.bytes_needed() + largest,
                "the job and its loads",
            )?;
        }
        let scratchpad = tempfile::Builder::new()
            .prefix(stale::RUN_PREFIX)
            .tempdir()
            .map_err(|e| Error::io("creating a temporary directory", e))?;
        // Held while this run lives, so a sweep after a SIGKILL knows the directory is dead.
        let owner =
            stale::own(scratchpad.path()).map_err(|e| Error::io("locking the run directory", e))?;
        // So that `restore` finds the work directory after a SIGKILL wherever it is.
        stale::record_work(scratchpad.path(), work.path())
            .map_err(|e| Error::io("recording the work directory", e))?;
        if opts.job_command.is_none() && !opts.user_benchmark {
            job::prepare(&job)?;
        }
        Ok(Bencher {
            target: target.to_path_buf(),
            job,
            startup: None,
            opts,
            prepared: BTreeSet::new(),
            last_load_pgid: None,
            scratchpad,
            _owner: owner,
            work,
            _work_owner: work_owner,
        })
    }

    /// The work directory (job files, fixtures, load output).
    pub(crate) fn work_dir(&self) -> &Path {
        self.work.path()
    }

    /// The process group id of the last run's load (tests check that none of it survives).
    pub fn last_load_pgid(&self) -> Option<i32> {
        self.last_load_pgid
    }

    /// Refuses loads that cannot run here (io_other without --other-dir, dbench missing), exit 2.
    pub(crate) fn check(&self, loads: &[Load]) -> Result<()> {
        for &l in loads {
            loads::check_available(l, self.opts.other_dir.as_deref())?;
        }
        Ok(())
    }

    /// The sizes in use, flat (recorded with every trial).
    pub fn sizes(&self) -> serde_json::Value {
        let s = &self.opts.sizes;
        let mut v = serde_json::json!({
            "job_scale": self.opts.job_scale,
            "lead_s": self.opts.lead.as_secs_f64(),
            "drop_caches": self.opts.drop_caches,
            "io_load_mib": s.io_mib,
            "read_load_mib": s.read_mib,
            "mem_load_mib": s.mem_mib,
            "tree_files": s.tree_files,
            "tree_file_kib": s.tree_file_kib,
            "ring_procs": s.ring_procs,
            "ring_messages": s.ring_messages,
            "dbench_clients": s.dbench_clients,
        });
        if let Some(map) = v.as_object_mut() {
            match &self.opts.job_command {
                Some(c) => {
                    map.insert("job_command".into(), c.clone().into());
                }
                None => {
                    map.insert("job_files".into(), self.job.files.into());
                    map.insert("job_file_kib".into(), self.job.file_kib.into());
                    map.insert("job_passes".into(), self.job.passes.into());
                    map.insert("job_workers".into(), self.job.workers.into());
                }
            }
        }
        v
    }

    /// One run of `load` (see the module docs). A load that completed no work, or stopped
    /// before the job ended, gives a Run with `failed` set. Errors: the job failed (exit 1),
    /// the load is unavailable (exit 2), [`Error::Interrupted`].
    pub fn run(&mut self, load: Load) -> Result<Run> {
        self.run_with(load, Foreground::Job)
    }

    /// One run of the start-up judge under `load`: as [`Bencher::run`], but one cold
    /// start-up of the application tree ([`startup::run`]; warm under cacherun) is timed
    /// instead of the job. The tree is made at the first call (outside timing). Errors: as
    /// [`Bencher::run`]; not enough space for the tree (exit 2).
    pub(crate) fn run_startup(&mut self, load: Load) -> Result<Run> {
        self.prepare_startup()?;
        self.run_with(load, Foreground::Startup)
    }

    /// Makes the start-up judge's tree unless it is made ([`startup::prepare`]). Errors: not
    /// enough space (exit 2), the filesystem's.
    pub(crate) fn prepare_startup(&mut self) -> Result<()> {
        if self.startup.is_none() {
            let spec = StartupSpec::new(&self.work.path().join("startup"));
            fsutil::check_space(
                self.work.path(),
                spec.bytes_needed(),
                "the start-up judge's tree",
            )?;
            startup::prepare(&spec)?;
            self.startup = Some(spec);
        }
        Ok(())
    }

    fn run_with(&mut self, load: Load, fg: Foreground) -> Result<Run> {
        if crate::signals::interrupted() {
            return Err(Error::Interrupted);
        }
        loads::check_available(load, self.opts.other_dir.as_deref())?;
        let fixtures = self.work.path().join("fixtures");
        if !self.prepared.contains(&load) {
            fsutil::check_space(
                self.work.path(),
                loads::bytes_needed(load, &self.opts.sizes),
                load.name(),
            )?;
            loads::prepare(load, &fixtures, &self.opts.sizes)?;
            self.prepared.insert(load);
        }
        self.make_ready(fg, load == Load::Cacherun)?;
        fsutil::syncfs(self.work.path())?;
        // Preparing fixtures can take minutes on slow media: a stop asked meanwhile ends here,
        // before the run proper starts.
        if crate::signals::interrupted() {
            return Err(Error::Interrupted);
        }

        let out = match (&self.opts.other_dir, load) {
            (Some(d), Load::IoOther) => {
                d.join(format!(".sweetspot-io_other-{}", std::process::id()))
            }
            _ => self.work.path().join("load"),
        };
        let mut running = None;
        let mut failed = None;
        if loads::has_process(load) {
            let counter_path = self.scratchpad.path().join("loads.count");
            let counter = Counter::create(&counter_path)?;
            let spec = LoadSpec {
                load,
                out: out.clone(),
                fixtures,
                counter: counter_path,
                sizes: self.opts.sizes.clone(),
            };
            let json = serde_json::to_string(&spec).map_err(|e| Error::Failed(e.to_string()))?;
            let log = self.scratchpad.path().join("load.stderr");
            let mut group = Group::spawn(
                Command::new(&self.opts.exe)
                    .args(["__worker", "load", &json])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(log_file(&log)?),
            )?;
            self.last_load_pgid = Some(group.pid());
            if !group.sleep_while_running(self.opts.lead)? {
                failed = Some(early_stop(load, &log));
            }
            let before = counter.get();
            running = Some((group, counter, before, log));
        }

        let job = self.time_foreground(fg)?;

        let (loads_done, lcpu) = match running.take() {
            Some((mut group, counter, before, log)) => {
                let after = counter.get();
                let still_running = !group.exited();
                let exit = group.finish();
                if failed.is_none() && !still_running {
                    failed = Some(early_stop(load, &log));
                }
                let done = after.saturating_sub(before);
                // No work since it started, lead-in included: broken. Work in the lead-in
                // and none in the job: waiting on the device (io_load's fdatasync under a low
                // wbt_lat_usec on an emulated hdd-5400), an honest 0. A paced load may do
                // none in a short job (loads::max_quiet_s).
                if failed.is_none()
                    && after == 0
                    && fg == Foreground::Job
                    && job.wall_s >= loads::max_quiet_s(load)
                {
                    failed = Some(format!("{load} completed no work since it started"));
                }
                (Some(done as f64), Some(exit.cpu_pct()))
            }
            None => (None, None),
        };
        if loads::has_process(load) {
            remove_all(&out)?;
            fsutil::syncfs(out.parent().unwrap_or(self.work.path()))?;
        }
        Ok(Run {
            load,
            time_s: job.wall_s,
            cpu_pct: job.cpu_pct(),
            loads: loads_done,
            lcpu_pct: lcpu,
            failed,
            io: None,
        })
    }

    /// Cold (evicted) or warm files of what `fg` reads; `--drop-caches` drops everything
    /// before cold runs.
    fn make_ready(&self, fg: Foreground, warm: bool) -> Result<()> {
        match (fg, &self.startup, &self.opts.job_command, warm) {
            (Foreground::Startup, Some(s), _, true) => startup::make_warm(s)?,
            (Foreground::Startup, Some(s), _, false) => startup::make_cold(s)?,
            (Foreground::Startup, None, _, _) => {
                return Err(Error::Failed("the start-up tree was not made".into()));
            }
            (Foreground::Job, _, None, true) => job::make_warm(&self.job)?,
            (Foreground::Job, _, None, false) => job::make_cold(&self.job)?,
            (Foreground::Job, _, Some(_), true) => {}
            (Foreground::Job, _, Some(_), false) => evict_tree(&self.target, self.work.path())?,
        }
        if self.opts.drop_caches && !warm {
            fsutil::drop_caches(&self.opts.proc_root)?;
        }
        Ok(())
    }

    /// Runs the job (or the start-up) in its own process group and times it. One that does
    /// not exit 0 is an error (exit 1) with the tail of its stderr.
    fn time_foreground(&self, fg: Foreground) -> Result<Exit> {
        let log = self.scratchpad.path().join("job.stderr");
        let worker = |what: &str, json: serde_json::Result<String>| -> Result<Command> {
            let json = json.map_err(|e| Error::Failed(e.to_string()))?;
            let mut cmd = Command::new(&self.opts.exe);
            cmd.args(["__worker", what, &json]);
            Ok(cmd)
        };
        let user_command = self
            .opts
            .job_command
            .as_ref()
            .filter(|_| fg == Foreground::Job);
        let mut cmd = match (fg, user_command) {
            (Foreground::Job, Some(c)) => {
                let mut cmd = Command::new("sh");
                cmd.args(["-c", c]).current_dir(&self.target);
                cmd
            }
            (Foreground::Job, None) => worker("job", serde_json::to_string(&self.job))?,
            (Foreground::Startup, _) => worker("startup", serde_json::to_string(&self.startup))?,
        };
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file(&log)?);
        // A user's command is watched, so that it dies whole with sweetspot.
        let mut group = if user_command.is_some() {
            leader::spawn(&mut cmd)?
        } else {
            Group::spawn(&mut cmd)?
        };
        group.wait(Duration::from_millis(2))?;
        let exit = group.finish();
        // `systemctl stop` or `kill -TERM -- -PGID` signals the job too: that is the stop
        // that was asked for, not a failing job.
        let stop_signal = matches!(exit.signal, Some(s) if s == libc::SIGINT || s == libc::SIGTERM);
        if stop_signal && crate::signals::interrupted() {
            return Err(Error::Interrupted);
        }
        if exit.code != Some(0) {
            let what = match (fg, user_command) {
                (Foreground::Startup, _) => "the start-up judge's start-up".to_string(),
                (_, Some(c)) => format!("the job `{c}`"),
                (_, None) => "the built-in job".to_string(),
            };
            return Err(Error::Failed(format!(
                "{what} failed ({}){}",
                match (exit.code, exit.signal) {
                    (Some(c), _) => format!("exit code {c}"),
                    (_, Some(s)) => format!("signal {s}"),
                    _ => "unknown status".into(),
                },
                tail(&log).map(|t| format!(": {t}")).unwrap_or_default()
            )));
        }
        Ok(exit)
    }
}

fn log_file(p: &Path) -> Result<std::fs::File> {
    std::fs::File::create(p).map_err(|e| Error::io(format!("creating {}", p.display()), e))
}

/// The last non-empty line of a log file.
fn tail(p: &Path) -> Option<String> {
    let s = std::fs::read_to_string(p).ok()?;
    s.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_string())
}

fn early_stop(load: Load, log: &Path) -> String {
    format!(
        "{load} stopped before the job ended{}",
        tail(log).map(|t| format!(": {t}")).unwrap_or_default()
    )
}

fn remove_all(p: &Path) -> Result<()> {
    match std::fs::remove_dir_all(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(format!("removing {}", p.display()), e)),
    }
}

/// For a `--job` command: evicts the regular files under the target directory (at most
/// 200 000, skipping sweetspot's own work directory), so the job's reads are cold.
fn evict_tree(dir: &Path, skip: &Path) -> Result<()> {
    let mut stack = vec![dir.to_path_buf()];
    let mut left = 200_000u32;
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() && p != skip {
                stack.push(p);
            } else if t.is_file() {
                let _ = fsutil::evict(&p);
                left -= 1;
                if left == 0 {
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_directory_records_its_work_directory_for_a_sweep_after_a_sigkill() {
        let target = tempfile::tempdir().unwrap();
        let mut o = BenchOptions::new().unwrap();
        o.user_benchmark = true;
        let b = Bencher::new(target.path(), o).unwrap();
        let run = b.scratchpad.path().to_path_buf();
        let recorded = std::fs::read_to_string(run.join(stale::WORK_RECORD)).unwrap();
        assert_eq!(Path::new(&recorded), b.work_dir());
        assert!(
            b.work_dir()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(stale::WORK_PREFIX)
        );
    }
}

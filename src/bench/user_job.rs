//! The user's own benchmark as the objective: a shell command, and how to read its figure
//! from what it prints (a regex with one capture group, or a JSON pointer into JSON output
//! such as fio's `--output-format=json`), with the figure's direction and unit.
//!
//! - One run: `sh -c COMMAND` in the target's directory, as the leader of its own process
//!   group, with a watchdog that takes the whole group down if sweetspot is SIGKILLed
//!   ([`super::leader`]), stdout and stderr to temporary files (no pipe can fill and block
//!   it), stdin from `/dev/null`.
//! - Its nice level (`setpriority(2)`) and CPU affinity (`sched_setaffinity(2)`) are set in
//!   the child before `exec`, so everything it starts inherits them: running the load
//!   generator on the server's CPUs measures the generator (the 2009 `ab` figures moved from
//!   7,329 to 11,676 requests/s with `ab` at nice -15). Both are recorded with the results
//!   ([`UserJob::record`]).
//! - A non-zero exit, a signal, a timeout, or output without the figure is a failed run, whose
//!   message carries the last lines of the command's stderr. A failed run has no figure: it
//!   is never read as zero.
//! - A run of the benchmark is a [`Run`] of `no_load` (nothing runs beside it): `time_s` is
//!   the command's wall time, `cpu_pct` its CPU%, and `loads` carries the figure, in
//!   [`UserJob::unit`] (the store keeps it in that column). The objective has no no_load
//!   pairing: a trial is `runs` runs of the command.

use super::leader;
use crate::types::{Load, Run};
use crate::{Error, Result};
use serde::Serialize;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// How the figure is read from the command's standard output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Extract {
    /// The first match of this regex; its one capture group is the number.
    Regex(String),
    /// An RFC 6901 JSON pointer into the output parsed as JSON, e.g. `/jobs/0/read/iops`.
    JsonPointer(String),
}

/// Default limit on one run, s.
pub(crate) const DEFAULT_TIMEOUT_S: f64 = 600.0;

/// Longest `timeout_s` a benchmark may have, s: one day. A tune runs it `budget × runs` times,
/// so a longer one is a mistake; and the run waits with a [`std::time::Duration`], which
/// `1e300` s overflows (a panic, leaving the tune `running`).
pub(crate) const MAX_TIMEOUT_S: f64 = 86_400.0;

/// Lines of stderr quoted in a failed run's message.
pub(crate) const STDERR_TAIL_LINES: usize = 5;

/// The user's benchmark.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UserJob {
    /// The shell command (`sh -c`).
    pub command: String,
    /// How its figure is read.
    pub extract: Extract,
    /// What the figure is, e.g. `Requests per second`.
    pub name: String,
    /// Its unit, e.g. `req/s`, `IOPS`, `events/s`, `ms`.
    pub unit: String,
    /// True when a larger figure is better.
    pub maximize: bool,
    /// Nice level of the command (-20..=19), if set.
    pub nice: Option<i32>,
    /// CPUs the command may run on (`sched_setaffinity`), if set.
    pub cpus: Option<Vec<usize>>,
    /// Limit on one run, s.
    pub timeout_s: f64,
}

impl UserJob {
    /// A job reading its figure with `extract`; checks the regex (exactly one capture group)
    /// and the pointer (empty or starting with `/`). Errors: bad input naming the problem.
    pub fn new(
        command: &str,
        extract: Extract,
        name: &str,
        unit: &str,
        maximize: bool,
    ) -> Result<UserJob> {
        let job = UserJob {
            command: command.to_string(),
            extract,
            name: name.to_string(),
            unit: unit.to_string(),
            maximize,
            nice: None,
            cpus: None,
            timeout_s: DEFAULT_TIMEOUT_S,
        };
        job.check()?;
        Ok(job)
    }

    /// Checks every field (see [`UserJob::new`]) and, for `cpus`, that this process may run
    /// on each CPU listed. Errors: [`Error::BadInput`] with the field and value.
    pub fn check(&self) -> Result<()> {
        if self.command.trim().is_empty() {
            return Err(Error::BadInput("benchmark command: empty".into()));
        }
        for (field, v) in [("metric name", &self.name), ("unit", &self.unit)] {
            if v.chars().any(crate::types::text::is_control) {
                return Err(Error::BadInput(format!(
                    "benchmark {field} '{}': holds a control character",
                    crate::types::text::shown(v)
                )));
            }
        }
        match &self.extract {
            Extract::Regex(r) => {
                let re = regex::Regex::new(r)
                    .map_err(|e| Error::BadInput(format!("benchmark regex '{r}': {e}")))?;
                if re.captures_len() != 2 {
                    return Err(Error::BadInput(format!(
                        "benchmark regex '{r}': needs exactly one capture group (the number), \
                         has {}",
                        re.captures_len() - 1
                    )));
                }
            }
            Extract::JsonPointer(p) if !p.is_empty() && !p.starts_with('/') => {
                return Err(Error::BadInput(format!(
                    "benchmark json_pointer '{p}': must start with '/' (RFC 6901), e.g. \
                     /jobs/0/read/iops"
                )));
            }
            Extract::JsonPointer(_) => {}
        }
        if let Some(n) = self.nice
            && !(-20..=19).contains(&n)
        {
            return Err(Error::BadInput(format!(
                "benchmark nice '{n}': must be -20..19"
            )));
        }
        if !(self.timeout_s > 0.0 && self.timeout_s <= MAX_TIMEOUT_S) {
            return Err(Error::BadInput(format!(
                "benchmark timeout_s '{}': must be in (0, {MAX_TIMEOUT_S}] s (at most a day)",
                self.timeout_s
            )));
        }
        if let Some(cpus) = &self.cpus {
            let allowed = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))
                .map_err(|e| Error::Failed(format!("sched_getaffinity: {e}")))?;
            if cpus.is_empty() {
                return Err(Error::BadInput("benchmark cpus: empty list".into()));
            }
            for &c in cpus {
                if !allowed.is_set(c).unwrap_or(false) {
                    return Err(Error::BadInput(format!(
                        "benchmark cpus: CPU '{c}' is not one this process may run on"
                    )));
                }
            }
        }
        Ok(())
    }

    /// The objective's label, e.g. `Requests per second (req/s)`.
    pub(crate) fn label(&self) -> String {
        if self.unit.is_empty() {
            self.name.clone()
        } else {
            format!("{} ({})", self.name, self.unit)
        }
    }

    /// What is recorded with every trial: the command, the figure, nice and CPUs.
    pub fn record(&self) -> serde_json::Value {
        serde_json::json!({ "benchmark": self })
    }

    /// Reads the figure from `stdout`. Errors: why there is none (no match, a capture that is
    /// not a number, output that is not JSON, a pointer to nothing or to a non-number).
    pub fn figure(&self, stdout: &str) -> std::result::Result<f64, String> {
        match &self.extract {
            Extract::Regex(r) => figure_by_regex(r, stdout),
            Extract::JsonPointer(p) => figure_by_json_pointer(p, stdout),
        }
    }

    /// One run in `dir` (see the module docs). Errors: the command cannot be started (exit 1)
    /// or the run was interrupted; a failing command is a [`Run`] with `failed` set.
    pub fn run(&self, dir: &Path) -> Result<Run> {
        let out = tempfile::tempfile().map_err(|e| Error::io("a temporary file", e))?;
        let err = tempfile::tempfile().map_err(|e| Error::io("a temporary file", e))?;
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(&self.command)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(out.try_clone().map_err(|e| Error::io("stdout file", e))?)
            .stderr(err.try_clone().map_err(|e| Error::io("stderr file", e))?);
        let nice = self.nice;
        let cpus = match &self.cpus {
            Some(list) => {
                let mut set = nix::sched::CpuSet::new();
                for &c in list {
                    set.set(c)
                        .map_err(|e| Error::BadInput(format!("benchmark cpus: CPU '{c}': {e}")))?;
                }
                Some(set)
            }
            None => None,
        };
        // SAFETY: between fork and exec the closure makes two system calls (setpriority,
        // sched_setaffinity) on data built before the fork; it allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                if let Some(n) = nice
                    && libc::setpriority(libc::PRIO_PROCESS, 0, n) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                if let Some(set) = &cpus {
                    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), set)
                        .map_err(|e| std::io::Error::from_raw_os_error(e as i32))?;
                }
                Ok(())
            });
        }
        let mut g = leader::spawn(&mut cmd)?;
        let timed_out = g.sleep_while_running(Duration::from_secs_f64(self.timeout_s))?;
        let exit = g.finish();
        let stdout = read_all(out);
        let stderr = read_all(err);
        let failed = if timed_out {
            Some(format!("timed out after {} s", self.timeout_s))
        } else if let Some(s) = exit.signal {
            Some(format!("killed by signal {s}"))
        } else if exit.code != Some(0) {
            Some(format!("exit status {}", exit.code.unwrap_or(-1)))
        } else {
            None
        };
        let (figure, failed) = match failed {
            Some(f) => (None, Some(f)),
            None => match self.figure(&stdout) {
                Ok(x) if x.is_finite() => (Some(x), None),
                Ok(x) => (None, Some(format!("its figure is {x}"))),
                Err(why) => (None, Some(why)),
            },
        };
        let failed = failed.map(|f| {
            format!(
                "benchmark `{}`: {f}{}",
                self.command,
                tail(&stderr, STDERR_TAIL_LINES)
            )
        });
        Ok(Run {
            load: Load::NoLoad,
            time_s: exit.wall_s,
            cpu_pct: exit.cpu_pct(),
            loads: figure,
            lcpu_pct: None,
            failed,
            io: None,
        })
    }
}

/// The figure captured by regex `r`'s one group in its first match in `stdout`. Errors: no
/// match, or a capture that is not a number.
fn figure_by_regex(r: &str, stdout: &str) -> std::result::Result<f64, String> {
    let re = regex::Regex::new(r).map_err(|e| e.to_string())?;
    let caps = re
        .captures(stdout)
        .ok_or_else(|| format!("no match for regex '{r}' in its output"))?;
    let text = caps.get(1).map_or("", |m| m.as_str());
    number(text).ok_or_else(|| format!("regex '{r}' captured '{text}', not a number"))
}

/// The figure JSON pointer `p` finds in the first JSON object of `stdout` (a number, or a
/// string holding one). Errors: no object, not JSON, nothing at `p`, or not a number.
fn figure_by_json_pointer(p: &str, stdout: &str) -> std::result::Result<f64, String> {
    let start = stdout
        .find("{")
        .ok_or_else(|| "its output has no JSON object".to_string())?;
    let mut de =
        serde_json::Deserializer::from_str(&stdout[start..]).into_iter::<serde_json::Value>();
    let doc = de
        .next()
        .ok_or_else(|| "its output has no JSON object".to_string())?
        .map_err(|e| format!("its output is not JSON: {e}"))?;
    let v = doc
        .pointer(p)
        .ok_or_else(|| format!("JSON pointer '{p}' finds nothing in its output"))?;
    v.as_f64()
        .or_else(|| v.as_str().and_then(number))
        .ok_or_else(|| format!("JSON pointer '{p}' finds {v}, not a number"))
}

/// A number as benchmarks print it: `1234.56`, `1,234.56`, `1.2e3`.
fn number(text: &str) -> Option<f64> {
    text.trim().replace(',', "").parse().ok()
}

fn read_all(mut f: std::fs::File) -> String {
    use std::io::{Read, Seek};
    let mut s = Vec::new();
    let _ = f.rewind();
    let _ = f.read_to_end(&mut s);
    String::from_utf8_lossy(&s).into_owned()
}

/// `; stderr: <the last n lines>`, or `; no stderr`.
fn tail(stderr: &str, n: usize) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return "; no stderr".into();
    }
    let from = lines.len().saturating_sub(n);
    format!("; stderr: {}", lines[from..].join(" | "))
}

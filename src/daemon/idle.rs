//! Is the machine idle? Samples of the 1-minute load average and all CPUs' busy % (through
//! sysinfo: `/proc/loadavg` and `/proc/stat`, always the live machine's, whatever
//! `--procfs-root` says), the CPU time of the daemon's own process tree (`/proc/<pid>/stat`:
//! sysinfo has no `cutime`/`cstime`, where the job's reaped processes are counted), and each
//! disk's own I/O (`/sys/block/<dev>/stat`, sectors read and written, under `--sysfs-root`),
//! compared with the config's thresholds ([`super::config::Idle`]). Cheap: three small reads
//! per poll, and a walk of `/proc/<pid>/stat` for the daemon's children only while it retunes.
//!
//! While a retune runs, its own job and loads keep the load average, the CPUs and the device
//! busy, so only the CPU time of other processes counts then (`Sample::others_busy_pct`).

use super::config::Idle;
#[cfg(feature = "daemon")]
use crate::sysroot::SysRoot;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;
#[cfg(feature = "daemon")]
use sysinfo::{CpuRefreshKind, RefreshKind, System};

/// One reading.
#[derive(Clone, Debug)]
pub(crate) struct Sample {
    /// When it was taken.
    pub at: Instant,
    /// 1-minute load average.
    pub load1: f64,
    /// All CPUs' busy % since the previous sample (sysinfo's global CPU usage: busy = total −
    /// idle − iowait of `/proc/stat`'s `cpu` line), 0–100.
    pub cpu_busy_pct: f64,
    /// Online CPUs (sysinfo's CPU list), at least 1.
    pub cpus: usize,
    /// CPU time of this process and its descendants (live ones and those reaped), ticks
    /// (`USER_HZ`).
    pub own: u64,
    /// Sectors (512 B, as `/sys/block/*/stat` counts them) read + written, per disk name.
    pub sectors: BTreeMap<String, u64>,
}

/// The machine-wide readings' source, kept between samples (sysinfo computes CPU usage from
/// the difference of two refreshes).
#[cfg(feature = "daemon")]
pub(crate) struct Probe {
    sys: System,
}

#[cfg(feature = "daemon")]
impl Default for Probe {
    fn default() -> Self {
        Probe {
            sys: System::new_with_specifics(
                RefreshKind::nothing().with_cpu(CpuRefreshKind::nothing().with_cpu_usage()),
            ),
        }
    }
}

#[cfg(feature = "daemon")]
impl Probe {
    /// Reads a sample: the load average and CPU usage of the live machine, the disks in
    /// `disks` under `root.sys`, the daemon's own processes from the real `/proc` (its
    /// children live there). `own_tree` walks `/proc` for descendants (needed only while a
    /// retune runs). An unreadable disk `stat` gives zero sectors (a fake tree without one is
    /// idle).
    pub(crate) fn sample(&mut self, root: &SysRoot, disks: &[String], own_tree: bool) -> Sample {
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        self.sys.refresh_cpu_usage();
        let sectors = disks
            .iter()
            .map(|d| {
                let s = read(&root.sys.join("block").join(d).join("stat"));
                (d.clone(), disk_sectors(&s))
            })
            .collect();
        Sample {
            at: Instant::now(),
            load1: System::load_average().one,
            cpu_busy_pct: f64::from(self.sys.global_cpu_usage()),
            cpus: self.sys.cpus().len().max(1),
            own: if own_tree {
                own_ticks(Path::new("/proc"), std::process::id())
            } else {
                proc_ticks(&read(Path::new("/proc/self/stat"))).map_or(0, |(_, t)| t)
            },
            sectors,
        }
    }
}

/// Clock ticks per second of `/proc/<pid>/stat`'s times (`sysconf(_SC_CLK_TCK)`, 100 on
/// Linux).
fn ticks_per_s() -> f64 {
    // SAFETY: sysconf only reads a constant of the C library.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 { hz as f64 } else { 100.0 }
}

/// Sectors read (field 3) + written (field 7) of a `/sys/block/<dev>/stat` line
/// (Documentation/block/stat.rst).
pub(crate) fn disk_sectors(stat: &str) -> u64 {
    let (read, written) = crate::device::stat::sectors(stat);
    read + written
}

/// `(ppid, utime + stime + cutime + cstime)` of a `/proc/<pid>/stat` line (proc(5): fields 4
/// and 14–17; the command in field 2 may hold spaces and parentheses, so fields are counted
/// after its last `)`).
pub(crate) fn proc_ticks(stat: &str) -> Option<(u32, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): field n is f[n - 3].
    let ppid = f.get(1)?.parse().ok()?;
    let t: u64 = (11..=14)
        .filter_map(|i| f.get(i)?.parse::<u64>().ok())
        .sum();
    Some((ppid, t))
}

/// CPU ticks of process `me` and all its live descendants under `proc` (reaped ones are in
/// their parents' `cutime`/`cstime`).
pub(crate) fn own_ticks(proc: &Path, me: u32) -> u64 {
    let mut all: Vec<(u32, u32, u64)> = Vec::new();
    if let Ok(rd) = std::fs::read_dir(proc) {
        for e in rd.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Some((ppid, t)) = std::fs::read_to_string(e.path().join("stat"))
                .ok()
                .and_then(|s| proc_ticks(&s))
            {
                all.push((pid, ppid, t));
            }
        }
    }
    let mut mine = vec![me];
    let mut sum = 0;
    let mut i = 0;
    while i < mine.len() {
        let p = mine[i];
        for &(pid, ppid, t) in &all {
            if pid == p {
                sum += t;
            }
            if ppid == p && !mine.contains(&pid) {
                mine.push(pid);
            }
        }
        i += 1;
    }
    sum
}

impl Sample {
    /// CPU busy % of all CPUs between `prev` and `self`, without the daemon's own processes:
    /// [`Sample::cpu_busy_pct`] less the own tree's ticks over the interval's CPU time
    /// (seconds × `ticks_per_s` × CPUs), at least 0.
    pub(crate) fn others_busy_pct(&self, prev: &Sample) -> f64 {
        let dt = self.at.duration_since(prev.at).as_secs_f64();
        if dt <= 0.0 {
            return 0.0;
        }
        let own = self.own.saturating_sub(prev.own) as f64;
        let own_pct = 100.0 * own / (dt * ticks_per_s() * self.cpus as f64);
        (self.cpu_busy_pct - own_pct).max(0.0)
    }

    /// The disk's own I/O between `prev` and `self`, KiB/s.
    pub(crate) fn disk_kib_per_s(&self, prev: &Sample, disk: &str) -> f64 {
        let dt = self.at.duration_since(prev.at).as_secs_f64();
        let (Some(a), Some(b)) = (prev.sectors.get(disk), self.sectors.get(disk)) else {
            return 0.0;
        };
        if dt <= 0.0 {
            return 0.0;
        }
        b.saturating_sub(*a) as f64 * 0.5 / dt
    }

    /// Why the machine is not idle for a retune of `disk` (the first criterion over its
    /// threshold), or `None` when it is.
    pub(crate) fn not_idle(&self, prev: &Sample, disk: &str, c: &Idle) -> Option<String> {
        if self.load1 > c.load_avg_max {
            return Some(format!(
                "load average {:.2} > {}",
                self.load1, c.load_avg_max
            ));
        }
        let cpu = self.others_busy_pct(prev);
        if cpu > c.cpu_busy_pct_max {
            return Some(format!("CPU busy {cpu:.0}% > {}%", c.cpu_busy_pct_max));
        }
        let io = self.disk_kib_per_s(prev, disk);
        if io > c.device_kib_per_s_max {
            return Some(format!(
                "{disk} I/O {io:.0} KiB/s > {} KiB/s",
                c.device_kib_per_s_max
            ));
        }
        None
    }

    /// Why a retune in progress must stop (other processes' CPU over the threshold), or `None`.
    pub(crate) fn busy_mid_run(&self, prev: &Sample, c: &Idle) -> Option<String> {
        let cpu = self.others_busy_pct(prev);
        (cpu > c.cpu_busy_pct_max).then(|| {
            format!(
                "other processes' CPU busy {cpu:.0}% > {}%",
                c.cpu_busy_pct_max
            )
        })
    }
}

/// How long each disk has been idle, from consecutive samples.
#[derive(Debug, Default)]
pub(crate) struct Tracker {
    /// The last sample.
    pub last: Option<Sample>,
    /// Per disk: idle since, or why not idle at the last sample.
    pub state: BTreeMap<String, Result<Instant, String>>,
}

impl Tracker {
    /// Takes a new sample and updates every disk's idle state.
    pub(crate) fn update(&mut self, s: Sample, c: &Idle) {
        if let Some(prev) = &self.last {
            for d in s.sectors.keys() {
                let st = match s.not_idle(prev, d, c) {
                    Some(why) => Err(why),
                    None => match self.state.get(d) {
                        Some(Ok(since)) => Ok(*since),
                        _ => Ok(prev.at),
                    },
                };
                self.state.insert(d.clone(), st);
            }
            self.state.retain(|d, _| s.sectors.contains_key(d));
        }
        self.last = Some(s);
    }

    /// `Ok` when `disk` has been idle for `c.for_s`; else why not (with how long it has been
    /// idle so far).
    pub(crate) fn idle_for(&self, disk: &str, c: &Idle) -> Result<(), String> {
        match self.state.get(disk) {
            None => Err("measuring".into()),
            Some(Err(why)) => Err(why.clone()),
            Some(Ok(since)) => {
                let s = since.elapsed().as_secs();
                if s >= c.for_s {
                    Ok(())
                } else {
                    Err(format!("idle for {s} s of {} s", c.for_s))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::time::Duration;

    #[test]
    #[cfg(feature = "daemon")]
    fn parses_proc_and_sysfs_counters() {
        // The live machine through sysinfo: a CPU count and a busy % in range.
        let mut probe = Probe::default();
        let root = SysRoot::new("/sys", "/proc");
        let a = probe.sample(&root, &[], false);
        std::thread::sleep(sysinfo::MINIMUM_CPU_UPDATE_INTERVAL);
        let b = probe.sample(&root, &[], false);
        assert!(a.cpus >= 1 && b.cpus == a.cpus);
        assert!(
            (0.0..=100.0).contains(&b.cpu_busy_pct),
            "{}",
            b.cpu_busy_pct
        );
        assert!(b.load1 >= 0.0);
        assert!(b.own >= a.own && b.own > 0, "this process's own ticks");
        assert_eq!(
            disk_sectors("  10 0 2048 5 3 0 4096 7 0 9 12 0 0 0 0 0 0\n"),
            6144
        );
        let p = "42 (a (b) c) S 7 42 42 0 -1 4194560 1 0 0 0 11 12 13 14 20 0 1 0 5 6 7";
        assert_eq!(proc_ticks(p), Some((7, 50)));
        // A child that burns CPU is in this process's tree (a tick is 10 ms).
        let before = own_ticks(Path::new("/proc"), std::process::id());
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; sleep 5",
            ])
            .spawn()
            .unwrap();
        let t = Instant::now();
        let mut grown = false;
        while !grown && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(100));
            grown = own_ticks(Path::new("/proc"), std::process::id()) >= before + 5;
        }
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(grown, "the child's CPU time is not counted");
    }

    #[test]
    fn idle_only_below_every_threshold_for_the_set_time() {
        let c = Idle {
            load_avg_max: 1.0,
            cpu_busy_pct_max: 20.0,
            device_kib_per_s_max: 100.0,
            for_s: 0,
        };
        let t0 = Instant::now();
        // Two CPUs; `own` in ticks: 1 s of both CPUs is 2 × ticks_per_s() ticks.
        let hz = ticks_per_s();
        let s = |dt: u64, load1: f64, busy_pct: f64, own_pct: f64, sect: u64| Sample {
            at: t0 + Duration::from_secs(dt),
            load1,
            cpu_busy_pct: busy_pct,
            cpus: 2,
            own: (own_pct / 100.0 * 2.0 * hz * dt as f64).round() as u64,
            sectors: [("sda".to_string(), sect)].into_iter().collect(),
        };
        let a = s(0, 0.1, 0.0, 0.0, 0);
        assert_eq!(a.not_idle(&a, "sda", &c), None);
        // 50% busy, of which the daemon's own 40%: others 10%, idle.
        let b = s(1, 0.1, 50.0, 40.0, 0);
        assert_eq!(b.others_busy_pct(&a), 10.0);
        assert_eq!(b.not_idle(&a, "sda", &c), None);
        let b = s(1, 0.1, 50.0, 0.0, 0);
        assert_eq!(b.not_idle(&a, "sda", &c).unwrap(), "CPU busy 50% > 20%");
        assert!(b.busy_mid_run(&a, &c).is_some());
        let b = s(1, 2.5, 0.0, 0.0, 0);
        assert_eq!(b.not_idle(&a, "sda", &c).unwrap(), "load average 2.50 > 1");
        // 1000 sectors in 2 s: 250 KiB/s.
        let b = s(2, 0.1, 0.0, 0.0, 1000);
        assert_eq!(b.disk_kib_per_s(&a, "sda"), 250.0);
        assert_eq!(
            b.not_idle(&a, "sda", &c).unwrap(),
            "sda I/O 250 KiB/s > 100 KiB/s"
        );

        let mut t = Tracker::default();
        assert_eq!(t.idle_for("sda", &c).unwrap_err(), "measuring");
        t.update(s(0, 0.1, 0.0, 0.0, 0), &c);
        t.update(s(1, 0.1, 0.0, 0.0, 0), &c);
        assert!(t.idle_for("sda", &c).is_ok());
        let long = Idle { for_s: 600, ..c };
        assert!(t.idle_for("sda", &long).unwrap_err().ends_with("of 600 s"));
        t.update(s(2, 0.1, 100.0, 0.0, 0), &c);
        assert_eq!(t.idle_for("sda", &c).unwrap_err(), "CPU busy 100% > 20%");
    }
}

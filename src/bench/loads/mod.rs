//! contest's background loads on a real filesystem, one small file per load family.
//!
//! Every load runs in its own process (`sweetspot __worker load`, see
//! [`crate::bench::worker`]) as the leader of its own process group, loops until it is killed
//! with SIGKILL, and counts completed work units in a shared `counter::Counter`. The units
//! (contest's "Loads" column) are, per load:
//!
//! | load | unit |
//! |---|---|
//! | process_load | one message that went once around the ring of relays |
//! | ctar_load | one tar archive of the tree written |
//! | xtar_load | one tar archive of the tree extracted |
//! | io_load, io_other | one MiB written (each pass over the file ends with `fdatasync`) |
//! | light_io_load | one MiB written (two writers, 4000 KiB/s in all, `syncfs` every 2 s) |
//! | read_load | one MiB read cold (the file is evicted before every pass) |
//! | list_load | one walk (readdir + lstat of every entry) of the tree |
//! | mem_load | one MiB of the buffer touched (a write to every 4 KiB page) |
//! | dbench_load | one dbench operation (the cumulative count dbench prints every second) |
//!
//! Sizes are parameters ([`LoadSizes`]), not derived from RAM: an embedded board may have
//! 512 MiB. Fixtures a load only reads (the tree, its tarball, read_load's file) are made once
//! per testbed by `prepare`, outside any timing.

pub mod counter;
mod ctar_load;
mod dbench_load;
mod io_load;
mod list_load;
mod mem_load;
mod process_load;
mod read_load;
mod xtar_load;

use crate::bench::Load;
use crate::{Error, Result};
use counter::Counter;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The loads' sizes; recorded with every trial.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadSizes {
    /// io_load/io_other file, MiB.
    pub io_mib: u64,
    /// read_load file, MiB.
    pub read_mib: u64,
    /// mem_load buffer, MiB.
    pub mem_mib: u64,
    /// Files in the tree that ctar_load archives, xtar_load extracts and list_load walks.
    pub tree_files: u32,
    /// Mean size of a tree file, KiB (sizes vary from 1 to 2 × mean − 1).
    pub tree_file_kib: u32,
    /// Relay processes in process_load's ring.
    pub ring_procs: u32,
    /// Messages circulating in the ring at once.
    pub ring_messages: u32,
    /// dbench clients.
    pub dbench_clients: u32,
}

impl Default for LoadSizes {
    /// Modest defaults: 256 MiB files and buffer, a 4000-file tree of ~16 MiB, a ring of 4.
    fn default() -> Self {
        LoadSizes {
            io_mib: 256,
            read_mib: 256,
            mem_mib: 256,
            tree_files: 4000,
            tree_file_kib: 4,
            ring_procs: 4,
            ring_messages: 4,
            dbench_clients: 2,
        }
    }
}

impl LoadSizes {
    /// Every size multiplied by `mib_scale` where it is in MiB (used by `--load-mib`): all
    /// three MiB sizes set to `mib`.
    pub fn with_mib(mut self, mib: u64) -> Self {
        self.io_mib = mib;
        self.read_mib = mib;
        self.mem_mib = mib;
        self
    }

    fn tree_bytes(&self) -> u64 {
        u64::from(self.tree_files) * u64::from(self.tree_file_kib) * 1024
    }
}

/// What one load process does: sent to `sweetspot __worker load` as JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct LoadSpec {
    /// Which load.
    pub load: Load,
    /// Where the load writes (emptied by sweetspot after the run).
    pub out: PathBuf,
    /// Where the prepared fixtures are.
    pub fixtures: PathBuf,
    /// The counter file.
    pub counter: PathBuf,
    /// Sizes.
    pub sizes: LoadSizes,
}

/// True for the loads that run a background process (all but no_load and cacherun).
pub fn has_process(load: Load) -> bool {
    !matches!(load, Load::NoLoad | Load::Cacherun)
}

/// The longest a healthy `load` may go between two units of its work, s: a job shorter than
/// that may see none done. light_io_load's writers are paced: each of its 2 writes 1 MiB
/// every 2 / (4000 KiB/s) = 0.512 s, both at once (`io_load.rs`). The other loads work
/// flat out: 0.
pub fn max_quiet_s(load: Load) -> f64 {
    match load {
        Load::LightIoLoad => f64::from(io_load::LIGHT_WRITERS) / io_load::LIGHT_MIB_S,
        _ => 0.0,
    }
}

/// Bytes a load needs on the target filesystem, fixtures and output together.
pub(crate) fn bytes_needed(load: Load, s: &LoadSizes) -> u64 {
    let mib = 1u64 << 20;
    match load {
        Load::IoLoad => s.io_mib * mib,
        Load::LightIoLoad => 2 * s.io_mib.min(io_load::LIGHT_MIB) * mib,
        Load::ReadLoad => s.read_mib * mib,
        // tree + output tarball (≈ tree + 512 B headers per file)
        Load::CtarLoad => 2 * s.tree_bytes() + u64::from(s.tree_files) * 4096,
        // tree + tarball + extraction (files take whole 4 KiB blocks)
        Load::XtarLoad => 3 * s.tree_bytes() + 2 * u64::from(s.tree_files) * 4096,
        Load::ListLoad => s.tree_bytes() + u64::from(s.tree_files) * 4096,
        // dbench's clients each keep a few tens of MiB of files
        Load::DbenchLoad => u64::from(s.dbench_clients) * 64 * mib,
        Load::NoLoad | Load::Cacherun | Load::ProcessLoad | Load::MemLoad | Load::IoOther => 0,
    }
}

/// Refuses a load that cannot run here, with how to fix it (exit 2): io_other without
/// `--other-dir`, dbench_load without `dbench` on PATH.
pub(crate) fn check_available(load: Load, other_dir: Option<&Path>) -> Result<()> {
    match load {
        Load::IoOther if other_dir.is_none() => Err(Error::BadInput(
            "io_other writes to another filesystem: give it with --other-dir DIR".into(),
        )),
        Load::DbenchLoad if !dbench_load::installed() => Err(Error::BadInput(
            "dbench_load is unavailable: dbench is not installed \
             (install it with `apt-get install dbench`)"
                .into(),
        )),
        _ => Ok(()),
    }
}

/// Makes the read-only fixtures of `load` under `fixtures` (once; existing ones are kept).
pub(crate) fn prepare(load: Load, fixtures: &Path, sizes: &LoadSizes) -> Result<()> {
    match load {
        Load::CtarLoad | Load::ListLoad => make_tree(fixtures, sizes),
        Load::XtarLoad => {
            make_tree(fixtures, sizes)?;
            xtar_load::make_tarball(fixtures)
        }
        Load::ReadLoad => read_load::make_file(fixtures, sizes.read_mib),
        _ => Ok(()),
    }
}

/// The tree of generated source-like files (`tree/dNN/fNNNN.c`, 100 files per directory).
fn make_tree(fixtures: &Path, s: &LoadSizes) -> Result<()> {
    let tree = fixtures.join("tree");
    let done = fixtures.join("tree.done");
    if done.exists() {
        return Ok(());
    }
    let _ = std::fs::remove_dir_all(&tree);
    for i in 0..s.tree_files {
        if i % 100 == 0 && crate::signals::interrupted() {
            return Err(Error::Interrupted);
        }
        let d = tree.join(format!("d{:02}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&d)
                .map_err(|e| Error::io(format!("creating {}", d.display()), e))?;
        }
        let kib = 1 + (u64::from(i) * 7919) % u64::from(2 * s.tree_file_kib.max(1) - 1).max(1);
        let p = d.join(format!("f{i:04}.c"));
        let text = crate::bench::job::source_text(i, (kib * 1024) as usize);
        std::fs::write(&p, text).map_err(|e| Error::io(format!("writing {}", p.display()), e))?;
    }
    std::fs::File::create(&done)
        .and_then(|mut f| f.write_all(b"ok\n"))
        .map_err(|e| Error::io(format!("writing {}", done.display()), e))?;
    crate::bench::fsutil::syncfs(fixtures)
}

/// The load process's body (inside `sweetspot __worker load`): loops until killed. Returns only
/// on an error, which the worker prints and exits 1 with.
pub(crate) fn body(spec: &LoadSpec) -> Result<()> {
    let counter = Counter::open(&spec.counter)?;
    std::fs::create_dir_all(&spec.out)
        .map_err(|e| Error::io(format!("creating {}", spec.out.display()), e))?;
    let s = &spec.sizes;
    match spec.load {
        Load::ProcessLoad => process_load::run(s.ring_procs, s.ring_messages, &counter),
        Load::CtarLoad => ctar_load::run(&spec.fixtures, &spec.out, &counter),
        Load::XtarLoad => xtar_load::run(&spec.fixtures, &spec.out, &counter),
        Load::IoLoad | Load::IoOther => io_load::run(&spec.out, s.io_mib, &counter),
        Load::LightIoLoad => io_load::run_light(&spec.out, s.io_mib, &counter),
        Load::ReadLoad => read_load::run(&spec.fixtures, &counter),
        Load::ListLoad => list_load::run(&spec.fixtures.join("tree"), &counter),
        Load::MemLoad => mem_load::run(s.mem_mib, &counter),
        Load::DbenchLoad => dbench_load::run(&spec.out, s.dbench_clients, &counter),
        Load::NoLoad | Load::Cacherun => Err(Error::BadInput(format!(
            "{} has no load process",
            spec.load
        ))),
    }
}

/// `sweetspot __worker relay`: copies stdin to stdout until either closes (process_load).
pub(crate) fn relay() -> Result<()> {
    process_load::relay()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needs_and_availability() {
        let s = LoadSizes::default();
        assert_eq!(bytes_needed(Load::IoLoad, &s), 256 << 20);
        assert_eq!(bytes_needed(Load::NoLoad, &s), 0);
        assert!(bytes_needed(Load::XtarLoad, &s) > bytes_needed(Load::CtarLoad, &s));
        let e = check_available(Load::IoOther, None).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("--other-dir"), "{e}");
        check_available(Load::IoOther, Some(Path::new("/tmp"))).unwrap();
        check_available(Load::IoLoad, None).unwrap();
        assert_eq!(LoadSizes::default().with_mib(32).mem_mib, 32);
    }

    #[test]
    fn tree_fixture_has_the_asked_files() {
        let t = tempfile::tempdir().unwrap();
        let s = LoadSizes {
            tree_files: 250,
            ..LoadSizes::default()
        };
        prepare(Load::XtarLoad, t.path(), &s).unwrap();
        let mut n = 0;
        for d in std::fs::read_dir(t.path().join("tree")).unwrap() {
            n += std::fs::read_dir(d.unwrap().path()).unwrap().count();
        }
        assert_eq!(n, 250);
        assert!(t.path().join("tree.tar").metadata().unwrap().len() > 250 * 1024);
    }
}

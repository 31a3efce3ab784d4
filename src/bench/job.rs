//! The built-in reference job: a compile-like workload standing in for contest's kernel compile.
//!
//! `workers` threads (one per CPU, like `make -jN`) take the generated "source" files of
//! `<dir>/src` in order. Each step reads one file cold (its pages were evicted with
//! `posix_fadvise(POSIX_FADV_DONTNEED)` before the run), does a fixed amount of CPU work (a
//! 64-bit multiply-xorshift hash over the bytes, `JobSpec::passes` times), and writes an
//! "object" file of `OBJ_KIB` KiB derived from the hash into `<dir>/obj`.
//!
//! The job runs in its own process (`sweetspot __worker job`, see [`crate::bench::worker`]), so
//! its CPU time comes exactly from `wait4(2)`'s rusage of that process: CPU% = (user+sys)/wall.
//! That is contest's definition, and it stays exact while other threads of the measuring process
//! (or a parallel test harness) use the CPU.
//!
//! Sizing (measured on the 2-core development VM, release build, see CHANGELOG): at
//! `--job-scale 1.0` no_load takes about 6 s.

use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Source files at `--job-scale 1.0`.
pub(crate) const FILES: u32 = 400;
/// Size of one generated source file, KiB.
pub(crate) const FILE_KIB: u32 = 128;
/// Hash passes over each source file (the CPU work of one "compile" step). Tuned so no_load
/// takes about 6 s on 2 cores at scale 1.0.
pub(crate) const PASSES: u32 = 700;
/// Size of one object file written per step, KiB.
pub(crate) const OBJ_KIB: u32 = 32;

/// What the built-in job does; recorded with every trial through `Testbed::sizes`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct JobSpec {
    /// The job directory (holds `src/` and `obj/`).
    pub dir: PathBuf,
    /// Number of source files.
    pub files: u32,
    /// Size of each source file, KiB.
    pub file_kib: u32,
    /// Hash passes per file.
    pub passes: u32,
    /// Worker threads (CPUs, like `make -jN`).
    pub workers: u32,
}

impl JobSpec {
    /// The default job scaled by `scale` (files = round(400 × scale), at least 1), with one
    /// worker per CPU. Errors: a scale that is not a positive finite number (exit 2).
    pub(crate) fn scaled(dir: &Path, scale: f64) -> Result<JobSpec> {
        if !(scale.is_finite() && scale > 0.0 && scale <= 100.0) {
            return Err(Error::BadInput(format!(
                "--job-scale '{scale}': must be a number in (0, 100]"
            )));
        }
        let workers = std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1);
        Ok(JobSpec {
            dir: dir.to_path_buf(),
            files: ((f64::from(FILES) * scale).round() as u32).max(1),
            file_kib: FILE_KIB,
            passes: PASSES,
            workers,
        })
    }

    /// Bytes the job needs on the target filesystem (sources and objects).
    pub(crate) fn bytes_needed(&self) -> u64 {
        u64::from(self.files) * u64::from(self.file_kib + OBJ_KIB) * 1024
    }

    fn src(&self) -> PathBuf {
        self.dir.join("src")
    }

    fn obj(&self) -> PathBuf {
        self.dir.join("obj")
    }

    fn src_file(&self, i: u32) -> PathBuf {
        self.src().join(format!("unit{i:04}.c"))
    }
}

/// Generates the job's source files (deterministic C-like text, fsync'd) unless they exist with
/// the right size. Checks `interrupted` between files.
pub(crate) fn prepare(spec: &JobSpec) -> Result<()> {
    let src = spec.src();
    std::fs::create_dir_all(&src)
        .map_err(|e| Error::io(format!("creating {}", src.display()), e))?;
    let len = u64::from(spec.file_kib) * 1024;
    for i in 0..spec.files {
        if crate::signals::interrupted() {
            return Err(Error::Interrupted);
        }
        let p = spec.src_file(i);
        if p.metadata().map(|m| m.len() == len).unwrap_or(false) {
            continue;
        }
        let text = source_text(i, len as usize);
        let mut f = std::fs::File::create(&p)
            .map_err(|e| Error::io(format!("creating {}", p.display()), e))?;
        f.write_all(&text)
            .and_then(|_| f.sync_all())
            .map_err(|e| Error::io(format!("writing {}", p.display()), e))?;
    }
    Ok(())
}

/// Makes the next run cold: removes the objects of the last run and evicts the sources from
/// the page cache (`POSIX_FADV_DONTNEED`; the files are clean, so the pages really go).
pub(crate) fn make_cold(spec: &JobSpec) -> Result<()> {
    clean_objects(spec)?;
    for i in 0..spec.files {
        crate::bench::fsutil::evict(&spec.src_file(i))?;
    }
    Ok(())
}

/// Makes the next run warm (cacherun): removes old objects and reads every source once so it
/// is in the page cache.
pub(crate) fn make_warm(spec: &JobSpec) -> Result<()> {
    clean_objects(spec)?;
    for i in 0..spec.files {
        let p = spec.src_file(i);
        std::fs::read(&p).map_err(|e| Error::io(format!("reading {}", p.display()), e))?;
    }
    Ok(())
}

fn clean_objects(spec: &JobSpec) -> Result<()> {
    let obj = spec.obj();
    match std::fs::remove_dir_all(&obj) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(format!("removing {}", obj.display()), e)),
    }
    std::fs::create_dir_all(&obj).map_err(|e| Error::io(format!("creating {}", obj.display()), e))
}

/// The job itself (runs inside the `__worker job` child process): `workers` threads compile
/// every source file once. Returns the combined hash (so the work cannot be optimised away).
pub(crate) fn run(spec: &JobSpec) -> Result<u64> {
    let next = AtomicUsize::new(0);
    let total = spec.files as usize;
    let results: Vec<Result<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..spec.workers.max(1))
            .map(|_| {
                s.spawn(|| {
                    let mut acc = 0u64;
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= total {
                            return Ok(acc);
                        }
                        acc ^= compile_one(spec, i as u32)?;
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::Failed("job worker panicked".into())))
            })
            .collect()
    });
    results.into_iter().try_fold(0u64, |a, r| Ok(a ^ r?))
}

/// One compile step: read `src/unitNNNN.c`, hash it `passes` times, write `obj/unitNNNN.o`.
fn compile_one(spec: &JobSpec, i: u32) -> Result<u64> {
    let p = spec.src_file(i);
    let bytes = std::fs::read(&p).map_err(|e| Error::io(format!("reading {}", p.display()), e))?;
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ u64::from(i);
    for _ in 0..spec.passes {
        h = hash(std::hint::black_box(&bytes), h);
    }
    let mut obj = Vec::with_capacity(OBJ_KIB as usize * 1024);
    let mut x = h | 1;
    while obj.len() < OBJ_KIB as usize * 1024 {
        x = xorshift(x);
        obj.extend_from_slice(&x.to_le_bytes());
    }
    let o = spec.obj().join(format!("unit{i:04}.o"));
    std::fs::write(&o, &obj).map_err(|e| Error::io(format!("writing {}", o.display()), e))?;
    Ok(h)
}

/// A 64-bit multiply-xorshift hash over `bytes` (8-byte words; a serial dependency chain, so
/// its cost is fixed per byte and the compiler cannot vectorise it away).
pub(crate) fn hash(bytes: &[u8], seed: u64) -> u64 {
    let mut h = seed;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        h = (h ^ u64::from_le_bytes(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^= h >> 29;
    }
    for &b in words.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    h
}

fn xorshift(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

/// Deterministic C-like text of exactly `len` bytes for source file `i`.
pub(crate) fn source_text(i: u32, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 128);
    let mut x = 0x2545_f491_4f6c_dd1du64 ^ (u64::from(i) << 17) | 1;
    out.extend_from_slice(
        format!("/* unit {i}: generated by sweetspot */\n#include <stddef.h>\n").as_bytes(),
    );
    let mut n = 0u32;
    while out.len() < len {
        x = xorshift(x);
        let line = format!(
            "static long f{i}_{n}(long a, long b) {{ return (a * {}) ^ (b >> {}) + {}; }}\n",
            x % 977,
            x % 31,
            x % 65521
        );
        out.extend_from_slice(line.as_bytes());
        n += 1;
    }
    out.truncate(len);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_text_is_deterministic_and_exact() {
        let a = source_text(3, 5000);
        assert_eq!(a.len(), 5000);
        assert_eq!(a, source_text(3, 5000));
        assert_ne!(a, source_text(4, 5000));
        assert!(a.starts_with(b"/* unit 3"));
    }

    #[test]
    fn hash_depends_on_every_byte_and_seed() {
        let a = source_text(1, 1003);
        let mut b = a.clone();
        b[1001] ^= 1;
        assert_ne!(hash(&a, 1), hash(&b, 1));
        assert_ne!(hash(&a, 1), hash(&a, 2));
        assert_eq!(hash(&a, 7), hash(&a, 7));
    }

    #[test]
    fn scaled_rounds_files_and_rejects_bad_scales() {
        let d = Path::new("/x");
        assert_eq!(JobSpec::scaled(d, 1.0).unwrap().files, FILES);
        assert_eq!(JobSpec::scaled(d, 0.05).unwrap().files, 20);
        assert_eq!(JobSpec::scaled(d, 0.0001).unwrap().files, 1);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(JobSpec::scaled(d, bad).unwrap_err().exit_code(), 2);
        }
    }

    #[test]
    fn runs_and_writes_objects() {
        let t = tempfile::tempdir().unwrap();
        let mut spec = JobSpec::scaled(t.path(), 0.01).unwrap();
        spec.passes = 2;
        prepare(&spec).unwrap();
        make_cold(&spec).unwrap();
        let h1 = run(&spec).unwrap();
        let objs = std::fs::read_dir(t.path().join("obj")).unwrap().count();
        assert_eq!(objs, spec.files as usize);
        make_warm(&spec).unwrap();
        assert_eq!(run(&spec).unwrap(), h1, "same input, same hash");
    }
}

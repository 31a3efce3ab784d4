//! How `profile` reading, `profile verify` and `profile apply --dry-run` scale with the number
//! of `[[device]]` entries (issue 31, item 6: a fleet profile holds one entry per disk of the
//! fleet, or per model; the target is 20,000 entries in under 2 s).
//!
//! `cargo run --release --example profile_scale -- [N ...]` (default 1000 5000 20000). Builds a
//! fake sysfs/procfs tree with four disks (no root needed, nothing real is touched) and, per N,
//! a profile of N entries: one per fleet disk by `wwid` (absent here but for one), every tenth
//! a `model` (fleet) entry, with a `model`+`firmware` entry and a `serial`+`model` one that
//! overlap on the present disks (the narrowest applies). Prints one line per N: entries, then
//! the seconds of parsing, verify and apply --dry-run (plain `std::time::Instant`, one run).

use std::path::Path;
use std::time::Instant;
use sweetspot::profile::{apply, file, verify};
use sweetspot::store::Store;
use sweetspot::sysroot::SysRoot;

fn put(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(
        path.parent()
            .ok_or("no parent")
            .map_err(std::io::Error::other)?,
    )?;
    std::fs::write(path, format!("{text}\n"))
}

/// A disk `name` on mq-deadline with the given identity files (relative path, content).
fn disk(root: &SysRoot, name: &str, dev: &str, ids: &[(&str, &str)]) -> std::io::Result<()> {
    let base = root.block_dev(name);
    put(&base.join("dev"), dev)?;
    put(&base.join("size"), "2097152")?;
    let q = base.join("queue");
    put(&q.join("scheduler"), "none [mq-deadline] kyber bfq")?;
    for (k, v) in [
        ("nr_requests", "64"),
        ("read_ahead_kb", "128"),
        ("max_sectors_kb", "1280"),
        ("max_hw_sectors_kb", "32767"),
        ("nomerges", "0"),
        ("rq_affinity", "1"),
        ("rotational", "1"),
    ] {
        put(&q.join(k), v)?;
    }
    for (k, v) in [
        ("async_depth", "64"),
        ("fifo_batch", "16"),
        ("front_merges", "1"),
        ("read_expire", "500"),
        ("write_expire", "5000"),
        ("writes_starved", "2"),
    ] {
        put(&q.join("iosched").join(k), v)?;
    }
    for (rel, v) in ids {
        put(&base.join(rel), v)?;
    }
    Ok(())
}

/// The fake tree: `sda` (a wwid the profile names), `sdb` (model ST4000 firmware 0001, no
/// wwid), `sdc` (model ST4000 firmware 0002, a serial), `sdd` (a wwid the profile lacks).
fn tree(dir: &Path) -> std::io::Result<SysRoot> {
    let root = SysRoot::new(dir.join("sys"), dir.join("proc"));
    for (k, v) in [
        ("dirty_ratio", "20"),
        ("dirty_bytes", "0"),
        ("swappiness", "60"),
    ] {
        put(&root.vm().join(k), v)?;
    }
    disk(
        &root,
        "sda",
        "8:0",
        &[("device/wwid", "naa.0000000000000001")],
    )?;
    disk(
        &root,
        "sdb",
        "8:16",
        &[("device/model", "ST4000"), ("device/rev", "0001")],
    )?;
    disk(
        &root,
        "sdc",
        "8:32",
        &[
            ("device/model", "ST4000"),
            ("device/rev", "0002"),
            ("device/serial", "ZC1"),
        ],
    )?;
    disk(
        &root,
        "sdd",
        "8:48",
        &[("device/wwid", "naa.ffffffffffffffff")],
    )?;
    Ok(root)
}

/// A profile of `n` entries (see the module docs).
fn profile_text(n: usize) -> String {
    let mut t = String::from("version = 1\n");
    let mut entry = |name: String, m: String, knobs: &str| {
        t.push_str(&format!(
            "[[device]]\nname = \"{name}\"\nmatch = {{ {m} }}\nkernel = \"6.18.0\"\n\
             policy = \"quick\"\ntuned_at = \"2026-12-01T08:00:00Z\"\nknobs = {{ {knobs} }}\n"
        ));
    };
    entry(
        "fleet-st4000".into(),
        "model = \"ST4000\"".into(),
        "fifo_batch = 8",
    );
    entry(
        "fleet-st4000-fw1".into(),
        "model = \"ST4000\", firmware = \"0001\"".into(),
        "fifo_batch = 4",
    );
    entry(
        "sdc".into(),
        "model = \"ST4000\", serial = \"ZC1\"".into(),
        "read_ahead_kb = 256",
    );
    for i in 3..n {
        if i % 10 == 0 {
            entry(
                format!("model{i}"),
                format!("model = \"M{i}\""),
                "fifo_batch = 8",
            );
        } else {
            // naa.0000000000000001 is sda's: the first of them matches it.
            entry(
                format!("disk{i}"),
                format!("wwid = \"naa.{:016x}\"", i - 2),
                "fifo_batch = 12, read_ahead_kb = 512",
            );
        }
    }
    t
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .map(|s| s.parse())
        .collect::<Result<_, _>>()?;
    let sizes = if sizes.is_empty() {
        vec![1000, 5000, 20000]
    } else {
        sizes
    };
    let dir = tempfile::tempdir()?;
    let root = tree(dir.path())?;
    let db = dir.path().join("sweetspot.db");
    let mut store = Store::open(&db)?;
    println!(
        "{:>8} {:>10} {:>10} {:>10} {:>10}",
        "entries", "parse_s", "verify_s", "dry_run_s", "total_s"
    );
    for n in sizes {
        let text = profile_text(n);
        let t0 = Instant::now();
        let profile = file::parse(&text, Path::new("fleet.toml"))?;
        let parse = t0.elapsed().as_secs_f64();
        let t1 = Instant::now();
        let v = verify::verify(&root, &profile)?;
        let verify = t1.elapsed().as_secs_f64();
        let t2 = Instant::now();
        let out = apply::apply(
            &mut store,
            &root,
            &db,
            &profile,
            None,
            true,
            "profile_scale",
        )?;
        let dry = t2.elapsed().as_secs_f64();
        assert_eq!(profile.devices.len(), n);
        assert_eq!(v.overlaps.len(), 2, "sdb and sdc each match two entries");
        // Four entries match a disk (one of them only wider than another there), the rest are
        // absent; three disks get one entry each.
        assert_eq!(
            out.len(),
            n - 4 + 3,
            "every absent entry and every disk is reported"
        );
        println!(
            "{n:>8} {parse:>10.3} {verify:>10.3} {dry:>10.3} {:>10.3}",
            parse + verify + dry
        );
    }
    Ok(())
}

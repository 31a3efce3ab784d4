//! What a killed benchmark (`bench` or `tune --scratch`, SIGKILLed) left open in the journal:
//! `status` and `history` say so, in text and in `--json`, until `restore` puts it back. The
//! state is made as a killed run leaves it: knobs changed on a fake sysfs/procfs through the
//! journaled write path under the benchmark's owner (`bench`, or a killed scratch tune's
//! `tune:<id>` with its `running` row), and no process holding its lock.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use sweetspot::knob::KnobValue;
use sweetspot::knob::io::RealIo;
use sweetspot::sysroot::SysRoot;

#[test]
fn status_and_history_name_a_killed_benchs_open_knobs_until_restore_puts_them_back() {
    let env = common::Env::new();
    // A fake sysfs with no disk: nothing here reaches the machine's own knobs or locks.
    let sys = env.dir.path().join("sys");
    std::fs::create_dir_all(sys.join("block")).unwrap();
    let root = SysRoot::new(&sys, env.dir.path().join("proc"));
    {
        let mut store = sweetspot::store::Store::open(&env.db()).unwrap();
        let setting = [("dirty_ratio".to_string(), KnobValue::Int(30))]
            .into_iter()
            .collect();
        sweetspot::knob::apply::apply_host_with(
            &RealIo,
            &mut store,
            &root,
            &setting,
            &sweetspot::types::Owner::Bench,
        )
        .unwrap();
    }
    assert_eq!(env.vm("dirty_ratio"), "30");
    let run = |args: &[&str]| -> String {
        let mut a = vec!["--sysfs-root", sys.to_str().unwrap()];
        a.extend_from_slice(args);
        String::from_utf8(common::ok_stdout(env.cmd(&a).output().unwrap())).unwrap()
    };
    let db = env.db();
    // dirty_bytes (0) is journaled beside dirty_ratio, but restore writes only dirty_ratio:
    // the note counts what restore lists.
    let note = format!(
        "1 knob journaled by a killed `bench` or `tune --scratch` is still open: dirty_ratio \
         host-wide; `sweetspot --db {} --sysfs-root {} --procfs-root {} restore` puts it back",
        db.display(),
        sys.display(),
        env.proc().display(),
    );
    let expected = serde_json::json!([
        {"device": null, "identity": null, "knob": "dirty_ratio", "original": "20"},
    ]);

    let text = run(&["status"]);
    assert!(text.contains(&format!("\n{note}\n")), "{text}");
    let v: serde_json::Value = serde_json::from_str(&run(&["status", "--json"])).unwrap();
    assert_eq!(v["killed_bench_knobs"], expected, "{v}");
    // history wraps a line longer than 100 columns under itself, 4 columns in.
    let text = run(&["history"]).replace("\n      ", " ");
    assert!(text.contains(&format!("\n  ({note})\n")), "{text}");
    let v: serde_json::Value = serde_json::from_str(&run(&["history", "--json"])).unwrap();
    assert_eq!(v["killed_bench_knobs"], expected, "{v}");
    assert_eq!(env.vm("dirty_ratio"), "30", "status and history only read");

    let out = run(&["restore"]);
    assert!(out.starts_with("restored 1 knob"), "{out}");
    assert_eq!(env.vm("dirty_ratio"), "20");
    let text = run(&["status"]);
    assert!(!text.contains("killed benchmark"), "{text}");
    let v: serde_json::Value = serde_json::from_str(&run(&["status", "--json"])).unwrap();
    assert_eq!(v["killed_bench_knobs"], serde_json::json!([]), "{v}");
    let v: serde_json::Value = serde_json::from_str(&run(&["history", "--json"])).unwrap();
    assert_eq!(v["killed_bench_knobs"], serde_json::json!([]), "{v}");
}

/// A fake sysfs under `dir` with the loop device `loop1` (7:1) over a scratch backing file,
/// mq-deadline active with its default iosched files, as a `tune --scratch` leaves it.
fn fake_scratch_loop(dir: &std::path::Path) -> std::path::PathBuf {
    let sys = dir.join("sys");
    let d = sys.join("block/loop1");
    let put = |rel: &str, v: &str| {
        let p = d.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("{v}\n")).unwrap();
    };
    put("dev", "7:1");
    put("size", "2097152");
    put(
        "loop/backing_file",
        "/tmp/sweetspot-scratch-Ab12Cd/backing.img",
    );
    put("queue/scheduler", "none [mq-deadline] kyber");
    put("queue/nr_requests", "128");
    put("queue/read_ahead_kb", "128");
    put("queue/rotational", "0");
    for (k, v) in [
        ("async_depth", "128"),
        ("fifo_batch", "16"),
        ("front_merges", "1"),
        ("prio_aging_expire", "10000"),
        ("read_expire", "500"),
        ("write_expire", "5000"),
        ("writes_starved", "2"),
    ] {
        put(&format!("queue/iosched/{k}"), v);
    }
    sys
}

#[test]
fn status_and_history_name_a_killed_scratch_tunes_open_knobs_until_restore_puts_them_back() {
    let env = common::Env::new();
    let sys = fake_scratch_loop(env.dir.path());
    let root = SysRoot::new(&sys, env.proc());
    let fifo = sys.join("block/loop1/queue/iosched/fifo_batch");
    {
        // A `tune --scratch` stored as `running` whose process is gone (a reaped child's pid,
        // no lock held), which had journaled a trial's fifo_batch and a host-wide knob under
        // its own owner `tune:<id>`, not the bench owner.
        let mut store = sweetspot::store::Store::open(&env.db()).unwrap();
        let target = sweetspot::bench::TargetInfo {
            label: "loop1 (scratch)".into(),
            identity: "scratch:ext4-on:virtual-fs".into(),
            kernel: "6.18.0".into(),
        };
        let id = store.insert_tune(&target, Some("loop1"), "quick").unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        store
            .conn()
            .execute(
                "UPDATE tunes SET pid = ?1 WHERE id = ?2",
                [i64::from(dead), id],
            )
            .unwrap();
        let loop1 = sweetspot::device::find(&root, "loop1").unwrap();
        let owner = sweetspot::types::Owner::Tune(id);
        let fb = [("fifo_batch".to_string(), KnobValue::Int(4))]
            .into_iter()
            .collect();
        sweetspot::knob::apply::apply_with(&RealIo, &mut store, &root, &loop1, &fb, &owner)
            .unwrap();
        let dr = [("dirty_ratio".to_string(), KnobValue::Int(30))]
            .into_iter()
            .collect();
        sweetspot::knob::apply::apply_host_with(&RealIo, &mut store, &root, &dr, &owner).unwrap();
    }
    assert_eq!(std::fs::read_to_string(&fifo).unwrap().trim(), "4");
    assert_eq!(env.vm("dirty_ratio"), "30");
    let run = |args: &[&str]| -> String {
        let mut a = vec!["--sysfs-root", sys.to_str().unwrap()];
        a.extend_from_slice(args);
        String::from_utf8(common::ok_stdout(env.cmd(&a).output().unwrap())).unwrap()
    };
    let db = env.db();
    let note = format!(
        "2 knobs journaled by a killed `bench` or `tune --scratch` are still open: fifo_batch \
         on loop1 and dirty_ratio host-wide; `sweetspot --db {} --sysfs-root {} --procfs-root \
         {} restore` puts them back",
        db.display(),
        sys.display(),
        env.proc().display(),
    );
    let identity = "loop:/tmp/sweetspot-scratch-Ab12Cd/backing.img";
    let expected = serde_json::json!([
        {"device": "loop1", "identity": identity, "knob": "fifo_batch", "original": "16"},
        {"device": null, "identity": null, "knob": "dirty_ratio", "original": "20"},
    ]);

    let text = run(&["status"]);
    assert!(text.contains(&format!("\n{note}\n")), "{text}");
    let v: serde_json::Value = serde_json::from_str(&run(&["status", "--json"])).unwrap();
    assert_eq!(v["killed_bench_knobs"], expected, "{v}");
    // history wraps a line longer than 100 columns under itself, 4 columns in.
    let text = run(&["history"]).replace("\n      ", " ");
    assert!(text.contains(&format!("\n  ({note})\n")), "{text}");
    let v: serde_json::Value = serde_json::from_str(&run(&["history", "--json"])).unwrap();
    assert_eq!(v["killed_bench_knobs"], expected, "{v}");
    assert_eq!(v["tunes"][0]["status"], "killed", "{v}");
    assert_eq!(
        std::fs::read_to_string(&fifo).unwrap().trim(),
        "4",
        "status only reads"
    );

    // The command the note names puts them back; then nothing is listed.
    let out = run(&["restore"]);
    // dirty_bytes is dirty_ratio's exclusive partner: writing the ratio back restores both.
    // The same 2 knobs as the note counted.
    assert!(
        out.starts_with("restored 2 knobs (2 by finishing 1 killed tune first"),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&fifo).unwrap().trim(), "16");
    assert_eq!(env.vm("dirty_ratio"), "20");
    let text = run(&["status"]);
    assert!(!text.contains("killed"), "{text}");
    let v: serde_json::Value = serde_json::from_str(&run(&["status", "--json"])).unwrap();
    assert_eq!(v["killed_bench_knobs"], serde_json::json!([]), "{v}");
    let v: serde_json::Value = serde_json::from_str(&run(&["history", "--json"])).unwrap();
    assert_eq!(v["killed_bench_knobs"], serde_json::json!([]), "{v}");
    assert_eq!(v["tunes"][0]["status"], "recovered", "{v}");
}

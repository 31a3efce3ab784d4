//! What a killed benchmark (`bench` or `tune --scratch`, SIGKILLed) left open in the journal:
//! `status` and `history` say so, in text and in `--json`, until `restore` puts it back. The
//! state is made as a killed run leaves it: a host-wide knob changed on a fake procfs through
//! the journaled write path under the benchmark's owner, and no process holding its lock.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

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
            sweetspot::bench::real::OWNER,
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
    let note = format!(
        "2 knobs journaled by a killed `bench` or `tune --scratch` are still open: dirty_ratio, \
         dirty_bytes host-wide; `sweetspot --db {} --sysfs-root {} --procfs-root {} restore` \
         puts them back",
        db.display(),
        sys.display(),
        env.proc().display(),
    );
    let expected = serde_json::json!([
        {"device": null, "identity": null, "knob": "dirty_ratio", "original": "20"},
        {"device": null, "identity": null, "knob": "dirty_bytes", "original": "0"},
    ]);

    let text = run(&["status"]);
    assert!(text.contains(&format!("\n{note}\n")), "{text}");
    let v: serde_json::Value = serde_json::from_str(&run(&["status", "--json"])).unwrap();
    assert_eq!(v["killed_bench_knobs"], expected, "{v}");
    let text = run(&["history"]);
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

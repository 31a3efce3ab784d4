//! `restore` against a journal it cannot trust: rows inserted behind sweetspot's back (with
//! rusqlite, as anyone who can write the database could) naming files outside the catalogue,
//! values outside a knob's domain, or columns of the wrong type. Each is refused or skipped,
//! reported, and the rest restored; the property test at the end throws arbitrary rows at it.

use super::apply::apply_with;
use super::io::RealIo;
use super::restore::{restore_vetted, restore_with};
use super::{KnobValue, Setting, catalogue};
use crate::device::find;
use crate::store::Store;
use crate::sysroot::SysRoot;
use crate::testkit::{kernel::FakeKernel, tree::FakeTree};
use crate::types::Owner;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn one(knob: &str, v: i64) -> Setting {
    [(knob.to_string(), KnobValue::Int(v))]
        .into_iter()
        .collect()
}

/// A fake tree moved one level down, to `<dir>/tree/{sys,proc}`, with the mq-deadline disk
/// sda, a `core_pattern` and a boot id, and a sibling `<dir>/victim/passwd` outside it.
fn tree_with_victim() -> (FakeTree, PathBuf) {
    let mut t = FakeTree::new();
    let base = t.dir.path().to_path_buf();
    std::fs::create_dir(base.join("tree")).unwrap();
    for d in ["sys", "proc"] {
        std::fs::rename(base.join(d), base.join("tree").join(d)).unwrap();
    }
    t.root = SysRoot::new(base.join("tree/sys"), base.join("tree/proc"));
    t.mq_deadline_disk();
    let k = t.root.kernel_sysctl();
    std::fs::create_dir_all(k.join("random")).unwrap();
    std::fs::write(k.join("core_pattern"), "core\n").unwrap();
    std::fs::write(k.join("random/boot_id"), "boot-1\n").unwrap();
    let victim = base.join("victim/passwd");
    std::fs::create_dir_all(victim.parent().unwrap()).unwrap();
    std::fs::write(&victim, "root:x:0:0::/root:/bin/sh\n").unwrap();
    (t, victim)
}

/// Inserts a journal row behind sweetspot's back: (device, knob, path, original, apply_order,
/// owner). Returns its id.
fn insert(
    db: &Path,
    device: Option<&str>,
    knob: &str,
    path: &str,
    original: &str,
    order: i64,
) -> i64 {
    let c = rusqlite::Connection::open(db).unwrap();
    c.execute(
        "INSERT INTO journal (device, knob, path, original, apply_order, owner, recorded_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, 'set', 1)",
        rusqlite::params![device, knob, path, original, order],
    )
    .unwrap();
    c.last_insert_rowid()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

/// The reproductions: a row whose path climbs out of the tree to a sibling `passwd`,
/// and one aimed at `core_pattern`, both with `apply_order` 0 (the scheduler: any text) and no
/// device. Neither is written; each is refused with its id; the admin's `set` is restored.
#[test]
fn rows_outside_the_catalogue_are_refused_and_the_rest_restored() {
    let (t, victim) = tree_with_victim();
    let k = FakeKernel::default();
    let db = t.dir.path().join("s.db");
    let mut s = Store::open(&db).unwrap();
    let sda = find(&t.root, "sda").unwrap();
    apply_with(
        &k,
        &mut s,
        &t.root,
        &sda,
        &one("fifo_batch", 4),
        &Owner::Set,
    )
    .unwrap();
    let tree = t.dir.path().join("tree");
    let climb = format!("{}/proc/../../victim/passwd", tree.display());
    let passwd = insert(&db, None, "passwd", &climb, "pwned::0:0::/:/bin/sh", 0);
    let core = t.root.kernel_sysctl().join("core_pattern");
    let core_row = insert(
        &db,
        None,
        "core_pattern",
        core.to_str().unwrap(),
        "|/tmp/evil %p",
        0,
    );
    // A row at a real knob file with a value outside its domain, and one with a device name
    // that climbs.
    let vm = t.root.vm().join("swappiness");
    let big = insert(&db, None, "swappiness", vm.to_str().unwrap(), "100000", 4);
    let dev = format!("{}/block/../queue/nr_requests", t.root.sys.display());
    let dotdot = insert(&db, Some(".."), "nr_requests", &dev, "64", 1);

    let done = restore_vetted(&RealIo, &mut s, &t.root, None, None, &|_| false).unwrap();
    assert_eq!(read(&victim), "root:x:0:0::/root:/bin/sh\n");
    assert_eq!(read(&core), "core\n");
    assert_eq!(t.vm("swappiness"), "60");
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "16");
    let ids: Vec<i64> = done.refused.iter().map(|r| r.id).collect();
    assert_eq!(ids, [passwd, core_row, big, dotdot]);
    let why: Vec<&str> = done.refused.iter().map(|r| r.why.as_str()).collect();
    assert!(why[0].contains("'..' components"), "{why:?}");
    assert!(why[1].contains("journaled without a device"), "{why:?}");
    assert!(why[2].contains("expected an integer in 0–200"), "{why:?}");
    assert!(why[3].contains("'..' components"), "{why:?}");
    assert_eq!(
        done.put.iter().map(|p| p.knob.as_str()).collect::<Vec<_>>(),
        ["fifo_batch"]
    );
    // Left open, refused again (an error now: the restore fails, exit 1).
    assert_eq!(s.journal_open(None, None).unwrap().len(), 4);
    let e = restore_with(&RealIo, &mut s, &t.root, None, None).unwrap_err();
    assert!(e.to_string().contains("4 journal rows refused"), "{e}");
    assert_eq!(read(&victim), "root:x:0:0::/root:/bin/sh\n");
}

/// A row with `recorded_at` as text or a BLOB `original` made every query of the journal fail,
/// so `set` and `restore` failed and the other knobs stayed changed. Now `set` works, and
/// `restore` skips and reports those rows (id, column) and restores the rest.
#[test]
fn a_malformed_row_is_skipped_and_reported_and_the_rest_restored() {
    let (t, _) = tree_with_victim();
    let k = FakeKernel::default();
    let db = t.dir.path().join("s.db");
    let mut s = Store::open(&db).unwrap();
    let sda = find(&t.root, "sda").unwrap();
    apply_with(
        &k,
        &mut s,
        &t.root,
        &sda,
        &one("fifo_batch", 4),
        &Owner::Set,
    )
    .unwrap();
    let c = rusqlite::Connection::open(&db).unwrap();
    let path = t.root.block_dev("sda").join("queue/read_ahead_kb");
    c.execute(
        "INSERT INTO journal (device, knob, path, original, apply_order, owner, recorded_at) \
         VALUES ('sda', 'read_ahead_kb', ?1, '128', 3, 'tune:9', 'yesterday')",
        [path.to_str().unwrap()],
    )
    .unwrap();
    let text = c.last_insert_rowid();
    c.execute(
        "INSERT INTO journal (device, knob, path, original, apply_order, owner, recorded_at) \
         VALUES ('sda', 'nomerges', ?1, x'deadbeef', 3, 'set', 1)",
        [path.with_file_name("nomerges").to_str().unwrap()],
    )
    .unwrap();
    let blob = c.last_insert_rowid();
    // `set` is not stopped by them.
    apply_with(
        &k,
        &mut s,
        &t.root,
        &sda,
        &one("nr_requests", 32),
        &Owner::Set,
    )
    .unwrap();
    let done = restore_vetted(&RealIo, &mut s, &t.root, None, None, &|_| false).unwrap();
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "16");
    assert_eq!(t.get("sda", "queue/nr_requests"), "64");
    let refused: Vec<(i64, &str)> = done
        .refused
        .iter()
        .map(|r| (r.id, r.why.as_str()))
        .collect();
    assert_eq!(
        refused,
        [
            (text, "recorded_at is Text, not an integer"),
            (blob, "original is Blob, not text")
        ]
    );
    // A restore of one owner is asked only about that owner's rows.
    let tune = restore_vetted(
        &RealIo,
        &mut s,
        &t.root,
        None,
        Some(&Owner::Tune(9)),
        &|_| false,
    )
    .unwrap();
    assert_eq!(
        tune.refused.iter().map(|r| r.id).collect::<Vec<_>>(),
        [text]
    );
}

/// A row whose owner sweetspot never writes (a newer sweetspot's, an edited row) is refused by
/// `restore` (reported, left open) but still counts as another writer's change: restoring a
/// tune's entry below it on the same knob hands the tune's original down to it instead of
/// writing over the other writer's value.
#[test]
fn an_unknown_owner_is_refused_but_still_holds_its_knob() {
    let (t, _) = tree_with_victim();
    let k = FakeKernel::default();
    let db = t.dir.path().join("s.db");
    let mut s = Store::open(&db).unwrap();
    let sda = find(&t.root, "sda").unwrap();
    let fifo = "queue/iosched/fifo_batch";
    apply_with(
        &k,
        &mut s,
        &t.root,
        &sda,
        &one("fifo_batch", 8),
        &Owner::Tune(7),
    )
    .unwrap();
    apply_with(
        &k,
        &mut s,
        &t.root,
        &sda,
        &one("fifo_batch", 4),
        &Owner::Set,
    )
    .unwrap();
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute(
        "UPDATE journal SET owner = 'daemon' WHERE owner = 'set'",
        [],
    )
    .unwrap();
    let tune = restore_vetted(
        &RealIo,
        &mut s,
        &t.root,
        None,
        Some(&Owner::Tune(7)),
        &|_| false,
    )
    .unwrap();
    assert_eq!((tune.put.len(), tune.refused.len()), (0, 0));
    assert_eq!(t.get("sda", fifo), "4");
    let open: Vec<(String, String)> = s
        .journal_open(None, None)
        .unwrap()
        .into_iter()
        .map(|e| (e.owner.to_string(), e.original))
        .collect();
    assert_eq!(open, [("daemon".to_string(), "16".to_string())]);
    let all = restore_vetted(&RealIo, &mut s, &t.root, None, None, &|_| false).unwrap();
    let refused: Vec<&str> = all.refused.iter().map(|r| r.why.as_str()).collect();
    assert_eq!(refused, ["unknown journal owner 'daemon'"]);
    assert_eq!(t.get("sda", fifo), "4");
    assert_eq!(s.journal_open(None, None).unwrap().len(), 1);
}

/// A killed tune's journal with a forged row: the recovery at the start of `tune`, `bench`,
/// `restore` and `daemon` restores its real knob, refuses the forged one (the tune stays
/// `running`) and fails.
#[test]
fn the_recovery_of_a_killed_tune_refuses_a_forged_row() {
    let (t, victim) = tree_with_victim();
    let k = FakeKernel::default();
    let db = t.dir.path().join("s.db");
    let mut s = Store::open(&db).unwrap();
    let target = crate::bench::TargetInfo {
        label: "sda".into(),
        identity: "sim:fake-sda".into(),
        kernel: "6.18".into(),
    };
    let id = s.insert_tune(&target, Some("sda"), "quick").unwrap();
    s.conn()
        .execute("UPDATE tunes SET pid = 2147483646 WHERE id = ?1", [id])
        .unwrap();
    let sda = find(&t.root, "sda").unwrap();
    let owner = Owner::Tune(id);
    apply_with(&k, &mut s, &t.root, &sda, &one("fifo_batch", 4), &owner).unwrap();
    let climb = format!("{}/../../victim/passwd", t.root.proc.display());
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute(
        "INSERT INTO journal (device, knob, path, original, apply_order, owner, recorded_at) \
         VALUES ('sda', 'scheduler', ?1, 'pwned', 0, ?2, 1)",
        [climb.as_str(), owner.to_string().as_str()],
    )
    .unwrap();
    let n = crate::undo::recover_with(&k, &mut s, &t.root).unwrap();
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "16");
    assert_eq!(read(&victim), "root:x:0:0::/root:/bin/sh\n");
    assert_eq!((n.tunes, n.refused.len()), (0, 1));
    assert_eq!(
        s.tune(id).unwrap().unwrap().status,
        crate::types::TuneStatus::Running
    );
}

mod property {
    //! `restore` with arbitrary journal rows on a fake tree: it never panics, and no file
    //! changes but the catalogue's knob files under the tree (a sibling `victim/` included).

    use super::*;
    use proptest::prelude::*;

    /// One arbitrary row: every column, each often one of the shapes that matter.
    #[derive(Clone, Debug)]
    struct Row {
        device: Option<String>,
        knob: String,
        path: PathShape,
        original: Original,
        order: i64,
        scheduler: Option<String>,
        owner: String,
        boot_id: Option<String>,
        recorded_at: Option<i64>,
    }

    #[derive(Clone, Debug)]
    enum PathShape {
        /// Where the catalogue puts it, under the tree (`order` picks the shape).
        Catalogue,
        /// A file of the tree that is no knob (`core_pattern`, `dev`, `rotational`, ...).
        TreeFile(&'static str),
        /// Under the tree, any text appended.
        Tree(String),
        /// Climbing out of the tree's procfs (`true`) or sysfs to the victim.
        Climb(bool),
        /// Any absolute path.
        Anywhere(String),
        /// The victim itself.
        Victim,
    }

    #[derive(Clone, Debug)]
    enum Original {
        Text(String),
        Blob(Vec<u8>),
    }

    fn name() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("sda".to_string()),
            Just("sdb".to_string()),
            Just("..".to_string()),
            Just("sda/../..".to_string()),
            "[a-z0-9./-]{0,8}",
        ]
    }

    fn knob() -> impl Strategy<Value = String> {
        let mut known: Vec<String> = catalogue::FACTS
            .iter()
            .map(|f| f.name.to_string())
            .collect();
        known.extend(
            [
                "scheduler",
                "features",
                "sched_features",
                "core_pattern",
                "passwd",
                "..",
                "",
            ]
            .map(String::from),
        );
        prop_oneof![
            3 => proptest::sample::select(known),
            1 => "[a-z_./]{0,12}",
        ]
    }

    fn original() -> impl Strategy<Value = Original> {
        prop_oneof![
            "-?[0-9]{1,7}".prop_map(Original::Text),
            proptest::sample::select(vec![
                "mq-deadline",
                "none",
                "bfq",
                "kyber",
                "PLACE_LAG NO_NEXT_BUDDY"
            ])
            .prop_map(|s| Original::Text(s.to_string())),
            Just(Original::Text("pwned::0:0::/:/bin/sh".into())),
            Just(Original::Text("|/tmp/evil %p".into())),
            ".{0,16}".prop_map(Original::Text),
            proptest::collection::vec(any::<u8>(), 0..6).prop_map(Original::Blob),
        ]
    }

    fn path() -> impl Strategy<Value = PathShape> {
        let files = vec![
            "proc/sys/kernel/core_pattern",
            "proc/sys/kernel/random/boot_id",
            "sys/block/sda/dev",
            "sys/block/sda/device/wwid",
            "sys/block/sda/queue/rotational",
            "sys/block/sda/queue/max_hw_sectors_kb",
        ];
        prop_oneof![
            3 => Just(PathShape::Catalogue),
            2 => any::<bool>().prop_map(PathShape::Climb),
            2 => proptest::sample::select(files).prop_map(PathShape::TreeFile),
            1 => "[a-z_./]{0,24}".prop_map(PathShape::Tree),
            1 => "/[a-z_./]{0,24}".prop_map(PathShape::Anywhere),
            1 => Just(PathShape::Victim),
        ]
    }

    fn row() -> impl Strategy<Value = Row> {
        (
            (
                proptest::option::weighted(0.5, name()),
                knob(),
                path(),
                original(),
            ),
            (
                -1i64..8,
                proptest::option::of(prop_oneof![
                    Just("mq-deadline".to_string()),
                    "[a-z./-]{0,8}"
                ]),
                prop_oneof![
                    Just("set".to_string()),
                    Just("tune:1".to_string()),
                    ".{0,6}"
                ],
                proptest::option::of(prop_oneof![Just("boot-1".to_string()), ".{0,6}"]),
                proptest::option::weighted(0.95, 0i64..10),
            ),
        )
            .prop_map(
                |(
                    (device, knob, path, original),
                    (order, scheduler, owner, boot_id, recorded_at),
                )| Row {
                    device,
                    knob,
                    path,
                    original,
                    order,
                    scheduler,
                    owner,
                    boot_id,
                    recorded_at,
                },
            )
    }

    /// The file `r`'s path names under roots `root` (the victim at `victim`).
    fn path_of(r: &Row, root: &SysRoot, victim: &Path) -> String {
        let dev = r.device.clone().unwrap_or_default();
        let q = root.block_dev(&dev).join("queue");
        let p = match &r.path {
            PathShape::Catalogue => match r.order {
                0 => q.join("scheduler"),
                1 | 3 => q.join(&r.knob),
                2 => q.join("iosched").join(&r.knob),
                4 => root.vm().join(&r.knob),
                5 => root.kernel_sysctl().join(&r.knob),
                _ => root.debugfs().join("sched").join(&r.knob),
            },
            PathShape::TreeFile(rel) => root.sys.parent().unwrap().join(rel),
            PathShape::Tree(rest) => root.sys.parent().unwrap().join(rest),
            PathShape::Climb(true) => root.proc.join("../../victim/passwd"),
            PathShape::Climb(false) => root.block().join("sda/../../../../victim/passwd"),
            PathShape::Anywhere(p) => PathBuf::from(p),
            PathShape::Victim => victim.to_path_buf(),
        };
        p.to_string_lossy().into_owned()
    }

    /// Every file under `dir` with its content.
    fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        let mut todo = vec![dir.to_path_buf()];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if e.file_type().unwrap().is_dir() {
                    todo.push(p);
                } else {
                    out.insert(p.clone(), std::fs::read(&p).unwrap());
                }
            }
        }
        out
    }

    /// True when `p` is one of the catalogue's knob files under `root`, as the test sees them
    /// (written out here, not asked of the code under test).
    fn catalogue_file(root: &SysRoot, p: &Path) -> bool {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let parent = p.parent().unwrap();
        let in_queue = |q: &Path| {
            q.file_name().is_some_and(|n| n == "queue")
                && q.parent().and_then(Path::parent) == Some(root.block().as_path())
        };
        (in_queue(parent)
            && (name == "scheduler" || catalogue::QUEUE_KNOBS.contains(&name.as_str())))
            || (parent.file_name().is_some_and(|n| n == "iosched")
                && in_queue(parent.parent().unwrap()))
            || (parent == root.vm() && catalogue::VM_KNOBS.contains(&name.as_str()))
            || (parent == root.kernel_sysctl()
                && catalogue::SCHED_SYSCTL_KNOBS.contains(&name.as_str()))
            || (parent == root.debugfs().join("sched")
                && (name == "features" || catalogue::SCHED_DEBUGFS_KNOBS.contains(&name.as_str())))
    }

    proptest! {
        // 48 cases of up to 8 rows: about 2 s in a debug build.
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        #[test]
        fn restore_writes_only_catalogue_files_under_the_tree(rows in proptest::collection::vec(row(), 1..10)) {
            let (t, victim) = tree_with_victim();
            t.bfq_disk().sched_current();
            // The database on tmpfs when there is one: its fsyncs are most of the time.
            let shm = Path::new("/dev/shm");
            let dbdir = if shm.is_dir() { tempfile::tempdir_in(shm) } else { tempfile::tempdir() }.unwrap();
            let db = dbdir.path().join("s.db");
            let mut s = Store::open(&db).unwrap();
            // sda's and sdb's rows carry their identity now, so restore gets to write them.
            let ids: BTreeMap<&str, String> = ["sda", "sdb"]
                .map(|d| (d, find(&t.root, d).unwrap().identity))
                .into_iter()
                .collect();
            let mut c = rusqlite::Connection::open(&db).unwrap();
            let tx = c.transaction().unwrap();
            for r in &rows {
                let original: rusqlite::types::Value = match &r.original {
                    Original::Text(t) => t.clone().into(),
                    Original::Blob(b) => b.clone().into(),
                };
                let recorded: rusqlite::types::Value = match r.recorded_at {
                    Some(n) => n.into(),
                    None => "yesterday".to_string().into(),
                };
                tx.execute(
                    "INSERT OR IGNORE INTO journal (device, identity, knob, path, original, \
                     apply_order, scheduler, owner, recorded_at, boot_id) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                    rusqlite::params![
                        r.device,
                        r.device
                            .as_deref()
                            .map(|d| ids.get(d).cloned().unwrap_or(format!("wwn:{d}"))),
                        r.knob,
                        path_of(r, &t.root, &victim),
                        original,
                        r.order,
                        r.scheduler,
                        r.owner,
                        recorded,
                        r.boot_id
                    ],
                )
                .unwrap();
            }
            tx.commit().unwrap();
            let before = snapshot(t.dir.path());
            let _ = crate::undo::restore_idle(&RealIo, &mut s, &t.root, None);
            let _ = restore_with(&RealIo, &mut s, &t.root, None, None);
            let after = snapshot(t.dir.path());
            let keys: std::collections::BTreeSet<&PathBuf> = before.keys().chain(after.keys()).collect();
            for p in keys {
                if before.get(p) != after.get(p) {
                    prop_assert!(
                        catalogue_file(&t.root, p),
                        "{} changed: {:?} -> {:?}",
                        p.display(),
                        before.get(p).map(|b| String::from_utf8_lossy(b).into_owned()),
                        after.get(p).map(|b| String::from_utf8_lossy(b).into_owned())
                    );
                }
            }
        }
    }
}

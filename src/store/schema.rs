//! Versioned migrations. Never edit a released migration; append a new `M::up`.

use rusqlite_migration::{M, Migrations};

/// All migrations, oldest first ([`all`]).
pub(crate) fn migrations() -> Migrations<'static> {
    Migrations::new(all())
}

/// The newest schema this sweetspot knows: its `PRAGMA user_version` once migrated (the
/// number of migrations; rusqlite_migration counts from 1).
pub(crate) fn latest() -> i64 {
    i64::try_from(all().len()).unwrap_or(i64::MAX)
}

/// All migrations, oldest first: the first schema, then each change to it.
fn all() -> Vec<M<'static>> {
    let mut all = vec![M::up(FIRST)];
    all.extend(changes());
    all
}

/// The first schema (migration 1). Times are Unix seconds; settings and evidence are JSON
/// text.
const FIRST: &str = r#"
PRAGMA application_id = 0x53575350;

-- A device as seen under one kernel: identity (wwid, model+serial, by-path, loop backing file,
-- or sim:<surface>), and a fingerprint of what it offered (schedulers, rotational, size).
CREATE TABLE devices (
    id          INTEGER PRIMARY KEY,
    identity    TEXT NOT NULL,
    kernel      TEXT NOT NULL,
    name        TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    first_seen  INTEGER NOT NULL,
    last_seen   INTEGER NOT NULL,
    UNIQUE (identity, kernel)
);

-- The undo journal: the original value of every knob before sweetspot first changed it.
-- At most one open (unrestored) entry per (knob file, owner); restored entries are kept as
-- history. `restore` of everything writes the OLDEST open entry of a path (the true original);
-- a tune restores only its own entries (the values at its start, e.g. an admin's `set`).
CREATE TABLE journal (
    id          INTEGER PRIMARY KEY,
    device      TEXT,              -- kernel name at the time (sda); NULL for host-wide vm knobs
    identity    TEXT,
    knob        TEXT NOT NULL,     -- base name: fifo_batch, scheduler, dirty_ratio
    path        TEXT NOT NULL,     -- the file written
    original    TEXT NOT NULL,     -- as read before the first change
    apply_order INTEGER NOT NULL,  -- knob::ApplyOrder
    scheduler   TEXT,              -- for iosched knobs: the scheduler they belong to
    owner       TEXT NOT NULL,     -- "set", or "tune:<id>"
    recorded_at INTEGER NOT NULL,
    restored_at INTEGER
);
CREATE UNIQUE INDEX journal_open_path ON journal(path, owner) WHERE restored_at IS NULL;

-- A tune in progress or finished; an unfinished one (finished_at NULL) found at start-up means
-- a tune was killed: restore its device first.
CREATE TABLE tunes (
    id          INTEGER PRIMARY KEY,
    identity    TEXT NOT NULL,
    kernel      TEXT NOT NULL,
    device      TEXT,
    target      TEXT NOT NULL,
    policy      TEXT NOT NULL,
    pid         INTEGER NOT NULL,
    started_at  INTEGER NOT NULL,
    finished_at INTEGER,
    status      TEXT NOT NULL DEFAULT 'running'   -- running, done, interrupted, failed, recovered
);

-- One setting measured (by bench or by a tune).
CREATE TABLE trials (
    id          INTEGER PRIMARY KEY,
    tune_id     INTEGER REFERENCES tunes(id),
    identity    TEXT NOT NULL,
    kernel      TEXT NOT NULL,
    target      TEXT NOT NULL,
    setting     TEXT NOT NULL,     -- JSON knob -> value
    sizes       TEXT NOT NULL,     -- JSON: job and load sizes used
    started_at  INTEGER NOT NULL
);

-- One run of one load within a trial, written as soon as it finishes.
CREATE TABLE runs (
    id          INTEGER PRIMARY KEY,
    trial_id    INTEGER NOT NULL REFERENCES trials(id),
    load        TEXT NOT NULL,
    run_index   INTEGER NOT NULL,
    time_s      REAL NOT NULL,
    cpu_pct     REAL NOT NULL,
    loads       REAL,
    lcpu_pct    REAL,
    failed      TEXT,
    finished_at INTEGER NOT NULL
);
CREATE INDEX runs_trial ON runs(trial_id);

-- The best setting found for (identity, kernel, policy), with its evidence (JSON report).
CREATE TABLE sweet_spots (
    id          INTEGER PRIMARY KEY,
    identity    TEXT NOT NULL,
    kernel      TEXT NOT NULL,
    policy      TEXT NOT NULL,
    tune_id     INTEGER REFERENCES tunes(id),
    setting     TEXT NOT NULL,     -- JSON knob -> value (the default when not significant)
    default_setting TEXT NOT NULL,
    significant INTEGER NOT NULL,
    evidence    TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX sweet_spots_key ON sweet_spots(identity, kernel, policy);
"#;

/// The changes to [`FIRST`], oldest first (migrations 2, 3, …).
fn changes() -> Vec<M<'static>> {
    vec![
        // The boot an original was read in (`/proc/sys/kernel/random/boot_id`): after a reboot
        // the kernel has reset the knob, so restore must not write a stale original over
        // whatever the new boot set. NULL for entries from before this migration.
        M::up("ALTER TABLE journal ADD COLUMN boot_id TEXT;"),
        // When a trial's last run finished; NULL: it was stopped before (Ctrl-C between its
        // runs, or a killed tune). Older rows: a tune's trial counts as finished when it has
        // as many runs as the tune's fullest trial, a bench trial (no tune) when it has runs;
        // the time is its last run's.
        M::up(
            "ALTER TABLE trials ADD COLUMN finished_at INTEGER;
             UPDATE trials SET finished_at =
                 (SELECT MAX(r.finished_at) FROM runs r WHERE r.trial_id = trials.id)
             WHERE tune_id IS NULL
                OR (SELECT COUNT(*) FROM runs r WHERE r.trial_id = trials.id) =
                   (SELECT MAX(c) FROM (SELECT COUNT(*) AS c FROM runs r2
                        JOIN trials t2 ON r2.trial_id = t2.id
                        WHERE t2.tune_id = trials.tune_id GROUP BY r2.trial_id));",
        ),
        // What an emulated device (`--emulate`) counted during the run: JSON of
        // `bench::IoCounters` (requests, bytes, seek distance, queue depth); NULL elsewhere.
        M::up("ALTER TABLE runs ADD COLUMN io TEXT;"),
        // The optimiser's seed and trial budget of a tune, so that an interrupted one can be
        // resumed (`tune::resume`: the same seed, its finished trials replayed in order);
        // `resumed` is the status of a tune whose trials a later tune took over. NULL for
        // tunes from before this migration (never resumed).
        M::up(
            "ALTER TABLE tunes ADD COLUMN seed INTEGER;
             ALTER TABLE tunes ADD COLUMN budget INTEGER;",
        ),
        // For a host-wide entry (no device): the identity of the device whose command
        // journaled it (`set sdz dirty_ratio=30`), so `restore sdz` can tell the host-wide
        // knobs that `set sdz` alone changed. NULL for a device's own entries, a command
        // without a device, entries from before this migration, and once commands for two
        // devices changed the same knob under one owner.
        M::up("ALTER TABLE journal ADD COLUMN for_identity TEXT;"),
        // The lock file a tune holds for as long as it runs (its target's, `crate::lock`):
        // whether a `running` tune is alive is judged by it, whatever its identity (a scratch
        // tune's `scratch:emulate:<spec>` names no lock). NULL for tunes from before this
        // migration: judged by the lock their identity maps to, as before.
        M::up("ALTER TABLE tunes ADD COLUMN lock_file TEXT;"),
        // A tune's trials on a judge of its policy (`tune::judge`): `startup` for the start-up
        // judge, whose runs time the start-up job, not the reference job. NULL for every
        // reference-job trial (all before this migration): history, resume and plots read
        // those only.
        M::up("ALTER TABLE trials ADD COLUMN judge TEXT;"),
        // Bytes the tune wrote to its device, by the device's own `stat` counters read when
        // it started and when it ended (`device::stat::WriteMeter`): what a tune costs a
        // flash device, and the daemon's write budget. NULL for a simulated device, a tune
        // still running, and tunes from before this migration.
        M::up("ALTER TABLE tunes ADD COLUMN bytes_written INTEGER;"),
    ]
}

#[cfg(test)]
mod tests {
    #[test]
    fn migrations_are_valid() {
        super::migrations().validate().unwrap();
    }

    #[test]
    fn a_version_1_journal_keeps_its_open_entries_with_an_unknown_boot() {
        let mut c = rusqlite::Connection::open_in_memory().unwrap();
        super::migrations().to_version(&mut c, 1).unwrap();
        c.execute(
            "INSERT INTO journal (device, knob, path, original, apply_order, owner, recorded_at) \
             VALUES ('sda', 'fifo_batch', '/sys/block/sda/queue/iosched/fifo_batch', '16', 3, \
             'set', 1)",
            [],
        )
        .unwrap();
        super::migrations().to_latest(&mut c).unwrap();
        let (orig, boot): (String, Option<String>) = c
            .query_row(
                "SELECT original, boot_id FROM journal WHERE restored_at IS NULL",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((orig.as_str(), boot), ("16", None));
    }

    #[test]
    fn version_2_trials_are_finished_when_as_full_as_their_tunes_fullest() {
        let mut c = rusqlite::Connection::open_in_memory().unwrap();
        super::migrations().to_version(&mut c, 2).unwrap();
        c.execute_batch(
            "INSERT INTO tunes (id, identity, kernel, target, policy, pid, started_at, status)
                 VALUES (1, 'sim:x', 'sim', 'sim:x', 'quick', 1, 0, 'interrupted');
             INSERT INTO trials (id, tune_id, identity, kernel, target, setting, sizes, started_at)
                 VALUES (1, 1, 'sim:x', 'sim', 'sim:x', '{}', '{}', 10),
                        (2, 1, 'sim:x', 'sim', 'sim:x', '{}', '{}', 20),
                        (3, NULL, 'sim:x', 'sim', 'sim:x', '{}', '{}', 30);
             INSERT INTO runs (trial_id, load, run_index, time_s, cpu_pct, finished_at)
                 VALUES (1, 'no_load', 0, 1, 1, 11), (1, 'io_load', 1, 1, 1, 12),
                        (2, 'no_load', 0, 1, 1, 21), (3, 'no_load', 0, 1, 1, 31);",
        )
        .unwrap();
        super::migrations().to_latest(&mut c).unwrap();
        let done: Vec<Option<i64>> = c
            .prepare("SELECT finished_at FROM trials ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        // Trial 2 has 1 run of its tune's 2: stopped. Bench trial 3 has its run.
        assert_eq!(done, [Some(12), None, Some(31)]);
    }

    #[test]
    fn a_version_6_tune_keeps_its_row_with_no_lock_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        {
            let mut c = rusqlite::Connection::open(&path).unwrap();
            super::migrations().to_version(&mut c, 6).unwrap();
            c.execute_batch(
                "INSERT INTO tunes (id, identity, kernel, device, target, policy, pid, started_at,
                                    status, seed, budget)
                     VALUES (1, 'scratch:emulate:latency=1ms', '6.18', 'loop0',
                             'loop0 (emulated)', 'quick', 42, 10, 'running', 7, 12);",
            )
            .unwrap();
        }
        // Opened by this sweetspot: migrated, the row read whole, with no lock file (judged by
        // the lock its identity maps to).
        let s = crate::store::Store::open(&path).unwrap();
        let rows = s.running_tunes().unwrap();
        assert_eq!(rows.len(), 1);
        let t = &rows[0];
        assert_eq!(
            (t.id, t.identity.as_str(), t.pid, t.status.as_str()),
            (1, "scratch:emulate:latency=1ms", 42, "running")
        );
        assert_eq!(t.lock_file, None);
        assert_eq!(s.tune_plan(1).unwrap(), Some((7, 12)));
        // A new row records its lock file, absolute.
        let target = crate::types::TargetInfo {
            label: "sim:x".into(),
            identity: "sim:x".into(),
            kernel: "sim".into(),
        };
        let id = s
            .insert_tune_holding(
                &target,
                None,
                "quick",
                std::path::Path::new("locks/sim_x.lock"),
            )
            .unwrap();
        let lock = s.tune(id).unwrap().unwrap().lock_file.unwrap();
        assert!(
            lock.is_absolute() && lock.ends_with("locks/sim_x.lock"),
            "{lock:?}"
        );
    }
}

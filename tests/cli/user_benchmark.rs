//! The user's benchmark ([`sweetspot::bench::user_job`]): figures read from real `ab`, fio (JSON)
//! and sysbench output kept as fixtures (tests/fixtures/bench_output/README.md says how they
//! were made); a failing command and a missing match are failed runs, with the stderr tail,
//! never a zero; nice and CPU affinity reach the command.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use sweetspot::bench::user_job::{Extract, UserJob};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(Path::new("tests/fixtures/bench_output").join(name)).unwrap()
}

fn regex_job(command: &str, re: &str) -> UserJob {
    UserJob::new(command, Extract::Regex(re.into()), "figure", "", true).unwrap()
}

#[test]
fn figures_from_real_ab_fio_and_sysbench_output() {
    let ab = regex_job("ab", r"Requests per second:\s+([0-9.]+)");
    assert_eq!(ab.figure(&fixture("ab-lighttpd.txt")), Ok(3334.50));
    let fio = UserJob::new(
        "fio",
        Extract::JsonPointer("/jobs/0/read/iops".into()),
        "IOPS",
        "IOPS",
        true,
    )
    .unwrap();
    assert_eq!(fio.figure(&fixture("fio-randread.json")), Ok(10693.653173));
    // fio's latency, minimised: a nested pointer.
    let lat = UserJob::new(
        "fio",
        Extract::JsonPointer("/jobs/0/read/clat_ns/mean".into()),
        "mean latency",
        "ns",
        false,
    )
    .unwrap();
    assert!(lat.figure(&fixture("fio-randread.json")).unwrap() > 0.0);
    let sb = regex_job("sysbench", r"events per second:\s+([0-9.]+)");
    assert_eq!(sb.figure(&fixture("sysbench-cpu.txt")), Ok(2214.92));
}

#[test]
fn missing_figures_are_errors_not_zeros() {
    let ab = regex_job("ab", r"Requests per second:\s+([0-9.]+)");
    let e = ab.figure(&fixture("sysbench-cpu.txt")).unwrap_err();
    assert!(e.starts_with("no match for regex"), "{e}");
    let p = UserJob::new(
        "x",
        Extract::JsonPointer("/jobs/0/write/nope".into()),
        "x",
        "",
        true,
    )
    .unwrap();
    let e = p.figure(&fixture("fio-randread.json")).unwrap_err();
    assert!(e.contains("finds nothing"), "{e}");
    let e = p.figure("not json at all").unwrap_err();
    assert!(e.contains("no JSON object"), "{e}");
    // A capture that is not a number.
    let w = regex_job("x", r"Server Software:\s+(\S+)");
    let e = w.figure(&fixture("ab-lighttpd.txt")).unwrap_err();
    assert!(
        e.contains("captured 'lighttpd/1.4.69', not a number"),
        "{e}"
    );
    // A regex must have exactly one capture group.
    let e = UserJob::new(
        "x",
        Extract::Regex("([0-9]+) ([0-9]+)".into()),
        "x",
        "",
        true,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("exactly one capture group (the number), has 2"),
        "{e}"
    );
}

#[test]
fn a_failing_command_and_a_missing_match_are_failed_runs_with_the_stderr_tail() {
    let dir = tempfile::tempdir().unwrap();
    let job = regex_job(
        "echo 'rate: 5'; echo 'disk full' >&2; exit 3",
        r"rate: (\d+)",
    );
    let r = job.run(dir.path()).unwrap();
    let f = r.failed.unwrap();
    assert!(f.contains("exit status 3"), "{f}");
    assert!(f.ends_with("stderr: disk full"), "{f}");
    assert_eq!(r.loads, None, "a failed run has no figure, not 0");

    let job = regex_job("echo 'nothing here'; echo warn1 >&2", r"rate: (\d+)");
    let r = job.run(dir.path()).unwrap();
    let f = r.failed.unwrap();
    assert!(f.contains("no match for regex 'rate: (\\d+)'"), "{f}");
    assert!(f.ends_with("stderr: warn1"), "{f}");
    assert_eq!(r.loads, None);

    let mut job = regex_job("sleep 5; echo 'rate: 1'", r"rate: (\d+)");
    job.timeout_s = 0.3;
    let r = job.run(dir.path()).unwrap();
    assert!(r.failed.unwrap().contains("timed out after 0.3 s"));

    let job = regex_job("pwd; echo 'rate: 42'", r"rate: (\d+)");
    let r = job.run(dir.path()).unwrap();
    assert_eq!((r.failed, r.loads), (None, Some(42.0)));
    assert!(r.time_s > 0.0 && r.time_s < 5.0);
}

#[test]
fn nice_and_cpu_affinity_reach_the_command_and_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let allowed = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
    let cpu = (0..nix::sched::CpuSet::count())
        .rev()
        .find(|&c| allowed.is_set(c).unwrap_or(false))
        .unwrap();
    // `sh -c` runs `nice` and `grep` as children: they inherit both.
    let mut job = regex_job("echo nice=$(nice)", r"nice=(\d+)");
    job.nice = Some(7);
    job.cpus = Some(vec![cpu]);
    job.check().unwrap();
    assert_eq!(job.run(dir.path()).unwrap().loads, Some(7.0));
    let mut job = regex_job(
        "grep Cpus_allowed_list /proc/self/status",
        r"(?m)Cpus_allowed_list:\s+(\d+)$",
    );
    job.cpus = Some(vec![cpu]);
    let r = job.run(dir.path()).unwrap();
    assert_eq!(r.loads, Some(cpu as f64), "{:?}", r.failed);
    // Both are recorded with the results.
    let rec = job.record();
    assert_eq!(rec["benchmark"]["cpus"], serde_json::json!([cpu]));
    assert!(rec["benchmark"]["nice"].is_null());
    // A CPU this process may not use is bad input.
    job.cpus = Some(vec![4095]);
    assert!(job.check().unwrap_err().to_string().contains("'4095'"));
}

#[test]
fn the_example_policies_parse_with_their_benchmarks() {
    use sweetspot::tune::policy::{Objective, load_file};
    for (file, label) in [
        ("http-autogroup.toml", "Requests per second (req/s)"),
        ("fio-readahead.toml", "sequential read bandwidth (KiB/s)"),
    ] {
        let p = load_file(
            &Path::new("examples/user-benchmark").join(file),
            sweetspot::trust::Origin::Named,
        )
        .unwrap();
        assert!(matches!(p.objective, Objective::Benchmark(_)), "{file}");
        assert_eq!(p.objective.label(), label);
    }
}

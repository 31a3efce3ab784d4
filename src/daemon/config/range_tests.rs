//! Every duration, count and path of the config has its range.
#![allow(clippy::unwrap_used)]
use super::*;

/// Each duration and count at its bound is accepted and just past it refused, naming the
/// line and field (`retune_interval_days = 1e308` wrapped the due date into the past; `db
/// = ""` ran the daemon on SQLite's temporary database).
#[test]
fn every_duration_count_and_path_has_its_range() {
    let p = Path::new("d.toml");
    let cases: [(&str, &str, &str, &str); 11] = [
        (
            "",
            "retune_interval_days = 3650",
            "retune_interval_days = 3650.001",
            "'3650.001': must be in (0, 3650] days (ten years)",
        ),
        (
            "",
            "retune_interval_days = 0.5",
            "retune_interval_days = 1e308",
            "'1e308': must be in (0, 3650] days (ten years)",
        ),
        (
            "",
            "retune_interval_s = 315360000",
            "retune_interval_s = 315360000.5",
            "'315360000.5': must be in (0, 315360000] s (ten years)",
        ),
        (
            "[retune]",
            "budget = 10000",
            "budget = 10001",
            "'10001': must be 1–10000 trials",
        ),
        (
            "[retune]",
            "job_scale = 100",
            "job_scale = 100.5",
            "'100.5': must be in (0, 100]",
        ),
        (
            "[retune]",
            "load_mib = 1048576",
            "load_mib = 1048577",
            "'1048577': must be 1–1048576 MiB (1 TiB)",
        ),
        (
            "[retune]",
            "lead_s = 60",
            "lead_s = 60.001",
            "'60.001': must be 0–60 s",
        ),
        (
            "[idle]",
            "for_s = 86400",
            "for_s = 86401",
            "'86401': must be 0–86400 s (a day)",
        ),
        (
            "",
            "poll_s = 3600",
            "poll_s = 3601",
            "'3601': must be 1–3600 s",
        ),
        (
            "",
            "db = \"/var/lib/sweetspot/s.db\"",
            "db = \"\"",
            "'': give an absolute path (an empty one is SQLite's temporary database, gone when the daemon stops)",
        ),
        (
            "",
            "db = \"/s.db\"",
            "db = \"s.db\"",
            "'s.db': give an absolute path (a relative one depends on the directory the daemon starts in)",
        ),
    ];
    for (table, ok, bad, msg) in cases {
        let text = |line: &str| format!("enroll = \"tuned\"\n{table}\n{line}\n");
        assert!(
            parse(&text(ok), p).is_ok(),
            "{ok}: {:?}",
            parse(&text(ok), p)
        );
        let e = parse(&text(bad), p).unwrap_err();
        let key = bad.split(' ').next().unwrap();
        let field = match table {
            "[retune]" => format!("retune.{key}"),
            "[idle]" => format!("idle.{key}"),
            _ => key.to_string(),
        };
        assert_eq!(e.to_string(), format!("d.toml:3: {field}: {msg}"), "{bad}");
        assert_eq!(e.exit_code(), 2);
    }
    let c = parse("retune_interval_days = 3650\n", p).unwrap();
    assert_eq!(c.interval_s(), 315_360_000.0);
}

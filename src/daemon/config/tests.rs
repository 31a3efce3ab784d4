//! The config's parsing: errors with file, line and field; `[keep]`.
#![allow(clippy::unwrap_used)]
use super::*;

#[test]
fn a_retune_policy_with_a_load_a_retune_cannot_run_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let pol = dir.path().join("other.toml");
    std::fs::write(
        &pol,
        "loads = [\"no_load\", \"io_other\"]\nbudget = 8\n[objective]\nminimize = \"ratio\"\n\
         loads = [\"io_other\"]\n[knobs.read_ahead_kb]\n",
    )
    .unwrap();
    let p = Path::new("d.toml");
    let text = format!("poll_s = 5\ndefault_policy = \"{}\"\n", pol.display());
    let e = parse(&text, p).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "d.toml:2: default_policy: '{}': it runs io_other, which writes to another \
             filesystem, and a retune has none: give a policy without io_other",
            pol.display()
        )
    );
    assert_eq!(e.exit_code(), 2);
    // The shipped policies run loads a retune can.
    assert!(parse("default_policy = \"throughput\"\n", p).is_ok());
}

#[test]
fn a_retune_policy_with_its_own_benchmark_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let pol = dir.path().join("bench.toml");
    std::fs::write(
        &pol,
        "runs = 2\nbudget = 20\n[benchmark]\ncommand = \"echo t 5\"\n\
         regex = 't ([0-9.]+)'\nminimize = \"t\"\n[knobs.fifo_batch]\nvalues = [8, 16]\n",
    )
    .unwrap();
    let p = Path::new("d.toml");
    for (text, line, field) in [
        (
            format!(
                "poll_s = 1\n[policy]\n\"wwid:naa.5000c500a1b2c3d4\" = \"{}\"\n",
                pol.display()
            ),
            3,
            "policy.wwid:naa.5000c500a1b2c3d4",
        ),
        (
            format!("default_policy = \"{}\"\n", pol.display()),
            1,
            "default_policy",
        ),
    ] {
        let e = parse(&text, p).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "d.toml:{line}: {field}: '{}': it optimises its own benchmark \
                 (`[benchmark]`: t), which a retune cannot run (a retune measures with \
                 contest's loads): give a policy with `loads`, or tune it by hand with \
                 `sweetspot tune --device D --policy {}`",
                pol.display(),
                pol.display()
            )
        );
        assert_eq!(e.exit_code(), 2);
    }
}

/// `[keep]` names, per identity, the policy whose sweet spot rules the device (a stored
/// name, not a file: a user benchmark's policy too, which a retune cannot run); a
/// conflicting `[policy]` entry for the same device is refused.
#[test]
fn keep_names_the_ruling_policy_per_identity_once() {
    let p = Path::new("d.toml");
    let c = parse(
        "[keep]\n\"loop:/srv/d.img\" = \"fio-readahead\"\n[policy]\nssd = \"desktop\"\n\
         \"wwid:naa.1\" = \"throughput\"\n",
        p,
    )
    .unwrap();
    assert_eq!(
        c.ruling_policy("loop:/srv/d.img").as_deref(),
        Some("fio-readahead")
    );
    assert_eq!(c.ruling_policy("wwid:naa.1").as_deref(), Some("throughput"));
    assert_eq!(
        c.ruling_policy("wwid:naa.2"),
        None,
        "a class decides nothing"
    );
    assert_eq!(c.named(), ["loop:/srv/d.img", "wwid:naa.1"]);
    for (text, msg) in [
        (
            "poll_s = 1\n[keep]\nsda = \"quick\"\n",
            "d.toml:3: keep.sda: 'sda' is not a device identity",
        ),
        (
            "poll_s = 1\n[keep]\n\"wwid:naa.1\" = \"/etc/p.toml\"\n",
            "d.toml:3: keep.wwid:naa.1: '/etc/p.toml': give a policy's name",
        ),
        (
            "[policy]\n\"wwid:naa.1\" = \"desktop\"\n[keep]\n\"wwid:naa.1\" = \"quick\"\n",
            "keep.wwid:naa.1: 'quick': [policy] names 'desktop' for this device: one \
             policy rules a device, name it once",
        ),
    ] {
        let e = parse(text, p).unwrap_err();
        assert!(e.to_string().contains(msg), "{e}");
        assert_eq!(e.exit_code(), 2);
    }
    assert_eq!(
        policy_name("/etc/sweetspot/policies/fio-readahead.toml"),
        "fio-readahead"
    );
}

#[test]
fn defaults_and_errors_with_line_and_field() {
    let p = Path::new("d.toml");
    assert_eq!(parse("", p).unwrap(), DaemonConfig::default());
    let c = parse(
        "enroll = [\"wwid:naa.1\"]\nquiet_hours = \"22:30-06:00\"\n",
        p,
    )
    .unwrap();
    assert_eq!(c.enroll, Enroll::Identities(vec!["wwid:naa.1".into()]));
    // Every form `sweetspot devices` shows is an identity; anything else would never be
    // present, so it is refused with its line and index.
    let ok = "enroll = [\"wwid:naa.1\", \"model-serial:M:S\", \"by-path:pci0/x\", \
              \"loop:/srv/d.img\", \"virtual:zram0\"]\n";
    assert!(matches!(parse(ok, p).unwrap().enroll, Enroll::Identities(v) if v.len() == 5));
    for (id, at) in [
        ("nosuchidentity", 0),
        ("loop1", 1),
        ("wwid:", 1),
        ("model-serial:M", 1),
        ("scratch:ext4-on:dev:7:0", 1),
    ] {
        let text = format!("poll_s = 5\nenroll = [\"wwid:naa.1\",\n  \"{id}\"]\n");
        let text = if at == 0 {
            format!("enroll = [\"{id}\"]\n")
        } else {
            text
        };
        let e = parse(&text, p).unwrap_err();
        let line = if at == 0 { 1 } else { 3 };
        assert!(
            e.to_string().starts_with(&format!(
                "d.toml:{line}: enroll[{at}]: '{id}' is not a device identity, so no \
                 device would ever be enrolled by it: give one as `sweetspot devices` \
                 shows it (wwid:WWID, "
            )),
            "{e}"
        );
        assert_eq!(e.exit_code(), 2);
    }
    assert_eq!(
        quiet_window(c.quiet_hours.as_deref().unwrap()),
        Some((1350, 360))
    );
    let e = parse("poll_s = 5\nquiet_hours = \"25:00-01:00\"\n", p).unwrap_err();
    assert_eq!(
        e.to_string(),
        "d.toml:2: quiet_hours: '25:00-01:00': expected HH:MM-HH:MM"
    );
    // An hour whose minutes overflow u32 is refused, not a panic (a fuzz finding).
    let e = parse("poll_s = 5\nquiet_hours = \"99287727:30-06:00\"\n", p).unwrap_err();
    assert_eq!(
        e.to_string(),
        "d.toml:2: quiet_hours: '99287727:30-06:00': expected HH:MM-HH:MM"
    );
    let e = parse("poll_s = 5\nquiet_hours = \"08:00-08:00\"\n", p).unwrap_err();
    assert_eq!(
        e.to_string(),
        "d.toml:2: quiet_hours: '08:00-08:00': start and end are equal, an empty window \
         (omit quiet_hours for none)"
    );
    assert_eq!(e.exit_code(), 2);
    let e = parse("\n[idle]\ncpu_busy_pct_max = 500\n", p).unwrap_err();
    assert_eq!(
        e.to_string(),
        "d.toml:3: idle.cpu_busy_pct_max: '500': must be 0–100 %"
    );
    let e = parse("[idle]\nload_avg_max = -3\n", p).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("d.toml:2: idle.load_avg_max: '-3': must be ≥ 0"),
        "{e}"
    );
    let e = parse("\n[idle]\nfor_s = \"long\"\n", p).unwrap_err();
    assert!(e.to_string().starts_with("d.toml:3: idle.for_s: "), "{e}");
    // Not TOML at all: `syntax` where a field would be, as in a policy or a surface.
    let e = parse("poll_s = 5\n[idle\n", p).unwrap_err();
    assert!(e.to_string().starts_with("d.toml:2: syntax: "), "{e}");
    let e = parse("polls = 3\n", p).unwrap_err();
    assert!(e.to_string().contains("polls"), "{e}");
    assert_eq!(e.exit_code(), 2);
    // A comment that mentions the key is not the line that sets it (examples/daemon.toml
    // documents every key above its line).
    let e = parse(
        "# cpu_busy_pct_max: the CPU busy % above which\n[idle]\n  cpu_busy_pct_max = 150\n",
        p,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("d.toml:3: idle.cpu_busy_pct_max: "),
        "{e}"
    );
}

/// An error about a `[policy]` or `[keep]` entry names the entry's line, found by its key in
/// the parsed document: a text scan looked an identity holding a dot (`wwid:naa.1`) up by the
/// text after its last dot (`1`, line 1: `poll_s = 1`), and a `[keep]` identity by the first
/// line that sets it (in `[policy]`).
#[test]
fn a_policy_entry_keyed_by_a_dotted_identity_is_named_at_its_line() {
    let p = Path::new("d.toml");
    let text = "poll_s = 1\n[policy]\nssd = \"quick\"\n\"wwid:naa.1\" = \"dasktop\"\n";
    let e = parse(text, p).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("d.toml:4: policy.wwid:naa.1: 'dasktop': unknown policy 'dasktop'"),
        "{e}"
    );
    // A key in two tables is named in the table at fault: `[keep]`'s, not `[policy]`'s.
    let text = "[policy]\n\"wwid:naa.2\" = \"quick\"\n[keep]\n\"wwid:naa.2\" = \"desktop\"\n";
    let e = parse(text, p).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("d.toml:4: keep.wwid:naa.2: 'desktop': [policy] names 'quick'"),
        "{e}"
    );
}

//! Tests of policy parsing and resolving.

use super::*;

#[test]
fn builtins_parse() {
    for (n, _) in BUILTIN {
        let p = builtin(n).unwrap().unwrap();
        assert_eq!(p.name, n);
        assert!(p.budget >= 2 * p.check_pairs + 2);
    }
    let q = builtin("quick").unwrap().unwrap();
    assert_eq!(q.loads, vec![Load::NoLoad, Load::IoLoad]);
    assert!(q.knobs.contains_key("scheduler") && q.knobs.contains_key("fifo_batch"));
    assert_eq!(
        q.objective,
        Objective::MinRatio {
            loads: vec![Load::IoLoad]
        }
    );
    let t = builtin("throughput").unwrap().unwrap();
    assert!(!t.objective.minimize());
    assert!(!t.guards.is_empty());
}

#[test]
fn shipped_and_test_policies_name_only_known_knobs() {
    let mut files: Vec<(String, String)> = BUILTIN
        .iter()
        .map(|(n, t)| (format!("builtin:{n}"), t.to_string()))
        .collect();
    for e in std::fs::read_dir("tests/policies").unwrap() {
        let p = e.unwrap().path();
        files.push((
            p.display().to_string(),
            std::fs::read_to_string(&p).unwrap(),
        ));
    }
    assert!(files.len() >= 6, "{}", files.len());
    for (name, text) in files {
        let p = parse(&text, Path::new(&name), "p", "p").unwrap();
        for k in p.knobs.keys() {
            assert!(crate::knob::catalogue::is_known(k), "{name}: {k}");
        }
    }
}

#[test]
fn errors_name_line_and_field() {
    let text = "loads = [\"no_load\", \"io_lod\"]\nbudget = 12\n\
                [objective]\nminimize = \"ratio\"\nloads = [\"io_load\"]\n[knobs.fifo_batch]\n";
    let e = parse(text, Path::new("x.toml"), "x", "x").unwrap_err();
    let s = e.to_string();
    assert!(
        s.starts_with("x.toml:1: loads[1]: unknown load 'io_lod'"),
        "{s}"
    );
    assert_eq!(e.exit_code(), 2);

    let text = "loads = [\"no_load\", \"io_load\"]\nbudget = 12\nrunz = 2\n";
    let s = parse(text, Path::new("y.toml"), "y", "y")
        .unwrap_err()
        .to_string();
    assert!(s.starts_with("y.toml:3: runz:"), "{s}");
}

#[test]
fn a_ratio_guard_needs_no_load_and_another_load() {
    let text = |loads: &str, load: &str| {
        format!(
            "loads = [{loads}]\nbudget = 12\n[objective]\nmaximize = \"loads\"\n\
             load = \"io_load\"\n[knobs.fifo_batch]\n[[guard]]\nload = \"{load}\"\n\
             metric = \"ratio\"\nmax_vs_default = 1.2\n"
        )
    };
    let both = "\"no_load\", \"io_load\"";
    let p = |t: String| parse(&t, Path::new("g.toml"), "g", "g").map_err(|e| e.to_string());
    assert_eq!(
        p(text(both, "io_load")).unwrap().guards[0].metric,
        Metric::Ratio
    );
    assert_eq!(
        p(text(both, "no_load")).unwrap_err(),
        "g.toml:9: guard[0].metric: no_load has no Ratio (it is the divisor)"
    );
    assert_eq!(
        p(text("\"io_load\"", "io_load")).unwrap_err(),
        "g.toml:9: guard[0].metric: Ratio needs no_load among the policy's loads"
    );
}

#[test]
fn type_errors_name_the_field_in_toml_terms() {
    let head = "loads = [\"no_load\", \"io_load\"]\nbudget = 12\n";
    let tail = "[objective]\nminimize = \"ratio\"\nloads = [\"io_load\"]\n\
                [knobs.fifo_batch]\nmin = 1\n";
    let guard = "[[guard]]\nload = \"io_load\"\nmetric = \"loads\"\nmin_vs_default = 0.5\n";
    let cases = [
        (
            format!("{head}runs = \"one\"\n{tail}"),
            "p.toml:3: runs: invalid type: string \"one\", expected an integer",
        ),
        (
            format!("{head}alpha = \"low\"\n{tail}"),
            "p.toml:3: alpha: invalid type: string \"low\", expected a number",
        ),
        (
            format!("{head}{tail}max = 2.5\n"),
            "p.toml:8: knobs.fifo_batch.max: invalid type: floating point `2.5`, expected an integer",
        ),
        (
            format!("{head}{tail}{guard}{}", guard.replace("0.5", "\"half\"")),
            "p.toml:15: guard[1].min_vs_default: invalid type: string \"half\", expected a number",
        ),
        (
            format!("{head}{tail}{}", guard.replace("load = \"io_load\"\n", "")),
            "p.toml:8: guard[0].load: missing field `load`",
        ),
        (
            "loads = [\"no_load\", 3]\nbudget = 12\n".to_string(),
            "p.toml:1: loads[1]: invalid type: integer `3`, expected a string",
        ),
        (
            format!("{head}objective = {{ minimize = 1 }}\n[knobs.fifo_batch]\n"),
            "p.toml:3: objective.minimize: invalid type: integer `1`, expected a string",
        ),
        (
            format!("loads = \"io_load\"\nbudget = 12\n{tail}"),
            "p.toml:1: loads: invalid type: string \"io_load\", expected an array",
        ),
    ];
    for (text, want) in cases {
        let e = parse(&text, Path::new("p.toml"), "p", "p").unwrap_err();
        assert_eq!(e.to_string(), want, "{text}");
        assert_eq!(e.exit_code(), 2);
    }
    // A missing top-level key is named alone.
    let e = parse(
        &tail.replace("[objective]", "loads = [\"no_load\"]\n[objective]"),
        Path::new("p.toml"),
        "p",
        "p",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains(": budget: missing field `budget`"), "{e}");
    // Not TOML at all: no key to name.
    let e = parse(
        "loads = [\"no_load\"\nbudget = 1\n",
        Path::new("p.toml"),
        "p",
        "p",
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("p.toml:2: syntax: "), "{e}");
}

#[test]
fn resolve_prefers_system_dir_then_builtin() {
    let dir = tempfile::tempdir().unwrap();
    let text = builtin_text("quick").replace("budget = 8 ", "budget = 40 ");
    std::fs::write(dir.path().join("quick.toml"), text).unwrap();
    assert_eq!(
        resolve("quick", dir.path(), Origin::Named).unwrap().budget,
        40
    );
    assert_eq!(
        resolve("desktop", dir.path(), Origin::Named)
            .unwrap()
            .source,
        "builtin:desktop"
    );
    let e = resolve("nosuch", dir.path(), Origin::Named).unwrap_err();
    assert!(
        e.to_string()
            .contains("desktop, quick, slowdisk, throughput"),
        "{e}"
    );
}

fn builtin_text(n: &str) -> String {
    BUILTIN
        .iter()
        .find(|(m, _)| *m == n)
        .map(|(_, t)| t.to_string())
        .unwrap()
}

/// As root: a policy in the policies directory must be root's ([`Origin::System`]); the same
/// file named as a path ([`Origin::Named`]) must be root's or the admin's who ran sudo
/// (`SUDO_UID`, unset here: root's only), and anyone-writable is refused always.
#[test]
fn resolve_checks_who_may_have_written_the_file_it_reads() {
    use std::os::unix::fs::{PermissionsExt, chown};
    if !crate::trust::is_root() {
        eprintln!("skipped: needs root (chown)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mine.toml");
    std::fs::write(&file, builtin_text("quick")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    chown(&file, Some(65534), Some(65534)).unwrap();
    let path = file.to_str().unwrap();
    let e = resolve("mine", dir.path(), Origin::Named).unwrap_err();
    assert!(
        e.to_string().starts_with(&format!(
            "policy {path}: it is owned by nobody (uid 65534), not root"
        )),
        "{e}"
    );
    assert_eq!(e.exit_code(), 2);
    let e = resolve(path, dir.path(), Origin::Named).unwrap_err();
    assert!(
        e.to_string().starts_with(&format!(
            "policy {path}: it is owned by nobody (uid 65534), not root (no sudo user"
        )),
        "{e}"
    );
    assert!(resolve(path, dir.path(), Origin::System).is_err());
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    let e = resolve(path, dir.path(), Origin::Named).unwrap_err();
    assert!(e.to_string().contains("it is world-writable"), "{e}");
    chown(&file, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(
        resolve("mine", dir.path(), Origin::System).unwrap().budget,
        8
    );
}

#[test]
fn a_policy_name_with_a_control_character_is_refused() {
    let text = include_str!("../../../policies/quick.toml");
    let e = parse(text, Path::new("/x/a\nb.toml"), "a\nb", "a\nb").unwrap_err();
    assert_eq!(e.exit_code(), 2);
    let s = e.to_string();
    assert!(s.contains("name 'a\\nb' holds a control character"), "{s}");
    assert!(!s.contains('\n'), "{s}");
}

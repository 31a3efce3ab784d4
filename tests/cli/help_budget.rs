//! `-h` is a screen a person reads (issue #32 item 2): one line an option, wrapped to the
//! terminal, at most 24 lines for `sweetspot -h` and 40 for any subcommand's (nested ones
//! included) at 80 columns, no line wider; `--help` keeps the long text, and the test-only
//! roots (`--sysfs-root`, `--procfs-root`) are in `--help` (and the man pages) but not `-h`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use clap::CommandFactory;

/// Lines `sweetspot -h` may have at 80 columns.
const TOP_LINES: usize = 24;
/// Lines a subcommand's `-h` may have at 80 columns.
const SUB_LINES: usize = 40;

/// (command as typed, its `-h`, its `--help`) at 80 columns, for `sweetspot` and every
/// visible subcommand, nested ones (`profile export`) and clap's `help` included.
fn helps() -> Vec<(String, String, String)> {
    fn walk(cmd: &clap::Command, name: String, out: &mut Vec<(String, String, String)>) {
        let mut c = cmd.clone().term_width(80);
        let short = c.render_help().to_string();
        let long = c.render_long_help().to_string();
        out.push((name.clone(), short, long));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, format!("{name} {}", sub.get_name()), out);
        }
    }
    let mut top = sweetspot::cli::Cli::command().term_width(80);
    top.build();
    let mut out = Vec::new();
    walk(&top, "sweetspot".into(), &mut out);
    out
}

#[test]
fn every_short_help_fits_its_budget_at_80_columns() {
    let all = helps();
    let names: Vec<&str> = all.iter().map(|(n, _, _)| n.as_str()).collect();
    for n in [
        "sweetspot tune",
        "sweetspot profile export",
        "sweetspot daemon",
    ] {
        assert!(names.contains(&n), "{names:?}");
    }
    for (name, short, long) in &all {
        let budget = if name == "sweetspot" {
            TOP_LINES
        } else {
            SUB_LINES
        };
        let lines = short.lines().count();
        assert!(
            lines <= budget,
            "`{name} -h` is {lines} lines (at most {budget}):\n{short}"
        );
        for line in short.lines().chain(long.lines()) {
            assert!(
                line.chars().count() <= 80,
                "`{name}` help wider than 80 columns: {line:?}"
            );
        }
        assert!(
            long.len() >= short.len(),
            "`{name} --help` is the long text"
        );
    }
}

#[test]
fn the_short_help_is_one_line_an_option_and_the_long_help_keeps_the_prose() {
    let all = helps();
    let (_, short, long) = all.iter().find(|(n, _, _)| n == "sweetspot tune").unwrap();
    // Each option's line starts with its flag; none continues on the next line.
    let options: Vec<&str> = short
        .lines()
        .skip_while(|l| *l != "Options:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(options.len() >= 20, "{short}");
    for l in &options {
        assert!(
            l.trim_start().starts_with('-'),
            "a wrapped option line in `tune -h`: {l:?}\n{short}"
        );
    }
    // The long text is still there, and only under --help.
    let fact = "a full trial runs no_load and each loaded load once";
    let flat = long.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains(fact), "{long}");
    assert!(!short.contains("each loaded load"), "{short}");
    assert!(long.contains("Exit status:\n  0"), "{long}");
}

#[test]
fn the_test_roots_are_in_the_long_help_only() {
    for (name, short, long) in helps() {
        if name.contains(" help") {
            continue;
        }
        for flag in ["--sysfs-root", "--procfs-root"] {
            assert!(!short.contains(flag), "`{name} -h` lists {flag}:\n{short}");
            assert!(long.contains(flag), "`{name} --help` lacks {flag}:\n{long}");
        }
    }
}

/// The binary wraps to the terminal's width (COLUMNS when stdout is no terminal), at most
/// clap's 100 columns.
#[test]
fn the_binarys_help_wraps_to_columns() {
    let help = |columns: &str| {
        let out = assert_cmd::Command::cargo_bin("sweetspot")
            .unwrap()
            .env("COLUMNS", columns)
            .args(["tune", "--help"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8(out.stdout).unwrap()
    };
    let widest = |text: &str| text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    let (at80, at100) = (help("80"), help("100"));
    assert!((70..=80).contains(&widest(&at80)), "{at80}");
    assert!((90..=100).contains(&widest(&at100)), "{at100}");
    assert!(widest(&help("300")) <= 100);
}

//! The man pages under `man/` are generated from the command line's own definition (clap),
//! so they cannot drift from `--help`: this test renders them and compares. After changing a
//! flag or a help text, regenerate with `SWEETSPOT_BLESS=1 cargo test --test man_pages` and
//! commit `man/`. Install: `install -m644 man/*.1 /usr/local/share/man/man1/`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use clap::CommandFactory;
use std::path::PathBuf;

/// What every page ends with: the exit codes (README "Safety", DESIGN.md's CLI contract).
const EXIT_STATUS: &str = r#".SH "EXIT STATUS"
.TP
\fB0\fR
Success (also when the reader of the output went away, as with \fB| head\fR).
.TP
\fB1\fR
The work failed: a knob not honoured, a run that failed, drift found by \fBverify\fR.
.TP
\fB2\fR
Bad usage or input (a policy, surface, profile or config file names its file, line and field;
a knob its name and value), or a device held by another writer. Nothing was changed.
.TP
\fB130\fR
Interrupted by Ctrl-C or SIGTERM; the device was restored.
"#;

/// (file name, rendered page) for `sweetspot` and each visible subcommand, nested ones
/// included (`sweetspot-tune.1`, `sweetspot-profile-export.1`). The command is built first,
/// as clap_mangen's own `generate_to` does, so every page lists the global options (`--db`,
/// `-v`, `-q`) and its synopsis names the command as typed (`sweetspot profile export`).
fn pages() -> Vec<(String, String)> {
    let mut top = sweetspot::cli::Cli::command().disable_help_subcommand(true);
    top.build();
    let mut out = Vec::new();
    walk(&top, "sweetspot".into(), &mut out);
    out
}

fn walk(cmd: &clap::Command, name: String, out: &mut Vec<(String, String)>) {
    // clap names are &'static str without its `string` feature; a test may leak a few.
    let leaked: &'static str = Box::leak(name.clone().into_boxed_str());
    let mut buf = Vec::new();
    // The top command's exit codes are its --help's epilogue; the page has its own section.
    let page_cmd = if name == "sweetspot" {
        cmd.clone().after_help(None::<&str>)
    } else {
        cmd.clone()
    };
    clap_mangen::Man::new(page_cmd.name(leaked))
        .render(&mut buf)
        .unwrap();
    let mut page = String::from_utf8(buf).unwrap();
    page.push_str(EXIT_STATUS);
    out.push((format!("{name}.1"), page));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        walk(sub, format!("{name}-{}", sub.get_name()), out);
    }
}

#[test]
fn man_pages_are_current() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("man");
    let bless = std::env::var_os("SWEETSPOT_BLESS").is_some();
    let pages = pages();
    assert!(pages.len() >= 8, "sweetspot and its subcommands");
    let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
    for n in ["sweetspot-profile-export.1", "sweetspot-profile-apply.1"] {
        assert!(
            names.contains(&n),
            "nested subcommands have pages: {names:?}"
        );
    }
    let tune = &pages
        .iter()
        .find(|(n, _)| n == "sweetspot-tune.1")
        .unwrap()
        .1;
    assert!(tune.contains("\\-\\-db"), "global options on every page");
    assert!(
        tune.contains("sweetspot tune"),
        "the synopsis names the command as typed"
    );
    assert!(tune.contains("EXIT STATUS"));
    assert!(
        !pages.iter().any(|(n, _)| n.contains("__worker")),
        "the hidden worker has no page"
    );
    for (name, text) in &pages {
        let path = dir.join(name);
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, text).unwrap();
            continue;
        }
        let old = std::fs::read_to_string(&path).unwrap_or_else(|_| {
            panic!(
                "{} is missing: run SWEETSPOT_BLESS=1 cargo test --test man_pages",
                path.display()
            )
        });
        assert!(
            old == *text,
            "{} is out of date: run SWEETSPOT_BLESS=1 cargo test --test man_pages",
            path.display()
        );
    }
}

/// A positional that takes several values (`set`'s KNOB=VALUE) carries "..." in its page's
/// synopsis, as in `--help`'s usage: clap_mangen leaves it out, so such a command spells its
/// usage out (`override_usage`).
#[test]
fn a_repeated_positional_has_its_dots_in_the_synopsis() {
    fn check(cmd: &clap::Command, name: &str, pages: &[(String, String)], seen: &mut usize) {
        let page = pages.iter().find(|(n, _)| n == &format!("{name}.1"));
        for arg in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
            let many = arg.get_num_args().is_some_and(|n| n.max_values() > 1);
            if !many {
                continue;
            }
            *seen += 1;
            let value = arg.get_value_names().map_or_else(
                || arg.get_id().to_string(),
                |v| v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" "),
            );
            let synopsis = page
                .and_then(|(_, t)| t.lines().skip_while(|l| *l != ".SH SYNOPSIS").nth(1))
                .unwrap_or_default()
                .replace("\\fI", "")
                .replace("\\fR", "");
            assert!(
                synopsis.contains(&format!("<{value}>...")),
                "{name}: {synopsis}"
            );
        }
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            check(sub, &format!("{name}-{}", sub.get_name()), pages, seen);
        }
    }
    let mut top = sweetspot::cli::Cli::command().disable_help_subcommand(true);
    top.build();
    let pages = pages();
    let mut seen = 0;
    check(&top, "sweetspot", &pages, &mut seen);
    assert!(seen >= 1, "set's KNOB=VALUE is one");
}

//! The man pages under `man/` are generated from the command line's own definition (clap),
//! so they cannot drift from `--help`: this test renders them and compares. After changing a
//! flag or a help text, regenerate with `SWEETSPOT_BLESS=1 cargo test --test cli man_pages::` and
//! commit `man/`. They are in section 8 (system administration; the binary is
//! `/usr/sbin/sweetspot` in the Debian package, which installs them gzipped). Without the
//! package: `install -m644 man/*.8 /usr/local/share/man/man8/`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use clap::CommandFactory;
use std::path::PathBuf;

/// What every page ends with: the exit codes, from the text under its `--help` (`status`:
/// [`sweetspot::cli::EXIT_STATUS`], or the daemon's own): one `.TP` entry a code, a sentence,
/// `` `x` `` in bold.
fn exit_status(status: &str) -> String {
    let mut entries: Vec<(String, String)> = Vec::new();
    for line in status.lines().skip(1) {
        let text = line.trim();
        match text.split_once(' ') {
            Some((code, rest)) if code.parse::<u8>().is_ok() => {
                entries.push((code.to_string(), rest.trim().to_string()))
            }
            _ => {
                let last = entries.last_mut().expect("an entry before a continuation");
                last.1 = format!("{} {text}", last.1);
            }
        }
    }
    let mut out = String::from(".SH \"EXIT STATUS\"\n");
    for (code, text) in entries {
        let mut roff = String::new();
        for (i, part) in text.replace('-', "\\-").split('`').enumerate() {
            if i % 2 == 1 {
                roff.push_str(&format!("\\fB{part}\\fR"));
            } else {
                roff.push_str(part);
            }
        }
        let mut chars = roff.chars();
        let first = chars.next().map(|c| c.to_uppercase().collect::<String>());
        let roff = format!("{}{}.", first.unwrap_or_default(), chars.as_str());
        out.push_str(&format!(".TP\n\\fB{code}\\fR\n{roff}\n"));
    }
    out
}

/// (file name, rendered page) for `sweetspot` and each visible subcommand, nested ones
/// included (`sweetspot-tune.8`, `sweetspot-profile-export.8`). The command is built first,
/// as clap_mangen's own `generate_to` does, so every page lists the global options (`--db`,
/// `-v`, `-q`) and its synopsis names the command as typed (`sweetspot profile export`).
fn pages() -> Vec<(String, String)> {
    // The package version alone: `--version`'s git revision would make every commit a change.
    let mut top = sweetspot::cli::Cli::command()
        .disable_help_subcommand(true)
        .version(env!("CARGO_PKG_VERSION"));
    top.build();
    let mut out = Vec::new();
    walk(&top, "sweetspot".into(), &mut out);
    out
}

fn walk(cmd: &clap::Command, name: String, out: &mut Vec<(String, String)>) {
    // clap names are &'static str without its `string` feature; a test may leak a few.
    let leaked: &'static str = Box::leak(name.clone().into_boxed_str());
    let mut buf = Vec::new();
    // The exit codes end every --help (the daemon's its own; -h has them in a line); the
    // page has its own section for them, and the rest of a --help epilogue (the daemon's
    // signals and files) is its EXTRA section.
    let long = cmd.get_after_long_help().map(|h| h.to_string());
    let status = match &long {
        Some(h) if h.ends_with(sweetspot::cli::DAEMON_EXIT_STATUS) => {
            sweetspot::cli::DAEMON_EXIT_STATUS
        }
        _ => sweetspot::cli::EXIT_STATUS,
    }
    .to_string();
    let extra = long.and_then(|h| {
        let rest = h.strip_suffix(status.as_str()).unwrap_or(&h);
        let rest = rest.trim_end();
        (!rest.is_empty()).then(|| rest.to_string())
    });
    let page_cmd = cmd.clone().after_help(None::<&str>);
    let page_cmd = match extra {
        Some(e) => page_cmd.after_long_help(e),
        None => page_cmd.after_long_help(None::<&str>),
    };
    clap_mangen::Man::new(page_cmd.name(leaked))
        .section("8")
        .render(&mut buf)
        .unwrap();
    let mut page = String::from_utf8(buf).unwrap();
    // The EXTRA section is `--help`'s text, laid out by hand in two columns: no-fill, or
    // roff refills it and breaks mid-phrase ("... field) and the" / "old"). It is the
    // last section clap_mangen writes.
    if let Some(i) = page.find(".SH EXTRA\n") {
        page.insert_str(i + ".SH EXTRA\n".len(), ".nf\n");
        if !page.ends_with('\n') {
            page.push('\n');
        }
        page.push_str(".fi\n");
    }
    page.push_str(&exit_status(&status));
    out.push((format!("{name}.8"), page));
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
    for n in ["sweetspot-profile-export.8", "sweetspot-profile-apply.8"] {
        assert!(
            names.contains(&n),
            "nested subcommands have pages: {names:?}"
        );
    }
    let tune = &pages
        .iter()
        .find(|(n, _)| n == "sweetspot-tune.8")
        .unwrap()
        .1;
    assert!(tune.contains("\\-\\-db"), "global options on every page");
    assert!(
        tune.contains("sweetspot tune"),
        "the synopsis names the command as typed"
    );
    assert!(tune.contains("EXIT STATUS"));
    assert!(tune.contains(".TP\n\\fB130\\fR\n\\fBtune\\fR or \\fBbench\\fR interrupted"));
    // The daemon stopped by SIGTERM exits 0 (tests/cli/daemon_proc.rs), and its page says so.
    let daemon = &pages
        .iter()
        .find(|(n, _)| n == "sweetspot-daemon.8")
        .unwrap()
        .1;
    assert!(
        daemon.contains(".TP\n\\fB0\\fR\nStopped by SIGTERM or SIGINT"),
        "{daemon}"
    );
    assert!(!daemon.contains("\\fB130\\fR"), "{daemon}");
    assert_eq!(daemon.matches("EXIT STATUS").count(), 1, "{daemon}");
    // Its signals and files keep their lines (no-fill), each within 72 columns, so that
    // `man` at 80 (a 7-column indent) neither refills nor breaks them.
    let extra = daemon
        .split_once(".SH EXTRA\n.nf\n")
        .and_then(|(_, rest)| rest.split_once(".fi\n"))
        .map(|(e, _)| e)
        .unwrap_or_else(|| panic!("no no-fill EXTRA section: {daemon}"));
    assert!(
        extra.contains("(file,\n                   line, field) and the old one is kept;"),
        "{extra}"
    );
    for line in extra.lines() {
        let shown = line.replace("\\-", "-").replace("\\*(Aq", "'");
        assert!(
            shown.chars().count() <= 72,
            "too wide for man at 80: {shown:?}"
        );
    }
    assert!(
        !pages.iter().any(|(n, _)| n.contains("__worker")),
        "the hidden worker has no page"
    );
    assert!(
        tune.starts_with(".ie") && tune.contains("\n.TH sweetspot-tune 8 "),
        "section 8 (system administration): {}",
        &tune[..200]
    );
    // No page is left behind by a renamed command or section (the pages were in section 1).
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        if names.contains(&file.as_str()) {
            continue;
        }
        if bless {
            std::fs::remove_file(&path).unwrap();
        } else {
            panic!(
                "{file} in man/ is no page of sweetspot's: run SWEETSPOT_BLESS=1 cargo test --test cli man_pages::"
            );
        }
    }
    for (name, text) in &pages {
        let path = dir.join(name);
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, text).unwrap();
            continue;
        }
        let old = std::fs::read_to_string(&path).unwrap_or_else(|_| {
            panic!(
                "{} is missing: run SWEETSPOT_BLESS=1 cargo test --test cli man_pages::",
                path.display()
            )
        });
        assert!(
            old == *text,
            "{} is out of date: run SWEETSPOT_BLESS=1 cargo test --test cli man_pages::",
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
        let page = pages.iter().find(|(n, _)| n == &format!("{name}.8"));
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

//! The man pages under `man/` are generated from the command line's own definition (clap),
//! so they cannot drift from `--help`: this test renders them and compares. After changing a
//! flag or a help text, regenerate with `SWEETSPOT_BLESS=1 cargo test --test man_pages` and
//! commit `man/`. Install: `install -m644 man/*.1 /usr/local/share/man/man1/`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use clap::CommandFactory;
use std::path::PathBuf;

/// (file name, rendered page) for `sweetspot` and each visible subcommand (`sweetspot-tune.1`).
fn pages() -> Vec<(String, String)> {
    let top = sweetspot::cli::Cli::command();
    let mut out = Vec::new();
    let mut render = |name: String, cmd: clap::Command| {
        let mut buf = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut buf).unwrap();
        out.push((format!("{name}.1"), String::from_utf8(buf).unwrap()));
    };
    render("sweetspot".into(), top.clone());
    for sub in top.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("sweetspot-{}", sub.get_name());
        // clap names are &'static str without its `string` feature; a test may leak a few.
        let leaked: &'static str = Box::leak(name.clone().into_boxed_str());
        let cmd = sub.clone().name(leaked);
        render(name, cmd);
    }
    out
}

#[test]
fn man_pages_are_current() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("man");
    let bless = std::env::var_os("SWEETSPOT_BLESS").is_some();
    let pages = pages();
    assert!(pages.len() >= 8, "sweetspot and its subcommands");
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

//! The shell completion scripts under `completions/` are `sweetspot completions SHELL`'s output
//! (clap_complete, from the command line's own definition), which the Debian package installs;
//! this test runs the command and compares. After changing a command or a flag, regenerate
//! with `SWEETSPOT_BLESS=1 cargo test --test cli completions::` and commit `completions/`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

/// (shell, file under completions/, where the Debian package puts it).
const SCRIPTS: [(&str, &str); 3] = [
    ("bash", "sweetspot.bash"),
    ("zsh", "_sweetspot"),
    ("fish", "sweetspot.fish"),
];

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("completions")
}

fn completions(shell: &str) -> String {
    let out = Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
        .args(["completions", shell])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{shell}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn completion_scripts_are_current() {
    let bless = std::env::var_os("SWEETSPOT_BLESS").is_some();
    for (shell, file) in SCRIPTS {
        let text = completions(shell);
        assert!(text.contains("restore"), "{shell}: {text}");
        assert!(text.contains("sysfs-root"), "{shell}: global options");
        assert!(!text.contains("__worker"), "{shell}: the hidden worker");
        let path = dir().join(file);
        if bless {
            std::fs::create_dir_all(dir()).unwrap();
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        let old = std::fs::read_to_string(&path).unwrap_or_else(|_| {
            panic!(
                "{} is missing: run SWEETSPOT_BLESS=1 cargo test --test cli completions::",
                path.display()
            )
        });
        assert!(
            old == text,
            "{} is out of date: run SWEETSPOT_BLESS=1 cargo test --test cli completions::",
            path.display()
        );
    }
}

/// The bash script, sourced as bash-completion would, offers `tune` for `sweetspot tu<TAB>`
/// and `--scratch` for `sweetspot tune --scr<TAB>` (scripts/check-deb does the same with the
/// installed file).
#[test]
fn bash_completes_a_subcommand_and_its_flag() {
    let script = format!(
        r#"source '{}'
complete -p sweetspot
COMP_WORDS=(sweetspot tu); COMP_CWORD=1; COMP_LINE='sweetspot tu'; COMP_POINT=${{#COMP_LINE}}
_sweetspot sweetspot tu sweetspot
echo "1: ${{COMPREPLY[*]}}"
COMP_WORDS=(sweetspot tune --scr); COMP_CWORD=2; COMP_LINE='sweetspot tune --scr'; COMP_POINT=${{#COMP_LINE}}
_sweetspot sweetspot --scr tune
echo "2: ${{COMPREPLY[*]}}"
"#,
        dir().join("sweetspot.bash").display()
    );
    let out = Command::new("bash")
        .args(["--norc", "-c", &script])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("-F _sweetspot sweetspot"), "{stdout}");
    assert!(stdout.lines().any(|l| l == "1: tune"), "{stdout}");
    assert!(stdout.lines().any(|l| l == "2: --scratch"), "{stdout}");
}

/// An unknown shell is bad usage (exit 2), naming the ones there are.
#[test]
fn an_unknown_shell_is_refused() {
    let out = Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tcsh") && err.contains("bash"), "{err}");
}

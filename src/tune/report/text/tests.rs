//! Tests of the report's first screen and its wrapping.

use super::*;

#[test]
fn improvement_below_one_reads_as_worse_with_the_inverted_ci() {
    let better = Improvement {
        ratio: 2.2,
        ci95: [2.05, 2.37],
    };
    assert_eq!(improvement_text(&better), "2.20× better, 95% CI 2.05–2.37");
    // Seen in a real `tune --scratch`: 1.63 → 2.38 was printed as "0.70× better".
    let worse = Improvement {
        ratio: 0.70,
        ci95: [0.26, 1.92],
    };
    assert_eq!(improvement_text(&worse), "1.43× worse, 95% CI 0.52–3.85");
    let same = Improvement {
        ratio: 1.004,
        ci95: [0.97, 1.04],
    };
    assert_eq!(improvement_text(&same), "no change, 95% CI 0.97–1.04");
}

#[test]
fn durations_read_as_a_person_says_them() {
    assert_eq!(duration(0.42), "0.4 s");
    assert_eq!(duration(52.4), "52 s");
    assert_eq!(duration(232.0), "3 min 52 s");
    assert_eq!(duration(3725.0), "1 h 02 min");
    assert_eq!(duration(f64::NAN), "?");
}

#[test]
fn long_prose_wraps_under_its_label_at_100_columns() {
    let words = "word ".repeat(60);
    let s = answer("how sure", words.trim());
    let lines: Vec<&str> = s.lines().collect();
    assert!(lines.len() >= 3, "{s}");
    assert!(lines.iter().all(|l| l.chars().count() <= WIDTH), "{s}");
    assert!(lines[0].starts_with("  how sure   word"), "{s}");
    assert!(lines[1].starts_with("             word"), "{s}");
}

#[test]
fn no_final_check_is_said_in_plain_words() {
    let s = no_check(
        "keep the default: no significant improvement (the default ranked best in the screen); \
         no_load may depend on the setting (the finalists' -56%, -58% vs the default's, more \
         than 1.28 standard errors)",
    );
    assert_eq!(
        s,
        "not tested: no final check ran (the default did best among the settings measured, so \
         there was nothing to check against it)"
    );
    assert!(!s.contains("standard errors"));
    assert_eq!(
        no_check("keep the default: no budget left for the final check"),
        "not tested: no final check ran (the budget ran out before it)"
    );
}

#[test]
fn a_command_in_backticks_is_never_broken() {
    let cmd = "`sweetspot --db /tmp/a/s.db --sysfs-root /tmp/a/sys --procfs-root /tmp/a/proc \
               restore sdz`";
    let s = answer(
        "undo",
        &format!("{cmd} puts it back (the sweet spot stays applied)"),
    );
    assert!(s.contains(cmd), "{s}");
    assert!(s.lines().count() >= 2, "{s}");
}

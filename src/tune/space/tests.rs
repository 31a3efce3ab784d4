//! Tests of [`super`].

use super::*;
use crate::tune::policy;

fn knob(name: &str, min: i64, max: i64, default: i64, scheds: Option<&[&str]>) -> SpaceKnob {
    SpaceKnob {
        name: name.into(),
        domain: Domain::Int { min, max },
        default: KnobValue::Int(default),
        schedulers: scheds.map(|s| s.iter().map(|x| x.to_string()).collect()),
    }
}

fn sched(default: &str, offered: &[&str]) -> SpaceKnob {
    SpaceKnob {
        name: "scheduler".into(),
        domain: Domain::Choice(offered.iter().map(|s| s.to_string()).collect()),
        default: KnobValue::Name(default.into()),
        schedulers: None,
    }
}

#[test]
fn log2_grid_has_bounds_powers_and_default() {
    assert_eq!(
        log2_grid(1, 256, Some(32)),
        vec![1, 2, 4, 8, 16, 32, 64, 128, 256]
    );
    assert_eq!(log2_grid(0, 10, Some(3)), vec![0, 1, 2, 3, 4, 8, 10]);
    assert_eq!(log2_grid(16, 100, None), vec![16, 32, 64, 100]);
}

#[test]
fn scheduler_children_only_under_their_scheduler() {
    let q = policy::builtin("desktop").unwrap().unwrap();
    let knobs = vec![
        sched("mq-deadline", &["none", "mq-deadline", "bfq", "kyber"]),
        knob("fifo_batch", 1, 256, 16, Some(&["mq-deadline", "deadline"])),
        knob("slice_idle", 0, 4294, 8, Some(&["bfq", "cfq"])),
    ];
    let s = Space::build(&knobs, &q, None).unwrap();
    // none + kyber: 1 each; mq-deadline: 9 fifo_batch values; bfq: slice_idle 0..16 grid.
    let slice = log2_grid(0, 16, Some(8)).len();
    assert_eq!(s.len(), 1 + 9 + slice + 1);
    assert!(s.skipped.contains(&"quantum".to_string()));
    for p in &s.points {
        let sch = p["scheduler"].as_name().unwrap();
        assert_eq!(p.contains_key("fifo_batch"), sch == "mq-deadline", "{p:?}");
        assert_eq!(p.contains_key("slice_idle"), sch == "bfq", "{p:?}");
    }
    // One group per scheduler, in grid order: none, mq-deadline ×9, bfq ×slice, kyber.
    let g = s.scheduler_groups();
    assert_eq!((g[0], g[1], g[9], g[10], g[s.len() - 1]), (0, 1, 1, 2, 3));
    let d = &s.points[s.default];
    assert_eq!(d["scheduler"], KnobValue::from("mq-deadline"));
    assert_eq!(d["fifo_batch"], KnobValue::Int(16));
    assert!(
        s.coords
            .iter()
            .all(|c| c.iter().all(|x| (0.0..=1.0).contains(x)))
    );
}

#[test]
fn a_scheduler_value_the_device_lacks_is_dropped_and_said() {
    let p = parsed("[knobs.scheduler]\nvalues = [\"cfq\", \"bfq\"]\n[knobs.fifo_batch]\n");
    let knobs = vec![
        sched("none", &["none", "mq-deadline", "bfq"]),
        knob("fifo_batch", 1, 256, 16, Some(&["mq-deadline"])),
    ];
    let s = Space::build(&knobs, &p, None).unwrap();
    assert_eq!(
        s.dropped_values,
        vec![
            "scheduler value 'cfq' dropped: not offered here (offered: none, mq-deadline, \
             bfq)"
                .to_string()
        ]
    );
    // none (the default) and bfq.
    assert_eq!(s.len(), 2);
}

#[test]
fn a_scheduler_value_no_kernel_has_is_a_typo_unless_the_device_offers_it() {
    let p = parsed("[knobs.scheduler]\nvalues = [\"bfq\", \"kyberr\"]\n");
    let knobs = vec![sched("none", &["none", "mq-deadline", "bfq"])];
    match Space::build(&knobs, &p, None).unwrap_err() {
        Error::BadFile {
            line, field, msg, ..
        } => {
            assert_eq!((line, field.as_str()), (Some(7), "knobs.scheduler.values"));
            assert!(
                msg.starts_with(
                    "unknown scheduler 'kyberr' (did you mean 'kyber'?): not an \
                     I/O scheduler of the kernel (none, mq-deadline, bfq, kyber, noop, \
                     deadline, cfq, anticipatory), nor one this device offers (none, \
                     mq-deadline, bfq)"
                ),
                "{msg}"
            );
        }
        e => panic!("{e:?}"),
    }
    // An out-of-tree scheduler the device offers is a value like any other: none (the
    // default), bfq and kyberr.
    let knobs = vec![sched("none", &["none", "bfq", "kyberr"])];
    assert_eq!(Space::build(&knobs, &p, None).unwrap().len(), 3);
}

#[test]
fn host_managed_zoned_gets_only_mq_deadline() {
    let q = policy::builtin("quick").unwrap().unwrap();
    let knobs = vec![
        sched("mq-deadline", &["none", "mq-deadline", "bfq"]),
        knob("fifo_batch", 1, 256, 16, Some(&["mq-deadline"])),
    ];
    let s = Space::build(&knobs, &q, Some("host-managed")).unwrap();
    assert_eq!(s.len(), 9);
    assert!(
        s.points
            .iter()
            .all(|p| p["scheduler"].as_name() == Some("mq-deadline"))
    );
}

#[test]
fn no_policy_knob_on_the_device_is_bad_input() {
    let q = policy::builtin("quick").unwrap().unwrap();
    let e = Space::build(&[knob("read_ahead_kb", 0, 9, 1, None)], &q, None).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.to_string(),
        "policies/quick.toml: knobs: none of policy 'quick's knobs exists on this device: \
         fifo_batch, scheduler (it offers: read_ahead_kb)"
    );
}

fn parsed(knobs: &str) -> Policy {
    let text = format!(
        "loads = [\"no_load\", \"io_load\"]\nbudget = 12\n[objective]\n\
         minimize = \"ratio\"\nloads = [\"io_load\"]\n{knobs}"
    );
    policy::parse(&text, std::path::Path::new("dir/p.toml"), "p", "p").unwrap()
}

#[test]
fn an_unknown_knob_name_is_an_error_with_file_line_and_field() {
    let p = parsed("[knobs.fifo_batch]\n[knobs.fifo_btach]\nmax = 64\n");
    let fb = [knob("fifo_batch", 1, 256, 32, None)];
    let e = Space::build(&fb, &p, None).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.to_string(),
        "dir/p.toml:7: knobs.fifo_btach: unknown knob 'fifo_btach' (did you mean \
         'fifo_batch'?): not a knob sweetspot knows, nor one this device offers (fifo_batch)"
    );
    // Far from every name: no hint.
    let p = parsed("[knobs.fifo_batch]\n[knobs.zzz]\n");
    let e = Space::build(&fb, &p, None).unwrap_err().to_string();
    assert!(
        e.starts_with("dir/p.toml:7: knobs.zzz: unknown knob 'zzz': "),
        "{e}"
    );
}

/// A built-in policy is written for every device: on a narrower domain (a surface's
/// fifo_batch 4–16) its bounds are clamped, not refused; a file's the same bounds are
/// refused (above), and a built-in's that miss the domain entirely too.
#[test]
fn a_builtin_policys_bounds_are_clamped_to_a_narrower_domain() {
    let text = "loads = [\"no_load\", \"io_load\"]\nbudget = 12\n[objective]\n\
                minimize = \"ratio\"\nloads = [\"io_load\"]\n[knobs.fifo_batch]\n";
    let path = std::path::Path::new("policies/b.toml");
    let builtin =
        |knobs: &str| policy::parse(&format!("{text}{knobs}"), path, "b", "builtin:b").unwrap();
    let fb = [knob("fifo_batch", 4, 16, 16, None)];
    let s = Space::build(&fb, &builtin("min = 1\nmax = 256\n"), None).unwrap();
    let grid: Vec<_> = s.points.iter().map(|p| p["fifo_batch"].clone()).collect();
    assert_eq!(grid, [4, 8, 16].map(KnobValue::Int));
    let s = Space::build(&fb, &builtin("values = [1, 8, 256]\n"), None).unwrap();
    let grid: Vec<_> = s.points.iter().map(|p| p["fifo_batch"].clone()).collect();
    assert_eq!(grid, [8, 16].map(KnobValue::Int));
    let e = Space::build(&fb, &builtin("min = 64\nmax = 256\n"), None).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.to_string()
            .starts_with("policies/b.toml:7: knobs.fifo_batch.min: 64 is outside"),
        "{e}"
    );
    let file = parsed("[knobs.fifo_batch]\nmin = 1\nmax = 256\n");
    assert!(Space::build(&fb, &file, None).is_err());
}

#[test]
fn policy_bounds_outside_the_safe_domain_name_file_line_and_field() {
    // The catalogue's fifo_batch domain (a real device), as space_of gives it.
    let fb = [knob("fifo_batch", 1, 1024, 16, None)];
    let p = parsed("[knobs.fifo_batch]\nmin = 1\nmax = 99999999\n");
    let e = Space::build(&fb, &p, None).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.to_string(),
        "dir/p.toml:8: knobs.fifo_batch.max: 99999999 is outside the safe domain of \
         fifo_batch here, 1–1024"
    );
    let p = parsed("[knobs.fifo_batch]\nmin = 0\n");
    let e = Space::build(&fb, &p, None).unwrap_err().to_string();
    assert!(
        e.starts_with("dir/p.toml:7: knobs.fifo_batch.min: 0 is outside"),
        "{e}"
    );
    let p = parsed("[knobs.fifo_batch]\nvalues = [4, \"bfq\"]\n");
    let e = Space::build(&fb, &p, None).unwrap_err().to_string();
    assert_eq!(
        e,
        "dir/p.toml:7: knobs.fifo_batch.values: 'bfq' is not an integer (fifo_batch is an \
         integer knob)"
    );
    // Inside the domain: fine, and the default joins the grid even outside the range.
    let p = parsed("[knobs.fifo_batch]\nmin = 32\nmax = 1024\n");
    let s = Space::build(&fb, &p, None).unwrap();
    assert_eq!(s.points[s.default]["fifo_batch"], KnobValue::Int(16));
    assert_eq!(s.len(), 7);
}

#[test]
fn a_known_knob_the_device_lacks_is_skipped_and_an_offered_unknown_one_used() {
    let p = parsed("[knobs.fifo_batch]\n[knobs.quantum]\n[knobs.new_iosched_knob]\n");
    let knobs = [
        knob("fifo_batch", 1, 256, 32, None),
        // An iosched file the catalogue does not know yet is still offered (discover.rs).
        knob("new_iosched_knob", 0, 4, 1, None),
    ];
    let s = Space::build(&knobs, &p, None).unwrap();
    assert_eq!(s.skipped, vec!["quantum".to_string()]);
    assert_eq!(s.knobs, vec!["fifo_batch", "new_iosched_knob"]);
    let p = parsed("[knobs.quantum]\n[knobs.slice_idle]\n");
    let e = Space::build(&knobs, &p, None).unwrap_err().to_string();
    assert_eq!(
        e,
        "dir/p.toml: knobs: none of policy 'p's knobs exists on this device: quantum, \
         slice_idle (it offers: fifo_batch, new_iosched_knob)"
    );
}

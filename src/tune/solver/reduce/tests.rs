//! Tests of [`super`].

use super::*;
use crate::bench::Testbed;
use crate::bench::sim::SimDevice;
use crate::tune::evaluator::NoRecord;
use crate::tune::space::Space;
use crate::tune::{Options, TuneOutcome};
use std::path::Path;

const SURFACE: &str = "data/surfaces/one-of-three-knobs.toml";

/// The shoot-out's policy on the one-of-three surface: its three knobs, 32 trials (64 runs),
/// two check pairs, alpha 0.05, min_effect 3%.
fn policy() -> crate::tune::policy::Policy {
    let text = "loads = [\"no_load\", \"io_load\"]\nbudget = 32\ncheck_pairs = 2\n\
                [objective]\nminimize = \"ratio\"\nloads = [\"io_load\"]\n\
                [knobs.fifo_batch]\n[knobs.read_ahead_kb]\n[knobs.wbt_lat_usec]\n";
    crate::tune::policy::parse(text, Path::new("p.toml"), "p", "p").unwrap()
}

fn tune(seed: u64, reserve: bool) -> (TuneOutcome, Space) {
    let mut sim = SimDevice::open(Path::new(SURFACE), seed).unwrap();
    let pol = policy();
    let space = Space::build(&sim.space(), &pol, None).unwrap();
    let out = crate::tune::optimise(
        &mut sim,
        &space,
        &pol,
        &mut NoRecord,
        Options {
            seed,
            reduce_reserve: reserve,
            ..Default::default()
        },
    )
    .unwrap();
    (out, space)
}

fn setting(pairs: &[(&str, KnobValue)]) -> Setting {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn label(space: &Space, p: usize) -> String {
    crate::knob::setting_label(&space.points[p])
}

/// Seed 5: the check's best changes all three knobs (8, 256, 1024). With the step's reserve
/// it ends with wbt_lat_usec alone, each test at 0.05 / 3; the knob that carries the effect
/// went first (the largest change: a whole grid range), and without it the effect was gone.
#[test]
fn with_the_reserve_a_best_of_three_knobs_keeps_only_the_carrying_one() {
    let (out, space) = tune(5, true);
    let v = out.verdict.unwrap();
    assert!(v.significant, "{v:?}");
    assert_eq!(
        label(&space, v.best),
        "fifo_batch=16 read_ahead_kb=128 wbt_lat_usec=1024"
    );
    let found: Vec<(&str, KnobFinding)> = v
        .knobs
        .iter()
        .map(|k| (k.knob.as_str(), k.finding))
        .collect();
    assert_eq!(
        found,
        [
            ("wbt_lat_usec", KnobFinding::Carries),
            ("fifo_batch", KnobFinding::LeftAtDefault),
            ("read_ahead_kb", KnobFinding::LeftAtDefault),
        ]
    );
    for k in &v.knobs {
        // Bonferroni over the m = 3 knobs the check's best changed.
        assert!((k.level - 0.05 / 3.0).abs() < 1e-15, "{k:?}");
        assert_eq!(k.pairs, Some(2), "{k:?}");
    }
    let (wbt, fb) = (&v.knobs[0], &v.knobs[1]);
    assert_eq!(
        (wbt.from.clone(), wbt.to.clone()),
        (Some(KnobValue::Int(4096)), Some(KnobValue::Int(1024)))
    );
    assert_eq!(
        (fb.from.clone(), fb.to.clone()),
        (Some(KnobValue::Int(16)), Some(KnobValue::Int(8)))
    );
    assert!(wbt.p_value.unwrap() > 0.05 / 3.0, "{wbt:?}");
    assert!(wbt.improvement.unwrap().0 < 1.2, "{wbt:?}");
    for k in &v.knobs[1..] {
        assert!(k.p_value.unwrap() < 0.05 / 3.0, "{k:?}");
        assert!(k.improvement.unwrap().0 > 1.8, "{k:?}");
    }
    // The verdict's figures are the answer's own: its test's, the last one.
    assert_eq!(v.improvement, v.knobs[2].improvement);
    assert_eq!(v.p_value, v.knobs[2].p_value);
    assert!(
        v.reason.ends_with(
            "of the 3 knobs the check's best changed, wbt_lat_usec carries the effect; \
             fifo_batch, read_ahead_kb left at the default (each tested without it at alpha \
             0.05 / 3 = 0.0167)"
        ),
        "{}",
        v.reason
    );
    // The step stays inside the budget: 32 trials of 2 runs.
    assert!(out.runs <= 64, "{}", out.runs);
}

/// The same seed without the reserve: the check takes every run the search left, so no knob
/// is tested, each is kept and said so, and the answer is the check's best unchanged.
#[test]
fn without_budget_left_every_changed_knob_is_kept_and_said_untested() {
    let (out, space) = tune(5, false);
    let v = out.verdict.unwrap();
    assert!(v.significant, "{v:?}");
    assert_eq!(
        label(&space, v.best),
        "fifo_batch=8 read_ahead_kb=256 wbt_lat_usec=1024"
    );
    assert_eq!(v.knobs.len(), 3);
    for k in &v.knobs {
        assert_eq!(k.finding, KnobFinding::NotTested, "{k:?}");
        assert_eq!(k.why, "not tested: no budget left");
        assert_eq!((k.p_value, k.pairs), (None, None));
    }
    assert!(
        v.reason.ends_with(
            "of the 3 knobs the check's best changed, wbt_lat_usec, fifo_batch, read_ahead_kb \
             kept untested"
        ),
        "{}",
        v.reason
    );
}

/// A best that changed one knob runs no step: of seeds 21..=30, no tune has a single knob
/// record, and some significant ones answer a best of one knob changed from the default
/// (16, 128, 4096) with none.
#[test]
fn a_best_that_changed_one_knob_is_not_reduced() {
    let default = "fifo_batch=16 read_ahead_kb=128 wbt_lat_usec=4096";
    let changed = |label: &str| {
        label
            .split(' ')
            .zip(default.split(' '))
            .filter(|(a, b)| a != b)
            .count()
    };
    let mut one = 0;
    for seed in 21..=30 {
        let (out, space) = tune(seed, true);
        let v = out.verdict.unwrap();
        // The step, when it ran, has a record of each knob the check's best changed.
        assert!(
            v.knobs.is_empty() || v.knobs.len() >= 2,
            "seed {seed}: {v:?}"
        );
        if v.significant && v.knobs.is_empty() && changed(&label(&space, v.best)) == 1 {
            one += 1;
        }
    }
    assert!(one > 0, "no seed found a best of one knob");
}

/// The report says which knobs carry the effect and which were left at their default, with
/// figures; its JSON lists each.
#[test]
fn the_report_names_the_carrying_knob_and_those_left_at_their_default() {
    let (out, space) = tune(5, true);
    let target = crate::bench::TargetInfo {
        label: "sim:one-of-three-knobs".into(),
        identity: "sim:one-of-three-knobs".into(),
        kernel: "sim".into(),
    };
    let r = crate::tune::report::build(&target, &policy(), &space, &out, None, false);
    let t = crate::tune::report::text(&r);
    assert!(
        t.contains("\n  kept       wbt_lat_usec 4096 → 1024\n"),
        "{t}"
    );
    assert!(
        t.contains(
            "\n  knobs      wbt_lat_usec carries the effect; fifo_batch, read_ahead_kb not \
             needed: left at their\n             default\n"
        ),
        "{t}"
    );
    assert!(
        t.contains(
            "\n    fifo_batch       left at its default 16 (not 8): without it the effect held; its \
             test: 1.89×\n                     better, 95% CI 1.70–2.12, p = 2.3e-7, 2 pairs\n"
        ),
        "{t}"
    );
    let j = serde_json::to_value(&r).unwrap();
    assert_eq!(j["knobs"][0]["knob"], "wbt_lat_usec");
    assert_eq!(j["knobs"][0]["finding"], "carries");
    assert_eq!(j["knobs"][1]["finding"], "left_at_default");
    assert_eq!(j["knobs"][1]["from"], 16);
    assert_eq!(j["knobs"][1]["to"], 8);
    assert_eq!(j["knobs"][1]["pairs"], 2);
    assert!(
        j["knobs"][1]["improvement"]["ratio"].as_f64().unwrap() > 1.8,
        "{j}"
    );
    assert_eq!(j["best"]["fifo_batch"], 16);
}

#[test]
fn a_scheduler_goes_back_with_the_knobs_only_it_has() {
    let (i, n) = (KnobValue::Int, |s: &str| KnobValue::Name(s.into()));
    let default = setting(&[
        ("scheduler", n("mq-deadline")),
        ("fifo_batch", i(16)),
        ("wbt_lat_usec", i(75000)),
    ]);
    let best = setting(&[
        ("scheduler", n("bfq")),
        ("slice_idle", i(0)),
        ("wbt_lat_usec", i(2000)),
    ]);
    // slice_idle exists only under bfq, fifo_batch only under mq-deadline: neither counts.
    assert_eq!(changed(&best, &default), ["scheduler", "wbt_lat_usec"]);
    assert_eq!(
        revert(&best, &default, "scheduler"),
        setting(&[
            ("scheduler", n("mq-deadline")),
            ("fifo_batch", i(16)),
            ("wbt_lat_usec", i(2000)),
        ])
    );
    assert_eq!(
        revert(&best, &default, "wbt_lat_usec"),
        setting(&[
            ("scheduler", n("bfq")),
            ("slice_idle", i(0)),
            ("wbt_lat_usec", i(75000)),
        ])
    );
}

#[test]
fn largest_first_is_the_distance_in_grid_coordinates_then_the_name() {
    let sim = SimDevice::open(Path::new(SURFACE), 1).unwrap();
    let space = Space::build(&sim.space(), &policy(), None).unwrap();
    let cfg = crate::tune::config(&policy(), None, 1).unwrap();
    let s = BayesOpt::new(cfg, space.coords.clone(), space.default)
        .with_settings(space.points.clone(), space.knobs.clone());
    let at = |fb: i64, ra: i64, wbt: i64| {
        space
            .points
            .iter()
            .position(|p| {
                p["fifo_batch"] == KnobValue::Int(fb)
                    && p["read_ahead_kb"] == KnobValue::Int(ra)
                    && p["wbt_lat_usec"] == KnobValue::Int(wbt)
            })
            .unwrap()
    };
    // wbt_lat_usec 4096 → 1024 is the whole range (1.0); the others half of it (0.5 each),
    // then by name.
    assert_eq!(
        s.order(at(32, 256, 1024)),
        ["wbt_lat_usec", "fifo_batch", "read_ahead_kb"]
    );
    // wbt_lat_usec 4096 → 2048 is half the range as well: names decide.
    assert_eq!(
        s.order(at(8, 64, 2048)),
        ["fifo_batch", "read_ahead_kb", "wbt_lat_usec"]
    );
}

#[test]
fn the_summary_says_what_carries_what_was_left_and_what_was_not_tested() {
    let rec = |knob: &str, finding, pairs| KnobRecord {
        knob: knob.into(),
        from: None,
        to: None,
        finding,
        why: String::new(),
        improvement: None,
        p_value: None,
        pairs,
        level: 0.025,
    };
    let r = [
        rec("wbt_lat_usec", KnobFinding::Carries, Some(3)),
        rec("scheduler", KnobFinding::Carries, Some(3)),
        rec("fifo_batch", KnobFinding::LeftAtDefault, Some(3)),
        rec("read_ahead_kb", KnobFinding::NotTested, None),
    ];
    assert_eq!(
        summary(&r, 4, 0.05),
        "of the 4 knobs the check's best changed, wbt_lat_usec, scheduler carry the effect; \
         fifo_batch left at the default; read_ahead_kb kept untested (each tested without it \
         at alpha 0.05 / 4 = 0.0125)"
    );
}

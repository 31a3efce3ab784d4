//! `sweetspot plot`: the SVG of a `--sim` tune read back as XML, its points counted and its
//! marks placed against what the store holds (`history --json`), the heat map of a two-knob
//! tune, and the refusals (exit 2).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use roxmltree::{Document, Node};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn path(rel: &str) -> String {
    root().join(rel).display().to_string()
}

/// Runs a `--sim` tune with --json on `db`; its report.
fn tune(db: &Path, args: &[&str]) -> Value {
    let mut a = vec!["tune"];
    a.extend_from_slice(args);
    a.push("--json");
    serde_json::from_slice(&common::ok_stdout(common::sweetspot(db, &a))).unwrap()
}

/// `sweetspot plot <args> --out -`: the SVG text.
fn plot(db: &Path, what: &str) -> String {
    String::from_utf8(common::ok_stdout(common::sweetspot(
        db,
        &["plot", what, "--out", "-"],
    )))
    .unwrap()
}

/// The nested `<svg>` panel with this id.
fn panel<'a>(doc: &'a Document, id: &str) -> Node<'a, 'a> {
    doc.descendants()
        .find(|n| n.has_tag_name("svg") && n.attribute("id") == Some(id))
        .unwrap_or_else(|| panic!("no panel {id}"))
}

fn num(n: &Node, attr: &str) -> f64 {
    n.attribute(attr).unwrap().parse().unwrap()
}

fn circles<'a>(p: Node<'a, 'a>, r: &str) -> Vec<Node<'a, 'a>> {
    p.descendants()
        .filter(|n| n.has_tag_name("circle") && n.attribute("r") == Some(r))
        .collect()
}

/// The panel's tick labels with `anchor` (`middle`: x ticks, `end`: y ticks) as (text, x, y).
fn ticks(p: Node, anchor: &str) -> Vec<(String, f64, f64)> {
    p.descendants()
        .filter(|n| n.has_tag_name("text") && n.attribute("text-anchor") == Some(anchor))
        .filter(|n| n.attribute("transform").is_none())
        .map(|n| {
            (
                n.text().unwrap_or("").trim().to_string(),
                num(&n, "x"),
                num(&n, "y"),
            )
        })
        .collect()
}

/// The pixel y of value `v` on the panel's y axis, from its numeric tick labels (linear).
fn y_of(p: Node, v: f64) -> f64 {
    let t: Vec<(f64, f64)> = ticks(p, "end")
        .into_iter()
        .filter_map(|(s, _, y)| Some((s.parse::<f64>().ok()?, y)))
        .collect();
    assert!(t.len() >= 2, "y ticks: {t:?}");
    let (a, b) = (t.first().unwrap(), t.last().unwrap());
    a.1 + (v - a.0) * (b.1 - a.1) / (b.0 - a.0)
}

/// The stored trials of tune `id` (`history --json`), finished ones only.
fn trials_of(db: &Path, id: i64) -> Vec<Value> {
    let h: Value = serde_json::from_slice(&common::ok_stdout(common::sweetspot(
        db,
        &["history", "--json"],
    )))
    .unwrap();
    h["trials"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["tune_id"] == id && !t["finished_at"].is_null())
        .cloned()
        .collect()
}

/// A load's mean Time in a stored trial, if it ran.
fn time(t: &Value, load: &str) -> Option<f64> {
    t["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["load"] == load)
        .and_then(|f| f["time_s"].as_f64())
}

/// Each trial's io_load Ratio as the report reads it: ÷ its own no_load, or (loaded runs only)
/// ÷ the mean of every no_load run of the tune.
fn ratios(trials: &[Value]) -> Vec<(i64, Option<f64>)> {
    let (mut sum, mut n) = (0.0, 0.0);
    for t in trials {
        for f in t["figures"].as_array().unwrap() {
            if f["load"] == "no_load" {
                let runs = f["runs"].as_f64().unwrap();
                sum += f["time_s"].as_f64().unwrap() * runs;
                n += runs;
            }
        }
    }
    let pooled = sum / n;
    trials
        .iter()
        .map(|t| {
            let fb = t["setting"]["fifo_batch"].as_i64().unwrap();
            let r = time(t, "io_load").map(|io| io / time(t, "no_load").unwrap_or(pooled));
            (fb, r)
        })
        .collect()
}

#[test]
fn a_sim_tunes_plot_has_every_trial_and_rings_the_stored_sweet_spot_at_its_mean() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let rep = tune(
        &db,
        &[
            "--sim",
            &path("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml"),
            "--seed",
            "7",
        ],
    );
    let id = rep["tune_id"].as_i64().unwrap();
    assert_eq!(rep["significant"], true, "{rep}");
    let spot = rep["best"]["fifo_batch"].as_i64().unwrap();
    let svg = plot(&db, &id.to_string());
    let doc = Document::parse(&svg).unwrap();

    let trials = trials_of(&db, id);
    let r = ratios(&trials);
    let with_value = r.iter().filter(|x| x.1.is_some()).count();
    assert!(with_value >= 10 && with_value < trials.len(), "{r:?}");

    // The response: one point per trial with a Ratio, the sweet spot ringed at its value's
    // tick and at the mean Ratio of its trials.
    let resp = panel(&doc, "response-fifo_batch");
    assert_eq!(circles(resp, "3").len(), with_value);
    let ring: Vec<_> = circles(resp, "10")
        .into_iter()
        .filter(|c| c.attribute("stroke") == Some("#D62728"))
        .collect();
    assert_eq!(ring.len(), 1, "one sweet spot ring");
    let xt = ticks(resp, "middle");
    let tick = xt
        .iter()
        .find(|t| t.0 == spot.to_string())
        .unwrap_or_else(|| panic!("no x tick {spot}: {xt:?}"));
    assert!((num(&ring[0], "cx") - tick.1).abs() <= 1.5, "{xt:?}");
    let at: Vec<f64> = r
        .iter()
        .filter(|x| x.0 == spot)
        .filter_map(|x| x.1)
        .collect();
    let mean = at.iter().sum::<f64>() / at.len() as f64;
    assert!(
        (num(&ring[0], "cy") - y_of(resp, mean)).abs() <= 2.0,
        "ring at y {} for mean {mean}",
        num(&ring[0], "cy")
    );
    // The default is ringed too, at its own tick.
    let def = rep["default"]["fifo_batch"].as_i64().unwrap();
    let dring = circles(resp, "7");
    assert_eq!(dring.len(), 1);
    let dt = xt.iter().find(|t| t.0 == def.to_string()).unwrap();
    assert!((num(&dring[0], "cx") - dt.1).abs() <= 1.5);

    // The trials in order: each one, a point or (no_load only) a triangle.
    let order = panel(&doc, "order");
    let tri = order
        .descendants()
        .filter(|n| n.has_tag_name("polygon"))
        .count();
    assert_eq!(circles(order, "4").len(), with_value);
    assert_eq!(tri, trials.len() - with_value);

    // The check: as many pairs as the report's figures came from, the verdict in the title.
    let check = panel(&doc, "check");
    let pairs = rep["loads"]["io_load"][0]["trials"].as_u64().unwrap() as usize;
    assert_eq!(circles(check, "5").len(), 2 * pairs);
    let title = check
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").trim().to_string())
        .find(|t| t.starts_with("check:"))
        .unwrap();
    let ratio = rep["objective"]["improvement"]["ratio"].as_f64().unwrap();
    assert!(
        title.contains(&format!("{ratio:.2}× better")) && title.contains("significant, kept"),
        "{title}"
    );
}

#[test]
fn a_two_knob_tune_gets_a_heat_map_cell_per_setting_measured() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let rep = tune(
        &db,
        &[
            "--sim",
            &path("data/surfaces/synthetic-2d-deadline.toml"),
            "--policy",
            &path("tests/policies/bowl.toml"),
            "--budget",
            "30",
            "--seed",
            "3",
        ],
    );
    let id = rep["tune_id"].as_i64().unwrap();
    // By device: the newest tune of the target label.
    let svg = plot(&db, "sim:synthetic-2d-deadline");
    let doc = Document::parse(&svg).unwrap();
    panel(&doc, "response-fifo_batch");
    panel(&doc, "response-read_ahead_kb");
    let mut settings: Vec<(i64, i64)> = trials_of(&db, id)
        .iter()
        .filter(|t| time(t, "io_load").is_some())
        .map(|t| {
            (
                t["setting"]["fifo_batch"].as_i64().unwrap(),
                t["setting"]["read_ahead_kb"].as_i64().unwrap(),
            )
        })
        .collect();
    settings.sort();
    settings.dedup();
    let heat = panel(&doc, "heatmap");
    let cells = heat
        .descendants()
        .filter(|n| n.has_tag_name("rect"))
        .filter(|n| n.attribute("stroke") == Some("none"))
        .filter(|n| n.attribute("fill") != Some("#FFFFFF"))
        .count();
    assert_eq!(cells, settings.len(), "{settings:?}");
    // The default and the sweet spot framed.
    let frames = heat
        .descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some("none"))
        .count();
    assert_eq!(frames, 2);
}

#[test]
fn an_unknown_tune_or_device_is_bad_input_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let out = dir.path().join("x.svg");
    let o = out.to_str().unwrap();
    let (code, err) = common::code_and_stderr(common::sweetspot(&db, &["plot", "3", "--out", o]));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("does not exist"), "{err}");
    tune(
        &db,
        &[
            "--sim",
            &path("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml"),
            "--seed",
            "1",
        ],
    );
    for (what, says) in [("99", "no tune #99"), ("sdq", "no tune of device 'sdq'")] {
        let (code, err) =
            common::code_and_stderr(common::sweetspot(&db, &["plot", what, "--out", o]));
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(says), "{err}");
    }
    assert!(!out.exists());
}

#[test]
fn the_default_file_is_never_replaced_but_a_named_out_is() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let rep = tune(
        &db,
        &[
            "--sim",
            &path("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml"),
            "--seed",
            "1",
        ],
    );
    let id = rep["tune_id"].as_i64().unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
            .current_dir(dir.path())
            .arg("--db")
            .arg(&db)
            .args(args)
            .output()
            .unwrap()
    };
    let name = format!("sweetspot-tune-{id}.svg");
    let file = dir.path().join(&name);
    let first = run(&["plot", &id.to_string()]);
    assert!(first.status.success());
    assert!(Document::parse(&std::fs::read_to_string(&file).unwrap()).is_ok());
    std::fs::write(&file, "mine").unwrap();
    let (code, err) = common::code_and_stderr(run(&["plot", &id.to_string()]));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("exists") && err.contains("--out"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
    let named = run(&["plot", &id.to_string(), "--out", &name]);
    assert!(named.status.success());
    assert!(std::fs::read_to_string(&file).unwrap().starts_with("<svg"));
}

#[test]
fn markup_characters_in_a_target_label_are_escaped() {
    // A --sim device is named after its file: `sim:a<&>"b` must stay text in the SVG.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let surface = dir.path().join("a<&>\"b.toml");
    std::fs::copy(
        root().join("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml"),
        &surface,
    )
    .unwrap();
    tune(&db, &["--sim", surface.to_str().unwrap(), "--seed", "1"]);
    let svg = plot(&db, "sim:a<&>\"b");
    let doc = Document::parse(&svg).unwrap();
    let title = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("title-0"))
        .unwrap();
    assert_eq!(title.text(), Some("tune #1 of sim:a<&>\"b"));
}

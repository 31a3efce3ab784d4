use super::*;

fn parse(src: &str) -> Result<Surface> {
    Surface::parse(Path::new("t.toml"), src)
}

fn bad(src: &str) -> (usize, String, String) {
    match parse(src) {
        Err(Error::BadFile {
            line, field, msg, ..
        }) => (line.unwrap_or(0), field, msg),
        other => panic!("expected BadFile, got {other:?}"),
    }
}

const HEAD: &str = "[knobs.fifo_batch]\ndefault = 2\nmin = 1\nmax = 8\n";

#[test]
fn parses_the_seed_surface() {
    let s = Surface::load(Path::new("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml")).unwrap();
    assert_eq!(s.knobs.len(), 1);
    assert_eq!(
        (s.knobs[0].default, s.knobs[0].min, s.knobs[0].max),
        (32, 1, 256)
    );
    assert_eq!(s.grids[0].axes[0].values, vec![1, 2, 4, 8, 16, 32]);
    assert!(s.grids[0].axes[0].log2);
    assert_eq!(s.loads(), vec![Load::NoLoad, Load::IoLoad]);
    let p8 = &s.points[s.grids[0].vertex[3]];
    assert_eq!(p8.knobs["fifo_batch"], 8);
    assert_eq!(p8.loads[&Load::IoLoad].time_s, 109.1);
    assert_eq!(p8.loads[&Load::IoLoad].cpu_pct, Some(68.0));
    assert_eq!(p8.relative_sigma, 0.04);
    assert_eq!(s.points[s.grids[0].vertex[0]].relative_sigma, 0.12);
}

#[test]
fn every_shipped_surface_loads_and_names_only_known_knobs() {
    let mut n = 0;
    for dir in ["data/surfaces", "tests/surfaces"] {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                let s = Surface::load(&p).unwrap();
                for k in &s.knobs {
                    assert!(
                        crate::knob::catalogue::is_known(&k.name),
                        "{p:?}: {}",
                        k.name
                    );
                }
                n += 1;
            }
        }
    }
    assert!(n >= 5, "{n}");
}

#[test]
fn parses_the_2d_grid() {
    let s = Surface::load(Path::new("data/surfaces/synthetic-2d-deadline.toml")).unwrap();
    assert_eq!(s.grids[0].axes.len(), 2);
    assert_eq!(s.grids[0].vertex.len(), 9 * 11);
    // Row-major, last axis (read_ahead_kb) fastest: vertex 1 is fb=1, ra=32.
    let p = &s.points[s.grids[0].vertex[1]];
    assert_eq!((p.knobs["fifo_batch"], p.knobs["read_ahead_kb"]), (1, 32));
}

#[test]
fn errors_name_line_and_field() {
    let (l, f, m) = bad(&format!(
        "{HEAD}[[point]]\nknobs = {{ fifo_batch = 2 }}\nio_load = {{ cpu_pct = 3 }}\n"
    ));
    assert_eq!((l, f.as_str()), (7, "point[1].io_load.time_s"), "{m}");
    let (l, f, m) = bad(&format!(
        "{HEAD}[[point]]\nknobs = {{ fifo_batch = 2 }}\nio_lod = {{ time_s = 3 }}\n"
    ));
    assert_eq!((l, f.as_str()), (7, "point[1].io_lod"));
    assert!(m.contains("unknown load 'io_lod'"), "{m}");
    let (l, f, m) = bad(&format!(
        "{HEAD}[[point]]\nknobs = {{ fifo_batch = 9 }}\nno_load = {{ time_s = 3 }}\n"
    ));
    assert_eq!((l, f.as_str()), (6, "point[1].knobs.fifo_batch"));
    assert!(m.contains("outside [1, 8]"), "{m}");
    let (l, f, _) = bad(&format!(
        "{HEAD}[[point]]\nknobs = {{ fifo_batch = 2, read_ahead_kb = 1 }}\nno_load = {{ time_s = 3 }}\n"
    ));
    assert_eq!((l, f.as_str()), (6, "point[1].knobs.read_ahead_kb"));
    let (l, f, _) = bad("[knobs.fifo_batch]\ndefault = 2\nmin = 1\nmax = \n");
    assert_eq!((l, f.as_str()), (4, "syntax"));
}

/// A surface names knobs as sweetspot knows them (a simulated device offers exactly
/// those): a misspelt `[knobs.fifo_btach]` is refused at its line, with the closest name.
#[test]
fn an_unknown_knob_table_is_refused_with_the_closest_known_name() {
    let pt = "[[point]]\nknobs = { fifo_btach = 2 }\nno_load = { time_s = 3 }\n";
    let e = parse(&format!(
        "[device]\nname = \"x\"\n[knobs.fifo_btach]\ndefault = 2\nmin = 1\nmax = 8\n{pt}"
    ))
    .unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.to_string(),
        "t.toml:3: knobs.fifo_btach: unknown knob 'fifo_btach' (did you mean 'fifo_batch'?): \
         not a knob sweetspot knows"
    );
    // Far from every known name: no hint. Dotted keys name the same field.
    let (l, f, m) = bad("knobs.zzz.default = 2\n");
    assert_eq!((l, f.as_str()), (1, "knobs.zzz"));
    assert_eq!(m, "unknown knob 'zzz': not a knob sweetspot knows");
}

#[test]
fn time_s_zero_and_negative_break_one_rule_with_one_message() {
    for (v, shown) in [("0", "0"), ("-5", "-5"), ("0.0", "0"), ("-0.5", "-0.5")] {
        let (l, f, m) = bad(&format!(
            "{HEAD}[[point]]\nknobs = {{ fifo_batch = 2 }}\nno_load = {{ time_s = {v} }}\n"
        ));
        assert_eq!((l, f.as_str()), (7, "point[1].no_load.time_s"), "{v}");
        assert_eq!(
            m,
            format!("must be a finite number > 0, not {shown}"),
            "{v}"
        );
    }
    // Optional metrics may be 0 (a load that did no work), not negative.
    let (_, f, m) = bad(&format!(
        "{HEAD}[[point]]\nknobs = {{ fifo_batch = 2 }}\nio_load = {{ time_s = 1, loads = -1 }}\n"
    ));
    assert_eq!(f, "point[1].io_load.loads");
    assert_eq!(m, "must be a finite number ≥ 0, not -1");
    let src = format!(
        "{HEAD}[[point]]\nknobs = {{ fifo_batch = 2 }}\nio_load = {{ time_s = 1, loads = 0 }}\n"
    );
    assert_eq!(
        parse(&src).unwrap().points[0].loads[&Load::IoLoad].loads,
        Some(0.0)
    );
}

#[test]
fn times_metrics_and_knob_ranges_that_would_overflow_are_refused() {
    let pt = |m: &str| format!("{HEAD}[[point]]\nknobs = {{ fifo_batch = 2 }}\n{m}\n");
    for (m, field, msg) in [
        (
            "no_load = { time_s = 1e308 }",
            "point[1].no_load.time_s",
            "must be 0.001–1000000 s (no contest run is shorter than 1 ms or longer than \
             11.6 days), not 1e308",
        ),
        (
            "no_load = { time_s = 1000000.5 }",
            "point[1].no_load.time_s",
            "must be 0.001–1000000 s (no contest run is shorter than 1 ms or longer than \
             11.6 days), not 1.0000005e6",
        ),
        (
            "no_load = { time_s = 1e-320 }",
            "point[1].no_load.time_s",
            "must be 0.001–1000000 s (no contest run is shorter than 1 ms or longer than \
             11.6 days), not 1e-320",
        ),
        (
            "io_load = { time_s = 1, loads = 1e300 }",
            "point[1].io_load.loads",
            "must be at most 1e12, not 1e300",
        ),
    ] {
        let (l, f, got) = bad(&pt(m));
        assert_eq!((l, f.as_str(), got.as_str()), (7, field, msg), "{m}");
    }
    // The bounds themselves are accepted.
    for m in ["no_load = { time_s = 1e6 }", "no_load = { time_s = 0.001 }"] {
        parse(&pt(m)).unwrap();
    }
    // A knob range beyond the catalogue's safe bounds (read_ahead_kb: 0–65536).
    let knob = |min: i64, max: i64| {
        format!(
            "[knobs.read_ahead_kb]\ndefault = 128\nmin = {min}\nmax = {max}\n[[point]]\n\
             knobs = {{ read_ahead_kb = 128 }}\nno_load = {{ time_s = 3 }}\n"
        )
    };
    let (l, f, m) = bad(&knob(0, 99_999_999_999));
    assert_eq!(
        (l, f.as_str(), m.as_str()),
        (
            4,
            "knobs.read_ahead_kb.max",
            "99999999999 is outside read_ahead_kb's safe bounds 0–65536 (src/knob/catalogue.rs)"
        )
    );
    let (l, f, _) = bad(&knob(-1, 256));
    assert_eq!((l, f.as_str()), (3, "knobs.read_ahead_kb.min"));
    parse(&knob(0, 65536)).unwrap();
}

#[test]
fn rejects_non_grids_and_duplicates() {
    let two = "[knobs.fifo_batch]\ndefault = 1\nmin = 1\nmax = 8\n[knobs.read_ahead_kb]\ndefault = 1\nmin = 1\nmax = 8\n";
    let pt = |a: i64, b: i64| {
        format!(
            "[[point]]\nknobs = {{ fifo_batch = {a}, read_ahead_kb = {b} }}\nno_load = {{ time_s = 1 }}\n"
        )
    };
    let src = format!("{two}{}{}{}", pt(1, 1), pt(1, 2), pt(2, 1));
    let (l, f, m) = bad(&src);
    assert_eq!((l, f.as_str()), (9, "point"));
    assert!(
        m.contains("no point for fifo_batch=2 read_ahead_kb=2"),
        "{m}"
    );
    assert!(m.contains("3 points given, a 2×2 grid needs 4"), "{m}");
    let src = format!("{two}{}{}{}{}", pt(1, 1), pt(1, 2), pt(2, 1), pt(1, 2));
    let (l, f, m) = bad(&src);
    assert_eq!((l, f.as_str()), (18, "point[4].knobs"), "{m}");
    let src = format!("{two}{}{}{}{}", pt(1, 1), pt(1, 2), pt(2, 1), pt(2, 2));
    assert_eq!(parse(&src).unwrap().grids[0].vertex, vec![0, 1, 2, 3]);
}

#[test]
fn points_must_agree_on_loads_and_metrics() {
    let src = format!(
        "{HEAD}[[point]]\nknobs = {{ fifo_batch = 1 }}\nno_load = {{ time_s = 1 }}\n\
         [[point]]\nknobs = {{ fifo_batch = 2 }}\nno_load = {{ time_s = 1, cpu_pct = 9 }}\n"
    );
    assert_eq!(bad(&src).1, "point[2].no_load.cpu_pct");
    let src = format!(
        "{HEAD}[[point]]\nknobs = {{ fifo_batch = 1 }}\nno_load = {{ time_s = 1 }}\n\
         [[point]]\nknobs = {{ fifo_batch = 2 }}\nio_load = {{ time_s = 1 }}\nno_load = {{ time_s = 1 }}\n"
    );
    assert_eq!(bad(&src).1, "point[2].io_load");
}

/// Messages of the rules, whatever serde met first: a key in a point that is not a load's
/// name (whatever it holds), a number beyond f64 or i64, a table given as an array of tables
/// or as a date, an unknown key holding a table.
#[test]
fn toml_errors_read_as_the_surface_rules_say() {
    let pt = |m: &str| format!("{HEAD}[[point]]\nknobs = {{ fifo_batch = 2 }}\n{m}\n");
    let unknown_metric = "unknown key (expected one of: time_s, cpu_pct, loads, lcpu_pct)";
    for (m, field, msg) in [
        (
            "relat_ve_sigma = 0.12\nno_load = { time_s = 1 }",
            "point[1].relat_ve_sigma",
            "unknown load 'relat_ve_sigma' (valid: no_load, ",
        ),
        (
            "rnobs = { fifo_batch = 2 }\nno_load = { time_s = 1 }",
            "point[1].rnobs",
            "unknown load 'rnobs' (valid: no_load, ",
        ),
        (
            "no_load = { time_s = 1e400 }",
            "point[1].no_load.time_s",
            "must be a finite number > 0, not inf",
        ),
        (
            "no_load = { time_s = 1, loads = -1e400 }",
            "point[1].no_load.loads",
            "must be a finite number ≥ 0, not -inf",
        ),
        (
            "no_load = { time_s = 1, tme_s = 1 }",
            "point[1].no_load.tme_s",
            unknown_metric,
        ),
        ("no_load = 3", "point[1].no_load", "expected a table"),
    ] {
        let (l, f, got) = bad(&pt(m));
        assert_eq!((l, f.as_str()), (7, field), "{m}: {got}");
        assert!(got.starts_with(msg), "{m}: {got}");
    }
    let whole = |src: &str| {
        let (l, f, m) = bad(src);
        format!("{l}: {f}: {m}")
    };
    let pt = "[[point]]\nknobs = { fifo_batch = 2 }\nno_load = { time_s = 1 }\n";
    assert_eq!(
        whole(&format!(
            "{HEAD}{}",
            pt.replace("fifo_batch = 2", "fifo_batch = 1e400")
        )),
        "6: point[1].knobs.fifo_batch: expected an integer, found float"
    );
    assert_eq!(
        whole("[knobs.fifo_batch]\ndefault = 2\nmin = 99999999999999999999\nmax = 8\n"),
        "3: knobs.fifo_batch.min: integer out of range"
    );
    assert_eq!(
        whole(&format!("{HEAD}[[noise]]\nrelative_sigma = 0.1\n{pt}")),
        "5: noise: expected a table"
    );
    assert_eq!(
        whole(&format!("{HEAD}[[nosie]]\nrelative_sigma = 0.1\n{pt}")),
        "5: nosie: unknown key (expected one of: device, knobs, noise, point)"
    );
    assert_eq!(whole("knobs = 1979-05-27\n"), "1: knobs: expected a table");
    assert_eq!(
        whole(&format!("{HEAD}[noise]\nrelative_sigma = \"a\"\n{pt}")),
        "6: noise.relative_sigma: expected a number, found string"
    );
}

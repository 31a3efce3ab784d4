use super::*;

fn err(text: &str) -> String {
    match Spec::parse(text) {
        Err(Error::BadInput(m)) => m,
        other => panic!("{text}: expected bad input, got {other:?}"),
    }
}

#[test]
fn presets_parse_and_name_themselves() {
    for p in PRESETS {
        let s = Spec::parse(p.name).unwrap();
        assert_eq!(s.name(), p.name);
        assert_eq!(
            Spec::parse(&s.canonical()).unwrap().canonical(),
            s.canonical()
        );
    }
    let h = Spec::parse("hdd-5400").unwrap();
    assert_eq!(h.channels, 1);
    assert_eq!(
        h.seek,
        Seek::Hdd {
            rpm: 5400.0,
            track_s: 1e-3,
            full_s: 20e-3,
            stroke: None
        }
    );
    assert_eq!(h.read_bw, 30e6);
}

#[test]
fn items_override_a_preset() {
    let s = Spec::parse("hdd-5400,channels=4").unwrap();
    assert_eq!(s.channels, 4);
    assert_eq!(s.name(), s.canonical());
    assert!(s.canonical().contains("channels=4"));
    // The example.
    let s = Spec::parse("latency=500us,bandwidth=200MB/s,channels=4,seek=hdd").unwrap();
    assert_eq!(s.read_latency_s, 500e-6);
    assert_eq!(s.write_latency_s, 500e-6);
    assert_eq!(s.write_bw, 200e6);
    assert!(matches!(s.seek, Seek::Hdd { .. }));
    let s = Spec::parse("latency=1ms,write_latency=2ms,bandwidth=1MiB/s").unwrap();
    assert_eq!((s.read_latency_s, s.write_latency_s), (1e-3, 2e-3));
    assert_eq!(s.read_bw, 1048576.0);
    assert_eq!(s.seek, Seek::None);
    let s = Spec::parse("seek=hdd,stroke=40GB,rpm=7200").unwrap();
    assert!(matches!(s.seek, Seek::Hdd { stroke: Some(40_000_000_000), rpm, .. } if rpm == 7200.0));
}

#[test]
fn a_directions_own_field_wins_over_the_one_for_both_in_either_order() {
    for (lead, a, b, read, write) in [
        (
            "",
            "bandwidth=100MB/s",
            "read-bandwidth=20MB/s",
            20e6,
            100e6,
        ),
        (
            "",
            "bandwidth=100MB/s",
            "write_bandwidth=10MB/s",
            100e6,
            10e6,
        ),
        (
            "sdcard,",
            "bandwidth=50MB/s",
            "read-bandwidth=30MB/s",
            30e6,
            50e6,
        ),
    ] {
        let one = Spec::parse(&format!("{lead}{a},{b}")).unwrap();
        let other = Spec::parse(&format!("{lead}{b},{a}")).unwrap();
        assert_eq!(one, other, "{lead}{a} {b}");
        assert_eq!((one.read_bw, one.write_bw), (read, write), "{lead}{a} {b}");
    }
    // Overridden in both directions: `bandwidth` in the middle sets nothing.
    let s = Spec::parse("write-bandwidth=10MB/s,bandwidth=100MB/s,read-bandwidth=20MB/s").unwrap();
    assert_eq!((s.read_bw, s.write_bw), (20e6, 10e6));
    let (a, b) = ("latency=1ms", "write-latency=2ms");
    let one = Spec::parse(&format!("{a},{b}")).unwrap();
    assert_eq!(one, Spec::parse(&format!("{b},{a}")).unwrap());
    assert_eq!((one.read_latency_s, one.write_latency_s), (1e-3, 2e-3));
    // A preset's write latency is kept when only `latency` is given.
    let s = Spec::parse("sdcard,latency=1ms").unwrap();
    assert_eq!((s.read_latency_s, s.write_latency_s), (1e-3, 1.6e-3));
}

#[test]
fn bad_specs_name_field_and_value() {
    assert_eq!(
        err("latency=5xx"),
        "--emulate: latency '5xx': expected a duration such as 500us, 1.5ms or 0 (units ns, us, ms, s), at most 10 s"
    );
    assert!(err("hdd-5401").starts_with(
        "--emulate: preset 'hdd-5401': unknown (presets: hdd-5400, hdd-7200, sdcard, emmc"
    ));
    assert!(
        err("channels=0").starts_with("--emulate: channels '0': expected a whole number 1–256")
    );
    assert!(err("bandwidth=fast").starts_with("--emulate: bandwidth 'fast': expected a rate"));
    assert!(err("bandwidth=200MB").starts_with("--emulate: bandwidth '200MB':"));
    assert!(
        err("latency=500us,colour=red")
            .starts_with("--emulate: field 'colour': unknown (fields: latency,")
    );
    assert!(err("rpm=5400").starts_with("--emulate: rpm '5400': only with seek=hdd"));
    assert!(err("seek=ssd").starts_with("--emulate: seek 'ssd': expected none or hdd"));
    assert!(
        err("hdd-5400,track-seek=30ms")
            .starts_with("--emulate: track-seek '30ms': longer than full-seek 20ms")
    );
    assert!(err("hdd-5400,rpm=99").starts_with("--emulate: rpm '99':"));
    assert_eq!(
        err("latency=500us,latency=1ms"),
        "--emulate: latency '1ms': given twice (first '500us'): give it once"
    );
    assert_eq!(
        err("hdd-5400,write_latency=1ms,channels=2,write-latency=2ms"),
        "--emulate: write-latency '2ms': given twice (first '1ms'): give it once"
    );
    assert!(
        Spec::parse("hdd-5400,latency=1ms").is_ok(),
        "a preset, then a field"
    );
    assert!(
        err("latency=500us,,channels=2").starts_with("--emulate: item '': expected field=value")
    );
}

#[test]
fn durations_and_rates_print_back() {
    assert_eq!(fmt_duration(500e-6), "500us");
    assert_eq!(fmt_duration(1.6e-3), "1.6ms");
    assert_eq!(fmt_rate(200e6), "200MB/s");
    assert_eq!(fmt_rate(f64::INFINITY), "unlimited");
    assert_eq!(duration("x", "0").unwrap(), 0.0);
    assert_eq!(duration("x", "1.5ms").unwrap(), 1.5e-3);
}

/// Every duration, rate, size and count has a bound (the module doc's table): at the
/// bound accepted, just past it refused naming the field and the value.
#[test]
fn every_field_is_refused_just_past_its_bound() {
    for ok in [
        "latency=10s",
        "write-latency=10000ms",
        "bandwidth=1kB/s",
        "channels=256",
        "seek=hdd,rpm=20000,track-seek=10s,full-seek=10s",
        "seek=hdd,stroke=1MiB",
        "seek=hdd,stroke=999999999GB",
    ] {
        assert!(Spec::parse(ok).is_ok(), "{ok}: {:?}", Spec::parse(ok));
    }
    let huge = format!("{}s", "9".repeat(400));
    for (bad, field) in [
        ("latency=10.001s", "latency"),
        ("write-latency=10001ms", "write-latency"),
        (huge.as_str(), "latency"),
        ("bandwidth=999B/s", "bandwidth"),
        ("channels=257", "channels"),
        ("channels=0", "channels"),
        ("seek=hdd,rpm=20001", "rpm"),
        ("seek=hdd,full-seek=11s", "full-seek"),
        ("seek=hdd,stroke=1000000000GB", "stroke"),
        ("seek=hdd,stroke=1048575B", "stroke"),
    ] {
        let text = if bad.starts_with('9') {
            format!("latency={bad}")
        } else {
            bad.to_string()
        };
        let value = text.rsplit('=').next().unwrap();
        let m = err(&text);
        assert!(
            m.starts_with(&format!("--emulate: {field} '{value}': ")),
            "{text}: {m}"
        );
    }
}

/// `ncq` and `wcache` on every disk preset: parsed, in the canonical form (which reads
/// back), refused on flash, past their bounds, and `ncq` beside `channels`.
#[test]
fn disk_options_ncq_and_wcache() {
    for preset in ["hdd-5400", "hdd-7200"] {
        let s = Spec::parse(&format!("{preset},ncq=32,wcache=16MiB")).unwrap();
        assert_eq!((s.channels, s.write_cache), (32, 16 << 20), "{preset}");
        let c = s.canonical();
        assert!(c.ends_with(",wcache=16777216B"), "{c}");
        assert_eq!(
            Spec::parse(&c).unwrap(),
            Spec {
                preset: None,
                ..s.clone()
            }
        );
        assert_ne!(s.name(), preset);
    }
    // The presets are as they were: no write cache, hdd-5400 without NCQ.
    assert_eq!(Spec::parse("hdd-5400").unwrap().write_cache, 0);
    assert_eq!(Spec::parse("hdd-5400").unwrap().channels, 1);
    assert!(
        !Spec::parse("hdd-7200")
            .unwrap()
            .canonical()
            .contains("wcache")
    );
    assert_eq!(Spec::parse("hdd-5400,wcache=0").unwrap().name(), "hdd-5400");
    assert_eq!(
        Spec::parse("seek=hdd,wcache=8MB").unwrap().write_cache,
        8_000_000
    );
    assert_eq!(
        err("emmc,ncq=4"),
        "--emulate: ncq '4': only with seek=hdd (give seek=hdd or a disk preset before it)"
    );
    assert!(err("wcache=8MiB,seek=hdd").starts_with("--emulate: wcache '8MiB': only with"));
    assert!(err("hdd-5400,wcache=8MiB,seek=none").starts_with("--emulate: wcache '8388608B'"));
    assert_eq!(
        err("hdd-5400,ncq=33"),
        "--emulate: ncq '33': expected a whole number 1–32 (SATA NCQ has 32 tags; 1 = no NCQ)"
    );
    assert!(err("hdd-5400,ncq=0").starts_with("--emulate: ncq '0': expected"));
    assert_eq!(
        err("hdd-5400,channels=4,ncq=4"),
        "--emulate: ncq '4': on a disk it is channels (given as '4'): give one of them"
    );
    assert!(err("hdd-5400,ncq=8,channels=4").starts_with("--emulate: channels '4': on a disk"));
    for bad in [
        "wcache=1025MiB",
        "wcache=63KiB",
        "wcache=lots",
        "wcache=16MiB/s",
    ] {
        let m = err(&format!("hdd-5400,{bad}"));
        let v = bad.split_once('=').unwrap().1;
        assert_eq!(
            m,
            format!(
                "--emulate: wcache '{v}': expected 0 (no write cache) or a size such as \
                 8MiB or 16MiB, 64KiB to 1GiB"
            )
        );
    }
    assert!(Spec::parse("hdd-5400,wcache=1GiB,ncq=1").is_ok());
    assert!(Spec::parse("hdd-5400,wcache=64KiB").is_ok());
}

/// Found by the fuzz target `emulate_spec` (fuzz/regressions/emulate_spec/): a rate so
/// large that its canonical form (6 decimals of GB/s) did not read back to itself.
#[test]
fn a_rate_above_1000_gb_per_s_is_refused_and_the_largest_reads_back() {
    let m = err("bandwidth=55555552777777GiB/s");
    assert_eq!(
        m,
        "--emulate: bandwidth '55555552777777GiB/s': expected a rate such as 200MB/s or \
         30MiB/s (1kB/s to 1000GB/s), or unlimited"
    );
    assert!(err("read-bandwidth=1000.000001GB/s").contains("1kB/s to 1000GB/s"));
    for ok in [
        "bandwidth=1000GB/s",
        "bandwidth=931.322574615GiB/s",
        "bandwidth=1kB/s",
    ] {
        let c = Spec::parse(ok).unwrap().canonical();
        assert_eq!(Spec::parse(&c).unwrap().canonical(), c, "{ok}");
    }
    assert_eq!(Spec::parse("bandwidth=1000GB/s").unwrap().read_bw, MAX_RATE);
}

/// Found by the fuzz target `emulate_spec` (fuzz/regressions/emulate_spec/): a latency
/// that rounds to 0 printed as `0ns`, which reads back as 0 and prints as `0`, so one
/// device had two canonical forms (and two store identities).
#[test]
fn a_duration_that_rounds_to_zero_prints_as_zero_and_the_canonical_form_is_stable() {
    assert_eq!(fmt_duration(1e-16), "0");
    assert_eq!(fmt_duration(0.0), "0");
    assert_eq!(fmt_duration(1e-15), "0.000001ns");
    let s = Spec::parse("latency=0.0000001ns").unwrap();
    let c = s.canonical();
    assert!(c.starts_with("latency=0,write-latency=0,"), "{c}");
    assert_eq!(Spec::parse(&c).unwrap().canonical(), c);
}

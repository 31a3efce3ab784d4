//! CSV: one row per run, in the order of the report (load by load, runs in order), with a
//! header row. Fields:
//!
//! | field | meaning |
//! |---|---|
//! | `target` | target label, e.g. `sim:seed-2.5.39-mm1-fifo_batch` |
//! | `setting` | setting label, e.g. `fifo_batch=32` |
//! | `load` | contest load name |
//! | `run` | 1-based repeat of that load |
//! | `time_s` | the job's wall time, s |
//! | `cpu_pct` | the job's CPU%, % |
//! | `loads` | the load's work units (empty when none) |
//! | `lcpu_pct` | the load's CPU%, % (empty when none) |
//! | `ratio` | Time ÷ mean no_load Time (empty without no_load or for a failed run) |
//! | `failed` | why the run failed (empty when it did not) |
//!
//! Quoting follows RFC 4180: a field with a comma, quote or line break is quoted, quotes
//! doubled. Numbers use Rust's shortest round-trip form.

use super::{BenchReport, Exporter};

/// The CSV exporter.
pub(crate) struct Csv;

/// The header row's fields, in order.
pub(crate) const FIELDS: [&str; 10] = [
    "target", "setting", "load", "run", "time_s", "cpu_pct", "loads", "lcpu_pct", "ratio", "failed",
];

fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn num(x: Option<f64>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

impl Exporter for Csv {
    fn render(&self, r: &BenchReport) -> crate::Result<String> {
        let mut out = FIELDS.join(",") + "\n";
        for l in &r.trial.loads {
            for (i, (run, ratio)) in l.raw.iter().zip(&l.raw_ratio).enumerate() {
                let row = [
                    field(&r.target.label),
                    field(&r.trial.label),
                    l.load.name().to_string(),
                    (i + 1).to_string(),
                    run.time_s.to_string(),
                    run.cpu_pct.to_string(),
                    num(run.loads),
                    num(run.lcpu_pct),
                    num(*ratio),
                    field(run.failed.as_deref().unwrap_or("")),
                ];
                out += &row.join(",");
                out.push('\n');
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::summary::summarize_trial;
    use crate::bench::{Load, Run, TargetInfo};
    use crate::knob::Setting;

    #[test]
    fn one_row_per_run_with_quoting() {
        let mk = |load, t, failed: Option<&str>| Run {
            load,
            time_s: t,
            cpu_pct: 50.0,
            loads: (load == Load::IoLoad).then_some(4.0),
            lcpu_pct: None,
            failed: failed.map(str::to_string),
            io: None,
        };
        let runs = vec![
            mk(Load::NoLoad, 60.0, None),
            mk(Load::IoLoad, 120.0, None),
            mk(Load::IoLoad, 130.0, Some("no work, \"0\" units")),
        ];
        let r = BenchReport {
            target: TargetInfo {
                label: "sim:x".into(),
                identity: "sim:x".into(),
                kernel: "sim".into(),
            },
            sizes: serde_json::Value::Null,
            trial: summarize_trial(&Setting::new(), &runs),
        };
        let text = Csv.render(&r).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(
            lines[0],
            "target,setting,load,run,time_s,cpu_pct,loads,lcpu_pct,ratio,failed"
        );
        assert_eq!(lines[1], "sim:x,default,no_load,1,60,50,,,1,");
        assert_eq!(lines[2], "sim:x,default,io_load,1,120,50,4,,2,");
        assert_eq!(
            lines[3],
            "sim:x,default,io_load,2,130,50,4,,,\"no work, \"\"0\"\" units\""
        );
    }
}

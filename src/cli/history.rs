//! `sweetspot history [<DEVICE>] [--json]`: stored tunes, trials and sweet spots, and the
//! knobs a killed benchmark left open ([`crate::tune::killed`]).

use super::Ctx;
use crate::Result;
use crate::knob::setting_label;
use serde::Serialize;

/// Arguments of `sweetspot history`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this device: its identity, or a target label (e.g. `sim:seed-...`, `loop0`).
    pub device: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct History {
    tunes: Vec<crate::store::tunes::TuneRow>,
    trials: Vec<TrialOut>,
    sweet_spots: Vec<crate::store::tunes::SweetSpotRow>,
    /// What killed `bench`/`tune --scratch` runs left open ([`crate::tune::killed`]): every
    /// such knob, or with a device argument only that device's.
    killed_bench_knobs: Vec<crate::tune::killed::OpenKnob>,
}

/// A stored trial with what it measured.
#[derive(Serialize)]
struct TrialOut {
    #[serde(flatten)]
    row: crate::store::trials::TrialRow,
    /// Per load (no_load first): its runs' mean Time, Ratio (÷ the trial's mean no_load Time)
    /// and Loads, as the tune computed them.
    figures: Vec<Figures>,
}

/// One load's means in one trial.
#[derive(Serialize)]
struct Figures {
    load: crate::types::Load,
    runs: usize,
    time_s: Option<f64>,
    ratio: Option<f64>,
    loads: Option<f64>,
}

/// The figures of trial `id` from its stored runs (failed runs left out).
fn figures(store: &crate::store::Store, id: i64) -> Result<Vec<Figures>> {
    let runs: Vec<crate::types::Run> = store
        .runs(id)?
        .into_iter()
        .map(|r| r.run)
        .filter(|r| r.failed.is_none())
        .collect();
    let m = crate::tune::evaluator::trial_metrics(&runs);
    let mut loads: Vec<crate::types::Load> = runs.iter().map(|r| r.load).collect();
    loads.sort_by_key(|l| (*l != crate::types::Load::NoLoad, *l));
    loads.dedup();
    Ok(loads
        .into_iter()
        .map(|l| Figures {
            load: l,
            runs: runs.iter().filter(|r| r.load == l).count(),
            time_s: m.get(&(l, "time_s")).copied(),
            ratio: m.get(&(l, "ratio")).copied(),
            loads: m.get(&(l, "loads")).copied(),
        })
        .collect())
}

/// `no_load 67.7 s; io_load 109.1 s Ratio 1.61 Loads 12`; a user benchmark's trial (its
/// `sizes` name the benchmark) shows its figure instead, `rate (MB/s) 0.00420`: it has no
/// contest Time.
fn figures_text(f: &[Figures], sizes: &serde_json::Value) -> String {
    let b = &sizes["benchmark"];
    if let Some(name) = b["name"].as_str() {
        let label = match b["unit"].as_str().filter(|u| !u.is_empty()) {
            Some(u) => format!("{name} ({u})"),
            None => name.to_string(),
        };
        return f
            .iter()
            .map(|x| {
                let v = x.loads.map_or("–".into(), crate::tune::evaluator::figure);
                format!("{label} {v}")
            })
            .collect::<Vec<_>>()
            .join("; ");
    }
    f.iter()
        .map(|x| {
            let mut s = format!("{}", x.load);
            if let Some(t) = x.time_s {
                s.push_str(&format!(" {t:.1} s"));
            }
            if let Some(r) = x.ratio {
                s.push_str(&format!(" Ratio {r:.2}"));
            }
            if let Some(l) = x.loads {
                s.push_str(&format!(" Loads {l:.0}"));
            }
            s
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Runs `sweetspot history`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<()> {
    // A read-only command: a database that does not exist yet is an empty history, not a
    // file to create (the directory or file may not even be the user's to write).
    if !ctx.db.exists() {
        let empty = History {
            tunes: vec![],
            trials: vec![],
            sweet_spots: vec![],
            killed_bench_knobs: vec![],
        };
        if args.json {
            return super::print_json(&empty);
        }
        return super::print_out(&format!(
            "no history: {} does not exist yet (nothing tuned with this --db)\n",
            ctx.db.display()
        ));
    }
    let store = ctx.store_read_only()?;
    let want = |identity: &str, label: &str| {
        args.device
            .as_ref()
            .is_none_or(|d| d == identity || d == label || label.starts_with(&format!("{d} ")))
    };
    let h = History {
        tunes: store
            .tunes(None)?
            .into_iter()
            .filter(|t| want(&t.identity, &t.target))
            // A `running` tune whose process is gone was killed (SIGKILL, OOM, power loss):
            // the next tune or `restore` finishes it; until then it is not running.
            .map(|mut t| {
                if t.status == "running" && !crate::tune::recover::alive(&ctx.db, &ctx.root, &t) {
                    t.status = "killed".into();
                }
                t
            })
            .collect(),
        trials: store
            .trials(None)?
            .into_iter()
            .filter(|t| want(&t.identity, &t.target))
            .map(|row| {
                Ok(TrialOut {
                    figures: figures(&store, row.id)?,
                    row,
                })
            })
            .collect::<Result<_>>()?,
        sweet_spots: store
            .sweet_spots(None)?
            .into_iter()
            .filter(|s| {
                let label = s.evidence["target"]["label"].as_str().unwrap_or("");
                want(&s.identity, label)
            })
            .collect(),
        killed_bench_knobs: crate::tune::killed::killed_bench_knobs(&store, &ctx.root)?
            .into_iter()
            .filter(|k| {
                args.device.is_none()
                    || k.device
                        .as_deref()
                        .is_some_and(|name| want(k.identity.as_deref().unwrap_or_default(), name))
            })
            .collect(),
    };
    if let Some(d) = &args.device
        && h.tunes.is_empty()
        && h.trials.is_empty()
        && crate::device::find(&ctx.root, d).is_err()
    {
        return Err(crate::Error::BadInput(format!(
            "history: no device '{d}' in {} nor in {} (give a kernel name, an identity or a \
             target label that `sweetspot history` lists)",
            ctx.db.display(),
            ctx.root.sys.join("block").display()
        )));
    }
    if args.json {
        return super::print_json(&h);
    }
    let mut s = String::new();
    s.push_str("sweet spots:\n");
    if h.sweet_spots.is_empty() {
        s.push_str("  (none)\n");
    }
    // The newest sweet spot of each (identity, kernel, policy) is the one in force; earlier
    // ones are counted (all of them are in --json). Rows come oldest first.
    let mut latest = std::collections::BTreeMap::new();
    for sp in &h.sweet_spots {
        latest
            .entry((&sp.identity, &sp.kernel, &sp.policy))
            .and_modify(|e: &mut (_, usize)| *e = (sp, e.1 + 1))
            .or_insert((sp, 0));
    }
    for (sp, earlier) in latest.into_values() {
        let what = if sp.significant {
            let imp = sp.evidence["objective"]["improvement"]["ratio"]
                .as_f64()
                .map_or(String::new(), |r| format!(" ({r:.2}× better)"));
            format!("{}{imp}", setting_label(&sp.setting))
        } else {
            format!(
                "keep the default {} (no significant improvement)",
                setting_label(&sp.setting)
            )
        };
        s.push_str(&format!(
            "  {} [{}] policy {}: {what}\n    tune #{}, {} UTC{}\n",
            sp.identity,
            sp.kernel,
            sp.policy,
            sp.tune_id.map_or("-".into(), |i| i.to_string()),
            store.utc(sp.created_at)?,
            match earlier {
                0 => String::new(),
                k => format!(
                    "; {k} earlier sweet spot{} of it",
                    if k == 1 { "" } else { "s" }
                ),
            }
        ));
    }
    s.push_str("\ntunes:\n");
    if h.tunes.is_empty() {
        s.push_str("  (none)\n");
    }
    for t in &h.tunes {
        let of: Vec<_> = h
            .trials
            .iter()
            .filter(|x| x.row.tune_id == Some(t.id))
            .collect();
        let n = of.iter().filter(|x| x.row.finished_at.is_some()).count();
        let cut = of.len() - n;
        if t.status == "resumed" && n == 0 {
            s.push_str(&format!(
                "  #{:<4} {:<40} policy {:<10} resumed     (its finished trials moved to the \
                 tune that resumed it{})\n",
                t.id,
                t.target,
                t.policy,
                if cut > 0 {
                    format!("; +{cut} stopped before its last run")
                } else {
                    String::new()
                }
            ));
            continue;
        }
        s.push_str(&format!(
            "  #{:<4} {:<40} policy {:<10} {:<11} {n} trial{}{}\n",
            t.id,
            t.target,
            t.policy,
            t.status,
            if n == 1 { "" } else { "s" },
            if cut > 0 {
                format!(" (+{cut} stopped before its last run)")
            } else {
                String::new()
            }
        ));
    }
    if h.tunes.iter().any(|t| t.status == "killed") {
        s.push_str(&format!(
            "  (killed: its process is gone and its device may still be at a trial setting; \
             `{}` puts it back)\n",
            crate::tune::recover::undo_command(&ctx.db, &ctx.root, None)
        ));
    }
    if let Some(n) = crate::tune::killed::note(&h.killed_bench_knobs, &ctx.db, &ctx.root) {
        s.push_str(&format!("  ({n})\n"));
    }
    s.push_str("\ntrials:\n");
    if h.trials.is_empty() {
        s.push_str("  (none)\n");
    }
    for t in &h.trials {
        let f = figures_text(&t.figures, &t.row.sizes);
        let t = &t.row;
        s.push_str(&format!(
            "  #{:<5} tune {:<5} {:<40} {}{}\n",
            t.id,
            t.tune_id.map_or("-".into(), |i| i.to_string()),
            t.target,
            setting_label(&t.setting),
            if t.finished_at.is_none() {
                " (stopped before its last run)"
            } else {
                ""
            }
        ));
        if !f.is_empty() {
            s.push_str(&format!("         {f}\n"));
        }
    }
    super::print_out(&s)
}

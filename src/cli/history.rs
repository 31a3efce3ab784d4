//! `sweetspot history [<DEVICE>] [--tune ID | --limit N | --all] [--json]`: the sweet spots
//! in force and the latest tunes with their verdicts (one tune's trials with `--tune`), and
//! the knobs a killed benchmark left open ([`crate::undo::killed_bench`]). `--json` prints every
//! stored tune, trial and sweet spot (of `--tune`'s tune only, with it), whatever `--limit`.

use super::Ctx;
use super::output::{JsonArg, JsonHelp, emit};
use crate::Result;
use crate::knob::setting_label;
use crate::output::format::Table;
use crate::output::json::Stamp;
use crate::store::Store;
use crate::store::trials::TrialRow;
use crate::store::tunes::{SweetSpotRow, TuneRow};
use crate::types::TuneStatus;
use serde::Serialize;

/// Tunes `history` lists when neither `--limit` nor `--all` is given: enough for the last few
/// days' work on a screen (two tunes used to print 99 lines, every trial of both).
pub(crate) const DEFAULT_LIMIT: usize = 5;

/// Arguments of `sweetspot history`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this device (identity or target label).
    ///
    /// A target label as history shows it, e.g. `sim:seed-...`, `loop0`.
    pub device: Option<String>,
    /// Show this tune's trials and what they measured.
    ///
    /// ID is the tune's number in history (#ID).
    #[arg(long, value_name = "ID", conflicts_with_all = ["limit", "all"])]
    pub tune: Option<i64>,
    /// Show the latest N tunes.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_LIMIT,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub limit: usize,
    /// Show every tune.
    #[arg(long, conflicts_with = "limit")]
    pub all: bool,
    #[command(flatten)]
    pub output: JsonArg<HistoryHelp>,
}

/// `history --json`'s help.
#[derive(Clone, Copy, Debug, Default)]
pub struct HistoryHelp;

impl JsonHelp for HistoryHelp {
    const HELP: &'static str = "Print JSON: every stored tune, trial and sweet spot";
    const LONG_HELP: Option<&'static str> = Some(
        "Print JSON: every stored tune, trial and sweet spot.\n\nTrials come with their \
         figures, and the knobs a killed benchmark left open too, whatever --limit says; with \
         --tune, that tune's alone.",
    );
}

struct History {
    tunes: Vec<TuneRow>,
    trials: Vec<TrialOut>,
    sweet_spots: Vec<SweetSpotRow>,
    /// What killed `bench`/`tune --scratch` runs left open ([`crate::undo::killed_bench`]): every
    /// such knob, or with a device argument only that device's.
    killed_bench_knobs: Vec<crate::undo::OpenKnob>,
}

/// `history --json`'s object: [`History`] with every time as RFC 3339 and Unix seconds
/// (docs/json.md, docs/schemas/history.schema.json).
#[derive(Serialize)]
struct HistoryJson<'a> {
    tunes: Vec<Timed<'a, TuneRow, RunTimes>>,
    trials: Vec<Timed<'a, TrialOut, RunTimes>>,
    sweet_spots: Vec<Timed<'a, SweetSpotRow, Created>>,
    killed_bench_knobs: &'a [crate::undo::OpenKnob],
}

/// A row's fields, then its times.
#[derive(Serialize)]
struct Timed<'a, T: Serialize, S: Serialize> {
    #[serde(flatten)]
    row: &'a T,
    #[serde(flatten)]
    times: S,
}

/// A tune's or trial's start and finish (`null` until it finishes).
#[derive(Serialize)]
struct RunTimes {
    started_at: String,
    started_at_epoch_s: i64,
    finished_at: Option<String>,
    finished_at_epoch_s: Option<i64>,
}

impl RunTimes {
    /// From Unix seconds.
    fn new(started: i64, finished: Option<i64>) -> RunTimes {
        RunTimes {
            started_at: Stamp::new(started).rfc3339,
            started_at_epoch_s: started,
            finished_at: finished.map(|f| Stamp::new(f).rfc3339),
            finished_at_epoch_s: finished,
        }
    }
}

/// When a sweet spot was stored.
#[derive(Serialize)]
struct Created {
    created_at: String,
    created_at_epoch_s: i64,
}

impl History {
    /// What `--json` prints.
    fn json(&self) -> HistoryJson<'_> {
        HistoryJson {
            tunes: self
                .tunes
                .iter()
                .map(|t| Timed {
                    row: t,
                    times: RunTimes::new(t.started_at, t.finished_at),
                })
                .collect(),
            trials: self
                .trials
                .iter()
                .map(|t| Timed {
                    row: t,
                    times: RunTimes::new(t.row.started_at, t.row.finished_at),
                })
                .collect(),
            sweet_spots: self
                .sweet_spots
                .iter()
                .map(|s| Timed {
                    row: s,
                    times: Created {
                        created_at: Stamp::new(s.created_at).rfc3339,
                        created_at_epoch_s: s.created_at,
                    },
                })
                .collect(),
            killed_bench_knobs: &self.killed_bench_knobs,
        }
    }
}

/// A stored trial with what it measured.
#[derive(Serialize)]
struct TrialOut {
    #[serde(flatten)]
    row: TrialRow,
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
pub(crate) fn run(ctx: &Ctx, args: &Args) -> Result<()> {
    // A read-only command: a database that does not exist yet is an empty history, not a
    // file to create (the directory or file may not even be the user's to write).
    if !ctx.db.exists() {
        let empty = History {
            tunes: vec![],
            trials: vec![],
            sweet_spots: vec![],
            killed_bench_knobs: vec![],
        };
        let shown = Shown {
            ctx,
            store: None,
            args,
            h: &empty,
        };
        return emit(&shown, args.output.format());
    }
    let store = ctx.store_read_only()?;
    let h = read(ctx, &store, args)?;
    let shown = Shown {
        ctx,
        store: Some(&store),
        args,
        h: &h,
    };
    emit(&shown, args.output.format())
}

/// What `history` prints: [`History::json`] with `--json`, else [`text`] (for want of a
/// database, a line that says so).
struct Shown<'a> {
    ctx: &'a Ctx,
    /// `None` when the database does not exist yet.
    store: Option<&'a Store>,
    args: &'a Args,
    h: &'a History,
}

impl Serialize for Shown<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.h.json().serialize(s)
    }
}

impl Table for Shown<'_> {
    fn table(&self) -> Result<String> {
        let Some(store) = self.store else {
            return Ok(format!(
                "no history: {} does not exist yet (nothing tuned with this --db)\n",
                self.ctx.db.display()
            ));
        };
        Ok(wrap_long(&text(self.ctx, store, self.args, self.h)?))
    }
}

/// What `args` asks of the database: tunes, trials (with their figures for `--json` and
/// `--tune`), sweet spots and killed benchmarks' knobs. Errors: bad input for a `--tune` or
/// device that is not there; the store's.
fn read(ctx: &Ctx, store: &Store, args: &Args) -> Result<History> {
    let want = |identity: &str, label: &str| {
        args.device
            .as_ref()
            .is_none_or(|d| d == identity || d == label || label.starts_with(&format!("{d} ")))
    };
    let of_tune = |id: Option<i64>| args.tune.is_none_or(|t| id == Some(t));
    let tunes: Vec<TuneRow> = store
        .tunes(None)?
        .into_iter()
        .filter(|t| want(&t.identity, &t.target) && of_tune(Some(t.id)))
        // A `running` tune whose process is gone was killed (SIGKILL, OOM, power loss):
        // the next tune or `restore` finishes it; until then it is not running.
        .map(|mut t| {
            if t.status == TuneStatus::Running && !crate::undo::alive(&ctx.db, &ctx.root, &t) {
                t.status = TuneStatus::Killed;
            }
            t
        })
        .collect();
    if let Some(id) = args.tune
        && tunes.is_empty()
    {
        return Err(crate::Error::BadInput(format!(
            "history --tune {id}: no such tune{} in {} (`sweetspot history --all` lists them)",
            args.device
                .as_ref()
                .map_or(String::new(), |d| format!(" of '{d}'")),
            ctx.db.display()
        )));
    }
    let trials: Vec<TrialRow> = store
        .trials(None)?
        .into_iter()
        .filter(|t| want(&t.identity, &t.target) && of_tune(t.tune_id))
        .collect();
    // A trial's figures read its runs: only for what is shown (one tune's, or --json's).
    let trials: Vec<TrialOut> = if args.output.json || args.tune.is_some() {
        trials
            .into_iter()
            .map(|row| {
                Ok(TrialOut {
                    figures: figures(store, row.id)?,
                    row,
                })
            })
            .collect::<Result<_>>()?
    } else {
        trials
            .into_iter()
            .map(|row| TrialOut {
                figures: vec![],
                row,
            })
            .collect()
    };
    let h = History {
        tunes,
        trials,
        sweet_spots: store
            .sweet_spots(None)?
            .into_iter()
            .filter(|s| {
                let label = s.evidence["target"]["label"].as_str().unwrap_or("");
                want(&s.identity, label) && of_tune(s.tune_id)
            })
            .collect(),
        killed_bench_knobs: crate::undo::killed_bench_knobs(store, &ctx.root)?
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
        // A number (`7`, or `#7` as the listing writes it) that is a stored tune's ID.
        let id = d.strip_prefix('#').unwrap_or(d);
        let hint = match id.parse::<i64>() {
            Ok(n) if id.bytes().all(|b| b.is_ascii_digit()) && store.tune(n)?.is_some() => {
                format!("; for tune #{n}, `sweetspot history --tune {n}`")
            }
            _ => String::new(),
        };
        return Err(crate::Error::BadInput(format!(
            "history: no device '{d}' in {} nor in {} (give a kernel name, an identity or a \
             target label that `sweetspot history` lists{hint})",
            ctx.db.display(),
            ctx.root.sys.join("block").display()
        )));
    }
    Ok(h)
}

/// `history`'s text: the sweet spots and the latest tunes, or `--tune`'s tune and trials.
fn text(ctx: &Ctx, store: &Store, args: &Args, h: &History) -> Result<String> {
    let mut s = String::new();
    if args.tune.is_none() {
        sweet_spots_text(store, &h.sweet_spots, &mut s)?;
    }
    let shown = match (args.all, args.tune) {
        (false, None) => h.tunes.len().saturating_sub(args.limit),
        _ => 0,
    };
    if args.tune.is_none() {
        s.push_str(&match (h.tunes.len(), shown) {
            (0, _) => "\ntunes:\n  (none)\n".to_string(),
            (n, 0) => format!("\ntunes: all {n} (--tune ID shows one's trials)\n{TUNES_HEAD}"),
            (n, k) => format!(
                "\ntunes: the latest {} of {n} (--limit N or --all for more; --tune ID shows \
                 one's trials)\n{TUNES_HEAD}",
                n - k
            ),
        });
    }
    for t in &h.tunes[shown..] {
        tune_text(store, t, h, args.tune.is_some(), &mut s)?;
    }
    if h.tunes.iter().any(|t| t.status == TuneStatus::Killed) {
        s.push_str(&format!(
            "  (killed: its process is gone and its device may still be at a trial setting; \
             `{}` puts it back)\n",
            crate::undo::undo_command(&ctx.db, &ctx.root, None)
        ));
    }
    if let Some(n) = crate::undo::note(&h.killed_bench_knobs, &ctx.db, &ctx.root) {
        s.push_str(&format!("  ({n})\n"));
    }
    if args.tune.is_some() {
        trials_text(&h.trials, &mut s);
    } else {
        let benched = h.trials.iter().filter(|t| t.row.tune_id.is_none()).count();
        if benched > 0 {
            s.push_str(&format!(
                "\n(and {benched} trial{} of `sweetspot bench`, of no tune: --json lists them)\n",
                if benched == 1 { "" } else { "s" }
            ));
        }
    }
    Ok(s)
}

/// The newest sweet spot of each (identity, kernel, policy), the one in force, in two lines;
/// earlier ones are counted (all of them are in --json). Rows come oldest first.
fn sweet_spots_text(store: &Store, spots: &[SweetSpotRow], s: &mut String) -> Result<()> {
    s.push_str("sweet spots:\n");
    if spots.is_empty() {
        s.push_str("  (none)\n");
    }
    let mut latest = std::collections::BTreeMap::new();
    for sp in spots {
        latest
            .entry((&sp.identity, &sp.kernel, &sp.policy))
            .and_modify(|e: &mut (_, usize)| *e = (sp, e.1 + 1))
            .or_insert((sp, 0));
    }
    for (sp, earlier) in latest.into_values() {
        s.push_str(&format!(
            "  {} [{}] policy {}: {}\n    tune #{}, {} UTC{}\n",
            sp.identity,
            sp.kernel,
            sp.policy,
            verdict(sp),
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
    Ok(())
}

/// What a sweet spot says: the setting and how much better, or "keep the default".
fn verdict(sp: &SweetSpotRow) -> String {
    if sp.significant {
        let imp = sp.evidence["objective"]["improvement"]["ratio"]
            .as_f64()
            .map_or(String::new(), |r| format!(" ({r:.2}× better)"));
        format!("{}{imp}", setting_label(&sp.setting))
    } else {
        format!(
            "keep the default {} (no significant improvement)",
            setting_label(&sp.setting)
        )
    }
}

/// What the tune's confirm of a known sweet spot (`tune --confirm`, the daemon's retune)
/// found, from its evidence's `confirm`: `; confirmed from stored sweet spot #3 of … (4
/// pairs)`, or `; the known fifo_batch=8 (…) did not hold (p 0.210, at level 0.01): searched`;
/// empty without one.
fn confirm_note(sp: &SweetSpotRow) -> String {
    let c = &sp.evidence["confirm"];
    let (Some(held), Some(source)) = (c["held"].as_bool(), c["source"].as_str()) else {
        return String::new();
    };
    if held {
        return format!("; confirmed from {source} ({} pairs)", c["pairs"]);
    }
    let setting: crate::types::Setting =
        serde_json::from_value(c["setting"].clone()).unwrap_or_default();
    let p = c["p_value"].as_f64().map_or(String::new(), |p| {
        format!(" (p {p:.3}, at level {})", c["alpha"])
    });
    format!(
        "; the known {} ({source}) did not hold{p}: searched",
        setting_label(&setting)
    )
}

/// `text` with every line longer than [`crate::tune::report::WIDTH`] columns wrapped, its
/// continuations indented 4 more than the line.
fn wrap_long(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if line.chars().count() <= crate::tune::report::WIDTH {
            out.push_str(line);
            out.push('\n');
        } else {
            let lead = line.len() - line.trim_start().len();
            out.push_str(&crate::tune::report::wrap(
                &line[..lead],
                lead + 4,
                line.trim_start(),
            ));
        }
    }
    out
}

/// The columns of [`tune_text`]'s rows ([`tune_row`]): each title starts where its column
/// does (`trials` ends where the count's word does).
const TUNES_HEAD: &str =
    "  id    started (UTC)         trials  status       policy        target\n";

/// Characters of the policy column; a longer name is cut with an ellipsis (the whole name is
/// in `--tune ID` and `--json`).
const POLICY_WIDTH: usize = 12;

/// `name` in at most `width` characters: cut with "…" when longer.
fn clip(name: &str, width: usize) -> String {
    if name.chars().count() <= width {
        return name.to_string();
    }
    let mut out: String = name.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A tune's first line under [`TUNES_HEAD`]: `#ID  started  N trials  status  policy
/// target`, fixed columns with the target (of any length) last.
fn tune_row(id: i64, started: &str, n: usize, status: &str, policy: &str, target: &str) -> String {
    format!(
        "  #{id:<4} {started:<16} {n:>4} trial{}  {status:<11}  {policy:<w$}  {target}\n",
        if n == 1 { " " } else { "s" },
        w = POLICY_WIDTH,
    )
}

/// A tune in two lines: its [`tune_row`], then its verdict. `whole` (one tune shown,
/// `--tune`): a policy name cut to its column is given whole in a third line.
fn tune_text(store: &Store, t: &TuneRow, h: &History, whole: bool, s: &mut String) -> Result<()> {
    let of: Vec<&TrialOut> = h
        .trials
        .iter()
        .filter(|x| x.row.tune_id == Some(t.id))
        .collect();
    let n = of.iter().filter(|x| x.row.finished_at.is_some()).count();
    let cut = of.len() - n;
    let started = store.utc(t.started_at)?;
    let policy = clip(&t.policy, POLICY_WIDTH);
    s.push_str(&tune_row(
        t.id,
        started.get(..16).unwrap_or(&started),
        n,
        &t.status.to_string(),
        &policy,
        &t.target,
    ));
    let spot = h
        .sweet_spots
        .iter()
        .rev()
        .find(|sp| sp.tune_id == Some(t.id));
    let what = match (spot, t.status) {
        (Some(sp), _) => format!("{}{}", verdict(sp), confirm_note(sp)),
        (None, TuneStatus::Resumed) => {
            "its finished trials moved to the tune that resumed it".into()
        }
        (None, TuneStatus::Running) => "running".into(),
        (None, TuneStatus::Interrupted) => "interrupted before its verdict".into(),
        (None, TuneStatus::Failed) => "failed before its verdict".into(),
        (None, TuneStatus::Killed) => "killed before its verdict".into(),
        (None, TuneStatus::Recovered) => "killed; its device was put back (recovered)".into(),
        (None, TuneStatus::Done) => "no sweet spot stored".into(),
    };
    let cut = match cut {
        0 => String::new(),
        k => format!(
            " (+{k} trial{} stopped before its last run)",
            if k == 1 { "" } else { "s" }
        ),
    };
    let written = t.bytes_written.map_or_else(String::new, |b| {
        format!("; {} written to the device", crate::types::text::bytes(b))
    });
    s.push_str(&format!("        → {what}{cut}{written}\n"));
    if whole && policy != t.policy {
        s.push_str(&format!("        policy {}\n", t.policy));
    }
    Ok(())
}

/// One tune's trials (`--tune ID`), each its setting and then what it measured, numbered
/// 1, 2, … in the order they ran, as the tune's trial log numbers them (`--json` has their
/// row ids).
fn trials_text(trials: &[TrialOut], s: &mut String) {
    s.push_str("\ntrials:\n");
    if trials.is_empty() {
        s.push_str("  (none)\n");
    }
    for (i, t) in trials.iter().enumerate() {
        let f = figures_text(&t.figures, &t.row.sizes);
        s.push_str(&format!(
            "  trial {:<3} {}{}\n",
            i + 1,
            setting_label(&t.row.setting),
            if t.row.finished_at.is_none() {
                " (stopped before its last run)"
            } else {
                ""
            }
        ));
        if !f.is_empty() {
            s.push_str(&format!("             {f}\n"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{TUNES_HEAD, tune_row};

    /// Each column title of the tunes' list starts where its column does in a row, and
    /// `trials` ends where the count's word ends.
    #[test]
    fn the_tunes_list_titles_sit_over_their_columns() {
        let row = tune_row(
            12,
            "2026-12-06 19:25",
            12,
            "done",
            "quick",
            "loop0 (scratch)",
        );
        assert_eq!(
            row,
            "  #12   2026-12-06 19:25   12 trials  done         quick         loop0 (scratch)\n"
        );
        let at = |line: &str, word: &str| line.find(word).unwrap();
        assert_eq!(at(TUNES_HEAD, "id"), at(&row, "#12"));
        assert_eq!(at(TUNES_HEAD, "started"), at(&row, "2026"));
        assert_eq!(
            at(TUNES_HEAD, "trials") + "trials".len(),
            at(&row, "trials") + "trials".len()
        );
        assert_eq!(at(TUNES_HEAD, "status"), at(&row, "done"));
        assert_eq!(at(TUNES_HEAD, "policy"), at(&row, "quick"));
        assert_eq!(at(TUNES_HEAD, "target"), at(&row, "loop0"));
    }
}

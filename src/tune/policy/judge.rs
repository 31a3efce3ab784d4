//! A policy's `[judge]`: the second judges a sweet spot must not lose on
//! ([`crate::tune::judge`] runs them).
//!
//! ```toml
//! [judge]
//! startup = ["light_io_load"]  # start-up latency (docs/judges.md) under these backgrounds
//! tolerance = 0.10             # the sweet spot may be at most 10% slower than the default
//! pairs = 6                    # interleaved (default, sweet spot) pairs per judge, 2..=50
//! ```
//!
//! Without `[judge]` a tune checks nothing but its objective (the shipped `throughput` says
//! why in its comments).

use crate::Result;
use crate::bench::Load;
use crate::tomlfile::TomlFile;
use serde::{Deserialize, Serialize};
use toml::Spanned;

/// Pairs per judge when `pairs` is not given. Chosen on the development seeds 1..100 of
/// `examples/judge_rates.rs` (4 pairs kept the start-up-neutral sweet spot in 91% of tunes, 6
/// in 98%, as often as without a judge); the published rates, on held-out seeds, are in
/// `examples/judge-rates.md`.
pub(crate) const DEFAULT_PAIRS: u32 = 6;
/// Tolerance when `tolerance` is not given: 10% slower at most (the issue's 5–10%; start-up
/// latency runs of a second on a slow disk vary by several %, so 5% would refuse most sweet
/// spots for noise alone at 4 pairs).
pub(crate) const DEFAULT_TOLERANCE: f64 = 0.10;

/// The judges of a policy: the start-up judge under each of `startup`'s backgrounds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Judges {
    /// Backgrounds of the start-up judge, each one judge (`no_load`: start-up alone).
    pub startup: Vec<Load>,
    /// How much slower than the default a judge may find the sweet spot, as a fraction
    /// (0.10 = 10%): the margin of the non-inferiority test.
    pub tolerance: f64,
    /// Interleaved (default, sweet spot) pairs per judge.
    pub pairs: u32,
}

impl Judges {
    /// Judge runs a tune may add: 2 × pairs per judge.
    pub(crate) fn runs(&self) -> u64 {
        2 * u64::from(self.pairs) * self.startup.len() as u64
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawJudge {
    startup: Spanned<Vec<Spanned<String>>>,
    tolerance: Option<Spanned<f64>>,
    pairs: Option<Spanned<i64>>,
}

/// The `[judge]` table. Errors name its line and field: an unknown or repeated load, an
/// empty list, a tolerance outside (0, 1), pairs outside 2..=50.
pub(super) fn parse(cx: &TomlFile, j: &Spanned<RawJudge>) -> Result<Judges> {
    let r = j.get_ref();
    let mut startup = Vec::new();
    for (i, s) in r.startup.get_ref().iter().enumerate() {
        let field = format!("judge.startup[{i}]");
        let load = super::load_at(cx, s, &field)?;
        if startup.contains(&load) {
            return Err(cx.err(&s.span(), &field, "listed twice"));
        }
        startup.push(load);
    }
    if startup.is_empty() {
        return Err(cx.err(&r.startup.span(), "judge.startup", "empty list"));
    }
    let tolerance = match &r.tolerance {
        None => DEFAULT_TOLERANCE,
        Some(t) if *t.get_ref() > 0.0 && *t.get_ref() < 1.0 => *t.get_ref(),
        Some(t) => return Err(cx.err(&t.span(), "judge.tolerance", "must be in (0, 1)")),
    };
    let pairs = match &r.pairs {
        None => DEFAULT_PAIRS,
        Some(p) if (2..=50).contains(p.get_ref()) => *p.get_ref() as u32,
        Some(p) => return Err(cx.err(&p.span(), "judge.pairs", "must be an integer in 2..=50")),
    };
    Ok(Judges {
        startup,
        tolerance,
        pairs,
    })
}

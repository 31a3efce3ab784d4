//! A point's second judge: `startup = { light_io_load = { time_s = 1.7 }, ... }`, the
//! start-up judge's Time (s) under each background at that setting
//! ([`crate::bench::startup`] on a real device). Given at every point or at none, for the same
//! backgrounds; a simulated device without it has no start-up judge.

use super::raw::{Entries, RawStartup};
use super::{Parser, Point};
use crate::Result;
use crate::bench::Load;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use toml::Spanned;

impl Parser<'_> {
    /// A point's `startup` table: background load → start-up Time, s (`time_s`, the only
    /// field). Errors name the line and field.
    pub(super) fn startup(
        &self,
        v: &Spanned<Entries<RawStartup>>,
        field: &str,
    ) -> Result<BTreeMap<Load, f64>> {
        let mut out = BTreeMap::new();
        for (k, x) in &v.get_ref().0 {
            let f = format!("{field}.{}", k.get_ref());
            let load: Load = k
                .get_ref()
                .parse()
                .map_err(|e: String| self.f.err(&k.span(), &f, e))?;
            let time = x.get_ref().time_s.as_ref().ok_or_else(|| {
                self.f
                    .err(&x.span(), format!("{f}.time_s"), "missing (required)")
            })?;
            out.insert(load, self.positive(time, &format!("{f}.time_s"))?);
        }
        if out.is_empty() {
            return Err(self.f.err(&v.span(), field, "no background given"));
        }
        Ok(out)
    }

    /// Every point gives `startup` for the same backgrounds, or none does.
    pub(super) fn check_startup(&self, pts: &[Range<usize>], points: &[Point]) -> Result<()> {
        let first: BTreeSet<_> = points[0].startup.keys().collect();
        for (i, p) in points.iter().enumerate().skip(1) {
            let here: BTreeSet<_> = p.startup.keys().collect();
            if here != first {
                let want: Vec<_> = first.iter().map(|l| l.name()).collect();
                return Err(self.f.err(
                    &pts[i],
                    format!("point[{}].startup", i + 1),
                    format!(
                        "every point must give start-up figures for the same backgrounds as \
                         point[1] (line {}): [{}]",
                        points[0].line,
                        want.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }
}

//! A surface's `[knobs.<name>]` tables: integer knobs sweetspot knows, within the
//! catalogue's safe bounds ([`catalogue::bounds`]), and the categorical `[knobs.scheduler]`.

use super::raw::{self, Entries, RawKnob, Val};
use super::{Parser, SchedulerKnob, SurfaceKnob};
use crate::Result;
use crate::knob::catalogue;
use toml::Spanned;

impl Parser<'_> {
    /// A list of strings (`values`, `schedulers`).
    fn names(&self, v: &Spanned<Vec<Val>>, field: &str) -> Result<Vec<String>> {
        let mut out: Vec<String> = Vec::new();
        for x in v.get_ref() {
            let name = x
                .get_ref()
                .as_str()
                .ok_or_else(|| self.f.err(&x.span(), field, "expected a name (a string)"))?;
            if out.iter().any(|o| o == name) {
                return Err(self
                    .f
                    .err(&x.span(), field, format!("'{name}' is listed twice")));
            }
            out.push(name.to_string());
        }
        if out.is_empty() {
            return Err(self.f.err(&v.span(), field, "must list at least one name"));
        }
        Ok(out)
    }

    /// `[knobs.scheduler]`: `default` (a name) and `values` (the names offered).
    fn scheduler_knob(&self, v: &Spanned<RawKnob>) -> Result<SchedulerKnob> {
        let t = v.get_ref();
        let other = [
            ("min", t.min.as_ref().map(|x| x.span())),
            ("max", t.max.as_ref().map(|x| x.span())),
            ("schedulers", t.schedulers.as_ref().map(|x| x.span())),
        ];
        if let Some((key, Some(span))) = other.into_iter().find(|(_, s)| s.is_some()) {
            let field = format!("knobs.scheduler.{key}");
            return Err(self
                .f
                .err(&span, field, raw::unknown_key(&raw::SCHEDULER_KEYS)));
        }
        let values = match &t.values {
            Some(x) => self.names(x, "knobs.scheduler.values")?,
            None => {
                let field = "knobs.scheduler.values";
                return Err(self.f.err(&v.span(), field, "missing (required)"));
            }
        };
        let Some(d) = &t.default else {
            return Err(self
                .f
                .err(&v.span(), "knobs.scheduler.default", "missing (required)"));
        };
        let default = d.get_ref().as_str().ok_or_else(|| {
            self.f
                .err(&d.span(), "knobs.scheduler.default", "expected a name")
        })?;
        if !values.iter().any(|x| x == default) {
            return Err(self.f.err(
                &d.span(),
                "knobs.scheduler.default",
                format!("'{default}' is not one of values ({})", values.join(", ")),
            ));
        }
        Ok(SchedulerKnob {
            default: default.to_string(),
            values,
        })
    }

    /// `[knobs]`: the integer knobs (by name) and the scheduler knob, if declared.
    pub(super) fn knobs(
        &self,
        ks: Option<&Spanned<Entries<RawKnob>>>,
    ) -> Result<(Vec<SurfaceKnob>, Option<SchedulerKnob>)> {
        let Some(ks) = ks else {
            return Ok((Vec::new(), None));
        };
        let mut out = Vec::new();
        let mut choice = None;
        // (field, span) of each `schedulers` list, checked once the scheduler knob is known.
        let mut lists = Vec::new();
        for (k, v) in &ks.get_ref().0 {
            if k.get_ref() == "scheduler" {
                choice = Some(self.scheduler_knob(v)?);
                continue;
            }
            let knob = self.int_knob(k, v)?;
            if let (Some(names), Some(x)) = (&knob.schedulers, &v.get_ref().schedulers) {
                let field = format!("knobs.{}.schedulers", k.get_ref());
                lists.push((field, x.span(), names.clone()));
            }
            out.push(knob);
        }
        for (field, span, names) in lists {
            let Some(c) = &choice else {
                return Err(self.f.err(
                    &span,
                    field,
                    "needs a [knobs.scheduler] table (default, values) to refer to",
                ));
            };
            if let Some(bad) = names.iter().find(|n| !c.values.contains(n)) {
                return Err(self.f.err(
                    &span,
                    field,
                    format!(
                        "'{bad}' is not one of knobs.scheduler.values ({})",
                        c.values.join(", ")
                    ),
                ));
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok((out, choice))
    }

    /// An integer knob's `[knobs.<name>]`: a knob sweetspot knows, `default`, `min` and `max`
    /// within the catalogue's bounds, and the schedulers it exists under (checked against
    /// `[knobs.scheduler]` by [`Parser::knobs`]).
    fn int_knob(&self, k: &Spanned<String>, v: &Spanned<RawKnob>) -> Result<SurfaceKnob> {
        let name = k.get_ref().to_string();
        let f = format!("knobs.{name}");
        let t = v.get_ref();
        // A simulated device offers what its surface declares; a name no kernel has is a
        // typo, which a tune would only report as a policy knob the device lacks.
        if !catalogue::is_known(&name) {
            let hint = catalogue::did_you_mean(&name, catalogue::known_names());
            return Err(self.f.err(
                &k.span(),
                &f,
                format!("unknown knob '{name}'{hint}: not a knob sweetspot knows"),
            ));
        }
        if let Some(x) = &t.values {
            let msg = raw::unknown_key(&raw::KNOB_KEYS);
            return Err(self.f.err(&x.span(), format!("{f}.values"), msg));
        }
        let get = |key: &str, x: &Option<Val>| -> Result<i64> {
            let field = format!("{f}.{key}");
            let x = x
                .as_ref()
                .ok_or_else(|| self.f.err(&v.span(), &field, "missing (required)"))?;
            self.int(x, &field)
        };
        let default = get("default", &t.default)?;
        let (min, max) = (get("min", &t.min)?, get("max", &t.max)?);
        if min > max {
            return Err(self.f.err(&v.span(), &f, format!("min {min} > max {max}")));
        }
        // A knob the catalogue knows: a simulated device offers nothing a real one refuses
        // (`max = 99999999999` had the tuner try read_ahead_kb=67108864).
        if let Some((lo, hi)) = catalogue::bounds(&name) {
            for (key, x, at) in [("min", min, &t.min), ("max", max, &t.max)] {
                if !(lo..=hi).contains(&x) {
                    let span = at.as_ref().map_or(v.span(), |d| d.span());
                    return Err(self.f.err(
                        &span,
                        format!("{f}.{key}"),
                        format!(
                            "{x} is outside {name}'s safe bounds {} (src/knob/catalogue.rs)",
                            catalogue::domain_text(lo, hi)
                        ),
                    ));
                }
            }
        }
        if !(min..=max).contains(&default) {
            let span = t.default.as_ref().map_or(v.span(), |d| d.span());
            return Err(self.f.err(
                &span,
                format!("{f}.default"),
                format!("{default} is outside [{min}, {max}]"),
            ));
        }
        let schedulers = match &t.schedulers {
            Some(x) => Some(self.names(x, &format!("{f}.schedulers"))?),
            None => None,
        };
        Ok(SurfaceKnob {
            name,
            default,
            min,
            max,
            schedulers,
        })
    }
}

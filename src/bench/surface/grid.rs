//! The grids of a surface: one per scheduler value (or one in all without a scheduler knob),
//! each a full grid over the integer knobs that exist under its scheduler. Interpolation
//! ([`crate::bench::sim`]) never crosses from one scheduler's grid to another's: a child knob
//! such as `fifo_batch` belongs to its scheduler, as `queue/iosched/` does in the kernel.

use super::{Axis, Parser, Point, SchedulerKnob, SurfaceKnob};
use crate::Result;
use std::collections::BTreeSet;
use std::ops::Range;

/// The points of one scheduler (or of a surface without a scheduler knob) as a full grid.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    /// The scheduler these points belong to; `None` without a scheduler knob.
    pub scheduler: Option<String>,
    /// One axis per integer knob that exists under the scheduler, in knob-name order (none
    /// for a scheduler without child knobs: its grid is a single point).
    pub axes: Vec<Axis>,
    /// Grid vertex (row-major over [`Grid::axes`], last axis fastest) → index into
    /// [`super::Surface::points`].
    pub vertex: Vec<usize>,
}

impl Parser<'_> {
    /// One [`Grid`] per scheduler value (file order), or a single one without a scheduler
    /// knob; each must be full (every combination of its knobs' listed values exactly once).
    pub(super) fn grids(
        &self,
        pts: &[Range<usize>],
        points: &[Point],
        knobs: &[SurfaceKnob],
        choice: Option<&SchedulerKnob>,
    ) -> Result<Vec<Grid>> {
        let scheds: Vec<Option<String>> = match choice {
            Some(c) => c.values.iter().cloned().map(Some).collect(),
            None => vec![None],
        };
        let mut out = Vec::new();
        for sched in scheds {
            let members: Vec<usize> = (0..points.len())
                .filter(|&i| points[i].scheduler == sched)
                .collect();
            let Some(&first) = members.first() else {
                let name = sched.unwrap_or_default();
                return Err(self.f.err(
                    &pts[0],
                    "point",
                    format!("no point for scheduler = \"{name}\" (every listed scheduler needs its points)"),
                ));
            };
            let here: Vec<&SurfaceKnob> = knobs
                .iter()
                .filter(|k| k.exists_under(sched.as_deref()))
                .collect();
            let axes: Vec<Axis> = here
                .iter()
                .map(|k| {
                    let values: BTreeSet<i64> =
                        members.iter().map(|&i| points[i].knobs[&k.name]).collect();
                    let values: Vec<i64> = values.into_iter().collect();
                    Axis {
                        name: k.name.clone(),
                        log2: values.iter().all(|&v| v > 0),
                        values,
                    }
                })
                .collect();
            let vertex = self.fill(pts, points, &members, &axes, first, sched.as_deref())?;
            out.push(Grid {
                scheduler: sched,
                axes,
                vertex,
            });
        }
        Ok(out)
    }

    /// The vertex table of one grid; errors on a duplicate or a missing combination.
    fn fill(
        &self,
        pts: &[Range<usize>],
        points: &[Point],
        members: &[usize],
        axes: &[Axis],
        first: usize,
        sched: Option<&str>,
    ) -> Result<Vec<usize>> {
        let cells: usize = axes.iter().map(|a| a.values.len()).product();
        let mut vertex = vec![usize::MAX; cells];
        for &i in members {
            let p = &points[i];
            let mut flat = 0;
            for a in axes {
                let pos = a
                    .values
                    .iter()
                    .position(|&v| v == p.knobs[&a.name])
                    .unwrap_or(0);
                flat = flat * a.values.len() + pos;
            }
            if vertex[flat] != usize::MAX {
                return Err(self.f.err(
                    &pts[i],
                    format!("point[{}].knobs", i + 1),
                    format!(
                        "duplicate point: the same knob values as point[{}] (line {})",
                        vertex[flat] + 1,
                        points[vertex[flat]].line
                    ),
                ));
            }
            vertex[flat] = i;
        }
        if let Some(gap) = vertex.iter().position(|&v| v == usize::MAX) {
            let mut rest = gap;
            let mut combo = Vec::new();
            for a in axes.iter().rev() {
                combo.push(format!("{}={}", a.name, a.values[rest % a.values.len()]));
                rest /= a.values.len();
            }
            combo.reverse();
            let shape: Vec<String> = axes.iter().map(|a| a.values.len().to_string()).collect();
            let under = sched.map(|s| format!(" under {s}")).unwrap_or_default();
            return Err(self.f.err(
                &pts[first],
                "point",
                format!(
                    "points do not form a full grid{under}: no point for {} ({} points given, a {} grid needs {})",
                    combo.join(" "),
                    members.len(),
                    shape.join("×"),
                    cells
                ),
            ));
        }
        Ok(vertex)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Surface;
    use crate::Error;
    use std::path::Path;

    const HEAD: &str = "[knobs.scheduler]\ndefault = \"bfq\"\nvalues = [\"mq-deadline\", \"bfq\"]\n\
                        [knobs.fifo_batch]\ndefault = 16\nmin = 1\nmax = 256\n\
                        schedulers = [\"mq-deadline\"]\n";

    fn pt(knobs: &str) -> String {
        format!("[[point]]\nknobs = {{ {knobs} }}\nio_load = {{ time_s = 2, loads = 10 }}\n")
    }

    fn bad(src: &str) -> (usize, String, String) {
        match Surface::parse(Path::new("t.toml"), src) {
            Err(Error::BadFile {
                line, field, msg, ..
            }) => (line.unwrap_or(0), field, msg),
            other => panic!("expected BadFile, got {other:?}"),
        }
    }

    #[test]
    fn a_scheduler_knob_makes_one_grid_per_scheduler_with_its_own_children() {
        let src = format!(
            "{HEAD}{}{}{}",
            pt("scheduler = \"mq-deadline\", fifo_batch = 1"),
            pt("scheduler = \"bfq\""),
            pt("scheduler = \"mq-deadline\", fifo_batch = 16"),
        );
        let s = Surface::parse(Path::new("t.toml"), &src).unwrap();
        let c = s.choice.as_ref().unwrap();
        assert_eq!((c.default.as_str(), c.values.len()), ("bfq", 2));
        let mq = s.grid(Some("mq-deadline")).unwrap();
        assert_eq!(mq.axes.len(), 1);
        assert_eq!(mq.axes[0].values, vec![1, 16]);
        assert_eq!(mq.vertex, vec![0, 2]);
        let bfq = s.grid(Some("bfq")).unwrap();
        assert!(bfq.axes.is_empty());
        assert_eq!(bfq.vertex, vec![1]);
        assert!(s.grid(None).is_none());
    }

    /// `lists_default`: the default scheduler's point with its children at their defaults.
    #[test]
    fn a_surface_lists_its_default_only_with_a_point_at_every_default() {
        let parse = |pts: &[&str]| {
            let src: String = pts.iter().map(|p| pt(p)).collect();
            Surface::parse(Path::new("t.toml"), &format!("{HEAD}{src}")).unwrap()
        };
        let mq = "scheduler = \"mq-deadline\", fifo_batch = 1";
        assert!(parse(&[mq, "scheduler = \"bfq\""]).lists_default());
        // The default is bfq; mq-deadline at fifo_batch's default 16 is not it.
        let head = HEAD.replace("default = \"bfq\"", "default = \"mq-deadline\"");
        let src = format!("{head}{}{}", pt(mq), pt("scheduler = \"bfq\""));
        assert!(
            !Surface::parse(Path::new("t.toml"), &src)
                .unwrap()
                .lists_default()
        );
        let src = format!(
            "{head}{}{}{}",
            pt(mq),
            pt("scheduler = \"mq-deadline\", fifo_batch = 16"),
            pt("scheduler = \"bfq\"")
        );
        assert!(
            Surface::parse(Path::new("t.toml"), &src)
                .unwrap()
                .lists_default()
        );
    }

    #[test]
    fn scheduler_errors_name_line_and_field() {
        // A child knob given under a scheduler that lacks it.
        let src = format!("{HEAD}{}", pt("scheduler = \"bfq\", fifo_batch = 4"));
        let (l, f, m) = bad(&src);
        assert_eq!((l, f.as_str()), (10, "point[1].knobs.fifo_batch"), "{m}");
        assert!(m.contains("does not exist under scheduler 'bfq'"), "{m}");
        // A child knob missing under its own scheduler.
        let (_, f, m) = bad(&format!("{HEAD}{}", pt("scheduler = \"mq-deadline\"")));
        assert_eq!(f, "point[1].knobs");
        assert!(m.contains("no value for knob 'fifo_batch'"), "{m}");
        // A scheduler that is not offered; a scheduler without points.
        let (_, f, m) = bad(&format!("{HEAD}{}", pt("scheduler = \"cfq\"")));
        assert_eq!(f, "point[1].knobs.scheduler");
        assert!(m.contains("not one of knobs.scheduler.values"), "{m}");
        let (_, f, m) = bad(&format!("{HEAD}{}", pt("scheduler = \"bfq\"")));
        assert_eq!(f, "point");
        assert!(
            m.contains("no point for scheduler = \"mq-deadline\""),
            "{m}"
        );
        // `schedulers` naming an unknown scheduler, or without a scheduler knob.
        let src = HEAD.replace("schedulers = [\"mq-deadline\"]", "schedulers = [\"kyber\"]");
        let (l, f, _) = bad(&format!("{src}{}", pt("scheduler = \"bfq\"")));
        assert_eq!((l, f.as_str()), (8, "knobs.fifo_batch.schedulers"));
        let src = "[knobs.fifo_batch]\ndefault = 16\nmin = 1\nmax = 256\nschedulers = [\"bfq\"]\n";
        let (_, f, m) = bad(&format!("{src}{}", pt("fifo_batch = 1")));
        assert_eq!(f, "knobs.fifo_batch.schedulers");
        assert!(m.contains("needs a [knobs.scheduler]"), "{m}");
        // The default must be offered.
        let src = HEAD.replace("default = \"bfq\"", "default = \"none\"");
        let (l, f, _) = bad(&format!("{src}{}", pt("scheduler = \"bfq\"")));
        assert_eq!((l, f.as_str()), (2, "knobs.scheduler.default"));
    }
}

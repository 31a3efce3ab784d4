//! What a policy needs its testbed to measure, checked before the first trial: every load of
//! the policy (its Time), the objective's metric (`maximize = "loads"` needs that load's
//! Loads) and every guard rail's metric. A simulated surface without `loads` used to run a
//! whole `throughput` tune on NaN and store a "sweet spot"; now it is bad input (exit 2).
//! Ratio needs only Times (of the load and of no_load, which the policy parser requires).

use crate::bench::{Load, Testbed};
use crate::tune::policy::{Metric, Objective, Policy};
use crate::{Error, Result};

/// Checks that `testbed` can give every (load, metric) that `policy` needs.
///
/// Errors: [`Error::BadInput`] naming what the testbed lacks (for a surface: its file), the
/// policy and its file, and what the policy wanted it for, e.g. `data/surfaces/seed.toml: no
/// point gives io_load `loads`; policy 'throughput' (policies/throughput.toml) maximises
/// io_load Loads`.
pub(crate) fn check(testbed: &dyn Testbed, policy: &Policy) -> Result<()> {
    let mut needs: Vec<(Load, &str, String)> = policy
        .loads
        .iter()
        .map(|&l| (l, "time_s", format!("runs {l}")))
        .collect();
    if let Objective::MaxLoads { load } = &policy.objective {
        let why = format!("maximises {}", policy.objective.label());
        needs.push((*load, Metric::Loads.name(), why));
    }
    if let Objective::Benchmark(job) = &policy.objective {
        // The figure rides in no_load's `loads` (crate::bench::user_job).
        let why = format!("optimises the benchmark `{}`", job.command);
        needs.push((Load::NoLoad, Metric::Loads.name(), why));
    }
    for g in &policy.guards {
        if g.metric != Metric::Ratio {
            let why = format!("has the guard rail {}", g.label());
            needs.push((g.load, g.metric.name(), why));
        }
    }
    for (load, metric, why) in needs {
        if let Some(reason) = testbed.lacks(load, metric) {
            return Err(Error::BadInput(format!(
                "{reason}; policy '{}' ({}) {why}",
                policy.name,
                policy.path.display()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::SimDevice;
    use crate::tune::policy;
    use std::path::Path;

    fn sim(file: &str) -> SimDevice {
        SimDevice::open(Path::new(file), 1).unwrap()
    }

    #[test]
    fn a_surface_without_loads_cannot_serve_throughput() {
        let seed = sim("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml");
        let t = policy::builtin("throughput").unwrap().unwrap();
        let e = check(&seed, &t).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            "data/surfaces/seed-2.5.39-mm1-fifo_batch.toml: no point gives io_load `loads`; \
             policy 'throughput' (policies/throughput.toml) maximises io_load Loads"
        );
        check(&seed, &policy::builtin("quick").unwrap().unwrap()).unwrap();
        // The guard surface lists io_load Loads: throughput and a loads guard are fine there.
        let guard = sim("tests/surfaces/guard-fifo_batch.toml");
        check(&guard, &t).unwrap();
        check(
            &guard,
            &policy::load_file(
                Path::new("tests/policies/guarded.toml"),
                crate::trust::Origin::Named,
            )
            .unwrap(),
        )
        .unwrap();
    }

    #[test]
    fn a_guard_on_a_missing_metric_and_a_missing_load_are_named() {
        let seed = sim("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml");
        let g = policy::load_file(
            Path::new("tests/policies/guarded.toml"),
            crate::trust::Origin::Named,
        )
        .unwrap();
        let e = check(&seed, &g).unwrap_err().to_string();
        assert_eq!(
            e,
            "data/surfaces/seed-2.5.39-mm1-fifo_batch.toml: no point gives io_load `loads`; \
             policy 'guarded' (tests/policies/guarded.toml) has the guard rail io_load loads \
             >= 0.5x default"
        );
        let d = policy::builtin("desktop").unwrap().unwrap();
        let e = check(&seed, &d).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "data/surfaces/seed-2.5.39-mm1-fifo_batch.toml: the surface has no read_load \
                 (it has: no_load, io_load); policy 'desktop' (policies/desktop.toml) runs \
                 read_load"
            ),
            "{e}"
        );
    }
}

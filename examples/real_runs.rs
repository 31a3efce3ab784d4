//! Drives the real runner on a `--scratch` loop device without the CLI, for sizing the job and
//! measuring noise: `cargo run --release --example real_runs -- [LOADS] [RUNS] [SCALE]`
//! e.g. `no_load,io_load 5 1.0`. Prints one line per run. Needs root.

use sweetspot::bench::Load;
use sweetspot::bench::contest_run::{BenchOptions, Bencher};
use sweetspot::bench::scratch::Scratch;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    sweetspot::signals::install();
    let args: Vec<String> = std::env::args().collect();
    let loads: Vec<Load> = args
        .get(1)
        .map(String::as_str)
        .unwrap_or("no_load,io_load")
        .split(',')
        .map(|s| s.parse())
        .collect::<Result<_, _>>()?;
    let runs: u32 = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(1);
    let scale: f64 = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(1.0);
    let t0 = std::time::Instant::now();
    // It changes no knob: no database journals it (a leftover is any sweep's to remove).
    let scratch = Scratch::create(1024, std::path::Path::new("/nonexistent/no-journal.db"))?;
    let mut opts = BenchOptions::new()?;
    opts.job_scale = scale;
    // The example binary is not sweetspot; the worker is.
    opts.exe = std::env::current_exe()?
        .parent()
        .and_then(|p| p.parent())
        .map(|p| p.join("sweetspot"))
        .ok_or("no exe dir")?;
    let mut b = Bencher::new(scratch.mount_point(), opts)?;
    eprintln!(
        "setup {:.2} s on {}",
        t0.elapsed().as_secs_f64(),
        scratch.device_name()
    );
    for _ in 0..runs {
        for &l in &loads {
            let r = b.run(l)?;
            println!(
                "{:<12} time {:6.2} s  cpu {:5.1}%  loads {:>8}  lcpu {:>6}  {}",
                l.name(),
                r.time_s,
                r.cpu_pct,
                r.loads.map(|x| format!("{x:.0}")).unwrap_or("-".into()),
                r.lcpu_pct.map(|x| format!("{x:.1}")).unwrap_or("-".into()),
                r.failed.unwrap_or_default()
            );
        }
    }
    drop(b);
    drop(scratch);
    eprintln!("total {:.2} s", t0.elapsed().as_secs_f64());
    Ok(())
}

//! The write budget of a flash device: what retunes may write to it, MiB a day averaged over
//! [`WINDOW_DAYS`] days, by its own `stat` counters (`[max_write_mib_per_day]` in the
//! config). io_load writes hundreds of MiB a run, so a retune of an SD card writes gigabytes;
//! a retune that would take the device's writes over its budget waits until enough of the
//! window's writes age out (`status`: `write budget`). What the next retune will write is
//! taken to be what the device's last counted tune wrote.

use super::config::Config;
use super::retune::class;
use crate::Result;
use crate::device::Device;
use crate::store::Store;
use crate::store::tunes::TuneWrite;

/// The window the budget is averaged over, days: a retune of a card measured at 3 GiB fits
/// a budget of 100 MiB a day once a month.
pub const WINDOW_DAYS: i64 = 30;

/// Bytes in a MiB.
const MIB: f64 = 1_048_576.0;

/// The budget of `dev`, MiB a day: its identity's entry, else its class's; `None` for a
/// rotational device or one the table does not name.
pub fn mib_per_day(cfg: &Config, dev: &Device) -> Option<f64> {
    if dev.rotational {
        return None;
    }
    cfg.max_write_mib_per_day
        .get(&dev.identity)
        .or_else(|| cfg.max_write_mib_per_day.get(class(dev)))
        .copied()
}

/// Why a retune of `dev` at `now` (Unix s) would go over its budget, and when it will not
/// (Unix s; `None` when a retune alone writes more than the whole window's budget); `None`
/// when it fits or `dev` has no budget.
pub fn over(
    store: &Store,
    cfg: &Config,
    dev: &Device,
    now: i64,
) -> Result<Option<(String, Option<i64>)>> {
    let Some(mib) = mib_per_day(cfg, dev) else {
        return Ok(None);
    };
    let window_s = WINDOW_DAYS * 86_400;
    let (writes, next) = store.tune_writes(&dev.identity, now - window_s)?;
    Ok(judge(&writes, next, mib, window_s))
}

/// [`over`] from the window's tunes `writes` (oldest first), the next retune's expected
/// bytes `next` and the budget `mib` MiB a day over `window_s` seconds.
fn judge(
    writes: &[TuneWrite],
    next: Option<u64>,
    mib: f64,
    window_s: i64,
) -> Option<(String, Option<i64>)> {
    let cap = mib * MIB * (window_s as f64 / 86_400.0);
    let next = next.unwrap_or(0) as f64;
    let mut used: f64 = writes.iter().map(|w| w.bytes as f64).sum();
    if used + next <= cap {
        return None;
    }
    let shown = |b: f64| bytesize::ByteSize::b(b as u64).display().iec().to_string();
    let mut why = format!(
        "retunes wrote {} to it in the last {WINDOW_DAYS} days and one writes about {}: over its \
         budget of {} ({mib} MiB a day)",
        shown(used),
        shown(next),
        shown(cap),
    );
    // The first time enough of the window's writes have aged out.
    let until = writes.iter().find_map(|w| {
        used -= w.bytes as f64;
        (used + next <= cap).then_some(w.started_at + window_s)
    });
    if until.is_none() {
        why.push_str("; one retune alone writes more than the whole budget");
    }
    Some((why, until))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400;

    fn w(started_at: i64, mib: u64) -> TuneWrite {
        TuneWrite {
            started_at,
            bytes: mib << 20,
        }
    }

    #[test]
    fn a_retune_waits_until_enough_of_the_windows_writes_age_out() {
        // 100 MiB a day over 30 days: 3000 MiB. Two tunes of 1200 MiB in the window and
        // one more expected: 3600 MiB, over; once the first (day 2) ages out, 2400 fits.
        let writes = [w(2 * DAY, 1200), w(20 * DAY, 1200)];
        let (why, until) = judge(&writes, Some(1200 << 20), 100.0, 30 * DAY).unwrap();
        assert_eq!(until, Some(32 * DAY));
        assert!(
            why.starts_with(
                "retunes wrote 2.3 GiB to it in the last 30 days and one writes about 1.2 GiB: \
                 over its budget of 2.9 GiB (100 MiB a day)"
            ),
            "{why}"
        );
        // One tune in the window: 2400 MiB fits.
        assert_eq!(judge(&writes[1..], Some(1200 << 20), 100.0, 30 * DAY), None);
        // Never counted (a first retune): nothing expected, nothing used.
        assert_eq!(judge(&[], None, 100.0, 30 * DAY), None);
    }

    #[test]
    fn a_retune_larger_than_the_whole_budget_says_so() {
        let (why, until) = judge(&[], Some(4000 << 20), 100.0, 30 * DAY).unwrap();
        assert_eq!(until, None);
        assert!(
            why.ends_with("one retune alone writes more than the whole budget"),
            "{why}"
        );
    }

    fn dev(name: &str, rotational: bool) -> Device {
        Device {
            name: name.into(),
            identity: format!("by-path:{name}"),
            dev: "179:0".into(),
            rotational,
            zoned: "none".into(),
            schedulers: Vec::new(),
            scheduler: String::new(),
            size_bytes: 1 << 30,
            writable: true,
            mounts: Vec::new(),
        }
    }

    #[test]
    fn the_budget_is_the_identitys_else_the_classs_and_none_for_a_spinning_disk() {
        let mut cfg = Config::default();
        assert_eq!(mib_per_day(&cfg, &dev("mmcblk0", false)), Some(100.0));
        assert_eq!(mib_per_day(&cfg, &dev("sda", false)), None);
        cfg.max_write_mib_per_day
            .insert("by-path:mmcblk0".into(), 20.0);
        cfg.max_write_mib_per_day.insert("ssd".into(), 500.0);
        assert_eq!(mib_per_day(&cfg, &dev("mmcblk0", false)), Some(20.0));
        assert_eq!(mib_per_day(&cfg, &dev("sda", false)), Some(500.0));
        assert_eq!(mib_per_day(&cfg, &dev("sdb", true)), None);
    }
}

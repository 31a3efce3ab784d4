//! The write budget of a flash device: what tunes may write to it, by its own `stat`
//! counters (`[max_write_mib_per_day]` in the config). io_load writes hundreds of MiB a run,
//! so a retune of an SD card writes gigabytes. The budget is a token bucket (the leaky bucket
//! of network traffic shaping, e.g. RFC 2697's committed burst): it fills at the budget's
//! MiB a day up to `SAVED_DAYS` days' worth, each tune of the device (retunes, and tunes
//! run by hand, which wear it as much) takes what it wrote, and a retune starts only when the
//! bucket holds what the next one will write (taken to be what the device's last counted tune
//! wrote; a retune larger than the whole bucket waits for a full one). Over time the tunes
//! write at most the budget a day on average, and a retune waits until then (`status`:
//! `write budget`, with the date).

use super::config::DaemonConfig;
use super::retune::class;
use crate::Result;
use crate::device::Device;
use crate::store::Store;
use crate::store::tunes::TuneWrite;

/// The most the bucket saves up, in days of budget: a card retuned monthly may write a
/// month's budget in one retune.
pub(crate) const SAVED_DAYS: f64 = 30.0;

/// Bytes in a MiB.
const MIB: f64 = 1_048_576.0;

/// The budget of `dev`, MiB a day: its identity's entry, else its class's; `None` for a
/// rotational device or one the table does not name.
pub(crate) fn mib_per_day(cfg: &DaemonConfig, dev: &Device) -> Option<f64> {
    if dev.rotational {
        return None;
    }
    cfg.max_write_mib_per_day
        .get(&dev.identity)
        .or_else(|| cfg.max_write_mib_per_day.get(class(dev)))
        .copied()
}

/// Why a retune of `dev` at `now` (Unix s) must wait for its budget, and until when (Unix
/// s); `None` when the budget holds it or `dev` has none.
pub(crate) fn over(
    store: &Store,
    cfg: &DaemonConfig,
    dev: &Device,
    now: i64,
) -> Result<Option<(String, i64)>> {
    let Some(mib) = mib_per_day(cfg, dev) else {
        return Ok(None);
    };
    Ok(judge(&store.tune_writes(&dev.identity)?, mib, now))
}

/// [`over`] from the device's tunes `writes` (oldest first) and the budget `mib` MiB a day.
/// The next retune is taken to write what the newest counted tune wrote.
fn judge(writes: &[TuneWrite], mib: f64, now: i64) -> Option<(String, i64)> {
    let next = writes.iter().rev().find_map(|w| w.bytes);
    let per_day = mib * MIB;
    let cap = per_day * SAVED_DAYS;
    // What the bucket gains in `s` seconds, bytes.
    let fill = |s: i64| per_day * (s.max(0) as f64 / 86_400.0);
    // The bucket starts full at the first tune, fills up to `cap`, and each tune takes what
    // it wrote (it may go below zero: a tune larger than the bucket).
    let (mut level, mut at) = (cap, writes.first().map_or(now, |w| w.started_at));
    for w in writes {
        level = (level + fill(w.started_at - at)).min(cap) - w.bytes.unwrap_or(0) as f64;
        at = w.started_at;
    }
    let level_now = (level + fill(now - at)).min(cap);
    let need = (next.unwrap_or(0) as f64).min(cap);
    if need <= level_now {
        return None;
    }
    let until = at + ((need - level) * 86_400.0 / per_day).ceil() as i64;
    let shown = |b: f64| crate::types::text::bytes(b.max(0.0) as u64);
    let why = format!(
        "its tunes left {} of its write budget ({mib} MiB a day, at most {} saved up) and a \
         retune writes about {}",
        shown(level_now),
        shown(cap),
        shown(next.unwrap_or(0) as f64),
    );
    Some((why, until))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400;

    fn w(started_at: i64, mib: u64) -> TuneWrite {
        TuneWrite {
            started_at,
            bytes: Some(mib << 20),
        }
    }

    #[test]
    fn a_retune_waits_until_the_bucket_holds_what_the_last_tune_wrote() {
        // 100 MiB a day, at most 3000 MiB saved. Tunes of 2000 MiB on day 0 and day 5: the
        // bucket holds 3000 − 2000 = 1000, then 1000 + 500 − 2000 = −500 on day 5. The next
        // retune is taken to write 2000 MiB: 2500 more MiB, 25 days, day 30.
        let writes = [w(0, 2000), w(5 * DAY, 2000)];
        let (why, until) = judge(&writes, 100.0, 6 * DAY).unwrap();
        assert_eq!(until, 30 * DAY);
        assert_eq!(
            why,
            "its tunes left 0 B of its write budget (100 MiB a day, at most 2.9 GiB saved up) and \
             a retune writes about 2.0 GiB"
        );
        assert_eq!(judge(&writes, 100.0, 30 * DAY), None);
        // A tune with no figure (a simulated one) takes nothing and leaves the estimate.
        let uncounted = [
            writes[0],
            writes[1],
            TuneWrite {
                started_at: 6 * DAY,
                bytes: None,
            },
        ];
        assert_eq!(
            judge(&uncounted, 100.0, 7 * DAY).map(|x| x.1),
            Some(30 * DAY)
        );
        // A smaller last tune (1000 MiB on day 5: 500 left) needs 500 more: day 10.
        let smaller = [w(0, 2000), w(5 * DAY, 1000)];
        assert_eq!(judge(&smaller, 100.0, 6 * DAY).map(|x| x.1), Some(10 * DAY));
        assert_eq!(judge(&smaller, 100.0, 10 * DAY), None);
        // Never tuned: nothing expected, nothing used.
        assert_eq!(judge(&[], 100.0, 0), None);
    }

    #[test]
    fn a_retune_larger_than_the_whole_bucket_waits_for_a_full_one() {
        // 4000 MiB > the 3000 saved at most: 3000 − 4000 = −1000 after it, and the next
        // waits for a full bucket, 40 days on. Over the long run the average stays at the
        // budget.
        let writes = [w(0, 4000)];
        assert_eq!(judge(&writes, 100.0, 39 * DAY).map(|x| x.1), Some(40 * DAY));
        assert_eq!(judge(&writes, 100.0, 40 * DAY), None);
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
        let mut cfg = DaemonConfig::default();
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

//! `--emulate PRESET|SPEC`: what an emulated device is, parsed from the command line.
//!
//! A SPEC is a comma-separated list of `field=value` items, optionally led by a preset name
//! whose fields the items then override: `hdd-5400`, `hdd-5400,channels=4`,
//! `latency=500us,bandwidth=200MB/s,channels=4`. Fields:
//!
//! | field | value | meaning |
//! |---|---|---|
//! | `latency` | duration (`500us`, `8ms`), 0–10 s | per-request access time of a read (flash) or the command overhead (hdd) |
//! | `write-latency` | duration, 0–10 s | the same for writes (default: `latency`, or after a preset the preset's) |
//! | `bandwidth` | rate (`200MB/s`, `30MiB/s`), 1 kB/s to 1000 GB/s (`MAX_RATE`), or `unlimited` | transfer rate of reads and writes |
//! | `read-bandwidth`, `write-bandwidth` | rate, as `bandwidth` | one direction only: wins over `bandwidth`, whatever the order |
//! | `channels` | 1–256 | requests served at once (flash), or the NCQ depth the disk reorders (hdd; 1 = no NCQ) |
//! | `ncq` | 1–32 | hdd: the same depth under its disk name, at most SATA's 32 tags (`NCQ_TAGS`); not with `channels` |
//! | `wcache` | size, 0 or 64 KiB–1 GiB | hdd: a volatile write cache of that size (0: none, the presets' default); see [`super::model`] |
//! | `seek` | `none` or `hdd` | the positioning model: none (flash-like), or a disk arm and platter |
//! | `rpm` | 1000–20000 | hdd: spindle speed (rotational latency: half a revolution on average) |
//! | `track-seek`, `full-seek` | duration, 0–10 s, track ≤ full | hdd: track-to-track and full-stroke seek times |
//! | `stroke` | size (`1GiB`, `40GB`), at least 1 MiB, less than 10^18 B (`1000000000GB`) | hdd: the byte span of a full stroke (default: the device size) |
//!
//! The items override the preset's values, and among the items the order does not matter: a
//! field is given at most once, and a direction's own field (`write-latency`,
//! `read-bandwidth`, `write-bandwidth`) wins over the one for both (`latency`, `bandwidth`),
//! so `bandwidth=100MB/s,read-bandwidth=20MB/s` and `read-bandwidth=20MB/s,bandwidth=100MB/s`
//! are the same device (reads 20 MB/s, writes 100 MB/s).
//!
//! `_` may stand for `-` in field names. Units: durations in `ns`, `us` (or `µs`), `ms`, `s`;
//! rates in `B/s`, `kB/s`, `MB/s`, `GB/s` (powers of 1000) or `KiB/s`, `MiB/s`, `GiB/s`, from
//! 1 kB/s to 1000 GB/s (`MAX_RATE`), or `unlimited`; sizes
//! the same without `/s`. A bad SPEC names the field and the value ([`Error::BadInput`], exit 2).
//!
//! The presets and the public figures they come from are in `PRESETS`; the service-time
//! models that use these fields are in [`super::model`].

use crate::{Error, Result};
use std::fmt;

/// The positioning model of an emulated device.
#[derive(Clone, Debug, PartialEq)]
pub enum Seek {
    /// No positioning cost: every request costs access latency + transfer (flash-like).
    None,
    /// A disk: a request away from where the previous one ended pays a seek (growing with the
    /// square root of the distance, from `track_s` to `full_s`) plus half a revolution.
    Hdd {
        /// Spindle speed, revolutions per minute.
        rpm: f64,
        /// Track-to-track (single-track) seek time, s.
        track_s: f64,
        /// Full-stroke seek time, s.
        full_s: f64,
        /// Bytes a full stroke spans; `None`: the emulated device's size.
        stroke: Option<u64>,
    },
}

/// An emulated device (see the module docs for the fields).
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// The preset it started from, if any.
    pub preset: Option<&'static str>,
    /// Read access latency (flash) or command overhead (hdd), s.
    pub read_latency_s: f64,
    /// Write access latency or command overhead, s.
    pub write_latency_s: f64,
    /// Read transfer rate, bytes/s (`f64::INFINITY`: no transfer cost).
    pub read_bw: f64,
    /// Write transfer rate, bytes/s.
    pub write_bw: f64,
    /// Parallel channels (flash) or NCQ depth (hdd).
    pub channels: u32,
    /// Bytes of volatile write cache (hdd only; 0: none, writes go to the platter).
    pub write_cache: u64,
    /// The positioning model.
    pub seek: Seek,
}

/// A preset: its name, its SPEC, and where its figures come from.
pub struct Preset {
    /// `hdd-5400`, ...
    pub name: &'static str,
    /// The SPEC it stands for.
    pub spec: &'static str,
    /// The public figures behind it (shown by `--emulate help`-style errors and the docs).
    pub source: &'static str,
}

/// The presets. Seek figures are datasheet "typical" values; with the square-root seek curve
/// of [`super::model`] the mean seek over uniformly random pairs is
/// `track + 8/15 (full - track)`, which for `hdd-5400` gives 11.1 ms against the datasheet's
/// 11 ms average.
pub(crate) const PRESETS: &[Preset] = &[
    Preset {
        name: "hdd-5400",
        spec: "seek=hdd,rpm=5400,track-seek=1ms,full-seek=20ms,latency=100us,bandwidth=30MB/s,channels=1",
        source: "a 5400 rpm ATA-100 disk without NCQ: Hitachi Travelstar 5K160 (PATA) \
                 specification, typical single-track seek 1.0 ms, full stroke 20 ms, average \
                 11 ms, 5.5 ms average latency at 5400 rpm; the 30 MB/s media rate and the \
                 100 us command overhead are assumptions for a disk of that class (the \
                 datasheet's rate table was not consulted)",
    },
    Preset {
        name: "hdd-7200",
        spec: "seek=hdd,rpm=7200,track-seek=1ms,full-seek=15ms,latency=100us,bandwidth=60MB/s,channels=32",
        source: "a 7200 rpm SATA disk with NCQ (32 commands): Hitachi single-track seek 1.0 ms \
                 (Travelstar 7K320), average read seek 8.5 ms (Deskstar 7K1000.C, 2 disks; the \
                 15 ms full stroke is chosen to give that average with this seek curve), \
                 4.2 ms average latency at 7200 rpm, sustained media rate between the Deskstar \
                 7K500's 64.8 MB/s (zone 0) and 31.0 MB/s (zone 29), taken near the outer zone",
    },
    Preset {
        name: "sdcard",
        spec: "latency=450us,write-latency=1.6ms,read-bandwidth=20MB/s,write-bandwidth=10MB/s,channels=1",
        source: "a class-10, A1 SD card on a 25 MB/s high-speed bus: speed class 10 = at least \
                 10 MB/s sequential writes; application class A1 = at least 1500 random 4 KiB \
                 reads/s and 500 writes/s, i.e. 667 us and 2 ms per 4 KiB request, less the \
                 4 KiB transfer; reads at 20 MB/s (bus-limited); one command at a time",
    },
    Preset {
        name: "emmc",
        spec: "latency=100us,write-latency=150us,read-bandwidth=250MB/s,write-bandwidth=100MB/s,channels=4",
        source: "an eMMC 5.1 (HS400) part of the common class: about 250 MB/s sequential read \
                 and 100 MB/s write, random 4 KiB reads in about 100 us; 4 channels for its \
                 internal parallelism (the command queue holds 32)",
    },
];

/// Fields a SPEC may set (for error messages).
const FIELDS: &str = "latency, write-latency, bandwidth, read-bandwidth, write-bandwidth, \
                      channels, seek, rpm, track-seek, full-seek, stroke, ncq, wcache";

/// Most commands a SATA disk holds for reordering: Native Command Queuing has 32 tags, 0–31
/// (Serial ATA II: Extensions to Serial ATA 1.0, carried into Serial ATA Revision 2.6; AHCI
/// 1.x gives a port 32 command slots, one bit each in `PxCI` and `PxSACT`; the Intel/Seagate
/// white paper "Serial ATA Native Command Queuing", July 2003, on the drive ordering them by
/// seek plus rotational latency). `ncq` is bounded by it; `channels` (a SCSI/SAS queue may be
/// deeper) is not.
pub(crate) const NCQ_TAGS: u32 = 32;

/// Largest `wcache`: 1 GiB, far above the 8–256 MiB buffers of shipped disks (5400 rpm
/// laptop disks of hdd-5400's era have 8–16 MiB, current ones up to 128 MiB). The write-cache
/// behaviour modelled is the data sheet's: "the write command may complete before the actual
/// disk write operation finishes", made durable by Flush Cache (Travelstar 5K160 (PATA)
/// specification, 5.2 "Write Cache").
pub(crate) const MAX_WRITE_CACHE: u64 = 1 << 30;

/// Smallest non-zero `wcache`: 64 KiB, one large request.
pub(crate) const MIN_WRITE_CACHE: u64 = 64 << 10;

fn bad(field: &str, value: &str, why: &str) -> Error {
    Error::BadInput(format!("--emulate: {field} '{value}': {why}"))
}

/// The preset called `name`; unknown, an error listing the presets and the fields.
fn preset_named(name: &str) -> Result<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name).ok_or_else(|| {
        let names: Vec<_> = PRESETS.iter().map(|p| p.name).collect();
        bad(
            "preset",
            name,
            &format!(
                "unknown (presets: {}; or field=value items: {FIELDS})",
                names.join(", ")
            ),
        )
    })
}

impl Spec {
    /// Parses `--emulate`'s argument (see the module docs). Errors name the field and value.
    pub fn parse(text: &str) -> Result<Spec> {
        let mut items = text.split(',').map(str::trim).peekable();
        let mut spec = Spec::bare();
        let mut write_latency_set = false;
        let mut given = std::collections::BTreeMap::new();
        if let Some(first) = items.peek().copied()
            && !first.contains('=')
        {
            items.next();
            let p = preset_named(first)?;
            spec = Spec::parse(p.spec)?;
            spec.preset = Some(p.name);
            write_latency_set = true;
        }
        for item in items {
            let Some((k, v)) = item.split_once('=') else {
                return Err(bad(
                    "item",
                    item,
                    &format!("expected field=value (fields: {FIELDS})"),
                ));
            };
            let (k, v) = (k.trim().replace('_', "-"), v.trim());
            // One value per field: the last would silently win (a preset's values are the
            // base that fields override, so a preset and a field are not a repeat).
            if let Some(first) = given.insert(k.clone(), v.to_string()) {
                return Err(bad(
                    &k,
                    v,
                    &format!("given twice (first '{first}'): give it once"),
                ));
            }
            spec.set_field(&given, &mut write_latency_set, &k, v)?;
        }
        spec.check_whole()?;
        Ok(spec)
    }

    /// The device before any preset or field: no latency, unlimited bandwidth, one channel,
    /// no write cache, no positioning cost.
    fn bare() -> Spec {
        Spec {
            preset: None,
            read_latency_s: 0.0,
            write_latency_s: 0.0,
            read_bw: f64::INFINITY,
            write_bw: f64::INFINITY,
            channels: 1,
            write_cache: 0,
            seek: Seek::None,
        }
    }

    /// Sets field `k` to `v` (`k` already in `given`, which holds every field given so far);
    /// `write_latency_set` tells whether `latency` must leave the write latency alone.
    fn set_field(
        &mut self,
        given: &std::collections::BTreeMap<String, String>,
        write_latency_set: &mut bool,
        k: &str,
        v: &str,
    ) -> Result<()> {
        match k {
            "latency" => {
                self.read_latency_s = duration(k, v)?;
                if !*write_latency_set {
                    self.write_latency_s = self.read_latency_s;
                }
            }
            "write-latency" => {
                self.write_latency_s = duration(k, v)?;
                *write_latency_set = true;
            }
            // The direction's own field wins, given before or after this one.
            "bandwidth" => {
                let bw = rate(k, v)?;
                if !given.contains_key("read-bandwidth") {
                    self.read_bw = bw;
                }
                if !given.contains_key("write-bandwidth") {
                    self.write_bw = bw;
                }
            }
            "read-bandwidth" => self.read_bw = rate(k, v)?,
            "write-bandwidth" => self.write_bw = rate(k, v)?,
            "channels" => {
                if let Some(n) = given.get("ncq") {
                    return Err(bad(
                        k,
                        v,
                        &format!("on a disk it is ncq (given as '{n}'): give one of them"),
                    ));
                }
                self.channels = v
                    .parse::<u32>()
                    .ok()
                    .filter(|c| (1..=256).contains(c))
                    .ok_or_else(|| bad(k, v, "expected a whole number 1–256"))?;
            }
            "seek" => self.set_seek(k, v)?,
            "ncq" | "wcache" => disk_option(self, given, k, v)?,
            "rpm" | "track-seek" | "full-seek" | "stroke" => self.set_hdd_field(k, v)?,
            _ => return Err(bad("field", k, &format!("unknown (fields: {FIELDS})"))),
        }
        Ok(())
    }

    /// `seek=none|hdd`: `hdd` over `none` starts from hdd-5400's positioning figures, and
    /// keeps the figures already set when the seek model is already a disk.
    fn set_seek(&mut self, k: &str, v: &str) -> Result<()> {
        match v {
            "none" => self.seek = Seek::None,
            "hdd" => {
                if self.seek == Seek::None {
                    self.seek = Seek::Hdd {
                        rpm: 5400.0,
                        track_s: 1e-3,
                        full_s: 20e-3,
                        stroke: None,
                    };
                }
            }
            _ => return Err(bad(k, v, "expected none or hdd")),
        }
        Ok(())
    }

    /// `rpm`, `track-seek`, `full-seek` or `stroke`: a disk's positioning figure, refused
    /// before `seek=hdd`.
    fn set_hdd_field(&mut self, k: &str, v: &str) -> Result<()> {
        let Seek::Hdd {
            rpm,
            track_s,
            full_s,
            stroke,
        } = &mut self.seek
        else {
            return Err(bad(k, v, "only with seek=hdd (give seek=hdd before it)"));
        };
        match k {
            "rpm" => {
                *rpm = v
                    .parse::<f64>()
                    .ok()
                    .filter(|r| (1000.0..=20000.0).contains(r))
                    .ok_or_else(|| bad(k, v, "expected a number 1000–20000"))?;
            }
            "track-seek" => *track_s = duration(k, v)?,
            "full-seek" => *full_s = duration(k, v)?,
            _ => *stroke = Some(size(k, v)?),
        }
        Ok(())
    }

    /// The checks across fields, once all are given: a write cache only on a disk, and a
    /// track-to-track seek no longer than a full stroke.
    fn check_whole(&self) -> Result<()> {
        if self.write_cache > 0 && !self.rotational() {
            return Err(bad(
                "wcache",
                &format!("{}B", self.write_cache),
                "only with seek=hdd (seek=none was given)",
            ));
        }
        if let Seek::Hdd {
            track_s, full_s, ..
        } = self.seek
            && track_s > full_s
        {
            return Err(bad(
                "track-seek",
                &fmt_duration(track_s),
                &format!("longer than full-seek {}", fmt_duration(full_s)),
            ));
        }
        Ok(())
    }

    /// Every field written out, e.g. `latency=500us,write-latency=500us,...`: the same for
    /// every way of writing one device (used in its store identity).
    pub fn canonical(&self) -> String {
        let mut s = format!(
            "latency={},write-latency={},read-bandwidth={},write-bandwidth={},channels={}",
            fmt_duration(self.read_latency_s),
            fmt_duration(self.write_latency_s),
            fmt_rate(self.read_bw),
            fmt_rate(self.write_bw),
            self.channels
        );
        if let Seek::Hdd {
            rpm,
            track_s,
            full_s,
            stroke,
        } = &self.seek
        {
            s.push_str(&format!(
                ",seek=hdd,rpm={rpm},track-seek={},full-seek={}",
                fmt_duration(*track_s),
                fmt_duration(*full_s)
            ));
            if let Some(b) = stroke {
                s.push_str(&format!(",stroke={b}B"));
            }
        }
        if self.write_cache > 0 {
            s.push_str(&format!(",wcache={}B", self.write_cache));
        }
        s
    }

    /// Whether the emulated device is a spinning disk (`seek=hdd`). Its loop queue is then
    /// marked `queue/rotational = 1`, as a real disk's is, so the kernel treats it as one
    /// ([`crate::bench::scratch::Scratch::create_emulated`]).
    pub(crate) fn rotational(&self) -> bool {
        matches!(self.seek, Seek::Hdd { .. })
    }

    /// The preset name when the spec is exactly a preset, else [`Spec::canonical`].
    pub fn name(&self) -> String {
        match self
            .preset
            .and_then(|p| PRESETS.iter().find(|x| x.name == p))
        {
            Some(p) if Spec::parse(p.name).is_ok_and(|s| s == *self) => p.name.to_string(),
            _ => self.canonical(),
        }
    }
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// `ncq=N` (the disk's reordering depth, stored as `channels`) and `wcache=SIZE`: disk
/// options, refused before `seek=hdd` and outside their bounds.
fn disk_option(
    spec: &mut Spec,
    given: &std::collections::BTreeMap<String, String>,
    k: &str,
    v: &str,
) -> Result<()> {
    if !spec.rotational() {
        return Err(bad(
            k,
            v,
            "only with seek=hdd (give seek=hdd or a disk preset before it)",
        ));
    }
    if k == "ncq" {
        if let Some(c) = given.get("channels") {
            return Err(bad(
                k,
                v,
                &format!("on a disk it is channels (given as '{c}'): give one of them"),
            ));
        }
        spec.channels = v
            .parse::<u32>()
            .ok()
            .filter(|c| (1..=NCQ_TAGS).contains(c))
            .ok_or_else(|| {
                bad(
                    k,
                    v,
                    "expected a whole number 1–32 (SATA NCQ has 32 tags; 1 = no NCQ)",
                )
            })?;
        return Ok(());
    }
    let why = "expected 0 (no write cache) or a size such as 8MiB or 16MiB, 64KiB to 1GiB";
    spec.write_cache = size_of(v)
        .filter(|b| *b == 0.0 || (MIN_WRITE_CACHE as f64..=MAX_WRITE_CACHE as f64).contains(b))
        .map(|b| b as u64)
        .ok_or_else(|| bad(k, v, why))?;
    Ok(())
}

/// Splits `500us` into (500.0, "us"). `None` when there is no leading number.
fn number_unit(v: &str) -> Option<(f64, &str)> {
    let end = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let n: f64 = v[..end].parse().ok()?;
    n.is_finite().then_some((n, v[end..].trim()))
}

/// A duration in seconds; at most 10 s.
fn duration(field: &str, v: &str) -> Result<f64> {
    let why = "expected a duration such as 500us, 1.5ms or 0 (units ns, us, ms, s), at most 10 s";
    let (n, unit) = number_unit(v).ok_or_else(|| bad(field, v, why))?;
    let scale = match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "" if n == 0.0 => 0.0,
        _ => return Err(bad(field, v, why)),
    };
    let s = n * scale;
    if s > 10.0 {
        return Err(bad(field, v, why));
    }
    Ok(s)
}

/// A size in bytes: `B`, `kB`/`KB`, `MB`, `GB` (10^3 steps), `KiB`, `MiB`, `GiB`.
fn size_of(v: &str) -> Option<f64> {
    let (n, unit) = number_unit(v)?;
    let scale = match unit {
        "B" | "" => 1.0,
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some(n * scale)
}

/// Fastest rate a SPEC may give, bytes/s: 1000 GB/s, far above any storage device (a PCIe
/// 5.0 x16 link carries about 64 GB/s; faster is `unlimited`). Above it the canonical form
/// (printed to 6 decimals) would carry more digits than an f64 holds and not read back to
/// itself: `bandwidth=55555552777777GiB/s` printed `59652320572938.555GB/s`, which printed
/// `…938.55GB/s` when read back.
pub(crate) const MAX_RATE: f64 = 1e12;

/// A rate in bytes/s, 1 kB/s to [`MAX_RATE`].
fn rate(field: &str, v: &str) -> Result<f64> {
    let why = "expected a rate such as 200MB/s or 30MiB/s (1kB/s to 1000GB/s), or unlimited";
    if v == "unlimited" {
        return Ok(f64::INFINITY);
    }
    let bytes = v
        .strip_suffix("/s")
        .and_then(size_of)
        .filter(|b| (1e3..=MAX_RATE).contains(b))
        .ok_or_else(|| bad(field, v, why))?;
    Ok(bytes)
}

/// A size in bytes, at least 1 MiB and below 10^18 B (it is kept as a `u64`).
fn size(field: &str, v: &str) -> Result<u64> {
    let why = "expected a size such as 40GB or 1GiB, at least 1MiB and less than 1000000000GB";
    size_of(v)
        .filter(|b| *b >= 1048576.0 && *b < 1e18)
        .map(|b| b as u64)
        .ok_or_else(|| bad(field, v, why))
}

/// `0.0005` → `500us`; `0` for 0 and for what rounds to 0 (below 5e-16 s), so that the
/// canonical form reads back to itself.
pub(crate) fn fmt_duration(s: f64) -> String {
    let (x, unit) = if s >= 1.0 {
        (s, "s")
    } else if s >= 1e-3 {
        (s * 1e3, "ms")
    } else if s >= 1e-6 {
        (s * 1e6, "us")
    } else {
        (s * 1e9, "ns")
    };
    let x = round(x);
    if x == 0.0 {
        "0".into()
    } else {
        format!("{x}{unit}")
    }
}

/// `2e8` → `200MB/s`.
pub(crate) fn fmt_rate(b: f64) -> String {
    if b.is_infinite() {
        "unlimited".into()
    } else if b >= 1e9 {
        format!("{}GB/s", round(b / 1e9))
    } else if b >= 1e6 {
        format!("{}MB/s", round(b / 1e6))
    } else {
        format!("{}kB/s", round(b / 1e3))
    }
}

/// Rounds to 6 significant-ish decimals so that `1.6ms` prints as `1.6`, not `1.6000000000000003`.
fn round(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests;

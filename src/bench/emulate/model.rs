//! Service-time models of an emulated device: pure functions of the request, the head
//! position and the emulator's clock, so they are tested here without FUSE.
//!
//! - **Flash** (`seek=none`): a request costs its access latency, then its transfer. With
//!   `channels` > 1 that many requests are in service at once, so latencies overlap, but the
//!   transfers share one bus: `bandwidth` is the device's, not a channel's. A spec's
//!   throughput and latency are then what it says, at any queue depth.
//! - **Disk** (`seek=hdd`): one arm. A request starting where the previous one ended costs
//!   only its transfer (plus the command overhead, `latency`). One a little further on the
//!   same revolution waits for the gap to pass under the head (gap ÷ media rate). Anything
//!   else pays a seek, `track + (full - track) · sqrt(distance / stroke)`, and half a
//!   revolution on average. The square root is the usual short-seek shape (arm acceleration
//!   dominates); over uniformly random pairs its mean is `track + 8/15 (full - track)`, which
//!   matches datasheet averages (see `super::spec::PRESETS`).
//! - **NCQ** (disk, `ncq` = `channels` > 1): of the oldest `channels` requests waiting the
//!   disk serves the one with the shortest positioning time, aged: Aged Shortest Positioning
//!   Time First, ASPTF(W), which ranks a request by `Tpos - W · Twait` (Worthington, Ganger &
//!   Patt, "Scheduling Algorithms for Modern Disk Drives", SIGMETRICS 1994, §4; the same as
//!   Jacobson & Wilkes' aged shortest access time first, HP Labs HPL-CSP-91-7, 1991). `W` is
//!   `AGING_WEIGHT`: a request is never passed over by one that arrived more than
//!   `Tpos_max / W` after it (`Model::aging_bound_s`, 257 ms on hdd-5400), so none starves.
//!   With 1 the disk serves in arrival order, so only the order the kernel dispatches in can
//!   shorten the seeks: that is what an elevator or `fifo_batch` can win.
//! - **Write cache** (disk, `wcache` > 0): a write completes once copied into the cache, at
//!   the command overhead plus its length at the interface rate (`CACHE_COPY_RATE`), while
//!   the cache has room; the arm meanwhile destages cached writes, nearest first (positioning +
//!   transfer at the write rate; adjacent writes merge into one extent, written back a
//!   revolution's worth at a time so that a read waits for one revolution at most), whenever
//!   it has no request of its own (the lazily computed idle time before the next request starts). A
//!   write that does not fit waits until destaging makes room; one larger than the cache
//!   goes to the platter. A flush (`fsync` through FUSE: the loop driver's `REQ_OP_FLUSH`, a
//!   FUA write's post-flush) completes when everything cached is on the platter. Reads go to
//!   the platter even when the data is cached (no read hits are modelled).
//!
//! Rotational position is not tracked: a seek always costs the mean half revolution. Nothing
//! models zoned media rates or flash garbage collection.

use super::spec::{Seek, Spec};
use std::collections::VecDeque;

/// ASPTF's weight `W` of time waited against positioning time (dimensionless, s per s): 0.1,
/// so a request that has waited 100 ms longer than another wins over it unless its
/// positioning is 10 ms longer. Chosen for an aging bound of a few hundred ms on the presets
/// (257 ms on hdd-5400, 192 ms on hdd-7200), of the order of mq-deadline's 500 ms
/// `read_expire`; drive firmware does not publish its own.
pub(crate) const AGING_WEIGHT: f64 = 0.1;

/// Rate at which a write is copied into the write cache, bytes/s: 100 MB/s, the burst rate of
/// ATA-100 (UDMA mode 5), hdd-5400's interface. SATA's 150–600 MB/s would copy faster; the
/// copy is a small part of a write either way (64 KiB: 0.66 ms against 2.2 ms to write it).
pub(crate) const CACHE_COPY_RATE: f64 = 100e6;

/// Read or write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// A read.
    Read,
    /// A write.
    Write,
    /// A cache flush (`offset` and `len` 0): on a disk with a write cache it waits for the
    /// cache to be destaged; otherwise it costs nothing.
    Flush,
}

/// One request as the device sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Request {
    /// Read or write.
    pub op: Op,
    /// Byte offset on the device.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
}

/// What serving one request took.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Served {
    /// When it completes, s on the emulator's clock.
    pub end: f64,
    /// How far the head moved for it, bytes (0: sequential), including the destaging done
    /// before it or for it.
    pub distance: u64,
    /// Time spent positioning (seek, rotation, or waiting for a gap), s, including destaging.
    pub position_s: f64,
}

/// A device's state: the spec, its size, where the head is, when the bus and the arm are
/// free, and what the write cache holds.
#[derive(Clone, Debug)]
pub(crate) struct Model {
    spec: Spec,
    size: u64,
    head: u64,
    bus_free: f64,
    /// When the arm is done with what it started (a request or a destage), s.
    arm_free: f64,
    /// Cached writes not yet on the platter: (offset, len), oldest first.
    dirty: VecDeque<(u64, u64)>,
    dirty_bytes: u64,
}

impl Model {
    /// A device of `size` bytes with the head at 0.
    pub(crate) fn new(spec: Spec, size: u64) -> Model {
        Model {
            spec,
            size: size.max(1),
            head: 0,
            bus_free: 0.0,
            arm_free: 0.0,
            dirty: VecDeque::new(),
            dirty_bytes: 0,
        }
    }

    /// The spec.
    pub(crate) fn spec(&self) -> &Spec {
        &self.spec
    }

    /// Bytes in the write cache not yet on the platter.
    #[cfg(test)]
    pub(crate) fn dirty_bytes(&self) -> u64 {
        self.dirty_bytes
    }

    /// How many requests can be in service at once: `channels` for flash, 1 for a disk (one
    /// arm; its `channels` is the reordering window of [`Model::pick`]).
    pub(crate) fn servers(&self) -> usize {
        match self.spec.seek {
            Seek::None => self.spec.channels as usize,
            Seek::Hdd { .. } => 1,
        }
    }

    /// The longest positioning a disk request can take (full-stroke seek and half a
    /// revolution), s; 0 for flash.
    #[cfg(test)]
    pub(crate) fn max_position_s(&self) -> f64 {
        match self.spec.seek {
            Seek::Hdd { rpm, full_s, .. } => full_s + 30.0 / rpm,
            Seek::None => 0.0,
        }
    }

    /// NCQ's aging bound, s: a request is never passed over by one that arrived more than
    /// this after it, since `W · Δwait` then outweighs any difference in positioning.
    #[cfg(test)]
    pub(crate) fn aging_bound_s(&self) -> f64 {
        self.max_position_s() / AGING_WEIGHT
    }

    /// Which waiting request to serve next at `now` (s), given `(request, arrival s)` in
    /// arrival order: the oldest, except on a disk with `channels` > 1, which takes among
    /// the oldest `channels` the one with the least `positioning - W · waited` (ASPTF; ties:
    /// the older), a write that fits the write cache counting no positioning. A flush is a
    /// barrier: nothing after it is taken before it. `None` when nothing waits.
    pub(crate) fn pick(&self, waiting: &[(Request, f64)], now: f64) -> Option<usize> {
        if waiting.is_empty() {
            return None;
        }
        match self.spec.seek {
            Seek::Hdd { .. } if self.spec.channels > 1 => {
                let window = waiting.len().min(self.spec.channels as usize);
                let window = waiting[..window]
                    .iter()
                    .position(|(r, _)| r.op == Op::Flush)
                    .unwrap_or(window)
                    .max(1);
                let rank = |i: usize| {
                    let (r, arrival) = waiting[i];
                    self.cost_s(r) - AGING_WEIGHT * (now - arrival).max(0.0)
                };
                (0..window).min_by(|&a, &b| rank(a).total_cmp(&rank(b)))
            }
            _ => Some(0),
        }
    }

    /// Positioning a request would need now, s: none for a write the cache takes.
    fn cost_s(&self, r: Request) -> f64 {
        match r.op {
            Op::Flush => 0.0,
            Op::Write if self.fits_cache(r.len) => 0.0,
            _ => self.position_s(r.offset),
        }
    }

    fn fits_cache(&self, len: u64) -> bool {
        self.spec.write_cache > 0 && self.dirty_bytes + len <= self.spec.write_cache
    }

    /// Time to position for a request at `offset` with the head where it is now, s.
    pub(crate) fn position_s(&self, offset: u64) -> f64 {
        let Seek::Hdd {
            rpm,
            track_s,
            full_s,
            stroke,
        } = self.spec.seek
        else {
            return 0.0;
        };
        if offset == self.head {
            return 0.0;
        }
        let rev_s = 60.0 / rpm;
        let per_rev = self.spec.read_bw * rev_s;
        let gap = offset.wrapping_sub(self.head);
        if offset > self.head && (gap as f64) < per_rev {
            return gap as f64 / self.spec.read_bw;
        }
        let span = stroke.unwrap_or(self.size).max(1) as f64;
        let x = (offset.abs_diff(self.head) as f64 / span).min(1.0);
        track_s + (full_s - track_s) * x.sqrt() + rev_s / 2.0
    }

    /// Serves `req` from `start` (s): returns when it ends, and moves the head to its end.
    /// Flash: latency, then the transfer once the shared bus is free. Disk: overhead,
    /// positioning, transfer, all on the one arm, after what the arm is busy with; with a
    /// write cache, see the module docs.
    pub(crate) fn serve(&mut self, start: f64, req: Request) -> Served {
        let (latency, bw) = match req.op {
            Op::Read => (self.spec.read_latency_s, self.spec.read_bw),
            Op::Write => (self.spec.write_latency_s, self.spec.write_bw),
            Op::Flush => (0.0, f64::INFINITY),
        };
        let transfer = req.len as f64 / bw;
        if self.spec.seek == Seek::None {
            if req.op == Op::Flush {
                return Served {
                    end: start,
                    distance: 0,
                    position_s: 0.0,
                };
            }
            let end = (start + latency).max(self.bus_free) + transfer;
            self.bus_free = end;
            let distance = req.offset.abs_diff(self.head);
            self.head = req.offset.saturating_add(req.len);
            return Served {
                end,
                distance,
                position_s: 0.0,
            };
        }
        let mut done = Served {
            end: start,
            distance: 0,
            position_s: 0.0,
        };
        // The arm destages while it has nothing else to do.
        while self.arm_free < start && !self.dirty.is_empty() {
            self.destage_one(&mut done);
        }
        match req.op {
            Op::Flush => {
                while !self.dirty.is_empty() {
                    self.destage_one(&mut done);
                }
                done.end = start.max(self.arm_free);
            }
            Op::Write if self.spec.write_cache > 0 && req.len <= self.spec.write_cache => {
                let mut room = start;
                while !self.fits_cache(req.len) {
                    self.destage_one(&mut done);
                    room = room.max(self.arm_free);
                }
                done.end = room + latency + req.len as f64 / CACHE_COPY_RATE;
                if self.dirty.is_empty() {
                    // An idle arm starts on it once it is in the cache.
                    self.arm_free = self.arm_free.max(done.end);
                }
                self.cache(req);
            }
            _ => {
                let begin = start.max(self.arm_free);
                done.distance += req.offset.abs_diff(self.head);
                let position_s = self.position_s(req.offset);
                done.position_s += position_s;
                done.end = begin + latency + position_s + transfer;
                self.arm_free = done.end;
                self.head = req.offset.saturating_add(req.len);
            }
        }
        done
    }

    /// Adds a write to the cache, merged into the last cached extent when it follows it.
    fn cache(&mut self, req: Request) {
        self.dirty_bytes += req.len;
        if let Some(last) = self.dirty.back_mut()
            && last.0 + last.1 == req.offset
        {
            last.1 += req.len;
            return;
        }
        self.dirty.push_back((req.offset, req.len));
    }

    /// Bytes one revolution carries at the write rate (333 kB on hdd-5400): the most a
    /// destage writes before the arm may serve a request.
    fn revolution_bytes(&self) -> u64 {
        match self.spec.seek {
            Seek::Hdd { rpm, .. } => (self.spec.write_bw * 60.0 / rpm) as u64,
            Seek::None => u64::MAX,
        }
    }

    /// Writes the cached extent nearest in positioning time (ties: the oldest) to the
    /// platter, from when the arm is free, a revolution's worth at most (the rest stays
    /// cached, next under the head).
    fn destage_one(&mut self, done: &mut Served) {
        let Some(i) = (0..self.dirty.len()).min_by(|&a, &b| {
            self.position_s(self.dirty[a].0)
                .total_cmp(&self.position_s(self.dirty[b].0))
        }) else {
            return;
        };
        let Some((offset, whole)) = self.dirty.remove(i) else {
            return;
        };
        // At most a revolution's worth at a time: then the arm can turn to a read.
        let len = whole.min(self.revolution_bytes().max(1));
        if len < whole {
            self.dirty.insert(i, (offset + len, whole - len));
        }
        let position_s = self.position_s(offset);
        done.distance += offset.abs_diff(self.head);
        done.position_s += position_s;
        self.arm_free += position_s + len as f64 / self.spec.write_bw;
        self.head = offset.saturating_add(len);
        self.dirty_bytes -= len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(offset: u64, len: u64) -> Request {
        Request {
            op: Op::Read,
            offset,
            len,
        }
    }

    /// A small xorshift, so the Monte Carlo below is the same on every run.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs()
    }

    #[test]
    fn flash_costs_latency_plus_transfer_and_shares_the_bus() {
        let spec = Spec::parse("latency=500us,bandwidth=200MB/s,channels=4").unwrap();
        let mut m = Model::new(spec, 1 << 30);
        assert_eq!(m.servers(), 4);
        let one = m.serve(0.0, read(0, 4096));
        assert!(close(one.end, 500e-6 + 4096.0 / 200e6, 1e-9), "{one:?}");
        // Four 1 MB requests at once: the latencies overlap, the transfers queue on the bus.
        let mut m = Model::new(m.spec().clone(), 1 << 30);
        let ends: Vec<f64> = (0..4)
            .map(|i| m.serve(1.0, read(i << 20, 1_000_000)).end)
            .collect();
        for (i, e) in ends.iter().enumerate() {
            assert!(
                close(*e, 1.0 + 500e-6 + (i + 1) as f64 * 5e-3, 1e-9),
                "{ends:?}"
            );
        }
    }

    #[test]
    fn disk_sequential_costs_transfer_only() {
        let spec = Spec::parse("hdd-5400").unwrap();
        let mut m = Model::new(spec, 1 << 30);
        let mut t = 0.0;
        // The first request seeks from 0 to 1 GiB/2; the following ones stream.
        t = m.serve(t, read(1 << 29, 131072)).end;
        let before = t;
        for i in 1..=100u64 {
            let s = m.serve(t, read((1 << 29) + i * 131072, 131072));
            assert_eq!((s.distance, s.position_s), (0, 0.0));
            t = s.end;
        }
        let per = (t - before) / 100.0;
        assert!(close(per, 100e-6 + 131072.0 / 30e6, 1e-9), "{per}");
    }

    #[test]
    fn disk_random_costs_seek_and_half_a_revolution_as_the_spec_implies() {
        let spec = Spec::parse("hdd-5400").unwrap();
        let size = 1u64 << 30;
        let mut m = Model::new(spec, size);
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let n = 20_000;
        let mut t = 0.0;
        let start = t;
        for _ in 0..n {
            let off = (xorshift(&mut rng) % (size / 4096)) * 4096;
            t = m.serve(t, read(off, 4096)).end;
        }
        let random = (t - start) / n as f64;
        // Mean seek over uniform random pairs: track + 8/15 (full - track) = 11.13 ms,
        // the datasheet says 11 ms; half a revolution at 5400 rpm is 5.56 ms.
        let seek = 1e-3 + 8.0 / 15.0 * 19e-3;
        assert!(close(seek, 11e-3, 0.02));
        let transfer = 4096.0 / 30e6;
        let expect = 100e-6 + seek + 60.0 / 5400.0 / 2.0 + transfer;
        assert!(close(random, expect, 0.02), "{random} vs {expect}");
        let sequential = 100e-6 + transfer;
        let ratio = random / sequential;
        assert!(close(ratio, expect / sequential, 0.02), "{ratio}");
        assert!(ratio > 60.0, "{ratio}");
    }

    #[test]
    fn disk_short_forward_gap_waits_for_the_platter() {
        let spec = Spec::parse("hdd-5400").unwrap();
        let mut m = Model::new(spec, 1 << 30);
        m.serve(0.0, read(0, 4096));
        // 30 MB/s at 90 rev/s: 333 kB per revolution; a 64 KiB gap passes in 2.2 ms.
        let s = m.serve(1.0, read(4096 + 65536, 4096));
        assert!(close(s.position_s, 65536.0 / 30e6, 1e-9), "{s:?}");
        // Backwards by a little: a (short) seek and half a revolution.
        let s = m.serve(2.0, read(0, 4096));
        assert!(s.position_s > 60.0 / 5400.0 / 2.0 + 1e-3, "{s:?}");
    }

    #[test]
    fn ncq_serves_the_nearest_of_the_oldest_channels() {
        let at0 = |offs: &[u64]| -> Vec<(Request, f64)> {
            offs.iter().map(|&o| (read(o, 100), 0.0)).collect()
        };
        let fifo = Model::new(Spec::parse("hdd-5400").unwrap(), 1 << 30);
        assert_eq!(fifo.pick(&at0(&[900, 10, 20]), 0.0), Some(0));
        assert_eq!(fifo.pick(&[], 0.0), None);
        let mut ncq = Model::new(Spec::parse("hdd-5400,ncq=2").unwrap(), 1 << 30);
        ncq.serve(0.0, read(0, 100));
        assert_eq!(
            ncq.pick(&at0(&[900, 120, 101]), 0.0),
            Some(1),
            "101 is outside the window"
        );
        assert_eq!(ncq.servers(), 1);
        // Shortest positioning, not shortest distance: 1 MiB ahead passes under the head in
        // 35 ms (more than a revolution: a seek, 1.6 + 5.6 ms); 64 KiB behind is a seek of 1.2
        // ms plus half a revolution; 64 KiB ahead waits 2.2 ms for the platter.
        let ncq4 = Model::new(Spec::parse("hdd-5400,ncq=4").unwrap(), 1 << 30);
        let (ahead, behind) = (65536u64, 1u64 << 29);
        let mut m = ncq4.clone();
        m.serve(0.0, read(behind, 65536));
        let head = behind + 65536;
        assert!(m.position_s(head + ahead) < m.position_s(head - ahead));
        assert_eq!(m.pick(&at0(&[head - ahead, head + ahead]), 0.0), Some(1));
        // A flush is a barrier: nothing behind it is taken first.
        let waiting = [
            (read(head + (100 << 20), 4096), 0.0),
            (flush(), 0.0),
            (read(head, 4096), 0.0),
        ];
        assert_eq!(m.pick(&waiting, 0.0), Some(0));
        assert_eq!(m.pick(&waiting[1..], 0.0), Some(0));
    }

    fn write(offset: u64, len: u64) -> Request {
        Request {
            op: Op::Write,
            offset,
            len,
        }
    }

    fn flush() -> Request {
        Request {
            op: Op::Flush,
            offset: 0,
            len: 0,
        }
    }

    /// Serves `arrivals` (request, arrival s; sorted by arrival) on one worker as the FUSE
    /// server does; returns each request's (start of wait, end) in the order given, and the
    /// total positioning time.
    fn run(m: &mut Model, arrivals: &[(Request, f64)]) -> (Vec<(f64, f64)>, f64) {
        let mut ends = vec![(0.0, 0.0); arrivals.len()];
        let mut waiting: Vec<(usize, Request, f64)> = Vec::new();
        let (mut next, mut t, mut position) = (0, 0.0f64, 0.0);
        while next < arrivals.len() || !waiting.is_empty() {
            if waiting.is_empty() {
                t = t.max(arrivals[next].1);
            }
            while next < arrivals.len() && arrivals[next].1 <= t {
                waiting.push((next, arrivals[next].0, arrivals[next].1));
                next += 1;
            }
            let window: Vec<(Request, f64)> = waiting
                .iter()
                .take(m.spec().channels as usize)
                .map(|&(_, r, a)| (r, a))
                .collect();
            let i = m.pick(&window, t).unwrap();
            let (k, r, a) = waiting.remove(i);
            let s = m.serve(t.max(a), r);
            position += s.position_s;
            ends[k] = (a, s.end);
            t = s.end;
        }
        (ends, position)
    }

    fn random_reads(n: usize, size: u64, seed: u64) -> Vec<(Request, f64)> {
        let mut rng = seed;
        (0..n)
            .map(|_| (read((xorshift(&mut rng) % (size / 4096)) * 4096, 4096), 0.0))
            .collect()
    }

    /// 1000 random 4 KiB reads queued at once over 1 GiB: in arrival order each pays the mean
    /// seek and half a revolution (16.7 ms); the nearest of 32 is about 1/64 of the stroke
    /// away (a seek of about 3.4 ms), so NCQ roughly halves the positioning.
    #[test]
    fn ncq_positions_a_random_batch_in_less_time_than_fifo() {
        let size = 1u64 << 30;
        let batch = random_reads(1000, size, 0x2545_f491_4f6c_dd1d);
        let fifo = run(
            &mut Model::new(Spec::parse("hdd-5400").unwrap(), size),
            &batch,
        );
        let ncq = run(
            &mut Model::new(Spec::parse("hdd-5400,ncq=32").unwrap(), size),
            &batch,
        );
        let (per_fifo, per_ncq) = (fifo.1 / 1000.0, ncq.1 / 1000.0);
        assert!(close(per_fifo, 11.13e-3 + 5.56e-3, 0.03), "{per_fifo}");
        assert!(per_ncq < 0.65 * per_fifo, "{per_ncq} vs {per_fifo}");
        assert!(per_ncq > 5.56e-3, "still half a revolution each: {per_ncq}");
        let last = |r: &(Vec<(f64, f64)>, f64)| r.0.iter().map(|e| e.1).fold(0.0, f64::max);
        assert!(last(&ncq) < 0.7 * last(&fifo));
    }

    /// A stream of sequential 4 KiB reads arriving every 0.2 ms (each costs 0.24 ms, no
    /// positioning) keeps a far request the worst choice by positioning alone (25.6 ms);
    /// without aging it would wait for the whole stream. With aging, no request that arrived
    /// more than the aging bound (257 ms) after it is served before it: it goes once the
    /// stream's oldest waiting request is 257 ms younger than it, at about 0.31 s.
    #[test]
    fn ncq_aging_serves_a_far_request_within_the_bound() {
        let size = 1u64 << 30;
        let mut m = Model::new(Spec::parse("hdd-5400,ncq=32").unwrap(), size);
        let bound = m.aging_bound_s();
        assert!(close(bound, (20e-3 + 30.0 / 5400.0) / 0.1, 1e-9), "{bound}");
        let mut arrivals = vec![(read(size - 4096, 4096), 0.0)];
        for i in 0..5000u64 {
            arrivals.push((read(i * 4096, 4096), i as f64 * 0.2e-3));
        }
        let (ends, _) = run(&mut m, &arrivals);
        let far = ends[0].1;
        let passed: Vec<f64> = ends[1..]
            .iter()
            .filter(|e| e.1 < far)
            .map(|e| e.0)
            .collect();
        // Passed over by the ~1280 requests that arrived within the bound, and by no other.
        assert!(passed.len() > 1000, "{}", passed.len());
        let latest = passed.iter().copied().fold(0.0, f64::max);
        assert!(latest <= bound, "passed by one that arrived at {latest} s");
        assert!(far > bound && far < 0.35, "{far}");
        let stream_end = ends.iter().map(|e| e.1).fold(0.0, f64::max);
        assert!(stream_end > 1.0, "the stream outlasts it: {stream_end}");
    }

    /// 64 KiB writes at random offsets, back to back: each completes in the copy time (100 us
    /// plus 64 KiB at 100 MB/s) while the 16 MiB cache has room; once full, a write waits for a
    /// destage (a seek, half a revolution, 2.2 ms of media); a flush waits for all of it; an
    /// idle arm empties the cache before the next read.
    #[test]
    fn write_cache_absorbs_writes_until_full_then_destages() {
        let size = 1u64 << 30;
        let mut m = Model::new(Spec::parse("hdd-5400,wcache=16MiB").unwrap(), size);
        let copy = 100e-6 + 65536.0 / 100e6;
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut t = 0.0;
        let mut lat = Vec::new();
        for _ in 0..600 {
            let off = (xorshift(&mut rng) % (size / 65536)) * 65536;
            let end = m.serve(t, write(off, 65536)).end;
            lat.push(end - t);
            t = end;
        }
        // 256 writes fill 16 MiB, and the arm destages about one per 8.7 ms of copies
        // meanwhile (a destage is 11 ms of seek on average against 25 at random, since it
        // picks the nearest of what is cached): the first 256 all take the copy time.
        assert!(
            lat[..256].iter().all(|l| close(*l, copy, 1e-9)),
            "{:?}",
            &lat[..4]
        );
        let full: Vec<f64> = lat[500..].to_vec();
        let mean = full.iter().sum::<f64>() / full.len() as f64;
        assert!(mean > 5.0 * copy, "full cache: {mean}");
        assert!(
            mean < 16.7e-3 + 2.2e-3 + copy,
            "nearest-first destage: {mean}"
        );
        assert!(m.dirty_bytes() > (15 << 20), "{}", m.dirty_bytes());
        let f = m.serve(t, flush());
        let per = (f.end - t) / 256.0;
        assert!(
            m.dirty_bytes() == 0 && per > 2.2e-3 && per < 16.7e-3,
            "{per}"
        );
        // Idle destaging: writes, a pause of 10 s, then a read costs what it costs uncached.
        for i in 0..10u64 {
            m.serve(f.end + 1.0, write(i << 24, 65536));
        }
        assert_eq!(m.dirty_bytes(), 10 * 65536);
        let s = m.serve(f.end + 11.0, read(size / 2, 4096));
        assert_eq!(m.dirty_bytes(), 0);
        let head_cost = s.end - (f.end + 11.0);
        assert!(head_cost < 100e-6 + 20e-3 + 5.6e-3 + 1e-3, "{head_cost}");
    }

    /// 8 MiB written sequentially merges into one cached extent; a read arriving while it is
    /// written back waits for one revolution's worth (333 kB, 11.1 ms) at most, not for the
    /// 280 ms of the whole extent.
    #[test]
    fn a_read_waits_for_one_revolution_of_destaging_at_most() {
        let mut m = Model::new(Spec::parse("hdd-5400,wcache=16MiB").unwrap(), 1 << 30);
        let mut t = 0.0;
        for i in 0..128u64 {
            t = m.serve(t, write(i << 16, 65536)).end;
        }
        let cached = m.dirty_bytes();
        let s = m.serve(t + 0.05, read(1 << 29, 4096));
        let waited = s.end - (t + 0.05) - (100e-6 + s.position_s + 4096.0 / 30e6);
        assert!(waited > 0.0 && waited <= 60.0 / 5400.0 + 1e-9, "{waited}");
        assert!(
            m.dirty_bytes() < cached && m.dirty_bytes() > 2 << 20,
            "{}",
            m.dirty_bytes()
        );
    }

    /// With no write cache and no NCQ (the presets as they were), reads, writes and flushes
    /// cost what they did: the FIFO figures of `disk_random_costs_...` and a flush for free.
    #[test]
    fn without_the_options_nothing_changes() {
        let plain = Spec::parse("hdd-5400").unwrap();
        assert_eq!(Spec::parse("hdd-5400,wcache=0,ncq=1").unwrap(), plain);
        let mut m = Model::new(plain, 1 << 30);
        let mut rng = 0x1234_5678_9abc_def1u64;
        let mut t = 0.0;
        for i in 0..200 {
            let off = (xorshift(&mut rng) % (1 << 18)) * 4096;
            let r = if i % 2 == 0 {
                read(off, 4096)
            } else {
                write(off, 4096)
            };
            let expect = t + 100e-6 + m.position_s(off) + 4096.0 / 30e6;
            let s = m.serve(t, r);
            assert!(close(s.end, expect, 1e-12), "{i}: {} vs {expect}", s.end);
            t = s.end;
        }
        assert_eq!(m.serve(t, flush()).end, t);
        assert_eq!(m.dirty_bytes(), 0);
    }
}

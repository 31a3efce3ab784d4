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
//!   matches datasheet averages (see [`super::spec::PRESETS`]). With `channels` > 1 the disk
//!   reorders like NCQ: of the oldest `channels` requests waiting it serves the one nearest
//!   the head. With 1 it serves them in arrival order, so only the order the kernel
//!   dispatches in can shorten the seeks: that is what an elevator or `fifo_batch` can win.
//!
//! Rotational position is not tracked: a seek always costs the mean half revolution. Nothing
//! models a write cache (as with `hdparm -W0`), zoned media rates, or flash garbage collection.

use super::spec::{Seek, Spec};

/// Read or write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// A read.
    Read,
    /// A write.
    Write,
}

/// One request as the device sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Read or write.
    pub op: Op,
    /// Byte offset on the device.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
}

/// What serving one request took.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Served {
    /// When it completes, s on the emulator's clock.
    pub end: f64,
    /// How far it was from where the previous request ended, bytes (0: sequential).
    pub distance: u64,
    /// Time spent positioning (seek, rotation, or waiting for a gap), s.
    pub position_s: f64,
}

/// A device's state: the spec, its size, where the head is, when the bus is free.
#[derive(Clone, Debug)]
pub struct Model {
    spec: Spec,
    size: u64,
    head: u64,
    bus_free: f64,
}

impl Model {
    /// A device of `size` bytes with the head at 0.
    pub fn new(spec: Spec, size: u64) -> Model {
        Model {
            spec,
            size: size.max(1),
            head: 0,
            bus_free: 0.0,
        }
    }

    /// The spec.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// How many requests can be in service at once: `channels` for flash, 1 for a disk (one
    /// arm; its `channels` is the reordering window of [`Model::pick`]).
    pub fn servers(&self) -> usize {
        match self.spec.seek {
            Seek::None => self.spec.channels as usize,
            Seek::Hdd { .. } => 1,
        }
    }

    /// Which waiting request (offsets in arrival order) to serve next: the oldest, except on
    /// a disk with `channels` > 1, which takes the one nearest the head among the oldest
    /// `channels` (ties: the older). `None` when nothing waits.
    pub fn pick(&self, offsets: &[u64]) -> Option<usize> {
        if offsets.is_empty() {
            return None;
        }
        match self.spec.seek {
            Seek::Hdd { .. } if self.spec.channels > 1 => {
                let window = offsets.len().min(self.spec.channels as usize);
                (0..window).min_by_key(|&i| offsets[i].abs_diff(self.head))
            }
            _ => Some(0),
        }
    }

    /// Time to position for a request at `offset` with the head where it is now, s.
    pub fn position_s(&self, offset: u64) -> f64 {
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
    /// positioning, transfer, all on the one arm.
    pub fn serve(&mut self, start: f64, req: Request) -> Served {
        let (latency, bw) = match req.op {
            Op::Read => (self.spec.read_latency_s, self.spec.read_bw),
            Op::Write => (self.spec.write_latency_s, self.spec.write_bw),
        };
        let transfer = req.len as f64 / bw;
        let distance = req.offset.abs_diff(self.head);
        let position_s = self.position_s(req.offset);
        let end = match self.spec.seek {
            Seek::None => {
                let t = (start + latency).max(self.bus_free) + transfer;
                self.bus_free = t;
                t
            }
            Seek::Hdd { .. } => start + latency + position_s + transfer,
        };
        self.head = req.offset.saturating_add(req.len);
        Served {
            end,
            distance,
            position_s,
        }
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
        let fifo = Model::new(Spec::parse("hdd-5400").unwrap(), 1 << 30);
        assert_eq!(fifo.pick(&[900, 10, 20]), Some(0));
        assert_eq!(fifo.pick(&[]), None);
        let mut ncq = Model::new(Spec::parse("hdd-5400,channels=2").unwrap(), 1 << 30);
        ncq.serve(0.0, read(0, 100));
        assert_eq!(
            ncq.pick(&[900, 120, 101]),
            Some(1),
            "101 is outside the window"
        );
        assert_eq!(ncq.servers(), 1);
    }
}

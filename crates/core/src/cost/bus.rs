//! The DRAM bus: one shared channel that serialises transfers. A transfer's
//! time is `latency + burst-rounded bytes / effective_bw(direction)` with
//! `effective_bw = bw / (contention * cores_sharing_bus)`. The bus keeps its
//! busy intervals so occupancy over time can be reported (hidden spill cost
//! shows up there, seed 5.2).
//!
//! With several cores ([`SharedBus`]) each core's DMA queue is a
//! [`BusModel`] of its own, and the bus they share is a timeline of the
//! time already taken: a transfer moves its bursts in whatever bus time
//! the other cores left free from when its queue reaches it, so two cores
//! spilling at once each get part of the bus and both finish later (seed
//! 5.3: the concurrency factor follows the simulated parallelism instead
//! of the static `cores_sharing_bus`, which stays a calibration knob).

use super::HardwareProfile;
use crate::limits;

/// Direction of a DRAM transfer: reads and writes have separate bandwidths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// DRAM -> chip (reload, weight load, streamed input).
    Read,
    /// chip -> DRAM (eviction write-back, streamed output).
    Write,
}

/// A serialising bus with per-direction bandwidth and per-transfer latency.
#[derive(Debug, Clone)]
pub struct BusModel {
    read_bw: f64,
    write_bw: f64,
    latency_ns: f64,
    burst: u64,
    /// When the bus is next idle.
    pub free_at_ns: u64,
    /// Busy intervals in issue order (non-overlapping, increasing).
    pub busy: Vec<(u64, u64)>,
    /// The bus the other cores share, attached while this core's op is
    /// simulated (multi-core runs only; `None`: the bus is this core's).
    pub shared: Option<SharedBus>,
    /// Time this queue's transfers waited for other cores' bursts.
    pub contention_ns: u64,
}

impl BusModel {
    pub fn new(hw: &HardwareProfile) -> Self {
        let share = hw.dram.contention * hw.dram.cores_sharing_bus as f64;
        BusModel {
            read_bw: hw.dram.read_bandwidth.0 / share,
            write_bw: hw.dram.write_bandwidth.0 / share,
            latency_ns: hw.dram.latency_ns,
            burst: hw.dram.burst_bytes.max(1),
            free_at_ns: 0,
            busy: Vec::new(),
            shared: None,
            contention_ns: 0,
        }
    }

    /// Time one transfer of `bytes` occupies the bus.
    pub fn transfer_ns(&self, bytes: u64, dir: Direction) -> u64 {
        if bytes == 0 {
            return 0;
        }
        let rounded = bytes.div_ceil(self.burst) * self.burst;
        limits::ns_ceil(self.latency_ns + rounded as f64 / self.bw(dir) * 1e9).max(1)
    }

    /// Time streaming `bytes` takes at full rate (tiled ops pipeline their
    /// tiles, so latency is paid once).
    pub fn stream_ns(&self, read: u64, write: u64) -> u64 {
        if read == 0 && write == 0 {
            return 0;
        }
        limits::ns_ceil(
            self.latency_ns + read as f64 / self.read_bw * 1e9 + write as f64 / self.write_bw * 1e9,
        )
    }

    /// Splits a streaming window `[start, end)` among its operands (`bytes`,
    /// direction) in proportion to each one's share of the transfer time,
    /// so each stream event carries its own stretch of the window.
    pub fn split_stream(
        &self,
        start: u64,
        end: u64,
        parts: &[(u64, Direction)],
    ) -> Vec<(u64, u64)> {
        let time = |&(b, d): &(u64, Direction)| {
            b as f64
                / match d {
                    Direction::Read => self.read_bw,
                    Direction::Write => self.write_bw,
                }
        };
        let total: f64 = parts.iter().map(time).sum();
        let span = end.saturating_sub(start) as f64;
        let mut cum = 0.0;
        parts
            .iter()
            .map(|p| {
                let a = start
                    .saturating_add((span * cum / total.max(f64::MIN_POSITIVE)).floor() as u64);
                cum += time(p);
                let b = if total > 0.0 {
                    start.saturating_add((span * cum / total).floor() as u64)
                } else {
                    end
                };
                (a.min(end), b.min(end))
            })
            .collect()
    }

    /// Queues a transfer that may start no earlier than `earliest`; returns
    /// its `(start, end)`.
    pub fn issue(&mut self, earliest: u64, bytes: u64, dir: Direction) -> (u64, u64) {
        let d = self.transfer_ns(bytes, dir);
        let rounded = bytes.div_ceil(self.burst).saturating_mul(self.burst);
        let data = self.data_ns(rounded as f64 / self.bw(dir));
        self.occupy(earliest, d, data)
    }

    /// Queues a tiled op's streaming (`read` and `write` bytes at full
    /// rate, latency paid once) from no earlier than `earliest`.
    pub fn stream(&mut self, earliest: u64, read: u64, write: u64) -> (u64, u64) {
        let d = self.stream_ns(read, write);
        let data = self.data_ns(read as f64 / self.read_bw + write as f64 / self.write_bw);
        self.occupy(earliest, d, data)
    }

    fn bw(&self, dir: Direction) -> f64 {
        match dir {
            Direction::Read => self.read_bw,
            Direction::Write => self.write_bw,
        }
    }

    /// The ns of a transfer's time spent moving data (`seconds` at full
    /// rate): what it holds a shared bus for; the rest (latency, rounding)
    /// overlaps other cores' bursts.
    fn data_ns(&self, seconds: f64) -> u64 {
        limits::ns_round(seconds * 1e9)
    }

    /// Occupies this queue for `duration` from no earlier than `earliest`
    /// (and no earlier than its last transfer ends), `data` ns of it on the
    /// bus; returns when the transfer starts and when it ends. On a shared
    /// bus its bursts go where the other cores left the bus free, so it may
    /// end later than `start + duration`; the difference is contention.
    fn occupy(&mut self, earliest: u64, duration: u64, data: u64) -> (u64, u64) {
        let start = earliest.max(self.free_at_ns);
        if duration == 0 {
            return (start, start);
        }
        let end = match self.shared.as_mut() {
            Some(bus) => {
                let data = data.min(duration);
                let setup_end = start.saturating_add(duration - data);
                let moved = bus.take(setup_end, data);
                let end = moved.last().map_or(setup_end, |p| p.1);
                self.contention_ns = self
                    .contention_ns
                    .saturating_add(end.saturating_sub(start).saturating_sub(duration));
                end
            }
            None => start.saturating_add(duration),
        };
        match self.busy.last_mut() {
            Some(last) if last.1 == start => last.1 = end,
            _ => self.busy.push((start, end)),
        }
        self.free_at_ns = end;
        (start, end)
    }

    /// Busy fraction per bucket of `bucket_ns` up to `end_ns`.
    pub fn occupancy(&self, end_ns: u64, bucket_ns: u64) -> Vec<(u64, f64)> {
        occupancy(self.busy.iter().copied(), end_ns, bucket_ns)
    }
}

/// Busy fraction per bucket of `bucket_ns` up to `end_ns`, of disjoint
/// busy intervals.
pub fn occupancy(
    busy: impl Iterator<Item = (u64, u64)>,
    end_ns: u64,
    bucket_ns: u64,
) -> Vec<(u64, f64)> {
    let bucket = bucket_ns.max(1);
    let n = (end_ns.div_ceil(bucket)).max(1) as usize;
    let mut time = vec![0u64; n];
    for (s, e) in busy {
        let mut t = s;
        while t < e {
            let b = (t / bucket) as usize;
            if b >= n {
                break;
            }
            let bucket_end = (b as u64 + 1) * bucket;
            let seg_end = e.min(bucket_end);
            time[b] += seg_end - t;
            t = seg_end;
        }
    }
    time.iter()
        .enumerate()
        .map(|(i, &b)| (i as u64 * bucket, (b as f64 / bucket as f64).min(1.0)))
        .collect()
}

/// The DRAM bus several cores share: the stretches of time some core's
/// transfer holds it, disjoint and merged where they touch. A transfer
/// takes free time from when its core's queue reaches it, burst by burst
/// (the arbiter interleaves cores), so it never overlaps another core's
/// and the bus is never more than fully busy.
#[derive(Debug, Clone, Default)]
pub struct SharedBus {
    /// Start -> end of each busy stretch.
    busy: std::collections::BTreeMap<u64, u64>,
}

impl SharedBus {
    /// Takes `work` ns of free bus time from `from` on; returns the pieces
    /// taken, in time order (one when the bus is free at `from`).
    pub fn take(&mut self, from: u64, work: u64) -> Vec<(u64, u64)> {
        let mut pieces = Vec::new();
        let (mut t, mut left) = (from, work);
        while left > 0 {
            if let Some((_, &e)) = self.busy.range(..=t).next_back() {
                if e > t {
                    t = e;
                    continue;
                }
            }
            let gap_end = self
                .busy
                .range(t.saturating_add(1)..)
                .next()
                .map_or(u64::MAX, |(&s, _)| s);
            let n = left.min(gap_end - t);
            pieces.push((t, t + n));
            left -= n;
            t += n;
        }
        for &p in &pieces {
            self.insert(p);
        }
        pieces
    }

    /// Marks `[a, b)` (free until now) busy, merging with its neighbours.
    fn insert(&mut self, (mut a, mut b): (u64, u64)) {
        if let Some((&s, &e)) = self.busy.range(..=a).next_back() {
            if e == a {
                self.busy.remove(&s);
                a = s;
            }
        }
        if let Some(e) = self.busy.remove(&b) {
            b = e;
        }
        self.busy.insert(a, b);
    }

    /// The busy stretches in time order.
    pub fn intervals(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.busy.iter().map(|(&s, &e)| (s, e))
    }

    /// Bus time taken so far, ns.
    pub fn busy_ns(&self) -> u64 {
        self.busy.iter().map(|(s, e)| e - s).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_free_bus_gives_one_piece_and_a_busy_one_its_gaps() {
        let mut bus = SharedBus::default();
        assert_eq!(bus.take(10, 5), vec![(10, 15)]);
        assert_eq!(bus.take(20, 5), vec![(20, 25)]);
        // From 12: the rest of [10, 15) is taken, so [15, 20) then [25, 28).
        assert_eq!(bus.take(12, 8), vec![(15, 20), (25, 28)]);
        assert_eq!(bus.intervals().collect::<Vec<_>>(), vec![(10, 28)]);
        assert_eq!(bus.busy_ns(), 18);
    }

    #[test]
    fn a_queue_on_a_shared_bus_waits_for_the_other_cores_bursts() {
        let hw = HardwareProfile::preset("seed-npu").unwrap();
        let mut a = BusModel::new(&hw);
        let mut b = BusModel::new(&hw);
        let alone = a.transfer_ns(1 << 20, Direction::Read);
        let mut shared = SharedBus::default();
        a.shared = Some(std::mem::take(&mut shared));
        let (s1, e1) = a.issue(0, 1 << 20, Direction::Read);
        shared = a.shared.take().unwrap();
        b.shared = Some(shared);
        let (s2, e2) = b.issue(0, 1 << 20, Direction::Read);
        assert_eq!((s1, e1), (0, alone));
        // b's setup overlaps a's burst; its data waits for the bus.
        assert_eq!(s2, 0);
        assert!(e2 > alone && e2 <= 2 * alone, "{e2} vs {alone}");
        assert_eq!(a.contention_ns, 0);
        assert_eq!(b.contention_ns, e2 - alone);
    }

    proptest! {
        /// However transfers arrive, the bus's busy stretches are disjoint,
        /// hold exactly the work asked for, and no piece starts before its
        /// transfer could.
        #[test]
        fn the_bus_is_never_more_than_fully_busy(
            asks in proptest::collection::vec((0u64..10_000, 0u64..2_000), 1..60)
        ) {
            let mut bus = SharedBus::default();
            let mut work = 0;
            for &(from, w) in &asks {
                let pieces = bus.take(from, w);
                prop_assert_eq!(pieces.iter().map(|p| p.1 - p.0).sum::<u64>(), w);
                prop_assert!(pieces.iter().all(|p| p.0 >= from && p.1 > p.0));
                work += w;
            }
            let iv: Vec<_> = bus.intervals().collect();
            prop_assert!(iv.windows(2).all(|w| w[0].1 < w[1].0));
            prop_assert_eq!(bus.busy_ns(), work);
        }
    }
}

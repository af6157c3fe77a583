//! The DRAM bus: one shared channel that serialises transfers. A transfer's
//! time is `latency + burst-rounded bytes / effective_bw(direction)` with
//! `effective_bw = bw / (contention * cores_sharing_bus)`. The bus keeps its
//! busy intervals so occupancy over time can be reported (hidden spill cost
//! shows up there, seed 5.2).

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
        }
    }

    /// Time one transfer of `bytes` occupies the bus.
    pub fn transfer_ns(&self, bytes: u64, dir: Direction) -> u64 {
        if bytes == 0 {
            return 0;
        }
        let rounded = bytes.div_ceil(self.burst) * self.burst;
        let bw = match dir {
            Direction::Read => self.read_bw,
            Direction::Write => self.write_bw,
        };
        limits::ns_ceil(self.latency_ns + rounded as f64 / bw * 1e9).max(1)
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
        self.occupy(earliest, d)
    }

    /// Occupies the bus for `duration` from no earlier than `earliest`.
    pub fn occupy(&mut self, earliest: u64, duration: u64) -> (u64, u64) {
        let start = earliest.max(self.free_at_ns);
        let end = start.saturating_add(duration);
        if duration > 0 {
            match self.busy.last_mut() {
                Some(last) if last.1 == start => last.1 = end,
                _ => self.busy.push((start, end)),
            }
            self.free_at_ns = end;
        }
        (start, end)
    }

    /// Busy fraction per bucket of `bucket_ns` up to `end_ns`.
    pub fn occupancy(&self, end_ns: u64, bucket_ns: u64) -> Vec<(u64, f64)> {
        let bucket = bucket_ns.max(1);
        let n = (end_ns.div_ceil(bucket)).max(1) as usize;
        let mut busy = vec![0u64; n];
        for &(s, e) in &self.busy {
            let mut t = s;
            while t < e {
                let b = (t / bucket) as usize;
                if b >= n {
                    break;
                }
                let bucket_end = (b as u64 + 1) * bucket;
                let seg_end = e.min(bucket_end);
                busy[b] += seg_end - t;
                t = seg_end;
            }
        }
        busy.iter()
            .enumerate()
            .map(|(i, &b)| (i as u64 * bucket, (b as f64 / bucket as f64).min(1.0)))
            .collect()
    }
}

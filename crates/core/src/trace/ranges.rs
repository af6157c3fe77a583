//! Every time and size a trace carries lies inside [`crate::limits`], so
//! the ledger's sums and the explorer's scales never saturate. A file that
//! says otherwise (a timestamp of 1e30 µs, a byte count of 2^64 - 1) is
//! refused with the first event, op or tensor that is out of range.

use super::Trace;
use crate::limits::{MAX_GRAPH_BYTES, MAX_NS, MAX_TOTAL_BYTES};

impl Trace {
    /// The first time or size out of range, as a sentence naming it.
    pub fn check_ranges(&self) -> Result<(), String> {
        // The sentence is only built for the value out of range (building
        // one per tensor and op cost more than the whole check).
        let late = |what: &dyn Fn() -> String, t: u64| {
            // The value itself may be a clamped conversion: name the limit only.
            (t >= MAX_NS)
                .then(|| format!("{} lies past 2^62 ns (146 years into the trace)", what()))
        };
        let big = |what: &dyn Fn() -> String, b: u64| {
            (b > MAX_GRAPH_BYTES)
                .then(|| format!("{} has {b} bytes, past 8 PiB (2^53 bytes)", what()))
        };
        // The columns first; the rows only to name what is out of range.
        let max = |c: &[u64]| c.iter().copied().max().unwrap_or(0);
        if max(self.tensors.bytes_col()) > MAX_GRAPH_BYTES {
            for t in &self.tensors {
                if let Some(m) = big(&|| format!("tensor {:?}", t.name), t.bytes) {
                    return Err(m);
                }
            }
        }
        let ops = &self.ops;
        if max(ops.start_col())
            .max(max(ops.end_col()))
            .max(max(ops.stall_col()))
            >= MAX_NS
        {
            for o in ops {
                let what = || format!("op {:?}", o.name);
                if let Some(m) = late(&what, o.end_ns.max(o.start_ns).max(o.stall_ns)) {
                    return Err(m);
                }
            }
        }
        // The columns first (a pass over three of them); the rows only to
        // name the first event out of range.
        let ev = &self.events;
        let total: u128 = ev.sizes().map(u128::from).sum();
        let in_range = ev.max_time_ns() < MAX_NS
            && ev.sizes().all(|b| b <= MAX_GRAPH_BYTES)
            && total < MAX_TOTAL_BYTES as u128;
        if !in_range {
            let mut total = 0u64;
            for (i, e) in ev.iter().enumerate() {
                let what = || format!("event {i} ({})", e.kind.as_str());
                let times = [Some(e.t_ns), e.dma_start_ns, e.dma_end_ns];
                if let Some(m) = late(&what, times.into_iter().flatten().max().unwrap_or(0)) {
                    return Err(m);
                }
                if let Some(m) = big(&what, e.bytes) {
                    return Err(m);
                }
                total = total.saturating_add(e.bytes);
                if total >= MAX_TOTAL_BYTES {
                    return Err(format!(
                        "{}: the trace's event bytes pass 2^62 bytes here",
                        what()
                    ));
                }
            }
        }
        for c in &self.counters {
            if c.samples.iter().any(|s| s.0 >= MAX_NS) {
                return Err(format!(
                    "counter {:?} has a sample past 2^62 ns (146 years into the trace)",
                    c.name
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::graph::TensorKind;
    use crate::trace::build::TraceBuilder;
    use crate::trace::{EventKind, Source};

    #[test]
    fn out_of_range_times_and_sizes_are_named() {
        let mut b = TraceBuilder::new(Source::Instrumented, "m", "runtime");
        b.tensor("a", 64, TensorKind::Activation, "sram");
        b.event(5, EventKind::Alloc, 0, 64, "sram", None, None, None);
        let mut tr = b.finish();
        assert_eq!(tr.check_ranges(), Ok(()));
        let ev = tr.events.at(0).owned();
        let at = |t_ns, bytes| {
            let mut e = ev.clone();
            e.t_ns = t_ns;
            e.bytes = bytes;
            e
        };
        tr.events.push(at(u64::MAX, 64));
        assert!(tr.check_ranges().unwrap_err().contains("event 1"));
        tr.events.set(1, &at(6, 1 << 60));
        assert!(tr.check_ranges().unwrap_err().contains("8 PiB"));
        tr.events.set(1, &at(6, 1 << 52));
        tr.events.extend(std::iter::repeat_n(at(7, 1 << 52), 1100));
        assert!(tr.check_ranges().unwrap_err().contains("2^62 bytes"));
        tr.events.truncate(1);
        tr.tensors.update(0, |t| t.bytes = u64::MAX);
        assert!(tr.check_ranges().unwrap_err().contains("tensor \"a\""));
    }
}

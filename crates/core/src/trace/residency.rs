//! Resident bytes over a trace's events: the one residency walk ([`walk`])
//! and the change each event makes. Outputs may be written in place: a
//! compiler such as Vela places an elementwise op's output over an operand
//! it reads for the last time (`alloc` with `reason: "in-place"`); both
//! tensors are resident while the op runs, but the shared bytes exist once
//! ([`deltas`]). Every reader of resident bytes (the trace's peak, the
//! per-op residency chart, pool lanes, importers' peaks) walks here, so
//! they agree and the chart never shows more than the pool holds.

use super::ops::OpInputs;
use super::{EventKind, EventRef, Events};

/// The `reason` of an in-place `alloc`.
pub const IN_PLACE: &str = "in-place";

/// The change in resident bytes each event makes (places add, removes
/// subtract, others 0), counting bytes an in-place output shares with the
/// operands of its op once: the output adds only what it does not
/// overlap, and each operand it overlapped later removes only the rest.
pub fn deltas(events: &Events, ops: &(impl OpInputs + ?Sized), n_tensors: usize) -> Vec<i128> {
    // Where each resident tensor sits, and bytes it shares with an
    // in-place output placed over it.
    let mut at: Vec<Option<(u64, u64)>> = vec![None; n_tensors];
    let mut shared: Vec<u64> = vec![0; n_tensors];
    events
        .iter()
        .map(|e| {
            let b = e.bytes as i128;
            let t = e.tensor;
            if e.kind.places() {
                let mut overlap = 0u64;
                if e.kind == EventKind::Alloc && e.reason == Some(IN_PLACE) {
                    if let (Some(off), Some(op)) = (e.offset, e.op.and_then(|o| ops.inputs_of(o))) {
                        let end = off.saturating_add(e.bytes);
                        for &i in op {
                            if let Some(Some((o2, e2))) = at.get(i).copied() {
                                let k = end.min(e2).saturating_sub(off.max(o2));
                                let k = k.min(e.bytes - overlap);
                                overlap += k;
                                shared[i] += k;
                            }
                        }
                    }
                }
                if let Some(slot) = at.get_mut(t) {
                    *slot = e.offset.map(|o| (o, o.saturating_add(e.bytes)));
                }
                b - overlap as i128
            } else if e.kind.removes() {
                let credit = shared.get_mut(t).map(std::mem::take).unwrap_or(0);
                if let Some(slot) = at.get_mut(t) {
                    *slot = None;
                }
                -(b - (credit as i128).min(b))
            } else {
                0
            }
        })
        .collect()
}

/// The one residency walk: resident bytes after each `(t_ns, delta)`, a
/// running sum that never goes below zero (a stream may begin mid-run,
/// with frees of what it never saw placed). Every figure of bytes on chip
/// over a trace's events (a pool's lane and per-op residency, a builder's
/// peak, an NPU case's L1+UB counter, ORT's arena peak) is this walk over
/// [`deltas`] or [`kind_deltas`].
pub fn walk(steps: impl IntoIterator<Item = (u64, i128)>) -> impl Iterator<Item = (u64, u64)> {
    let mut resident = 0i128;
    steps.into_iter().map(move |(t, d)| {
        resident = (resident + d).max(0);
        (t, resident as u64)
    })
}

/// `(t_ns, delta)` of each event by its kind alone: places add its bytes,
/// removes subtract them (no in-place accounting).
pub fn kind_delta(e: &EventRef<'_>) -> (u64, i128) {
    let b = e.bytes as i128;
    let d = if e.kind.places() {
        b
    } else if e.kind.removes() {
        -b
    } else {
        0
    };
    (e.t_ns, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Event;

    fn ev(
        kind: EventKind,
        tensor: usize,
        offset: u64,
        bytes: u64,
        op: usize,
        reason: Option<&str>,
    ) -> Event {
        Event {
            t_ns: 0,
            kind,
            tensor,
            bytes,
            pool: "sram".into(),
            offset: Some(offset),
            op: Some(op),
            dma_start_ns: None,
            dma_end_ns: None,
            thread: None,
            live_bytes: None,
            reason: reason.map(Into::into),
            written_bytes: None,
        }
    }

    #[test]
    fn shared_bytes_count_once() {
        let mut op1 = crate::trace::TraceOp::span("add", "Add", 0, 1);
        op1.inputs = vec![0];
        let ops = vec![crate::trace::TraceOp::span("conv", "Conv", 0, 1), op1];
        // I at [0, 100); O (64 B) in place at [36, 100); then I and O freed.
        let events = [
            ev(EventKind::Alloc, 0, 0, 100, 0, None),
            ev(EventKind::Alloc, 1, 36, 64, 1, Some(IN_PLACE)),
            ev(EventKind::Free, 0, 0, 100, 1, None),
            ev(EventKind::Free, 1, 36, 64, 1, None),
        ];
        assert_eq!(
            deltas(&events.to_vec().into(), &ops, 2),
            vec![100, 0, -36, -64]
        );
        // Without the reason both count whole.
        let mut plain = events.clone();
        plain[1].reason = None;
        assert_eq!(
            deltas(&plain.to_vec().into(), &ops, 2),
            vec![100, 64, -100, -64]
        );
    }
}

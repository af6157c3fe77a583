//! Placement intervals on the pool (offset x time), replayed from the events,
//! so fragmentation and the holes behind a lifetime spill can be drawn.

use crate::trace::{EventKind, Trace};
use serde::Serialize;

/// A tensor occupying `[offset, offset+bytes)` of `pool` during `[t0, t1)`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Placement {
    pub tensor: usize,
    pub pool: String,
    pub offset: u64,
    pub bytes: u64,
    pub t0: u64,
    pub t1: u64,
}

/// Every placement with a known offset; open ones close at the trace's end.
pub fn placements(tr: &Trace) -> Vec<Placement> {
    let end = tr
        .summary
        .latency_ns
        .max(tr.events.last().map(|e| e.t_ns).unwrap_or(0));
    let mut open: std::collections::HashMap<usize, Placement> = Default::default();
    let mut out = Vec::new();
    for e in &tr.events {
        match e.kind {
            EventKind::Alloc | EventKind::Reload | EventKind::Recompute => {
                if let Some(mut p) = open.remove(&e.tensor) {
                    p.t1 = e.t_ns;
                    out.push(p);
                }
                if let Some(off) = e.offset {
                    open.insert(
                        e.tensor,
                        Placement {
                            tensor: e.tensor,
                            pool: e.pool.clone(),
                            offset: off,
                            bytes: e.bytes,
                            t0: e.t_ns,
                            t1: end,
                        },
                    );
                }
            }
            EventKind::Free | EventKind::Evict => {
                if let Some(mut p) = open.remove(&e.tensor) {
                    p.t1 = e.t_ns;
                    out.push(p);
                }
            }
        }
    }
    out.extend(open.into_values());
    out.sort_by_key(|p| (p.t0, p.offset));
    out
}

//! Capacity vs lifetime (scheduling) spills. A spill is a *capacity* spill
//! when the live bytes at that step exceed the pool; otherwise it would have
//! fit and is a *lifetime* spill (fragmentation, late free, order).

use crate::trace::{EventKind, Trace};
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SpillClass {
    Capacity,
    Lifetime,
}

/// One classified eviction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassifiedSpill {
    pub event: usize,
    pub tensor: usize,
    pub op: Option<usize>,
    pub class: SpillClass,
    pub live_bytes: u64,
    pub capacity_bytes: u64,
    /// The simulator's reason, where recorded (`fragmentation`, `capacity`, `stream`).
    pub cause: String,
}

/// Totals of the split.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Classification {
    pub spills: Vec<ClassifiedSpill>,
    pub capacity_count: usize,
    pub lifetime_count: usize,
    pub capacity_bytes: u64,
    pub lifetime_bytes: u64,
}

/// Live bytes at time `t` from the `live_bytes` counter (last sample at or before `t`).
fn live_at(tr: &Trace, t: u64) -> Option<u64> {
    let c = tr.counters.iter().find(|c| c.name == "live_bytes")?;
    let i = c.samples.partition_point(|s| s.0 <= t);
    c.samples.get(i.checked_sub(1)?).map(|s| s.1 as u64)
}

pub fn classify(tr: &Trace) -> Classification {
    let mut out = Classification::default();
    for (i, e) in tr.events.iter().enumerate() {
        if e.kind != EventKind::Evict {
            continue;
        }
        let cap = tr
            .pools
            .iter()
            .find(|p| p.name == e.pool)
            .map(|p| p.capacity_bytes)
            .unwrap_or(u64::MAX);
        let live = e.live_bytes.or_else(|| live_at(tr, e.t_ns)).unwrap_or(0);
        let class = if live > cap {
            SpillClass::Capacity
        } else {
            SpillClass::Lifetime
        };
        match class {
            SpillClass::Capacity => {
                out.capacity_count += 1;
                out.capacity_bytes += e.bytes;
            }
            SpillClass::Lifetime => {
                out.lifetime_count += 1;
                out.lifetime_bytes += e.bytes;
            }
        }
        out.spills.push(ClassifiedSpill {
            event: i,
            tensor: e.tensor,
            op: e.op,
            class,
            live_bytes: live,
            capacity_bytes: cap,
            cause: e
                .reason
                .as_ref()
                .map(|r| r.to_string())
                .unwrap_or_else(|| match class {
                    SpillClass::Capacity => "capacity".into(),
                    SpillClass::Lifetime => "order or fragmentation".into(),
                }),
        });
    }
    out
}

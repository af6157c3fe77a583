//! A trace that holds only the recent part of a longer stream: what a live
//! JSONL tail keeps in bounded memory ([`crate::trace::import::jsonl`]).
//!
//! The window holds every event from [`StreamWindow::from_ns`] on, plus,
//! for each tensor resident at that time, the events since it was last
//! placed (so every `free` in the window has its placement, and resident
//! bytes over the window are exact). Everything older fell out: its ledger
//! per pool, its stall, its peak and its count are kept here, and the
//! state of each tensor it left behind (spilled before, DRAM holds a
//! current copy), so that the window's events are classified, replayed
//! and checked exactly as in the whole stream. The summary of a windowed
//! trace is the whole stream's; per-op and per-tensor figures are the
//! window's.

use super::ledger::Parts;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What fell out of a windowed trace (`meta.config.window`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamWindow {
    /// The most events the window was asked to hold (`--keep`).
    pub keep: u64,
    /// The window holds every event at or after this time (trace time).
    pub from_ns: u64,
    /// Events of the stream no longer in the window.
    pub events_before: u64,
    /// Ops of the stream no longer in the window.
    pub ops_before: u64,
    /// The ledger of the events no longer in the window, per pool.
    pub ledger_before: BTreeMap<String, Parts>,
    /// Stall of the ops no longer in the window.
    pub stall_before_ns: u64,
    /// The highest resident bytes before `from_ns`.
    pub peak_live_before: u64,
    /// Per pool, the highest end of a placement (offset + bytes) before
    /// the window, so a pool's capacity does not shrink as the window moves.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub high_water_before: BTreeMap<String, u64>,
    /// Tensors (ids in this trace) evicted or streamed out before the
    /// window: their later loads are spill traffic.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spilled_before: Vec<usize>,
    /// Tensors DRAM held a current copy of when the window starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub in_dram_before: Vec<usize>,
}

impl StreamWindow {
    /// The ledger of what fell out, over every pool.
    pub fn total_before(&self) -> Parts {
        let mut t = Parts::default();
        for p in self.ledger_before.values() {
            t.merge(p);
        }
        t
    }

    /// Whether anything fell out yet.
    pub fn is_trimmed(&self) -> bool {
        self.events_before > 0 || self.ops_before > 0
    }
}

impl super::Trace {
    /// The stream window this trace is, when it holds only the recent part
    /// of a longer stream.
    pub fn window(&self) -> Option<&StreamWindow> {
        match &self.meta.producer {
            super::Producer::Instrumented(i) => i.window.as_deref(),
            _ => None,
        }
    }
}

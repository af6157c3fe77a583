//! One figure set per run, and one way to print it. A run's bound has a
//! method and a state: final (nothing better will be computed for it),
//! refining (a better one is being computed: shown as such, no gap against
//! it) or unrefined (a better one exists in principle but was not computed
//! within the budget: no gap). The sim and what-if tables, the line under
//! them, the explorer's Overview, markdown and HTML reports print a run's
//! bound, gap and peak live through the functions here, so the same run
//! reads the same wherever it is shown.

use crate::sim::optimum::Optimum;
use crate::trace::{BoundMethod, Summary};
use crate::units::fmt_bytes;
use serde::{Deserialize, Serialize};

/// Whether a bound is the last word for its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BoundState {
    /// The tightest this run gets (the exact program ran, or does not
    /// apply: several pools, the ideal policy, the solve turned off).
    #[default]
    Final,
    /// A better bound is being computed.
    Refining,
    /// The exact program was not run for this run within its budget (a
    /// what-if point past the budget): the cheap bound only, and no gap.
    Unrefined,
}

impl BoundState {
    pub fn is_final(self) -> bool {
        self == BoundState::Final
    }
}

/// A run's lower bound on spill traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrafficBound {
    pub bytes: u64,
    pub method: BoundMethod,
    pub state: BoundState,
}

impl TrafficBound {
    /// The bound a trace's summary records, taken as final.
    pub fn of(s: &Summary) -> TrafficBound {
        TrafficBound {
            bytes: s.lower_bound_traffic_bytes,
            method: s.lower_bound_method,
            state: BoundState::Final,
        }
    }

    pub fn with_state(self, state: BoundState) -> TrafficBound {
        TrafficBound { state, ..self }
    }

    /// Raised to what the exact program found where tighter (a proven
    /// minimum wins ties); final. A run without a bound (the ideal policy,
    /// a profile) keeps none.
    pub fn refined(self, o: &Optimum) -> TrafficBound {
        if self.method == BoundMethod::None {
            return self.with_state(BoundState::Final);
        }
        let (bytes, method) = o.tightest(self.bytes, self.method);
        TrafficBound {
            bytes,
            method,
            state: BoundState::Final,
        }
    }

    /// Traffic above the bound, bytes.
    pub fn gap_bytes(&self, traffic: u64) -> u64 {
        traffic.saturating_sub(self.bytes)
    }

    /// `(traffic - bound) / bound`, only for a final bound above 0.
    pub fn gap_ratio(&self, traffic: u64) -> Option<f64> {
        self.state
            .is_final()
            .then(|| gap_ratio(traffic, self.bytes, self.method))
            .flatten()
    }

    /// `34.7 MiB lp`, `147.0 MiB ilp`, `15.2 MiB per-op, refining…`, or `-`
    /// (table cells).
    pub fn cell(&self) -> String {
        match self.method {
            BoundMethod::None => "-".into(),
            m => format!(
                "{} {}{}",
                fmt_bytes(self.bytes),
                m.as_str(),
                self.state_suffix()
            ),
        }
    }

    /// `34.7 MiB (lp)`, `147.0 MiB (ilp, proven)`, `15.2 MiB (per-op,
    /// refining…)`, `not computed` (the Overview).
    pub fn text(&self) -> String {
        match self.method {
            BoundMethod::None => "not computed".into(),
            BoundMethod::Ilp => format!(
                "{} (ilp, proven{})",
                fmt_bytes(self.bytes),
                self.state_suffix()
            ),
            m => format!(
                "{} ({}{})",
                fmt_bytes(self.bytes),
                m.as_str(),
                self.state_suffix()
            ),
        }
    }

    /// What the bound's row is called: a proven minimum is a minimum.
    pub fn label(&self) -> &'static str {
        match self.method {
            BoundMethod::Ilp => "minimum",
            _ => "lower bound",
        }
    }

    fn state_suffix(&self) -> &'static str {
        match self.state {
            BoundState::Final => "",
            BoundState::Refining => ", refining…",
            BoundState::Unrefined => ", not refined",
        }
    }

    /// The run's gap to this bound as every table and view prints it:
    /// `4.6 MiB (+30%)`; `0 B (optimal)` when a proven minimum is reached;
    /// `-` without a final bound (none, refining or unrefined).
    pub fn gap_text(&self, traffic: u64) -> String {
        match self.state {
            BoundState::Final => gap_text(traffic, self.bytes, self.method),
            BoundState::Refining => "- (bound refining…)".into(),
            BoundState::Unrefined => "-".into(),
        }
    }
}

/// `(traffic - bound) / bound`, when there is a bound above 0.
pub fn gap_ratio(traffic: u64, bound: u64, method: BoundMethod) -> Option<f64> {
    (method != BoundMethod::None && bound > 0)
        .then(|| traffic.saturating_sub(bound) as f64 / bound as f64)
}

/// A run's gap to a final bound: `4.6 MiB (+30%)`; `0 B (optimal)` when
/// the bound is a proven minimum the run reaches; `-` without a bound.
pub fn gap_text(traffic: u64, bound: u64, method: BoundMethod) -> String {
    let gap = traffic.saturating_sub(bound);
    match (method, gap_ratio(traffic, bound, method)) {
        (BoundMethod::None, _) => "-".into(),
        (BoundMethod::Ilp, _) if gap == 0 => format!("{} (optimal)", fmt_bytes(0)),
        (_, Some(r)) => format!("{} (+{:.0}%)", fmt_bytes(gap), r * 100.0),
        (_, None) => fmt_bytes(gap),
    }
}

/// What peak live is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Against {
    /// The run's (main pool's) capacity.
    Capacity,
    /// Every pool holding a tensor that is not a weight, when that is
    /// several (peak live counts their tensors together).
    LivePools,
    /// An NPU case's L1 and UB together (the benchmark's peak).
    L1AndUb,
    /// No capacity known.
    Nothing,
}

/// Peak live bytes against the capacity of what they count: the one place
/// that decides which capacity that is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeakLive {
    pub peak: u64,
    pub against: Against,
    pub capacity: u64,
}

impl PeakLive {
    /// A run's peak: over the live pools' capacity where there are several,
    /// else the run's capacity.
    pub fn of_run(peak: u64, capacity: u64, live_pools_capacity: Option<u64>) -> PeakLive {
        let (against, capacity) = match live_pools_capacity {
            Some(all) if all > 0 => (Against::LivePools, all),
            _ if capacity > 0 => (Against::Capacity, capacity),
            _ => (Against::Nothing, 0),
        };
        PeakLive {
            peak,
            against,
            capacity,
        }
    }

    /// A trace's peak, an NPU case's against its L1 and UB.
    pub fn of_trace(tr: &crate::trace::Trace) -> PeakLive {
        let s = &tr.summary;
        if let crate::trace::Producer::NpuCase(n) = &tr.meta.producer {
            let caps: u64 = ["L1", "UB"]
                .iter()
                .filter_map(|p| n.capacities.get(*p))
                .sum();
            return PeakLive {
                peak: s.peak_live_bytes,
                against: Against::L1AndUb,
                capacity: caps,
            };
        }
        let capacity = tr.pools.first().map_or(0, |p| p.capacity_bytes);
        PeakLive::of_run(
            s.peak_live_bytes,
            capacity,
            super::runs::live_pools_capacity(tr),
        )
    }

    /// As a share, for tables: `27.6 MiB (172%)`, `4.1 KiB (85% of 6.0
    /// KiB)` over several pools, the bytes alone without a capacity.
    pub fn cell(&self) -> String {
        let share = |c: u64| self.peak as f64 * 100.0 / c as f64;
        match self.against {
            Against::Capacity => format!("{} ({:.0}%)", fmt_bytes(self.peak), share(self.capacity)),
            Against::LivePools | Against::L1AndUb => format!(
                "{} ({:.0}% of {})",
                fmt_bytes(self.peak),
                share(self.capacity),
                crate::units::fmt_bytes_precise(self.capacity)
            ),
            Against::Nothing => fmt_bytes(self.peak),
        }
    }

    /// Side by side, for figure lists: `1.2 MiB / 1.0 MiB cap`, `... /
    /// 6.0 KiB live pools`, `1.0 KiB L1+UB / 5.0 KiB caps`.
    pub fn short(&self) -> String {
        let precise = crate::units::fmt_bytes_precise;
        let (p, c) = (precise(self.peak), precise(self.capacity));
        match self.against {
            Against::Capacity => format!("{p} / {c} cap"),
            Against::LivePools => format!("{p} / {c} live pools"),
            Against::L1AndUb => format!("{p} L1+UB / {c} caps"),
            Against::Nothing => p,
        }
    }

    /// [`Self::short`] for a narrow box: the two figures, what they are
    /// against said by the row (`576.0 KiB/400.0 KiB`).
    pub fn compact(&self) -> String {
        let precise = crate::units::fmt_bytes_precise;
        match self.against {
            Against::Nothing => precise(self.peak),
            _ => format!("{}/{}", precise(self.peak), precise(self.capacity)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(bytes: u64, method: BoundMethod, state: BoundState) -> TrafficBound {
        TrafficBound {
            bytes,
            method,
            state,
        }
    }

    #[test]
    fn only_a_final_bound_has_a_gap() {
        let b = bound(100, BoundMethod::PerOp, BoundState::Refining);
        assert_eq!(b.gap_ratio(300), None);
        assert!(b.cell().ends_with("per-op, refining…"), "{}", b.cell());
        assert_eq!(b.with_state(BoundState::Final).gap_ratio(300), Some(2.0));
        assert_eq!(
            bound(100, BoundMethod::Lp, BoundState::Unrefined).gap_text(300),
            "-"
        );
        assert_eq!(
            bound(300, BoundMethod::Ilp, BoundState::Final).gap_text(300),
            "0 B (optimal)"
        );
    }
}

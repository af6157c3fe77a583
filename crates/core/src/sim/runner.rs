//! How re-simulations run when they are many and may go stale (suggestion
//! candidates, what-if points, the knee search): every run checks one
//! [`Cancel`] token, and the planned policy's plan comes from a
//! [`Planner`] the caller chooses — the session's, which shares one solve
//! per graph and capacity and remembers it, instead of each run solving
//! again within the full budget.

use super::optimum::{optimal_traffic_with, OptimumLimits, PoolSize, DEFAULT_TIME_LIMIT_S};
use super::plan::Residency;
use super::{prepare_graph, simulate_with, EvictionPolicy, SimConfig};
use crate::cancel::Cancel;
use crate::cost::HardwareProfile;
use crate::graph::Graph;
use crate::trace::Trace;
use crate::Result;
use std::sync::Arc;

/// Where the planned policy's plan for a (prepared) graph in a pool comes
/// from.
pub trait Planner: Sync {
    /// The plan for `prepared` in `pool` (`None`: the solve found none).
    fn plan(
        &self,
        prepared: &Graph,
        pool: PoolSize,
        cancel: &Cancel,
    ) -> Result<Option<Arc<Residency>>>;
}

/// Solves each plan anew within a time limit (what one-shot library calls
/// do; the session's planner remembers its solves).
#[derive(Debug, Clone, Copy)]
pub struct SolveEach {
    pub time_limit_s: f64,
}

impl Default for SolveEach {
    fn default() -> Self {
        SolveEach {
            time_limit_s: DEFAULT_TIME_LIMIT_S,
        }
    }
}

impl Planner for SolveEach {
    fn plan(
        &self,
        prepared: &Graph,
        pool: PoolSize,
        cancel: &Cancel,
    ) -> Result<Option<Arc<Residency>>> {
        let limits = OptimumLimits {
            time_limit_s: self.time_limit_s,
            ..Default::default()
        };
        Ok(optimal_traffic_with(prepared, pool, limits, cancel, &|_, _| {})?.plan)
    }
}

/// A cancel token and a planner: what every re-simulation of a batch
/// shares.
#[derive(Clone, Copy)]
pub struct Runner<'a> {
    pub cancel: &'a Cancel,
    pub planner: &'a dyn Planner,
}

impl Runner<'_> {
    /// Simulates `g` on `hw` under `cfg`: `Err(Error::Cancelled)` once the
    /// token fires; the planned policy follows `cfg.plan`, else the
    /// planner's plan.
    pub fn simulate(&self, g: &Graph, hw: &HardwareProfile, cfg: &SimConfig) -> Result<Trace> {
        let plan = self.plan(g, hw, cfg)?;
        simulate_with(g, hw, cfg, plan, self.cancel)
    }

    /// [`Runner::simulate`] keeping only the run's summary (no events, ops
    /// or tensors: [`super::simulate_summary`]), for a sweep that reads
    /// nothing else.
    pub fn summarise(&self, g: &Graph, hw: &HardwareProfile, cfg: &SimConfig) -> Result<Trace> {
        let plan = self.plan(g, hw, cfg)?;
        super::simulate_summary(g, hw, cfg, plan, self.cancel)
    }

    /// The planned policy's plan for a run of `cfg` (`None` for the other
    /// policies).
    fn plan(
        &self,
        g: &Graph,
        hw: &HardwareProfile,
        cfg: &SimConfig,
    ) -> Result<Option<Arc<Residency>>> {
        self.cancel.check()?;
        let plan = match cfg.policy {
            EvictionPolicy::Planned if cfg.plan.is_some() => cfg.plan.clone(),
            // The engine refuses the planned policy over several pools.
            EvictionPolicy::Planned if hw.is_single_pool() => {
                let p = prepare_graph(g, cfg)?;
                match super::cores::core_graph(&p, hw, cfg)? {
                    Some(c) => self.planner.plan(&c, PoolSize::of(hw), self.cancel)?,
                    // A graph split over cores plans each core's part.
                    None => None,
                }
            }
            _ => None,
        };
        Ok(plan)
    }
}

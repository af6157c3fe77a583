//! ExecuTorch's own memory plan of a program beside spillscope's planned
//! policy on the same graph, at the same on-chip size: what `suggest` on a
//! `.pte` says when a BankedGreedy plan moves more through DRAM than the
//! planner would.

use crate::cost::HardwareProfile;
use crate::graph::executorch::Program;
use crate::graph::Graph;
use crate::sim::{EvictionPolicy, Runner, SimConfig, SolveEach};
use crate::units::fmt_bytes;
use crate::Result;
use serde::Serialize;
use std::path::Path;

/// The two plans' DRAM traffic at arena 1's size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgainstPlan {
    /// Arena 1 (the on-chip bank) of the program.
    pub sram_bytes: u64,
    /// Spill traffic of ExecuTorch's plan (what `import` of the `.pte` shows).
    pub executorch_traffic_bytes: u64,
    /// Spill traffic of spillscope's planned policy at `sram_bytes`.
    pub planned_traffic_bytes: u64,
}

impl AgainstPlan {
    /// Bytes the planned policy moves less (0 when it does not).
    pub fn saved_bytes(&self) -> u64 {
        self.executorch_traffic_bytes
            .saturating_sub(self.planned_traffic_bytes)
    }

    /// One line for people.
    pub fn line(&self) -> String {
        let head = format!(
            "ExecuTorch's plan in this program keeps {} on chip (arena 1) and moves {} through DRAM; spillscope's planned policy at that size moves {}",
            fmt_bytes(self.sram_bytes),
            fmt_bytes(self.executorch_traffic_bytes),
            fmt_bytes(self.planned_traffic_bytes)
        );
        match self.saved_bytes() {
            0 => format!("{head}: no less"),
            s => format!(
                "{head}: {} less ({:.0} %; --capacity {} --policy planned)",
                fmt_bytes(s),
                100.0 * s as f64 / self.executorch_traffic_bytes.max(1) as f64,
                self.sram_bytes
            ),
        }
    }
}

/// The comparison for the program at `pte` (lowered as `g`) when its plan
/// uses DRAM (a banked plan); `None` for a plan all in arena 1. The planned
/// run takes `cfg` with the planned policy, on `hw` at arena 1's size.
pub fn against_plan(
    pte: &Path,
    g: &Graph,
    hw: &HardwareProfile,
    cfg: &SimConfig,
) -> Result<Option<AgainstPlan>> {
    let p = Program::load(pte)?;
    let uses_dram = p.arena_bytes.iter().skip(2).any(|&b| b > 0);
    let Some(&sram) = p.arena_bytes.get(1).filter(|_| uses_dram) else {
        return Ok(None);
    };
    let (plan, _) = crate::trace::import::executorch::plan_trace(&p, &g.name, None, None)
        .map_err(|d| crate::Error::parse(pte, crate::graph::executorch::FORMAT, d))?;
    let cancel = crate::cancel::Cancel::never();
    let runner = Runner {
        cancel: &cancel,
        planner: &SolveEach::default(),
    };
    let planned = SimConfig {
        policy: EvictionPolicy::Planned,
        ..cfg.clone()
    };
    let run = runner.simulate(g, &hw.clone().with_capacity(sram)?, &planned)?;
    Ok(Some(AgainstPlan {
        sram_bytes: sram,
        executorch_traffic_bytes: plan.summary.traffic_bytes,
        planned_traffic_bytes: run.summary.traffic_bytes,
    }))
}

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

/// ExecuTorch's imported plan against a spillscope run of the same
/// program: tensors and ops share their names (`v52`, `convolution_3`), so
/// they match one to one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanComparison {
    /// Arena 1 of the program.
    pub sram_bytes: u64,
    pub sim_policy: String,
    pub sim_capacity_bytes: u64,
    /// Intermediate tensors (not inputs, outputs or weights) on both sides.
    pub matched: usize,
    pub both_on_chip: usize,
    pub both_spilled: Vec<String>,
    /// In DRAM in ExecuTorch's plan only / spilled by spillscope only.
    pub only_plan_spilled: Vec<String>,
    pub only_sim_spilled: Vec<String>,
    /// Same decision / matched, percent.
    pub agreement_pct: f64,
    /// DRAM bytes of the intermediates (the ledger's, weights apart).
    pub plan_dram_bytes: u64,
    pub sim_dram_bytes: u64,
    /// Spill traffic on each side (the summaries') and the spillscope
    /// run's lower bound on it.
    pub plan_traffic_bytes: u64,
    pub sim_traffic_bytes: u64,
    pub bound_bytes: u64,
    pub bound_method: String,
    /// Per op, DRAM bytes of its intermediates on both sides, largest
    /// difference first (ops where both are 0 left out).
    pub ops: Vec<OpBytes>,
}

/// One op's DRAM bytes on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpBytes {
    pub op: String,
    pub plan_bytes: u64,
    pub sim_bytes: u64,
}

/// The plan's info when `tr` is an imported ExecuTorch plan.
pub fn plan_info(
    tr: &crate::trace::Trace,
) -> Option<&crate::trace::import::executorch::ExecutorchInfo> {
    match &tr.meta.producer {
        crate::trace::Producer::Instrumented(i) => i.executorch.as_deref(),
        _ => None,
    }
}

/// Compares ExecuTorch's plan `p` (an imported `.pte`) with spillscope's
/// run `s`; `None` when `p` is not one or `s` is not a run of the same
/// program (no tensor in common).
pub fn compare(p: &crate::trace::Trace, s: &crate::trace::Trace) -> Option<PlanComparison> {
    use crate::trace::TensorKind;
    let info = plan_info(p)?;
    if plan_info(s).is_some() {
        return None; // two plans: the generic diff says it all
    }
    let (pb, ps, pop) = super::vela::dram_use(p);
    let (sb, ss, sop) = super::vela::dram_use(s);
    let by_name: std::collections::HashMap<&str, usize> =
        s.tensors.iter().map(|t| (t.name, t.id)).collect();
    let inter = |k: TensorKind| k == TensorKind::Activation;
    let (mut matched, mut both_on_chip) = (0, 0);
    let (mut both, mut only_p, mut only_s) = (Vec::new(), Vec::new(), Vec::new());
    let (mut plan_dram, mut sim_dram) = (0u64, 0u64);
    for t in p.tensors.iter().filter(|t| inter(t.kind)) {
        let Some(&si) = by_name.get(t.name) else {
            continue;
        };
        if !inter(s.tensors.at(si).kind) {
            continue;
        }
        matched += 1;
        plan_dram += pb[t.id];
        sim_dram += sb[si];
        match (ps[t.id], ss[si]) {
            (false, false) => both_on_chip += 1,
            (true, true) => both.push(t.name.to_string()),
            (true, false) => only_p.push(t.name.to_string()),
            (false, true) => only_s.push(t.name.to_string()),
        }
    }
    if matched == 0 {
        return None;
    }
    let s_ops: std::collections::HashMap<&str, usize> =
        s.ops.iter().map(|o| (o.name, o.id)).collect();
    let mut ops: Vec<OpBytes> = p
        .ops
        .iter()
        .filter_map(|o| {
            let sb = s_ops.get(o.name).map_or(0, |&i| sop[i]);
            (pop[o.id] > 0 || sb > 0).then(|| OpBytes {
                op: o.name.to_string(),
                plan_bytes: pop[o.id],
                sim_bytes: sb,
            })
        })
        .collect();
    ops.sort_by_key(|r| std::cmp::Reverse(r.plan_bytes.abs_diff(r.sim_bytes)));
    Some(PlanComparison {
        sram_bytes: info.arena_bytes.get(1).copied().unwrap_or(0),
        sim_policy: s.meta.policy.clone(),
        sim_capacity_bytes: s.summary.capacity_bytes,
        matched,
        both_on_chip,
        agreement_pct: 100.0 * (both_on_chip + both.len()) as f64 / matched as f64,
        both_spilled: both,
        only_plan_spilled: only_p,
        only_sim_spilled: only_s,
        plan_dram_bytes: plan_dram,
        sim_dram_bytes: sim_dram,
        plan_traffic_bytes: p.summary.traffic_bytes,
        sim_traffic_bytes: s.summary.traffic_bytes,
        bound_bytes: s.summary.lower_bound_traffic_bytes,
        bound_method: s.summary.lower_bound_method.as_str().to_string(),
        ops,
    })
}

impl PlanComparison {
    /// The two lines the Compare view shows (`diff` prints them too).
    pub fn lines(&self) -> [String; 2] {
        [
            format!(
                "spilled set: {:.1}% of {} agree ({} both, {} only ExecuTorch, {} only spillscope)",
                self.agreement_pct,
                self.matched,
                self.both_spilled.len(),
                self.only_plan_spilled.len(),
                self.only_sim_spilled.len()
            ),
            format!(
                "DRAM traffic: ExecuTorch {}, spillscope {}; bound {} ({})",
                fmt_bytes(self.plan_traffic_bytes),
                fmt_bytes(self.sim_traffic_bytes),
                fmt_bytes(self.bound_bytes),
                self.bound_method
            ),
        ]
    }
}

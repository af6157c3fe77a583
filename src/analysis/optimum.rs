//! The exact minimum spill traffic for a fixed op order, from a 0-1 integer
//! program (good_lp with the pure-Rust microlp solver), for graphs small
//! enough to solve in seconds. Users see how far each policy is from optimal.
//!
//! The model is the ledger's accounting (docs/trace-format.md) with
//! fragmentation, alignment, weights and graph inputs relaxed away (a graph
//! input can always be read where it is used, a compulsory load, and then
//! takes no room), so its optimum is a valid lower bound on every policy's
//! `traffic_bytes` (a property test checks this):
//! * `r[t,s]` = activation `t` is on chip while op `s` runs (for `s` in its
//!   live interval); at every step, resident bytes <= capacity;
//! * an operand not resident at its use is streamed: its bytes are read
//!   (streamed in) or written (streamed out);
//! * becoming resident again after a step off chip is a reload (its bytes);
//! * an activation read back or streamed out was written once (`w[t]`:
//!   an eviction's write-back or its stream out).
//!
//! Steps where nothing competes (live bytes <= capacity) are folded away;
//! tensors whose whole lifetime is free of pressure drop out entirely.

use crate::graph::{Graph, Liveness, TensorKind};
use crate::trace::BoundMethod;
use good_lp::{
    constraint, default_solver, variable, Expression, ProblemVariables, ResolutionError, Solution,
    SolutionStatus, SolverModel, Variable, WithInitialSolution, WithTimeLimit,
};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// The time the exact program gets by default (`sim --ilp-time`, `report`
/// and the explorer), so all three print the same bound for a run.
pub const DEFAULT_TIME_LIMIT_S: f64 = 3.0;

/// Limits beyond which the solver is not tried.
#[derive(Debug, Clone, Copy)]
pub struct OptimumLimits {
    pub max_tensors: usize,
    pub max_variables: usize,
    pub time_limit_s: f64,
}

impl Default for OptimumLimits {
    fn default() -> Self {
        OptimumLimits {
            max_tensors: 400,
            max_variables: 20_000,
            time_limit_s: 10.0,
        }
    }
}

/// What the solvers found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Optimum {
    /// Proven minimum traffic (bytes) of the relaxed model, when the integer
    /// program was solved within the time limit.
    pub exact_bytes: Option<u64>,
    /// The linear-programming relaxation's optimum, rounded down: a valid
    /// lower bound (<= exact) that is quick to get even where the integer
    /// program is not.
    pub lp_bound_bytes: Option<u64>,
    pub variables: usize,
    pub solve_ms: u64,
    /// Why `exact_bytes` (or both) is missing.
    pub note: Option<String>,
}

impl Optimum {
    pub fn traffic(&self) -> Option<u64> {
        self.exact_bytes
    }

    /// The tighter of `bound` (found by `method`) and what this program
    /// found: a proven minimum (`ilp`) wins ties, as it says more.
    pub fn tightest(&self, bound: u64, method: BoundMethod) -> (u64, BoundMethod) {
        let mut best = (bound, method);
        if let Some(lp) = self.lp_bound_bytes {
            if lp > best.0 {
                best = (lp, BoundMethod::Lp);
            }
        }
        if let Some(e) = self.exact_bytes {
            if e >= best.0 {
                best = (e, BoundMethod::Ilp);
            }
        }
        best
    }

    /// Raises a run's summary bound to this one where tighter.
    pub fn tighten(&self, s: &mut crate::trace::Summary) {
        if s.lower_bound_method == BoundMethod::None {
            return;
        }
        let (b, m) = self.tightest(s.lower_bound_traffic_bytes, s.lower_bound_method);
        s.lower_bound_traffic_bytes = b;
        s.lower_bound_method = m;
    }
    fn unavailable(note: String) -> Optimum {
        Optimum {
            exact_bytes: None,
            lp_bound_bytes: None,
            variables: 0,
            solve_ms: 0,
            note: Some(note),
        }
    }
}

/// Sizes in KiB keep the solver's numbers well scaled.
const SCALE: f64 = 1.0 / 1024.0;

struct Model {
    vars: ProblemVariables,
    objective: Expression,
    constant: f64,
    constraints: Vec<good_lp::Constraint>,
    start: Vec<(Variable, f64)>,
    n_vars: usize,
}

fn build(
    g: &Graph,
    live: &Liveness,
    pressure: &[bool],
    capacity: u64,
    integer: bool,
    max_vars: usize,
) -> Option<Model> {
    let new_var = |vars: &mut ProblemVariables| {
        if integer {
            vars.add(variable().binary())
        } else {
            vars.add(variable().min(0.0).max(1.0))
        }
    };
    let mut vars = ProblemVariables::new();
    let mut objective = Expression::from(0.0);
    let mut constant = 0.0f64;
    let mut constraints = Vec::new();
    let mut at_step: Vec<Expression> = vec![Expression::from(0.0); g.ops.len()];
    let mut n_vars = 0usize;
    // A feasible start: everything streamed (r = 0, l = 0, w = 1).
    let mut start: Vec<(Variable, f64)> = Vec::new();
    for t in &g.tensors {
        // Weights are not spill, and a graph input can always be read from
        // DRAM where it is used (a compulsory load): neither is modelled.
        if matches!(t.kind, TensorKind::Weight | TensorKind::Input) || t.bytes == 0 {
            continue;
        }
        let Some(iv) = live.intervals[t.id] else {
            continue;
        };
        if !(iv.start..=iv.end).any(|s| pressure[s]) {
            continue;
        }
        let bytes = t.bytes as f64 * SCALE;
        let is_use = |s: usize| t.consumers.binary_search(&s).is_ok();
        // Key steps: production, uses, pressured steps.
        let keys: Vec<usize> = (iv.start..=iv.end)
            .filter(|&s| s == iv.start || pressure[s] || is_use(s))
            .collect();
        n_vars += keys.len() * 2 + 1;
        if n_vars > max_vars {
            return None;
        }
        let r: Vec<Variable> = keys.iter().map(|_| new_var(&mut vars)).collect();
        let w = Some(new_var(&mut vars));
        start.extend(r.iter().map(|&v| (v, 0.0)));
        if let Some(w) = w {
            start.push((w, 1.0));
            objective += bytes * w;
            // Streamed out at production.
            constraints.push(constraint!(w + r[0] >= 1));
        }
        for (j, &s) in keys.iter().enumerate() {
            if pressure[s] {
                at_step[s] += bytes * r[j];
            }
            if is_use(s) {
                // Streamed in if not resident at a use.
                constant += bytes;
                objective -= bytes * r[j];
                if let Some(w) = w {
                    constraints.push(constraint!(w + r[j] >= 1));
                }
            }
            if j > 0 {
                let l = new_var(&mut vars);
                start.push((l, 0.0));
                objective += bytes * l;
                constraints.push(constraint!(l - r[j] + r[j - 1] >= 0));
                if let Some(w) = w {
                    constraints.push(constraint!(w - l >= 0));
                }
            }
        }
    }
    let cap = capacity as f64 * SCALE;
    for (s, e) in at_step.into_iter().enumerate() {
        if pressure[s] {
            constraints.push(constraint!(e <= cap));
        }
    }
    Some(Model {
        vars,
        objective,
        constant,
        constraints,
        start,
        n_vars,
    })
}

/// Solves for the minimum traffic of `g` (in its op order) at `capacity`:
/// the LP relaxation first (a bound), then the integer program.
pub fn optimal_traffic(g: &Graph, capacity: u64, limits: OptimumLimits) -> Optimum {
    if g.tensors.len() > limits.max_tensors {
        return Optimum::unavailable(format!(
            "{} tensors; the exact solver runs up to {}",
            g.tensors.len(),
            limits.max_tensors
        ));
    }
    let live = Liveness::compute(g);
    // Graph inputs are not modelled (read where used), so only the other
    // live bytes compete for the capacity.
    let mut competing = live.live_bytes.clone();
    for t in g.tensors.iter().filter(|t| t.kind == TensorKind::Input) {
        if let Some(iv) = live.intervals[t.id] {
            for b in &mut competing[iv.start..=iv.end] {
                *b = b.saturating_sub(t.bytes);
            }
        }
    }
    let pressure: Vec<bool> = competing.iter().map(|&b| b > capacity).collect();
    if !pressure.iter().any(|&p| p) {
        return Optimum {
            exact_bytes: Some(0),
            lp_bound_bytes: Some(0),
            variables: 0,
            solve_ms: 0,
            note: None,
        };
    }
    let started = Instant::now();
    let too_big = || {
        Optimum::unavailable(format!(
            "more than {} variables; the exact solver is for small graphs",
            limits.max_variables
        ))
    };
    // LP relaxation.
    let Some(lp) = build(g, &live, &pressure, capacity, false, limits.max_variables) else {
        return too_big();
    };
    let lp_bound = {
        let mut model = lp.vars.minimise(lp.objective.clone()).using(default_solver);
        for c in lp.constraints {
            model = model.with(c);
        }
        model.solve().ok().map(|sol| {
            let v = (sol.eval(&lp.objective) + lp.constant) / SCALE;
            // Round down, with room for floating-point error.
            (v - v.abs() * 1e-9).floor().max(0.0) as u64
        })
    };
    let Some(ip) = build(g, &live, &pressure, capacity, true, limits.max_variables) else {
        return too_big();
    };
    let n_vars = ip.n_vars;
    let mut model = ip
        .vars
        .minimise(ip.objective.clone())
        .using(default_solver)
        .with_time_limit(limits.time_limit_s)
        .with_initial_solution(ip.start);
    for c in ip.constraints {
        model = model.with(c);
    }
    let (exact, note) = match model.solve() {
        Ok(sol) if matches!(sol.status(), SolutionStatus::Optimal) => {
            let v = (sol.eval(&ip.objective) + ip.constant) / SCALE;
            (Some(v.round().max(0.0) as u64), None)
        }
        Ok(_) => (
            None,
            Some(format!(
                "no proven optimum within {} s (LP bound shown)",
                limits.time_limit_s
            )),
        ),
        Err(ResolutionError::Infeasible) => (
            None,
            Some("the model is infeasible (a bug: streaming is always possible)".into()),
        ),
        Err(e) => (None, Some(format!("solver: {e}"))),
    };
    Optimum {
        exact_bytes: exact,
        lp_bound_bytes: lp_bound.map(|b| exact.map_or(b, |e| b.min(e))),
        variables: n_vars,
        solve_ms: started.elapsed().as_millis() as u64,
        note,
    }
}

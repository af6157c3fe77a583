//! The minimum spill traffic for a fixed op order, and the plan that
//! reaches it, from a 0-1 integer program (the pure-Rust microlp solver,
//! run in cancellable slices). Users see how far each policy is from
//! optimal; the `planned` policy follows the program's solution.
//!
//! The model is the ledger's accounting (docs/trace-format.md) with
//! fragmentation, weights and graph inputs relaxed away (a graph input can
//! always be read where it is used, a compulsory load, and then takes no
//! room), so its optimum is a valid lower bound on every policy's
//! `traffic_bytes` (property tests check this):
//! * `r[t,s]` = activation `t` is on chip while op `s` runs (for `s` in its
//!   live interval); at every step, resident room <= capacity;
//! * an operand not resident at its use is streamed: its bytes are read
//!   (streamed in) or written (streamed out);
//! * becoming resident again after a step off chip is a reload (its bytes);
//! * an activation read back or streamed out was written once (`w[t]`:
//!   an eviction's write-back or its stream out).
//!
//! Room is counted as the pool's allocator takes it: sizes rounded up to
//! its alignment (a zero-byte tensor takes one unit), the capacity rounded
//! down to it; traffic is counted in raw bytes, as the ledger counts it.
//!
//! Steps where nothing competes (live room <= capacity) are folded away;
//! tensors whose whole lifetime is free of pressure drop out entirely.
//!
//! **Windows.** A long schedule is cut into windows of bounded size, cut
//! where the fewest bytes stay live across. Every byte of traffic happens
//! at one step, so the traffic of any solution is the sum of what it moves
//! inside each window. Each window is solved on its own with the tensors
//! live on entry given for free (already in DRAM if useful, on or off chip
//! as suits): each window's minimum is then at most what any solution moves
//! inside it, and their sum is a valid lower bound (`windowed`). Where a
//! window's integer program does not finish, its LP relaxation (or, out of
//! time, its per-op working-set bound) stands in. The plan is solved window
//! after window with each window's entry fixed to the previous window's
//! exit, so it is one consistent solution; where its cost equals the bound
//! the bound is proven the minimum.

mod model;
mod solve;
mod windows;

use super::plan::Residency;
use crate::cancel::Cancel;
use crate::graph::{Graph, Liveness, TensorId, TensorKind};
use crate::trace::BoundMethod;
use model::Setup;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Instant;

/// The time the bound (and plan) get by default (`sim --ilp-time`,
/// `report` and the explorer), so all three print the same bound for a run.
pub const DEFAULT_TIME_LIMIT_S: f64 = 5.0;

/// How big a window may grow and how long the whole solve may take.
#[derive(Debug, Clone, Copy)]
pub struct OptimumLimits {
    /// Variables per window; longer schedules are cut into more windows.
    pub window_variables: usize,
    pub time_limit_s: f64,
    /// Also solve the plan the `planned` policy follows (with windows, a
    /// second pass).
    pub plan: bool,
    /// Add the cover cuts (see [`cover_cuts`]); off only to test that they
    /// cut off no integer solution.
    pub cover_cuts: bool,
}

impl Default for OptimumLimits {
    fn default() -> Self {
        OptimumLimits {
            window_variables: 4_000,
            time_limit_s: 10.0,
            plan: true,
            cover_cuts: true,
        }
    }
}

/// What the solvers found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Optimum {
    /// Proven minimum traffic (bytes) of the relaxed model: the integer
    /// program solved within the time limit, or a plan whose cost meets the
    /// windowed bound.
    pub exact_bytes: Option<u64>,
    /// The linear-programming relaxation's optimum, rounded down: a valid
    /// lower bound (<= exact) that is quick to get even where the integer
    /// program is not. (One window only.)
    pub lp_bound_bytes: Option<u64>,
    /// With several windows: the sum of each window's bound (see the
    /// module doc), a valid lower bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_bound_bytes: Option<u64>,
    /// Windows the schedule was cut into (0 when nothing is under pressure).
    #[serde(default)]
    pub windows: usize,
    /// The relaxed model's traffic of the plan (an upper bound on the
    /// minimum): what the `planned` policy aims at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_bytes: Option<u64>,
    pub variables: usize,
    pub solve_ms: u64,
    /// Why `exact_bytes` is missing, or what stopped early.
    pub note: Option<String>,
    /// Read from the result cache (the same inputs were solved before),
    /// not solved in this run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// The integer program's residency (its optimum, or the best solution
    /// found within the time limit): what the `planned` policy follows.
    #[serde(skip)]
    pub plan: Option<Arc<Residency>>,
}

impl Optimum {
    /// The program's figures for `cores` cores that each run the graph it
    /// solved, each with its own pool: every byte figure times `cores`
    /// (a sum of per-core bounds bounds the sum of per-core traffic). The
    /// plan stays one core's, which each core follows.
    pub fn times(&self, cores: u32) -> Optimum {
        let k = u64::from(cores.max(1));
        let scale = |b: Option<u64>| b.map(|b| b.saturating_mul(k));
        Optimum {
            exact_bytes: scale(self.exact_bytes),
            lp_bound_bytes: scale(self.lp_bound_bytes),
            window_bound_bytes: scale(self.window_bound_bytes),
            plan_bytes: scale(self.plan_bytes),
            ..self.clone()
        }
    }

    pub fn traffic(&self) -> Option<u64> {
        self.exact_bytes
    }

    /// Its figures without the plan: what a view of the bound holds. The
    /// plan is the job's (the planned run and suggestions follow it); a
    /// view that kept it held 34 MB for a 375k-op trace after the job.
    pub fn figures(&self) -> Optimum {
        Optimum {
            plan: None,
            note: self.note.clone(),
            ..*self
        }
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
        if let Some(w) = self.window_bound_bytes {
            if w > best.0 {
                best = (w, BoundMethod::Windowed);
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

    /// The best of two passes over the same program: the higher bound of
    /// each kind, the cheaper plan.
    fn merge(self, other: Optimum, started: Instant) -> Optimum {
        let max = |a: Option<u64>, b: Option<u64>| a.max(b);
        let (plan, plan_bytes, windows) = match (self.plan_bytes, other.plan_bytes) {
            (Some(a), Some(b)) if b < a => (other.plan.clone(), other.plan_bytes, other.windows),
            (None, Some(_)) => (other.plan.clone(), other.plan_bytes, other.windows),
            _ => (self.plan.clone(), self.plan_bytes, self.windows),
        };
        let window_bound_bytes = max(self.window_bound_bytes, other.window_bound_bytes);
        let lp_bound_bytes = max(self.lp_bound_bytes, other.lp_bound_bytes);
        let exact_bytes = self.exact_bytes.or(other.exact_bytes).or_else(|| {
            // A plan meeting either pass's bound is a minimum.
            plan_bytes.filter(|&p| Some(p) <= max(window_bound_bytes, lp_bound_bytes))
        });
        let note = match (self.note, other.note) {
            (Some(a), Some(b)) => Some(format!("{a}; then {b}")),
            (a, b) => a.or(b),
        };
        Optimum {
            exact_bytes,
            lp_bound_bytes,
            window_bound_bytes,
            windows,
            plan_bytes,
            variables: self.variables + other.variables,
            solve_ms: started.elapsed().as_millis() as u64,
            note,
            cached: false,
            plan,
        }
    }

    fn zero() -> Optimum {
        Optimum {
            exact_bytes: Some(0),
            lp_bound_bytes: Some(0),
            window_bound_bytes: None,
            windows: 0,
            plan_bytes: Some(0),
            variables: 0,
            solve_ms: 0,
            note: None,
            cached: false,
            plan: Some(Arc::new(Residency::default())),
        }
    }
}

/// The pool the program packs into: its capacity and allocation granularity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSize {
    pub capacity: u64,
    pub alignment: u64,
}

impl PoolSize {
    pub fn new(capacity: u64, alignment: u64) -> PoolSize {
        PoolSize {
            capacity,
            alignment: alignment.max(1),
        }
    }
    /// Bytes the allocator can hand out (the capacity rounded down).
    pub fn usable(&self) -> u64 {
        self.capacity - self.capacity % self.alignment
    }
    /// Room a tensor of `bytes` takes.
    pub fn room(&self, bytes: u64) -> u64 {
        bytes.max(1).div_ceil(self.alignment) * self.alignment
    }
    /// The pool of a hardware profile.
    pub fn of(hw: &crate::cost::HardwareProfile) -> PoolSize {
        PoolSize::new(hw.memory.capacity.0, hw.memory.alignment)
    }
}

/// Solves for the minimum traffic of `g` (in its op order) in `pool`
/// within the time limit: the bound (exact where it proves) and, when
/// asked, the plan.
pub fn optimal_traffic(g: &Graph, pool: PoolSize, limits: OptimumLimits) -> Optimum {
    optimal_traffic_with(g, pool, limits, &Cancel::never(), &|_, _| {})
        .unwrap_or_else(|_| Optimum::zero())
}

/// [`optimal_traffic`] that stops within one solver slice of `cancel`
/// (`Err(Error::Cancelled)`), calling `progress(done, windows)` as windows
/// finish.
pub fn optimal_traffic_with(
    g: &Graph,
    pool: PoolSize,
    limits: OptimumLimits,
    cancel: &Cancel,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> crate::Result<Optimum> {
    let found = solve_all(g, pool, limits, cancel, progress);
    cancel.check()?;
    Ok(found)
}

fn solve_all(
    g: &Graph,
    pool: PoolSize,
    limits: OptimumLimits,
    cancel: &Cancel,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Optimum {
    let started = Instant::now();
    let live = Liveness::compute(g);
    let pressure = pressured_steps(g, &live, pool);
    if !pressure.iter().any(|&p| p) {
        return Optimum::zero();
    }
    let mut pressured_before = Vec::with_capacity(pressure.len() + 1);
    pressured_before.push(0);
    for &p in &pressure {
        pressured_before.push(pressured_before.last().copied().unwrap_or(0) + usize::from(p));
    }
    let modelled: Vec<TensorId> = g
        .tensors
        .iter()
        .filter(|t| !matches!(t.kind, TensorKind::Weight | TensorKind::Input))
        .filter(|t| live.intervals.get(t.id).is_some())
        .map(|t| t.id)
        .collect();
    let mut modelled = modelled;
    modelled.shrink_to_fit();
    let setup = Setup {
        g,
        live,
        pool,
        pressure,
        pressured_before,
        modelled,
        cover_cuts: limits.cover_cuts,
        cancel,
        progress,
    };
    // Small windows first (quick, and usually proven); then, with the time
    // left, windows FINE_WINDOWS times larger (fewer boundaries, so a
    // tighter bound), keeping the best of both.
    let fine = solve_windows(
        &setup,
        (limits.window_variables / FINE_WINDOWS).max(1),
        limits,
        started,
    );
    let out_of_time = started.elapsed().as_secs_f64() >= budget_s(limits) || cancel.is_cancelled();
    if fine.windows <= 1 || fine.exact_bytes.is_some() || out_of_time {
        return fine;
    }
    let coarse = solve_windows(&setup, limits.window_variables.max(1), limits, started);
    fine.merge(coarse, started)
}

/// How many times smaller the first pass's windows are.
const FINE_WINDOWS: usize = 8;

/// One pass: the schedule cut into windows of about `window_variables`.
fn solve_windows(
    setup: &Setup,
    window_variables: usize,
    limits: OptimumLimits,
    started: Instant,
) -> Optimum {
    let windows = windows::cut_windows(setup, window_variables);
    if windows.len() == 1 {
        return windows::whole(setup, windows[0], limits, started);
    }
    windows::windowed(setup, &windows, limits, started)
}

/// The solver's share of the time limit: the solver checks its clock only
/// now and then, and the LP fallback and bookkeeping follow it, so a
/// little is kept back for them.
pub(super) fn budget_s(limits: OptimumLimits) -> f64 {
    (limits.time_limit_s * 0.97 - 0.05).max(0.0)
}

/// Steps where the modelled tensors' room (graph inputs are read where
/// used, so they do not compete) exceeds the usable capacity.
fn pressured_steps(g: &Graph, live: &Liveness, pool: PoolSize) -> Vec<bool> {
    let mut delta = vec![0i128; g.ops.len() + 1];
    for t in &g.tensors {
        if matches!(t.kind, TensorKind::Weight | TensorKind::Input) {
            continue;
        }
        if let Some(iv) = live.intervals.get(t.id) {
            delta[iv.start] += i128::from(pool.room(t.bytes));
            delta[iv.end + 1] -= i128::from(pool.room(t.bytes));
        }
    }
    let usable = i128::from(pool.usable());
    let mut sum = 0i128;
    delta[..g.ops.len()]
        .iter()
        .map(|d| {
            sum += d;
            sum > usable
        })
        .collect()
}

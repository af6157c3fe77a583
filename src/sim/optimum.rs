//! The minimum spill traffic for a fixed op order, and the plan that
//! reaches it, from a 0-1 integer program (good_lp with the pure-Rust
//! microlp solver). Users see how far each policy is from optimal; the
//! `planned` policy follows the program's solution.
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

use super::plan::Residency;
use crate::graph::{Graph, Liveness, TensorId, TensorKind};
use crate::trace::BoundMethod;
use good_lp::{
    constraint, default_solver, variable, Expression, ProblemVariables, Solution, SolutionStatus,
    SolverModel, Variable, WithInitialSolution, WithTimeLimit,
};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// The integer program's residency (its optimum, or the best solution
    /// found within the time limit): what the `planned` policy follows.
    #[serde(skip)]
    pub plan: Option<Arc<Residency>>,
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

/// Sizes in KiB keep the solver's numbers well scaled.
const SCALE: f64 = 1.0 / 1024.0;

/// How a tensor live before a window's first step enters it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Entry {
    /// For the bound: as suits the window, its write already paid.
    Free,
    /// For the plan: as the previous window left it.
    Fixed { on: bool, written: bool },
}

/// A tensor in one window's program.
struct Member {
    id: TensorId,
    /// Key steps inside the window, ascending.
    keys: Vec<usize>,
    how: Entry,
    /// Live before the window's first step.
    entering: bool,
}

/// A tensor's variables in a window's program: its key steps, residency
/// there, and its write (none when already paid).
type ModelledTensor = (TensorId, Vec<usize>, Vec<Variable>, Option<Variable>);

/// A tensor's residency in a solution: key steps and whether on chip, and
/// whether it was written.
type SolvedTensor = (TensorId, Vec<(usize, bool)>, bool);

impl Member {
    /// Whether the residency `on` (per key) needs a DRAM copy: off at
    /// production, off at a use, or coming back.
    fn needs_write(&self, t: &crate::graph::Tensor, on: &[bool]) -> bool {
        let entry_on = !matches!(self.how, Entry::Fixed { on: false, .. });
        let is_use = |s: usize| t.consumers.binary_search(&s).is_ok();
        (!self.entering && !on[0])
            || (!entry_on && on[0])
            || self
                .keys
                .iter()
                .enumerate()
                .any(|(j, &s)| (is_use(s) && !on[j]) || (j > 0 && on[j] && !on[j - 1]))
    }

    /// Whether the program gives this member a write variable (none when
    /// the write is paid before the window, or free for the bound).
    fn pays_write(&self) -> bool {
        !(matches!(self.how, Entry::Fixed { written: true, .. })
            || self.entering && self.how == Entry::Free)
    }

    /// Traffic (bytes) of residency `on` by the program's accounting.
    fn cost(&self, t: &crate::graph::Tensor, on: &[bool]) -> u64 {
        let entry_on = !matches!(self.how, Entry::Fixed { on: false, .. });
        let is_use = |s: usize| t.consumers.binary_search(&s).is_ok();
        let mut moves = u64::from(!entry_on && on[0]);
        for (j, &s) in self.keys.iter().enumerate() {
            moves += u64::from(is_use(s) && !on[j]);
            moves += u64::from(j > 0 && on[j] && !on[j - 1]);
        }
        moves += u64::from(self.pays_write() && self.needs_write(t, on));
        moves.saturating_mul(t.bytes)
    }
}

/// One window's program.
struct Model {
    vars: ProblemVariables,
    objective: Expression,
    constant: f64,
    constraints: Vec<good_lp::Constraint>,
    start: Vec<(Variable, f64)>,
    n_vars: usize,
    /// Per modelled tensor: its key steps, their residency variables and
    /// its write variable (none when already paid).
    residency: Vec<ModelledTensor>,
}

/// What the program needs to know of the graph, computed once.
struct Setup<'a> {
    g: &'a Graph,
    live: Liveness,
    pool: PoolSize,
    pressure: Vec<bool>,
    /// Pressured steps before each step (prefix counts).
    pressured_before: Vec<usize>,
    /// Tensors the program models (activations and outputs with a live
    /// interval that meets pressure).
    modelled: Vec<TensorId>,
    cover_cuts: bool,
}

impl Setup<'_> {
    fn any_pressure(&self, a: usize, b: usize) -> bool {
        a <= b && self.pressured_before[b + 1] > self.pressured_before[a]
    }

    /// The tensors a window's program models, with their key steps
    /// (production, uses, pressured steps) inside `[a, b]`.
    fn members(&self, (a, b): (usize, usize), entry: &dyn Fn(TensorId) -> Entry) -> Vec<Member> {
        let (g, pressure) = (self.g, &self.pressure);
        let mut members = Vec::new();
        for &id in &self.modelled {
            let t = &g.tensors[id];
            let Some(iv) = self.live.intervals[id] else {
                continue;
            };
            let (lo, hi) = (iv.start.max(a), iv.end.min(b));
            if lo > hi {
                continue;
            }
            let entering = iv.start < a;
            let how = if entering { entry(id) } else { Entry::Free };
            let is_use = |s: usize| t.consumers.binary_search(&s).is_ok();
            let off_on_entry = matches!(how, Entry::Fixed { on: false, .. });
            let used_here = t.consumers.iter().any(|&c| (lo..=hi).contains(&c));
            if !(self.any_pressure(lo, hi) || off_on_entry && used_here) {
                continue;
            }
            let keys: Vec<usize> = (lo..=hi)
                .filter(|&s| s == iv.start || pressure[s] || is_use(s))
                .collect();
            members.push(Member {
                id,
                keys,
                how,
                entering,
            });
        }
        members
    }

    /// A feasible residency to start the solver from, found greedily step by
    /// step: what must be on chip (produced or used here, else on since
    /// before) is kept while it fits; over the capacity, the tensors used
    /// furthest ahead go off first, then operands stream, largest first.
    fn greedy(&self, members: &[Member]) -> Vec<Vec<bool>> {
        let g = self.g;
        let usable = self.pool.usable();
        let mut on: Vec<Vec<bool>> = members.iter().map(|m| vec![true; m.keys.len()]).collect();
        // Per step, (member, key index) of the members keyed there.
        let mut by_step: std::collections::BTreeMap<usize, Vec<(usize, usize)>> =
            Default::default();
        for (k, m) in members.iter().enumerate() {
            for (j, &s) in m.keys.iter().enumerate() {
                by_step.entry(s).or_default().push((k, j));
            }
        }
        let mut state: Vec<bool> = members
            .iter()
            .map(|m| !matches!(m.how, Entry::Fixed { on: false, .. }))
            .collect();
        for (&s, keyed) in &by_step {
            let t_of = |k: usize| &g.tensors[members[k].id];
            let needed = |k: usize| {
                let t = t_of(k);
                t.producer == Some(s) || t.consumers.binary_search(&s).is_ok()
            };
            let mut resident: Vec<usize> = keyed
                .iter()
                .map(|&(k, _)| k)
                .filter(|&k| state[k] || needed(k))
                .collect();
            if self.pressure[s] {
                let mut room: u64 = resident
                    .iter()
                    .map(|&k| self.pool.room(t_of(k).bytes))
                    .sum();
                // Evict order: not needed now first, then by next use
                // (furthest first), then by size (largest first).
                let next_use = |k: usize| {
                    let c = &t_of(k).consumers;
                    c.get(c.partition_point(|&u| u <= s))
                        .copied()
                        .unwrap_or(usize::MAX)
                };
                resident.sort_by_key(|&k| {
                    (
                        needed(k),
                        std::cmp::Reverse(next_use(k)),
                        std::cmp::Reverse(t_of(k).bytes),
                    )
                });
                let mut off = 0;
                while room > usable && off < resident.len() {
                    room -= self.pool.room(t_of(resident[off]).bytes);
                    off += 1;
                }
                resident.drain(..off);
            }
            for &(k, j) in keyed {
                let is_on = resident.contains(&k);
                on[k][j] = is_on;
                state[k] = is_on;
            }
        }
        on
    }

    /// Builds the program of steps `[a, b]`; `entry` says how each tensor
    /// live before `a` comes in. The solver starts from the greedy
    /// residency.
    fn build(&self, w: (usize, usize), entry: &dyn Fn(TensorId) -> Entry, integer: bool) -> Model {
        let members = self.members(w, entry);
        let greedy = self.greedy(&members);
        self.build_from(w, &members, greedy, integer)
    }

    /// The program of `members` over steps `[a, b]`, starting from `start`.
    fn build_from(
        &self,
        (a, b): (usize, usize),
        members: &[Member],
        start: Vec<Vec<bool>>,
        integer: bool,
    ) -> Model {
        let (g, pool, pressure) = (self.g, self.pool, &self.pressure);
        let new_var = |vars: &mut ProblemVariables| {
            if integer {
                vars.add(variable().binary())
            } else {
                vars.add(variable().min(0.0).max(1.0))
            }
        };
        let mut m = Model {
            vars: ProblemVariables::new(),
            objective: Expression::from(0.0),
            constant: 0.0,
            constraints: Vec::new(),
            start: Vec::new(),
            n_vars: 0,
            residency: Vec::new(),
        };
        // Per pressured step: each member's room and residency variable.
        let mut at_step: Vec<Vec<(f64, Variable)>> = vec![Vec::new(); b + 1 - a];
        for (mem, start_on) in members.iter().zip(start) {
            let t = &g.tensors[mem.id];
            let is_use = |s: usize| t.consumers.binary_search(&s).is_ok();
            let bytes = t.bytes as f64 * SCALE;
            let room = pool.room(t.bytes) as f64 * SCALE;
            let keys = &mem.keys;
            let r: Vec<Variable> = keys.iter().map(|_| new_var(&mut m.vars)).collect();
            m.n_vars += keys.len() * 2;
            let val = |j: usize| if start_on[j] { 1.0 } else { 0.0 };
            m.start
                .extend(r.iter().enumerate().map(|(j, &v)| (v, val(j))));
            let entry_on = !matches!(mem.how, Entry::Fixed { on: false, .. });
            let needs_write = mem.needs_write(t, &start_on);
            let w = match mem.pays_write() {
                false => None,
                true => {
                    let w = new_var(&mut m.vars);
                    m.n_vars += 1;
                    m.start.push((w, if needs_write { 1.0 } else { 0.0 }));
                    m.objective += bytes * w;
                    Some(w)
                }
            };
            if let (false, Some(w)) = (mem.entering, w) {
                // Streamed out at production.
                m.constraints.push(constraint!(w + r[0] >= 1));
            }
            if !entry_on {
                // Coming back in this window is a reload.
                let l = new_var(&mut m.vars);
                m.start.push((l, val(0)));
                m.objective += bytes * l;
                m.constraints.push(constraint!(l - r[0] >= 0));
                if let Some(w) = w {
                    m.constraints.push(constraint!(w - l >= 0));
                }
            }
            for (j, &s) in keys.iter().enumerate() {
                if pressure[s] {
                    at_step[s - a].push((room, r[j]));
                }
                if is_use(s) {
                    // Streamed in if not resident at a use.
                    m.constant += bytes;
                    m.objective -= bytes * r[j];
                    if let Some(w) = w {
                        m.constraints.push(constraint!(w + r[j] >= 1));
                    }
                }
                if j > 0 {
                    let l = new_var(&mut m.vars);
                    let back = start_on[j] && !start_on[j - 1];
                    m.start.push((l, if back { 1.0 } else { 0.0 }));
                    m.objective += bytes * l;
                    m.constraints.push(constraint!(l - r[j] + r[j - 1] >= 0));
                    if let Some(w) = w {
                        m.constraints.push(constraint!(w - l >= 0));
                    }
                }
            }
            m.residency.push((mem.id, keys.clone(), r, w));
        }
        let cap = pool.usable() as f64 * SCALE;
        for (k, mut terms) in at_step.into_iter().enumerate() {
            if !pressure[a + k] {
                continue;
            }
            // Largest first, for the cover cuts.
            terms.sort_by(|x, y| y.0.total_cmp(&x.0));
            let total: f64 = terms.iter().map(|x| x.0).sum();
            let on: Expression = terms.iter().map(|&(room, r)| room * r).sum();
            m.constraints.push(constraint!(on <= cap));
            // Knapsack cover: at least `excess` of room is off, and no
            // tensor's share counts for more than the excess itself. Valid
            // for 0-1 residency; it cuts off the relaxation's habit of
            // keeping every tensor a little off chip.
            let excess = total - cap;
            if !self.cover_cuts {
                continue;
            }
            if excess > 0.0 {
                let capped: Expression = terms.iter().map(|&(room, r)| room.min(excess) * r).sum();
                let all: f64 = terms.iter().map(|x| x.0.min(excess)).sum();
                m.constraints.push(constraint!(capped <= all - excess));
            }
            for (k, need) in cover_cuts(&terms, pool.usable() as f64 * SCALE) {
                // Of the k largest tensors here, at most k - need fit.
                let on: Expression = terms[..k].iter().map(|&(_, r)| r).sum();
                m.constraints.push(constraint!(on <= (k - need) as f64));
            }
        }
        m
    }

    /// Per-op working-set bound over steps `[a, b]` (what stands in for a
    /// window the time ran out on: valid whatever enters it).
    fn working_set_bound(&self, (a, b): (usize, usize), ws: &[u64]) -> u64 {
        ws[a..=b]
            .iter()
            .map(|&w| w.saturating_sub(self.pool.capacity))
            .fold(0u64, u64::saturating_add)
    }
}

/// Cover cuts of one step's capacity constraint, `terms` sorted by room,
/// largest first: for each count `need` of tensors that must be off, the
/// fewest largest tensors `k` of which at most `k - need` fit together
/// (the smallest of them first). Valid for any 0-1 residency; they stop the
/// relaxation from keeping two tensors that cannot share the chip each
/// mostly on.
fn cover_cuts(terms: &[(f64, Variable)], usable: f64) -> Vec<(usize, usize)> {
    let mut cuts = Vec::new();
    let mut last_need = 0;
    for k in 1..=terms.len() {
        // How many of the k largest fit: take their smallest first.
        let mut fit = 0;
        let mut used = 0.0;
        for &(room, _) in terms[..k].iter().rev() {
            if used + room <= usable * (1.0 + 1e-12) {
                used += room;
                fit += 1;
            } else {
                break;
            }
        }
        let need = k - fit;
        if need > last_need {
            cuts.push((k, need));
            last_need = need;
        }
        if cuts.len() >= MAX_COVER_CUTS {
            break;
        }
    }
    cuts
}

/// Cover cuts per step at most (each is one constraint).
const MAX_COVER_CUTS: usize = 4;

/// What solving one window's program gave.
struct Solved {
    /// Traffic of the solution found (bytes), and whether it is proven.
    value: f64,
    proven: bool,
    /// Per modelled tensor: key steps with residency, and whether written.
    residency: Vec<SolvedTensor>,
}

/// Solves `m` as an integer program within `seconds`.
fn solve_integer(m: Model, seconds: f64) -> Option<Solved> {
    let Model {
        vars,
        objective,
        constant,
        constraints,
        start,
        residency,
        ..
    } = m;
    let mut model = vars
        .minimise(objective.clone())
        .using(default_solver)
        .with_time_limit(seconds.max(0.01))
        .with_initial_solution(start);
    for c in constraints {
        model = model.with(c);
    }
    let sol = model.solve().ok()?;
    let proven = matches!(sol.status(), SolutionStatus::Optimal);
    let value = (sol.eval(&objective) + constant) / SCALE;
    let residency = residency
        .into_iter()
        .map(|(t, keys, r, w)| {
            let on = keys
                .iter()
                .zip(&r)
                .map(|(&s, &v)| (s, sol.value(v) > 0.5))
                .collect();
            (t, on, w.is_some_and(|w| sol.value(w) > 0.5))
        })
        .collect();
    Some(Solved {
        value,
        proven,
        residency,
    })
}

/// The LP relaxation's optimum of `m` (bytes).
fn solve_relaxed(m: Model) -> Option<f64> {
    let mut model = m.vars.minimise(m.objective.clone()).using(default_solver);
    for c in m.constraints {
        model = model.with(c);
    }
    let sol = model.solve().ok()?;
    Some((sol.eval(&m.objective) + m.constant) / SCALE)
}

/// Rounds a solver's value down to whole bytes, with room for
/// floating-point error, so a bound stays a bound.
fn floor_bytes(v: f64) -> u64 {
    (v - v.abs() * 1e-9).floor().max(0.0) as u64
}

/// Cuts steps `0..n` into windows of about `max_vars` variables each, cut
/// after the step (in the second half of the window) where the fewest
/// modelled bytes stay live across; windows without pressure join their
/// neighbour, so the windows cover every step.
fn cut_windows(setup: &Setup, max_vars: usize) -> Vec<(usize, usize)> {
    let (g, live) = (setup.g, &setup.live);
    let n = g.ops.len();
    let mut alive = vec![0i64; n + 1];
    let mut across = vec![0i128; n + 1];
    let mut extra = vec![0u64; n];
    for &id in &setup.modelled {
        let Some(iv) = live.intervals[id] else {
            continue;
        };
        alive[iv.start] += 1;
        alive[iv.end + 1] -= 1;
        across[iv.start] += i128::from(g.tensors[id].bytes);
        across[iv.end] -= i128::from(g.tensors[id].bytes);
        extra[iv.start] += 3;
        for &c in &g.tensors[id].consumers {
            if c < n {
                extra[c] += 2;
            }
        }
    }
    // Variables each step adds, and bytes live across the cut after it.
    let mut cost = vec![0u64; n];
    let mut cross = vec![0i128; n];
    let (mut a_run, mut c_run) = (0i64, 0i128);
    for s in 0..n {
        a_run += alive[s];
        c_run += across[s];
        cost[s] = extra[s]
            + if setup.pressure[s] {
                2 * a_run.max(0) as u64
            } else {
                0
            };
        cross[s] = c_run;
    }
    let mut windows = Vec::new();
    let (mut a, mut acc) = (0usize, 0u64);
    for s in 0..n {
        acc += cost[s];
        if acc > max_vars as u64 && s > a {
            let lo = a + (s - a) / 2;
            let c = (lo..s)
                .min_by_key(|&c| (cross[c], std::cmp::Reverse(c)))
                .unwrap_or(lo);
            windows.push((a, c));
            a = c + 1;
            acc = cost[a..=s].iter().sum();
        }
    }
    if n > 0 {
        windows.push((a, n - 1));
    }
    // A window without pressure joins its neighbour: the plan must still
    // account there for tensors it left off chip that are used there.
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(windows.len());
    let mut pending: Option<usize> = None;
    for (a, b) in windows {
        if setup.any_pressure(a, b) {
            merged.push((pending.take().unwrap_or(a), b));
        } else if let Some(last) = merged.last_mut() {
            last.1 = b;
        } else {
            pending.get_or_insert(a);
        }
    }
    merged
}

/// Solves for the minimum traffic of `g` (in its op order) in `pool`
/// within the time limit: the bound (exact where it proves) and, when
/// asked, the plan.
pub fn optimal_traffic(g: &Graph, pool: PoolSize, limits: OptimumLimits) -> Optimum {
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
        .filter(|t| live.intervals[t.id].is_some())
        .map(|t| t.id)
        .collect();
    let setup = Setup {
        g,
        live,
        pool,
        pressure,
        pressured_before,
        modelled,
        cover_cuts: limits.cover_cuts,
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
    let out_of_time = started.elapsed().as_secs_f64() >= budget_s(limits);
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
    let windows = cut_windows(setup, window_variables);
    if windows.len() == 1 {
        return whole(setup, windows[0], limits, started);
    }
    windowed(setup, &windows, limits, started)
}

/// The solver's share of the time limit: the solver checks its clock only
/// now and then, and the LP fallback and bookkeeping follow it, so a
/// little is kept back for them.
fn budget_s(limits: OptimumLimits) -> f64 {
    (limits.time_limit_s * 0.97 - 0.05).max(0.0)
}

/// One window holds every pressured step: the LP bound, then the integer
/// program, whose solution is the plan.
fn whole(setup: &Setup, w: (usize, usize), limits: OptimumLimits, started: Instant) -> Optimum {
    let free = |_| Entry::Free;
    let lp = solve_relaxed(setup.build(w, &free, false)).map(floor_bytes);
    let m = setup.build(w, &free, true);
    let variables = m.n_vars;
    let left = budget_s(limits) - started.elapsed().as_secs_f64();
    let solved = solve_integer(m, left);
    let exact = solved
        .as_ref()
        .filter(|s| s.proven)
        .map(|s| s.value.round().max(0.0) as u64);
    let note = match (&solved, exact) {
        (_, Some(_)) => None,
        (Some(_), None) => Some(format!(
            "no proven optimum within {} s (LP bound shown)",
            limits.time_limit_s
        )),
        (None, _) => Some("the solver found no solution in time".to_string()),
    };
    let mut keys = vec![None; setup.g.tensors.len()];
    if let Some(s) = &solved {
        for (t, on, _) in &s.residency {
            keys[*t] = Some(on.clone());
        }
    }
    Optimum {
        exact_bytes: exact,
        lp_bound_bytes: lp.map(|b| exact.map_or(b, |e| b.min(e))),
        window_bound_bytes: None,
        windows: 1,
        plan_bytes: solved.as_ref().map(|s| s.value.round().max(0.0) as u64),
        variables,
        solve_ms: started.elapsed().as_millis() as u64,
        note,
        plan: solved.map(|_| Arc::new(Residency { keys })),
    }
}

/// Several windows: each window's bound (entry free), and the plan window
/// after window (entry as the plan left it), within one time budget.
fn windowed(
    setup: &Setup,
    windows: &[(usize, usize)],
    limits: OptimumLimits,
    started: Instant,
) -> Optimum {
    let g = setup.g;
    let deadline = started + Duration::from_secs_f64(budget_s(limits));
    let ws = crate::graph::bounds::working_sets(g);
    let mut state: Vec<Entry> = vec![
        Entry::Fixed {
            on: true,
            written: false
        };
        g.tensors.len()
    ];
    let mut keys: Vec<Option<Vec<(usize, bool)>>> = vec![None; g.tensors.len()];
    let (mut bound, mut plan_cost) = (0u64, 0f64);
    let (mut proven, mut relaxed, mut skipped, mut greedy_only) = (0usize, 0usize, 0usize, 0usize);
    let mut variables = 0usize;
    let passes = if limits.plan { 2.0 } else { 1.0 };
    let share = |k: usize| {
        let left = deadline
            .saturating_duration_since(Instant::now())
            .as_secs_f64();
        left / (windows.len() - k) as f64 / passes
    };
    let out_of_time = || Instant::now() >= deadline;
    for (k, &w) in windows.iter().enumerate() {
        // Whether anything is live into the window (its entry then
        // matters, and the plan needs its own solve).
        let entering = setup
            .modelled
            .iter()
            .any(|&t| setup.live.intervals[t].is_some_and(|iv| iv.start < w.0 && w.0 <= iv.end));
        // The bound: entry free; the integer program, else its LP
        // relaxation, else (out of time) the per-op bound.
        let mut solved = None;
        let window_bound = if out_of_time() {
            skipped += 1;
            setup.working_set_bound(w, &ws)
        } else {
            let m = setup.build(w, &|_| Entry::Free, true);
            variables += m.n_vars;
            solved = solve_integer(m, share(k));
            match &solved {
                // A proven minimum is a sum of whole bytes.
                Some(s) if s.proven => {
                    proven += 1;
                    s.value.round().max(0.0) as u64
                }
                _ => match (!out_of_time())
                    .then(|| solve_relaxed(setup.build(w, &|_| Entry::Free, false)))
                    .flatten()
                {
                    Some(v) => {
                        relaxed += 1;
                        floor_bytes(v)
                    }
                    None => {
                        skipped += 1;
                        setup.working_set_bound(w, &ws)
                    }
                },
            }
        };
        bound = bound.saturating_add(window_bound);
        if !limits.plan {
            continue;
        }
        // The plan: entry as the plan left it. The bound's solution is a
        // feasible residency for it too; where its traffic under the real
        // entry matches what the bound paid, it is the plan. Otherwise the
        // window is solved again with its entry fixed, time permitting;
        // out of time, the better of that solution and the greedy one.
        let members = setup.members(w, &|t| state[t]);
        let priced = |on: &[Vec<bool>]| -> (u64, Vec<SolvedTensor>) {
            let mut cost = 0u64;
            let res = members
                .iter()
                .zip(on)
                .map(|(m, on)| {
                    let t = &g.tensors[m.id];
                    cost = cost.saturating_add(m.cost(t, on));
                    let written = m.pays_write() && m.needs_write(t, on);
                    (
                        m.id,
                        m.keys.iter().copied().zip(on.iter().copied()).collect(),
                        written,
                    )
                })
                .collect();
            (cost, res)
        };
        let reused = solved.as_ref().filter(|s| {
            s.residency.len() == members.len()
                && s.residency.iter().zip(&members).all(|(r, m)| r.0 == m.id)
        });
        let reused = reused.map(|s| {
            let on: Vec<Vec<bool>> = s
                .residency
                .iter()
                .map(|r| r.1.iter().map(|x| x.1).collect())
                .collect();
            (priced(&on), s.value)
        });
        let (cost, residency) = match reused {
            Some((p, paid)) if !entering || p.0 as f64 <= paid + 0.5 => p,
            other => {
                let solved_again = (!out_of_time())
                    .then(|| setup.build(w, &|t| state[t], true))
                    .and_then(|m| solve_integer(m, share(k).max(0.01)));
                match solved_again {
                    Some(p) => (p.value.round().max(0.0) as u64, p.residency),
                    None => {
                        greedy_only += 1;
                        let g = priced(&setup.greedy(&members));
                        match other {
                            Some((p, _)) if p.0 < g.0 => p,
                            _ => g,
                        }
                    }
                }
            }
        };
        plan_cost += cost as f64;
        for (t, on, written) in residency {
            let last = on.last().is_none_or(|x| x.1);
            let was_written = matches!(state[t], Entry::Fixed { written: true, .. });
            state[t] = Entry::Fixed {
                on: last,
                written: written || was_written,
            };
            keys[t].get_or_insert_with(Vec::new).extend(on);
        }
    }
    let plan_bytes = limits.plan.then(|| plan_cost.round().max(0.0) as u64);
    // A plan whose cost meets the bound is a minimum.
    let exact = plan_bytes.filter(|&p| p <= bound);
    let mut note = format!(
        "{} windows: {proven} proven, {relaxed} by LP relaxation",
        windows.len()
    );
    if skipped > 0 {
        note += &format!(
            ", {skipped} by the per-op bound (out of the {} s budget)",
            limits.time_limit_s
        );
    }
    if greedy_only > 0 {
        note += &format!("; {greedy_only} windows planned greedily (out of time)");
    }
    Optimum {
        exact_bytes: exact,
        lp_bound_bytes: None,
        window_bound_bytes: Some(bound),
        windows: windows.len(),
        plan_bytes,
        variables,
        solve_ms: started.elapsed().as_millis() as u64,
        note: Some(note),
        plan: limits.plan.then(|| Arc::new(Residency { keys })),
    }
}

/// Steps where the modelled tensors' room (graph inputs are read where
/// used, so they do not compete) exceeds the usable capacity.
fn pressured_steps(g: &Graph, live: &Liveness, pool: PoolSize) -> Vec<bool> {
    let mut delta = vec![0i128; g.ops.len() + 1];
    for t in &g.tensors {
        if matches!(t.kind, TensorKind::Weight | TensorKind::Input) {
            continue;
        }
        if let Some(iv) = live.intervals[t.id] {
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

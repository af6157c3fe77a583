//! The schedule in windows: where to cut it, the one-window case, and the
//! pass over several windows that sums their bounds and chains their plan.

use super::model::{Entry, Setup, SolvedTensor};
use super::solve::{floor_bytes, solve_integer, solve_relaxed, Solved};
use super::{budget_s, Optimum, OptimumLimits};
use crate::sim::plan::ResidencyBuilder;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Cuts steps `0..n` into windows of about `max_vars` variables each, cut
/// after the step (in the second half of the window) where the fewest
/// modelled bytes stay live across; windows without pressure join their
/// neighbour, so the windows cover every step.
pub(super) fn cut_windows(setup: &Setup, max_vars: usize) -> Vec<(usize, usize)> {
    let (g, live) = (setup.g, &setup.live);
    let n = g.ops.len();
    let mut alive = vec![0i64; n + 1];
    let mut across = vec![0i128; n + 1];
    let mut extra = vec![0u64; n];
    for &id in &setup.modelled {
        let Some(iv) = live.intervals.get(id) else {
            continue;
        };
        alive[iv.start] += 1;
        alive[iv.end + 1] -= 1;
        across[iv.start] += i128::from(g.tensors.bytes(id));
        across[iv.end] -= i128::from(g.tensors.bytes(id));
        extra[iv.start] += 3;
        for &c in g.tensors.consumers(id) {
            if c < n {
                extra[c] += 2;
            }
        }
    }
    // Variables each step adds, and bytes live across the cut after it,
    // made in place of the per-step changes (a million-op schedule held
    // 21 MB of arrays here, 12 MB now).
    let (mut cost, mut cross) = (extra, across);
    let (mut a_run, mut c_run) = (0i64, 0i128);
    for s in 0..n {
        a_run += alive[s];
        c_run += cross[s];
        cost[s] += if setup.pressure[s] {
            2 * a_run.max(0) as u64
        } else {
            0
        };
        cross[s] = c_run;
    }
    drop(alive);
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

/// One window holds every pressured step: the LP bound, then the integer
/// program, whose solution is the plan.
pub(super) fn whole(
    setup: &Setup,
    w: (usize, usize),
    limits: OptimumLimits,
    started: Instant,
) -> Optimum {
    // One set of members and one greedy start for both programs.
    let members = setup.members(w, &|_| Entry::Free);
    let start = setup.greedy(&members);
    let lp = solve_relaxed(
        setup.build_from(w, &members, start.clone(), false),
        limits.time_limit_s,
        setup.cancel,
    )
    .map(floor_bytes);
    let m = setup.build_from(w, &members, start, true);
    let variables = m.n_vars;
    let left = budget_s(limits) - started.elapsed().as_secs_f64();
    let solved = solve_integer(m, left, setup.cancel);
    (setup.progress)(1, 1);
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
    let mut keys = ResidencyBuilder::new(setup.g.tensors.len());
    if let Some(s) = &solved {
        for (t, on, _) in &s.residency {
            keys.extend(*t, on.iter().copied());
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
        cached: false,
        plan: solved.map(|_| Arc::new(keys.finish())),
    }
}

/// Several windows: each window's bound (entry free), and the plan window
/// after window (entry as the plan left it), within one time budget.
pub(super) fn windowed(
    setup: &Setup,
    windows: &[(usize, usize)],
    limits: OptimumLimits,
    started: Instant,
) -> Optimum {
    let mut pass = Pass::new(setup, windows.len(), limits, started);
    for (k, &w) in windows.iter().enumerate() {
        let solved = pass.bound(k, w);
        if limits.plan {
            pass.plan(k, w, solved);
        }
        (setup.progress)(k + 1, windows.len());
    }
    pass.finish(windows.len(), started)
}

/// The state of a pass over the windows.
struct Pass<'a, 's> {
    setup: &'a Setup<'s>,
    limits: OptimumLimits,
    windows: usize,
    deadline: Instant,
    /// Per-op working sets, for the per-op bound of a window out of time.
    working_sets: Vec<u64>,
    /// How each tensor leaves the plan so far (the next window's entry).
    state: Vec<Entry>,
    keys: ResidencyBuilder,
    bound: u64,
    plan_cost: u64,
    proven: usize,
    relaxed: usize,
    skipped: usize,
    greedy_only: usize,
    variables: usize,
}

impl<'a, 's> Pass<'a, 's> {
    fn new(setup: &'a Setup<'s>, windows: usize, limits: OptimumLimits, started: Instant) -> Self {
        let n = setup.g.tensors.len();
        Pass {
            setup,
            limits,
            windows,
            deadline: started + Duration::from_secs_f64(budget_s(limits)),
            working_sets: crate::graph::bounds::working_sets(setup.g),
            state: vec![
                Entry::Fixed {
                    on: true,
                    written: false
                };
                n
            ],
            keys: ResidencyBuilder::new(n),
            bound: 0,
            plan_cost: 0,
            proven: 0,
            relaxed: 0,
            skipped: 0,
            greedy_only: 0,
            variables: 0,
        }
    }

    /// Out of its budget, or cancelled (the rest of the pass then only
    /// adds the per-op bounds, and the caller drops the result).
    fn out_of_time(&self) -> bool {
        Instant::now() >= self.deadline || self.setup.cancel.is_cancelled()
    }

    /// Window `k`'s share of the time left (each window gets one solve for
    /// the bound and, with a plan, one for the plan).
    fn share(&self, k: usize) -> f64 {
        let left = self
            .deadline
            .saturating_duration_since(Instant::now())
            .as_secs_f64();
        let passes = if self.limits.plan { 2.0 } else { 1.0 };
        left / (self.windows - k) as f64 / passes
    }

    /// Adds window `w`'s bound, entry free: the integer program, else its
    /// LP relaxation, else (out of time) the per-op bound. Returns the
    /// integer program's solution, if any.
    fn bound(&mut self, k: usize, w: (usize, usize)) -> Option<Solved> {
        let setup = self.setup;
        if self.out_of_time() {
            self.skipped += 1;
            self.bound += setup.working_set_bound(w, &self.working_sets);
            return None;
        }
        let m = setup.build(w, &|_| Entry::Free, true);
        self.variables += m.n_vars;
        let solved = solve_integer(m, self.share(k), setup.cancel);
        let value = match &solved {
            // A proven minimum is a sum of whole bytes.
            Some(s) if s.proven => {
                self.proven += 1;
                s.value.round().max(0.0) as u64
            }
            _ => match (!self.out_of_time())
                .then(|| {
                    solve_relaxed(
                        setup.build(w, &|_| Entry::Free, false),
                        self.limits.time_limit_s,
                        setup.cancel,
                    )
                })
                .flatten()
            {
                Some(v) => {
                    self.relaxed += 1;
                    floor_bytes(v)
                }
                None => {
                    self.skipped += 1;
                    setup.working_set_bound(w, &self.working_sets)
                }
            },
        };
        self.bound = self.bound.saturating_add(value);
        solved
    }

    /// Plans window `w` with its entry as the plan left it. The bound's
    /// solution is a feasible residency for it too; where its traffic under
    /// the real entry matches what the bound paid, it is the plan.
    /// Otherwise the window is solved again with its entry fixed, time
    /// permitting; out of time, the better of that solution and the greedy
    /// one.
    fn plan(&mut self, k: usize, w: (usize, usize), solved: Option<Solved>) {
        let setup = self.setup;
        let state = &self.state;
        let members = setup.members(w, &|t| state[t]);
        // Whether a member is live into the window (its entry then matters).
        let entering = members.iter().any(|m| m.entering);
        let reused = solved.filter(|s| {
            s.residency.len() == members.len()
                && s.residency.iter().zip(&members).all(|(r, m)| r.0 == m.id)
        });
        let reused = reused.map(|s| {
            let on: Vec<Vec<bool>> = s
                .residency
                .iter()
                .map(|r| r.1.iter().map(|x| x.1).collect())
                .collect();
            (self.priced(&members, &on), s.value)
        });
        let (cost, residency) = match reused {
            Some((p, paid)) if !entering || p.0 as f64 <= paid + 0.5 => p,
            other => {
                let solved_again = (!self.out_of_time())
                    .then(|| setup.build_from(w, &members, setup.greedy(&members), true))
                    .and_then(|m| solve_integer(m, self.share(k).max(0.01), setup.cancel));
                match solved_again {
                    Some(p) => (p.value.round().max(0.0) as u64, p.residency),
                    None => {
                        self.greedy_only += 1;
                        let greedy = self.priced(&members, &setup.greedy(&members));
                        match other {
                            Some((p, _)) if p.0 < greedy.0 => p,
                            _ => greedy,
                        }
                    }
                }
            }
        };
        self.plan_cost = self.plan_cost.saturating_add(cost);
        for (t, on, written) in residency {
            let last = on.last().is_none_or(|x| x.1);
            let was_written = matches!(self.state[t], Entry::Fixed { written: true, .. });
            self.state[t] = Entry::Fixed {
                on: last,
                written: written || was_written,
            };
            self.keys.extend(t, on);
        }
    }

    /// The traffic of residency `on` of `members` by the program's
    /// accounting (entry as the plan left it), and the residency as a
    /// solution.
    fn priced(
        &self,
        members: &[super::model::Member],
        on: &[Vec<bool>],
    ) -> (u64, Vec<SolvedTensor>) {
        let g = self.setup.g;
        let mut cost = 0u64;
        let res = members
            .iter()
            .zip(on)
            .map(|(m, on)| {
                let t = &g.tensors.at(m.id);
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
    }

    /// The bound, the plan and what the pass could not finish.
    fn finish(self, windows: usize, started: Instant) -> Optimum {
        let plan_bytes = self.limits.plan.then_some(self.plan_cost);
        // A plan whose cost meets the bound is a minimum.
        let exact = plan_bytes.filter(|&p| p <= self.bound);
        let mut note = format!(
            "{windows} windows: {} proven, {} by LP relaxation",
            self.proven, self.relaxed
        );
        if self.skipped > 0 {
            note += &format!(
                ", {} by the per-op bound (out of the {} s budget)",
                self.skipped, self.limits.time_limit_s
            );
        }
        if self.greedy_only > 0 {
            note += &format!(
                "; {} windows planned greedily (out of time)",
                self.greedy_only
            );
        }
        Optimum {
            exact_bytes: exact,
            lp_bound_bytes: None,
            window_bound_bytes: Some(self.bound),
            windows,
            plan_bytes,
            variables: self.variables,
            solve_ms: started.elapsed().as_millis() as u64,
            note: Some(note),
            cached: false,
            plan: self.limits.plan.then(|| Arc::new(self.keys.finish())),
        }
    }
}

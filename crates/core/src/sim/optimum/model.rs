//! One window's 0-1 program: which tensors it models (with their key
//! steps), a greedy feasible start, the constraints with the cover cuts,
//! and the per-op bound that stands in for a window out of time.

use super::PoolSize;
use crate::graph::{Graph, Liveness, TensorId};

/// A variable of one window's program: its index (microlp numbers its
/// variables in creation order; [`super::solve`] creates them in this one).
pub(super) type Variable = usize;

/// One row: `sum(coefficient * variable) >= rhs` (or `<=`).
pub(super) struct Row {
    pub(super) terms: Vec<(Variable, f64)>,
    pub(super) at_least: bool,
    pub(super) rhs: f64,
}

/// Sizes in KiB keep the solver's numbers well scaled.
pub(super) const SCALE: f64 = 1.0 / 1024.0;

/// How a tensor live before a window's first step enters it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Entry {
    /// For the bound: as suits the window, its write already paid.
    Free,
    /// For the plan: as the previous window left it.
    Fixed { on: bool, written: bool },
}

/// A tensor in one window's program.
pub(super) struct Member {
    pub(super) id: TensorId,
    /// Key steps inside the window, ascending.
    pub(super) keys: Vec<usize>,
    pub(super) how: Entry,
    /// Live before the window's first step.
    pub(super) entering: bool,
}

/// A tensor's variables in a window's program: its key steps, residency
/// there, and its write (none when already paid).
pub(super) type ModelledTensor = (TensorId, Vec<usize>, Vec<Variable>, Option<Variable>);

/// A tensor's residency in a solution: key steps and whether on chip, and
/// whether it was written.
pub(super) type SolvedTensor = (TensorId, Vec<(usize, bool)>, bool);

impl Member {
    /// Whether the residency `on` (per key) needs a DRAM copy: off at
    /// production, off at a use, or coming back.
    pub(super) fn needs_write(&self, t: &crate::graph::TensorRef<'_>, on: &[bool]) -> bool {
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
    pub(super) fn pays_write(&self) -> bool {
        !(matches!(self.how, Entry::Fixed { written: true, .. })
            || self.entering && self.how == Entry::Free)
    }

    /// Traffic (bytes) of residency `on` by the program's accounting.
    pub(super) fn cost(&self, t: &crate::graph::TensorRef<'_>, on: &[bool]) -> u64 {
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

/// One window's program: 0-1 variables (or, relaxed, in [0, 1]), a linear
/// objective to minimise and rows.
pub(super) struct Model {
    /// Objective coefficient per variable (their count is the program's).
    pub(super) objective: Vec<f64>,
    pub(super) constant: f64,
    pub(super) rows: Vec<Row>,
    /// Binary variables (the integer program) or relaxed ones.
    pub(super) integer: bool,
    pub(super) start: Vec<(Variable, f64)>,
    pub(super) n_vars: usize,
    /// Per modelled tensor: its key steps, their residency variables and
    /// its write variable (none when already paid).
    pub(super) residency: Vec<ModelledTensor>,
}

impl Model {
    fn var(&mut self) -> Variable {
        self.objective.push(0.0);
        self.objective.len() - 1
    }
    fn at_least(&mut self, terms: Vec<(Variable, f64)>, rhs: f64) {
        self.rows.push(Row {
            terms,
            at_least: true,
            rhs,
        });
    }
    fn at_most(&mut self, terms: Vec<(Variable, f64)>, rhs: f64) {
        self.rows.push(Row {
            terms,
            at_least: false,
            rhs,
        });
    }
    /// The objective's value at `x` (by variable), constant included.
    pub(super) fn value(&self, x: &[f64]) -> f64 {
        self.objective
            .iter()
            .zip(x)
            .map(|(c, v)| c * v)
            .sum::<f64>()
            + self.constant
    }
}

/// What the program needs to know of the graph, computed once.
pub(super) struct Setup<'a> {
    pub(super) g: &'a Graph,
    pub(super) live: Liveness,
    pub(super) pool: PoolSize,
    pub(super) pressure: Vec<bool>,
    /// Pressured steps before each step (prefix counts).
    pub(super) pressured_before: Vec<usize>,
    /// Tensors the program models (activations and outputs with a live
    /// interval that meets pressure).
    pub(super) modelled: Vec<TensorId>,
    pub(super) cover_cuts: bool,
    /// Stops the solve when its result is no longer wanted.
    pub(super) cancel: &'a crate::cancel::Cancel,
    /// Windows done of windows, as each finishes.
    pub(super) progress: &'a (dyn Fn(usize, usize) + Sync),
}

impl Setup<'_> {
    pub(super) fn any_pressure(&self, a: usize, b: usize) -> bool {
        a <= b && self.pressured_before[b + 1] > self.pressured_before[a]
    }

    /// The tensors a window's program models, with their key steps
    /// (production, uses, pressured steps) inside `[a, b]`.
    pub(super) fn members(
        &self,
        (a, b): (usize, usize),
        entry: &dyn Fn(TensorId) -> Entry,
    ) -> Vec<Member> {
        let (g, pressure) = (self.g, &self.pressure);
        let mut members = Vec::new();
        // Runs once per window over every modelled tensor: read only the
        // consumer list (a whole row per tensor made this 3x slower).
        for &id in &self.modelled {
            let Some(iv) = self.live.intervals.get(id) else {
                continue;
            };
            let (lo, hi) = (iv.start.max(a), iv.end.min(b));
            if lo > hi {
                continue;
            }
            let entering = iv.start < a;
            let how = if entering { entry(id) } else { Entry::Free };
            let consumers = g.tensors.consumers(id);
            let is_use = |s: usize| consumers.binary_search(&s).is_ok();
            let off_on_entry = matches!(how, Entry::Fixed { on: false, .. });
            let used_here = consumers.iter().any(|&c| (lo..=hi).contains(&c));
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
    pub(super) fn greedy(&self, members: &[Member]) -> Vec<Vec<bool>> {
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
            // Field by field: these run inside sorts (a whole row per
            // call costs a bounds check per column).
            let id_of = |k: usize| members[k].id;
            let needed = |k: usize| {
                let t = id_of(k);
                g.tensors.producer(t) == Some(s) || g.tensors.consumers(t).binary_search(&s).is_ok()
            };
            let mut resident: Vec<usize> = keyed
                .iter()
                .map(|&(k, _)| k)
                .filter(|&k| state[k] || needed(k))
                .collect();
            if self.pressure[s] {
                let mut room: u64 = resident
                    .iter()
                    .map(|&k| self.pool.room(g.tensors.bytes(id_of(k))))
                    .sum();
                // Evict order: not needed now first, then by next use
                // (furthest first), then by size (largest first).
                let next_use = |k: usize| {
                    let c = g.tensors.consumers(id_of(k));
                    c.get(c.partition_point(|&u| u <= s))
                        .copied()
                        .unwrap_or(usize::MAX)
                };
                resident.sort_by_key(|&k| {
                    (
                        needed(k),
                        std::cmp::Reverse(next_use(k)),
                        std::cmp::Reverse(g.tensors.bytes(id_of(k))),
                    )
                });
                let mut off = 0;
                while room > usable && off < resident.len() {
                    room -= self.pool.room(g.tensors.bytes(id_of(resident[off])));
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
    pub(super) fn build(
        &self,
        w: (usize, usize),
        entry: &dyn Fn(TensorId) -> Entry,
        integer: bool,
    ) -> Model {
        let members = self.members(w, entry);
        let greedy = self.greedy(&members);
        self.build_from(w, &members, greedy, integer)
    }

    /// The program of `members` over steps `[a, b]`, starting from `start`.
    pub(super) fn build_from(
        &self,
        (a, b): (usize, usize),
        members: &[Member],
        start: Vec<Vec<bool>>,
        integer: bool,
    ) -> Model {
        let (g, pool, pressure) = (self.g, self.pool, &self.pressure);
        let mut m = Model {
            objective: Vec::new(),
            constant: 0.0,
            rows: Vec::new(),
            integer,
            start: Vec::new(),
            n_vars: 0,
            residency: Vec::new(),
        };
        // Per pressured step: each member's room and residency variable.
        let mut at_step: Vec<Vec<(f64, Variable)>> = vec![Vec::new(); b + 1 - a];
        for (mem, start_on) in members.iter().zip(start) {
            let t = &g.tensors.at(mem.id);
            let is_use = |s: usize| t.consumers.binary_search(&s).is_ok();
            let bytes = t.bytes as f64 * SCALE;
            let room = pool.room(t.bytes) as f64 * SCALE;
            let keys = &mem.keys;
            let r: Vec<Variable> = keys.iter().map(|_| m.var()).collect();
            m.n_vars += keys.len() * 2;
            let val = |j: usize| if start_on[j] { 1.0 } else { 0.0 };
            m.start
                .extend(r.iter().enumerate().map(|(j, &v)| (v, val(j))));
            let entry_on = !matches!(mem.how, Entry::Fixed { on: false, .. });
            let needs_write = mem.needs_write(t, &start_on);
            let w = match mem.pays_write() {
                false => None,
                true => {
                    let w = m.var();
                    m.n_vars += 1;
                    m.start.push((w, if needs_write { 1.0 } else { 0.0 }));
                    m.objective[w] += bytes;
                    Some(w)
                }
            };
            if let (false, Some(w)) = (mem.entering, w) {
                // Streamed out at production.
                m.at_least(vec![(w, 1.0), (r[0], 1.0)], 1.0);
            }
            if !entry_on {
                // Coming back in this window is a reload.
                let l = m.var();
                m.start.push((l, val(0)));
                m.objective[l] += bytes;
                m.at_least(vec![(l, 1.0), (r[0], -1.0)], 0.0);
                if let Some(w) = w {
                    m.at_least(vec![(w, 1.0), (l, -1.0)], 0.0);
                }
            }
            for (j, &s) in keys.iter().enumerate() {
                if pressure[s] {
                    at_step[s - a].push((room, r[j]));
                }
                if is_use(s) {
                    // Streamed in if not resident at a use.
                    m.constant += bytes;
                    m.objective[r[j]] -= bytes;
                    if let Some(w) = w {
                        m.at_least(vec![(w, 1.0), (r[j], 1.0)], 1.0);
                    }
                }
                if j > 0 {
                    let l = m.var();
                    let back = start_on[j] && !start_on[j - 1];
                    m.start.push((l, if back { 1.0 } else { 0.0 }));
                    m.objective[l] += bytes;
                    m.at_least(vec![(l, 1.0), (r[j], -1.0), (r[j - 1], 1.0)], 0.0);
                    if let Some(w) = w {
                        m.at_least(vec![(w, 1.0), (l, -1.0)], 0.0);
                    }
                }
            }
            m.residency.push((mem.id, keys.clone(), r, w));
        }
        for (k, terms) in at_step.into_iter().enumerate() {
            if pressure[a + k] {
                self.capacity_rows(&mut m, terms);
            }
        }
        m
    }

    /// One pressured step's rows: resident room within the capacity, and
    /// (unless turned off) the cover cuts that make the relaxation tight.
    fn capacity_rows(&self, m: &mut Model, mut terms: Vec<(f64, Variable)>) {
        let cap = self.pool.usable() as f64 * SCALE;
        // Largest first, for the cover cuts.
        terms.sort_by(|x, y| y.0.total_cmp(&x.0));
        m.at_most(terms.iter().map(|&(room, r)| (r, room)).collect(), cap);
        if !self.cover_cuts {
            return;
        }
        // Knapsack cover: at least `excess` of room is off, and no tensor's
        // share counts for more than the excess itself. Valid for 0-1
        // residency; it cuts off the relaxation's habit of keeping every
        // tensor a little off chip.
        let excess = terms.iter().map(|x| x.0).sum::<f64>() - cap;
        if excess > 0.0 {
            let capped = terms
                .iter()
                .map(|&(room, r)| (r, room.min(excess)))
                .collect();
            let all: f64 = terms.iter().map(|x| x.0.min(excess)).sum();
            m.at_most(capped, all - excess);
        }
        for (k, need) in cover_cuts(&terms, cap) {
            // Of the k largest tensors here, at most k - need fit.
            let on = terms[..k].iter().map(|&(_, r)| (r, 1.0)).collect();
            m.at_most(on, (k - need) as f64);
        }
    }

    /// Per-op working-set bound over steps `[a, b]` (what stands in for a
    /// window the time ran out on: valid whatever enters it).
    pub(super) fn working_set_bound(&self, (a, b): (usize, usize), ws: &[u64]) -> u64 {
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
pub(super) fn cover_cuts(terms: &[(f64, Variable)], usable: f64) -> Vec<(usize, usize)> {
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

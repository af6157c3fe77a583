//! Search on top of the heuristics: the schedule is built by the demand
//! scheduler from an order of *groups* (ops tied together by an L0 buffer:
//! a MATMUL tile with its MOVEs and COPY_OUT, a CONV with its MOVE) plus a
//! prefetch lookahead (how many groups ahead the COPY_IN-style sources are
//! pulled, so MTE2 overlaps compute at the price of residency). A seeded
//! local search permutes groups under a time budget: for the lowest peak,
//! the lowest traffic, or the fewest cycles within a traffic budget.

use super::alloc::{allocate_with, AllocOptions};
use super::check::{evaluate, measure};
use super::model::{Kernel, NodeKind};
use super::schedule::{demand_schedule, demand_targets, peak_profile};
use super::{Metrics, Solution};
use crate::Result;
use std::time::{Duration, Instant};

/// A tiny deterministic RNG (xorshift64*), so `--seed` reproduces a run.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// Targets grouped by shared L0 buffers, in file order of their first op.
pub fn groups(k: &Kernel) -> Vec<Vec<usize>> {
    let targets = demand_targets(k);
    let mut parent: Vec<usize> = (0..targets.len()).collect();
    fn find(p: &mut [usize], x: usize) -> usize {
        let mut r = x;
        while p[r] != r {
            r = p[r];
        }
        let mut c = x;
        while p[c] != r {
            let next = p[c];
            p[c] = r;
            c = next;
        }
        r
    }
    let mut owner: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    for (ti, &t) in targets.iter().enumerate() {
        if let NodeKind::Op { bufs, .. } = &k.nodes[t].kind {
            for b in bufs {
                let Some(buf) = k.buffer(*b) else { continue };
                if !buf.ty.is_l0() {
                    continue;
                }
                match owner.get(b) {
                    Some(&o) => {
                        let (ra, rb) = (find(&mut parent, o), find(&mut parent, ti));
                        if ra != rb {
                            parent[ra.max(rb)] = ra.min(rb);
                        }
                    }
                    None => {
                        owner.insert(*b, ti);
                    }
                }
            }
        }
    }
    let mut by_root: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for (ti, &t) in targets.iter().enumerate() {
        let r = find(&mut parent, ti);
        by_root.entry(r).or_default().push(t);
    }
    by_root.into_values().collect()
}

/// Source ops (no op predecessors, e.g. COPY_IN) feeding a group directly
/// or through one op outside it.
fn sources_of(k: &Kernel, group: &[usize]) -> Vec<usize> {
    let is_source = |p: usize| {
        matches!(k.nodes[p].kind, NodeKind::Op { .. })
            && !k.pred[p]
                .iter()
                .any(|&q| matches!(k.nodes[q].kind, NodeKind::Op { .. }))
    };
    let mut out = Vec::new();
    for &o in group {
        for &p in &k.pred[o] {
            if is_source(p) && !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// A candidate: group order and prefetch lookahead.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub order: Vec<usize>,
    pub lookahead: usize,
    pub alloc: AllocOptions,
}

/// The schedule a plan stands for.
pub fn schedule_of(
    k: &Kernel,
    groups: &[Vec<usize>],
    sources: &[Vec<usize>],
    plan: &Plan,
) -> Result<Vec<usize>> {
    let mut targets = Vec::with_capacity(k.len());
    let g = &plan.order;
    for j in 0..plan.lookahead.min(g.len()) {
        targets.extend(&sources[g[j]]);
    }
    for (i, &gi) in g.iter().enumerate() {
        if let Some(&ahead) = g.get(i + plan.lookahead) {
            if plan.lookahead > 0 {
                targets.extend(&sources[ahead]);
            }
        }
        targets.extend(&groups[gi]);
    }
    demand_schedule(k, &targets)
}

/// What to minimise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Goal {
    Peak,
    Traffic,
    /// Cycles with extra traffic at most this.
    CyclesWithin(u64),
}

/// The best plan found, its schedule's solution and metrics.
#[derive(Debug, Clone)]
pub struct Found {
    pub plan: Plan,
    pub solution: Solution,
    pub metrics: Metrics,
    pub evaluations: usize,
    /// The lowest-traffic solution seen on the way (any goal).
    pub lowest_traffic: Option<(Plan, Solution, Metrics)>,
}

/// What a search compares, lowest first.
pub type Score = (u64, u64, u64);

/// The score of full metrics (the peak goal's is made in `evaluate_plan`,
/// which has the schedule's profile).
fn score(goal: Goal, m: &Metrics) -> Score {
    match goal {
        Goal::Peak => (m.peak_residency, 0, 0),
        Goal::Traffic => (m.extra_traffic, m.total_cycles, m.peak_residency),
        Goal::CyclesWithin(b) => (
            u64::from(m.extra_traffic > b),
            if m.extra_traffic > b {
                m.extra_traffic
            } else {
                m.total_cycles
            },
            m.extra_traffic,
        ),
    }
}

/// Evaluates a plan fully (schedule, allocation, check, timing) and scores
/// it for `goal`; for the peak goal only the schedule is needed, and ties
/// on the peak are broken by how many schedule positions reach it: fewer is
/// closer to a lower peak, which gives the local search a slope on what is
/// otherwise a wide plateau (FlashAttention's peak is reached at ~50
/// places, one per repeated block).
pub fn evaluate_plan(
    k: &Kernel,
    groups: &[Vec<usize>],
    sources: &[Vec<usize>],
    plan: &Plan,
    goal: Goal,
) -> Option<(Solution, Metrics, Score)> {
    let order = schedule_of(k, groups, sources, plan).ok()?;
    if goal == Goal::Peak {
        let (peak, at_peak) = peak_profile(k, &order);
        let m = Metrics {
            peak_residency: peak,
            ..Default::default()
        };
        let solution = Solution {
            order,
            ..Default::default()
        };
        return Some((solution, m, (peak, at_peak, 0)));
    }
    let a = allocate_with(k, &order, plan.alloc).ok()?;
    // The allocator's solutions are valid by construction; the ones the
    // search returns are checked in full once (`solve`).
    let (m, _) = measure(k, &a.solution);
    Some((a.solution, m, score(goal, &m)))
}

/// Seeded local search from `start` within `budget`: moves a group, swaps
/// two, reverses a run, or changes the lookahead; keeps the move when the
/// score does not get worse (plateaus are walked).
pub fn search(
    k: &Kernel,
    goal: Goal,
    starts: &[Plan],
    budget: Duration,
    seed: u64,
    max_lookahead: usize,
) -> Option<Found> {
    search_limited(k, goal, starts, budget, usize::MAX, seed, max_lookahead)
}

/// [`search`] that also stops after `max_evaluations` plans: with a time
/// budget it does not reach, the result depends only on the seed (what
/// tests need; a time budget alone depends on the machine's speed).
pub fn search_limited(
    k: &Kernel,
    goal: Goal,
    starts: &[Plan],
    budget: Duration,
    max_evaluations: usize,
    seed: u64,
    max_lookahead: usize,
) -> Option<Found> {
    let started = Instant::now();
    let gs = groups(k);
    let sources: Vec<Vec<usize>> = gs.iter().map(|g| sources_of(k, g)).collect();
    let mut rng = Rng::new(seed);
    let mut evaluations = 0;
    let mut best: Option<(Plan, Solution, Metrics, Score)> = None;
    let mut lowest: Option<(Plan, Solution, Metrics)> = None;
    let note =
        |lowest: &mut Option<(Plan, Solution, Metrics)>, p: &Plan, sol: &Solution, m: &Metrics| {
            if goal != Goal::Peak
                && lowest.as_ref().is_none_or(|l| {
                    (m.extra_traffic, m.total_cycles) < (l.2.extra_traffic, l.2.total_cycles)
                })
            {
                *lowest = Some((p.clone(), sol.clone(), *m));
            }
        };
    for s in starts {
        evaluations += 1;
        if let Some((sol, m, sc)) = evaluate_plan(k, &gs, &sources, s, goal) {
            note(&mut lowest, s, &sol, &m);
            if best.as_ref().is_none_or(|b| sc < b.3) {
                best = Some((s.clone(), sol, m, sc));
            }
        }
    }
    let (mut cur_plan, _, _, mut cur_score) = best.clone()?;
    if goal == Goal::Peak && cur_plan.lookahead == 0 {
        // The windowed search: moves cost a window's nodes, not the case's.
        let f = super::peak::search(
            k,
            &gs,
            &cur_plan.order,
            budget.saturating_sub(started.elapsed()),
            max_evaluations.saturating_sub(evaluations),
            &mut rng,
        )?;
        let plan = Plan {
            order: f.order,
            ..cur_plan
        };
        let (solution, metrics, _) = evaluate_plan(k, &gs, &sources, &plan, goal)?;
        return Some(Found {
            plan,
            solution,
            metrics,
            evaluations: evaluations + f.evaluations,
            lowest_traffic: None,
        });
    }
    let n = cur_plan.order.len();
    while started.elapsed() < budget && evaluations < max_evaluations && n > 1 {
        let mut p = cur_plan.clone();
        // Short shifts only for the peak (measured: they help it; the
        // traffic and cycle searches keep their tuned mix of moves).
        let kinds = if goal == Goal::Peak { 8 } else { 6 };
        match rng.below(kinds) {
            6 | 7 => {
                // A short shift: one group a few places earlier or later
                // (most far moves drag whole ancestries and lose).
                let a = rng.below(n);
                let d = 1 + rng.below(8);
                let b = if rng.below(2) == 0 {
                    a.saturating_sub(d)
                } else {
                    (a + d).min(n - 1)
                };
                let g = p.order.remove(a);
                p.order.insert(b, g);
            }
            5 => {
                // The allocator's choices.
                if rng.below(2) == 0 {
                    p.alloc.oldest_hole = !p.alloc.oldest_hole;
                } else {
                    p.alloc.distance_exponent = [0.5, 1.0, 1.5, 2.0, 4.0][rng.below(5)];
                }
            }
            4 => {
                // Move a run of groups elsewhere (or-opt).
                let len = 1 + rng.below(8.min(n - 1));
                let a = rng.below(n - len + 1);
                let run: Vec<usize> = p.order.drain(a..a + len).collect();
                let at = rng.below(p.order.len() + 1);
                for (j, g) in run.into_iter().enumerate() {
                    p.order.insert(at + j, g);
                }
            }
            0 => {
                let (a, b) = (rng.below(n), rng.below(n));
                let g = p.order.remove(a);
                p.order.insert(b.min(n - 1), g);
            }
            1 => {
                let (a, b) = (rng.below(n), rng.below(n));
                p.order.swap(a, b);
            }
            2 => {
                let a = rng.below(n);
                let len = 2 + rng.below(8.min(n - 1));
                let b = (a + len).min(n);
                p.order[a..b].reverse();
            }
            _ => {
                if max_lookahead == 0 {
                    continue;
                }
                p.lookahead = rng.below(max_lookahead + 1);
            }
        }
        evaluations += 1;
        let Some((sol, m, sc)) = evaluate_plan(k, &gs, &sources, &p, goal) else {
            continue;
        };
        note(&mut lowest, &p, &sol, &m);
        if sc <= cur_score {
            cur_plan = p;
            cur_score = sc;
            if best.as_ref().is_none_or(|b| sc < b.3) {
                best = Some((cur_plan.clone(), sol, m, sc));
            }
        }
    }
    let (plan, solution, metrics, _) = best?;
    Some(Found {
        plan,
        solution,
        metrics,
        evaluations,
        lowest_traffic: lowest,
    })
}

/// A cache-aware greedy group order: simulate an LRU cache of L1 + UB
/// bytes and always take the ready group (its predecessor groups done) that
/// needs the fewest bytes not cached, earliest in the file on ties. On
/// tiled kernels this forms blocked, snaking traversals (a MATMUL grid
/// walked in bands that fit the cache) without knowing the loop nest.
pub fn locality_order(k: &Kernel, groups: &[Vec<usize>]) -> Vec<usize> {
    let ng = groups.len();
    let mut group_of = vec![usize::MAX; k.len()];
    for (g, ops) in groups.iter().enumerate() {
        for &o in ops {
            group_of[o] = g;
        }
    }
    // Buffers (non-L0) each group touches, and group dependencies.
    let bufs: Vec<Vec<usize>> = groups
        .iter()
        .map(|ops| {
            let mut v: Vec<usize> = Vec::new();
            for &o in ops {
                if let NodeKind::Op { bufs, .. } = &k.nodes[o].kind {
                    for b in bufs.iter().filter_map(|b| k.buf_index.get(b)) {
                        if !k.buffers[*b].ty.is_l0() && !v.contains(b) {
                            v.push(*b);
                        }
                    }
                }
            }
            v
        })
        .collect();
    // Predecessor groups (through any path of non-group nodes, one level
    // of ops outside groups is enough for the cases at hand).
    let mut deps: Vec<Vec<usize>> = vec![Vec::new(); ng];
    for (g, ops) in groups.iter().enumerate() {
        let mut stack: Vec<usize> = ops
            .iter()
            .flat_map(|&o| k.pred[o].iter().copied())
            .collect();
        let mut seen = std::collections::HashSet::new();
        while let Some(p) = stack.pop() {
            if !seen.insert(p) {
                continue;
            }
            match group_of[p] {
                x if x == g => {}
                usize::MAX => stack.extend(k.pred[p].iter().copied()),
                x => {
                    if !deps[g].contains(&x) {
                        deps[g].push(x);
                    }
                }
            }
        }
    }
    let mut waiting: Vec<usize> = deps.iter().map(Vec::len).collect();
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); ng];
    for (g, d) in deps.iter().enumerate() {
        for &x in d {
            succs[x].push(g);
        }
    }
    let mut ready: std::collections::BTreeSet<usize> =
        (0..ng).filter(|&g| waiting[g] == 0).collect();
    // One LRU cache per pool: buffer -> last use stamp.
    let mut stamp: Vec<u64> = vec![0; k.buffers.len()];
    let mut cached: Vec<std::collections::BTreeSet<(u64, usize)>> = vec![Default::default(); 5];
    let mut in_cache = vec![false; k.buffers.len()];
    let mut used = [0u64; 5];
    let mut clock = 1u64;
    let mut order = Vec::with_capacity(ng);
    while let Some(&first) = ready.iter().next() {
        let pick = ready
            .iter()
            .take(512)
            .copied()
            .min_by_key(|&g| {
                let miss: u64 = bufs[g]
                    .iter()
                    .filter(|&&b| !in_cache[b])
                    .map(|&b| k.buffers[b].size)
                    .sum();
                (miss, g)
            })
            .unwrap_or(first);
        ready.remove(&pick);
        order.push(pick);
        for &b in &bufs[pick] {
            let t = k.buffers[b].ty.index();
            if in_cache[b] {
                cached[t].remove(&(stamp[b], b));
            } else {
                in_cache[b] = true;
                used[t] += k.buffers[b].size;
            }
            stamp[b] = clock;
            cached[t].insert((clock, b));
            clock += 1;
        }
        for ty in super::model::BufType::ALL {
            let t = ty.index();
            while used[t] > ty.capacity() {
                let Some((s, b)) = cached[t].iter().next().copied() else {
                    break;
                };
                cached[t].remove(&(s, b));
                in_cache[b] = false;
                used[t] -= k.buffers[b].size;
            }
        }
        for &s in &succs[pick] {
            waiting[s] -= 1;
            if waiting[s] == 0 {
                ready.insert(s);
            }
        }
    }
    // Anything left (a dependency cycle between groups): file order.
    let mut placed = vec![false; ng];
    for &g in &order {
        placed[g] = true;
    }
    order.extend((0..ng).filter(|&g| !placed[g]));
    order
}

/// Starting plans: file order and the cache-aware order, each with
/// lookaheads `0..=max`.
pub fn start_plans(k: &Kernel, max_lookahead: usize) -> Vec<Plan> {
    let gs = groups(k);
    let orders = [(0..gs.len()).collect::<Vec<_>>(), locality_order(k, &gs)];
    let mut v = Vec::new();
    for o in orders {
        for l in 0..=max_lookahead {
            v.push(Plan {
                order: o.clone(),
                lookahead: l,
                alloc: AllocOptions::default(),
            });
        }
    }
    v
}

/// The file-order plans with lookaheads `0..=max` (the heuristic starts).
pub fn file_plans(k: &Kernel, max_lookahead: usize) -> Vec<Plan> {
    let n = groups(k).len();
    (0..=max_lookahead)
        .map(|l| Plan {
            order: (0..n).collect(),
            lookahead: l,
            alloc: AllocOptions::default(),
        })
        .collect()
}

/// A fast stand-in for the allocator when comparing group orders: the
/// sequence of L1/UB buffer accesses the order makes, replayed through a
/// per-pool Belady cache (furthest next use leaves; a buffer dies at its
/// last access). Exact for uniform buffer sizes without fragmentation;
/// a guide otherwise. Microseconds per order, so millions of orders can be
/// compared before the real allocator confirms the best.
pub struct Proxy {
    /// Buffer accesses per group (non-L0 buffers, op order).
    access: Vec<Vec<usize>>,
    traffic: Vec<u64>,
    size: Vec<u64>,
    pool: Vec<usize>,
    // Scratch space reused between calls.
    seq: Vec<usize>,
    next: Vec<usize>,
    last_seen: Vec<usize>,
}

impl Proxy {
    pub fn new(k: &Kernel, groups: &[Vec<usize>]) -> Proxy {
        let access = groups
            .iter()
            .map(|ops| {
                let mut v = Vec::new();
                for &o in ops {
                    for &p in k.pred[o].iter().chain(std::iter::once(&o)) {
                        if p != o
                            && k.pred[p]
                                .iter()
                                .any(|&q| matches!(k.nodes[q].kind, NodeKind::Op { .. }))
                        {
                            continue; // only sources besides the op itself
                        }
                        if let NodeKind::Op { bufs, .. } = &k.nodes[p].kind {
                            for b in bufs.iter().filter_map(|b| k.buf_index.get(b)) {
                                if !k.buffers[*b].ty.is_l0() {
                                    v.push(*b);
                                }
                            }
                        }
                    }
                }
                v
            })
            .collect();
        Proxy {
            access,
            traffic: (0..k.buffers.len())
                .map(|b| super::alloc::spill_traffic(k, b))
                .collect(),
            size: k.buffers.iter().map(|b| b.size).collect(),
            pool: k.buffers.iter().map(|b| b.ty.index()).collect(),
            seq: Vec::new(),
            next: Vec::new(),
            last_seen: vec![usize::MAX; k.buffers.len()],
        }
    }

    /// The non-L0 buffers each group touches, in access order.
    pub fn access(&self) -> &[Vec<usize>] {
        &self.access
    }

    /// Estimated extra traffic of a group order.
    pub fn traffic(&mut self, order: &[usize]) -> u64 {
        self.seq.clear();
        for &g in order {
            self.seq.extend_from_slice(&self.access[g]);
        }
        let len = self.seq.len();
        self.next.clear();
        self.next.resize(len, usize::MAX);
        for p in (0..len).rev() {
            let b = self.seq[p];
            self.next[p] = self.last_seen[b];
            self.last_seen[b] = p;
        }
        for &b in &self.seq {
            self.last_seen[b] = usize::MAX;
        }
        let caps: [u64; 5] = [4096, 1024, 256, 256, 512];
        let mut used = [0u64; 5];
        // Resident buffers by next use, furthest first out: max-heaps with
        // lazy deletion (an entry is live while it matches `key`).
        let mut cache: Vec<std::collections::BinaryHeap<(usize, usize)>> =
            vec![Default::default(); 5];
        let mut key: Vec<usize> = vec![usize::MAX; self.size.len()];
        let mut seen = vec![false; self.size.len()];
        let mut total = 0;
        for p in 0..len {
            let b = self.seq[p];
            let t = self.pool[b];
            let nu = self.next[p];
            if key[b] == usize::MAX {
                if seen[b] {
                    total += self.traffic[b];
                }
                seen[b] = true;
                used[t] += self.size[b];
                while used[t] > caps[t] {
                    let Some((kk, v)) = cache[t].pop() else {
                        break;
                    };
                    if key[v] != kk {
                        continue; // stale
                    }
                    key[v] = usize::MAX;
                    used[t] -= self.size[v];
                }
            }
            if nu == usize::MAX {
                // Last access: the buffer dies.
                key[b] = usize::MAX;
                used[t] -= self.size[b];
            } else {
                key[b] = nu;
                cache[t].push((nu, b));
            }
        }
        total
    }
}

/// Local search on the proxy alone (no allocation), from `start`, until
/// `budget` has passed (simulated annealing on the elapsed fraction);
/// returns the best order and its proxy traffic.
pub fn proxy_search(
    proxy: &mut Proxy,
    start: &[usize],
    budget: Duration,
    rng: &mut Rng,
) -> (Vec<usize>, u64) {
    let started = Instant::now();
    let n = start.len();
    let mut cur = start.to_vec();
    let mut cur_t = proxy.traffic(&cur);
    let mut best = (cur.clone(), cur_t);
    if n < 2 {
        return best;
    }
    let mut it = 0u64;
    loop {
        it += 1;
        // The clock is read every few moves (each move is microseconds).
        if (it.is_multiple_of(16) || it < 16) && started.elapsed() >= budget {
            break;
        }
        let mut p = cur.clone();
        match rng.below(4) {
            0 => {
                let (a, b) = (rng.below(n), rng.below(n));
                let g = p.remove(a);
                p.insert(b.min(n - 1), g);
            }
            1 => {
                let (a, b) = (rng.below(n), rng.below(n));
                p.swap(a, b);
            }
            2 => {
                let a = rng.below(n);
                let len = 2 + rng.below(16.min(n - 1));
                let b = (a + len).min(n);
                p[a..b].reverse();
            }
            _ => {
                let len = 1 + rng.below(8.min(n - 1));
                let a = rng.below(n - len + 1);
                let run: Vec<usize> = p.drain(a..a + len).collect();
                let at = rng.below(p.len() + 1);
                for (j, g) in run.into_iter().enumerate() {
                    p.insert(at + j, g);
                }
            }
        }
        let t = proxy.traffic(&p);
        // Late acceptance of slightly worse orders early on (annealing).
        let elapsed = (started.elapsed().as_secs_f64() / budget.as_secs_f64().max(1e-9)).min(1.0);
        let temp = (1.0 - elapsed).max(0.0) * 0.02 * cur_t.max(1) as f64;
        let accept = t <= cur_t
            || ((cur_t as f64 - t as f64) / temp.max(1e-9)).exp()
                > (rng.next_u64() % 10_000) as f64 / 10_000.0;
        if accept {
            cur = p;
            cur_t = t;
            if cur_t < best.1 {
                best = (cur.clone(), cur_t);
            }
        }
    }
    best
}

/// Knobs of `npu solve`.
#[derive(Debug, Clone, Copy)]
pub struct SolveOptions {
    /// Total improvement time after the heuristics (0: heuristics only).
    pub time: Duration,
    pub seed: u64,
    /// Cycles are lowered with extra traffic at most (1 + slack) x the
    /// lowest traffic found.
    pub traffic_slack: f64,
    /// An absolute traffic budget for the cycles phase (overrides the slack).
    pub traffic_budget: Option<u64>,
    pub max_lookahead: usize,
}

impl Default for SolveOptions {
    fn default() -> Self {
        SolveOptions {
            time: Duration::ZERO,
            seed: 1,
            traffic_slack: 0.05,
            traffic_budget: None,
            max_lookahead: 4,
        }
    }
}

/// Everything `npu solve` found: the lowest-peak schedule, the
/// lowest-traffic solution, and the fastest within the traffic budget.
#[derive(Debug, Clone)]
pub struct SolveReport {
    pub peak: Found,
    pub traffic: Found,
    pub cycles: Found,
    pub traffic_budget: u64,
    pub elapsed: Duration,
}

/// Independent walks the real traffic search is split into when the proxy
/// does not predict the allocator.
const TRAFFIC_WALKS: usize = 3;
/// Fewer evaluations than this in a walk: the walks are one continued walk.
const WALK_EVALUATIONS: usize = 3_000;

/// The phases: heuristic starts; local search for peak; the proxy search
/// then the real one for traffic; then cycles within the traffic budget.
/// The time budget is split 10 / 30 / 25 / 35 %.
pub fn solve(k: &Kernel, opts: SolveOptions) -> Result<SolveReport> {
    let started = Instant::now();
    let share = |f: f64| opts.time.mul_f64(f);
    let starts = start_plans(k, opts.max_lookahead);
    let none = || crate::Error::Config(format!("npu solve: no valid schedule for {}", k.name));
    let peak = search(k, Goal::Peak, &starts[..1], share(0.10), opts.seed, 0).ok_or_else(none)?;
    // Traffic: the proxy first (cheap), then real evaluations.
    let mut tstarts = starts.clone();
    let mut real_share = 0.25;
    let mut exact = false;
    let gs = groups(k);
    let mut proxy = Proxy::new(k, &gs);
    // Banded walks of a tiled grid, when the groups form one: the best
    // few by the proxy join the starts (heuristics included).
    let bands = super::bands::band_orders(&mut proxy, k.buffers.len(), 2);
    for (order, _) in &bands {
        tstarts.push(Plan {
            order: order.clone(),
            lookahead: 0,
            alloc: AllocOptions::default(),
        });
    }
    if !opts.time.is_zero() {
        let mut rng = Rng::new(opts.seed ^ 0x5eed);
        // The proxy search starts from the best banded walk when there is
        // one (file order otherwise).
        let base: Vec<usize> = bands
            .first()
            .map_or_else(|| (0..gs.len()).collect(), |(o, _)| o.clone());
        // Where the proxy predicts the allocator exactly (uniform tiles),
        // it also gets most of the real search's time.
        let sources: Vec<Vec<usize>> = gs.iter().map(|g| sources_of(k, g)).collect();
        let file_order: Vec<usize> = (0..gs.len()).collect();
        exact = evaluate_plan(k, &gs, &sources, &starts[0], Goal::Traffic)
            .is_some_and(|(_, m, _)| m.extra_traffic == proxy.traffic(&file_order));
        // Otherwise it only seeds the real search with a few orders.
        let proxy_share = if exact { 0.50 } else { 0.10 };
        real_share = if exact { 0.05 } else { 0.45 };
        let (order, _) = proxy_search(&mut proxy, &base, share(proxy_share), &mut rng);
        for l in 0..=opts.max_lookahead {
            tstarts.push(Plan {
                order: order.clone(),
                lookahead: l,
                alloc: AllocOptions::default(),
            });
        }
    }
    // Independent restarts (seeds apart) where the proxy is not exact: a
    // single long walk tends to settle in one basin (measured on
    // FlashAttention_Case0, 60 s, seeds 1-3: 2,304 / 1,536 / 1,024 bytes).
    // Where the proxy is not exact, the real search is split into walks
    // (seeds apart): one long walk tends to settle in one basin. A walk
    // needs evaluations to get anywhere, so when the first one had too few
    // (a large case, a short budget) the rest of the time continues it
    // instead (FlashAttention_Case0, 60 s, seed 1: three walks 1,024 bytes,
    // one 2,304; FlashAttention x4: one walk 10,240, three 12,032).
    let walks = if exact || opts.time.is_zero() {
        1
    } else {
        TRAFFIC_WALKS
    };
    let walk = share(real_share / walks as f64);
    let mut traffic = search(
        k,
        Goal::Traffic,
        &tstarts,
        walk,
        opts.seed.wrapping_add(1),
        opts.max_lookahead,
    )
    .ok_or_else(none)?;
    if walks > 1 {
        let starved = traffic.evaluations < WALK_EVALUATIONS;
        let rest: Vec<(Vec<Plan>, Duration)> = if starved {
            let mut from_best = tstarts.clone();
            from_best.push(traffic.plan.clone());
            vec![(from_best, walk * (walks as u32 - 1))]
        } else {
            (1..walks).map(|_| (tstarts.clone(), walk)).collect()
        };
        for (r, (starts, time)) in rest.into_iter().enumerate() {
            let seed = opts.seed.wrapping_add(1 + 1000 * (r as u64 + 1));
            let f = search(k, Goal::Traffic, &starts, time, seed, opts.max_lookahead)
                .ok_or_else(none)?;
            let evaluations = traffic.evaluations + f.evaluations;
            if score(Goal::Traffic, &f.metrics) < score(Goal::Traffic, &traffic.metrics) {
                traffic = f;
            }
            traffic.evaluations = evaluations;
        }
    }
    let budget = opts.traffic_budget.unwrap_or(
        (traffic.metrics.extra_traffic as f64 * (1.0 + opts.traffic_slack)).floor() as u64,
    );
    let mut cstarts = tstarts;
    cstarts.push(traffic.plan.clone());
    let cycles = search(
        k,
        Goal::CyclesWithin(budget),
        &cstarts,
        share(0.35),
        opts.seed.wrapping_add(2),
        opts.max_lookahead.max(6),
    )
    .ok_or_else(none)?;
    // The cycles phase may have met a lower-traffic solution on its way.
    if let Some((plan, solution, metrics)) = cycles.lowest_traffic.clone() {
        if (metrics.extra_traffic, metrics.total_cycles)
            < (traffic.metrics.extra_traffic, traffic.metrics.total_cycles)
        {
            traffic = Found {
                plan,
                solution,
                metrics,
                evaluations: traffic.evaluations,
                lowest_traffic: None,
            };
        }
    }
    // Every answer passes the checker before anyone sees it.
    for (what, f) in [("traffic", &traffic), ("cycles", &cycles)] {
        let m = evaluate(k, &f.solution).map_err(|v| {
            crate::Error::Config(format!(
                "npu solve: internal error: the {what} solution for {} breaks {v}",
                k.name
            ))
        })?;
        debug_assert_eq!(m, f.metrics);
    }
    Ok(SolveReport {
        peak,
        traffic,
        cycles,
        traffic_budget: budget,
        elapsed: started.elapsed(),
    })
}

//! The peak search at scale: incremental re-evaluation. A full evaluation
//! re-schedules every node of the case; a move that permutes the groups in
//! a span `[lo, hi)` of the plan changes the schedule only inside the span
//! whenever the scheduler leaves the span in the state it left it in
//! before (the same nodes done, the same L0 holders: checked, not assumed).
//! Then the peak is the highest of the prefix's, the span's and the
//! suffix's, kept per group boundary, so a move costs the span's nodes, and
//! an accepted one updates the kept figures in place. Moves are anchored
//! where the peak is reached, so the search works where the figure is made.

use super::model::{Kernel, NodeKind};
use super::schedule::Demand;
use super::solve::{Rng, Score};
use std::time::{Duration, Instant};

/// How far (in groups) from a peak position an anchored move starts.
const NEAR: usize = 8;

/// The highest running residency over some positions and how many reach it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Peak {
    pub(super) max: i64,
    pub(super) count: u64,
}

impl Peak {
    const NONE: Peak = Peak {
        max: i64::MIN,
        count: 0,
    };
    fn join(self, o: Peak) -> Peak {
        match self.max.cmp(&o.max) {
            std::cmp::Ordering::Greater => self,
            std::cmp::Ordering::Less => o,
            std::cmp::Ordering::Equal => Peak {
                max: self.max,
                count: self.count + o.count,
            },
        }
    }
    fn see(&mut self, cur: i64) {
        *self = self.join(Peak { max: cur, count: 1 });
    }
    /// The search's score (as `peak_profile` gives it for a whole order).
    fn score(self) -> Score {
        (self.max.max(0) as u64, self.count, 0)
    }
}

/// The change node `i` makes to the L1 + UB residency (none for spill
/// ids, which are past the nodes).
fn delta(k: &Kernel, i: usize) -> Option<i64> {
    match &k.nodes.get(i)?.kind {
        NodeKind::Alloc { size, ty, .. } if !ty.is_l0() => Some(*size as i64),
        NodeKind::Free { size, ty, .. } if !ty.is_l0() => Some(-(*size as i64)),
        _ => None,
    }
}

/// The peak of `nodes` scheduled after a residency of `cur`; returns the
/// residency after them too.
pub(super) fn stretch(k: &Kernel, nodes: &[usize], mut cur: i64) -> (Peak, i64) {
    let mut p = Peak::NONE;
    for &x in nodes {
        if let Some(d) = delta(k, x) {
            cur += d;
            p.see(cur);
        }
    }
    (p, cur)
}

/// The plan's schedule as the search keeps it: per group position the
/// residency and L0 holders before it, its own peak and node count; peaks
/// of everything before / from every boundary on; and the position that
/// scheduled each node (`G` for the tail of nodes no group pulled in).
struct Pass {
    order: Vec<usize>,
    cur: Vec<i64>,
    l0: Vec<[Option<usize>; 5]>,
    segs: Vec<Peak>,
    count: Vec<usize>,
    prefix: Vec<Peak>,
    suffix: Vec<Peak>,
    at: Vec<u32>,
    total: Peak,
    /// Group positions whose stretch reaches the total peak.
    peak_at: Vec<usize>,
}

/// A span re-scheduled: per group of the new order, what [`Pass`] keeps.
#[derive(Default)]
struct SpanRun {
    cur: Vec<i64>,
    l0: Vec<[Option<usize>; 5]>,
    segs: Vec<Peak>,
    /// End of each group's nodes in the scheduler's order.
    ends: Vec<usize>,
}

impl Pass {
    fn full(k: &Kernel, groups: &[Vec<usize>], order: &[usize]) -> Option<Pass> {
        let g = order.len();
        let mut d = Demand::new(k);
        let mut p = Pass {
            order: order.to_vec(),
            cur: Vec::with_capacity(g + 1),
            l0: Vec::with_capacity(g + 1),
            segs: Vec::with_capacity(g + 1),
            count: Vec::with_capacity(g + 1),
            prefix: Vec::new(),
            suffix: Vec::new(),
            at: vec![g as u32; k.len()],
            total: Peak::NONE,
            peak_at: Vec::new(),
        };
        let mut cur = 0i64;
        for pos in 0..=g {
            p.cur.push(cur);
            p.l0.push(d.live_l0);
            let mark = d.order.len();
            match order.get(pos) {
                Some(&gi) => {
                    for &t in &groups[gi] {
                        d.target(t).ok()?;
                    }
                }
                None => d.finish().ok()?,
            }
            for &x in &d.order[mark..] {
                p.at[x] = pos as u32;
            }
            let (seg, after) = stretch(k, &d.order[mark..], cur);
            cur = after;
            p.segs.push(seg);
            p.count.push(d.order.len() - mark);
        }
        p.sums();
        Some(p)
    }

    /// Prefix and suffix peaks, the total and where it is reached.
    fn sums(&mut self) {
        let g = self.order.len();
        self.prefix.clear();
        self.prefix.push(Peak::NONE);
        for pos in 0..g {
            let last = self.prefix[pos];
            self.prefix.push(last.join(self.segs[pos]));
        }
        self.suffix.resize(g + 1, Peak::NONE);
        self.suffix[g] = self.segs[g];
        for pos in (0..g).rev() {
            self.suffix[pos] = self.segs[pos].join(self.suffix[pos + 1]);
        }
        self.total = self.prefix[g].join(self.segs[g]);
        let top = self.total.max;
        self.peak_at = (0..g).filter(|&i| self.segs[i].max == top).collect();
    }

    /// The whole order's peak with `new` in place of the groups at
    /// `lo..lo + new.len()`, or None when the span would leave the
    /// scheduler in another state (or breaks a rule). `run` keeps what
    /// [`Pass::accept`] needs.
    fn try_span<'k>(
        &self,
        k: &'k Kernel,
        groups: &[Vec<usize>],
        lo: usize,
        new: &[usize],
        work: &mut Demand<'k>,
        run: &mut SpanRun,
    ) -> Option<Peak> {
        let hi = lo + new.len();
        work.resume(|x| (self.at[x] as usize) < lo, self.l0[lo]);
        run.cur.clear();
        run.l0.clear();
        run.segs.clear();
        run.ends.clear();
        let mut cur = self.cur[lo];
        let mut mid = self.prefix[lo];
        for &g in new {
            run.cur.push(cur);
            run.l0.push(work.live_l0);
            let mark = work.order.len();
            for &t in &groups[g] {
                work.target(t).ok()?;
            }
            let (seg, after) = stretch(k, &work.order[mark..], cur);
            cur = after;
            mid = mid.join(seg);
            run.segs.push(seg);
            run.ends.push(work.order.len());
        }
        // Same state after the span: the same L0 holders and the same
        // nodes done (as many, each one the old span's).
        let same = work.live_l0 == self.l0[hi]
            && work.order.len() == self.count[lo..hi].iter().sum::<usize>()
            && work.order.iter().all(|&x| (self.at[x] as usize) < hi);
        same.then(|| mid.join(self.suffix[hi]))
    }

    /// Puts the span `try_span` ran in place and updates what is kept.
    fn accept(&mut self, lo: usize, new: &[usize], run: &SpanRun, nodes: &[usize]) {
        let mut start = 0;
        for (j, &g) in new.iter().enumerate() {
            let pos = lo + j;
            self.order[pos] = g;
            self.cur[pos] = run.cur[j];
            self.l0[pos] = run.l0[j];
            self.segs[pos] = run.segs[j];
            self.count[pos] = run.ends[j] - start;
            for &x in &nodes[start..run.ends[j]] {
                self.at[x] = pos as u32;
            }
            start = run.ends[j];
        }
        self.sums();
    }
}

/// A random move on `order` near `anchor`: a group shifted, two swapped, a
/// short run reversed or moved. Returns the span it changes and the span's
/// new groups.
fn propose(order: &[usize], anchor: usize, rng: &mut Rng) -> (usize, Vec<usize>) {
    let n = order.len();
    let near = |rng: &mut Rng| {
        let d = rng.below(2 * NEAR + 1);
        (anchor + d).saturating_sub(NEAR).min(n - 1)
    };
    // The other end at a log-uniform distance: mostly close (cheap spans),
    // now and then across the case (the far moves a long-lived buffer needs).
    let a = near(rng);
    let scale = NEAR << rng.below(7);
    let reach = 1 + rng.below(scale.min(n));
    let b = if rng.below(2) == 0 {
        a.saturating_sub(reach)
    } else {
        (a + reach).min(n - 1)
    };
    let (a, b) = if rng.below(2) == 0 { (a, b) } else { (b, a) };
    let (lo, hi) = (a.min(b), a.max(b) + 1);
    let mut w = order[lo..hi].to_vec();
    match rng.below(4) {
        0 => {
            // The group at a goes to b.
            let g = w.remove(a - lo);
            w.insert(b - lo, g);
        }
        1 => w.swap(a - lo, b - lo),
        2 => {
            // A short run from a reversed.
            let len = (2 + rng.below(6)).min(n - a);
            return (a, order[a..a + len].iter().rev().copied().collect());
        }
        _ => {
            // A short run starting at a moved to b (or-opt).
            let len = (1 + rng.below(8)).min(hi - a);
            let run: Vec<usize> = w.drain(a - lo..a - lo + len).collect();
            let at = (b - lo).min(w.len());
            w.splice(at..at, run);
        }
    }
    (lo, w)
}

/// What the search found: the best group order, its score, and how many
/// orders it judged.
pub struct PeakFound {
    pub order: Vec<usize>,
    pub score: Score,
    pub evaluations: usize,
}

/// Seeded local search for the lowest peak (ties broken by how many
/// positions reach it) from `start`, within `budget` and at most
/// `max_evaluations`, every move evaluated incrementally; equal scores are
/// accepted so plateaus are walked.
pub fn search(
    k: &Kernel,
    groups: &[Vec<usize>],
    start: &[usize],
    budget: Duration,
    max_evaluations: usize,
    rng: &mut Rng,
) -> Option<PeakFound> {
    let started = Instant::now();
    let mut p = Pass::full(k, groups, start)?;
    let mut best = PeakFound {
        order: start.to_vec(),
        score: p.total.score(),
        evaluations: 1,
    };
    let g = start.len();
    let mut work = Demand::new(k);
    let mut run = SpanRun::default();
    let key = |s: Peak| (s.max, s.count);
    while g > 1 && best.evaluations < max_evaluations && started.elapsed() < budget {
        // Mostly where the peak is reached; now and then anywhere.
        let anchor = match p.peak_at.len() {
            m if m > 0 && rng.below(5) > 0 => p.peak_at[rng.below(m)],
            _ => rng.below(g),
        };
        let (lo, new) = propose(&p.order, anchor, rng);
        best.evaluations += 1;
        let Some(s) = p.try_span(k, groups, lo, &new, &mut work, &mut run) else {
            continue;
        };
        if key(s) <= key(p.total) {
            p.accept(lo, &new, &run, &work.order);
            debug_assert_eq!(p.total, s, "the kept figures are the span's");
            if p.total.score() < best.score {
                best.order.clone_from(&p.order);
                best.score = p.total.score();
            }
        }
    }
    Some(best)
}

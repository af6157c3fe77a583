//! Making room on chip: when a request does not fit, evict unprotected
//! tensors by policy while growing one contiguous hole (a fragmentation-aware
//! victim choice), so the allocator can place the request.

use super::allocator::Seg;
use super::engine::Sim;
use crate::graph::TensorId;

/// Where room was made: the offset given to the request, when the last
/// write-back of an evicted tensor ends, and how many evictions only
/// fragmentation caused.
pub(crate) struct Room {
    pub offset: u64,
    pub writeback_end: u64,
    pub fragmentation_evictions: usize,
}

impl Sim<'_> {
    /// Finds room for `size` bytes for `for_tensor`, evicting unprotected
    /// tensors by policy and growing one contiguous hole. `None` when even
    /// evicting everything allowed cannot make a hole that large.
    pub(crate) fn make_room(
        &mut self,
        size: u64,
        step: usize,
        now_ns: u64,
        for_tensor: TensorId,
    ) -> Option<Room> {
        if let Some(offset) = self.pool_mut(for_tensor).alloc(for_tensor, size) {
            return Some(Room {
                offset,
                writeback_end: now_ns,
                fragmentation_evictions: 0,
            });
        }
        if self.ideal || size > self.pool(for_tensor).capacity() {
            return None;
        }
        let fragmentation = self.pool(for_tensor).free_bytes() >= size;
        // Victims come from the request's own pool.
        let segs = self
            .pool(for_tensor)
            .segments(|t| self.protected[t] || self.pinned[t]);
        let (region, totals) = regions(&segs);
        let (lo, hi) = self.grow_hole(&segs, &region, &totals, size, step)?;
        let reason = if fragmentation {
            "fragmentation"
        } else {
            "capacity"
        };
        let mut writeback_end = now_ns;
        let mut evicted = 0;
        for s in &segs[lo..=hi] {
            if let Seg::Block(t) = s.2 {
                writeback_end = writeback_end.max(self.evict(t, now_ns, step, reason));
                evicted += 1;
            }
        }
        let offset = self.pool_mut(for_tensor).alloc(for_tensor, size)?;
        Some(Room {
            offset,
            writeback_end,
            fragmentation_evictions: if fragmentation { evicted } else { 0 },
        })
    }

    /// The stretch `[lo, hi]` of segments to clear: seeded at the block the
    /// policy would evict first (among regions large enough), then grown
    /// towards the neighbour the policy prefers, holes absorbed for free.
    fn grow_hole(
        &self,
        segs: &[(u64, u64, Seg)],
        region: &[usize],
        totals: &[u64],
        size: u64,
        step: usize,
    ) -> Option<(usize, usize)> {
        let mut cands: Vec<(usize, f64, u64)> = segs
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s.2 {
                Seg::Block(t) if totals[region[i]] >= size => Some((i, self.score(t, step), s.1)),
                _ => None,
            })
            .collect();
        cands.sort_by(|a, b| {
            b.1.partial_cmp(&a.1)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(b.2.cmp(&a.2))
                .then(a.0.cmp(&b.0))
        });
        let &(seed, _, _) = cands.first()?;
        let r = region[seed];
        let in_region = |i: usize| region[i] == r;
        let is_hole = |i: usize| matches!(segs[i].2, Seg::Hole);
        let (mut lo, mut hi) = (seed, seed);
        let mut bytes = segs[seed].1;
        let absorb_holes = |lo: &mut usize, hi: &mut usize, bytes: &mut u64| {
            while *lo > 0 && in_region(*lo - 1) && is_hole(*lo - 1) {
                *lo -= 1;
                *bytes += segs[*lo].1;
            }
            while *hi + 1 < segs.len() && in_region(*hi + 1) && is_hole(*hi + 1) {
                *hi += 1;
                *bytes += segs[*hi].1;
            }
        };
        absorb_holes(&mut lo, &mut hi, &mut bytes);
        let score_of = |i: usize| match segs[i].2 {
            Seg::Block(t) => self.score(t, step),
            _ => f64::INFINITY,
        };
        while bytes < size {
            let left = (lo > 0 && in_region(lo - 1)).then(|| lo - 1);
            let right = (hi + 1 < segs.len() && in_region(hi + 1)).then(|| hi + 1);
            let pick_left = match (left, right) {
                (Some(l), Some(rr)) => score_of(l) >= score_of(rr),
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            if pick_left {
                lo -= 1;
                bytes += segs[lo].1;
            } else {
                hi += 1;
                bytes += segs[hi].1;
            }
            absorb_holes(&mut lo, &mut hi, &mut bytes);
        }
        (bytes >= size).then_some((lo, hi))
    }
}

/// Regions between barriers (per segment, its region or `usize::MAX` for a
/// barrier) and the bytes each region could free.
fn regions(segs: &[(u64, u64, Seg)]) -> (Vec<usize>, Vec<u64>) {
    let mut region = vec![usize::MAX; segs.len()];
    let mut totals: Vec<u64> = Vec::new();
    for (i, s) in segs.iter().enumerate() {
        if matches!(s.2, Seg::Barrier) {
            continue;
        }
        if i == 0 || region[i - 1] == usize::MAX {
            totals.push(0);
        }
        let r = totals.len() - 1;
        region[i] = r;
        totals[r] += s.1;
    }
    (region, totals)
}

//! Problem 2: offsets for every buffer under the capacities, inserting
//! SPILL_OUT / SPILL_IN pairs where a buffer must leave, with low extra DDR
//! traffic.
//!
//! One pass over the schedule with a best-fit address allocator per pool.
//! When an ALLOC (or a SPILL_IN) finds no hole, it evicts the cheapest
//! contiguous window of resident buffers: each victim costs its traffic
//! (Size for a COPY_IN-filled buffer, else 2·Size) divided by how far away
//! its next use is (Belady, weighted), and buffers the next op needs are
//! never victims. A victim comes back (SPILL_IN, possibly at a new offset)
//! right before its next user. L0 buffers hold one buffer at a time (the
//! schedule guarantees it) and sit at offset 0.

use super::model::{BufType, Kernel, NodeKind};
use super::Solution;
use crate::cost::AllocatorFit;
use crate::sim::allocator::{cheapest_window, Allocator, Seg};
use crate::{Error, Result};

/// How the allocator chooses holes and victims (searched by `npu solve`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AllocOptions {
    /// Victim cost = traffic / (distance to next use + 1)^exponent: 1 is
    /// weighted Belady; larger trusts distance more than size.
    pub distance_exponent: f64,
    /// Place in the region freed longest ago (fewer address-reuse waits,
    /// so DMA can start earlier) instead of the best-fitting hole.
    pub oldest_hole: bool,
}

impl Default for AllocOptions {
    fn default() -> Self {
        AllocOptions {
            distance_exponent: 1.0,
            oldest_hole: false,
        }
    }
}

/// One pool: the shared offset allocator (best fit, byte alignment), and
/// when each byte was last released (schedule position) for the
/// oldest-hole choice.
#[derive(Debug, Clone)]
struct Pool {
    space: Allocator,
    freed_at: Vec<usize>,
}

impl Pool {
    fn new(cap: u64) -> Pool {
        Pool {
            space: Allocator::new(cap, 1, AllocatorFit::BestFit),
            freed_at: vec![0; cap as usize],
        }
    }
    /// A hole for `size`: best fit, or the placement (either end of a
    /// hole) whose bytes were released longest ago.
    fn find(&self, size: u64, oldest: bool) -> Option<u64> {
        if !oldest {
            return self.space.find_fit(size);
        }
        let last_free = |at: u64| -> usize {
            self.freed_at[at as usize..(at + size) as usize]
                .iter()
                .copied()
                .max()
                .unwrap_or(0)
        };
        self.space
            .holes()
            .filter(|&(_, s)| s >= size)
            .flat_map(|(o, s)| [o, o + s - size])
            .min_by_key(|&at| (last_free(at), at))
    }
    fn place(&mut self, off: u64, size: u64, b: usize) -> Result<()> {
        if self.space.alloc_at(b, off, size) {
            Ok(())
        } else {
            Err(Error::Config(format!(
                "npu allocate: internal error, [{off}, {}) is not free",
                off + size
            )))
        }
    }
    fn remove(&mut self, off: u64, now: usize) {
        if let Some(b) = self.space.free(off) {
            for x in &mut self.freed_at[off as usize..(off + b.size) as usize] {
                *x = now;
            }
        }
    }
}

/// Where a buffer is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    NotYet,
    Resident(u64),
    Out,
    Freed,
}

/// The allocator's running state while it walks the schedule.
struct Work {
    pools: Vec<Pool>,
    state: Vec<State>,
    out_order: Vec<usize>,
    spills: Vec<(u32, u64)>,
    /// Per buffer: the index into `spills` of its pending SPILL_IN.
    pending_in: Vec<Option<usize>>,
    extra: u64,
}

/// The allocator's result: the solution plus its extra traffic.
#[derive(Debug, Clone)]
pub struct Allocation {
    pub solution: Solution,
    pub extra_traffic: u64,
}

/// Traffic of spilling buffer `b` once.
pub fn spill_traffic(k: &Kernel, b: usize) -> u64 {
    let buf = &k.buffers[b];
    if buf.copy_in {
        buf.size
    } else {
        2 * buf.size
    }
}

/// Allocates `order` (a valid problem-1 schedule of the original nodes).
pub fn allocate(k: &Kernel, order: &[usize]) -> Result<Allocation> {
    allocate_with(k, order, AllocOptions::default())
}

/// [`allocate`] with explicit hole and victim choices.
pub fn allocate_with(k: &Kernel, order: &[usize], opts: AllocOptions) -> Result<Allocation> {
    let n = k.len();
    let mut pos = vec![usize::MAX; n];
    for (p, &i) in order.iter().enumerate() {
        if i >= n || pos[i] != usize::MAX {
            return Err(Error::Config(format!(
                "npu allocate: node {i} is not a node of the case or appears twice"
            )));
        }
        pos[i] = p;
    }
    if let Some(i) = (0..n).find(|&i| pos[i] == usize::MAX) {
        return Err(Error::Config(format!(
            "npu allocate: the schedule misses node {i}"
        )));
    }
    // Use positions of each buffer, sorted.
    let uses: Vec<Vec<usize>> = k
        .buffers
        .iter()
        .map(|b| {
            let mut v: Vec<usize> = b.users.iter().map(|&u| pos[u]).collect();
            v.sort_unstable();
            v
        })
        .collect();
    let next_use = |b: usize, now: usize| -> Option<usize> {
        let u = &uses[b];
        u.get(u.partition_point(|&p| p < now)).copied()
    };
    let mut w = Work {
        pools: BufType::ALL
            .iter()
            .map(|t| Pool::new(t.capacity()))
            .collect(),
        state: vec![State::NotYet; k.buffers.len()],
        out_order: Vec::with_capacity(order.len() + 64),
        spills: Vec::new(),
        pending_in: vec![None; k.buffers.len()],
        extra: 0,
    };
    let mut first_offset: Vec<Option<u64>> = vec![None; k.buffers.len()];
    let bidx = |buf: &u32| k.buf_index.get(buf).copied();

    // Makes room for `size` in pool `ty` at schedule position `now`,
    // evicting (emitting SPILL_OUTs) as needed; returns the offset.
    #[allow(clippy::too_many_arguments)]
    fn room(
        k: &Kernel,
        w: &mut Work,
        ty: BufType,
        size: u64,
        now: usize,
        protect: &[usize],
        next_use: &dyn Fn(usize, usize) -> Option<usize>,
        opts: AllocOptions,
    ) -> Result<u64> {
        let p = ty.index();
        if let Some(off) = w.pools[p].find(size, opts.oldest_hole) {
            return Ok(off);
        }
        if ty.is_l0() {
            return Err(Error::Config(format!(
                "npu allocate: {} is full at position {now} (the schedule breaks the one-buffer rule)",
                ty.as_str()
            )));
        }
        // The cheapest window of at least `size` bytes, clear of what the
        // op needs (the victim choice; the segments are the shared
        // allocator's view of the pool).
        let segs = w.pools[p].space.segments(|b| protect.contains(&b));
        let cost = |b: usize| -> f64 {
            let traffic = spill_traffic(k, b) as f64;
            match next_use(b, now) {
                // Dead but not yet freed: evicting still needs a SPILL_IN before FREE.
                None => traffic * 4.0,
                Some(u) => traffic / ((u - now) as f64 + 1.0).powf(opts.distance_exponent),
            }
        };
        let Some((lo, hi)) = cheapest_window(&segs, size, cost) else {
            return Err(Error::Config(format!(
                "npu allocate: no window of {size} in {} at position {now} without evicting a buffer the op needs",
                ty.as_str()
            )));
        };
        for s in &segs[lo..=hi] {
            if let Seg::Block(b) = s.2 {
                let State::Resident(off) = w.state[b] else {
                    continue;
                };
                w.pools[p].remove(off, now);
                w.state[b] = State::Out;
                // SPILL_OUT id: n + 2k; its SPILL_IN (n + 2k + 1) comes later.
                let k_idx = w.spills.len();
                w.spills.push((k.buffers[b].id, 0));
                w.pending_in[b] = Some(k_idx);
                w.out_order.push(k.len() + 2 * k_idx);
                w.extra += spill_traffic(k, b);
            }
        }
        Ok(segs[lo].0)
    }

    // Brings spilled-out buffer `b` back (SPILL_IN, possibly at a new offset).
    let bring_back = |w: &mut Work, b: usize, now: usize, protect: &[usize]| -> Result<()> {
        let (size, ty) = (k.buffers[b].size, k.buffers[b].ty);
        let off = room(k, w, ty, size, now, protect, &next_use, opts)?;
        w.pools[ty.index()].place(off, size, b)?;
        w.state[b] = State::Resident(off);
        if let Some(s) = w.pending_in[b].take() {
            w.spills[s].1 = off;
            w.out_order.push(k.len() + 2 * s + 1);
        }
        Ok(())
    };

    for (now, &i) in order.iter().enumerate() {
        match &k.nodes[i].kind {
            NodeKind::Alloc { buf, size, ty } => {
                let b = bidx(buf).unwrap_or(0);
                // Protect what the op this ALLOC feeds will use.
                let feeds: Vec<usize> = k.succ[i]
                    .iter()
                    .filter_map(|&s| match &k.nodes[s].kind {
                        NodeKind::Op { bufs, .. } => {
                            Some(bufs.iter().filter_map(bidx).collect::<Vec<_>>())
                        }
                        _ => None,
                    })
                    .flatten()
                    .collect();
                let off = room(k, &mut w, *ty, *size, now, &feeds, &next_use, opts)?;
                w.pools[ty.index()].place(off, *size, b)?;
                w.state[b] = State::Resident(off);
                first_offset[b] = Some(off);
                w.out_order.push(i);
            }
            NodeKind::Op { bufs, .. } => {
                let mine: Vec<usize> = bufs.iter().filter_map(bidx).collect();
                for &b in &mine {
                    match w.state[b] {
                        State::Resident(_) => {}
                        State::Out => bring_back(&mut w, b, now, &mine)?,
                        State::NotYet | State::Freed => {
                            return Err(Error::Config(format!(
                                "npu allocate: node {i} ({}) uses buffer {} outside its ALLOC..FREE",
                                k.nodes[i].op, k.buffers[b].id
                            )));
                        }
                    }
                }
                w.out_order.push(i);
            }
            NodeKind::Free { buf, .. } => {
                let b = bidx(buf).unwrap_or(0);
                if w.state[b] == State::Out {
                    // Spilled with no use left: it must come back before FREE.
                    bring_back(&mut w, b, now, &[b])?;
                }
                if let State::Resident(off) = w.state[b] {
                    w.pools[k.buffers[b].ty.index()].remove(off, now);
                }
                w.state[b] = State::Freed;
                w.out_order.push(i);
            }
        }
    }
    let offsets = k
        .buffers
        .iter()
        .zip(&first_offset)
        .map(|(b, o)| (b.id, o.unwrap_or(0)))
        .collect();
    Ok(Allocation {
        solution: Solution {
            order: w.out_order,
            offsets,
            spills: w.spills,
        },
        extra_traffic: w.extra,
    })
}

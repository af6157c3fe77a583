//! An offset-based on-chip allocator (first-fit or best-fit) so that
//! fragmentation is real: a request can fail while enough bytes are free.
//! Shared by the graph simulator and the NPU allocator: both see a full
//! pool as the same segments (holes, evictable blocks, barriers) and pick
//! the stretch to clear with their own victim choice (the simulator grows
//! a hole from the policy's first victim; the NPU allocator takes the
//! cheapest window, `cheapest_window`).

use crate::cost::AllocatorFit;
use crate::graph::TensorId;
use std::collections::BTreeMap;

/// One placed block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub tensor: TensorId,
    pub size: u64,
}

/// One stretch of a pool's address space, as a victim search sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seg {
    Hole,
    /// An evictable block.
    Block(TensorId),
    /// A block that must stay (an operand of the running op, a pinned tensor).
    Barrier,
}

/// A pool's address space: holes and blocks, both keyed by offset.
#[derive(Debug, Clone)]
pub struct Allocator {
    capacity: u64,
    alignment: u64,
    fit: AllocatorFit,
    holes: BTreeMap<u64, u64>,
    blocks: BTreeMap<u64, Block>,
    used: u64,
    high_water: u64,
}

impl Allocator {
    pub fn new(capacity: u64, alignment: u64, fit: AllocatorFit) -> Self {
        let alignment = alignment.max(1);
        let capacity = capacity - capacity % alignment;
        let mut holes = BTreeMap::new();
        if capacity > 0 {
            holes.insert(0, capacity);
        }
        Allocator {
            capacity,
            alignment,
            fit,
            holes,
            blocks: BTreeMap::new(),
            used: 0,
            high_water: 0,
        }
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }
    pub fn used(&self) -> u64 {
        self.used
    }
    pub fn free_bytes(&self) -> u64 {
        self.capacity - self.used
    }
    /// Size as allocated (rounded up to the alignment; zero-byte tensors take one unit
    /// so every resident tensor has an address).
    pub fn aligned(&self, bytes: u64) -> u64 {
        bytes.max(1).div_ceil(self.alignment) * self.alignment
    }
    /// The highest address ever used (end of the topmost block).
    pub fn high_water(&self) -> u64 {
        self.high_water
    }
    pub fn largest_hole(&self) -> u64 {
        self.holes.values().copied().max().unwrap_or(0)
    }

    /// Where a request of `size` (already aligned) would go, if anywhere.
    pub fn find_fit(&self, size: u64) -> Option<u64> {
        match self.fit {
            AllocatorFit::FirstFit => self.holes.iter().find(|(_, &s)| s >= size).map(|(&o, _)| o),
            AllocatorFit::BestFit => self
                .holes
                .iter()
                .filter(|(_, &s)| s >= size)
                .min_by_key(|(&o, &s)| (s, o))
                .map(|(&o, _)| o),
        }
    }

    /// Places `tensor` (size already aligned); `None` if no hole fits.
    pub fn alloc(&mut self, tensor: TensorId, size: u64) -> Option<u64> {
        let off = self.find_fit(size)?;
        let hole = self.holes.remove(&off)?;
        if hole > size {
            self.holes.insert(off + size, hole - size);
        }
        self.blocks.insert(off, Block { tensor, size });
        self.used += size;
        self.high_water = self.high_water.max(off + size);
        Some(off)
    }

    /// Places `tensor` at exactly `offset` (size already aligned); false
    /// unless that whole range is free.
    pub fn alloc_at(&mut self, tensor: TensorId, offset: u64, size: u64) -> bool {
        let Some((&ho, &hs)) = self.holes.range(..=offset).next_back() else {
            return false;
        };
        if offset + size > ho + hs {
            return false;
        }
        self.holes.remove(&ho);
        if offset > ho {
            self.holes.insert(ho, offset - ho);
        }
        if ho + hs > offset + size {
            self.holes.insert(offset + size, ho + hs - offset - size);
        }
        self.blocks.insert(offset, Block { tensor, size });
        self.used += size;
        self.high_water = self.high_water.max(offset + size);
        true
    }

    /// The blocks overlapping `[offset, offset + size)`, by offset.
    pub fn occupants(&self, offset: u64, size: u64) -> Vec<(u64, Block)> {
        let mut v: Vec<(u64, Block)> = self
            .blocks
            .range(..offset + size)
            .rev()
            .take_while(|(&o, b)| o + b.size > offset)
            .map(|(&o, &b)| (o, b))
            .collect();
        // A block starting below `offset` may end past it while an earlier
        // one does not: blocks never overlap, so only the first can.
        v.reverse();
        v
    }

    /// Places `tensor` in free space clear of the `reserved` ranges
    /// (`(offset, size)`, kept for others); lowest such offset.
    pub fn alloc_avoiding(
        &mut self,
        tensor: TensorId,
        size: u64,
        reserved: &[(u64, u64)],
    ) -> Option<u64> {
        let clear = |o: u64| reserved.iter().all(|&(r, rs)| o + size <= r || r + rs <= o);
        let found = self.holes.iter().find_map(|(&ho, &hs)| {
            std::iter::once(ho)
                .chain(reserved.iter().map(|&(r, rs)| self.aligned(r + rs)))
                .filter(|&o| o >= ho && o + size <= ho + hs)
                .filter(|&o| clear(o))
                .min()
        })?;
        self.alloc_at(tensor, found, size).then_some(found)
    }

    /// Frees the block at `offset`, merging neighbouring holes.
    pub fn free(&mut self, offset: u64) -> Option<Block> {
        let b = self.blocks.remove(&offset)?;
        self.used -= b.size;
        let mut start = offset;
        let mut end = offset + b.size;
        if let Some((&ho, &hs)) = self.holes.range(..offset).next_back() {
            if ho + hs == offset {
                self.holes.remove(&ho);
                start = ho;
            }
        }
        if let Some(&hs) = self.holes.get(&end) {
            self.holes.remove(&end);
            end += hs;
        }
        self.holes.insert(start, end - start);
        Some(b)
    }

    /// Blocks in address order.
    pub fn blocks(&self) -> impl Iterator<Item = (u64, Block)> + '_ {
        self.blocks.iter().map(|(&o, &b)| (o, b))
    }

    /// Holes in address order.
    pub fn holes(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.holes.iter().map(|(&o, &s)| (o, s))
    }

    /// The whole pool in address order as `(offset, size, segment)`:
    /// holes, and blocks that are barriers where `stays` says so.
    pub fn segments(&self, stays: impl Fn(TensorId) -> bool) -> Vec<(u64, u64, Seg)> {
        let mut segs: Vec<(u64, u64, Seg)> = self
            .holes()
            .map(|(o, s)| (o, s, Seg::Hole))
            .chain(self.blocks().map(|(o, b)| {
                let seg = if stays(b.tensor) {
                    Seg::Barrier
                } else {
                    Seg::Block(b.tensor)
                };
                (o, b.size, seg)
            }))
            .collect();
        // Only a zero-byte block shares an offset with a hole (at the
        // hole's start): the block comes first.
        segs.sort_by_key(|&(o, _, seg)| (o, seg == Seg::Hole));
        segs
    }
}

/// The stretch `[lo, hi]` of consecutive segments spanning at least `size`
/// bytes, with no barrier inside, whose blocks cost least in sum (`cost` of
/// each evicted block; holes are free); the lowest such stretch on ties.
pub fn cheapest_window(
    segs: &[(u64, u64, Seg)],
    size: u64,
    cost: impl Fn(TensorId) -> f64,
) -> Option<(usize, usize)> {
    let mut best: Option<(f64, usize, usize)> = None;
    for lo in 0..segs.len() {
        let (mut c, mut hi) = (0.0, lo);
        let mut ok = true;
        while hi < segs.len() {
            match segs[hi].2 {
                Seg::Barrier => {
                    ok = false;
                    break;
                }
                Seg::Block(t) => c += cost(t),
                Seg::Hole => {}
            }
            if segs[hi].0 + segs[hi].1 - segs[lo].0 >= size {
                break;
            }
            hi += 1;
        }
        if !ok || hi >= segs.len() {
            continue;
        }
        if best.is_none_or(|(bc, _, _)| c < bc) {
            best = Some((c, lo, hi));
        }
    }
    best.map(|(_, lo, hi)| (lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_and_merge() {
        let mut a = Allocator::new(1024, 32, AllocatorFit::FirstFit);
        let x = a.alloc(0, 256).unwrap();
        let y = a.alloc(1, 256).unwrap();
        let z = a.alloc(2, 256).unwrap();
        assert_eq!((x, y, z), (0, 256, 512));
        a.free(y);
        assert_eq!(a.largest_hole(), 256);
        assert_eq!(a.free_bytes(), 512);
        // 512 bytes free, in two holes of 256: a 288-byte request fails.
        assert_eq!(a.alloc(3, 288), None);
        a.free(z);
        assert_eq!(a.alloc(3, 288), Some(256));
    }

    #[test]
    fn fragmentation_is_real() {
        let mut a = Allocator::new(1024, 32, AllocatorFit::FirstFit);
        for i in 0..4 {
            a.alloc(i, 256).unwrap();
        }
        a.free(0);
        a.free(512);
        assert_eq!(a.free_bytes(), 512);
        assert_eq!(a.alloc(9, 512), None);
        a.free(256);
        assert_eq!(a.alloc(9, 768), Some(0));
    }

    #[test]
    fn best_fit_picks_tightest() {
        let mut a = Allocator::new(1024, 32, AllocatorFit::BestFit);
        a.alloc(0, 128).unwrap();
        a.alloc(1, 64).unwrap();
        a.alloc(2, 512).unwrap();
        a.free(0); // hole 0..128
                   // holes: [0,128) and [704,1024) (320)
        assert_eq!(a.alloc(3, 96), Some(0));
    }

    #[test]
    fn alloc_at_splits_a_hole_and_refuses_taken_ranges() {
        let mut a = Allocator::new(1024, 32, AllocatorFit::FirstFit);
        assert!(a.alloc_at(1, 256, 128));
        assert!(!a.alloc_at(2, 320, 64), "overlaps block 1");
        assert!(!a.alloc_at(2, 960, 128), "past the end");
        assert_eq!(a.holes().collect::<Vec<_>>(), vec![(0, 256), (384, 640)]);
        assert_eq!(a.occupants(300, 200).len(), 1);
        assert_eq!(a.occupants(0, 256).len(), 0);
        assert_eq!(a.free(256).map(|b| b.tensor), Some(1));
        assert_eq!(a.holes().collect::<Vec<_>>(), vec![(0, 1024)]);
    }

    #[test]
    fn alloc_avoiding_keeps_clear_of_reserved_ranges() {
        let mut a = Allocator::new(1024, 32, AllocatorFit::FirstFit);
        let off = a.alloc_avoiding(1, 64, &[(0, 512)]);
        assert_eq!(off, Some(512));
        assert_eq!(a.alloc_avoiding(2, 512, &[(0, 512)]), None);
    }

    #[test]
    fn segments_and_the_cheapest_window() {
        let mut a = Allocator::new(1024, 32, AllocatorFit::FirstFit);
        for t in 0..4 {
            a.alloc(t, 256).unwrap();
        }
        a.free(256); // hole at 256..512
        let segs = a.segments(|t| t == 3);
        let kinds: Vec<Seg> = segs.iter().map(|s| s.2).collect();
        assert_eq!(
            kinds,
            vec![Seg::Block(0), Seg::Hole, Seg::Block(2), Seg::Barrier]
        );
        // 512 bytes: block 0 + the hole, or the hole + block 2; block 2 is
        // cheaper. The barrier is never part of a window.
        let cost = |t: usize| if t == 0 { 5.0 } else { 1.0 };
        assert_eq!(cheapest_window(&segs, 512, cost), Some((1, 2)));
        assert_eq!(cheapest_window(&segs, 256, cost), Some((1, 1)));
        assert_eq!(cheapest_window(&segs, 1024, cost), None);
    }
}

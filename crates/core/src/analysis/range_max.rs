//! The largest value of a column over any range of it, in O(log n): the
//! maxima of blocks of 64 values, then of pairs of those, and so on (a
//! 64th of the column, and as much again over all levels). The Overview's
//! step chart asked every step's value each frame for its columns' maxima
//! (6 ms a frame for 3.75M steps); it asks this instead, as does the
//! resident-bytes profile of a trace without a `live_bytes` counter (a
//! segment tree there held two copies of the column).

/// Values per block of the first level.
const BLOCK: usize = 64;

/// Block maxima of one column (the column itself is the caller's).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RangeMax {
    /// `levels[0][i]`: the largest of values `64 i .. 64 (i + 1)`;
    /// `levels[k + 1][i]`: the larger of `levels[k][2 i]` and `[2 i + 1]`.
    levels: Vec<Vec<u64>>,
}

impl RangeMax {
    pub fn build(v: &[u64]) -> RangeMax {
        let mut levels = Vec::new();
        let mut cur: Vec<u64> = v
            .chunks(BLOCK)
            .map(|c| c.iter().copied().max().unwrap_or(0))
            .collect();
        while cur.len() > 1 {
            let next = cur
                .chunks(2)
                .map(|p| p.iter().copied().max().unwrap_or(0))
                .collect();
            levels.push(std::mem::replace(&mut cur, next));
        }
        levels.push(cur);
        RangeMax { levels }
    }

    /// The largest of `v[a..b]` (`v` the column this was built from), or
    /// `None` for an empty range.
    pub fn max(&self, v: &[u64], a: usize, b: usize) -> Option<u64> {
        let b = b.min(v.len());
        if a >= b {
            return None;
        }
        let scan = |r: std::ops::Range<usize>| v[r].iter().copied().max();
        let (lo, hi) = (a.div_ceil(BLOCK), b / BLOCK);
        if lo >= hi || self.levels.is_empty() {
            return scan(a..b);
        }
        let mut m = scan(a..lo * BLOCK)
            .unwrap_or(0)
            .max(scan(hi * BLOCK..b).unwrap_or(0));
        // Whole blocks lo..hi, bottom up: an odd end is taken at its level.
        let (mut lo, mut hi) = (lo, hi);
        for level in &self.levels {
            if lo >= hi {
                break;
            }
            if lo % 2 == 1 {
                m = m.max(level[lo]);
                lo += 1;
            }
            if hi % 2 == 1 {
                hi -= 1;
                m = m.max(level[hi]);
            }
            lo /= 2;
            hi /= 2;
        }
        Some(m)
    }

    /// The largest value of the whole column.
    pub fn peak(&self) -> Option<u64> {
        self.levels.last().and_then(|l| l.first().copied())
    }

    pub fn heap_bytes(&self) -> usize {
        self.levels.iter().map(|l| l.capacity() * 8).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any range's maximum is the one a scan finds.
        #[test]
        fn a_range_maximum_is_what_a_scan_finds(
            v in prop::collection::vec(0u64..1_000_000, 0..2_000),
            ranges in prop::collection::vec((0usize..2_100, 0usize..2_100), 1..40),
        ) {
            let m = RangeMax::build(&v);
            prop_assert_eq!(m.peak(), v.iter().copied().max());
            for (a, b) in ranges {
                let want = v.get(a..b.min(v.len())).and_then(|s| s.iter().copied().max());
                prop_assert_eq!(m.max(&v, a, b), want, "{}..{} of {}", a, b, v.len());
            }
        }
    }

    #[test]
    fn long_ranges_over_many_levels() {
        let v: Vec<u64> = (0..100_000u64).map(|i| (i * 7919) % 100_003).collect();
        let m = RangeMax::build(&v);
        for (a, b) in [
            (0, 100_000),
            (63, 99_937),
            (5_000, 70_001),
            (64, 128),
            (65, 193),
        ] {
            assert_eq!(m.max(&v, a, b), v[a..b].iter().copied().max(), "{a}..{b}");
        }
        assert!(m.heap_bytes() < v.len() * 8 / 16);
    }
}

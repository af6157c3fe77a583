//! A `u64` column held in the narrowest width its values fit: most of a
//! trace's numbers are small (a pool or reason id is one of a handful, an
//! event's size rarely passes 4 GB, a short run's times fit in 32 bits),
//! so 8 bytes each wasted half or more of every event. The column widens
//! on the push that needs it, so nothing is refused and no value is ever
//! cut; reading a value is one match on the width (the same branch for a
//! whole loop) and a widening cast.

// `each!` expands one body for every width, `u64` among them, where the
// widening conversion is the identity.
#![allow(clippy::useless_conversion)]

use super::{Backing, Slab};

/// Values of one column, as bytes, halves, words or double words.
#[derive(Debug, Clone)]
pub(crate) enum Narrow {
    U8(Slab<u8>),
    U16(Slab<u16>),
    U32(Slab<u32>),
    U64(Slab<u64>),
}

/// `$e` with `$v` bound to the column's vector, whatever its width.
macro_rules! each {
    ($s:expr, $v:ident => $e:expr) => {
        match $s {
            Narrow::U8($v) => $e,
            Narrow::U16($v) => $e,
            Narrow::U32($v) => $e,
            Narrow::U64($v) => $e,
        }
    };
}

impl Default for Narrow {
    fn default() -> Self {
        Narrow::U8(Slab::new())
    }
}

impl PartialEq for Narrow {
    /// The same values, whatever the widths.
    fn eq(&self, other: &Narrow) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

/// Bytes a value needs: 1, 2, 4 or 8.
#[inline]
fn width_of(v: u64) -> usize {
    match v {
        0..=0xff => 1,
        0x100..=0xffff => 2,
        0x1_0000..=0xffff_ffff => 4,
        _ => 8,
    }
}

impl Narrow {
    /// A column of `vals`, as narrow as their largest allows.
    #[cfg(test)]
    pub(crate) fn from_vec(vals: Vec<u64>) -> Narrow {
        let w = vals.iter().copied().max().map_or(1, width_of);
        match w {
            8 => Narrow::U64(vals.into()),
            _ => Narrow::of_width(w, vals.len(), vals.into_iter()),
        }
    }

    /// `n` zeros (in one byte each, until a value needs more).
    pub(crate) fn zeros(n: usize) -> Narrow {
        Narrow::U8(vec![0; n].into())
    }

    /// An empty column with room for `n` values of width `w`.
    fn empty(w: usize, n: usize) -> Narrow {
        match w {
            1 => Narrow::U8(Slab::with_capacity(n)),
            2 => Narrow::U16(Slab::with_capacity(n)),
            4 => Narrow::U32(Slab::with_capacity(n)),
            _ => Narrow::U64(Slab::with_capacity(n)),
        }
    }

    /// `vals` (each fitting `w` bytes) as a column of width `w`.
    fn of_width(w: usize, room: usize, vals: impl Iterator<Item = u64>) -> Narrow {
        let mut c = Narrow::empty(w, room);
        match &mut c {
            Narrow::U8(v) => v.extend(vals.map(|x| x as u8)),
            Narrow::U16(v) => v.extend(vals.map(|x| x as u16)),
            Narrow::U32(v) => v.extend(vals.map(|x| x as u32)),
            Narrow::U64(v) => v.extend(vals),
        }
        c
    }

    /// Bytes each value takes.
    #[inline]
    pub(crate) fn width(&self) -> usize {
        match self {
            Narrow::U8(_) => 1,
            Narrow::U16(_) => 2,
            Narrow::U32(_) => 4,
            Narrow::U64(_) => 8,
        }
    }

    /// Every value in at least `w` bytes, the room kept.
    #[inline]
    fn widen(&mut self, w: usize) {
        if w > self.width() {
            self.widen_to(w);
        }
    }

    #[cold]
    fn widen_to(&mut self, w: usize) {
        let room = self.capacity().max(self.len());
        *self = Narrow::of_width(w, room, self.iter());
    }

    #[inline]
    pub(crate) fn get(&self, i: usize) -> u64 {
        each!(self, v => u64::from(v[i]))
    }

    #[inline]
    pub(crate) fn push(&mut self, x: u64) {
        self.widen(width_of(x));
        match self {
            Narrow::U8(v) => v.push(x as u8),
            Narrow::U16(v) => v.push(x as u16),
            Narrow::U32(v) => v.push(x as u32),
            Narrow::U64(v) => v.push(x),
        }
    }

    pub(crate) fn set(&mut self, i: usize, x: u64) {
        self.widen(width_of(x));
        match self {
            Narrow::U8(v) => v[i] = x as u8,
            Narrow::U16(v) => v[i] = x as u16,
            Narrow::U32(v) => v[i] = x as u32,
            Narrow::U64(v) => v[i] = x,
        }
    }

    /// Inserts `x` at `i`, moving the values after it (rare: one row
    /// given a value in place).
    pub(crate) fn insert(&mut self, i: usize, x: u64) {
        self.widen(width_of(x));
        match self {
            Narrow::U8(v) => v.insert(i, x as u8),
            Narrow::U16(v) => v.insert(i, x as u16),
            Narrow::U32(v) => v.insert(i, x as u32),
            Narrow::U64(v) => v.insert(i, x),
        }
    }

    pub(crate) fn remove(&mut self, i: usize) {
        each!(self, v => { v.remove(i); })
    }

    pub(crate) fn len(&self) -> usize {
        each!(self, v => v.len())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn capacity(&self) -> usize {
        each!(self, v => v.capacity())
    }

    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = u64> + DoubleEndedIterator + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }

    pub(crate) fn max(&self) -> Option<u64> {
        each!(self, v => v.iter().max().map(|&x| u64::from(x)))
    }

    pub(crate) fn is_sorted(&self) -> bool {
        each!(self, v => v.is_sorted())
    }

    /// The first index whose value is not `pred` (as
    /// [`slice::partition_point`]; the column must be partitioned).
    pub(crate) fn partition_point(&self, pred: impl Fn(u64) -> bool) -> usize {
        each!(self, v => v.partition_point(|&x| pred(u64::from(x))))
    }

    /// Appends `other`'s values (widening to the wider of the two).
    pub(crate) fn append(&mut self, other: &Narrow) {
        self.widen(other.width());
        self.reserve_exact(other.len());
        match self {
            Narrow::U8(v) => v.extend(other.iter().map(|x| x as u8)),
            Narrow::U16(v) => v.extend(other.iter().map(|x| x as u16)),
            Narrow::U32(v) => v.extend(other.iter().map(|x| x as u32)),
            Narrow::U64(v) => v.extend(other.iter()),
        }
    }

    /// Every value through `f` (the column narrowed again afterwards only
    /// by [`Narrow::from_vec`]; this keeps the width unless `f` needs more).
    pub(crate) fn map(&mut self, f: impl Fn(u64) -> u64) {
        let w = self
            .iter()
            .map(&f)
            .max()
            .map_or(1, width_of)
            .max(self.width());
        let room = self.capacity();
        *self = Narrow::of_width(w, room, self.iter().map(f));
    }

    /// The values at `order`, in that order.
    pub(crate) fn gather(&self, order: &[u32]) -> Narrow {
        let vals = order.iter().map(|&i| self.get(i as usize));
        Narrow::of_width(self.width(), order.len(), vals)
    }

    pub(crate) fn truncate(&mut self, n: usize) {
        each!(self, v => v.truncate(n))
    }

    pub(crate) fn reserve_exact(&mut self, n: usize) {
        each!(self, v => v.reserve_exact(n))
    }

    pub(crate) fn shrink_to_fit(&mut self) {
        each!(self, v => v.shrink_to_fit())
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.capacity() * self.width()
    }

    /// The values as little-endian bytes, as wide as they are held.
    #[cfg(test)]
    pub(crate) fn le_bytes(&self) -> impl Iterator<Item = u8> + '_ {
        let w = self.width();
        self.iter()
            .flat_map(move |x| x.to_le_bytes().into_iter().take(w))
    }

    /// A column of width `w` from its little-endian bytes; `None` when the
    /// width is not 1, 2, 4 or 8 or the bytes are not a whole number of
    /// values.
    /// [`Narrow::from_le_bytes`] read in place from `map` (`b` lies in
    /// it) when it can be, else copied.
    pub(crate) fn from_mapped(w: usize, b: &[u8], map: Option<&Backing>) -> Option<Narrow> {
        let Some(map) = map else {
            return Narrow::from_le_bytes(w, b);
        };
        let mapped = match w {
            1 => Slab::mapped(map, b).map(Narrow::U8),
            2 => Slab::mapped(map, b).map(Narrow::U16),
            4 => Slab::mapped(map, b).map(Narrow::U32),
            8 => Slab::mapped(map, b).map(Narrow::U64),
            _ => None,
        };
        mapped.or_else(|| Narrow::from_le_bytes(w, b))
    }

    pub(crate) fn from_le_bytes(w: usize, b: &[u8]) -> Option<Narrow> {
        if !matches!(w, 1 | 2 | 4 | 8) || !b.len().is_multiple_of(w) {
            return None;
        }
        // One typed loop per width (a copy the compiler vectorises: the
        // cache reads a 10M-event trace's columns this way).
        Some(match w {
            1 => Narrow::U8(b.to_vec().into()),
            2 => Narrow::U16(
                b.chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .collect(),
            ),
            4 => Narrow::U32(
                b.chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            ),
            _ => Narrow::U64(
                b.chunks_exact(8)
                    .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                    .collect(),
            ),
        })
    }
}

impl FromIterator<u64> for Narrow {
    fn from_iter<I: IntoIterator<Item = u64>>(it: I) -> Narrow {
        let mut c = Narrow::default();
        for x in it {
            c.push(x);
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn widens_on_the_push_that_needs_it() {
        let mut c = Narrow::default();
        c.push(3);
        assert_eq!(c.width(), 1);
        c.push(70_000);
        assert_eq!(c.width(), 4);
        c.push(u64::MAX);
        assert_eq!(c.width(), 8);
        assert_eq!(c.iter().collect::<Vec<_>>(), vec![3, 70_000, u64::MAX]);
        c.set(0, 300);
        assert_eq!(c.get(0), 300);
    }

    proptest! {
        /// Whatever the values, the column gives them back, through every
        /// operation and through its bytes.
        #[test]
        fn holds_every_value(
            a in proptest::collection::vec(any::<u64>().prop_map(|x| x >> (x % 64)), 0..200),
            b in proptest::collection::vec(0u64..1000, 0..50),
        ) {
            let mut c: Narrow = a.iter().copied().collect();
            prop_assert_eq!(c.iter().collect::<Vec<_>>(), a.clone());
            prop_assert_eq!(Narrow::from_vec(a.clone()), c.clone());
            let back = Narrow::from_le_bytes(c.width(), &c.le_bytes().collect::<Vec<_>>());
            prop_assert_eq!(back.as_ref(), Some(&c));
            c.append(&b.iter().copied().collect());
            let mut all = a.clone();
            all.extend(&b);
            prop_assert_eq!(c.iter().collect::<Vec<_>>(), all.clone());
            let order: Vec<u32> = (0..all.len() as u32).rev().collect();
            let rev: Vec<u64> = all.iter().rev().copied().collect();
            prop_assert_eq!(c.gather(&order).iter().collect::<Vec<_>>(), rev);
            c.map(|x| x / 2);
            prop_assert_eq!(c.iter().collect::<Vec<_>>(), all.iter().map(|x| x / 2).collect::<Vec<_>>());
            c.truncate(a.len());
            prop_assert_eq!(c.len(), a.len());
        }
    }
}

//! A column's values either owned on the heap or read in place from a
//! mapped file: the binary trace cache hands its columns out as they lie in
//! the mapping instead of copying them (a 10M-event entry is 1.2 GB; the
//! copy, and the kernel zeroing every fresh heap page for it, was most of
//! a second open's time). Mapped pages are the file's: clean, shared with
//! the page cache, and given back under memory pressure without swap,
//! which an edge board's heap is not.
//!
//! Reading is a slice either way. Changing a mapped column copies it to
//! the heap first (copy on write): a trace read from the cache and then
//! edited behaves as one read from its JSON.

use std::sync::Arc;

/// The integer types a column may be read in place as: every bit pattern
/// is a value, and the file stores them little-endian, as they are held
/// on the targets that map (others copy).
pub(crate) trait Plain:
    zerocopy::FromBytes + zerocopy::Immutable + zerocopy::KnownLayout + Copy + 'static
{
    /// The value in `c`'s little-endian bytes (`size_of::<Self>()` of
    /// them): the copy where a column cannot be read in place.
    fn from_le(c: &[u8]) -> Self;
}

macro_rules! plain {
    ($($t:ty),*) => {$(
        impl Plain for $t {
            #[inline]
            fn from_le(c: &[u8]) -> $t {
                let mut b = [0u8; std::mem::size_of::<$t>()];
                b.copy_from_slice(c);
                <$t>::from_le_bytes(b)
            }
        }
    )*};
}
plain!(u8, u16, u32, u64);
// Ids are stored in 8 bytes: read in place only where `usize` is as wide.
#[cfg(target_pointer_width = "64")]
plain!(usize);

/// The mapped file a column borrows from, kept alive by every column that
/// does.
pub(crate) type Backing = Arc<memmap2::Mmap>;

pub(crate) enum Slab<T: Plain> {
    Owned(Vec<T>),
    Mapped(Mapped<T>),
}

/// Values read in place: `vals` borrows from `map`, which this holds.
pub(crate) struct Mapped<T: 'static> {
    vals: &'static [T],
    map: Backing,
}

impl<T: Plain> Slab<T> {
    /// The values in `b` (little-endian, `size_of::<T>()` bytes each, a
    /// whole number of them): read in place from `map` when it holds
    /// them, else copied.
    pub(crate) fn of_le(b: &[u8], map: Option<&Backing>) -> Option<Slab<T>> {
        let k = std::mem::size_of::<T>();
        if !b.len().is_multiple_of(k) {
            return None;
        }
        if let Some(s) = map.and_then(|m| Slab::mapped(m, b)) {
            return Some(s);
        }
        Some(Slab::Owned(b.chunks_exact(k).map(T::from_le).collect()))
    }

    pub(crate) fn new() -> Slab<T> {
        Slab::Owned(Vec::new())
    }

    pub(crate) fn with_capacity(n: usize) -> Slab<T> {
        Slab::Owned(Vec::with_capacity(n))
    }

    /// `bytes` of `map` read in place as values, when they lie in it, are
    /// aligned for `T` and a whole number of values; `None` otherwise (and
    /// always on a big-endian target, whose values the file's order is
    /// not).
    pub(crate) fn mapped(map: &Backing, bytes: &[u8]) -> Option<Slab<T>> {
        if cfg!(target_endian = "big") {
            return None;
        }
        let whole = map.as_ptr_range();
        let inside = whole.start <= bytes.as_ptr() && bytes.as_ptr_range().end <= whole.end;
        if !inside {
            return None;
        }
        let vals = <[T] as zerocopy::FromBytes>::ref_from_bytes(bytes).ok()?;
        // SAFETY: `vals` points into the mapping `map` owns, whose pages
        // stay where they are until the last `Backing` is dropped; the
        // `Mapped` holds one for as long as it holds `vals`, and hands
        // `vals` out only borrowed from itself (`Deref`), never as
        // `'static`. The mapping is read-only and the cache never writes
        // an entry in place (entries are replaced by rename).
        let vals: &'static [T] = unsafe { std::mem::transmute::<&[T], &'static [T]>(vals) };
        Some(Slab::Mapped(Mapped {
            vals,
            map: map.clone(),
        }))
    }

    /// The values on the heap, copied there first when mapped (inline:
    /// a parse pushes every value through it, and it was 5-8 % of a 1M
    /// trace's parse out of line).
    #[inline]
    pub(crate) fn vec(&mut self) -> &mut Vec<T> {
        if let Slab::Mapped(_) = self {
            self.unmap();
        }
        match self {
            Slab::Owned(v) => v,
            Slab::Mapped(_) => unreachable!("copied to the heap above"),
        }
    }

    /// Copies mapped values to the heap (once per column written to).
    #[cold]
    fn unmap(&mut self) {
        if let Slab::Mapped(m) = self {
            *self = Slab::Owned(m.vals.to_vec());
        }
    }

    #[cfg(test)]
    pub(crate) fn is_mapped(&self) -> bool {
        matches!(self, Slab::Mapped(_))
    }

    #[inline]
    pub(crate) fn push(&mut self, x: T) {
        self.vec().push(x)
    }

    pub(crate) fn insert(&mut self, i: usize, x: T) {
        self.vec().insert(i, x)
    }

    pub(crate) fn remove(&mut self, i: usize) -> T {
        self.vec().remove(i)
    }

    #[inline]
    pub(crate) fn extend_from_slice(&mut self, s: &[T]) {
        self.vec().extend_from_slice(s)
    }

    pub(crate) fn truncate(&mut self, n: usize) {
        if n < self.len() {
            self.vec().truncate(n)
        }
    }

    pub(crate) fn reserve_exact(&mut self, n: usize) {
        self.vec().reserve_exact(n)
    }

    /// Heap room (a mapped column's values count as held: they are
    /// resident once read).
    pub(crate) fn capacity(&self) -> usize {
        match self {
            Slab::Owned(v) => v.capacity(),
            Slab::Mapped(m) => m.vals.len(),
        }
    }

    pub(crate) fn shrink_to_fit(&mut self) {
        if let Slab::Owned(v) = self {
            v.shrink_to_fit()
        }
    }
}

impl<T: Plain> std::ops::Deref for Slab<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        match self {
            Slab::Owned(v) => v,
            Slab::Mapped(m) => m.vals,
        }
    }
}

impl<T: Plain> std::ops::DerefMut for Slab<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        self.vec()
    }
}

impl<T: Plain> Default for Slab<T> {
    fn default() -> Self {
        Slab::new()
    }
}

impl<T: Plain> Clone for Slab<T> {
    /// A mapped column's clone shares the mapping.
    fn clone(&self) -> Self {
        match self {
            Slab::Owned(v) => Slab::Owned(v.clone()),
            Slab::Mapped(m) => Slab::Mapped(Mapped {
                vals: m.vals,
                map: m.map.clone(),
            }),
        }
    }
}

impl<T: Plain + std::fmt::Debug> std::fmt::Debug for Slab<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Plain + PartialEq> PartialEq for Slab<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: Plain + Eq> Eq for Slab<T> {}

impl<T: Plain> From<Vec<T>> for Slab<T> {
    fn from(v: Vec<T>) -> Self {
        Slab::Owned(v)
    }
}

impl<T: Plain> FromIterator<T> for Slab<T> {
    fn from_iter<I: IntoIterator<Item = T>>(it: I) -> Self {
        Slab::Owned(it.into_iter().collect())
    }
}

impl<T: Plain> Extend<T> for Slab<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, it: I) {
        self.vec().extend(it)
    }
}

impl<'a, T: Plain> IntoIterator for &'a Slab<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map_of(bytes: &[u8]) -> Backing {
        let mut f = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut f, bytes).unwrap();
        // SAFETY: a private temporary file nothing else writes.
        Arc::new(unsafe { memmap2::Mmap::map(&f) }.unwrap())
    }

    #[test]
    fn a_mapped_column_reads_in_place_and_copies_on_write() {
        let vals: Vec<u64> = vec![1, 2, 3, u64::MAX];
        let bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        let map = map_of(&bytes);
        let mut s = Slab::<u64>::mapped(&map, &map[..]).unwrap();
        assert!(s.is_mapped());
        assert_eq!(&*s, &vals[..]);
        let c = s.clone();
        s.push(9);
        assert!(!s.is_mapped() && c.is_mapped());
        assert_eq!(&*c, &vals[..]);
        assert_eq!(&s[..], &[1, 2, 3, u64::MAX, 9]);
        s[0] = 7;
        assert_eq!(s[0], 7);
        drop(map);
        // The clone holds the mapping.
        assert_eq!(c[3], u64::MAX);
    }

    #[test]
    fn bytes_out_of_the_map_or_misaligned_are_not_mapped() {
        let map = map_of(&[0u8; 64]);
        assert!(Slab::<u64>::mapped(&map, &map[1..9]).is_none());
        assert!(Slab::<u32>::mapped(&map, &map[..6]).is_none());
        assert!(Slab::<u64>::mapped(&map, &[0u8; 8]).is_none());
        assert_eq!(Slab::<u16>::mapped(&map, &map[2..8]).unwrap().len(), 3);
    }
}

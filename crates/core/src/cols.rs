//! Column parts shared by the columnar lists (the trace's events, ops and
//! tensors, the graph's ops and tensors): optional `u64` fields stored only
//! once some row has them, names interned in a dictionary, and id lists
//! as one array with offsets. A foundation: it knows no pipeline stage.

use compact_str::CompactString;
use std::collections::HashMap;

mod narrow;
mod slab;
pub(crate) use narrow::Narrow;
pub(crate) use slab::{Backing, Plain, Slab};

/// An optional `u64` field as a column: empty until some row carries it,
/// then one presence bit per row and a value only for the rows that have
/// one (an event's DMA times are on a third of a simulator's events, its
/// written bytes on a tenth: 8 bytes for every event cost 47 MB of a
/// 1M-event trace, this costs 20). A rank per 64 rows (the values before
/// them) finds a row's value in O(1).
#[derive(Debug, Clone, Default)]
pub(crate) struct OptCol {
    /// The values of the rows that have one, in row order, as narrow as
    /// the largest allows.
    pub(crate) vals: Narrow,
    /// One bit per row (as far as the column is in use).
    pub(crate) present: Slab<u64>,
    /// Per word of `present`: how many values come before it.
    rank: Vec<u32>,
}

impl OptCol {
    /// Where row `i`'s value is (or would go) in `vals`, and whether it
    /// has one.
    fn slot(&self, i: usize) -> (usize, bool) {
        let (w, b) = (i / 64, i % 64);
        match self.present.get(w) {
            Some(&word) => {
                let below = word & ((1u64 << b) - 1);
                let at = self.rank[w] as usize + below.count_ones() as usize;
                (at, word >> b & 1 == 1)
            }
            None => (self.vals.len(), false),
        }
    }

    pub(crate) fn get(&self, i: usize) -> Option<u64> {
        match self.slot(i) {
            (at, true) => Some(self.vals.get(at)),
            _ => None,
        }
    }

    /// Whether row `i` has a value (its bit alone: no rank, no value read).
    #[inline]
    pub(crate) fn has(&self, i: usize) -> bool {
        self.present
            .get(i / 64)
            .is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    /// Rows `from..to` in order, each its value or `None`, in one pass (no
    /// rank per row: what a loop over every event wants; a rank lookup per
    /// row was most of finding a 10M-event trace's end).
    pub(crate) fn rows(&self, from: usize, to: usize) -> impl Iterator<Item = Option<u64>> + '_ {
        let mut at = self.slot(from).0;
        (from..to).map(move |i| {
            self.has(i).then(|| {
                let v = self.vals.get(at);
                at += 1;
                v
            })
        })
    }

    /// Covers rows up to `i` with presence words (new ones hold no value).
    fn cover(&mut self, i: usize) {
        while self.present.len() <= i / 64 {
            self.rank.push(self.vals.len() as u32);
            self.present.push(0);
        }
    }

    /// Appends the value of row `i`, the rows before it already pushed.
    #[inline]
    pub(crate) fn push(&mut self, i: usize, v: Option<u64>) {
        let Some(v) = v else {
            return;
        };
        self.cover(i);
        self.present[i / 64] |= 1 << (i % 64);
        self.vals.push(v);
    }

    /// Sets row `i`'s value. In place where the row had a
    /// value and keeps one; adding or taking one away moves the values
    /// after it (rare: one row changed in place by an importer, or a test).
    pub(crate) fn set(&mut self, i: usize, v: Option<u64>) {
        let (at, had) = self.slot(i);
        let w = i / 64;
        match (had, v) {
            (true, Some(v)) => self.vals.set(at, v),
            (false, None) => {}
            (false, Some(v)) => {
                self.cover(i);
                self.present[w] |= 1 << (i % 64);
                self.vals.insert(at, v);
                for r in &mut self.rank[w + 1..] {
                    *r += 1;
                }
            }
            (true, None) => {
                self.present[w] &= !(1 << (i % 64));
                self.vals.remove(at);
                for r in &mut self.rank[w + 1..] {
                    *r -= 1;
                }
            }
        }
    }

    pub(crate) fn truncate(&mut self, n: usize) {
        if self.present.len() * 64 <= n {
            return;
        }
        let (at, _) = self.slot(n);
        self.vals.truncate(at);
        self.present.truncate(n.div_ceil(64));
        self.rank.truncate(n.div_ceil(64));
        if let Some(w) = self.present.last_mut() {
            if !n.is_multiple_of(64) {
                *w &= (1u64 << (n % 64)) - 1;
            }
        }
    }

    /// Appends `other`'s values after the `rows` rows this column covers
    /// (a part of a list parsed on its own, appended in order).
    pub(crate) fn append(&mut self, rows: usize, other: &OptCol) {
        if other.vals.is_empty() {
            return;
        }
        if rows.is_multiple_of(64) && self.present.len() * 64 <= rows {
            // Word-aligned: the part's words follow with their ranks moved.
            while self.present.len() * 64 < rows {
                self.rank.push(self.vals.len() as u32);
                self.present.push(0);
            }
            let base = self.vals.len() as u32;
            self.rank.extend(other.rank.iter().map(|r| r + base));
            self.present.extend_from_slice(&other.present);
            self.vals.append(&other.vals);
            return;
        }
        let mut at = 0;
        for (w, &word) in other.present.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                self.push(rows + w * 64 + b, Some(other.vals.get(at)));
                at += 1;
            }
        }
    }

    pub(crate) fn gather(&self, order: &[u32]) -> OptCol {
        let mut out = OptCol::default();
        if self.vals.is_empty() {
            return out;
        }
        for (i, &j) in order.iter().enumerate() {
            out.push(i, self.get(j as usize));
        }
        out
    }

    /// A column from its presence words and its values, as the cache
    /// stores them; `None` if they do not agree.
    pub(crate) fn from_parts(present: Slab<u64>, vals: Narrow) -> Option<OptCol> {
        let mut rank = Vec::with_capacity(present.len());
        let mut n = 0usize;
        for w in present.iter() {
            rank.push(u32::try_from(n).ok()?);
            n += w.count_ones() as usize;
        }
        (n == vals.len()).then_some(OptCol {
            vals,
            present,
            rank,
        })
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.vals.heap_bytes() + self.present.capacity() * 8 + self.rank.capacity() * 4
    }

    pub(crate) fn shrink(&mut self) {
        self.vals.shrink_to_fit();
        self.present.shrink_to_fit();
        self.rank.shrink_to_fit();
    }
}

/// A `u64` column that is mostly zeros (an op's evictions: most ops have
/// none) held either densely or as the rows that are not zero, whichever
/// is smaller: a zero row costs 1.5 bits in the sparse form.
#[derive(Debug, Clone)]
pub(crate) enum ZeroCol {
    Dense(Narrow),
    Sparse(OptCol),
}

impl ZeroCol {
    /// `c` in the smaller of the two forms.
    pub(crate) fn of(mut c: Narrow) -> ZeroCol {
        let n = c.len();
        let nonzero = c.iter().filter(|&v| v != 0).count();
        let sparse = nonzero * c.width() + n.div_ceil(64) * 12;
        if sparse >= n * c.width() {
            c.shrink_to_fit();
            return ZeroCol::Dense(c);
        }
        let mut s = OptCol::default();
        for (i, v) in c.iter().enumerate() {
            s.push(i, (v != 0).then_some(v));
        }
        s.shrink();
        ZeroCol::Sparse(s)
    }

    #[inline]
    pub(crate) fn get(&self, i: usize) -> u64 {
        match self {
            ZeroCol::Dense(c) => c.get(i),
            ZeroCol::Sparse(s) => s.get(i).unwrap_or(0),
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            ZeroCol::Dense(c) => c.heap_bytes(),
            ZeroCol::Sparse(s) => s.heap_bytes(),
        }
    }
}

/// A list that a JSON array's rows are pushed onto one at a time: a trace
/// file read in runs (`trace::read`) parses each run onto what the runs
/// before it left.
pub(crate) trait PushRows {
    type Row: serde::de::DeserializeOwned;
    fn push_row(&mut self, r: Self::Row) -> Result<(), String>;
}

/// A seed that pushes a JSON array's rows onto `list`, after any it
/// holds: a whole list's `Deserialize`, and each run of a trace read in
/// runs. `what` names the array in serde's "expected" message.
pub(crate) struct Onto<'a, L> {
    pub(crate) list: &'a mut L,
    pub(crate) what: &'static str,
}

impl<'de, L: PushRows> serde::de::DeserializeSeed<'de> for Onto<'_, L> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, L: PushRows> serde::de::Visitor<'de> for Onto<'_, L> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.what)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(r) = seq.next_element::<L::Row>()? {
            self.list.push_row(r).map_err(serde::de::Error::custom)?;
        }
        Ok(())
    }
}

/// Pool names and reasons, each stored once (id 0 is reserved for "no
/// reason").
#[derive(Debug, Clone)]
pub(crate) struct Dictionary {
    pub(crate) names: Vec<CompactString>,
    pub(crate) ids: HashMap<CompactString, u32>,
}

impl Default for Dictionary {
    fn default() -> Self {
        Dictionary {
            names: vec![CompactString::default()],
            ids: HashMap::new(),
        }
    }
}

/// Up to this many names a dictionary is searched in order, not hashed
/// (a trace's pools and reasons are a handful; hashing each event's name
/// cost more than comparing it with four).
const SCAN_NAMES: usize = 8;

impl Dictionary {
    pub(crate) fn id(&mut self, s: &str) -> u32 {
        if self.names.len() <= SCAN_NAMES {
            if let Some(i) = self.names[1..].iter().position(|n| n == s) {
                return i as u32 + 1;
            }
        } else if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(s.into());
        self.ids.insert(s.into(), i);
        i
    }

    /// [`Dictionary::id`] of a name given as bytes; `None` if it is not
    /// UTF-8 (checked only for a name not seen before).
    pub(crate) fn id_bytes(&mut self, s: &[u8]) -> Option<u32> {
        if self.names.len() <= SCAN_NAMES {
            if let Some(i) = self.names[1..].iter().position(|n| n.as_bytes() == s) {
                return Some(i as u32 + 1);
            }
        }
        Some(self.id(std::str::from_utf8(s).ok()?))
    }

    pub(crate) fn name(&self, id: u32) -> &str {
        self.names
            .get(id as usize)
            .map(|s| s.as_str())
            .unwrap_or("")
    }

    /// For each of `other`'s ids, this dictionary's id of the same name
    /// (added where missing): how a part's column of ids is appended.
    pub(crate) fn ids_of(&mut self, other: &Dictionary) -> Vec<u32> {
        let mut map = vec![0u32];
        map.extend(other.names[1..].iter().map(|n| self.id(n)));
        map
    }
}

impl Dictionary {
    /// A dictionary read back (the cache): `names` in id order, the first
    /// the empty name (id 0, "none").
    pub(crate) fn from_names<'a>(
        names: impl ExactSizeIterator<Item = &'a str>,
        what: &str,
    ) -> Result<Dictionary, String> {
        let k = names.len();
        let mut dict = Dictionary {
            names: Vec::with_capacity(k),
            ids: HashMap::with_capacity(k),
        };
        for (i, s) in names.enumerate() {
            dict.names.push(s.into());
            if i > 0 {
                dict.ids.entry(s.into()).or_insert(i as u32);
            }
        }
        if dict.names.first().is_none_or(|s| !s.is_empty()) {
            return Err(format!("{what}: the first is not the empty name"));
        }
        Ok(dict)
    }

    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }
}

/// Where each row of a [`Lists`] or [`Names`] ends: 4 bytes a row while
/// the last end fits in `u32` (every list or name column a memory budget
/// lets in), 8 past it. The switch happens on the push that needs it, so
/// nothing is refused; the narrow form saves 4 bytes per row of every list
/// and name column (a million-op trace has five of them).
#[derive(Debug, Clone)]
pub(crate) enum Ends {
    Narrow(Vec<u32>),
    Wide(Vec<usize>),
    /// As the cache stores them: `n + 1` offsets from 0, read in place
    /// (row `i` ends at offset `i + 1`); a push copies them to `Wide`.
    Offsets(Slab<u64>),
}

impl Default for Ends {
    fn default() -> Self {
        Ends::Narrow(Vec::new())
    }
}

impl Ends {
    #[inline]
    pub(crate) fn at(&self, i: usize) -> usize {
        match self {
            Ends::Narrow(v) => v[i] as usize,
            Ends::Wide(v) => v[i],
            Ends::Offsets(v) => v[i + 1] as usize,
        }
    }

    /// Row `i`'s range.
    #[inline]
    fn range(&self, i: usize) -> std::ops::Range<usize> {
        let start = if i == 0 { 0 } else { self.at(i - 1) };
        start..self.at(i)
    }

    pub(crate) fn push(&mut self, end: usize) {
        match self {
            Ends::Narrow(v) => match u32::try_from(end) {
                Ok(e) => v.push(e),
                Err(_) => {
                    self.widen();
                    self.push(end);
                }
            },
            Ends::Wide(v) => v.push(end),
            Ends::Offsets(_) => {
                self.widen();
                self.push(end);
            }
        }
    }

    /// Every end in 8 bytes (the push past `u32::MAX`; tests).
    fn widen(&mut self) {
        let wide = match self {
            Ends::Narrow(v) => v.iter().map(|&e| e as usize).collect(),
            Ends::Offsets(v) => v.iter().skip(1).map(|&e| e as usize).collect(),
            Ends::Wide(_) => return,
        };
        *self = Ends::Wide(wide);
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Ends::Narrow(v) => v.len(),
            Ends::Wide(v) => v.len(),
            Ends::Offsets(v) => v.len().saturating_sub(1),
        }
    }

    fn last(&self) -> usize {
        self.len().checked_sub(1).map_or(0, |i| self.at(i))
    }

    fn truncate(&mut self, n: usize) {
        match self {
            Ends::Narrow(v) => v.truncate(n),
            Ends::Wide(v) => v.truncate(n),
            Ends::Offsets(v) => v.truncate(n + 1),
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            Ends::Narrow(v) => v.capacity() * 4,
            Ends::Wide(v) => v.capacity() * 8,
            Ends::Offsets(v) => v.capacity() * 8,
        }
    }

    fn shrink(&mut self) {
        match self {
            Ends::Narrow(v) => v.shrink_to_fit(),
            Ends::Wide(v) => v.shrink_to_fit(),
            Ends::Offsets(v) => v.shrink_to_fit(),
        }
    }

    /// Ends from running totals (`total` is the last): narrow when it fits.
    fn of(ends: impl ExactSizeIterator<Item = usize>, total: usize) -> Ends {
        match u32::try_from(total) {
            Ok(_) => Ends::Narrow(ends.map(|e| e as u32).collect()),
            Err(_) => Ends::Wide(ends.collect()),
        }
    }
}

/// Lists, one per row (an op's operands, a tensor's consumers or shape):
/// `ends.at(i)` is where row `i`'s list ends in `ids` (it starts where row
/// `i - 1`'s ends).
#[derive(Debug, Clone)]
pub(crate) struct Lists<T: Plain> {
    pub(crate) ends: Ends,
    pub(crate) ids: Slab<T>,
}

/// Lists of ids.
pub(crate) type IdLists = Lists<usize>;

impl<T: Plain> Default for Lists<T> {
    fn default() -> Self {
        Lists {
            ends: Ends::default(),
            ids: Slab::new(),
        }
    }
}

impl<T: Plain> Lists<T> {
    #[inline]
    pub(crate) fn get(&self, i: usize) -> &[T] {
        &self.ids[self.ends.range(i)]
    }

    pub(crate) fn push(&mut self, l: &[T]) {
        self.ids.extend_from_slice(l);
        self.ends.push(self.ids.len());
    }

    /// Appends `other`'s rows after this list's.
    pub(crate) fn append(&mut self, other: &Lists<T>) {
        let base = self.ids.len();
        self.ids.extend_from_slice(&other.ids);
        for i in 0..other.ends.len() {
            self.ends.push(base + other.ends.at(i));
        }
    }

    /// Replaces item `slot` of row `i`'s list.
    pub(crate) fn set(&mut self, i: usize, slot: usize, v: T) {
        let start = self.ends.range(i).start;
        self.ids[start + slot] = v;
    }

    pub(crate) fn truncate(&mut self, n: usize) {
        if n < self.ends.len() {
            self.ends.truncate(n);
            self.ids.truncate(self.ends.last());
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.ends.heap_bytes() + self.ids.capacity() * std::mem::size_of::<T>()
    }

    pub(crate) fn shrink(&mut self) {
        self.ends.shrink();
        self.ids.shrink_to_fit();
    }
}

impl Lists<usize> {
    /// Lists of `rows` rows from (row, id) pairs: `each` hands every pair
    /// to its argument, and is run twice (count, then fill), so nothing is
    /// held per row but its end. Each row's ids keep the order given.
    pub(crate) fn counted(rows: usize, each: impl Fn(&mut dyn FnMut(usize, usize))) -> IdLists {
        let mut ends = vec![0usize; rows];
        each(&mut |r, _| ends[r] += 1);
        let mut total = 0;
        for e in &mut ends {
            total += *e;
            *e = total;
        }
        // Fill each row from its start (`at[r]` walks up to its end).
        let mut at: Vec<usize> = Vec::with_capacity(rows);
        at.push(0);
        at.extend_from_slice(&ends[..rows.saturating_sub(1)]);
        let mut ids = vec![0usize; total];
        each(&mut |r, id| {
            ids[at[r]] = id;
            at[r] += 1;
        });
        drop(at);
        IdLists {
            ends: Ends::of(ends.into_iter(), total),
            ids: ids.into(),
        }
    }

    /// The lists as read back from the cache: `offsets` (n + 1, from 0,
    /// never decreasing, the last at the end of `ids`, as the reader
    /// checked) into `ids`, both kept as read (in place when mapped).
    pub(crate) fn from_offsets(offsets: Slab<u64>, ids: Slab<usize>) -> IdLists {
        IdLists {
            ends: Ends::Offsets(offsets),
            ids,
        }
    }
}

/// Strings, one per row, as one blob with ends: no 24-byte slot and no
/// heap allocation per string (a model's names often pass 24 bytes).
#[derive(Debug, Clone, Default)]
pub(crate) struct Names {
    /// UTF-8, each end on a character boundary (every way in checks or
    /// keeps it: pushed `str`s, or a blob the reader checked).
    blob: Slab<u8>,
    ends: Ends,
}

impl Names {
    #[inline]
    pub(crate) fn get(&self, i: usize) -> &str {
        let b = &self.blob[self.ends.range(i)];
        // SAFETY: the blob is UTF-8 and every end falls on a character
        // boundary (the field's invariant), so each name's bytes are UTF-8.
        unsafe { std::str::from_utf8_unchecked(b) }
    }

    pub(crate) fn push(&mut self, s: &str) {
        self.blob.extend_from_slice(s.as_bytes());
        self.ends.push(self.blob.len());
    }

    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Appends `other`'s names after these.
    pub(crate) fn append(&mut self, other: &Names) {
        let base = self.blob.len();
        self.blob.extend_from_slice(&other.blob);
        for i in 0..other.len() {
            self.ends.push(base + other.ends.at(i));
        }
    }

    /// Keeps the first `n` names.
    pub(crate) fn truncate(&mut self, n: usize) {
        if n < self.len() {
            let end = n.checked_sub(1).map_or(0, |i| self.ends.at(i));
            self.blob.truncate(end);
            self.ends.truncate(n);
        }
    }

    /// Names read back whole (the cache): `offsets` (one more than the
    /// names, from 0, never decreasing, as the reader checked) into `blob`,
    /// both kept as read (in place when mapped); `None` unless the blob is
    /// UTF-8, the last offset its end and every offset between characters.
    pub(crate) fn from_offsets(blob: Slab<u8>, offsets: Slab<u64>) -> Option<Names> {
        let text = std::str::from_utf8(&blob).ok()?;
        let fits = offsets.last().is_some_and(|&o| o as usize == text.len())
            && offsets.iter().all(|&o| text.is_char_boundary(o as usize));
        fits.then_some(Names {
            blob,
            ends: Ends::Offsets(offsets),
        })
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.ends.heap_bytes() + self.blob.capacity()
    }

    pub(crate) fn shrink(&mut self) {
        self.ends.shrink();
        self.blob.shrink_to_fit();
    }
}

/// A column stored only once some row's value differs from the one it has
/// by default (`dflt(i)`: an id equal to its index, no unit): empty or one
/// value per row.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lazy<T> {
    pub(crate) vals: Vec<T>,
}

impl Lazy<usize> {
    /// A column read back whole (the cache): none, or one id per row.
    pub(crate) fn of_u64s(vals: Slab<u64>) -> Lazy<usize> {
        Lazy {
            vals: vals.iter().map(|&v| v as usize).collect(),
        }
    }
}

impl<T: Copy + PartialEq> Lazy<T> {
    pub(crate) fn get(&self, i: usize, dflt: impl Fn(usize) -> T) -> T {
        self.vals.get(i).copied().unwrap_or_else(|| dflt(i))
    }

    /// Appends row `i`'s value (the column's length is `i` when in use).
    pub(crate) fn push(&mut self, i: usize, v: T, dflt: impl Fn(usize) -> T) {
        if v != dflt(i) || !self.vals.is_empty() {
            let have = self.vals.len();
            self.vals.extend((have..i).map(&dflt));
            self.vals.push(v);
        }
    }

    /// Appends the `n` rows of a part (`other`, its rows numbered from 0)
    /// after this column's `rows`: each value as the part read it, the
    /// default taken at its place here.
    pub(crate) fn append(
        &mut self,
        rows: usize,
        other: &Lazy<T>,
        n: usize,
        dflt: impl Fn(usize) -> T,
        map: impl Fn(T) -> T,
    ) {
        for j in 0..n {
            let v = map(other.get(j, &dflt));
            self.push(rows + j, v, &dflt);
        }
    }

    /// Replaces row `i`'s value of `n` rows.
    pub(crate) fn set(&mut self, i: usize, n: usize, v: T, dflt: impl Fn(usize) -> T) {
        if self.vals.is_empty() {
            if v == dflt(i) {
                return;
            }
            self.vals = (0..n).map(dflt).collect();
        }
        self.vals[i] = v;
    }

    pub(crate) fn truncate(&mut self, n: usize) {
        self.vals.truncate(n);
    }

    pub(crate) fn shrink(&mut self) {
        self.vals.shrink_to_fit();
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.vals.capacity() * std::mem::size_of::<T>()
    }
}

/// An id equal to its row's index (the default of an id column).
pub(crate) fn own_index(i: usize) -> usize {
    i
}

/// The row plumbing the columnar lists share (the trace's and the
/// graph's ops and tensors): lookups by index, an iterator of borrowed rows,
/// changing every row, collecting and extending from owned rows, equality
/// and debug output by rows, and the JSON as the array of row objects,
/// read one row at a time, and changing one row. `$list` has `new`, `len`,
/// `at`, `push`, `shrink_to_fit` and `set_in_place` (writes a changed row
/// over row `i` and says so, or says the change needs the columns
/// rebuilt: a changed list or name); its borrowed row `$row` has `owned`.
macro_rules! row_list {
    ($list:ident, $row:ident, $owned:ty, $what:literal) => {
        impl $list {
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }

            pub fn get(&self, i: usize) -> Option<$row<'_>> {
                (i < self.len()).then(|| self.at(i))
            }

            pub fn first(&self) -> Option<$row<'_>> {
                self.get(0)
            }

            pub fn last(&self) -> Option<$row<'_>> {
                self.len().checked_sub(1).map(|i| self.at(i))
            }

            pub fn iter(&self) -> Iter<'_> {
                Iter {
                    list: self,
                    at: 0,
                    end: self.len(),
                }
            }

            /// Changes row `i` through its owned form: in place where
            /// `set_in_place` can, else by rebuilding the columns (to
            /// change many rows, [`Self::update_all`] rebuilds once).
            pub fn update(&mut self, i: usize, f: impl FnOnce(&mut $owned)) {
                let before = self.at(i).owned();
                let mut o = before.clone();
                f(&mut o);
                if o == before || self.set_in_place(i, &before, &o) {
                    return;
                }
                self.update_all(|j, r| {
                    if j == i {
                        *r = o.clone();
                    }
                });
            }

            /// Changes every row through its owned form, rebuilding the
            /// columns once.
            pub fn update_all(&mut self, mut f: impl FnMut(usize, &mut $owned)) {
                let old = std::mem::take(self);
                for (i, r) in old.iter().enumerate() {
                    let mut o = r.owned();
                    f(i, &mut o);
                    self.push(o);
                }
                self.shrink_to_fit();
            }
        }

        /// Rows, front to back (or back to front).
        #[derive(Clone)]
        pub struct Iter<'a> {
            list: &'a $list,
            at: usize,
            end: usize,
        }

        impl<'a> Iterator for Iter<'a> {
            type Item = $row<'a>;
            fn next(&mut self) -> Option<$row<'a>> {
                (self.at < self.end).then(|| {
                    self.at += 1;
                    self.list.at(self.at - 1)
                })
            }
            fn size_hint(&self) -> (usize, Option<usize>) {
                let n = self.end - self.at;
                (n, Some(n))
            }
            fn nth(&mut self, n: usize) -> Option<$row<'a>> {
                self.at = self.at.saturating_add(n).min(self.end);
                self.next()
            }
        }

        impl DoubleEndedIterator for Iter<'_> {
            fn next_back(&mut self) -> Option<Self::Item> {
                (self.at < self.end).then(|| {
                    self.end -= 1;
                    self.list.at(self.end)
                })
            }
        }

        impl ExactSizeIterator for Iter<'_> {}

        impl<'a> IntoIterator for &'a $list {
            type Item = $row<'a>;
            type IntoIter = Iter<'a>;
            fn into_iter(self) -> Iter<'a> {
                self.iter()
            }
        }

        impl Extend<$owned> for $list {
            fn extend<I: IntoIterator<Item = $owned>>(&mut self, it: I) {
                for o in it {
                    self.push(o);
                }
            }
        }

        impl FromIterator<$owned> for $list {
            fn from_iter<I: IntoIterator<Item = $owned>>(it: I) -> $list {
                let mut l = $list::new();
                l.extend(it);
                l.shrink_to_fit();
                l
            }
        }

        impl From<Vec<$owned>> for $list {
            fn from(v: Vec<$owned>) -> $list {
                v.into_iter().collect()
            }
        }

        impl PartialEq for $list {
            fn eq(&self, other: &$list) -> bool {
                self.len() == other.len() && self.iter().eq(other.iter())
            }
        }

        impl std::fmt::Debug for $list {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_list().entries(self.iter()).finish()
            }
        }

        impl serde::Serialize for $list {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeSeq;
                let mut seq = s.serialize_seq(Some(self.len()))?;
                for r in self.iter() {
                    seq.serialize_element(&r)?;
                }
                seq.end()
            }
        }

        impl crate::cols::PushRows for $list {
            type Row = $owned;
            fn push_row(&mut self, r: $owned) -> Result<(), String> {
                self.push(r);
                Ok(())
            }
        }

        impl<'de> serde::Deserialize<'de> for $list {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$list, D::Error> {
                use serde::de::DeserializeSeed;
                let mut l = $list::new();
                crate::cols::Onto {
                    list: &mut l,
                    what: $what,
                }
                .deserialize(d)?;
                Ok(l)
            }
        }
    };
}
pub(crate) use row_list;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ends_widen_on_the_push_past_u32_and_keep_every_row() {
        let mut e = Ends::Narrow(vec![3, u32::MAX - 1]);
        e.push(u32::MAX as usize);
        assert!(matches!(e, Ends::Narrow(_)));
        let past = u32::MAX as usize + 7;
        e.push(past);
        assert!(matches!(e, Ends::Wide(_)));
        let all: Vec<usize> = (0..e.len()).map(|i| e.at(i)).collect();
        assert_eq!(all, vec![3, u32::MAX as usize - 1, u32::MAX as usize, past]);
        assert_eq!(e.range(3), u32::MAX as usize..past);
        assert_eq!(Ends::of([1usize, past].into_iter(), past).at(1), past);
    }

    proptest! {
        /// Lists and names read the same through narrow and wide ends,
        /// through pushes, in-place changes and cuts.
        #[test]
        fn narrow_and_wide_ends_read_alike(
            rows in proptest::collection::vec(proptest::collection::vec(0usize..50, 0..5), 0..40),
            cut in 0usize..45,
        ) {
            let mut narrow = IdLists::default();
            let mut names = Names::default();
            for r in &rows {
                narrow.push(r);
                names.push(&"x".repeat(r.len()));
            }
            let mut wide = narrow.clone();
            wide.ends.widen();
            let mut wide_names = names.clone();
            wide_names.ends.widen();
            if let Some(i) = rows.iter().position(|r| !r.is_empty()) {
                narrow.set(i, 0, 99);
                wide.set(i, 0, 99);
            }
            narrow.truncate(cut);
            wide.truncate(cut);
            prop_assert_eq!(narrow.ends.len(), wide.ends.len());
            for i in 0..narrow.ends.len() {
                prop_assert_eq!(narrow.get(i), wide.get(i));
            }
            for (i, r) in rows.iter().enumerate() {
                prop_assert_eq!(names.get(i), wide_names.get(i));
                prop_assert_eq!(names.get(i).len(), r.len());
            }
            let counted = IdLists::counted(rows.len(), |f| {
                for (r, l) in rows.iter().enumerate() {
                    for &x in l {
                        f(r, x);
                    }
                }
            });
            for (i, r) in rows.iter().enumerate() {
                prop_assert_eq!(counted.get(i), &r[..]);
            }
        }
    }

    /// What an optional column is: one `Option` per row.
    fn model(c: &OptCol, n: usize) -> Vec<Option<u64>> {
        (0..n).map(|i| c.get(i)).collect()
    }

    #[derive(Debug, Clone)]
    enum Op {
        Set(usize, Option<u64>),
        Truncate(usize),
        Gather(Vec<u32>),
    }

    proptest! {
        /// Pushed, changed in place anywhere, cut and reordered, the
        /// column reads back what a vector of options would, and its
        /// parts rebuild it.
        #[test]
        fn an_optional_column_is_a_vector_of_options(
            rows in prop::collection::vec(prop::option::weighted(0.3, any::<u64>()), 0..400),
            ops in prop::collection::vec(
                prop_oneof![
                    (0..400usize, prop::option::of(any::<u64>())).prop_map(|(i, v)| Op::Set(i, v)),
                    (0..400usize).prop_map(Op::Truncate),
                    prop::collection::vec(0..400u32, 0..300).prop_map(Op::Gather),
                ],
                0..12,
            ),
        ) {
            let mut c = OptCol::default();
            for (i, &v) in rows.iter().enumerate() {
                c.push(i, v);
            }
            let mut want = rows.clone();
            prop_assert_eq!(model(&c, want.len() + 70), {
                let mut w = want.clone();
                w.resize(want.len() + 70, None);
                w
            });
            for op in ops {
                match op {
                    Op::Set(i, v) if i < want.len() => {
                        c.set(i, v);
                        want[i] = v;
                    }
                    Op::Set(..) => {}
                    Op::Truncate(n) => {
                        c.truncate(n);
                        want.truncate(n);
                    }
                    Op::Gather(order) => {
                        let order: Vec<u32> =
                            order.into_iter().filter(|&j| (j as usize) < want.len()).collect();
                        c = c.gather(&order);
                        want = order.iter().map(|&j| want[j as usize]).collect();
                    }
                }
                prop_assert_eq!(model(&c, want.len()), want.clone());
                // Rows past the end have no value.
                prop_assert_eq!(c.get(want.len()), None);
                prop_assert_eq!(c.vals.len(), want.iter().flatten().count());
                let back = OptCol::from_parts(c.present.clone(), c.vals.clone()).unwrap();
                prop_assert_eq!(model(&back, want.len()), want.clone());
                // Read in one pass, from any row (past the end too).
                let n = want.len();
                for from in [0, n / 3, n] {
                    let got: Vec<Option<u64>> = c.rows(from, n + 5).collect();
                    let mut w = want[from..].to_vec();
                    w.resize(n + 5 - from, None);
                    prop_assert_eq!(got, w);
                }
                prop_assert!((0..n + 5).all(|i| c.has(i) == c.get(i).is_some()));
            }
            // Appending after any of it still works.
            let n = want.len();
            c.push(n + 3, Some(7));
            prop_assert_eq!(c.get(n + 3), Some(7));
            prop_assert_eq!(c.get(n + 2), None);
        }
    }

    #[test]
    fn parts_that_disagree_are_refused() {
        assert!(OptCol::from_parts(vec![0b101].into(), Narrow::from_vec(vec![1])).is_none());
        assert!(OptCol::from_parts(vec![0b101].into(), Narrow::from_vec(vec![1, 2])).is_some());
    }

    #[test]
    fn a_mostly_zero_column_is_sparse_and_a_full_one_dense() {
        let mut few = vec![0u64; 10_000];
        few[17] = 5;
        few[9_999] = 1 << 40;
        let c = ZeroCol::of(Narrow::from_vec(few.clone()));
        assert!(matches!(c, ZeroCol::Sparse(_)));
        assert!(c.heap_bytes() < 10_000 / 4, "{} bytes", c.heap_bytes());
        assert!((0..few.len()).all(|i| c.get(i) == few[i]));
        let full: Vec<u64> = (0..1000).map(|i| i % 7 + 1).collect();
        let d = ZeroCol::of(Narrow::from_vec(full.clone()));
        assert!(matches!(d, ZeroCol::Dense(_)));
        assert_eq!(d.heap_bytes(), 1000);
        assert!((0..full.len()).all(|i| d.get(i) == full[i]));
    }

    #[test]
    fn names_append_and_truncate_keep_every_name() {
        let mut a = Names::default();
        for n in ["enc0.proj", "", "é"] {
            a.push(n);
        }
        let mut b = Names::default();
        b.push("dec1.ffn");
        b.push("x");
        a.append(&b);
        let all: Vec<&str> = (0..a.len()).map(|i| a.get(i)).collect();
        assert_eq!(all, ["enc0.proj", "", "é", "dec1.ffn", "x"]);
        a.truncate(4);
        assert_eq!(a.len(), 4);
        assert_eq!(a.get(3), "dec1.ffn");
        a.push("y");
        assert_eq!(a.get(4), "y");
        a.truncate(0);
        assert_eq!(a.len(), 0);
        a.push("z");
        assert_eq!(a.get(0), "z");
    }
}

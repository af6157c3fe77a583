//! Column parts shared by the columnar lists (the trace's events, ops and
//! tensors, the graph's ops and tensors): optional `u64` fields stored only
//! once some row has them, names interned in a dictionary, and id lists
//! as one array with offsets. A foundation: it knows no pipeline stage.

use compact_str::CompactString;
use std::collections::HashMap;

/// An optional `u64` field as a column: empty until some event carries it,
/// then one value and one presence bit per event.
#[derive(Debug, Clone, Default)]
pub(crate) struct OptCol {
    pub(crate) vals: Vec<u64>,
    pub(crate) present: Vec<u64>,
}

impl OptCol {
    pub(crate) fn get(&self, i: usize) -> Option<u64> {
        let on = self
            .present
            .get(i / 64)
            .is_some_and(|w| w >> (i % 64) & 1 == 1);
        on.then(|| self.vals[i])
    }

    /// Appends the value of event `i` (the column's length is `i` when it
    /// is in use).
    pub(crate) fn push(&mut self, i: usize, v: Option<u64>) {
        if v.is_none() && self.vals.is_empty() {
            return;
        }
        self.vals.resize(i, 0);
        self.vals.push(v.unwrap_or(0));
        self.present.resize((i + 1).div_ceil(64), 0);
        if v.is_some() {
            self.present[i / 64] |= 1 << (i % 64);
        }
    }

    pub(crate) fn set(&mut self, i: usize, len: usize, v: Option<u64>) {
        if self.vals.is_empty() {
            if v.is_none() {
                return;
            }
            self.vals.resize(len, 0);
            self.present.resize(len.div_ceil(64), 0);
        }
        self.vals[i] = v.unwrap_or(0);
        let bit = 1u64 << (i % 64);
        if v.is_some() {
            self.present[i / 64] |= bit;
        } else {
            self.present[i / 64] &= !bit;
        }
    }

    pub(crate) fn truncate(&mut self, n: usize) {
        if self.vals.len() > n {
            self.vals.truncate(n);
            self.present.truncate(n.div_ceil(64));
            if let Some(w) = self.present.last_mut() {
                if !n.is_multiple_of(64) {
                    *w &= (1u64 << (n % 64)) - 1;
                }
            }
        }
    }

    pub(crate) fn gather(&self, order: &[u32]) -> OptCol {
        if self.vals.is_empty() {
            return OptCol::default();
        }
        let mut out = OptCol::default();
        for (i, &j) in order.iter().enumerate() {
            out.push(i, self.get(j as usize));
        }
        out
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        (self.vals.capacity() + self.present.capacity()) * 8
    }

    pub(crate) fn shrink(&mut self) {
        self.vals.shrink_to_fit();
        self.present.shrink_to_fit();
    }
}

/// A list that a JSON array's rows are pushed onto one at a time: a trace
/// file read in runs (`trace::read`) parses each run onto what the runs
/// before it left.
pub(crate) trait PushRows {
    type Row: serde::de::DeserializeOwned;
    fn push_row(&mut self, r: Self::Row) -> Result<(), String>;
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

impl Dictionary {
    pub(crate) fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(s.into());
        self.ids.insert(s.into(), i);
        i
    }

    pub(crate) fn name(&self, id: u32) -> &str {
        self.names
            .get(id as usize)
            .map(|s| s.as_str())
            .unwrap_or("")
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

/// Lists, one per row (an op's operands, a tensor's consumers or shape):
/// `ends[i]` is where row `i`'s list ends in `ids` (it starts where row
/// `i - 1`'s ends).
#[derive(Debug, Clone)]
pub(crate) struct Lists<T> {
    pub(crate) ends: Vec<usize>,
    pub(crate) ids: Vec<T>,
}

/// Lists of ids.
pub(crate) type IdLists = Lists<usize>;

impl<T> Default for Lists<T> {
    fn default() -> Self {
        Lists {
            ends: Vec::new(),
            ids: Vec::new(),
        }
    }
}

impl<T: Copy> Lists<T> {
    #[inline]
    pub(crate) fn get(&self, i: usize) -> &[T] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.ids[start..self.ends[i]]
    }

    pub(crate) fn push(&mut self, l: &[T]) {
        self.ids.extend_from_slice(l);
        self.ends.push(self.ids.len());
    }

    /// Replaces item `slot` of row `i`'s list.
    pub(crate) fn set(&mut self, i: usize, slot: usize, v: T) {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        self.ids[start + slot] = v;
    }

    pub(crate) fn truncate(&mut self, n: usize) {
        if n < self.ends.len() {
            self.ends.truncate(n);
            self.ids.truncate(self.ends.last().copied().unwrap_or(0));
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.ends.capacity() * 8 + self.ids.capacity() * std::mem::size_of::<T>()
    }

    pub(crate) fn shrink(&mut self) {
        self.ends.shrink_to_fit();
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
        IdLists { ends, ids }
    }

    /// The lists as read back from the cache: `offsets` (n + 1, from 0,
    /// never decreasing, as the reader checked) into `vals`.
    pub(crate) fn from_offsets(offsets: &[u64], vals: Vec<u64>) -> IdLists {
        IdLists {
            ends: offsets.iter().skip(1).map(|&o| o as usize).collect(),
            ids: vals.into_iter().map(|v| v as usize).collect(),
        }
    }
}

/// Strings, one per row, as one blob with ends: no 24-byte slot and no
/// heap allocation per string (a model's names often pass 24 bytes).
#[derive(Debug, Clone, Default)]
pub(crate) struct Names {
    blob: String,
    ends: Vec<usize>,
}

impl Names {
    #[inline]
    pub(crate) fn get(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.blob[start..self.ends[i]]
    }

    pub(crate) fn push(&mut self, s: &str) {
        self.blob.push_str(s);
        self.ends.push(self.blob.len());
    }

    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.ends.capacity() * 8 + self.blob.capacity()
    }

    pub(crate) fn shrink(&mut self) {
        self.ends.shrink_to_fit();
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
                struct V;
                impl<'de> serde::de::Visitor<'de> for V {
                    type Value = $list;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_seq<A: serde::de::SeqAccess<'de>>(
                        self,
                        mut seq: A,
                    ) -> Result<$list, A::Error> {
                        let mut l = $list::new();
                        while let Some(o) = seq.next_element::<$owned>()? {
                            l.push(o);
                        }
                        Ok(l)
                    }
                }
                d.deserialize_seq(V)
            }
        }
    };
}
pub(crate) use row_list;

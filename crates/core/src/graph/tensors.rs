//! A graph's tensors held as columns, as its ops are ([`super::Ops`]).
//! What a tensor costs:
//!
//! | column        | bytes per tensor                                     |
//! |---------------|------------------------------------------------------|
//! | `name`        | its length + 8 (one blob with ends)                  |
//! | `bytes`       | 8                                                    |
//! | `kind`        | 1                                                    |
//! | `shape`       | 1 (whether it has one) + 8 (an offset) + 8 per dimension |
//! | `dtype`       | 4 (a dictionary id; 0: none)                         |
//! | `producer`    | 8 (`usize::MAX`: none)                               |
//! | `consumers`   | 8 (an offset) + 8 per consumer                       |
//! | `id`          | 0 while every tensor's id is its index, else 8       |
//!
//! A vector of [`Tensor`] rows held 136 bytes of struct and up to two heap
//! lists each. Readers take [`TensorRef`] rows with the same field names.

use super::{OpId, Tensor, TensorKind};
use crate::cols::{own_index, row_list, Dictionary, IdLists, Lazy, Lists, Names};
use serde::Serialize;

/// One tensor, borrowed from the columns: what [`Tensor`] holds, its
/// strings and lists borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TensorRef<'a> {
    pub id: usize,
    pub name: &'a str,
    pub bytes: u64,
    pub kind: TensorKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<&'a [u64]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dtype: Option<&'a str>,
    pub producer: Option<OpId>,
    pub consumers: &'a [OpId],
}

impl TensorRef<'_> {
    /// The tensor as an owned row.
    pub fn owned(&self) -> Tensor {
        Tensor {
            id: self.id,
            name: self.name.into(),
            bytes: self.bytes,
            kind: self.kind,
            shape: self.shape.map(<[u64]>::to_vec),
            dtype: self.dtype.map(Into::into),
            producer: self.producer,
            consumers: self.consumers.to_vec(),
        }
    }

    /// Elements (the product of the shape), when the shape is known.
    pub fn elements(&self) -> Option<u64> {
        self.shape.map(|s| s.iter().product())
    }
}

impl Tensor {
    /// The row borrowed as the columns lend it.
    pub fn row(&self) -> TensorRef<'_> {
        TensorRef {
            id: self.id,
            name: &self.name,
            bytes: self.bytes,
            kind: self.kind,
            shape: self.shape.as_deref(),
            dtype: self.dtype.as_deref(),
            producer: self.producer,
            consumers: &self.consumers,
        }
    }
}

/// No producer, in the `producer` column.
const NONE: usize = usize::MAX;

/// A graph's tensors (see the module's doc).
#[derive(Clone, Default)]
pub struct Tensors {
    /// Empty while every tensor's id is its index.
    id: Lazy<usize>,
    name: Names,
    bytes: Vec<u64>,
    kind: Vec<TensorKind>,
    has_shape: Vec<bool>,
    shape: Lists<u64>,
    dtype: Vec<u32>,
    producer: Vec<usize>,
    consumers: IdLists,
    dtypes: Dictionary,
}

row_list!(Tensors, TensorRef, Tensor, "an array of tensors");

impl Tensors {
    pub fn new() -> Tensors {
        Tensors::default()
    }

    pub fn len(&self) -> usize {
        self.name.len()
    }

    /// Tensor `i`'s name (what a lookup by name compares, without the
    /// rest of the row).
    #[inline]
    pub fn name(&self, i: usize) -> &str {
        self.name.get(i)
    }

    /// Tensor `i`'s size (hot loops read one field: a whole row costs a
    /// bounds check per column).
    #[inline]
    pub fn bytes(&self, i: usize) -> u64 {
        self.bytes[i]
    }

    #[inline]
    pub fn kind(&self, i: usize) -> TensorKind {
        self.kind[i]
    }

    #[inline]
    pub fn producer(&self, i: usize) -> Option<OpId> {
        Some(self.producer[i]).filter(|&p| p != NONE)
    }

    #[inline]
    pub fn consumers(&self, i: usize) -> &[OpId] {
        self.consumers.get(i)
    }

    /// Tensor `i` as a row. Panics when `i` is out of range, like indexing.
    #[inline]
    pub fn at(&self, i: usize) -> TensorRef<'_> {
        let dtype = self.dtype[i];
        TensorRef {
            id: self.id.get(i, own_index),
            name: self.name.get(i),
            bytes: self.bytes[i],
            kind: self.kind[i],
            shape: self.has_shape[i].then(|| self.shape.get(i)),
            dtype: (dtype != 0).then(|| self.dtypes.name(dtype)),
            producer: Some(self.producer[i]).filter(|&p| p != NONE),
            consumers: self.consumers.get(i),
        }
    }

    /// Appends a tensor.
    pub fn push(&mut self, t: Tensor) {
        self.push_row(t.row());
    }

    /// Appends a tensor from a borrowed row.
    pub fn push_row(&mut self, r: TensorRef<'_>) {
        let i = self.len();
        self.id.push(i, r.id, own_index);
        self.name.push(r.name);
        self.bytes.push(r.bytes);
        self.kind.push(r.kind);
        self.has_shape.push(r.shape.is_some());
        self.shape.push(r.shape.unwrap_or(&[]));
        let d = r.dtype.map_or(0, |d| self.dtypes.id(d));
        self.dtype.push(d);
        self.producer.push(r.producer.unwrap_or(NONE));
        self.consumers.push(r.consumers);
    }

    /// Sets every tensor's kind, producer (`usize::MAX`: none) and
    /// consumers at once: the builder links them after the ops are known.
    pub(crate) fn link(&mut self, kind: Vec<TensorKind>, producer: Vec<usize>, consumers: IdLists) {
        debug_assert!(kind.len() == self.len() && producer.len() == self.len());
        self.kind = kind;
        self.producer = producer;
        self.consumers = consumers;
    }

    /// For [`Tensors::update`]: size, kind, type and producer change in
    /// place; a changed name, id, shape or consumer list needs the
    /// columns rebuilt.
    fn set_in_place(&mut self, i: usize, before: &Tensor, t: &Tensor) -> bool {
        let in_place = t.name == before.name
            && t.id == before.id
            && t.shape == before.shape
            && t.consumers == before.consumers;
        if !in_place {
            return false;
        }
        self.bytes[i] = t.bytes;
        self.kind[i] = t.kind;
        self.dtype[i] = t.dtype.as_deref().map_or(0, |d| self.dtypes.id(d));
        self.producer[i] = t.producer.unwrap_or(NONE);
        true
    }

    /// Gives back the columns' unused room (after building).
    pub fn shrink_to_fit(&mut self) {
        self.id.shrink();
        self.name.shrink();
        self.bytes.shrink_to_fit();
        self.kind.shrink_to_fit();
        self.has_shape.shrink_to_fit();
        self.shape.shrink();
        self.dtype.shrink_to_fit();
        self.producer.shrink_to_fit();
        self.consumers.shrink();
    }

    /// Heap bytes the columns hold (the dictionary at 64 bytes a name).
    pub fn heap_bytes(&self) -> usize {
        self.id.heap_bytes()
            + self.name.heap_bytes()
            + self.bytes.capacity() * 8
            + self.kind.capacity()
            + self.has_shape.capacity()
            + self.shape.heap_bytes()
            + self.dtype.capacity() * 4
            + self.producer.capacity() * 8
            + self.consumers.heap_bytes()
            + self.dtypes.len() * 64
    }
}

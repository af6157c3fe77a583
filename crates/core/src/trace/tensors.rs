//! A trace's tensors held as columns (struct of arrays), as its ops and
//! events are: pools interned, consumers as one array of ids with
//! offsets. What a tensor costs:
//!
//! | column        | bytes per tensor                                   |
//! |---------------|----------------------------------------------------|
//! | `name`        | 24 (inline up to 24 bytes, else + heap)            |
//! | `bytes`       | 8                                                  |
//! | `kind`        | 1                                                  |
//! | `pool`        | 4 (a dictionary id)                                |
//! | `producer`    | 0 until some tensor has one, then 3/16 and 8 per value|
//! | `consumers`   | 8 (an offset) + 8 per consumer                     |
//! | `id`          | 0 while every tensor's id is its index, else 8     |
//!
//! The vector of [`TraceTensor`] rows it replaced held 104 bytes of struct
//! per tensor and a heap allocation for each non-empty consumer list.
//! Readers take [`TensorRef`] rows (the same field names, strings and
//! lists borrowed); writers push [`TraceTensor`] rows; the JSON is the
//! same array of objects.

use super::columnar::{kind_of, kind_tag, Reader, Writer};
use super::{TensorKind, TraceTensor};
use crate::cols::{own_index, row_list, Dictionary, IdLists, Lazy, Names, OptCol, Slab};
use serde::Serialize;

/// One tensor, borrowed from the columns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TensorRef<'a> {
    pub id: usize,
    pub name: &'a str,
    pub bytes: u64,
    pub kind: TensorKind,
    pub pool: &'a str,
    pub producer: Option<usize>,
    pub consumers: &'a [usize],
}

impl TensorRef<'_> {
    /// The tensor as an owned row.
    pub fn owned(&self) -> TraceTensor {
        TraceTensor {
            id: self.id,
            name: self.name.into(),
            bytes: self.bytes,
            kind: self.kind,
            pool: self.pool.into(),
            producer: self.producer,
            consumers: self.consumers.to_vec(),
        }
    }
}

impl TraceTensor {
    /// The row borrowed as the columns lend it.
    pub fn row(&self) -> TensorRef<'_> {
        TensorRef {
            id: self.id,
            name: &self.name,
            bytes: self.bytes,
            kind: self.kind,
            pool: &self.pool,
            producer: self.producer,
            consumers: &self.consumers,
        }
    }
}

/// A trace's tensors, by id (see the module's doc).
#[derive(Clone, Default)]
pub struct Tensors {
    /// Empty while every tensor's id is its index.
    id: Lazy<usize>,
    name: Names,
    bytes: Slab<u64>,
    kind: Vec<TensorKind>,
    pool: Slab<u32>,
    producer: OptCol,
    consumers: IdLists,
    pools: Dictionary,
}

row_list!(Tensors, TensorRef, TraceTensor, "an array of tensors");

impl Tensors {
    pub fn new() -> Tensors {
        Tensors::default()
    }

    pub fn len(&self) -> usize {
        self.name.len()
    }

    /// Tensor `i` as a row. Panics when `i` is out of range, like indexing.
    pub fn at(&self, i: usize) -> TensorRef<'_> {
        TensorRef {
            id: self.id.get(i, own_index),
            name: self.name.get(i),
            bytes: self.bytes[i],
            kind: self.kind[i],
            pool: self.pools.name(self.pool[i]),
            producer: self.producer.get(i).map(|p| p as usize),
            consumers: self.consumers.get(i),
        }
    }

    /// Every tensor's size (a column, for loops that need no whole row).
    pub fn bytes_col(&self) -> &[u64] {
        &self.bytes
    }

    /// The largest op id a tensor names as its producer or a consumer.
    pub fn max_op_ref(&self) -> Option<usize> {
        let producers = self.producer.vals.max().map(|p| p as usize);
        let consumers = self.consumers.ids.iter().copied().max();
        producers.max(consumers)
    }

    /// Every tensor's kind.
    pub fn kind_col(&self) -> &[TensorKind] {
        &self.kind
    }

    /// Appends a tensor.
    pub fn push(&mut self, t: TraceTensor) {
        self.push_fields(&t.row());
        self.name.push(&t.name);
    }

    /// Appends a tensor from a borrowed row (its name copied).
    pub fn push_ref(&mut self, t: TensorRef<'_>) {
        self.push_fields(&t);
        self.name.push(t.name);
    }

    /// Every column of a push but the name.
    fn push_fields(&mut self, t: &TensorRef<'_>) {
        let i = self.len();
        self.id.push(i, t.id, own_index);
        self.bytes.push(t.bytes);
        self.kind.push(t.kind);
        let pool = self.pools.id(t.pool);
        self.pool.push(pool);
        self.producer.push(i, t.producer.map(|p| p as u64));
        self.consumers.push(t.consumers);
    }

    /// Appends `other`'s tensors after these (a part parsed on its own).
    pub fn append(&mut self, other: Tensors) {
        let (rows, n) = (self.len(), other.len());
        let map = self.pools.ids_of(&other.pools);
        self.id.append(rows, &other.id, n, own_index, |v| v);
        self.bytes.extend_from_slice(&other.bytes);
        self.kind.extend_from_slice(&other.kind);
        self.pool
            .extend(other.pool.iter().map(|&p| map[p as usize]));
        self.producer.append(rows, &other.producer);
        self.consumers.append(&other.consumers);
        self.name.append(&other.name);
    }

    /// Tensor `i`'s pool (the one field a merge of cores moves in place).
    pub fn set_pool(&mut self, i: usize, pool: &str) {
        self.pool[i] = self.pools.id(pool);
    }

    /// For [`Tensors::update`]: a changed consumer list needs the columns
    /// rebuilt (only fixing up a trace does that); the rest changes in
    /// place.
    fn set_in_place(&mut self, i: usize, before: &TraceTensor, t: &TraceTensor) -> bool {
        // Names are one blob: a renamed tensor rebuilds it.
        if t.consumers != before.consumers || t.name != before.name {
            return false;
        }
        let n = self.len();
        self.id.set(i, n, t.id, own_index);
        self.bytes[i] = t.bytes;
        self.kind[i] = t.kind;
        self.pool[i] = self.pools.id(&t.pool);
        self.producer.set(i, t.producer.map(|p| p as u64));
        true
    }

    /// Gives back the columns' unused room (after loading).
    pub fn shrink_to_fit(&mut self) {
        self.id.shrink();
        self.name.shrink();
        self.bytes.shrink_to_fit();
        self.kind.shrink_to_fit();
        self.pool.shrink_to_fit();
        self.producer.shrink();
        self.consumers.shrink();
    }

    /// Heap bytes the columns hold (pool names at 64 bytes each): the
    /// figure docs/memory.md quotes.
    pub fn heap_bytes(&self) -> usize {
        self.id.heap_bytes()
            + self.name.heap_bytes()
            + self.bytes.capacity() * 8
            + self.kind.capacity() * std::mem::size_of::<TensorKind>()
            + self.pool.capacity() * 4
            + self.producer.heap_bytes()
            + self.consumers.heap_bytes()
            + self.pools.len() * 64
    }
}

impl Tensors {
    /// The columns as they are held, for the binary cache
    /// ([`super::columnar`]): reading them back is a copy per column, no
    /// row assembled and no name interned again.
    pub(super) fn encode<W: std::io::Write>(&self, w: &mut Writer<W>) -> std::io::Result<()> {
        let n = self.len();
        w.u64s(1, std::iter::once(n as u64))?;
        w.counted(self.id.vals.iter().map(|&v| v as u64))?;
        w.names(&self.name)?;
        w.u64s(n, self.bytes.iter().copied())?;
        w.u8s(n, self.kind.iter().map(|&k| kind_tag(k)))?;
        w.dict(&self.pools)?;
        w.u32s(n, self.pool.iter().copied())?;
        w.opt_col(&self.producer, n)?;
        w.id_lists(&self.consumers)
    }

    /// What [`Tensors::encode`] wrote, every length, tag and name id
    /// checked (references are the trace's checks).
    pub(super) fn decode(r: &mut Reader) -> Result<Tensors, String> {
        let n = r.count("tensors")?;
        let id = r.counted(n, "tensor ids")?;
        let name = r.names(n, "tensor names")?;
        let bytes = r.u64s(n, "tensor sizes")?;
        let kind = r.tags(n, "tensor kinds", kind_of)?;
        let pools = r.dict("tensor pools")?;
        let pool = r.ids_below(n, pools.len(), "tensor pool ids")?;
        let producer = r.opt_col(n, "tensor producers")?;
        let consumers = r.id_lists(n, "tensor consumers")?;
        Ok(Tensors {
            id: Lazy::of_u64s(id),
            name,
            bytes,
            kind,
            pool,
            producer,
            consumers,
            pools,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_tensor() -> impl Strategy<Value = TraceTensor> {
        (
            0usize..6,
            "[a-z]{0,30}",
            0u64..1 << 40,
            prop::sample::select(vec![
                TensorKind::Input,
                TensorKind::Weight,
                TensorKind::Activation,
                TensorKind::Output,
            ]),
            prop::sample::select(vec!["sram", "a pool name past twenty-four bytes"]),
            proptest::option::of(0usize..9),
            proptest::collection::vec(0usize..9, 0..4),
        )
            .prop_map(
                |(id, name, bytes, kind, pool, producer, consumers)| TraceTensor {
                    id,
                    name: name.into(),
                    bytes,
                    kind,
                    pool: pool.into(),
                    producer,
                    consumers,
                },
            )
    }

    proptest! {
        /// Every row comes back as pushed and as changed; the JSON is the
        /// row vector's byte for byte and reads back the same.
        #[test]
        fn columns_hold_what_rows_held(
            rows in proptest::collection::vec(arb_tensor(), 0..20),
            new in arb_tensor(),
            at in 0usize..20,
        ) {
            let mut ts: Tensors = rows.iter().cloned().collect();
            for (i, r) in rows.iter().enumerate() {
                prop_assert_eq!(ts.at(i).owned(), r.clone());
            }
            let json = serde_json::to_string(&ts).unwrap();
            prop_assert_eq!(&json, &serde_json::to_string(&rows).unwrap());
            let back: Tensors = serde_json::from_str(&json).unwrap();
            prop_assert_eq!(&back, &ts);
            if !rows.is_empty() {
                let at = at % rows.len();
                ts.update(at, |t| *t = new.clone());
                let mut want = rows.clone();
                want[at] = new;
                prop_assert_eq!(ts.iter().map(|t| t.owned()).collect::<Vec<_>>(), want);
            }
        }
    }
}

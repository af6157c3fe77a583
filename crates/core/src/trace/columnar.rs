//! The trace as columns in bytes: the body of the binary trace cache
//! ([`super::store`]). Events, ops and tensors are written field by field
//! (one little-endian array per field, strings as offsets into one blob,
//! id lists as offsets into one array), so reading them back is a copy per
//! column plus one pass that assembles rows, in parallel, instead of a JSON
//! parse. The small parts (schema, source, meta, pools, counters, summary)
//! are one JSON header: they are a few kilobytes and their JSON is the
//! contract's.
//!
//! Every array is preceded by its byte length and padded to 8 bytes; a
//! reader checks every length, every offset and every enum tag, so a damaged
//! body is an error, never a panic or an out-of-range id (the trace's own
//! checks run again after decoding, as for JSON).

use super::ops::{OpCols, OpRest};
use super::tensors::TensorCols;
use super::{Bound, Counter, Events, Meta, OpRef, Ops, Pool, Source, Summary, Tensors, Trace};
use crate::cols::{IdLists, Names, Narrow};
use crate::graph::TensorKind;
use serde::{Deserialize, Serialize};
use std::io::{self, Write};

/// `None` in a `u64` id column.
const NONE: u64 = u64::MAX;

/// Writes arrays as the reader expects them: a `u64` byte length, the
/// values, zero padding to 8 bytes. Counts the bytes written.
pub struct Writer<W: Write> {
    w: W,
    written: u64,
}

impl<W: Write> Writer<W> {
    pub fn new(w: W) -> Writer<W> {
        Writer { w, written: 0 }
    }

    pub fn into_inner(self) -> W {
        self.w
    }

    fn raw(&mut self, b: &[u8]) -> io::Result<()> {
        self.written += b.len() as u64;
        self.w.write_all(b)
    }

    /// One array of `len` bytes filled by `fill`, which must write exactly
    /// that many.
    fn array(
        &mut self,
        len: u64,
        fill: impl FnOnce(&mut Self) -> io::Result<()>,
    ) -> io::Result<()> {
        self.raw(&len.to_le_bytes())?;
        let start = self.written;
        fill(self)?;
        if self.written - start != len {
            return Err(io::Error::other("column length miscounted"));
        }
        let pad = (8 - len % 8) % 8;
        self.raw(&[0u8; 8][..pad as usize])
    }

    pub fn bytes(&mut self, b: &[u8]) -> io::Result<()> {
        self.array(b.len() as u64, |w| w.raw(b))
    }

    /// A column of `u64`s (written through a buffer: one call per value
    /// would cost more than the copy).
    pub fn u64s(&mut self, n: usize, vals: impl Iterator<Item = u64>) -> io::Result<()> {
        self.fixed(n, 8, vals.map(u64::to_le_bytes))
    }

    pub fn u32s(&mut self, n: usize, vals: impl Iterator<Item = u32>) -> io::Result<()> {
        self.fixed(n, 4, vals.map(u32::to_le_bytes))
    }

    pub fn u8s(&mut self, n: usize, vals: impl Iterator<Item = u8>) -> io::Result<()> {
        self.fixed(n, 1, vals.map(|v| [v]))
    }

    /// A column as wide as it is held: its width in bytes, then its
    /// values (so reading it back is a copy, not a narrowing).
    pub(crate) fn narrow(&mut self, c: &Narrow) -> io::Result<()> {
        self.u64s(1, std::iter::once(c.width() as u64))?;
        let n = c.len();
        match c {
            Narrow::U8(v) => self.bytes(v),
            Narrow::U16(v) => self.fixed(n, 2, v.iter().map(|x| x.to_le_bytes())),
            Narrow::U32(v) => self.fixed(n, 4, v.iter().map(|x| x.to_le_bytes())),
            Narrow::U64(v) => self.fixed(n, 8, v.iter().map(|x| x.to_le_bytes())),
        }
    }

    fn fixed<const K: usize>(
        &mut self,
        n: usize,
        k: usize,
        vals: impl Iterator<Item = [u8; K]>,
    ) -> io::Result<()> {
        self.array((n * k) as u64, |w| {
            let mut buf = Vec::with_capacity(1 << 16);
            for v in vals {
                buf.extend_from_slice(&v);
                if buf.len() >= 1 << 16 {
                    w.raw(&buf)?;
                    buf.clear();
                }
            }
            w.raw(&buf)
        })
    }

    /// Strings as `n + 1` offsets into one blob, then the blob.
    pub fn strs<'a>(
        &mut self,
        n: usize,
        it: impl Iterator<Item = &'a str> + Clone,
    ) -> io::Result<()> {
        let mut at = 0u64;
        let offsets = std::iter::once(0).chain(it.clone().map(|s| {
            at += s.len() as u64;
            at
        }));
        self.u64s(n + 1, offsets)?;
        let total: usize = it.clone().map(str::len).sum();
        self.array(total as u64, |w| {
            let mut buf = Vec::with_capacity(1 << 16);
            for s in it {
                buf.extend_from_slice(s.as_bytes());
                if buf.len() >= 1 << 16 {
                    w.raw(&buf)?;
                    buf.clear();
                }
            }
            w.raw(&buf)
        })
    }

    /// Lists of ids as `n + 1` offsets into one array of values.
    pub fn lists<'a>(
        &mut self,
        n: usize,
        it: impl Iterator<Item = &'a [usize]> + Clone,
    ) -> io::Result<()> {
        let mut at = 0u64;
        let offsets = std::iter::once(0).chain(it.clone().map(|l| {
            at += l.len() as u64;
            at
        }));
        self.u64s(n + 1, offsets)?;
        let total: usize = it.clone().map(<[usize]>::len).sum();
        self.u64s(total, it.flat_map(|l| l.iter().map(|&v| v as u64)))
    }
}

/// Reads what a [`Writer`] wrote, checking every length against the bytes
/// left.
pub struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

pub type Fail = String;

impl<'a> Reader<'a> {
    pub fn new(b: &'a [u8]) -> Reader<'a> {
        Reader { b, at: 0 }
    }

    pub fn at_end(&self) -> bool {
        self.at == self.b.len()
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], Fail> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| format!("{what}: runs past the end of the file"))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }

    /// One array's bytes (its padding skipped).
    pub fn bytes(&mut self, what: &str) -> Result<&'a [u8], Fail> {
        let len = self.take(8, what)?;
        let len = u64::from_le_bytes(len.try_into().map_err(|_| what.to_string())?);
        let len = usize::try_from(len).map_err(|_| format!("{what}: length {len}"))?;
        let s = self.take(len, what)?;
        self.take((8 - len % 8) % 8, what)?;
        Ok(s)
    }

    fn fixed<const K: usize>(&mut self, n: usize, what: &str) -> Result<&'a [u8], Fail> {
        let b = self.bytes(what)?;
        if Some(b.len()) != n.checked_mul(K) {
            return Err(format!(
                "{what}: {} bytes, expected {n} values of {K}",
                b.len()
            ));
        }
        Ok(b)
    }

    pub fn u64s(&mut self, n: usize, what: &str) -> Result<Vec<u64>, Fail> {
        let b = self.fixed::<8>(n, what)?;
        Ok(b.chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect())
    }

    /// A column of `u64`s of any length.
    pub fn u64s_any(&mut self, what: &str) -> Result<Vec<u64>, Fail> {
        let n = self.peek_len(what)? / 8;
        self.u64s(n, what)
    }

    /// The byte length of the next array.
    fn peek_len(&self, what: &str) -> Result<usize, Fail> {
        let b = self
            .b
            .get(self.at..self.at + 8)
            .ok_or_else(|| format!("{what}: runs past the end of the file"))?;
        let len = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        usize::try_from(len).map_err(|_| format!("{what}: length {len}"))
    }

    pub fn u32s(&mut self, n: usize, what: &str) -> Result<Vec<u32>, Fail> {
        let b = self.fixed::<4>(n, what)?;
        Ok(b.chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    pub fn u8s(&mut self, n: usize, what: &str) -> Result<&'a [u8], Fail> {
        self.fixed::<1>(n, what)
    }

    /// A column [`Writer::narrow`] wrote, of `n` values (any number when
    /// `None`).
    pub(crate) fn narrow(&mut self, n: Option<usize>, what: &str) -> Result<Narrow, Fail> {
        let w = self.count(what)?;
        let b = self.bytes(what)?;
        let c = Narrow::from_le_bytes(w, b)
            .ok_or_else(|| format!("{what}: {} bytes in values of {w}", b.len()))?;
        match n {
            Some(n) if c.len() != n => Err(format!("{what}: {} values, expected {n}", c.len())),
            _ => Ok(c),
        }
    }

    /// `n` strings, each checked to be UTF-8.
    pub fn strs(&mut self, n: usize, what: &str) -> Result<Strs<'a>, Fail> {
        let offsets = self.offsets(n, what)?;
        let blob = self.bytes(what)?;
        let blob = std::str::from_utf8(blob).map_err(|e| format!("{what}: not UTF-8 ({e})"))?;
        if offsets.last().copied().unwrap_or(0) as usize != blob.len() {
            return Err(format!("{what}: offsets do not end at the text's end"));
        }
        // Every cut must fall between characters.
        if let Some(&bad) = offsets
            .iter()
            .find(|&&o| !blob.is_char_boundary(o as usize))
        {
            return Err(format!("{what}: offset {bad} splits a character"));
        }
        Ok(Strs { offsets, blob })
    }

    /// `n` lists of ids.
    pub fn lists(&mut self, n: usize, what: &str) -> Result<Lists, Fail> {
        let offsets = self.offsets(n, what)?;
        let total = offsets.last().copied().unwrap_or(0) as usize;
        let vals = self.u64s(total, what)?;
        Ok(Lists { offsets, vals })
    }

    /// `n + 1` offsets from 0, never decreasing.
    fn offsets(&mut self, n: usize, what: &str) -> Result<Vec<u64>, Fail> {
        let n1 = n
            .checked_add(1)
            .ok_or_else(|| format!("{what}: count {n}"))?;
        let o = self.u64s(n1, what)?;
        if o.first() != Some(&0) || !o.is_sorted() {
            return Err(format!("{what}: offsets out of order"));
        }
        Ok(o)
    }

    pub fn count(&mut self, what: &str) -> Result<usize, Fail> {
        let v = self.u64s(1, what)?[0];
        usize::try_from(v).map_err(|_| format!("{what}: count {v}"))
    }
}

/// A string column as read.
pub struct Strs<'a> {
    offsets: Vec<u64>,
    blob: &'a str,
}

impl Strs<'_> {
    pub fn get(&self, i: usize) -> &str {
        &self.blob[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }
}

/// An id-list column as read.
pub struct Lists {
    offsets: Vec<u64>,
    vals: Vec<u64>,
}

impl Lists {
    pub fn get(&self, i: usize) -> Vec<usize> {
        self.vals[self.offsets[i] as usize..self.offsets[i + 1] as usize]
            .iter()
            .map(|&v| v as usize)
            .collect()
    }
}

/// The small parts of a trace, as one JSON document.
#[derive(Serialize, Deserialize)]
struct Header {
    schema: String,
    source: Source,
    meta: Meta,
    pools: Vec<Pool>,
    counters: Vec<Counter>,
    summary: Summary,
}

/// Writes `tr` as columns.
pub fn encode<W: Write>(tr: &Trace, w: &mut Writer<W>) -> io::Result<()> {
    let header = Header {
        schema: tr.schema.clone(),
        source: tr.source,
        meta: tr.meta.clone(),
        pools: tr.pools.clone(),
        counters: tr.counters.clone(),
        summary: tr.summary.clone(),
    };
    w.bytes(&serde_json::to_vec(&header).map_err(io::Error::other)?)?;
    encode_tensors(&tr.tensors, w)?;
    encode_ops(&tr.ops, w)?;
    tr.events.encode(w)
}

/// Reads a trace [`encode`] wrote; every reference and range is checked
/// as a JSON trace's are.
pub fn decode(b: &[u8]) -> Result<Trace, Fail> {
    let mut r = Reader::new(b);
    let header: Header =
        serde_json::from_slice(r.bytes("header")?).map_err(|e| format!("header: {e}"))?;
    let tensors = decode_tensors(&mut r)?;
    let ops = decode_ops(&mut r)?;
    let events = Events::decode(&mut r)?;
    if !r.at_end() {
        return Err("bytes after the last column".into());
    }
    let tr = Trace {
        schema: header.schema,
        source: header.source,
        meta: header.meta,
        pools: header.pools,
        tensors,
        ops,
        events,
        counters: header.counters,
        summary: header.summary,
        recomputed: Vec::new(),
    };
    tr.check_refs()?;
    tr.check_ranges()?;
    Ok(tr)
}

fn kind_tag(k: TensorKind) -> u8 {
    match k {
        TensorKind::Input => 0,
        TensorKind::Activation => 1,
        TensorKind::Weight => 2,
        TensorKind::Output => 3,
    }
}

fn kind_of(tag: u8) -> Option<TensorKind> {
    Some(match tag {
        0 => TensorKind::Input,
        1 => TensorKind::Activation,
        2 => TensorKind::Weight,
        3 => TensorKind::Output,
        _ => return None,
    })
}

fn opt(v: Option<usize>) -> u64 {
    v.map_or(NONE, |v| v as u64)
}

fn unopt(v: u64) -> Option<usize> {
    (v != NONE).then_some(v as usize)
}

fn encode_tensors<W: Write>(ts: &Tensors, w: &mut Writer<W>) -> io::Result<()> {
    let n = ts.len();
    w.u64s(1, std::iter::once(n as u64))?;
    w.u64s(n, ts.iter().map(|t| t.id as u64))?;
    w.strs(n, ts.iter().map(|t| t.name))?;
    w.u64s(n, ts.bytes_col().iter().copied())?;
    w.u8s(n, ts.iter().map(|t| kind_tag(t.kind)))?;
    w.strs(n, ts.iter().map(|t| t.pool))?;
    w.u64s(n, ts.iter().map(|t| opt(t.producer)))?;
    w.lists(n, ts.iter().map(|t| t.consumers))
}

fn decode_tensors(r: &mut Reader) -> Result<Tensors, Fail> {
    let n = r.count("tensors")?;
    let id = r.u64s(n, "tensor ids")?;
    let name = r.strs(n, "tensor names")?;
    let bytes = r.u64s(n, "tensor sizes")?;
    let kind = r
        .u8s(n, "tensor kinds")?
        .iter()
        .map(|&k| kind_of(k).ok_or_else(|| format!("tensor kinds: unknown tag {k}")))
        .collect::<Result<Vec<_>, Fail>>()?;
    let pool = r.strs(n, "tensor pools")?;
    let producer = r.u64s(n, "tensor producers")?;
    let consumers = r.lists(n, "tensor consumers")?;
    let names = names_of(&name, n);
    let cols = TensorCols {
        id,
        name: names,
        bytes,
        kind,
        consumers: id_lists(consumers),
    };
    Ok(Tensors::from_cols(
        cols,
        |i| pool.get(i),
        |i| unopt(producer[i]),
    ))
}

fn bound_tag(b: Option<Bound>) -> u8 {
    match b {
        None => 0,
        Some(Bound::Compute) => 1,
        Some(Bound::Memory) => 2,
    }
}

fn bound_of(tag: u8) -> Option<Option<Bound>> {
    match tag {
        0 => Some(None),
        1 => Some(Some(Bound::Compute)),
        2 => Some(Some(Bound::Memory)),
        _ => None,
    }
}

/// Which of an op's optional fields are present, one bit each.
const HAS_FLOPS: u8 = 1;
const HAS_UNIT: u8 = 2;
const HAS_SELF: u8 = 4;
const HAS_CONTENTION: u8 = 8;

fn encode_ops<W: Write>(os: &Ops, w: &mut Writer<W>) -> io::Result<()> {
    let n = os.len();
    w.u64s(1, std::iter::once(n as u64))?;
    w.u64s(n, os.iter().map(|o| o.id as u64))?;
    w.strs(n, os.iter().map(|o| o.name))?;
    w.strs(n, os.iter().map(|o| o.op_type))?;
    w.u64s(n, os.start_col().iter().copied())?;
    w.u64s(n, os.end_col().iter().copied())?;
    w.u64s(n, os.iter().map(|o| o.stall_ns))?;
    w.lists(n, os.iter().map(|o| o.inputs))?;
    w.lists(n, os.iter().map(|o| o.outputs))?;
    w.lists(n, os.iter().map(|o| o.streamed))?;
    let has = |o: OpRef| {
        let bit = |on: bool, b: u8| if on { b } else { 0 };
        bit(o.flops.is_some(), HAS_FLOPS)
            | bit(o.unit.is_some(), HAS_UNIT)
            | bit(o.self_ns.is_some(), HAS_SELF)
            | bit(o.contention_ns.is_some(), HAS_CONTENTION)
    };
    w.u8s(n, os.iter().map(has))?;
    w.u64s(n, os.iter().map(|o| o.flops.unwrap_or(0.0).to_bits()))?;
    w.u8s(n, os.iter().map(|o| bound_tag(o.bound)))?;
    w.strs(n, os.iter().map(|o| o.unit.map_or("", |u| u.as_str())))?;
    w.u64s(n, os.iter().map(|o| opt(o.parent)))?;
    w.u64s(n, os.iter().map(|o| o.self_ns.unwrap_or(0)))?;
    w.u64s(n, os.iter().map(|o| o.contention_ns.unwrap_or(0)))
}

/// A string column as the lists hold their names: one blob.
fn names_of(s: &Strs, n: usize) -> Names {
    let mut names = Names::default();
    for i in 0..n {
        names.push(s.get(i));
    }
    names.shrink();
    names
}

/// An id-list column as the ops hold it.
fn id_lists(l: Lists) -> IdLists {
    IdLists::from_offsets(&l.offsets, l.vals)
}

fn decode_ops(r: &mut Reader) -> Result<Ops, Fail> {
    let n = r.count("ops")?;
    let id = r.u64s(n, "op ids")?;
    let name = r.strs(n, "op names")?;
    let op_type = r.strs(n, "op types")?;
    let start = r.u64s(n, "op starts")?;
    let end = r.u64s(n, "op ends")?;
    let stall = r.u64s(n, "op stalls")?;
    let inputs = r.lists(n, "op inputs")?;
    let outputs = r.lists(n, "op outputs")?;
    let streamed = r.lists(n, "op streamed operands")?;
    let has = r.u8s(n, "op fields present")?;
    let flops = r.u64s(n, "op flops")?;
    let bound = r
        .u8s(n, "op bounds")?
        .iter()
        .map(|&b| bound_of(b).ok_or_else(|| format!("op bounds: unknown tag {b}")))
        .collect::<Result<Vec<_>, Fail>>()?;
    let unit = r.strs(n, "op units")?;
    let parent = r.u64s(n, "op parents")?;
    let self_ns = r.u64s(n, "op self times")?;
    let contention = r.u64s(n, "op contention stalls")?;
    let names = names_of(&name, n);
    let cols = OpCols {
        id,
        name: names,
        start_ns: start,
        end_ns: end,
        stall_ns: stall,
        inputs: id_lists(inputs),
        outputs: id_lists(outputs),
        streamed: id_lists(streamed),
        bound,
    };
    Ok(Ops::from_cols(cols, |i| OpRest {
        op_type: op_type.get(i),
        unit: (has[i] & HAS_UNIT != 0).then(|| unit.get(i)),
        flops: (has[i] & HAS_FLOPS != 0).then(|| f64::from_bits(flops[i])),
        parent: unopt(parent[i]),
        self_ns: (has[i] & HAS_SELF != 0).then_some(self_ns[i]),
        contention_ns: (has[i] & HAS_CONTENTION != 0).then_some(contention[i]),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn encoded() -> Vec<u8> {
        let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../sample-traces/encdec-1mib.lru.json");
        let tr = Trace::load(&p).unwrap();
        let mut w = Writer::new(Vec::new());
        encode(&tr, &mut w).unwrap();
        w.into_inner()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Damaged bytes are an error or a trace that passes the checks,
        /// never a panic (the checksum is not all that stands between a
        /// damaged file and the analyses).
        #[test]
        fn damaged_columns_are_an_error_never_a_panic(
            flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
            cut in prop::option::of(any::<prop::sample::Index>()),
        ) {
            let mut b = encoded();
            for (at, v) in flips {
                let i = at.index(b.len());
                b[i] = v;
            }
            if let Some(c) = cut {
                b.truncate(c.index(b.len()));
            }
            if let Ok(tr) = decode(&b) {
                prop_assert!(tr.check_refs().is_ok());
                prop_assert!(tr.check_ranges().is_ok());
            }
        }
    }
}

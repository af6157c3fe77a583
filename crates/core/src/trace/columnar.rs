//! The trace as columns in bytes: the body of the binary trace cache
//! ([`super::store`]). Events, ops and tensors are written as they are held
//! (one little-endian array per column at its width, names as offsets into
//! one blob, id lists as offsets into one array, interned types, pools and
//! units as their dictionaries and ids, optional fields as values and
//! presence bits), so reading them back is a copy per column: no row is
//! assembled and no name interned again (assembling rows was two thirds of
//! reading a 10M-event entry). A table of where the tensors, ops and events
//! start ends the body, so the events are read on one core while the
//! tensors and ops are read on another (a 10M-event entry 1.2 -> 0.75 s).
//! The small parts (schema, source, meta, pools, the counters but for their
//! samples, summary) are one JSON header: they are a few kilobytes and
//! their JSON is the contract's. The counters' samples follow
//! it as two columns each (times, values as `f64` bits): a simulation's
//! `live_bytes` counter has a sample per op, and as JSON it was a sixth of
//! reading a 10M-event entry back.
//!
//! Every array is preceded by its byte length and padded to 8 bytes; a
//! reader checks every length, every offset and every enum tag, so a damaged
//! body is an error, never a panic or an out-of-range id (the trace's own
//! checks run again after decoding, as for JSON).

use super::{Bound, Counter, Events, Meta, Ops, Pool, Source, Summary, Tensors, Trace};
use crate::cols::{Backing, Dictionary, IdLists, Names, Narrow, OptCol, Plain, Slab};
use crate::graph::TensorKind;
use serde::{Deserialize, Serialize};
use std::io::{self, Write};

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

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
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

    /// An optional column of `n` rows: the values of the rows that have
    /// one, then one bit per row (no bits at all while no row has one).
    pub(crate) fn opt_col(&mut self, c: &OptCol, n: usize) -> io::Result<()> {
        self.narrow(&c.vals)?;
        let words = if c.vals.is_empty() { 0 } else { n.div_ceil(64) };
        let pad = words.saturating_sub(c.present.len());
        let present = c.present.iter().copied().take(words);
        self.u64s(words, present.chain(std::iter::repeat_n(0, pad)))
    }

    /// A name column as it is held: its ends and its blob.
    pub(crate) fn names(&mut self, c: &Names) -> io::Result<()> {
        let n = c.len();
        self.strs(n, (0..n).map(|i| c.get(i)))
    }

    /// A dictionary's names in id order (the empty name first).
    pub(crate) fn dict(&mut self, d: &Dictionary) -> io::Result<()> {
        let names = &d.names;
        self.u64s(1, std::iter::once(names.len() as u64))?;
        self.strs(names.len(), names.iter().map(|s| s.as_str()))
    }

    /// A column that may be empty (a [`crate::cols::Lazy`] one): its
    /// length, then its values.
    pub(crate) fn counted(&mut self, vals: impl ExactSizeIterator<Item = u64>) -> io::Result<()> {
        let n = vals.len();
        self.u64s(1, std::iter::once(n as u64))?;
        self.u64s(n, vals)
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

    /// Id lists as they are held.
    pub(crate) fn id_lists(&mut self, l: &IdLists) -> io::Result<()> {
        let n = l.ends.len();
        self.lists(n, (0..n).map(|i| l.get(i)))
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
    /// Told of the bytes behind the reader, a stretch at a time (the
    /// cache drops them from its mapping: they are columns by then).
    release: Option<&'a Release<'a>>,
    released: usize,
    release_every: usize,
    /// Where `b` starts in the bytes `release` is told of.
    base: usize,
    /// The mapping `b` lies in, when it does: columns are read in place.
    map: Option<&'a Backing>,
}

/// What a reader tells of the bytes behind it (ranges of the whole body).
pub type Release<'a> = dyn Fn(std::ops::Range<usize>) + Sync + 'a;

/// How many bytes the reader passes before it releases them.
const RELEASE_BYTES: usize = 32 << 20;

pub type Fail = String;

impl<'a> Reader<'a> {
    pub fn new(b: &'a [u8]) -> Reader<'a> {
        Reader {
            b,
            at: 0,
            release: None,
            released: 0,
            release_every: RELEASE_BYTES,
            base: 0,
            map: None,
        }
    }

    /// A reader of `b`, which lies in `map`: its columns borrow the
    /// mapping instead of being copied (releasing as [`Reader::releasing`];
    /// a released page is read again from the page cache when touched).
    pub fn mapped(b: &'a [u8], map: &'a Backing, release: &'a Release<'a>) -> Reader<'a> {
        Reader {
            map: Some(map),
            ..Reader::releasing(b, release)
        }
    }

    /// A reader that hands `release` each stretch of bytes it has read
    /// past: nothing it returned borrows them after the next read.
    pub fn releasing(b: &'a [u8], release: &'a Release<'a>) -> Reader<'a> {
        Reader {
            release: Some(release),
            ..Reader::new(b)
        }
    }

    /// A reader of `range` of this reader's bytes, releasing as this one
    /// does (a section read on a thread of its own).
    fn section(&self, range: std::ops::Range<usize>) -> Reader<'a> {
        Reader {
            b: &self.b[range.clone()],
            at: 0,
            release: self.release,
            released: 0,
            release_every: self.release_every,
            base: self.base + range.start,
            map: self.map,
        }
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
        // The arrays before this one are read by now (every caller reads
        // an array before it asks for the next).
        if let Some(f) = self.release {
            if self.at - self.released >= self.release_every {
                f(self.base + self.released..self.base + self.at);
                self.released = self.at;
            }
        }
        let len = self.take(8, what)?;
        let len = u64::from_le_bytes(len.try_into().map_err(|_| what.to_string())?);
        let len = usize::try_from(len).map_err(|_| format!("{what}: length {len}"))?;
        let s = self.take(len, what)?;
        self.take((8 - len % 8) % 8, what)?;
        Ok(s)
    }

    pub(crate) fn fixed<const K: usize>(&mut self, n: usize, what: &str) -> Result<&'a [u8], Fail> {
        let b = self.bytes(what)?;
        if Some(b.len()) != n.checked_mul(K) {
            return Err(format!(
                "{what}: {} bytes, expected {n} values of {K}",
                b.len()
            ));
        }
        Ok(b)
    }

    /// `n` values of `T`, in place when the reader is over a mapping.
    fn slab<T: Plain, const K: usize>(&mut self, n: usize, what: &str) -> Result<Slab<T>, Fail> {
        let b = self.fixed::<K>(n, what)?;
        Slab::of_le(b, self.map).ok_or_else(|| format!("{what}: {} bytes", b.len()))
    }

    pub(crate) fn u64s(&mut self, n: usize, what: &str) -> Result<Slab<u64>, Fail> {
        self.slab::<u64, 8>(n, what)
    }

    pub(crate) fn u32s(&mut self, n: usize, what: &str) -> Result<Slab<u32>, Fail> {
        self.slab::<u32, 4>(n, what)
    }

    /// `n` ids stored in 8 bytes each.
    fn usizes(&mut self, n: usize, what: &str) -> Result<Slab<usize>, Fail> {
        #[cfg(target_pointer_width = "64")]
        return self.slab::<usize, 8>(n, what);
        #[cfg(not(target_pointer_width = "64"))]
        return Ok(self.u64s(n, what)?.iter().map(|&v| v as usize).collect());
    }

    pub fn u8s(&mut self, n: usize, what: &str) -> Result<&'a [u8], Fail> {
        self.fixed::<1>(n, what)
    }

    /// `n` ids into a dictionary of `k` names (an id past it is an error).
    pub(crate) fn ids_below(&mut self, n: usize, k: usize, what: &str) -> Result<Slab<u32>, Fail> {
        let ids = self.u32s(n, what)?;
        match ids.iter().find(|&&i| i as usize >= k) {
            Some(bad) => Err(format!("{what}: {bad} of {k}")),
            None => Ok(ids),
        }
    }

    /// `n` one-byte tags, each read by `of` (an unknown tag is an error).
    pub(crate) fn tags<T>(
        &mut self,
        n: usize,
        what: &str,
        of: impl Fn(u8) -> Option<T>,
    ) -> Result<Vec<T>, Fail> {
        self.u8s(n, what)?
            .iter()
            .map(|&t| of(t).ok_or_else(|| format!("{what}: unknown tag {t}")))
            .collect()
    }

    /// A column [`Writer::narrow`] wrote, of `n` values (any number when
    /// `None`).
    pub(crate) fn narrow(&mut self, n: Option<usize>, what: &str) -> Result<Narrow, Fail> {
        let w = self.count(what)?;
        let b = self.bytes(what)?;
        let c = Narrow::from_mapped(w, b, self.map)
            .ok_or_else(|| format!("{what}: {} bytes in values of {w}", b.len()))?;
        match n {
            Some(n) if c.len() != n => Err(format!("{what}: {} values, expected {n}", c.len())),
            _ => Ok(c),
        }
    }

    /// An optional column [`Writer::opt_col`] wrote, of `n` rows.
    pub(crate) fn opt_col(&mut self, n: usize, what: &str) -> Result<OptCol, Fail> {
        let vals = self.narrow(None, what)?;
        let words = if vals.is_empty() { 0 } else { n.div_ceil(64) };
        let present = self.u64s(words, what)?;
        OptCol::from_parts(present, vals)
            .ok_or_else(|| format!("{what}: values and presence bits disagree"))
    }

    /// `n` names, as [`Writer::names`] wrote them.
    pub(crate) fn names(&mut self, n: usize, what: &str) -> Result<Names, Fail> {
        let offsets = self.offsets(n, what)?;
        let blob = self.bytes(what)?;
        let blob = Slab::of_le(blob, self.map).ok_or_else(|| what.to_string())?;
        Names::from_offsets(blob, offsets).ok_or_else(|| {
            format!("{what}: not UTF-8, or an offset off its end or inside a character")
        })
    }

    /// A dictionary [`Writer::dict`] wrote.
    pub(crate) fn dict(&mut self, what: &str) -> Result<Dictionary, Fail> {
        let k = self.count(what)?;
        let strs = self.strs(k, what)?;
        Dictionary::from_names((0..k).map(|i| strs.get(i)), what)
    }

    /// A column [`Writer::counted`] wrote: none, or one value per row.
    pub(crate) fn counted(&mut self, rows: usize, what: &str) -> Result<Slab<u64>, Fail> {
        let n = self.count(what)?;
        if n != 0 && n != rows {
            return Err(format!("{what}: {n} values for {rows} rows"));
        }
        self.u64s(n, what)
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

    /// `n` lists of ids, as the ops and tensors hold them.
    pub(crate) fn id_lists(&mut self, n: usize, what: &str) -> Result<IdLists, Fail> {
        let offsets = self.offsets(n, what)?;
        let total = offsets.last().copied().unwrap_or(0) as usize;
        let ids = self.usizes(total, what)?;
        Ok(IdLists::from_offsets(offsets, ids))
    }

    /// `n + 1` offsets from 0, never decreasing.
    fn offsets(&mut self, n: usize, what: &str) -> Result<Slab<u64>, Fail> {
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

/// The `u64` in the 8 little-endian bytes of `c`.
#[inline]
fn le_u64(c: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(c);
    u64::from_le_bytes(b)
}

/// A string column as read.
pub struct Strs<'a> {
    offsets: Slab<u64>,
    blob: &'a str,
}

impl Strs<'_> {
    pub fn get(&self, i: usize) -> &str {
        &self.blob[self.offsets[i] as usize..self.offsets[i + 1] as usize]
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
        // Without their samples: those follow as columns.
        counters: tr
            .counters
            .iter()
            .map(|c| Counter {
                samples: Vec::new(),
                ..c.clone()
            })
            .collect(),
        summary: tr.summary.clone(),
    };
    w.bytes(&serde_json::to_vec(&header).map_err(io::Error::other)?)?;
    for c in &tr.counters {
        let n = c.samples.len();
        w.u64s(1, std::iter::once(n as u64))?;
        w.u64s(n, c.samples.iter().map(|s| s.0))?;
        w.u64s(n, c.samples.iter().map(|s| s.1.to_bits()))?;
    }
    let mut at = [0u64; 3];
    at[0] = w.written;
    tr.tensors.encode(w)?;
    at[1] = w.written;
    tr.ops.encode(w)?;
    at[2] = w.written;
    tr.events.encode(w)?;
    // Where the sections start, last: a reader decodes them side by side.
    w.u64s(3, at.into_iter())
}

/// The bytes of the section table [`encode`] ends with.
const TABLE_BYTES: usize = 8 + 3 * 8;

/// Reads a trace [`encode`] wrote; every reference and range is checked
/// as a JSON trace's are.
pub fn decode(b: &[u8]) -> Result<Trace, Fail> {
    decode_from(Reader::new(b), Checks::Run)
}

/// Whether a decoded trace's references and ranges are checked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Checks {
    Run,
    /// The bytes are known to be what [`encode`] wrote of a trace that
    /// passed them (a cache entry whose checksum held): checking again
    /// would only cost time (a tenth of a 10M-event open).
    Passed,
}

/// Reads a trace [`encode`] wrote, in `b`, which lies in `map`, and whose
/// checksum the caller has verified: its columns borrow the mapping
/// instead of being copied (a 10M-event entry's 1.2 GB: copying it, and
/// the kernel zeroing the heap pages it went to, was most of a second
/// open), and `release` is told of the bytes read a stretch at a time.
pub(crate) fn decode_mapped<'a>(
    b: &'a [u8],
    map: &'a Backing,
    release: &'a Release<'a>,
) -> Result<Trace, Fail> {
    decode_from(Reader::mapped(b, map, release), Checks::Passed)
}

/// [`decode_releasing`] in stretches of `every` bytes (tests).
#[cfg(test)]
fn decode_releasing_every<'a>(
    b: &'a [u8],
    every: usize,
    release: &'a Release<'a>,
) -> Result<Trace, Fail> {
    let mut r = Reader::releasing(b, release);
    r.release_every = every;
    decode_from(r, Checks::Run)
}

/// The sections' byte ranges from the table at the end of `b`: header
/// and counters, tensors, ops, events.
fn sections(b: &[u8]) -> Result<[std::ops::Range<usize>; 4], Fail> {
    let end = b
        .len()
        .checked_sub(TABLE_BYTES)
        .ok_or("the section table: runs past the end of the file")?;
    let mut t = Reader::new(&b[end..]);
    let at = t.u64s(3, "the section table")?;
    let at: Vec<usize> = at.iter().map(|&a| a as usize).collect();
    if at.windows(2).any(|w| w[0] > w[1]) || at[2] > end {
        return Err("the section table: sections out of order".into());
    }
    Ok([0..at[0], at[0]..at[1], at[1]..at[2], at[2]..end])
}

/// `read` on all of `r`, which must be whole (nothing after it).
fn whole<T>(
    mut r: Reader,
    what: &str,
    read: impl FnOnce(&mut Reader) -> Result<T, Fail>,
) -> Result<T, Fail> {
    let v = read(&mut r)?;
    match r.at_end() {
        true => Ok(v),
        false => Err(format!("{what}: bytes after its last column")),
    }
}

/// The sections decoded side by side: tensors and ops on a thread of their
/// own, the events and the header on this one (each about half of an
/// entry's bytes).
fn decode_from(r: Reader, checks: Checks) -> Result<Trace, Fail> {
    let [head, tensors, ops, events] = sections(r.b)?;
    let (rest, (events, head)) = std::thread::scope(|s| {
        let rest = s.spawn(|| {
            let tensors = whole(r.section(tensors), "tensors", Tensors::decode)?;
            let ops = whole(r.section(ops), "ops", Ops::decode)?;
            Ok::<_, Fail>((tensors, ops))
        });
        let events = whole(r.section(events), "events", Events::decode);
        let head = whole(r.section(head), "the header and counters", decode_head);
        // A panic there is one here (never taken for a damaged entry).
        let rest = rest.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        (rest, (events, head))
    });
    let (tensors, ops) = rest?;
    let (header, counters) = head?;
    let tr = Trace {
        schema: header.schema,
        source: header.source,
        meta: header.meta,
        pools: header.pools,
        tensors,
        ops,
        events: events?,
        counters,
        summary: header.summary,
        recomputed: Vec::new(),
    };
    if checks == Checks::Run {
        tr.check_refs()?;
        tr.check_ranges()?;
    }
    Ok(tr)
}

/// The header and the counters' samples.
fn decode_head(r: &mut Reader) -> Result<(Header, Vec<Counter>), Fail> {
    let mut header: Header =
        serde_json::from_slice(r.bytes("header")?).map_err(|e| format!("header: {e}"))?;
    let mut counters = std::mem::take(&mut header.counters);
    for c in &mut counters {
        let n = r.count("counter samples")?;
        let t = r.fixed::<8>(n, "counter sample times")?;
        let v = r.fixed::<8>(n, "counter sample values")?;
        c.samples = t
            .chunks_exact(8)
            .zip(v.chunks_exact(8))
            .map(|(t, v)| (le_u64(t), f64::from_bits(le_u64(v))))
            .collect();
    }
    Ok((header, counters))
}

pub(super) fn kind_tag(k: TensorKind) -> u8 {
    match k {
        TensorKind::Input => 0,
        TensorKind::Activation => 1,
        TensorKind::Weight => 2,
        TensorKind::Output => 3,
    }
}

pub(super) fn kind_of(tag: u8) -> Option<TensorKind> {
    Some(match tag {
        0 => TensorKind::Input,
        1 => TensorKind::Activation,
        2 => TensorKind::Weight,
        3 => TensorKind::Output,
        _ => return None,
    })
}

pub(super) fn bound_tag(b: Option<Bound>) -> u8 {
    match b {
        None => 0,
        Some(Bound::Compute) => 1,
        Some(Bound::Memory) => 2,
    }
}

pub(super) fn bound_of(tag: u8) -> Option<Option<Bound>> {
    match tag {
        0 => Some(None),
        1 => Some(Some(Bound::Compute)),
        2 => Some(Some(Bound::Memory)),
        _ => None,
    }
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

    /// The stretches released never overlap and lie inside the body, most
    /// of it is released, and what is decoded is what a reader that
    /// releases nothing decodes.
    #[test]
    fn released_stretches_do_not_overlap_and_change_nothing() {
        let b = encoded();
        let seen = std::sync::Mutex::new(Vec::new());
        let release = |r: std::ops::Range<usize>| seen.lock().unwrap().push(r);
        let tr = decode_releasing_every(&b, 1024, &release).unwrap();
        assert_eq!(tr, decode(&b).unwrap());
        let mut seen = seen.into_inner().unwrap();
        seen.sort_by_key(|r| r.start);
        assert!(
            seen.len() > 20,
            "{} stretches of {} bytes",
            seen.len(),
            b.len()
        );
        for w in seen.windows(2) {
            assert!(w[0].end <= w[1].start, "{:?} overlaps {:?}", w[0], w[1]);
        }
        assert!(seen.iter().all(|r| r.len() >= 1024 && r.end <= b.len()));
        let released: usize = seen.iter().map(|r| r.len()).sum();
        assert!(released * 2 > b.len(), "{released} of {} bytes", b.len());
    }

    /// A section table that points outside the body or backwards is an
    /// error.
    #[test]
    fn a_bad_section_table_is_an_error() {
        let b = encoded();
        let n = b.len();
        for (k, v) in [(0, u64::MAX), (1, 0), (2, n as u64)] {
            let mut d = b.clone();
            let at = n - 24 + 8 * k;
            d[at..at + 8].copy_from_slice(&v.to_le_bytes());
            let e = decode(&d).unwrap_err();
            assert!(
                e.contains("section") || e.contains("bytes after"),
                "{k}: {e}"
            );
        }
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

//! One JSONL line per record, written into any [`Sink`]. The writer thread,
//! the crash handler and recovery all format through here; nothing here
//! allocates or locks (the crash handler runs in a signal handler), names
//! are read in place and integers formatted with `itoa`.

use crate::{Kind, Record, FLAG_NAME_ID, FLAG_NO_BYTES, FLAG_POOL_ID, NO_OFFSET};

/// Where formatted bytes go.
pub(crate) trait Sink {
    fn put(&mut self, b: &[u8]);
    fn byte(&mut self, b: u8) {
        self.put(&[b]);
    }
}

impl Sink for Vec<u8> {
    fn put(&mut self, b: &[u8]) {
        self.extend_from_slice(b);
    }
    fn byte(&mut self, b: u8) {
        self.push(b);
    }
}

/// Names behind the 4-byte ids of records whose names were too long to
/// travel inline.
pub(crate) trait Resolve {
    fn resolve(&mut self, id: u32) -> Option<&[u8]>;
}

/// Raw clock readings to ns (the calibration the session opened with).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClockParams {
    pub tsc: bool,
    pub tsc0: u64,
    pub base_ns: u64,
    pub ns_per_tick: f64,
}

impl ClockParams {
    pub fn to_ns(self, raw: u64) -> u64 {
        if !self.tsc {
            return raw;
        }
        let dt = raw.wrapping_sub(self.tsc0) as i64 as f64 * self.ns_per_tick;
        (self.base_ns as f64 + dt).max(0.0) as u64
    }
}

/// A record's fields as the writer reads them back.
struct View<'a> {
    t: u64,
    bytes: u64,
    offset: u64,
    kind: u8,
    flags: u8,
    name: &'a [u8],
    pool: &'a [u8],
}

/// Reads a published record.
///
/// # Safety
/// `p` points at a record the producer published: its scalar fields and
/// the first `name_len` / `pool_len` bytes of its arrays were written, and
/// the caller owns the slot until the ring's tail moves past it.
unsafe fn view<'a>(p: *const Record) -> View<'a> {
    use std::ptr::addr_of;
    // SAFETY: per the function's contract; lengths are clamped to the
    // arrays' sizes so a torn record read after a crash stays in bounds.
    unsafe {
        let name_len = (addr_of!((*p).name_len).read() as usize).min(crate::NAME_INLINE);
        let pool_len = (addr_of!((*p).pool_len).read() as usize).min(crate::POOL_INLINE);
        View {
            t: addr_of!((*p).t_ns).read(),
            bytes: addr_of!((*p).bytes).read(),
            offset: addr_of!((*p).offset).read(),
            kind: addr_of!((*p).kind).read(),
            flags: addr_of!((*p).flags).read(),
            name: std::slice::from_raw_parts(addr_of!((*p).name) as *const u8, name_len),
            pool: std::slice::from_raw_parts(addr_of!((*p).pool) as *const u8, pool_len),
        }
    }
}

/// One JSONL line for the record at `p`, recorded by thread `thread`.
///
/// # Safety
/// As [`view`].
pub(crate) unsafe fn line(
    out: &mut impl Sink,
    names: &mut impl Resolve,
    clock: &ClockParams,
    p: *const Record,
    thread: u64,
) {
    // SAFETY: forwarded contract.
    let r = unsafe { view(p) };
    let mut num = itoa::Buffer::new();
    let kind = Kind::from_u8(r.kind);
    out.put(b"{\"t_ns\":");
    out.put(num.format(clock.to_ns(r.t)).as_bytes());
    out.put(b",\"kind\":\"");
    out.put(kind.as_str().as_bytes());
    out.byte(b'"');
    let mut name = |out: &mut _, inline: &[u8], is_id: bool| put_name(out, names, inline, is_id);
    match kind {
        Kind::OpBegin => {
            out.put(b",\"op\":");
            name(out, r.name, r.flags & FLAG_NAME_ID != 0);
        }
        Kind::OpEnd => {}
        Kind::Pool => {
            // A declaration: capacity in `bytes`, alignment in `offset`.
            out.put(b",\"pool\":");
            name(out, r.pool, r.flags & FLAG_POOL_ID != 0);
            out.put(b",\"capacity_bytes\":");
            out.put(num.format(r.bytes).as_bytes());
            out.put(b",\"alignment\":");
            out.put(num.format(r.offset).as_bytes());
        }
        _ => {
            out.put(b",\"tensor\":");
            name(out, r.name, r.flags & FLAG_NAME_ID != 0);
            if r.flags & FLAG_NO_BYTES == 0 {
                out.put(b",\"bytes\":");
                out.put(num.format(r.bytes).as_bytes());
            }
            out.put(b",\"pool\":");
            name(out, r.pool, r.flags & FLAG_POOL_ID != 0);
            if r.offset != NO_OFFSET {
                out.put(b",\"offset\":");
                out.put(num.format(r.offset).as_bytes());
            }
        }
    }
    out.put(b",\"thread\":");
    out.put(num.format(thread).as_bytes());
    out.put(b"}\n");
}

/// A `dropped` line: `count` events of `thread` lost to a full ring.
pub(crate) fn dropped_line(out: &mut impl Sink, t_ns: u64, count: u64, thread: u64) {
    let mut num = itoa::Buffer::new();
    out.put(b"{\"t_ns\":");
    out.put(num.format(t_ns).as_bytes());
    out.put(b",\"kind\":\"dropped\",\"count\":");
    out.put(num.format(count).as_bytes());
    out.put(b",\"thread\":");
    out.put(num.format(thread).as_bytes());
    out.put(b"}\n");
}

/// A name: inline bytes, or the name its 4-byte id stands for.
fn put_name(out: &mut impl Sink, names: &mut impl Resolve, inline: &[u8], is_id: bool) {
    if is_id && inline.len() == 4 {
        let id = u32::from_le_bytes([inline[0], inline[1], inline[2], inline[3]]);
        match names.resolve(id) {
            Some(n) => json_str(out, n),
            None => unnamed(out, id),
        }
    } else {
        json_str(out, inline);
    }
}

/// A name whose id the names area does not hold (it was full): said as
/// such, never guessed.
fn unnamed(out: &mut impl Sink, id: u32) {
    let mut num = itoa::Buffer::new();
    out.put(b"\"<long name #");
    out.put(num.format(id).as_bytes());
    out.put(b">\"");
}

/// A JSON string. Names are almost always plain printable ASCII, which
/// goes out as is; anything else is escaped, invalid UTF-8 replaced by
/// U+FFFD (without allocating).
fn json_str(out: &mut impl Sink, s: &[u8]) {
    out.put(b"\"");
    if s.iter()
        .all(|&c| (0x20..0x7f).contains(&c) && c != b'"' && c != b'\\')
    {
        out.put(s);
        out.put(b"\"");
        return;
    }
    for chunk in s.utf8_chunks() {
        for &c in chunk.valid().as_bytes() {
            match c {
                b'"' => out.put(b"\\\""),
                b'\\' => out.put(b"\\\\"),
                b'\n' => out.put(b"\\n"),
                b'\r' => out.put(b"\\r"),
                b'\t' => out.put(b"\\t"),
                c if c < 0x20 => {
                    const HEX: &[u8; 16] = b"0123456789abcdef";
                    out.put(&[
                        b'\\',
                        b'u',
                        b'0',
                        b'0',
                        HEX[(c >> 4) as usize],
                        HEX[(c & 15) as usize],
                    ]);
                }
                c => out.byte(c),
            }
        }
        if !chunk.invalid().is_empty() {
            out.put("\u{fffd}".as_bytes());
        }
    }
    out.put(b"\"");
}

//! Reading a trace file without holding it. One pass over the file finds
//! the top-level members and cuts each array into runs of whole elements
//! of about [`RUN_BYTES`]; each run is handed, as it is cut, to a worker
//! that reads it back and parses it onto a part of its list, and the parts
//! are appended in file order as they finish. The scan and the parses
//! overlap, and every core parses (a 1M-event trace's events were one
//! thread's work while its ops and tensors were the other's). What is
//! resident while loading is the columns, one run per worker and the
//! parts waiting for the one before them: the file read whole cost its own
//! size on top of them (309 MB for a 1M-event trace, more than its
//! columns).
//!
//! This reader checks only what it relies on (the top level's shape, the
//! arrays' brackets and commas); every element is parsed the plain way
//! ([`super::plain_rows`]) or by serde. Anything it does not expect,
//! including every error, sends the file to the whole-file parse
//! ([`Trace::from_slice`]), whose messages, lines and columns are the
//! canonical ones.

use super::brackets::ArrayWalk;
use super::plain_rows::{run_onto, PlainRows, Scratch};
use super::{Counter, Events, Ops, Pool, Source, Summary, Tensors, Trace};
use crate::cols::PushRows;
use serde::de::IgnoredAny;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{mpsc, Mutex, PoisonError};

/// About how many bytes of an array one run holds: large enough that a
/// run's parse is all parsing, small enough that the runs in flight are
/// nothing beside the columns.
const RUN_BYTES: u64 = 1 << 20;

/// Files smaller than this are read whole ([`Trace::load`]): their text is
/// nothing beside a run, and one pass is quicker than two.
pub(super) const WHOLE_BELOW: u64 = 16 << 20;

/// The scanning pass reads the file in blocks of this size.
const BLOCK: usize = 1 << 20;

/// A top-level member: its key's text between the quotes, where its value
/// lies and, for an array, how many runs it was cut into.
struct Member {
    key: Vec<u8>,
    value: Range<u64>,
    runs: Option<usize>,
}

/// Reads `path` as a trace in runs; `Ok(None)` when the file is not what
/// this reader expects or does not parse (the caller parses it whole for
/// the canonical error, or the canonical result of a file shaped in a way
/// this reader does not follow).
pub(super) fn load(path: &std::path::Path) -> std::io::Result<Option<Trace>> {
    load_in_runs_of(path, RUN_BYTES)
}

/// Which list a run of an array is parsed onto.
#[derive(Clone, Copy)]
enum Target {
    Tensors,
    Ops,
    Events,
    Counters,
    /// An array the trace does not know: serde reads (and skips) it.
    Skipped,
}

impl Target {
    /// The list a top-level array's key names; `None` for the small
    /// arrays parsed whole ([`small`]).
    fn of(key: &[u8]) -> Option<Target> {
        Some(match key {
            b"tensors" => Target::Tensors,
            b"ops" => Target::Ops,
            b"events" => Target::Events,
            b"counters" => Target::Counters,
            b"pools" => return None,
            _ => Target::Skipped,
        })
    }
}

/// One run to parse: the `seq`-th of its array, its text in brackets.
struct Job {
    target: Target,
    seq: usize,
    text: Vec<u8>,
}

/// Run buffers handed back by the workers for the scan to fill again (a
/// new 4 MiB buffer per run cost a page fault per 4 KiB).
type Spare = Mutex<Vec<Vec<u8>>>;

/// A list whose parts may finish out of order: each is appended once the
/// parts before it are.
struct Assembly<L> {
    list: L,
    next: usize,
    waiting: BTreeMap<usize, L>,
}

impl<L: Part> Default for Assembly<L> {
    fn default() -> Self {
        Assembly {
            list: L::default(),
            next: 0,
            waiting: BTreeMap::new(),
        }
    }
}

/// A list parsed in parts and appended in order.
trait Part: PlainRows + Default + Send {
    fn append_part(&mut self, part: Self);
}

impl Part for Events {
    fn append_part(&mut self, part: Events) {
        self.append(&part);
    }
}

impl Part for Ops {
    fn append_part(&mut self, part: Ops) {
        self.append(part);
    }
}

impl Part for Tensors {
    fn append_part(&mut self, part: Tensors) {
        self.append(part);
    }
}

impl Part for Vec<Counter> {
    fn append_part(&mut self, mut part: Vec<Counter>) {
        self.append(&mut part);
    }
}

impl Part for IgnoredAny {
    fn append_part(&mut self, _: IgnoredAny) {}
}

impl<L: Part> Assembly<L> {
    fn put(&mut self, seq: usize, part: L) {
        self.waiting.insert(seq, part);
        while let Some(p) = self.waiting.remove(&self.next) {
            match self.next {
                0 => self.list = p,
                _ => self.list.append_part(p),
            }
            self.next += 1;
        }
    }
}

/// The lists being assembled, one lock each.
#[derive(Default)]
struct Lists {
    tensors: Mutex<Assembly<Tensors>>,
    ops: Mutex<Assembly<Ops>>,
    events: Mutex<Assembly<Events>>,
    counters: Mutex<Assembly<Vec<Counter>>>,
    skipped: Mutex<Assembly<IgnoredAny>>,
}

/// A worker's reusable lists.
#[derive(Default)]
struct Worker {
    scratch: Scratch,
}

impl Worker {
    /// Parses `job`'s run onto a new part of `into`.
    fn parse<L: Part>(&mut self, job: &Job, into: &Mutex<Assembly<L>>) -> Option<()> {
        let mut part = L::default();
        run_onto(&job.text, &mut part, &mut self.scratch)?;
        into.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .put(job.seq, part);
        Some(())
    }

    /// Parses runs until the scan is done; a run that does not parse
    /// stops every worker (the whole parse will say why).
    fn run(
        &mut self,
        jobs: &Mutex<mpsc::Receiver<Job>>,
        lists: &Lists,
        spare: &Spare,
        failed: &AtomicBool,
    ) {
        loop {
            let next = jobs.lock().unwrap_or_else(PoisonError::into_inner).recv();
            let Ok(mut job) = next else { return };
            if !failed.load(Relaxed) {
                let ok = match job.target {
                    Target::Tensors => self.parse(&job, &lists.tensors),
                    Target::Ops => self.parse(&job, &lists.ops),
                    Target::Events => self.parse(&job, &lists.events),
                    Target::Counters => self.parse(&job, &lists.counters),
                    Target::Skipped => self.parse(&job, &lists.skipped),
                };
                if ok.is_none() {
                    failed.store(true, Relaxed);
                }
            }
            job.text.clear();
            spare
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(job.text);
        }
    }
}

/// How many threads parse runs (the scan has one of its own).
fn workers() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(1, 8))
}

/// [`load`] with runs of about `run_bytes` (the tests cut small files).
fn load_in_runs_of(path: &std::path::Path, run_bytes: u64) -> std::io::Result<Option<Trace>> {
    let file = File::open(path)?;
    let lists = Lists::default();
    let failed = AtomicBool::new(false);
    let n = workers();
    let (tx, rx) = mpsc::sync_channel::<Job>(n);
    let rx = Mutex::new(rx);
    let spare = Spare::default();
    let members = std::thread::scope(|sc| {
        for _ in 0..n {
            sc.spawn(|| Worker::default().run(&rx, &lists, &spare, &failed));
        }
        let mut seqs: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
        let members = Scan::new(&file, run_bytes, |key: &[u8], parts: [&[u8]; 2]| {
            let Some(target) = Target::of(key) else {
                return;
            };
            let seq = seqs.entry(key.to_vec()).or_default();
            let mut text = spare
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop()
                .unwrap_or_default();
            text.reserve_exact(parts[0].len() + parts[1].len() + 2);
            text.push(b'[');
            text.extend_from_slice(parts[0]);
            text.extend_from_slice(parts[1]);
            text.push(b']');
            // A worker gone means the parse failed: the result is unused.
            let _ = tx.send(Job {
                target,
                seq: *seq,
                text,
            });
            *seq += 1;
        })
        .top_level();
        if !matches!(members, Ok(Some(_))) {
            failed.store(true, Relaxed);
        }
        drop(tx);
        members
    })?;
    let Some(members) = members else {
        return Ok(None);
    };
    if failed.load(Relaxed) {
        return Ok(None);
    }
    Ok(assemble(&file, &members, lists))
}

/// The trace from its members and the lists parsed from their runs, or
/// `None` on anything unexpected.
fn assemble(file: &File, members: &[Member], lists: Lists) -> Option<Trace> {
    let find = |k: &str| -> Option<Option<&Member>> {
        let mut it = members.iter().filter(|m| m.key == k.as_bytes());
        let first = it.next();
        // A repeated field is an error to serde: the whole parse says so.
        it.next().is_none().then_some(first)
    };
    let mut buf = Vec::new();
    let schema: String = small(file, find("schema")??, &mut buf)?;
    let source: Source = small(file, find("source")??, &mut buf)?;
    let meta = small(file, find("meta")??, &mut buf)?;
    let pools: Vec<Pool> = small(file, find("pools")??, &mut buf)?;
    let summary: Summary = small(file, find("summary")??, &mut buf)?;
    // The large members must be arrays (their runs were parsed).
    for k in ["tensors", "ops", "events"] {
        find(k)??.runs.as_ref()?;
    }
    if let Some(c) = find("counters")? {
        c.runs.as_ref()?;
    }
    const KNOWN: [&str; 9] = [
        "schema", "source", "meta", "pools", "summary", "tensors", "ops", "events", "counters",
    ];
    // What serde would skip must still be JSON (arrays were, by a worker).
    for m in members
        .iter()
        .filter(|m| !KNOWN.iter().any(|k| m.key == k.as_bytes()) && m.runs.is_none())
    {
        small::<IgnoredAny>(file, m, &mut buf)?;
    }
    let mut events: Events = done(lists.events)?;
    events.shrink_to_fit();
    Some(Trace {
        schema,
        source,
        meta,
        pools,
        tensors: done(lists.tensors)?,
        ops: done(lists.ops)?,
        events,
        counters: done(lists.counters)?,
        summary,
        recomputed: Vec::new(),
    })
}

/// An assembled list; `None` if a part never followed the one before it.
fn done<L: Part>(m: Mutex<Assembly<L>>) -> Option<L> {
    let a = m.into_inner().unwrap_or_else(PoisonError::into_inner);
    a.waiting.is_empty().then_some(a.list)
}

/// A member's value parsed whole (the small ones: meta, pools, summary).
fn small<T: serde::de::DeserializeOwned>(file: &File, m: &Member, buf: &mut Vec<u8>) -> Option<T> {
    buf.clear();
    read_at(file, &m.value, buf).ok()?;
    serde_json::from_slice(buf).ok()
}

/// Appends the bytes `r` of `file` to `buf`.
fn read_at(file: &File, r: &Range<u64>, buf: &mut Vec<u8>) -> std::io::Result<()> {
    let from = buf.len();
    let len = usize::try_from(r.end - r.start).map_err(std::io::Error::other)?;
    buf.resize(from + len, 0);
    let dst = &mut buf[from..];
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, dst, r.start)
    }
    #[cfg(windows)]
    {
        let mut at = 0;
        while at < dst.len() {
            let n = std::os::windows::fs::FileExt::seek_read(
                file,
                &mut dst[at..],
                r.start + at as u64,
            )?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            at += n;
        }
        Ok(())
    }
}

impl PushRows for IgnoredAny {
    type Row = IgnoredAny;
    fn push_row(&mut self, _: IgnoredAny) -> Result<(), String> {
        Ok(())
    }
}

impl<T: serde::de::DeserializeOwned> PushRows for Vec<T> {
    type Row = T;
    fn push_row(&mut self, r: T) -> Result<(), String> {
        self.push(r);
        Ok(())
    }
}

/// The scanning pass: the file read forward in blocks, with its position;
/// `on_run(key, text)` is handed each run of a top-level array as it is
/// cut (its text in two parts: what earlier blocks held, then this one's).
struct Scan<'a, F> {
    file: &'a File,
    buf: Vec<u8>,
    at: usize,
    /// The file offset of `buf[0]`.
    base: u64,
    run_bytes: u64,
    on_run: F,
}

impl<'a, F: FnMut(&[u8], [&[u8]; 2])> Scan<'a, F> {
    fn new(file: &'a File, run_bytes: u64, on_run: F) -> Scan<'a, F> {
        Scan {
            file,
            buf: Vec::new(),
            at: 0,
            base: 0,
            run_bytes,
            on_run,
        }
    }

    fn pos(&self) -> u64 {
        self.base + self.at as u64
    }

    /// The next byte without taking it; `None` at the end of the file.
    fn peek(&mut self) -> std::io::Result<Option<u8>> {
        if self.at == self.buf.len() && !self.fill()? {
            return Ok(None);
        }
        Ok(Some(self.buf[self.at]))
    }

    /// Reads the next block; false at the end of the file.
    fn fill(&mut self) -> std::io::Result<bool> {
        self.base += self.buf.len() as u64;
        self.buf.clear();
        self.at = 0;
        (&mut &*self.file)
            .take(BLOCK as u64)
            .read_to_end(&mut self.buf)?;
        Ok(!self.buf.is_empty())
    }

    /// Skips whitespace; the byte after it.
    fn ws(&mut self) -> std::io::Result<Option<u8>> {
        while let Some(c) = self.peek()? {
            if !is_ws(c) {
                return Ok(Some(c));
            }
            self.at += 1;
        }
        Ok(None)
    }

    /// The top-level object's members, or `None` if the file is not one
    /// object (a byte order mark first is allowed).
    fn top_level(&mut self) -> std::io::Result<Option<Vec<Member>>> {
        if self.peek()?.is_some() && self.buf.starts_with(crate::input::BOM) {
            self.at = crate::input::BOM.len();
        }
        if self.ws()? != Some(b'{') {
            return Ok(None);
        }
        self.at += 1;
        let mut members = Vec::new();
        if self.ws()? == Some(b'}') {
            self.at += 1;
        } else {
            loop {
                let Some(m) = self.member()? else {
                    return Ok(None);
                };
                members.push(m);
                match self.ws()? {
                    Some(b',') => self.at += 1,
                    Some(b'}') => {
                        self.at += 1;
                        break;
                    }
                    _ => return Ok(None),
                }
            }
        }
        // Nothing may follow the object.
        Ok((self.ws()?.is_none()).then_some(members))
    }

    /// `"key": value`.
    fn member(&mut self) -> std::io::Result<Option<Member>> {
        if self.ws()? != Some(b'"') {
            return Ok(None);
        }
        self.at += 1;
        let mut key = Vec::new();
        loop {
            match self.peek()? {
                // An escaped key may spell a known one: parsed whole.
                None | Some(b'\\') => return Ok(None),
                Some(b'"') => break,
                Some(c) => key.push(c),
            }
            self.at += 1;
        }
        self.at += 1;
        if self.ws()? != Some(b':') {
            return Ok(None);
        }
        self.at += 1;
        let Some(first) = self.ws()? else {
            return Ok(None);
        };
        let start = self.pos();
        let runs = match first {
            b'[' => match self.array(&key)? {
                Some(n) => Some(n),
                None => return Ok(None),
            },
            b'{' | b'"' => {
                if !self.skip_value()? {
                    return Ok(None);
                }
                None
            }
            _ => {
                // A scalar runs to the next delimiter; serde checks it.
                while let Some(c) = self.peek()? {
                    if matches!(c, b',' | b'}') || is_ws(c) {
                        break;
                    }
                    self.at += 1;
                }
                None
            }
        };
        Ok(Some(Member {
            key,
            value: start..self.pos(),
            runs,
        }))
    }

    /// Walks the value that starts here (a string or an object) to the
    /// byte that closes it, and leaves the scan just past it; that byte's
    /// offset and value, or `None` if the file ends first.
    fn walk_value(&mut self) -> std::io::Result<Option<(u64, u8)>> {
        let mut st = Nesting::default();
        loop {
            if self.at == self.buf.len() && !self.fill()? {
                return Ok(None);
            }
            let base = self.pos();
            match st.walk(&self.buf[self.at..], base, |_, _| {}) {
                Some(k) => {
                    let close = self.buf[self.at + k];
                    self.at += k + 1;
                    return Ok(Some((base + k as u64, close)));
                }
                None => self.at = self.buf.len(),
            }
        }
    }

    /// Skips a string or an object; false if the file ends inside it.
    fn skip_value(&mut self) -> std::io::Result<bool> {
        Ok(self.walk_value()?.is_some())
    }

    /// Skips an array, cutting it into runs of whole elements at commas
    /// between its elements, each handed to `on_run` as it is cut; how many
    /// runs, or `None` if it is not closed by `]` or ends with a comma.
    fn array(&mut self, key: &[u8]) -> std::io::Result<Option<usize>> {
        let mut runs = 0;
        let run_bytes = self.run_bytes;
        let mut from = self.pos() + 1 + run_bytes;
        // The current run's bytes from blocks before this one.
        let mut held: Vec<u8> = Vec::new();
        let mut cuts: Vec<u64> = Vec::new();
        let mut walk = ArrayWalk::default();
        // Past the opening bracket, the run starts.
        let mut seg = self.at + 1;
        loop {
            if self.at == self.buf.len() {
                held.extend_from_slice(&self.buf[seg.min(self.buf.len())..]);
                if !self.fill()? {
                    return Ok(None);
                }
                seg = 0;
            }
            let base = self.pos();
            let closed = walk.walk(&self.buf[self.at..], base, &mut from, |at| {
                cuts.push(at);
                at + 1 + run_bytes
            });
            // Each cut ends a run: what is held, then this block up to it.
            for c in cuts.drain(..) {
                let end = self.at + (c - base) as usize;
                (self.on_run)(key, [&held, &self.buf[seg..end]]);
                held.clear();
                runs += 1;
                seg = end + 1;
            }
            let Some(k) = closed else {
                self.at = self.buf.len();
                continue;
            };
            let close = self.at + k;
            self.at = close + 1;
            if self.buf[close] != b']' {
                return Ok(None);
            }
            let last = &self.buf[seg..close];
            let blank = held.iter().chain(last).all(|&c| is_ws(c));
            return Ok(match (blank, runs) {
                // `[ ]`: no elements, no runs.
                (true, 0) => Some(0),
                // `[1, ]`: a trailing comma; serde says where.
                (true, _) => None,
                (false, _) => {
                    (self.on_run)(key, [&held, last]);
                    Some(runs + 1)
                }
            });
        }
    }
}

/// Where a walk through a value's bytes stands: its nesting depth and
/// whether it is inside a string (after a backslash).
#[derive(Default)]
struct Nesting {
    depth: u32,
    in_str: bool,
    esc: bool,
}

impl Nesting {
    /// Walks `block` (at file offset `base`); calls `comma(offset, depth)`
    /// at each comma outside strings; the index of the byte that closes
    /// the value, if it is in this block. A string value closes at its
    /// closing quote.
    fn walk(&mut self, block: &[u8], base: u64, mut comma: impl FnMut(u64, u32)) -> Option<usize> {
        // The state in locals and the bytes that change nothing skipped in
        // tight loops: a byte-by-byte match on the fields ran at 340 MB/s,
        // more than the parse it serves.
        let (mut depth, mut in_str, mut esc) = (self.depth, self.in_str, self.esc);
        let n = block.len();
        let mut k = 0;
        let closed = loop {
            if in_str {
                if esc {
                    // The escaped byte may open the next block.
                    if k >= n {
                        break None;
                    }
                    esc = false;
                    k += 1;
                }
                while k < n && !STRING_STOP[block[k] as usize] {
                    k += 1;
                }
                if k >= n {
                    break None;
                }
                if block[k] == b'\\' {
                    esc = true;
                    k += 1;
                    continue;
                }
                in_str = false;
                if depth == 0 {
                    break Some(k);
                }
                k += 1;
                continue;
            }
            while k < n && !STRUCTURE[block[k] as usize] {
                k += 1;
            }
            let Some(&c) = block.get(k) else {
                break None;
            };
            match c {
                b'"' => in_str = true,
                b'[' | b'{' => depth += 1,
                b']' | b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        break Some(k);
                    }
                }
                _ => comma(base + k as u64, depth),
            }
            k += 1;
        };
        (self.depth, self.in_str, self.esc) = (depth, in_str, esc);
        closed
    }
}

/// JSON's whitespace (not Rust's: a form feed is not).
fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

/// Bytes that end a run of string content: a quote or a backslash.
const STRING_STOP: [bool; 256] = table(b"\"\\");

/// Bytes that matter outside strings: quotes, brackets, braces, commas.
const STRUCTURE: [bool; 256] = table(b"\"[]{},");

const fn table(of: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut i = 0;
    while i < of.len() {
        t[of[i] as usize] = true;
        i += 1;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::trace::sample_path as sample;

    /// What this reader makes of `text` in runs of `run_bytes`, and what
    /// the whole-file parse makes of it.
    fn both(text: &[u8], run_bytes: u64) -> (Option<Trace>, Option<Trace>) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.json");
        std::fs::write(&p, text).unwrap();
        let runs = load_in_runs_of(&p, run_bytes)
            .unwrap()
            .map(|t| t.finished().unwrap());
        let whole = Trace::from_slice(crate::input::strip_bom(text)).ok();
        (runs, whole)
    }

    fn same(text: &[u8], run_bytes: u64) {
        let (runs, whole) = both(text, run_bytes);
        let whole = whole.expect("the whole-file parse reads it");
        let runs = runs.expect("the run reader reads it");
        assert_eq!(runs, whole);
        assert_eq!(runs.to_json(), whole.to_json());
    }

    /// Refused by the run reader (so the whole parse decides).
    fn refused(text: &[u8]) {
        for run in [1, 64, RUN_BYTES] {
            assert!(
                both(text, run).0.is_none(),
                "run {run}: {}",
                String::from_utf8_lossy(text)
            );
        }
    }

    #[test]
    fn every_sample_reads_the_same_in_runs_of_any_size() {
        for name in [
            "encdec-1mib.lru.json",
            "edge-resnet50-b3.belady.json",
            "seed-resnet50-b3.planned.json",
        ] {
            let text = std::fs::read(sample(name)).unwrap();
            for run in [1, 100, 4096, 1 << 16, RUN_BYTES] {
                same(&text, run);
            }
        }
    }

    #[test]
    fn layout_whitespace_order_bom_and_unknown_members_change_nothing() {
        let tr =
            Trace::from_slice(&std::fs::read(sample("encdec-1mib.lru.json")).unwrap()).unwrap();
        let pretty = serde_json::to_string_pretty(&tr).unwrap();
        same(pretty.as_bytes(), 333);
        let mut bom = crate::input::BOM.to_vec();
        bom.extend_from_slice(pretty.as_bytes());
        same(&bom, 1000);
        // Members in another order, with ones a reader does not know.
        let v: serde_json::Value = serde_json::from_str(&pretty).unwrap();
        let mut text = String::from("\n{ \"extra\" : [ {\"a\": [1, \"],\"]}, 2 ] , \"n\": -1.5e3, \"s\": \"x}\\\"\" ,\"o\":{\"k\":[]}");
        for k in [
            "summary", "events", "pools", "counters", "ops", "meta", "tensors", "source", "schema",
        ] {
            text.push_str(&format!(
                ",\n  \"{k}\" :\t{}",
                serde_json::to_string(&v[k]).unwrap()
            ));
        }
        text.push_str(" }\n\n");
        same(text.as_bytes(), 50);
        // Empty arrays and no counters.
        let mut small = tr.clone();
        small.counters.clear();
        let mut v = serde_json::to_value(&small).unwrap();
        v.as_object_mut().unwrap().remove("counters");
        v["pools"] = serde_json::json!([]);
        same(serde_json::to_string(&v).unwrap().as_bytes(), 10);
    }

    #[test]
    fn what_it_does_not_follow_goes_to_the_whole_parse() {
        let text =
            String::from_utf8(std::fs::read(sample("encdec-1mib.lru.json")).unwrap()).unwrap();
        let swap = |from: &str, to: &str| {
            assert!(text.contains(from), "{from}");
            text.replacen(from, to, 1).into_bytes()
        };
        let last_event_end = text.rfind("}],\"counters\"").unwrap();
        let mut trailing_comma = text.clone().into_bytes();
        trailing_comma.splice(last_event_end + 1..last_event_end + 1, *b", ");
        refused(&trailing_comma);
        refused(&swap("\"events\":[", "\"events\":{"));
        refused(&swap("}],\"counters\"", "}},\"counters\""));
        refused(&swap("\"summary\":", "\"summery\":"));
        refused(&swap("\"pools\":", "\"schema\":\"x\",\"pools\":"));
        refused(format!("{text} x").as_bytes());
        refused(&text.as_bytes()[..text.len() - 100]);
        refused(&swap("\"kind\":\"alloc\"", "\"kind\":\"alloc\",}"));
        refused(&swap("\"schema\":", "\"extra\":tru,\"schema\":"));
        // An escaped key is a key serde reads: the whole parse reads it.
        let escaped = swap("\"counters\":", "\"counter\\u0073\":");
        let (runs, whole) = both(&escaped, 64);
        assert!(runs.is_none());
        assert!(whole.is_some_and(|t| !t.counters.is_empty()));
    }

    #[test]
    fn an_error_is_the_whole_parse_error_with_its_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.json");
        let text = std::fs::read_to_string(sample("encdec-1mib.lru.json")).unwrap();
        // Padded past the size read whole, so the run reader sees it first.
        let pad = " ".repeat(WHOLE_BELOW as usize);
        let good = format!("{text}{pad}");
        std::fs::write(&p, &good).unwrap();
        assert_eq!(
            Trace::load(&p).unwrap(),
            Trace::from_slice(text.as_bytes()).unwrap()
        );
        let bad = text.replacen("\"kind\":\"reload\"", "\"kind\":\"reloaded\"", 1) + &pad;
        std::fs::write(&p, &bad).unwrap();
        let e = Trace::load(&p).unwrap_err().to_string();
        let whole = Trace::from_slice(bad.as_bytes()).unwrap_err();
        let pos = whole.pos.expect("a position");
        assert!(e.ends_with(&whole.msg), "{e} / {}", whole.msg);
        assert!(e.contains(&format!(":{}:{}:", pos.line, pos.column)), "{e}");
        assert!(whole.msg.contains("unknown variant `reloaded`"), "{e}");
    }
}
#[cfg(test)]
mod walk_tests {
    use super::Nesting;

    /// Where `text` closes and where its commas are, walked in blocks cut
    /// at `cuts`.
    fn walk_in(text: &[u8], cuts: &[usize]) -> (Option<usize>, Vec<(u64, u32)>) {
        let mut st = Nesting::default();
        let mut commas = Vec::new();
        let mut from = 0;
        for &to in cuts.iter().chain([&text.len()]) {
            let closed = st.walk(&text[from..to], from as u64, |at, d| commas.push((at, d)));
            if let Some(k) = closed {
                return (Some(from + k), commas);
            }
            from = to;
        }
        (None, commas)
    }

    #[test]
    fn a_value_walks_the_same_in_blocks_cut_anywhere() {
        let texts: [&[u8]; 4] = [
            br#"[{"a":"x\"],{","b":[1,2,{"c":"\\"}]},"\\\"",3] tail"#,
            br#""a \" string, with [brackets] \\" , more"#,
            br#"{"k": "\\\\\"", "l": [[], {}], "m": "}\u00e9"}"#,
            br#"[1, 2"#,
        ];
        for text in texts {
            let whole = walk_in(text, &[]);
            for a in 0..=text.len() {
                assert_eq!(
                    walk_in(text, &[a]),
                    whole,
                    "{} cut at {a}",
                    String::from_utf8_lossy(text)
                );
                for b in a..=text.len() {
                    assert_eq!(walk_in(text, &[a, b]), whole);
                }
            }
        }
        // The first closes after its last element, the second at its quote.
        assert_eq!(walk_in(texts[0], &[]).0, Some(texts[0].len() - 6));
        assert_eq!(walk_in(texts[1], &[]).0, Some(32));
        assert_eq!(walk_in(texts[3], &[]).0, None);
    }
}

//! Reading a trace file without holding it. One pass over the file finds
//! the top-level members and cuts each array into runs of whole elements
//! of about [`RUN_BYTES`]; then the runs are read back one at a time and
//! parsed onto the columns, the events on one thread and the rest on the
//! other. What is resident while loading is the columns and one run per
//! thread: the file read whole cost its own size on top of them (309 MB
//! for a 1M-event trace, more than its columns).
//!
//! This reader checks only what it relies on (the top level's shape, the
//! arrays' brackets and commas); every value is parsed by serde. Anything
//! it does not expect, including every error, sends the file to the
//! whole-file parse ([`Trace::from_slice`]), whose messages, lines and
//! columns are the canonical ones.

use super::{Counter, Events, Ops, Pool, Source, Summary, Tensors, Trace};
use crate::cols::{Onto, PushRows};
use serde::de::{DeserializeSeed, IgnoredAny};
use std::fs::File;
use std::io::Read;
use std::ops::Range;

/// About how many bytes of an array one run holds: large enough that a
/// run's parse is all parsing, small enough that two runs in flight are
/// nothing beside the columns.
const RUN_BYTES: u64 = 4 << 20;

/// Files smaller than this are read whole ([`Trace::load`]): their text is
/// nothing beside a run, and one pass is quicker than two.
pub(super) const WHOLE_BELOW: u64 = 4 * RUN_BYTES;

/// The scanning pass reads the file in blocks of this size.
const BLOCK: usize = 1 << 20;

/// A top-level member: its key's text between the quotes, where its value
/// lies and, for an array, its runs.
struct Member {
    key: Vec<u8>,
    value: Range<u64>,
    runs: Option<Vec<Range<u64>>>,
    /// Elements of an array (0 for any other value).
    count: usize,
}

/// Reads `path` as a trace in runs; `Ok(None)` when the file is not what
/// this reader expects or does not parse (the caller parses it whole for
/// the canonical error, or the canonical result of a file shaped in a way
/// this reader does not follow).
pub(super) fn load(path: &std::path::Path) -> std::io::Result<Option<Trace>> {
    load_in_runs_of(path, RUN_BYTES)
}

/// [`load`] with runs of about `run_bytes` (the tests cut small files).
fn load_in_runs_of(path: &std::path::Path, run_bytes: u64) -> std::io::Result<Option<Trace>> {
    let file = File::open(path)?;
    let Some(members) = Scan::new(&file, run_bytes).top_level()? else {
        return Ok(None);
    };
    Ok(assemble(&file, &members))
}

/// The trace from its members, or `None` on anything unexpected.
fn assemble(file: &File, members: &[Member]) -> Option<Trace> {
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
    let (tensors_m, ops_m, events_m) = (find("tensors")??, find("ops")??, find("events")??);
    let counters_m = find("counters")?;
    const KNOWN: [&str; 9] = [
        "schema", "source", "meta", "pools", "summary", "tensors", "ops", "events", "counters",
    ];
    // What serde would skip must still be JSON.
    for m in members
        .iter()
        .filter(|m| !KNOWN.iter().any(|k| m.key == k.as_bytes()))
    {
        let mut skipped = IgnoredAny;
        match &m.runs {
            Some(runs) => onto(file, runs, &mut skipped, &mut buf)?,
            None => {
                small::<IgnoredAny>(file, m, &mut buf)?;
            }
        }
    }
    let (events, rest) = std::thread::scope(|sc| {
        let ev = sc.spawn(|| {
            let mut ev = Events::with_capacity(events_m.count);
            onto(file, events_m.runs.as_deref()?, &mut ev, &mut Vec::new())?;
            ev.shrink_to_fit();
            Some(ev)
        });
        let rest = (|| {
            let mut tensors = Tensors::new();
            onto(file, tensors_m.runs.as_deref()?, &mut tensors, &mut buf)?;
            let mut ops = Ops::new();
            onto(file, ops_m.runs.as_deref()?, &mut ops, &mut buf)?;
            let mut counters: Vec<Counter> = Vec::new();
            if let Some(c) = counters_m {
                onto(file, c.runs.as_deref()?, &mut counters, &mut buf)?;
            }
            Some((tensors, ops, counters))
        })();
        (ev.join().ok().flatten(), rest)
    });
    let (tensors, ops, counters) = rest?;
    Some(Trace {
        schema,
        source,
        meta,
        pools,
        tensors,
        ops,
        events: events?,
        counters,
        summary,
        recomputed: Vec::new(),
    })
}

/// A member's value parsed whole (the small ones: meta, pools, summary).
fn small<T: serde::de::DeserializeOwned>(file: &File, m: &Member, buf: &mut Vec<u8>) -> Option<T> {
    buf.clear();
    read_at(file, &m.value, buf).ok()?;
    serde_json::from_slice(buf).ok()
}

/// Parses the runs of an array onto `list`, one run in memory at a time.
fn onto<L: PushRows>(
    file: &File,
    runs: &[Range<u64>],
    list: &mut L,
    buf: &mut Vec<u8>,
) -> Option<()> {
    for r in runs {
        buf.clear();
        buf.push(b'[');
        read_at(file, r, buf).ok()?;
        buf.push(b']');
        let mut de = serde_json::Deserializer::from_slice(buf);
        let what = "an array";
        Onto {
            list: &mut *list,
            what,
        }
        .deserialize(&mut de)
        .ok()?;
        de.end().ok()?;
    }
    // The run's buffer goes back to the allocator with the thread's work
    // (one is up to a run and an element long).
    Some(())
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

/// The scanning pass: the file read forward in blocks, with its position.
struct Scan<'a> {
    file: &'a File,
    buf: Vec<u8>,
    at: usize,
    /// The file offset of `buf[0]`.
    base: u64,
    run_bytes: u64,
}

impl<'a> Scan<'a> {
    fn new(file: &'a File, run_bytes: u64) -> Scan<'a> {
        Scan {
            file,
            buf: Vec::new(),
            at: 0,
            base: 0,
            run_bytes,
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
        let (runs, count) = match first {
            b'[' => match self.array()? {
                Some((runs, count)) => (Some(runs), count),
                None => return Ok(None),
            },
            b'{' | b'"' => {
                if !self.skip_value()? {
                    return Ok(None);
                }
                (None, 0)
            }
            _ => {
                // A scalar runs to the next delimiter; serde checks it.
                while let Some(c) = self.peek()? {
                    if matches!(c, b',' | b'}') || is_ws(c) {
                        break;
                    }
                    self.at += 1;
                }
                (None, 0)
            }
        };
        Ok(Some(Member {
            key,
            value: start..self.pos(),
            runs,
            count,
        }))
    }

    /// Walks the value that starts here (a string, an object or an array)
    /// to the byte that closes it, calling `comma(offset, depth)` at each
    /// comma outside strings, and leaves the scan just past it; that
    /// byte's offset and value, or `None` if the file ends first.
    fn walk_value(
        &mut self,
        mut comma: impl FnMut(u64, u32),
    ) -> std::io::Result<Option<(u64, u8)>> {
        let mut st = Nesting::default();
        loop {
            if self.at == self.buf.len() && !self.fill()? {
                return Ok(None);
            }
            let base = self.pos();
            match st.walk(&self.buf[self.at..], base, &mut comma) {
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
        Ok(self.walk_value(|_, _| {})?.is_some())
    }

    /// Skips an array, cutting it into runs of whole elements at commas
    /// between its elements; the runs and the element count, or `None` if
    /// it is not closed by `]` or ends with a comma.
    fn array(&mut self) -> std::io::Result<Option<(Vec<Range<u64>>, usize)>> {
        let mut runs = Vec::new();
        let mut run_start = self.pos() + 1;
        let mut commas = 0usize;
        let run_bytes = self.run_bytes;
        let closed = self.walk_value(|at, depth| {
            if depth == 1 {
                commas += 1;
                if at - run_start >= run_bytes {
                    runs.push(run_start..at);
                    run_start = at + 1;
                }
            }
        })?;
        let Some((close, b']')) = closed else {
            return Ok(None);
        };
        let last = run_start..close;
        match (self.is_blank(&last)?, commas) {
            // `[ ]`: no elements, no runs.
            (true, 0) => Ok(Some((runs, 0))),
            // `[1, ]`: a trailing comma; serde says where.
            (true, _) => Ok(None),
            (false, _) => {
                runs.push(last);
                Ok(Some((runs, commas + 1)))
            }
        }
    }

    /// Whether the bytes `r` (an array's last run) are only whitespace.
    fn is_blank(&self, r: &Range<u64>) -> std::io::Result<bool> {
        if r.end - r.start > 64 {
            return Ok(false);
        }
        let mut b = Vec::new();
        read_at(self.file, r, &mut b)?;
        Ok(b.iter().all(|&c| is_ws(c)))
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

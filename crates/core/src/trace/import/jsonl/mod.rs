//! The spillscope JSONL event stream (docs/jsonl.md): one JSON object per
//! line, appended by an instrumented runtime. Read line by line (never
//! slurped); a half-written last line (no newline yet) is left for later, so
//! a watcher can tail the file incrementally with [`JsonlTail`].

use super::ImportOptions;
use crate::trace::build::TraceBuilder;
use crate::trace::{
    EventKind, Importer, Instrumented, Producer, Source, TensorKind, Trace, TraceOp,
};
use crate::{Error, Result};
use serde::Deserialize;
use std::collections::HashMap;
use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

mod trim;

/// The longest record (line) a stream may have: 1 MiB. Real records are a
/// few hundred bytes; a longer line is a file that is not a JSONL stream.
pub const MAX_LINE_BYTES: usize = 1 << 20;

#[derive(Debug, Deserialize)]
struct Line {
    kind: String,
    #[serde(default)]
    t_ns: Option<u64>,
    #[serde(default)]
    tensor: Option<String>,
    #[serde(default)]
    bytes: Option<u64>,
    #[serde(default)]
    pool: Option<String>,
    #[serde(default)]
    offset: Option<u64>,
    #[serde(default)]
    thread: Option<u64>,
    #[serde(default)]
    op: Option<String>,
    #[serde(default)]
    capacity_bytes: Option<u64>,
    #[serde(default)]
    alignment: Option<u64>,
    #[serde(default)]
    count: Option<u64>,
    /// On `evict`: bytes written back (default: all of them).
    #[serde(default)]
    written_bytes: Option<u64>,
}

/// Accumulated state of a stream: feed it lines, ask for a trace any time.
#[derive(Debug)]
pub struct JsonlState {
    b: TraceBuilder,
    /// Open ops per thread: (op id).
    open: HashMap<u64, Vec<usize>>,
    pub lines: usize,
    pub dropped: u64,
    pub warnings: Vec<String>,
    t_first: Option<u64>,
    /// The most events (and ops) held; older ones fall out into
    /// `retired` ([`JsonlState::keep`]). `usize::MAX`: everything is held.
    keep: usize,
    retired: trim::Retired,
}

impl JsonlState {
    pub fn new(model: &str) -> JsonlState {
        let mut b = TraceBuilder::new(Source::Instrumented, model, "runtime");
        b.set_producer(Producer::Instrumented(Instrumented::new(Importer::Jsonl)));
        JsonlState {
            b,
            open: HashMap::new(),
            lines: 0,
            dropped: 0,
            warnings: Vec::new(),
            t_first: None,
            keep: usize::MAX,
            retired: trim::Retired::default(),
        }
    }

    /// Holds at most about `keep` events and ops (at least one): older ones
    /// fall out of the window into running totals, so a stream followed
    /// for hours stays in bounded memory and its ledger stays exact.
    pub fn keep(&mut self, keep: usize) {
        self.keep = keep.max(1);
        self.trim();
    }

    fn trim(&mut self) {
        if self.keep != usize::MAX {
            trim::trim(&mut self.b, &mut self.open, &mut self.retired, self.keep);
        }
    }

    /// What a reader should be told about the stream so far: skipped
    /// lines (the first few, by line number) and events the runtime
    /// dropped. Empty when every line was applied.
    pub fn problems(&self) -> Vec<String> {
        let mut out = self.warnings.clone();
        if self.dropped > 0 {
            out.push(format!(
                "the runtime dropped {} (its buffer was full)",
                crate::units::count(self.dropped, "event")
            ));
        }
        out
    }

    fn warn(&mut self, w: String) {
        if self.warnings.len() < 100 {
            self.warnings.push(w);
        }
    }

    /// Applies one complete line (1-based `lineno` for messages).
    pub fn feed(&mut self, line: &str, lineno: usize) {
        // A UTF-8 byte order mark (editors on Windows write one) is not
        // part of the first record.
        let line = line.trim_start_matches('\u{feff}').trim();
        if line.is_empty() {
            return;
        }
        self.lines += 1;
        let l: Line = match serde_json::from_str(line) {
            Ok(l) => l,
            Err(e) => return self.warn(format!("line {lineno}: {e}; skipped")),
        };
        let t = l.t_ns.unwrap_or(0);
        // The run starts at its first op or memory event (a pool may be
        // declared, or drops reported, at any time).
        if let (Some(t), false) = (l.t_ns, matches!(l.kind.as_str(), "pool" | "dropped")) {
            self.t_first = Some(self.t_first.map_or(t, |f| f.min(t)));
        }
        let thread = l.thread.unwrap_or(0);
        match l.kind.as_str() {
            "pool" => {
                let name = l.pool.unwrap_or_else(|| "mem".into());
                self.b.pool(
                    &name,
                    l.capacity_bytes.unwrap_or(0),
                    l.alignment.unwrap_or(1),
                );
            }
            "dropped" => {
                // A count no runtime could have dropped is a broken line,
                // not a total to wrap (u64::MAX + 2 read as 1).
                let n = l.count.unwrap_or(1);
                match self.dropped.checked_add(n).filter(|&d| d < 1 << 62) {
                    Some(d) => self.dropped = d,
                    None => self.warn(format!(
                        "line {lineno}: dropped count {n} takes the total past 2^62 events; skipped"
                    )),
                }
            }
            "op_begin" => {
                let name = l.op.unwrap_or_else(|| format!("op{}", self.b.ops.len()));
                // Ops begun inside an open op of the thread nest in it.
                let parent = self.open.get(&thread).and_then(|v| v.last().copied());
                let id = self.b.op(TraceOp {
                    parent,
                    ..TraceOp::span(name, "op", t, t)
                });
                self.open.entry(thread).or_default().push(id);
            }
            "op_end" => match self.open.get_mut(&thread).and_then(|v| v.pop()) {
                Some(id) => self.b.ops[id].end_ns = t.max(self.b.ops[id].start_ns),
                None => self.warn(format!(
                    "line {lineno}: op_end without op_begin on thread {thread}"
                )),
            },
            k => {
                let kind: EventKind = match k.parse() {
                    Ok(kind) => kind,
                    Err(_) => {
                        return self.warn(format!("line {lineno}: unknown kind {k:?}; skipped"))
                    }
                };
                let Some(name) = l.tensor else {
                    return self.warn(format!("line {lineno}: {k} without a tensor; skipped"));
                };
                let bytes = l.bytes.unwrap_or(0);
                let pool = l.pool.unwrap_or_else(|| "mem".into());
                // Stream bytes count re-read tiles: they do not size the tensor.
                let size = if kind.is_stream() { 0 } else { bytes };
                let id = self.b.tensor(&name, size, TensorKind::Activation, &pool);
                let bytes = if bytes == 0 {
                    self.b.tensors[id].bytes
                } else {
                    bytes
                };
                let op = self.open.get(&thread).and_then(|v| v.last().copied());
                let offset = if kind.is_stream() { None } else { l.offset };
                self.b
                    .event(t, kind, id, bytes, &pool, offset, op, l.thread);
                if kind == EventKind::Evict {
                    // A runtime's eviction writes the tensor back unless it
                    // says DRAM already held a current copy.
                    let w = l.written_bytes.unwrap_or(bytes).min(bytes);
                    self.b.events.update_last(|e| e.written_bytes = Some(w));
                }
                if kind.is_stream() {
                    if let Some(o) = op.and_then(|o| self.b.ops.get_mut(o)) {
                        if !o.streamed.contains(&id) {
                            o.streamed.push(id);
                        }
                    }
                }
            }
        }
        self.trim();
    }

    /// The trace so far (ops still open end at the latest time seen).
    pub fn snapshot(&self) -> Trace {
        let mut tmp = clone_builder(&self.b);
        let last = tmp
            .events
            .iter()
            .map(|e| e.t_ns)
            .chain(tmp.ops.iter().map(|o| o.end_ns))
            .max()
            .unwrap_or(0);
        for ids in self.open.values() {
            for &id in ids {
                tmp.ops[id].end_ns = tmp.ops[id].end_ns.max(last);
            }
        }
        // Runtimes stamp with a monotonic clock whose zero is arbitrary
        // (process start, boot): the trace starts at the stream's earliest
        // timestamp, kept in meta as `t0_ns`, so views begin where the run
        // does. Every refresh of a live stream uses the minimum so far.
        let t0 = self.t_first.unwrap_or(0);
        for o in &mut tmp.ops {
            o.start_ns = o.start_ns.saturating_sub(t0);
            o.end_ns = o.end_ns.saturating_sub(t0);
        }
        tmp.events.shift_times(t0);
        for c in &mut tmp.counters {
            for s in &mut c.samples {
                s.0 = s.0.saturating_sub(t0);
            }
        }
        let window =
            (self.keep != usize::MAX).then(|| Box::new(self.retired.window(self.keep, t0)));
        tmp.set_producer(Producer::Instrumented(Instrumented {
            t0_ns: Some(t0),
            capacity_declared: self.b.pools.iter().any(|p| p.capacity_bytes > 0),
            window,
            ..Instrumented::new(Importer::Jsonl)
        }));
        tmp.finish()
    }
}

fn clone_builder(b: &TraceBuilder) -> TraceBuilder {
    let mut c = TraceBuilder::new(Source::Instrumented, "", "runtime");
    c.tensors = b.tensors.clone();
    c.ops = b.ops.clone();
    c.events = b.events.clone();
    c.counters = b.counters.clone();
    c.pools = b.pools.clone();
    c.peak_live_override = b.peak_live_override;
    c
}

/// Imports a whole JSONL file.
pub fn import(path: &Path, opts: &ImportOptions) -> Result<(Trace, Vec<String>)> {
    let recovered = recover_stream(path)?;
    let mut tail = JsonlTail::new(path);
    tail.max_lines = opts.max_events();
    if let Some(k) = opts.keep {
        tail.state.keep(k);
    }
    tail.poll()?;
    let mut warnings: Vec<String> = recovered.into_iter().collect();
    warnings.extend(tail.state.problems());
    if tail.pending_partial {
        warnings.push("the last line is incomplete (still being written?); left out".into());
    }
    if tail.state.lines == 0 {
        return Err(Error::parse(path, "spillscope JSONL", "no events"));
    }
    let mut tr = tail.state.snapshot();
    tr.meta.model = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok((tr, warnings))
}

/// ` (N events lost to full rings)` after a recovery that found drops,
/// else nothing.
pub fn lost_to_full_rings(r: &spill_probe::Recovery) -> String {
    if r.dropped == 0 {
        return String::new();
    }
    format!(
        " ({} lost to full rings)",
        crate::units::count(r.dropped, "event")
    )
}

/// Finishes a probe stream whose recording process died without closing
/// it (SIGKILL, the OOM killer, a crash the handler could not flush): the
/// events still in its ring file are appended, in order per thread, and a
/// sentence says so. Nothing happens while the recorder is alive.
pub fn recover_stream(path: &Path) -> Result<Option<String>> {
    use spill_probe::Recovered;
    match spill_probe::recover(path) {
        Ok(Recovered::Done(r)) => Ok(Some(format!(
            "recovered {} the probe had not written when process {} ended without closing it{}",
            crate::units::count(r.events, "event"),
            r.pid,
            lost_to_full_rings(&r)
        ))),
        Ok(_) => Ok(None),
        Err(e) => Err(Error::Trace {
            path: path.to_path_buf(),
            detail: format!("cannot recover the probe's ring file: {e}"),
        }),
    }
}

/// How much of a stream's start identifies it (its pool line, usually).
const HEAD_BYTES: u64 = 256;

/// The first [`HEAD_BYTES`] bytes (fewer in a shorter file); `poll`
/// seeks to where it reads next afterwards.
fn read_head(f: &mut std::fs::File, len: u64) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::new();
    f.seek(SeekFrom::Start(0))?;
    f.take(len.min(HEAD_BYTES)).read_to_end(&mut head)?;
    Ok(head)
}

#[cfg(unix)]
fn inode(m: &std::fs::Metadata) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    Some(m.ino())
}

#[cfg(not(unix))]
fn inode(_: &std::fs::Metadata) -> Option<u64> {
    None
}

/// Follows a JSONL file that another process appends to: each poll reads
/// only the bytes added since the last one, and keeps a partial last line
/// until its newline arrives. A file that was replaced (another inode, a
/// size below what was read, or a different first line: a stream rewritten
/// in place or moved over the old one) is read again from the start, and
/// [`JsonlTail::replaced`] counts it, so the view can say so instead of
/// mixing the old ops with the new file read from the old offset.
#[derive(Debug)]
pub struct JsonlTail {
    pub path: PathBuf,
    pub offset: u64,
    /// The file's identity when it was first read: its inode (Unix) and up
    /// to its first [`HEAD_BYTES`] bytes.
    ino: Option<u64>,
    head: Vec<u8>,
    /// How many times the file was found replaced and read again.
    pub replaced: usize,
    partial: Vec<u8>,
    pub pending_partial: bool,
    pub state: JsonlState,
    lineno: usize,
    pub max_lines: usize,
}

impl JsonlTail {
    pub fn new(path: &Path) -> JsonlTail {
        let model = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        JsonlTail {
            path: path.to_path_buf(),
            offset: 0,
            ino: None,
            head: Vec::new(),
            replaced: 0,
            partial: Vec::new(),
            pending_partial: false,
            state: JsonlState::new(&model),
            lineno: 0,
            max_lines: usize::MAX,
        }
    }

    /// Reads what was appended; returns how many complete lines were applied.
    /// A line longer than [`MAX_LINE_BYTES`] is an error naming it.
    pub fn poll(&mut self) -> Result<usize> {
        let mut f = std::fs::File::open(&self.path).map_err(|e| Error::io(&self.path, e))?;
        let meta = f.metadata().map_err(|e| Error::io(&self.path, e))?;
        let len = meta.len();
        let ino = inode(&meta);
        let head = read_head(&mut f, len).map_err(|e| Error::io(&self.path, e))?;
        let same_head = head.starts_with(&self.head) || self.head.starts_with(&head);
        if self.offset > 0 && (len < self.offset || ino != self.ino || !same_head) {
            // Truncated or replaced: start over, and say so.
            let mut fresh = JsonlTail {
                max_lines: self.max_lines,
                replaced: self.replaced + 1,
                ..JsonlTail::new(&self.path)
            };
            fresh.state.keep = self.state.keep;
            *self = fresh;
        }
        self.ino = ino;
        if head.len() > self.head.len() {
            self.head = head;
        }
        f.seek(SeekFrom::Start(self.offset))
            .map_err(|e| Error::io(&self.path, e))?;
        let mut r = std::io::BufReader::with_capacity(1 << 20, f.take(len - self.offset));
        let mut applied = 0;
        loop {
            let mut buf = Vec::new();
            // At most one byte past the limit: a runaway line is an error,
            // not a reason to hold it all in memory.
            let room = (MAX_LINE_BYTES + 1).saturating_sub(self.partial.len()) as u64;
            let n = (&mut r)
                .take(room.max(1))
                .read_until(b'\n', &mut buf)
                .map_err(|e| Error::io(&self.path, e))?;
            if n == 0 {
                break;
            }
            if self.partial.len() + buf.len() > MAX_LINE_BYTES {
                return Err(Error::parse(
                    &self.path,
                    "spillscope JSONL",
                    format!(
                        "line {} is longer than {} (the limit for one record)",
                        self.lineno + 1,
                        crate::units::fmt_bytes(MAX_LINE_BYTES as u64)
                    ),
                ));
            }
            self.offset += n as u64;
            if buf.last() != Some(&b'\n') {
                // No newline yet: keep it for the next poll.
                self.partial.extend_from_slice(&buf);
                self.pending_partial = true;
                break;
            }
            let mut line = std::mem::take(&mut self.partial);
            line.extend_from_slice(&buf);
            self.pending_partial = false;
            self.lineno += 1;
            if self.state.lines >= self.max_lines {
                return Err(Error::parse(
                    &self.path,
                    "spillscope JSONL",
                    format!("more than {} lines (raise --max-events)", self.max_lines),
                ));
            }
            self.state
                .feed(&String::from_utf8_lossy(&line), self.lineno);
            applied += 1;
        }
        Ok(applied)
    }
}

//! Reading input files under a size cap, so a wrong or hostile file cannot
//! make spillscope eat all the memory of a small edge box. The cap is
//! `SPILLSCOPE_MAX_INPUT_BYTES` (bytes; default 4 GiB); exceeding it is one
//! clear error naming the file, its size and how to raise the cap. It also
//! holds the one classifier that tells what a file is ([`detect`]).
//!
//! A foundation: imports only `error`.

use crate::{Error, Result};
use std::path::Path;

/// Default cap on one input file.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 4 << 30;

/// The cap in force (the environment variable, else the default).
pub fn max_input_bytes() -> u64 {
    std::env::var("SPILLSCOPE_MAX_INPUT_BYTES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DEFAULT_MAX_INPUT_BYTES)
}

/// Fails if `path` is larger than the cap.
pub fn check_size(path: &Path) -> Result<u64> {
    let size = std::fs::metadata(path)
        .map_err(|e| Error::io(path, e))?
        .len();
    let cap = max_input_bytes();
    if size > cap {
        return Err(Error::Config(format!(
            "{}: {size} bytes is over the input cap of {cap} bytes (set SPILLSCOPE_MAX_INPUT_BYTES to raise it)",
            path.display()
        )));
    }
    Ok(size)
}

/// Whether reading a `size`-byte file whole (its bytes plus what is parsed
/// from them, about 2.7x the file for a trace) would crowd the memory
/// available now; false where that cannot be told (no `/proc/meminfo`).
pub fn memory_is_short(size: u64) -> bool {
    available_memory().is_some_and(|avail| size.saturating_mul(3) > avail)
}

/// The memory one load may take, and where that figure comes from:
/// `SPILLSCOPE_MEMORY_BUDGET` (a size: `6GiB`, bytes), else what the
/// machine has available now (`MemAvailable`); `None` where neither can be
/// told (no `/proc/meminfo`). A budget that does not parse is an error, not
/// silently no budget: the user set it to be protected.
pub fn memory_budget() -> Result<Option<(u64, &'static str)>> {
    match std::env::var("SPILLSCOPE_MEMORY_BUDGET") {
        Ok(v) => crate::units::parse_size(v.trim())
            .map(|b| Some((b, "SPILLSCOPE_MEMORY_BUDGET")))
            .map_err(|e| Error::Config(format!("SPILLSCOPE_MEMORY_BUDGET={v:?}: {e}"))),
        Err(_) => Ok(available_memory().map(|b| (b, "the memory available now"))),
    }
}

/// Refuses to load `path` (`size` bytes of `what`) when parsing it, at
/// about `per_byte` bytes of memory per byte of file (a measured figure),
/// would not fit [`memory_budget`]: one line naming the file, the estimate,
/// the budget and the knob, instead of the allocator aborting the process
/// half-way (an edge board has no swap to fall back on).
pub fn check_budget(path: &Path, size: u64, per_byte: u64, what: &str) -> Result<()> {
    let Some((budget, from)) = memory_budget()? else {
        return Ok(());
    };
    let need = size.saturating_mul(per_byte);
    if need <= budget {
        return Ok(());
    }
    Err(Error::TooLarge {
        path: path.to_path_buf(),
        detail: format!(
        "loading this {} of {what} needs about {} ({per_byte}x its size), more than the {} budget ({from}); set SPILLSCOPE_MEMORY_BUDGET to change it",
        crate::units::fmt_bytes(size),
        crate::units::fmt_bytes(need),
        crate::units::fmt_bytes(budget),
        ),
    })
}

/// Whether `need` more bytes fit what [`memory_budget`] leaves: a budget
/// set by the user less what this process holds now, or the memory
/// available now. `Err` is one line saying what `what` needs and what is
/// left, for the caller to show where it skips the work (a viewer that
/// keeps going without an optional analysis, instead of being killed on a
/// board with no swap). Fits where nothing can be told.
pub fn check_room(need: u64, what: &str) -> std::result::Result<(), String> {
    let (budget, from) = match memory_budget() {
        Ok(Some(b)) => b,
        Ok(None) => return Ok(()),
        Err(e) => return Err(e.to_string()),
    };
    let held = match from {
        "SPILLSCOPE_MEMORY_BUDGET" => resident_bytes().unwrap_or(0),
        _ => 0,
    };
    let left = budget.saturating_sub(held);
    if need <= left {
        return Ok(());
    }
    // Short first: a status line shows the start of it.
    let fmt = crate::units::fmt_bytes;
    Err(match held {
        0 => format!(
            "{what}: {} needed, more than the {} budget ({from}); set SPILLSCOPE_MEMORY_BUDGET to change it",
            fmt(need),
            fmt(budget)
        ),
        _ => format!(
            "{what}: {} needed, {} left of the {} budget ({from})",
            fmt(need),
            fmt(left),
            fmt(budget)
        ),
    })
}

/// What this process holds in memory now (`VmRSS`), in bytes.
pub fn resident_bytes() -> Option<u64> {
    proc_kib("/proc/self/status", "VmRSS:")
}

/// `MemAvailable` from `/proc/meminfo`, in bytes.
fn available_memory() -> Option<u64> {
    proc_kib("/proc/meminfo", "MemAvailable:")
}

/// The `key` line of a `/proc` file that counts in kB, in bytes.
fn proc_kib(path: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// Reads a whole file after checking the cap, without a leading UTF-8
/// byte order mark (editors on Windows write one before JSON and TOML; no
/// binary format spillscope reads starts with those bytes).
pub fn read(path: &Path) -> Result<Vec<u8>> {
    check_size(path)?;
    let mut bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    if bytes.starts_with(BOM) {
        bytes.drain(..BOM.len());
    }
    Ok(bytes)
}

/// A text file (TOML, CSV) under the cap, as a string without a BOM.
pub fn read_text(path: &Path) -> Result<String> {
    let bytes = read(path)?;
    String::from_utf8(bytes).map_err(|e| {
        Error::io(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()),
        )
    })
}

/// What a file that spillscope does not read is, from its first bytes
/// (images, archives, documents, executables), so the error says "a PNG
/// image" instead of a JSON parse error at 1:1.
pub fn foreign_kind(path: &Path) -> Option<&'static str> {
    let mut head = [0u8; 8];
    let n = read_prefix(path, &mut head).ok()?;
    foreign_kind_of(&head[..n])
}

/// [`foreign_kind`] of a file's first bytes, already read.
fn foreign_kind_of(h: &[u8]) -> Option<&'static str> {
    const KINDS: [(&[u8], &str); 10] = [
        (b"\x89PNG", "a PNG image"),
        (b"\xff\xd8\xff", "a JPEG image"),
        (b"GIF8", "a GIF image"),
        (b"%PDF", "a PDF document"),
        (
            b"PK\x03\x04",
            "a zip archive (an ETRecord, .npz or .zip: unpack what is inside)",
        ),
        (b"\x1f\x8b", "a gzip file (decompress it first)"),
        (b"\x7fELF", "an executable"),
        (b"BZh", "a bzip2 file (decompress it first)"),
        (b"\xfd7zXZ", "an xz file (decompress it first)"),
        (b"\x28\xb5\x2f\xfd", "a zstd file (decompress it first)"),
    ];
    KINDS
        .iter()
        .find(|(m, _)| h.starts_with(m))
        .map(|(_, k)| *k)
}

/// The UTF-8 byte order mark.
pub const BOM: &[u8] = b"\xef\xbb\xbf";

/// `bytes` without a leading byte order mark.
pub fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(BOM).unwrap_or(bytes)
}

/// Consumes a byte order mark at the start of a reader.
pub fn skip_bom<R: std::io::BufRead>(r: &mut R) -> std::io::Result<()> {
    if r.fill_buf()?.starts_with(BOM) {
        r.consume(BOM.len());
    }
    Ok(())
}

/// Every kind of file spillscope reads, told apart by [`detect`] (the one
/// classifier every command uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// An ONNX model (protobuf).
    Onnx,
    /// spillscope's graph JSON (docs/graph-json.md).
    GraphJson,
    /// A `spillscope.trace/1` file.
    Spillscope,
    /// An ONNX Runtime profile.
    Ort,
    /// A PyTorch profiler trace.
    Torch,
    /// Any other Chrome / Perfetto trace (spillscope's own export included).
    Chrome,
    /// The spillscope JSONL event stream (docs/jsonl.md).
    Jsonl,
    /// A TFLite model (flatbuffer, `TFL3`).
    Tflite,
    /// A directory of Arm Vela's outputs (summary and per-layer CSVs, the
    /// debug database, `--verbose-allocation` text).
    Vela,
    /// A kernel DAG of the NPU scheduling benchmark (`{"Nodes", "Edges"}`).
    Kernel,
    /// An ExecuTorch program (flatbuffer, `ET12`): a model, whose own
    /// memory plan `import` reads as a trace.
    Pte,
    /// An ExecuTorch ETDump profile (flatbuffer, `ED00`).
    Etdump,
}

impl Format {
    /// A model to simulate, rather than a trace to read.
    pub fn is_model(self) -> bool {
        matches!(
            self,
            Format::Onnx | Format::GraphJson | Format::Tflite | Format::Kernel | Format::Pte
        )
    }

    /// What the file is, for messages (`a spillscope trace`, ...).
    pub fn label(self) -> &'static str {
        match self {
            Format::Onnx => "ONNX model",
            Format::GraphJson => "graph JSON model",
            Format::Spillscope => "spillscope trace",
            Format::Ort => "ONNX Runtime profile",
            Format::Torch => "PyTorch profiler trace",
            Format::Chrome => "Chrome trace",
            Format::Jsonl => "JSONL event stream",
            Format::Tflite => "TFLite model",
            Format::Vela => "Vela output directory",
            Format::Kernel => "NPU kernel DAG",
            Format::Pte => "ExecuTorch program",
            Format::Etdump => "ExecuTorch ETDump profile",
        }
    }

    /// The name users see and pass to `--from`.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Onnx => "onnx",
            Format::GraphJson => "graph-json",
            Format::Spillscope => "spillscope",
            Format::Ort => "ort",
            Format::Torch => "torch",
            Format::Chrome => "chrome",
            Format::Jsonl => "jsonl",
            Format::Tflite => "tflite",
            Format::Vela => "vela",
            Format::Kernel => "npu-kernel",
            Format::Pte => "pte",
            Format::Etdump => "etdump",
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Ok(match s {
            "spillscope" | "trace" => Format::Spillscope,
            "ort" | "onnxruntime" => Format::Ort,
            "torch" | "pytorch" => Format::Torch,
            "chrome" | "perfetto" => Format::Chrome,
            "jsonl" => Format::Jsonl,
            "onnx" => Format::Onnx,
            "graph-json" | "graph" => Format::GraphJson,
            "tflite" => Format::Tflite,
            "vela" => Format::Vela,
            "pte" | "executorch" => Format::Pte,
            "etdump" | "etdp" => Format::Etdump,
            _ => {
                return Err(format!(
                    "unknown format {s:?} (use ort, torch, chrome, jsonl, vela, pte, etdump)"
                ))
            }
        })
    }
}

/// How much of a file [`detect`] reads to decide.
pub const DETECT_PREFIX_BYTES: usize = 64 * 1024;

/// What a file is: by extension first (`.onnx`, `.jsonl`), then by its first
/// [`DETECT_PREFIX_BYTES`] bytes.
pub fn detect(path: &Path) -> Result<Format> {
    detect_why(path).map(|d| d.0)
}

/// [`detect`], with why: `None` when the extension said, else what in the
/// content decided (for error messages: "read as X because ...").
pub fn detect_why(path: &Path) -> Result<(Format, Option<&'static str>)> {
    if path.is_dir() {
        return if is_vela_dir(path) {
            Ok((Format::Vela, Some("it holds Vela's summary CSV")))
        } else {
            Err(Error::WrongInput {
                path: path.to_path_buf(),
                what: "a directory with no Vela output in it (no *_summary_*.csv)".into(),
                hint: "give a model or trace file, or the --output-dir of a Vela run".into(),
            })
        };
    }
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    match ext.as_deref() {
        Some("onnx") => return Ok((Format::Onnx, None)),
        Some("jsonl") | Some("ndjson") => return Ok((Format::Jsonl, None)),
        Some("tflite") => return Ok((Format::Tflite, None)),
        Some("pte") => return Ok((Format::Pte, None)),
        Some("etdp") | Some("etdump") => return Ok((Format::Etdump, None)),
        _ => {}
    }
    let mut head = vec![0u8; DETECT_PREFIX_BYTES];
    let n = read_prefix(path, &mut head)?;
    if n >= 8 && &head[4..8] == b"TFL3" {
        return Ok((
            Format::Tflite,
            Some("it carries the TFL3 flatbuffer identifier"),
        ));
    }
    if n >= 8 && &head[4..8] == b"ET12" {
        return Ok((
            Format::Pte,
            Some("it carries the ET12 flatbuffer identifier"),
        ));
    }
    // ExecuTorch writes ETDump size-prefixed (the identifier after the size).
    if (n >= 8 && &head[4..8] == b"ED00") || (n >= 12 && &head[8..12] == b"ED00") {
        return Ok((
            Format::Etdump,
            Some("it carries the ED00 flatbuffer identifier"),
        ));
    }
    let (found, why) = detect_bytes_why(&head[..n]).ok_or_else(|| match foreign_kind_of(&head[..n]) {
        Some(kind) => Error::WrongInput {
            path: path.to_path_buf(),
            what: format!("{kind}, not a trace or a model"),
            hint: "spillscope reads its own traces, ONNX Runtime, PyTorch and Chrome profiles, JSONL streams, Vela outputs and models".into(),
        },
        None => Error::parse(
            path,
            "trace",
            "not JSON, JSONL or a Chrome trace (use --from to say which)",
        ),
    })?;
    // An object whose telling key comes after its first 64 KiB (compact
    // JSON written with sorted keys puts `schema` after `events`): look
    // through the rest of the file for it.
    let undecided =
        found == Format::Chrome && n == DETECT_PREFIX_BYTES && !contains(&head, b"\"traceEvents\"");
    if undecided {
        return Ok(match scan_for_markers(path)? {
            Some(f) => (f, Some("a key that names it comes later in the file")),
            None => (found, Some(why)),
        });
    }
    Ok((found, Some(why)))
}

/// Whether `dir` holds a Vela run's outputs (its summary CSV).
pub fn is_vela_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten().any(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.contains("_summary_") && n.ends_with(".csv")
        })
    })
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

/// The format named by a marker anywhere in `path`: the spillscope schema,
/// a Chrome `traceEvents` array, or a graph's `tensors` list. One
/// sequential read in 1 MiB chunks, no parsing.
fn scan_for_markers(path: &Path) -> Result<Option<Format>> {
    use std::io::Read;
    const MARKERS: [(&[u8], Format); 3] = [
        (b"\"spillscope.trace/", Format::Spillscope),
        (b"\"traceEvents\"", Format::Chrome),
        (b"\"tensors\"", Format::GraphJson),
    ];
    let keep = MARKERS.iter().map(|m| m.0.len()).max().unwrap_or(0);
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut filled = 0;
    let mut seen_schema = false;
    let mut graph = false;
    loop {
        let k = match f.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(k) => k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io(path, e)),
        };
        let end = filled + k;
        let chunk = &buf[..end];
        for (m, fmt) in MARKERS {
            if contains(chunk, m) {
                match fmt {
                    Format::GraphJson => graph = true,
                    other => return Ok(Some(other)),
                }
            }
        }
        seen_schema |= contains(chunk, b"\"schema\"");
        // Keep the tail: a marker may straddle two reads.
        let tail = end.saturating_sub(keep);
        buf.copy_within(tail..end, 0);
        filled = end - tail;
    }
    Ok((graph && !seen_schema).then_some(Format::GraphJson))
}

/// Fills `buf` from the start of `path` (fewer bytes at the end of the file).
fn read_prefix(path: &Path, buf: &mut [u8]) -> Result<usize> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    Ok(n)
}

/// The content rules of [`detect`], on a file's first bytes.
pub fn detect_bytes(head: &[u8]) -> Option<Format> {
    detect_bytes_why(head).map(|d| d.0)
}

/// Whether a (long) first line begins like a JSONL record: one of the
/// stream's kinds as a key of the top-level object (not of something
/// nested in it, as in a one-line trace whose events come first).
fn starts_like_record(line: &str) -> bool {
    const KINDS: [&str; 11] = [
        "pool",
        "op_begin",
        "op_end",
        "alloc",
        "free",
        "evict",
        "reload",
        "recompute",
        "stream_in",
        "stream_out",
        "dropped",
    ];
    let start: String = line.chars().take(512).collect();
    let top = top_level_text(&start);
    let top: String = top.chars().filter(|c| !c.is_whitespace()).collect();
    KINDS
        .iter()
        .any(|k| top.contains(&format!("\"kind\":\"{k}\"")))
}

/// The characters of `text` at nesting depth 1 (inside the outer object,
/// outside any inner object or array), strings included.
fn top_level_text(text: &str) -> String {
    let mut out = String::new();
    let (mut depth, mut in_str, mut escaped) = (0usize, false, false);
    for c in text.chars() {
        if in_str {
            if depth == 1 {
                out.push(c);
            }
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth = depth.saturating_sub(1),
            '"' => {
                in_str = true;
                if depth == 1 {
                    out.push(c);
                }
            }
            _ if depth == 1 => out.push(c),
            _ => {}
        }
    }
    out
}

/// [`detect_bytes`] with the rule that decided.
fn detect_bytes_why(head: &[u8]) -> Option<(Format, &'static str)> {
    let text = String::from_utf8_lossy(strip_bom(head));
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        if text.contains("\"traceEvents\"") {
            if text.contains("\"[memory]\"")
                || text.contains("\"cpu_op\"")
                || text.contains("profile_memory")
            {
                return Some((
                    Format::Torch,
                    "it has traceEvents with PyTorch's cpu_op or [memory] events",
                ));
            }
            return Some((Format::Chrome, "it has a traceEvents array"));
        }
        if text.contains("spillscope.trace/") {
            return Some((Format::Spillscope, "it names the spillscope.trace schema"));
        }
        // JSONL: the first line is a whole object with a `kind`, or (a
        // line longer than what was read) starts like one.
        let first_line = trimmed.lines().next().unwrap_or("");
        if let Ok(serde_json::Value::Object(m)) =
            serde_json::from_str::<serde_json::Value>(first_line)
        {
            if m.contains_key("kind") {
                return Some((Format::Jsonl, "its first line is a JSONL record"));
            }
        }
        if text.contains("\"Nodes\"") && text.contains("\"Op\"") && !text.contains("\"schema\"") {
            return Some((
                Format::Kernel,
                "it has the benchmark's Nodes with Op fields",
            ));
        }
        if text.contains("\"tensors\"") && !text.contains("\"schema\"") {
            return Some((Format::GraphJson, "it lists tensors"));
        }
        if !trimmed.contains('\n')
            && head.len() == DETECT_PREFIX_BYTES
            && starts_like_record(trimmed)
        {
            return Some((Format::Jsonl, "its first line starts like a JSONL record"));
        }
        return Some((Format::Chrome, "it is a JSON object naming no other format"));
    }
    if trimmed.starts_with('[') {
        if text.contains("_kernel_time")
            || text.contains("\"model_run\"")
            || text.contains("\"SequentialExecutor")
        {
            return Some((Format::Ort, "it has ONNX Runtime's node and run events"));
        }
        return Some((Format::Chrome, "it is a JSON array of events"));
    }
    None
}

/// A short list (ids, a shape) read with no room to spare: serde grows a
/// list to room for four on its first element, and an op's or tensor's
/// list usually holds one to three, so each held twice the heap it needs
/// (76 MB of a 1M-event trace; on a graph of 10^6 ops, 64 MB).
pub(crate) fn exact_vec<'de, D, T>(d: D) -> std::result::Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de> + Default,
{
    struct Exact<T>(std::marker::PhantomData<T>);
    impl<'de, T: serde::Deserialize<'de> + Default> serde::de::Visitor<'de> for Exact<T> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> std::result::Result<Vec<T>, A::Error> {
            // Up to 16 gather on the stack, then move to an exact list.
            let mut few: [T; 16] = std::array::from_fn(|_| T::default());
            let mut n = 0;
            let exact = |few: &mut [T], n: usize, room: usize| {
                let mut v = Vec::with_capacity(room);
                v.extend(few[..n].iter_mut().map(std::mem::take));
                v
            };
            while n < few.len() {
                match seq.next_element()? {
                    Some(x) => few[n] = x,
                    None => return Ok(exact(&mut few, n, n)),
                }
                n += 1;
            }
            let mut all = exact(&mut few, n, 2 * n);
            while let Some(x) = seq.next_element()? {
                all.push(x);
            }
            all.shrink_to_fit();
            Ok(all)
        }
    }
    d.deserialize_seq(Exact(std::marker::PhantomData))
}

/// [`exact_vec`] for an optional list (`null` or absent: `None`).
pub(crate) fn exact_vec_opt<'de, D, T>(d: D) -> std::result::Result<Option<Vec<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de> + Default,
{
    #[derive(serde::Deserialize)]
    #[serde(bound = "T: serde::Deserialize<'de> + Default")]
    struct List<T>(#[serde(deserialize_with = "exact_vec")] Vec<T>);
    Ok(<Option<List<T>> as serde::Deserialize>::deserialize(d)?.map(|l| l.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn short_lists_are_read_with_no_room_to_spare() {
        #[derive(serde::Deserialize)]
        struct R {
            #[serde(default, deserialize_with = "exact_vec")]
            ids: Vec<usize>,
            #[serde(default, deserialize_with = "exact_vec")]
            names: Vec<compact_str::CompactString>,
            #[serde(default, deserialize_with = "exact_vec_opt")]
            shape: Option<Vec<u64>>,
        }
        let r: R =
            serde_json::from_str(r#"{"ids":[3],"names":["a","b"],"shape":[1,2,3]}"#).unwrap();
        assert_eq!((r.ids.clone(), r.ids.capacity()), (vec![3], 1));
        assert_eq!(r.names.capacity(), 2);
        assert_eq!(r.names[1], "b");
        assert_eq!(
            r.shape.as_ref().map(|s| (s.len(), s.capacity())),
            Some((3, 3))
        );
        // Past the 16 gathered on the stack, in order, still exact.
        let long: Vec<usize> = (0..40).collect();
        let text = format!(r#"{{"ids":{long:?},"shape":null}}"#);
        let r: R = serde_json::from_str(&text).unwrap();
        assert_eq!(r.ids, long);
        assert_eq!(r.ids.capacity(), 40);
        assert_eq!(r.shape, None);
        assert!(r.names.is_empty());
        assert!(serde_json::from_str::<R>(r#"{"ids":[1,"x"]}"#).is_err());
    }

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn a_telling_key_after_the_prefix_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let pad = format!("[{}]", vec!["{\"kind\":\"alloc\"}"; 8000].join(","));
        assert!(pad.len() > DETECT_PREFIX_BYTES);
        let sorted = format!("{{\"events\":{pad},\"schema\":\"spillscope.trace/1\"}}");
        let p = write(dir.path(), "t.json", &sorted);
        assert_eq!(detect(&p).unwrap(), Format::Spillscope);
        let graph = format!("{{\"ops\":{pad},\"tensors\":[]}}");
        let p = write(dir.path(), "g.json", &graph);
        assert_eq!(detect(&p).unwrap(), Format::GraphJson);
        let chrome = format!("{{\"otherData\":{pad},\"traceEvents\":[]}}");
        let p = write(dir.path(), "c.json", &chrome);
        assert_eq!(detect(&p).unwrap(), Format::Chrome);
        // A record whose first line is longer than the prefix is JSONL.
        let long = format!(
            "{{\"kind\":\"alloc\",\"name\":\"{}\"}}\n",
            "x".repeat(DETECT_PREFIX_BYTES)
        );
        let p = write(dir.path(), "r.json", &long);
        assert_eq!(detect(&p).unwrap(), Format::Jsonl);
        // Short files are decided by their prefix alone.
        let p = write(dir.path(), "s.json", "{\"traceEvents\":[]}");
        assert_eq!(detect(&p).unwrap(), Format::Chrome);
    }
}

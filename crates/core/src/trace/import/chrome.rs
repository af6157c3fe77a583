//! Chrome Trace Event Format reading: an array or an object with
//! `traceEvents`, streamed element by element (a file larger than memory is
//! never slurped), tolerant of a missing closing `]` and of events out of
//! order. Produces loosely typed events the format importers interpret.

use crate::trace::CompactString;
use crate::{Error, Result};
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::fmt;
use std::io::Read;
use std::path::Path;

/// One Chrome trace event with the fields spillscope uses.
#[derive(Debug, Clone)]
pub struct ChromeEvent {
    /// Position in the file (for warnings).
    pub index: usize,
    /// Short strings stay inline (no allocation per event).
    pub ph: CompactString,
    pub name: CompactString,
    pub cat: CompactString,
    /// Microseconds (may be fractional).
    pub ts: f64,
    pub dur: Option<f64>,
    pub pid: i64,
    pub tid: i64,
    pub id: Option<String>,
    pub bind_id: Option<String>,
    /// v2 flow direction on a slice (`flow_out` starts an arrow, `flow_in` ends it).
    pub flow_out: bool,
    pub flow_in: bool,
    /// The raw `args` text (one allocation, parsed only when asked for).
    pub raw_args: Option<Box<serde_json::value::RawValue>>,
    args_cache: std::sync::OnceLock<Value>,
}

impl ChromeEvent {
    /// `args` as a JSON value (parsed on first use; `Null` when absent).
    pub fn args(&self) -> &Value {
        self.args_cache.get_or_init(|| {
            self.raw_args
                .as_ref()
                .and_then(|r| serde_json::from_str(r.get()).ok())
                .unwrap_or(Value::Null)
        })
    }

    /// `args` decoded straight into a typed (possibly borrowing) shape.
    pub fn args_as<'a, T: serde::Deserialize<'a>>(&'a self) -> Option<T> {
        serde_json::from_str(self.raw_args.as_ref()?.get()).ok()
    }
}

/// What reading found besides events.
#[derive(Debug, Default, Clone)]
pub struct ReadReport {
    pub warnings: Vec<String>,
    /// Top-level keys other than `traceEvents` (e.g. `baseTimeNanoseconds`).
    pub top: serde_json::Map<String, Value>,
}

/// A finite number, written as a JSON number or a string (`"NaN"`,
/// `"inf"` are not numbers a profile can mean).
pub fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .filter(|x: &f64| x.is_finite())
}

fn id_string(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// A number written as a number or a string; anything else reads as NaN
/// (the event is then skipped with a warning), never a parse failure.
#[derive(Debug, Clone, Copy, Default)]
pub struct Loose(pub Option<f64>);

impl<'de> serde::Deserialize<'de> for Loose {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Loose;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_f64<E>(self, v: f64) -> std::result::Result<Loose, E> {
                Ok(Loose(Some(v)))
            }
            fn visit_u64<E>(self, v: u64) -> std::result::Result<Loose, E> {
                Ok(Loose(Some(v as f64)))
            }
            fn visit_i64<E>(self, v: i64) -> std::result::Result<Loose, E> {
                Ok(Loose(Some(v as f64)))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Loose, E> {
                Ok(Loose(v.trim().parse().ok()))
            }
            fn visit_bool<E>(self, _: bool) -> std::result::Result<Loose, E> {
                Ok(Loose(None))
            }
            fn visit_unit<E>(self) -> std::result::Result<Loose, E> {
                Ok(Loose(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> std::result::Result<Loose, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Loose(None))
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut a: A,
            ) -> std::result::Result<Loose, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Loose(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// A string field that tolerates any JSON type (non-strings read as empty).
#[derive(Debug, Clone, Default)]
struct LooseStr(CompactString);

impl<'de> serde::Deserialize<'de> for LooseStr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LooseStr;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<LooseStr, E> {
                Ok(LooseStr(CompactString::from(v)))
            }
            fn visit_f64<E>(self, _: f64) -> std::result::Result<LooseStr, E> {
                Ok(LooseStr::default())
            }
            fn visit_u64<E>(self, _: u64) -> std::result::Result<LooseStr, E> {
                Ok(LooseStr::default())
            }
            fn visit_i64<E>(self, _: i64) -> std::result::Result<LooseStr, E> {
                Ok(LooseStr::default())
            }
            fn visit_bool<E>(self, _: bool) -> std::result::Result<LooseStr, E> {
                Ok(LooseStr::default())
            }
            fn visit_unit<E>(self) -> std::result::Result<LooseStr, E> {
                Ok(LooseStr::default())
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> std::result::Result<LooseStr, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(LooseStr::default())
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut a: A,
            ) -> std::result::Result<LooseStr, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(LooseStr::default())
            }
        }
        d.deserialize_any(V)
    }
}

/// The typed shape of one event: top-level keys without building a map.
#[derive(Debug, Default, serde::Deserialize)]
struct RawEvent {
    #[serde(default)]
    ph: LooseStr,
    #[serde(default)]
    name: LooseStr,
    #[serde(default)]
    cat: LooseStr,
    #[serde(default)]
    ts: Option<Loose>,
    #[serde(default)]
    dur: Option<Loose>,
    #[serde(default)]
    pid: Option<Loose>,
    #[serde(default)]
    tid: Option<Loose>,
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    bind_id: Option<Value>,
    #[serde(default)]
    flow_out: Option<Value>,
    #[serde(default)]
    flow_in: Option<Value>,
    #[serde(default)]
    args: Option<Box<serde_json::value::RawValue>>,
}

fn from_raw(
    index: usize,
    r: RawEvent,
    report: &mut ReadReport,
    limit: usize,
) -> Option<ChromeEvent> {
    let ph = r.ph.0;
    let ts = r.ts.and_then(|l| l.0).filter(|t| t.is_finite());
    if ts.is_none() && ph != "M" {
        if report.warnings.len() < limit {
            report
                .warnings
                .push(format!("event {index}: missing or invalid `ts`, skipped"));
        }
        return None;
    }
    let mut dur = r.dur.and_then(|l| l.0);
    if let Some(d) = dur {
        if d < 0.0 || !d.is_finite() {
            if report.warnings.len() < limit {
                report.warnings.push(format!(
                    "event {index}: negative or invalid duration {d}, treated as 0"
                ));
            }
            dur = Some(0.0);
        }
    }
    let bind_id = r.bind_id.as_ref().and_then(id_string).or_else(|| {
        let raw = r.args.as_ref()?.get();
        if !raw.contains("bind_id") {
            return None;
        }
        serde_json::from_str::<Value>(raw)
            .ok()?
            .get("bind_id")
            .and_then(id_string)
    });
    Some(ChromeEvent {
        index,
        ph,
        name: r.name.0,
        cat: r.cat.0,
        ts: ts.unwrap_or(0.0),
        dur,
        pid: r.pid.and_then(|l| l.0).unwrap_or(0.0) as i64,
        tid: r.tid.and_then(|l| l.0).unwrap_or(0.0) as i64,
        id: r.id.as_ref().and_then(id_string),
        bind_id,
        flow_out: matches!(r.flow_out, Some(Value::Bool(true))),
        flow_in: matches!(r.flow_in, Some(Value::Bool(true))),
        raw_args: r.args,
        args_cache: std::sync::OnceLock::new(),
    })
}

struct Sink<'a, F: FnMut(ChromeEvent)> {
    f: &'a mut F,
    report: &'a mut ReadReport,
    count: &'a mut usize,
    limit_events: usize,
}

impl<'de, F: FnMut(ChromeEvent)> Visitor<'de> for &mut Sink<'_, F> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of trace events, or an object with `traceEvents`")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        while let Some(v) = seq.next_element::<RawEvent>()? {
            let i = *self.count;
            *self.count += 1;
            if *self.count > self.limit_events {
                return Err(serde::de::Error::custom(format!(
                    "more than {} events (raise --max-events)",
                    self.limit_events
                )));
            }
            if let Some(e) = from_raw(i, v, self.report, 20) {
                (self.f)(e);
            }
        }
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        while let Some(k) = map.next_key::<String>()? {
            if k == "traceEvents" {
                map.next_value_seed(&mut *self)?;
            } else if matches!(
                k.as_str(),
                "displayTimeUnit"
                    | "baseTimeNanoseconds"
                    | "schemaVersion"
                    | "otherData"
                    | "trace_id"
            ) {
                let v: Value = map.next_value()?;
                self.report.top.insert(k, v);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

impl<'de, F: FnMut(ChromeEvent)> DeserializeSeed<'de> for &mut Sink<'_, F> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

/// Streams the events of a Chrome trace from `r` into `f`.
pub fn stream<R: Read>(
    r: R,
    origin: &Path,
    max_events: usize,
    f: impl FnMut(ChromeEvent),
) -> Result<ReadReport> {
    let mut r = std::io::BufReader::with_capacity(1 << 20, r);
    crate::input::skip_bom(&mut r).map_err(|e| Error::io(origin, e))?;
    let mut de = serde_json::Deserializer::from_reader(r);
    drive(&mut de, origin, max_events, f)
}

/// Files up to this size are read whole and parsed from memory (several
/// times faster); larger ones are streamed.
pub const SLURP_LIMIT: u64 = 1 << 30;

/// The fast path for a well-formed in-memory trace: split the event array
/// with `RawValue` (a cheap scan), then decode the halves on two threads.
/// `None` when the file is not well formed (the caller falls back).
fn parse_parallel(bytes: &[u8], max_events: usize) -> Option<(Vec<ChromeEvent>, ReadReport)> {
    use serde_json::value::RawValue;
    #[derive(serde::Deserialize)]
    struct Obj<'a> {
        #[serde(borrow, rename = "traceEvents")]
        events: Vec<&'a RawValue>,
        #[serde(default, rename = "displayTimeUnit")]
        unit: Option<Value>,
        #[serde(default, rename = "baseTimeNanoseconds")]
        base: Option<Value>,
    }
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace())?;
    let mut report = ReadReport::default();
    let raws: Vec<&RawValue> = if *first == b'[' {
        serde_json::from_slice(bytes).ok()?
    } else {
        let o: Obj = serde_json::from_slice(bytes).ok()?;
        if let Some(u) = o.unit {
            report.top.insert("displayTimeUnit".into(), u);
        }
        if let Some(b) = o.base {
            report.top.insert("baseTimeNanoseconds".into(), b);
        }
        o.events
    };
    if raws.len() > max_events || raws.is_empty() {
        return None;
    }
    let decode = |from: usize, part: &[&RawValue]| -> Option<(Vec<ChromeEvent>, ReadReport)> {
        let mut rep = ReadReport::default();
        let mut out = Vec::with_capacity(part.len());
        for (i, r) in part.iter().enumerate() {
            let raw: RawEvent = serde_json::from_str(r.get()).ok()?;
            if let Some(e) = from_raw(from + i, raw, &mut rep, 20) {
                out.push(e);
            }
        }
        Some((out, rep))
    };
    let mid = raws.len() / 2;
    let (a, b) = std::thread::scope(|s| {
        let h = s.spawn(|| decode(mid, &raws[mid..]));
        let a = decode(0, &raws[..mid]);
        (a, h.join().ok().flatten())
    });
    let (mut ea, ra) = a?;
    let (eb, rb) = b?;
    ea.extend(eb);
    report.warnings.extend(ra.warnings);
    report.warnings.extend(rb.warnings);
    report.warnings.truncate(20);
    Some((ea, report))
}

/// Parses an in-memory Chrome trace.
pub fn parse_slice(
    bytes: &[u8],
    origin: &Path,
    max_events: usize,
    f: impl FnMut(ChromeEvent),
) -> Result<ReadReport> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    drive(&mut de, origin, max_events, f)
}

fn drive<'de, R: serde_json::de::Read<'de>>(
    de: &mut serde_json::Deserializer<R>,
    origin: &Path,
    max_events: usize,
    mut f: impl FnMut(ChromeEvent),
) -> Result<ReadReport> {
    let mut report = ReadReport::default();
    let mut count = 0usize;
    let mut sink = Sink {
        f: &mut f,
        report: &mut report,
        count: &mut count,
        limit_events: max_events,
    };
    match (&mut sink).deserialize(de) {
        Ok(()) => {}
        Err(e) if e.is_eof() && count > 0 => {
            report.warnings.push(format!(
                "the file ends before its closing bracket (after {}); read what was there",
                crate::units::count(count as u64, "event")
            ));
        }
        Err(e) => {
            return Err(Error::parse(
                origin,
                "Chrome trace JSON",
                format!("event {count}: {e}"),
            ))
        }
    }
    if count == 0 && report.top.is_empty() {
        return Err(Error::parse(
            origin,
            "Chrome trace JSON",
            "no trace events found",
        ));
    }
    Ok(report)
}

/// Reads every event of a Chrome trace file (sorted by time, stable).
pub fn read_file(path: &Path, max_events: usize) -> Result<(Vec<ChromeEvent>, ReadReport)> {
    crate::input::check_size(path)?;
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let size = f.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
    let mut events = Vec::new();
    let report = if size <= SLURP_LIMIT {
        let mut bytes = Vec::with_capacity(size as usize);
        std::io::BufReader::new(f)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io(path, e))?;
        let bytes = crate::input::strip_bom(&bytes);
        match parse_parallel(bytes, max_events) {
            Some((evs, report)) => {
                events = evs;
                report
            }
            // Truncated or odd files: the sequential reader recovers what it
            // can and names the offending event.
            None => parse_slice(bytes, path, max_events, |e| events.push(e))?,
        }
    } else {
        stream(f, path, max_events, |e| events.push(e))?
    };
    Ok((sort_by_time(events), report))
}

/// Stable sort by timestamp. Events are big, so sort indices and move each
/// event once; already-ordered input (the common case) costs one pass.
fn sort_by_time(events: Vec<ChromeEvent>) -> Vec<ChromeEvent> {
    let before = |a: &ChromeEvent, b: &ChromeEvent| {
        a.ts.partial_cmp(&b.ts)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.index.cmp(&b.index))
    };
    if events
        .windows(2)
        .all(|w| before(&w[0], &w[1]) != std::cmp::Ordering::Greater)
    {
        return events;
    }
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_by(|&a, &b| before(&events[a], &events[b]));
    let mut slots: Vec<Option<ChromeEvent>> = events.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

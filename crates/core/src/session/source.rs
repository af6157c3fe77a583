//! What a session runs on: trace files (one, or two to compare), a model
//! to simulate from a run specification, or traces already in memory (the
//! bundled sample); and what it keeps between runs so that nothing is read
//! twice (JSONL streams tailed from where they were read up to, the model
//! and whole traces by file stamp).

use super::dataset::Dataset;
use super::kept::QuickParts;
use crate::graph::Graph;
use crate::run::RunSpec;
use crate::trace::import::{self, jsonl::JsonlTail};
use crate::trace::store::Lookup;
use crate::trace::Trace;
use crate::Result;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// How trace files are read, and the level of nested calls shown.
#[derive(Debug, Clone)]
pub struct TraceOpts {
    /// The format, when the user said (else detected per file).
    pub format: Option<import::Format>,
    /// The importers' options (`--run`, `--model`, `--max-events`).
    pub import: import::ImportOptions,
    /// Nested ops are folded to this level (1 = top level); the explorer's
    /// keys change it, the worker reads it on each load.
    pub level: Arc<AtomicU32>,
}

impl Default for TraceOpts {
    fn default() -> Self {
        TraceOpts {
            format: None,
            import: Default::default(),
            level: Arc::new(AtomicU32::new(1)),
        }
    }
}

/// What a session runs on.
#[derive(Debug, Clone)]
pub enum Source {
    /// Trace files (one, or two to compare).
    Traces(Vec<PathBuf>, TraceOpts),
    /// Simulate a model; re-simulate when it, the hardware file or the
    /// config changes (the spec is resolved again each time).
    Model(Box<RunSpec>),
    /// Traces already in memory (the bundled sample, a trace `report` read).
    Embedded(Vec<(String, Arc<Trace>)>),
}

impl Source {
    /// Files whose change should trigger a refresh.
    pub fn watched(&self, watch_traces: bool) -> Vec<PathBuf> {
        match self {
            Source::Traces(p, _) if watch_traces => p.clone(),
            Source::Model(spec) => spec.inputs(),
            _ => Vec::new(),
        }
    }

    /// The first frame's datasets, through the session's job (a model is
    /// simulated once, traces read once; no bound or suggestions), with
    /// where each JSONL stream was read up to, so a later refresh reads
    /// only what was appended since.
    pub fn load_quick(&self) -> Result<(Vec<Dataset>, Tails)> {
        let mut tails = Tails::new();
        let data = std::sync::Mutex::new(Vec::new());
        let post = |u: super::Update| {
            if let super::Update::Loaded { slot, data: d } = u {
                if let Ok(mut v) = data.lock() {
                    v.push((slot, *d));
                }
            }
        };
        let request = super::Request {
            source: self.clone(),
            wants: super::Wants {
                datasets: true,
                ..Default::default()
            },
            budgets: Default::default(),
            cache: None,
        };
        super::job::Job::new(0, crate::cancel::Cancel::never(), &post, &mut tails)
            .quick_only()
            .run(&request)?;
        let mut v = data.into_inner().unwrap_or_default();
        v.sort_by_key(|x| x.0);
        Ok((v.into_iter().map(|x| x.1).collect(), tails))
    }

    /// The traces this source stands for (not a model's), nested ops
    /// folded to the level asked for.
    pub(crate) fn load_traces(&self, tails: &mut Tails) -> Result<Vec<Loaded>> {
        match self {
            Source::Traces(paths, opts) => {
                let level = opts.level.load(Ordering::Relaxed).max(1);
                paths
                    .iter()
                    .map(|p| {
                        let (full, warnings) = tails.trace(p, opts, &label_of(p))?;
                        Ok(Loaded::at_level(label_of(p), full, warnings, level))
                    })
                    .collect()
            }
            Source::Embedded(traces) => Ok(traces
                .iter()
                .map(|(l, t)| Loaded::at_level(l.clone(), t.clone(), Vec::new(), 1))
                .collect()),
            Source::Model(_) => Ok(Vec::new()),
        }
    }
}

/// A file's name as labels show it.
pub fn label_of(p: &Path) -> String {
    p.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A calibration profile (`--calibrate`), linked to the model and read
/// once (again only when it changes).
pub(crate) fn profile_of(
    tails: &mut Tails,
    spec: &RunSpec,
    g: &Arc<Graph>,
) -> Result<Option<Loaded>> {
    let Some(p) = &spec.flags.calibrate else {
        return Ok(None);
    };
    let opts = TraceOpts {
        import: import::ImportOptions {
            model: Some(g.clone()),
            ..Default::default()
        },
        ..Default::default()
    };
    let (full, warnings) = tails.trace(p, &opts, &label_of(p))?;
    Ok(Some(Loaded::at_level(label_of(p), full, warnings, 1)))
}

/// One trace as loaded: nested ops folded to `level` of `levels`.
pub(crate) struct Loaded {
    pub(crate) label: String,
    pub(crate) trace: Arc<Trace>,
    pub(crate) warnings: Vec<String>,
    pub(crate) level: u32,
    pub(crate) levels: u32,
}

impl Loaded {
    pub(crate) fn at_level(
        label: String,
        full: Arc<Trace>,
        warnings: Vec<String>,
        level: u32,
    ) -> Loaded {
        let levels = crate::trace::nesting::Nesting::levels_of(&full.ops);
        let level = level.min(levels);
        // Only nested traces are rebuilt; the others are shared as read.
        let trace = if levels > 1 {
            Arc::new(crate::trace::nesting::collapse(&full, level))
        } else {
            full
        };
        Loaded {
            label,
            trace,
            warnings,
            level,
            levels,
        }
    }
}

/// What the worker keeps between refreshes so that nothing is read twice:
/// per JSONL stream, how far it has been read; the model last loaded, with
/// the stamp of its file (a config edit re-simulates without re-parsing it).
#[derive(Default)]
pub struct Tails {
    pub streams: HashMap<PathBuf, JsonlTail>,
    model: Option<(Option<FileStamp>, Arc<Graph>)>,
    /// Whole traces as read, by path: read again only when the file changed
    /// (changing the level of nested calls shown does not re-read them).
    traces: HashMap<PathBuf, (FileStamp, Arc<Trace>, Vec<String>)>,
    /// First-frame analyses the binary trace cache kept beside a trace it
    /// gave back (by the trace: [`Tails::kept_parts`]).
    kept: Vec<(Arc<Trace>, QuickParts)>,
    /// What recovering a dead recorder's ring file added to a stream, said
    /// with every later load of it.
    recovered: HashMap<PathBuf, String>,
    /// Traces read from their JSON, to be kept in the binary trace cache
    /// once their first frame is out ([`Tails::keep_traces`]).
    to_keep: Vec<ToKeep>,
}

/// A trace read from its JSON, to be kept in the binary trace cache, with
/// its first frame's analyses once they are done.
struct ToKeep {
    pending: crate::trace::store::Pending,
    trace: Arc<Trace>,
    parts: Option<QuickParts>,
}

impl Tails {
    pub fn new() -> Tails {
        Tails::default()
    }

    /// The whole trace at `p` (JSONL streams: what was appended so far).
    pub(crate) fn trace(
        &mut self,
        p: &Path,
        opts: &TraceOpts,
        label: &str,
    ) -> Result<(Arc<Trace>, Vec<String>)> {
        let format = match opts.format {
            Some(f) => f,
            None => import::detect(p)?,
        };
        if format == import::Format::Jsonl {
            if let Some(note) = import::jsonl::recover_stream(p)? {
                self.recovered.insert(p.to_path_buf(), note);
            }
            let tail = self.streams.entry(p.to_path_buf()).or_insert_with(|| {
                let mut t = JsonlTail::new(p);
                if let Some(k) = opts.import.keep {
                    t.state.keep(k);
                }
                t
            });
            tail.poll()?;
            let mut tr = tail.state.snapshot();
            tr.meta.model = label.to_string();
            // A partial last line is normal while a runtime writes; skipped
            // lines and drops are not.
            let mut notes: Vec<String> = self.recovered.get(p).cloned().into_iter().collect();
            notes.extend(tail.state.problems());
            if tail.replaced > 0 {
                notes.push(format!(
                    "{} was replaced while it was followed ({}): read again from its start",
                    p.display(),
                    crate::units::count(tail.replaced as u64, "time")
                ));
            }
            return Ok((Arc::new(tr), notes));
        }
        let stamp = file_stamp(p);
        if let (Some(st), Some((s, t, w))) = (stamp, self.traces.get(p)) {
            if *s == st {
                return Ok((t.clone(), w.clone()));
            }
        }
        // A spillscope trace through the binary cache: read from it, or
        // from the JSON and kept after the first frame (writing it first
        // would hold the first frame back by about a sixth).
        let mut pending = None;
        let mut extra = None;
        let cached = match (&opts.import.store, format) {
            (Some(store), import::Format::Spillscope) => match store.lookup(p)? {
                Lookup::Hit(tr, e) => {
                    extra = e;
                    Some(*tr)
                }
                Lookup::Miss(m) => {
                    pending = Some(m);
                    None
                }
                Lookup::Small => None,
            },
            _ => None,
        };
        let (tr, w) = match cached {
            Some(tr) => (tr, Vec::new()),
            // The cache is done with here: the importer reads the JSON.
            None => {
                let uncached = import::ImportOptions {
                    store: None,
                    ..opts.import.clone()
                };
                import::import(p, Some(format), &uncached)?
            }
        };
        let tr = Arc::new(tr);
        if let Some(pending) = pending {
            self.to_keep.push(ToKeep {
                pending,
                trace: tr.clone(),
                parts: None,
            });
        }
        if let Some(st) = stamp {
            self.traces
                .insert(p.to_path_buf(), (st, tr.clone(), w.clone()));
        }
        // Analyses kept for a trace no path holds any more go with it.
        let traces = &self.traces;
        self.kept
            .retain(|(t, _)| traces.values().any(|v| Arc::ptr_eq(&v.1, t)));
        if let Some(parts) = extra.and_then(|e| QuickParts::decode(e.bytes(), &tr)) {
            self.kept.push((tr.clone(), parts));
        }
        Ok((tr, w))
    }

    /// Writes the traces read from their JSON since the last call into the
    /// binary trace cache (the session calls it once their first frame is
    /// posted).
    pub(crate) fn keep_traces(&mut self) {
        for k in self.to_keep.drain(..) {
            let extra = k.parts.and_then(|p| p.encode().ok()).unwrap_or_default();
            k.pending.keep_with(&k.trace, &extra);
        }
    }

    /// The first-frame analyses the cache kept beside `tr`, if it came
    /// from the cache with them.
    pub(crate) fn kept_parts(&self, tr: &Arc<Trace>) -> Option<QuickParts> {
        let kept = self.kept.iter().find(|(t, _)| Arc::ptr_eq(t, tr));
        kept.map(|(_, p)| p.clone())
    }

    /// Holds `parts()` (of `tr`'s quick dataset) for when `tr` is kept in
    /// the cache; nothing when it is not to be kept.
    pub(crate) fn keep_parts(&mut self, tr: &Arc<Trace>, parts: impl FnOnce() -> QuickParts) {
        if let Some(k) = self.to_keep.iter_mut().find(|k| Arc::ptr_eq(&k.trace, tr)) {
            k.parts = Some(parts());
        }
    }

    /// The spec's model, loaded again only when its file changed.
    pub(crate) fn graph(&mut self, spec: &RunSpec) -> Result<Arc<Graph>> {
        let stamp = file_stamp(&spec.model);
        if let Some((s, g)) = &self.model {
            if stamp.is_some() && *s == stamp {
                return Ok(g.clone());
            }
        }
        let g = Arc::new(spec.load_graph()?);
        self.model = Some((stamp, g.clone()));
        Ok(g)
    }
}

/// What identifies a file's contents cheaply: size, modification time and
/// (on Unix) which file the path names, so an atomic replace shows too.
pub type FileStamp = (u64, Option<std::time::SystemTime>, u64);

pub fn file_stamp(p: &Path) -> Option<FileStamp> {
    let m = std::fs::metadata(p).ok()?;
    #[cfg(unix)]
    let ino = std::os::unix::fs::MetadataExt::ino(&m);
    #[cfg(not(unix))]
    let ino = 0;
    Some((m.len(), m.modified().ok(), ino))
}

//! The loop: terminal set-up and guaranteed restore, the input thread, the
//! file watcher, the background worker (loads and re-simulations, only the
//! newest request kept), and redraws only when state changed.

use super::app::{update, App, Effect, Msg};
use super::data::Dataset;
use super::theme::{ColorMode, Theme};
use super::ui;
use crossterm::event::{self, Event};
use spillscope::graph::Graph;
use spillscope::run::RunSpec;
use spillscope::sim::simulate;
use spillscope::trace::import::{self, jsonl::JsonlTail};
use spillscope::trace::Trace;
use spillscope::{Error, Result};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

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

/// What the explorer shows, and how to (re)build it.
#[derive(Debug, Clone)]
pub enum Source {
    /// Trace files (one, or two to compare).
    Traces(Vec<PathBuf>, TraceOpts),
    /// Simulate a model; re-simulate when it, the hardware file or the
    /// config changes (the spec is resolved again each time).
    Model(Box<RunSpec>),
    /// Traces embedded in the binary (the bundled sample).
    Embedded(Vec<(String, Trace)>),
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

    /// Builds the datasets (slow: runs off the UI thread).
    pub fn load(&self) -> Result<Vec<Dataset>> {
        self.load_with(&mut Tails::new())
    }

    /// As [`Source::load`], tailing JSONL streams incrementally with the
    /// given per-file state (a watcher keeps it between refreshes, so only
    /// appended bytes are read).
    pub fn load_with(&self, tails: &mut Tails) -> Result<Vec<Dataset>> {
        Ok(self
            .load_traces(tails)?
            .into_iter()
            .map(|l| {
                Dataset::complete(l.label, l.trace)
                    .with_warnings(l.warnings)
                    .with_levels(l.level, l.levels)
            })
            .collect())
    }

    /// Only what the first frame needs; [`Dataset::complete`] the rest in the
    /// background (see [`run`]). Also returns where each JSONL stream was
    /// read up to, so the explorer's first refresh reads only what was
    /// appended since, not the whole stream again.
    pub fn load_quick(&self) -> Result<(Vec<Dataset>, Tails)> {
        let mut tails = Tails::new();
        let data = self
            .load_traces(&mut tails)?
            .into_iter()
            .map(|l| {
                Dataset::quick(l.label, l.trace)
                    .with_warnings(l.warnings)
                    .with_levels(l.level, l.levels)
            })
            .collect();
        Ok((data, tails))
    }

    /// The traces this source stands for, nested ops folded to the level
    /// asked for.
    fn load_traces(&self, tails: &mut Tails) -> Result<Vec<Loaded>> {
        match self {
            Source::Traces(paths, opts) => {
                let level = opts.level.load(Ordering::Relaxed).max(1);
                paths
                    .iter()
                    .map(|p| {
                        let label = p
                            .file_name()
                            .map(|s| s.to_string_lossy().into_owned())
                            .unwrap_or_default();
                        let (full, warnings) = tails.trace(p, opts, &label)?;
                        Ok(Loaded::at_level(label, full, warnings, level))
                    })
                    .collect()
            }
            Source::Embedded(traces) => Ok(traces
                .iter()
                .map(|(l, t)| Loaded::at_level(l.clone(), Arc::new(t.clone()), Vec::new(), 1))
                .collect()),
            Source::Model(spec) => {
                let g = tails.graph(spec)?;
                // Calibrated: the profile, linked to the model and read once
                // (again only when it changes), gives the measured op times
                // and stands beside the simulation for Compare.
                let profile = match &spec.flags.calibrate {
                    Some(p) => {
                        let opts = TraceOpts {
                            import: import::ImportOptions {
                                model: Some(g.clone()),
                                ..Default::default()
                            },
                            ..Default::default()
                        };
                        let label = p
                            .file_name()
                            .map(|s| s.to_string_lossy().into_owned())
                            .unwrap_or_default();
                        let (full, warnings) = tails.trace(p, &opts, &label)?;
                        Some((label, full, warnings))
                    }
                    None => None,
                };
                let r = spec.resolve_with_profile(&g, profile.as_ref().map(|p| &*p.1))?;
                let tr = simulate(&g, &r.hardware, &r.first_config())?;
                let label = spec
                    .model
                    .file_name()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let mut out = vec![Loaded::at_level(label, Arc::new(tr), Vec::new(), 1)];
                if let Some((label, full, warnings)) = profile {
                    out.push(Loaded::at_level(label, full, warnings, 1));
                }
                Ok(out)
            }
        }
    }
}

/// One trace as loaded: nested ops folded to `level` of `levels`.
struct Loaded {
    label: String,
    trace: Arc<Trace>,
    warnings: Vec<String>,
    level: u32,
    levels: u32,
}

impl Loaded {
    fn at_level(label: String, full: Arc<Trace>, warnings: Vec<String>, level: u32) -> Loaded {
        let levels = spillscope::trace::nesting::Nesting::of(&full.ops).levels();
        let level = level.min(levels);
        // Only nested traces are rebuilt; the others are shared as read.
        let trace = if levels > 1 {
            Arc::new(spillscope::trace::nesting::collapse(&full, level))
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

/// Explorer options from the command line.
#[derive(Debug, Clone)]
pub struct ViewOptions {
    pub source: Source,
    pub watch: bool,
    pub theme: Option<String>,
    pub ascii: bool,
    pub mouse: bool,
}

/// Restores the terminal when dropped: on quit, on error, on panic unwind.
struct TerminalGuard {
    mouse: bool,
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        if self.mouse {
            let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableMouseCapture);
        }
        ratatui::restore();
    }
}

/// The worker's inbox: at most one pending request (newer replaces older).
#[derive(Default)]
struct Latest {
    /// A refresh is wanted (several requests while busy collapse into one).
    pending: Mutex<bool>,
    cv: Condvar,
}

/// The suggestion worker's inbox: the newest primary trace to re-simulate.
#[derive(Default)]
pub struct SuggestInbox {
    pending: Mutex<Option<Arc<Trace>>>,
    cv: Condvar,
}

/// Traces with more ops than this are not re-simulated interactively.
const SUGGEST_MAX_OPS: usize = 20_000;

/// Computes suggestions for the newest trace handed to it, one at a time
/// (older requests are dropped), and posts them as [`Msg::Suggested`].
fn spawn_suggester(tx: Sender<Msg>) -> Arc<SuggestInbox> {
    let inbox = Arc::new(SuggestInbox::default());
    let mine = inbox.clone();
    std::thread::spawn(move || loop {
        let trace = {
            let Ok(mut g) = mine.pending.lock() else {
                return;
            };
            loop {
                if let Some(t) = g.take() {
                    break t;
                }
                g = match mine.cv.wait(g) {
                    Ok(g) => g,
                    Err(_) => return,
                };
            }
        };
        let inputs = spillscope::analysis::suggest::inputs_of_trace(&trace);
        // The bound `sim` prints for this run (the exact program, within
        // its time limit, on the graph that ran), before the suggestions.
        if let Some((g, hw, _)) = inputs
            .as_ref()
            .ok()
            .filter(|(_, hw, _)| hw.is_single_pool())
        {
            let optimum = spillscope::analysis::optimum::optimal_traffic(
                g,
                spillscope::analysis::optimum::PoolSize::of(hw),
                spillscope::analysis::optimum::OptimumLimits {
                    time_limit_s: spillscope::analysis::optimum::DEFAULT_TIME_LIMIT_S,
                    ..Default::default()
                },
            );
            let msg = Msg::Bounded {
                trace: trace.clone(),
                optimum: Box::new(optimum),
            };
            if tx.send(msg).is_err() {
                return;
            }
        }
        let result = if trace.ops.len() > SUGGEST_MAX_OPS {
            Err(format!(
                "{} ops: too many to re-simulate interactively; run `spillscope suggest` on it",
                trace.ops.len()
            ))
        } else {
            inputs
                .and_then(|(g, hw, cfg)| spillscope::analysis::suggest::suggest(&g, &hw, &cfg))
                .map(Box::new)
                .map_err(|e| e.to_string())
        };
        if tx.send(Msg::Suggested { trace, result }).is_err() {
            return;
        }
    });
    inbox
}

fn spawn_suggestions(inbox: &SuggestInbox, trace: Arc<Trace>) {
    if let Ok(mut g) = inbox.pending.lock() {
        *g = Some(trace);
        inbox.cv.notify_one();
    }
}

fn spawn_worker(
    source: Source,
    tx: Sender<Msg>,
    suggester: Arc<SuggestInbox>,
    mut tails: Tails,
) -> Arc<Latest> {
    let latest = Arc::new(Latest::default());
    let inbox = latest.clone();
    std::thread::spawn(move || loop {
        {
            let mut g = match inbox.pending.lock() {
                Ok(g) => g,
                Err(_) => return,
            };
            while !*g {
                g = match inbox.cv.wait(g) {
                    Ok(g) => g,
                    Err(_) => return,
                };
            }
            *g = false;
        }
        let msg = match source.load_with(&mut tails) {
            Ok(sets) => {
                let mut ok = true;
                for (slot, d) in sets.into_iter().enumerate() {
                    if slot == 0 {
                        spawn_suggestions(&suggester, d.trace.clone());
                    }
                    if tx
                        .send(Msg::Loaded {
                            slot,
                            data: Box::new(d),
                        })
                        .is_err()
                    {
                        ok = false;
                    }
                }
                if !ok {
                    return;
                }
                continue;
            }
            Err(e) => Msg::Failed(e.to_string()),
        };
        if tx.send(msg).is_err() {
            return;
        }
    });
    latest
}

fn request(latest: &Latest) {
    if let Ok(mut g) = latest.pending.lock() {
        *g = true;
        latest.cv.notify_one();
    }
}

fn spawn_watcher(
    paths: &[PathBuf],
    tx: Sender<Msg>,
) -> Result<
    Option<
        notify_debouncer_full::Debouncer<
            notify::RecommendedWatcher,
            notify_debouncer_full::RecommendedCache,
        >,
    >,
> {
    use notify::RecursiveMode;
    if paths.is_empty() {
        return Ok(None);
    }
    let targets: Vec<PathBuf> = paths
        .iter()
        .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
        .collect();
    let names: Vec<PathBuf> = targets.clone();
    let mut deb = notify_debouncer_full::new_debouncer(
        Duration::from_millis(150),
        None,
        move |res: notify_debouncer_full::DebounceEventResult| {
            if let Ok(events) = res {
                let hit = events.iter().flat_map(|e| e.paths.iter()).find(|p| {
                    names.iter().any(|n| {
                        n == *p || n.file_name() == p.file_name() && n.parent() == p.parent()
                    })
                });
                if let Some(p) = hit {
                    let _ = tx.send(Msg::FileChanged(p.clone()));
                }
            }
        },
    )
    .map_err(|e| Error::Config(format!("cannot watch files: {e}")))?;
    // Watch directories, so editors' atomic saves (write + rename) are seen.
    let mut dirs: Vec<PathBuf> = targets
        .iter()
        .filter_map(|p| p.parent().map(Path::to_path_buf))
        .collect();
    dirs.sort();
    dirs.dedup();
    for d in dirs {
        deb.watch(&d, RecursiveMode::NonRecursive)
            .map_err(|e| Error::Config(format!("cannot watch {}: {e}", d.display())))?;
    }
    Ok(Some(deb))
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
    /// What recovering a dead recorder's ring file added to a stream, said
    /// with every later load of it.
    recovered: HashMap<PathBuf, String>,
}

impl Tails {
    pub fn new() -> Tails {
        Tails::default()
    }

    /// The whole trace at `p` (JSONL streams: what was appended so far).
    fn trace(
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
            let tail = self
                .streams
                .entry(p.to_path_buf())
                .or_insert_with(|| JsonlTail::new(p));
            tail.poll()?;
            let mut tr = tail.state.snapshot();
            tr.meta.model = label.to_string();
            // A partial last line is normal while a runtime writes; skipped
            // lines and drops are not.
            let mut notes: Vec<String> = self.recovered.get(p).cloned().into_iter().collect();
            notes.extend(tail.state.problems());
            return Ok((Arc::new(tr), notes));
        }
        let stamp = file_stamp(p);
        if let (Some(st), Some((s, t, w))) = (stamp, self.traces.get(p)) {
            if *s == st {
                return Ok((t.clone(), w.clone()));
            }
        }
        let (tr, w) = import::import(p, Some(format), &opts.import)?;
        let tr = Arc::new(tr);
        if let Some(st) = stamp {
            self.traces
                .insert(p.to_path_buf(), (st, tr.clone(), w.clone()));
        }
        Ok((tr, w))
    }

    /// The spec's model, loaded again only when its file changed.
    fn graph(&mut self, spec: &RunSpec) -> Result<Arc<Graph>> {
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

/// How often a followed trace is checked for growth.
const TRACE_POLL: Duration = Duration::from_millis(250);

/// What identifies a file's contents cheaply: size, modification time and
/// (on Unix) which file the path names, so an atomic replace shows too.
type FileStamp = (u64, Option<std::time::SystemTime>, u64);

fn file_stamp(p: &Path) -> Option<FileStamp> {
    let m = std::fs::metadata(p).ok()?;
    #[cfg(unix)]
    let ino = std::os::unix::fs::MetadataExt::ino(&m);
    #[cfg(not(unix))]
    let ino = 0;
    Some((m.len(), m.modified().ok(), ino))
}

/// Follows watched traces by checking their stamp every [`TRACE_POLL`].
/// notify's debouncer reports a file that is being appended to only once
/// the writes stop, so a runtime that keeps its stream open and writes every
/// few milliseconds would show nothing until it ended; and inotify sees no
/// writes made on another host of a network filesystem. One `stat` per file
/// per poll costs nothing; a burst of changes becomes one refresh per poll
/// (and the worker keeps only the newest request).
fn spawn_trace_poller(paths: Vec<PathBuf>, tx: Sender<Msg>) {
    if paths.is_empty() {
        return;
    }
    std::thread::spawn(move || {
        let mut seen: Vec<_> = paths.iter().map(|p| file_stamp(p)).collect();
        // A probe stream's ring file, and whether its recorder was seen
        // gone: a recorder killed mid-run changes nothing on disk, so the
        // poller asks for a reload (which recovers its last events) once.
        let rings: Vec<PathBuf> = paths.iter().map(|p| spill_probe::ring_path(p)).collect();
        let mut orphaned = vec![false; paths.len()];
        loop {
            std::thread::sleep(TRACE_POLL);
            for (i, (p, last)) in paths.iter().zip(seen.iter_mut()).enumerate() {
                let now = file_stamp(p);
                let dead = rings[i].exists() && spill_probe::peek(&rings[i]).is_ok_and(|r| !r.live);
                let newly_dead = dead && !orphaned[i];
                orphaned[i] = dead;
                if now != *last || newly_dead {
                    *last = now;
                    if tx.send(Msg::FileChanged(p.clone())).is_err() {
                        return;
                    }
                }
            }
        }
    });
}

/// Runs the explorer until the user quits. `initial` is data already loaded
/// (so a file is never parsed twice); without it the worker loads first.
pub fn run(opts: ViewOptions, initial: Option<(Vec<Dataset>, Tails)>) -> Result<()> {
    let (initial, tails) = match initial {
        Some((data, tails)) => (Some(data), tails),
        None => (None, Tails::new()),
    };
    let theme = Theme::load(opts.theme.as_deref(), ColorMode::detect())?;
    let (tx, rx): (Sender<Msg>, Receiver<Msg>) = channel();
    let watched = opts.source.watched(opts.watch);
    let live = !watched.is_empty();
    // Traces a runtime is writing are polled; a model's inputs (configs,
    // profiles, saved by editors) go through the debounced watcher.
    let (notified, polled) = match opts.source {
        Source::Traces(..) => (Vec::new(), watched),
        _ => (watched, Vec::new()),
    };
    let watcher = spawn_watcher(&notified, tx.clone())?;
    spawn_trace_poller(polled, tx.clone());
    let suggester = spawn_suggester(tx.clone());
    let worker = spawn_worker(opts.source.clone(), tx.clone(), suggester.clone(), tails);
    let preloaded = initial.is_some();
    if !preloaded {
        request(&worker);
    }

    let mut terminal =
        ratatui::try_init().map_err(|e| Error::Config(format!("cannot open the terminal: {e}")))?;
    let _guard = TerminalGuard { mouse: opts.mouse };
    if opts.mouse {
        let _ = crossterm::execute!(std::io::stdout(), crossterm::event::EnableMouseCapture);
    }
    // Signals end the loop like `q`, so the guard restores the terminal.
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let sig_tx = tx.clone();
        if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP]) {
            std::thread::spawn(move || {
                if signals.forever().next().is_some() {
                    let _ = sig_tx.send(Msg::Terminate);
                }
            });
        }
    }
    let input_tx = tx.clone();
    std::thread::spawn(move || loop {
        match event::read() {
            Ok(Event::Key(k)) if k.kind != event::KeyEventKind::Release => {
                if input_tx.send(Msg::Key(k)).is_err() {
                    return;
                }
            }
            Ok(Event::Resize(w, h)) => {
                if input_tx.send(Msg::Resize(w, h)).is_err() {
                    return;
                }
            }
            Ok(Event::Mouse(m)) => {
                use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEventKind};
                let code = match m.kind {
                    MouseEventKind::ScrollUp => Some(KeyCode::Up),
                    MouseEventKind::ScrollDown => Some(KeyCode::Down),
                    _ => None,
                };
                if let Some(c) = code {
                    if input_tx
                        .send(Msg::Key(KeyEvent::new(c, KeyModifiers::NONE)))
                        .is_err()
                    {
                        return;
                    }
                }
            }
            Ok(_) => {}
            Err(_) => return,
        }
    });

    // Data opened quickly gets its heavy analyses on a background thread;
    // the first frame does not wait for them.
    if let Some(init) = &initial {
        for (slot, d) in init.iter().enumerate().filter(|(_, d)| !d.complete) {
            let (tx, label, trace) = (tx.clone(), d.label.clone(), d.trace.clone());
            let warnings = d.warnings.clone();
            let (level, levels) = (d.level, d.levels);
            let profile = Some((d.ledger.clone(), d.live_by_step.clone(), d.live_is_resident));
            std::thread::spawn(move || {
                let data = Dataset::complete_after(label, trace, profile)
                    .with_warnings(warnings)
                    .with_levels(level, levels);
                let _ = tx.send(Msg::Analysed {
                    slot,
                    data: Box::new(data),
                });
            });
        }
    }
    if let Some(d) = initial.as_ref().and_then(|i| i.first()) {
        spawn_suggestions(&suggester, d.trace.clone());
    }
    let mut app = App::new(initial.unwrap_or_default());
    app.ascii = opts.ascii;
    app.live = live;
    app.refreshing = !preloaded;
    if let Source::Model(spec) = &opts.source {
        app.resimulates = true;
        app.config = spec.schedule.clone();
        app.can_undo = spec
            .schedule
            .as_deref()
            .is_some_and(|c| spillscope::run::backup_path(c).exists());
    }
    // A runtime profile: once, the command that simulates its model with
    // the op times it measured.
    if let (Source::Traces(paths, _), Some(d)) = (&opts.source, app.primary()) {
        if let (Some(m), Some(p)) = (&d.measured, paths.first()) {
            let profiler = matches!(
                m.importer,
                Some(spillscope::trace::Importer::Ort | spillscope::trace::Importer::Torch)
            );
            if m.capabilities.op_times && profiler {
                app.info = Some(format!(
                    "simulate its model with these op times: {}",
                    spillscope::analysis::measured::calibrate_command(
                        p,
                        m.linked.as_ref().map(|l| l.model.as_str())
                    )
                ));
            }
        }
    }
    if matches!(opts.source, Source::Embedded(_)) {
        app.info = Some(
            "the bundled sample; your model: spillscope view MODEL.onnx --capacity 4MiB".into(),
        );
    }
    let size = terminal.size().map_err(|e| Error::Config(e.to_string()))?;
    app.width = size.width;
    app.height = size.height;
    let mut dirty = true;
    // For the end-to-end test that the terminal survives a panic.
    let panic_on_key = std::env::var_os("SPILLSCOPE_TEST_PANIC_ON_KEY").is_some();
    loop {
        if dirty {
            terminal
                .draw(|f| ui::draw(f, &app, &theme))
                .map_err(|e| Error::Config(format!("drawing failed: {e}")))?;
            dirty = false;
        }
        let msg = match rx.recv_timeout(Duration::from_secs(1)) {
            Ok(m) => m,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
            Err(_) => break,
        };
        if panic_on_key && matches!(msg, Msg::Key(_)) {
            panic!("test panic (SPILLSCOPE_TEST_PANIC_ON_KEY)");
        }
        let redraw = !matches!(msg, Msg::Tick);
        match update(&mut app, msg) {
            Some(Effect::Refresh) => request(&worker),
            // Another level of nested calls: the worker folds the traces it
            // already read again.
            Some(Effect::Relevel(level)) => {
                if let Source::Traces(_, o) = &opts.source {
                    o.level.store(level, Ordering::Relaxed);
                    request(&worker);
                }
            }
            // Config edits are small writes: done here, the watcher then
            // re-simulates as for any save.
            Some(Effect::Apply(change)) => {
                let r = match &app.config {
                    Some(c) => spillscope::run::apply_change(c, &change).map_err(|e| e.to_string()),
                    None => Err("no schedule config is watched".into()),
                };
                update(&mut app, Msg::ConfigApplied(r));
            }
            Some(Effect::Undo) => {
                let r = match &app.config {
                    Some(c) => spillscope::run::undo_change(c).map_err(|e| e.to_string()),
                    None => Err("no schedule config is watched".into()),
                };
                update(&mut app, Msg::ConfigRestored(r));
            }
            None => {}
        }
        dirty |= redraw;
        if app.quit {
            break;
        }
    }
    drop(watcher);
    Ok(())
}

//! The loop: terminal set-up and guaranteed restore, the input thread, the
//! file watcher, and redraws only when state changed. Everything computed
//! comes from the core's session (`spillscope::session`): its worker runs
//! the newest request (a file change or an applied suggestion cancels the
//! stale one) and its updates arrive as messages on the one channel.

use super::app::{update, App, Effect, Msg};
use super::theme::{ColorMode, Theme};
use super::ui;
use crossterm::event::{self, Event};
use spillscope::session::{file_stamp, Posted, Request, Session, Update, Wants};
pub use spillscope::session::{Source, Tails, TraceOpts};
use spillscope::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::Duration;

/// Traces with more ops than this are not re-simulated for suggestions
/// interactively (`spillscope suggest` has no such limit).
const SUGGEST_MAX_OPS: usize = 20_000;

/// How often a followed trace is checked for growth.
const TRACE_POLL: Duration = Duration::from_millis(250);

/// Explorer options from the command line.
#[derive(Debug, Clone)]
pub struct ViewOptions {
    pub source: Source,
    pub watch: bool,
    pub theme: Option<String>,
    pub ascii: bool,
    pub mouse: bool,
    /// The session's budgets and cache (`--ilp-time`, `--no-cache`).
    pub session: SessionChoice,
}

/// How the explorer's session runs.
#[derive(Debug, Clone)]
pub struct SessionChoice {
    pub budgets: spillscope::session::Budgets,
    pub cache: Option<spillscope::session::cache::Cache>,
}

impl Default for SessionChoice {
    fn default() -> Self {
        SessionChoice {
            budgets: Default::default(),
            cache: spillscope::session::cache::Cache::user(),
        }
    }
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
                // Only what changes a file: the session's own reads of the
                // model and config (open, close) must not trigger a re-run,
                // or every refresh would schedule the next one.
                let changes = events
                    .iter()
                    .filter(|e| !matches!(e.kind, notify::EventKind::Access(_)));
                let hit = changes.flat_map(|e| e.paths.iter()).find(|p| {
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

/// What the explorer asks its session for: datasets, the bound, and the
/// primary run's suggestions (for traces up to [`SUGGEST_MAX_OPS`] ops).
pub fn request_for(source: &Source, choice: &SessionChoice) -> Request {
    Request {
        source: source.clone(),
        wants: Wants {
            datasets: true,
            bound: true,
            suggestions: true,
            suggest_max_ops: Some(SUGGEST_MAX_OPS),
            ..Default::default()
        },
        budgets: choice.budgets,
        cache: choice.cache.clone(),
    }
}

/// The explorer's end of its session: the current generation, and the
/// updates of older ones dropped.
struct Client {
    session: Session,
    request: Request,
    generation: u64,
}

impl Client {
    fn refresh(&mut self) {
        self.generation = self.session.submit(self.request.clone());
    }

    /// The message for a session update, or `None` when it is stale.
    fn message(&self, p: Posted) -> Option<Msg> {
        if p.generation != self.generation {
            return None;
        }
        Some(match p.update {
            Update::Progress(p) => Msg::Progress(p),
            Update::Loaded { slot, data } => Msg::Loaded { slot, data },
            Update::Analysed { slot, data } => Msg::Analysed { slot, data },
            Update::Refining { trace } => Msg::Refining(trace),
            Update::Unrefined { trace, reason } => Msg::Unrefined { trace, reason },
            Update::Bounded { trace, optimum } => Msg::Bounded { trace, optimum },
            Update::Suggested { trace, result } => Msg::Suggested { trace, result },
            Update::Failed(e) => Msg::Failed(e.to_string()),
            Update::Done => Msg::Done,
        })
    }
}

/// Runs the explorer until the user quits. The session's first job runs
/// before the terminal is taken over: an input that does not load or
/// simulate is one clear line, not a flash of the UI.
pub fn run(opts: ViewOptions) -> Result<()> {
    let theme = Theme::load(opts.theme.as_deref(), ColorMode::detect())?;
    let (tx, rx): (Sender<Msg>, Receiver<Msg>) = channel();
    let session_tx = tx.clone();
    let session = Session::spawn(move |p| {
        let _ = session_tx.send(Msg::Posted(p));
    });
    let mut client = Client {
        session,
        request: request_for(&opts.source, &opts.session),
        generation: 0,
    };
    client.refresh();
    // `c` on a fitting model overrides the capacity flag; this restores it.
    let started_capacity = match &opts.source {
        Source::Model(spec) => spec.flags.capacity,
        _ => None,
    };
    // Wait for the first frame's data (or the error that stops it).
    let mut early: Vec<Msg> = Vec::new();
    loop {
        let Ok(Msg::Posted(p)) = rx.recv() else {
            return Err(Error::Config("the session stopped".into()));
        };
        if p.generation != client.generation {
            continue;
        }
        match p.update {
            Update::Failed(e) => return Err(e),
            Update::Loaded { slot: 0, data } => {
                early.push(Msg::Loaded { slot: 0, data });
                break;
            }
            Update::Done => break,
            update => early.extend(client.message(Posted {
                generation: p.generation,
                update,
            })),
        }
    }
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

    let mut terminal =
        ratatui::try_init().map_err(|e| Error::Config(format!("cannot open the terminal: {e}")))?;
    let _guard = TerminalGuard { mouse: opts.mouse };
    if opts.mouse {
        let _ = crossterm::execute!(std::io::stdout(), crossterm::event::EnableMouseCapture);
    }
    spawn_signals(tx.clone());
    spawn_input(tx.clone());

    let mut app = App::new(Vec::new());
    // The first job is running (its `Done` may be among the early messages).
    app.in_flight = true;
    app.ascii = opts.ascii;
    app.live = live;
    // The watched config is known before its first run arrives (that run
    // is its first load).
    if let Source::Model(spec) = &opts.source {
        app.config = spec.schedule.clone();
    }
    for m in early {
        update(&mut app, m);
    }
    app.window = app.full_window();
    configure(&mut app, &opts.source);
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
            Ok(Msg::Posted(p)) => match client.message(p) {
                Some(m) => m,
                None => continue,
            },
            Ok(m) => m,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
            Err(_) => break,
        };
        if panic_on_key && matches!(msg, Msg::Key(_)) {
            panic!("test panic (SPILLSCOPE_TEST_PANIC_ON_KEY)");
        }
        let redraw = !matches!(msg, Msg::Tick);
        match update(&mut app, msg) {
            Some(Effect::Refresh) => client.refresh(),
            // Another level of nested calls: the session folds the traces
            // it already read again.
            // Another capacity for a model that fits: the same spec with
            // the flag over it, re-simulated (and kept for later saves).
            Some(Effect::Recapacity(cap)) => {
                if let Source::Model(spec) = &mut client.request.source {
                    spec.flags.capacity = cap.or(started_capacity);
                    client.refresh();
                }
            }
            Some(Effect::Relevel(level)) => {
                if let Source::Traces(_, o) = &opts.source {
                    o.level.store(level, Ordering::Relaxed);
                    client.refresh();
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
    client.session.cancel();
    drop(watcher);
    Ok(())
}

/// The explorer's settings for its source: live tuning of a model, the
/// guidance line for a profile or the bundled sample.
fn configure(app: &mut App, source: &Source) {
    if let Source::Model(spec) = source {
        app.resimulates = true;
        app.config = spec.schedule.clone();
        app.can_undo = spec
            .schedule
            .as_deref()
            .is_some_and(|c| spillscope::run::backup_path(c).exists());
    }
    // A runtime profile: once, the command that simulates its model with
    // the op times it measured.
    if let (Source::Traces(paths, _), Some(d)) = (source, app.primary()) {
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
    if matches!(source, Source::Embedded(_)) {
        app.info = Some(
            "the bundled sample; your model: spillscope view MODEL.onnx --capacity 4MiB".into(),
        );
    }
}

/// Signals end the loop like `q`, so the guard restores the terminal.
fn spawn_signals(tx: Sender<Msg>) {
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP]) {
            std::thread::spawn(move || {
                if signals.forever().next().is_some() {
                    let _ = tx.send(Msg::Terminate);
                }
            });
        }
    }
    #[cfg(not(unix))]
    drop(tx);
}

/// Keys, resizes and (with `--mouse`) the wheel, as messages.
fn spawn_input(tx: Sender<Msg>) {
    std::thread::spawn(move || loop {
        let msg = match event::read() {
            Ok(Event::Key(k)) if k.kind != event::KeyEventKind::Release => Msg::Key(k),
            Ok(Event::Resize(w, h)) => Msg::Resize(w, h),
            Ok(Event::Mouse(m)) => {
                use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEventKind};
                let code = match m.kind {
                    MouseEventKind::ScrollUp => KeyCode::Up,
                    MouseEventKind::ScrollDown => KeyCode::Down,
                    _ => continue,
                };
                Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
            }
            Ok(_) => continue,
            Err(_) => return,
        };
        if tx.send(msg).is_err() {
            return;
        }
    });
}

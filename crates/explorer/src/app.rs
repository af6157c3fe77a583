//! Explorer state and its pure update: `update(&mut App, Msg)` changes the
//! state and returns an optional effect for the runtime to carry out (a
//! re-simulation, a reload). No terminal in here, so it is tested directly.

use super::data::{compare, Dataset};
use super::keys::{action_for, Action, Scope};
pub use super::views::compare::CompareView;
pub use super::views::hotspots::HotspotsView;
pub use super::views::memory::MemoryView;
pub use super::views::suggest::{SuggestState, SuggestView};
pub use super::views::tensor::TensorView;
pub use super::views::timeline::TimelineView;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use fuzzy_matcher::skim::SkimMatcherV2;
use fuzzy_matcher::FuzzyMatcher;
use spillscope::analysis::diff::TraceDiff;
use spillscope::analysis::suggest::Suggestions;
use std::path::PathBuf;
use std::sync::Arc;

/// The seven views, in Tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Overview,
    Timeline,
    Hotspots,
    Tensor,
    Memory,
    Compare,
    Suggest,
}

impl View {
    pub const ALL: [View; 7] = [
        View::Overview,
        View::Timeline,
        View::Hotspots,
        View::Tensor,
        View::Memory,
        View::Compare,
        View::Suggest,
    ];
    pub fn title(self) -> &'static str {
        match self {
            View::Overview => "Overview",
            View::Timeline => "Timeline",
            View::Hotspots => "Hotspots",
            View::Tensor => "Tensor",
            View::Memory => "Memory",
            View::Compare => "Compare",
            View::Suggest => "Suggest",
        }
    }
    pub fn index(self) -> usize {
        View::ALL.iter().position(|&v| v == self).unwrap_or(0)
    }
    /// Which key scopes apply in this view (before the live ones).
    pub fn scopes(self) -> &'static [Scope] {
        match self {
            View::Overview => &[],
            View::Timeline | View::Tensor => &[Scope::TimeAxis, Scope::List],
            View::Memory => &[Scope::Memory, Scope::TimeAxis],
            View::Hotspots => &[Scope::List, Scope::Hotspots],
            View::Compare => &[Scope::TimeAxis, Scope::List, Scope::Compare],
            View::Suggest => &[Scope::List],
        }
    }

    /// Views that show one trace (the others show both, or A's suggestions).
    pub fn shows_one_side(self) -> bool {
        !matches!(self, View::Compare | View::Suggest)
    }
}

/// What a search hit points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Op(usize),
    Tensor(usize),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub target: Target,
    pub name: String,
    pub score: i64,
    /// Matched character indices (for highlighting).
    pub indices: Vec<usize>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Search {
    pub query: String,
    pub hits: Vec<Hit>,
    pub selected: usize,
}

/// Inputs to the loop: keys, file changes, finished background work, ticks.
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    Resize(u16, u16),
    /// A background load or simulation finished for slot 0 or 1.
    Loaded {
        slot: usize,
        data: Box<Dataset>,
    },
    /// The complete analyses of data already shown (quick-opened).
    Analysed {
        slot: usize,
        data: Box<Dataset>,
    },
    /// The exact program's result for the primary trace's run (the bound
    /// `sim` and `report` print for the same run), found in the background.
    Bounded {
        trace: Arc<spillscope::trace::Trace>,
        optimum: Box<spillscope::analysis::optimum::Optimum>,
    },
    /// Re-simulated suggestions for the primary trace (identified by its Arc).
    Suggested {
        trace: Arc<spillscope::trace::Trace>,
        result: Result<Box<Suggestions>, String>,
    },
    /// A background load or simulation failed: keep the last good view.
    Failed(String),
    /// Something the session posted (the loop turns it into one of the
    /// messages here, or drops it when a newer request replaced its own).
    Posted(spillscope::session::Posted),
    /// How far the session's job is.
    Progress(spillscope::session::Progress),
    /// A better bound than the trace's own is being computed for it.
    Refining(Arc<spillscope::trace::Trace>),
    /// The trace's bound stays its own: refining it would not fit the
    /// memory budget (`reason` says so in one line).
    Unrefined {
        trace: Arc<spillscope::trace::Trace>,
        reason: String,
    },
    /// The session's job finished.
    Done,
    /// A watched file changed.
    FileChanged(PathBuf),
    Tick,
    /// SIGTERM, SIGINT or SIGHUP (an SSH drop): leave cleanly.
    Terminate,
    /// The runtime wrote a suggestion into the watched config (or says why
    /// not).
    ConfigApplied(Result<String, String>),
    /// The runtime restored the watched config from its backup.
    ConfigRestored(Result<String, String>),
}

/// Work for the runtime to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Re-run the simulation (live mode) or reload the watched trace.
    Refresh,
    /// Write a suggested change into the watched schedule config (the
    /// previous file kept as `NAME.bak`).
    Apply(spillscope::analysis::suggest::Change),
    /// Restore the watched config from `NAME.bak`.
    Undo,
    /// Show nested ops folded to this level (1 = top level).
    Relevel(u32),
    /// Re-simulate at this on-chip capacity (`None`: the one the explorer
    /// started with).
    Recapacity(Option<u64>),
}

/// A model that fits, re-run at a share of its peak live bytes (`c` on the
/// Overview): the capacity it started with, and the step tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapacityTry {
    pub started: u64,
    pub peak: u64,
    /// Index into [`TRY_PERCENT`].
    pub step: usize,
}

/// The shares of peak live bytes `c` re-runs a fitting model at.
pub const TRY_PERCENT: [u64; 2] = [75, 50];

/// `pct` % of `peak`, rounded down to whole KiB (as `--capacity` echoes it).
pub fn share_of_peak(peak: u64, pct: u64) -> u64 {
    ((peak as u128 * pct as u128 / 100) as u64) / 1024 * 1024
}

/// The dataset on `side` (A = 0, B = 1), or A when there is no such side.
fn shown(data: &[Dataset], side: usize) -> Option<&Dataset> {
    data.get(side).or_else(|| data.first())
}

/// The whole explorer state.
pub struct App {
    pub data: Vec<Dataset>,
    pub diff: Option<TraceDiff>,
    /// The changed tensors of `diff` (indices into `diff.tensors`): the
    /// rows of Compare's tensor table, derived once with the diff.
    pub changed: Vec<usize>,
    /// Vela's plan against the spillscope run beside it (Compare), when
    /// one side is an imported Vela plan.
    pub vela: Option<spillscope::analysis::vela::VelaComparison>,
    /// ExecuTorch's plan against the spillscope run beside it (Compare),
    /// when one side is an imported `.pte`.
    pub plan: Option<spillscope::analysis::executorch::PlanComparison>,
    pub view: View,
    /// Which trace views 1-5 show when two are open: 0 = A, 1 = B.
    pub side: usize,
    /// Visible time window `[t0, t1)` (shared by the time-axis views).
    pub window: (u64, u64),
    pub cursor: u64,
    pub focus_op: Option<usize>,
    /// Each list view's own state.
    pub hot: HotspotsView,
    pub tensors: TensorView,
    pub compare: CompareView,
    pub suggest: SuggestView,
    /// The exact program's result for a trace (kept with the trace it is
    /// for: a newer run makes it stale).
    pub optimum: Option<(
        Arc<spillscope::trace::Trace>,
        Box<spillscope::analysis::optimum::Optimum>,
    )>,
    /// The trace whose bound the session is refining (shown as such, with
    /// no gap against it, until [`Msg::Bounded`] arrives for it).
    pub refining: Option<Arc<spillscope::trace::Trace>>,
    /// The trace whose bound was left unrefined for want of memory (shown
    /// as `not refined`, with no gap against it).
    pub unrefined: Option<Arc<spillscope::trace::Trace>>,
    /// The session's job in progress (none when it is done).
    pub progress: Option<spillscope::session::Progress>,
    pub timeline: TimelineView,
    pub memory: MemoryView,
    /// Live: the run before the newest one (the delta line, and Compare's
    /// "previous run vs now").
    pub previous: Option<Box<Dataset>>,
    /// Live, with `--config`: the watched schedule config suggestions are
    /// applied to.
    pub config: Option<PathBuf>,
    /// Runs that arrived while a config is watched (the first load
    /// included), and when the last one was built: the Overview's title
    /// says both, so a save visibly took.
    pub config_loads: u32,
    pub config_loaded_at: Option<std::time::SystemTime>,
    /// `c` on a model that fits: the capacity being tried.
    pub capacity_try: Option<CapacityTry>,
    /// Whether `u` has a backup to restore.
    pub can_undo: bool,
    /// A line of guidance under the tabs (not an error).
    pub info: Option<String>,
    /// The source is a model the explorer re-simulates (live tuning).
    pub resimulates: bool,
    pub search: Option<Search>,
    pub help: bool,
    /// How far the help overlay is scrolled (its rows can outnumber the
    /// screen's at 80x24).
    pub help_scroll: u16,
    pub paused: bool,
    /// Data that arrived while paused.
    pub pending: Option<Box<Dataset>>,
    pub live: bool,
    pub refreshing: bool,
    /// A session job is running (until its `Done` or `Failed`).
    pub in_flight: bool,
    /// A followed trace changed while a job was running: one more refresh
    /// is due when it finishes.
    pub behind: bool,
    /// One line above the view: a load error (the last good data stays)
    /// or what the reader skipped.
    pub banner: Option<String>,
    /// Reader warnings the user dismissed with Esc: the banner comes back
    /// only when there are more than this many.
    pub warnings_hidden: usize,
    pub quit: bool,
    pub ascii: bool,
    /// Last known body width in columns, for pan steps (set by the view).
    pub width: u16,
    pub height: u16,
    pub status: String,
}

impl App {
    /// A session job ended: the refresh a followed trace's changes were
    /// waiting for, if any.
    fn finished_job(&mut self) -> Option<Effect> {
        self.in_flight = false;
        if !std::mem::take(&mut self.behind) {
            return None;
        }
        self.refreshing = true;
        self.in_flight = true;
        Some(Effect::Refresh)
    }

    /// The lower bound on `d`'s traffic and its method: the trace's own,
    /// raised to the exact program's where it was found for this trace.
    pub fn bound_of(&self, d: &Dataset) -> (u64, spillscope::trace::BoundMethod) {
        let s = &d.trace.summary;
        match &self.optimum {
            Some((t, o))
                if Arc::ptr_eq(t, &d.trace)
                    && s.lower_bound_method != spillscope::trace::BoundMethod::None =>
            {
                o.tightest(s.lower_bound_traffic_bytes, s.lower_bound_method)
            }
            _ => (s.lower_bound_traffic_bytes, s.lower_bound_method),
        }
    }

    /// `d`'s bound as the Overview shows it: [`App::bound_of`], marked as
    /// refining while the session computes a better one for it.
    pub fn bound_figure(&self, d: &Dataset) -> spillscope::analysis::figures::TrafficBound {
        use spillscope::analysis::figures::{BoundState, TrafficBound};
        let (bytes, method) = self.bound_of(d);
        let is = |t: &Option<Arc<spillscope::trace::Trace>>| {
            t.as_ref().is_some_and(|t| Arc::ptr_eq(t, &d.trace))
        };
        TrafficBound {
            bytes,
            method,
            state: if is(&self.refining) {
                BoundState::Refining
            } else if is(&self.unrefined) {
                BoundState::Unrefined
            } else {
                BoundState::Final
            },
        }
    }

    pub fn new(data: Vec<Dataset>) -> App {
        let mut app = App {
            data: Vec::new(),
            diff: None,
            changed: Vec::new(),
            vela: None,
            plan: None,
            view: View::Overview,
            side: 0,
            window: (0, 1),
            cursor: 0,
            focus_op: None,
            hot: HotspotsView::default(),
            tensors: TensorView::default(),
            compare: CompareView::default(),
            suggest: SuggestView::default(),
            optimum: None,
            refining: None,
            unrefined: None,
            progress: None,
            timeline: TimelineView::default(),
            memory: MemoryView::default(),
            previous: None,
            config: None,
            config_loads: 0,
            config_loaded_at: None,
            can_undo: false,
            capacity_try: None,
            info: None,
            resimulates: false,
            search: None,
            help: false,
            help_scroll: 0,
            paused: false,
            pending: None,
            live: false,
            refreshing: false,
            in_flight: false,
            behind: false,
            banner: None,
            warnings_hidden: 0,
            quit: false,
            ascii: false,
            width: 80,
            height: 24,
            status: String::new(),
        };
        app.banner = warning_banner(&data, 0);
        for (i, d) in data.into_iter().enumerate() {
            app.install(i, d);
        }
        app.window = app.full_window();
        app
    }

    /// The key scopes that apply now: the view's, live refresh when
    /// following files, applying suggestions when a config is watched.
    pub fn scopes(&self) -> Vec<Scope> {
        let mut v = self.view.scopes().to_vec();
        if self.view == View::Suggest && self.suggest.selected().is_none() {
            // Nothing listed (yet, or at all): j/k and Enter have nothing to
            // act on, so neither the footer nor the keys offer them.
            v.retain(|s| *s != Scope::List);
        }
        if self.live {
            v.push(Scope::Live);
        }
        if self.view == View::Suggest && self.config.is_some() {
            v.push(Scope::Suggest);
        }
        if self.primary().is_some_and(|d| d.levels > 1) {
            v.push(Scope::Nested);
        }
        if self.view == View::Memory && self.primary().is_some_and(|d| d.trace.pools.len() > 1) {
            v.push(Scope::Pools);
        }
        if self.view == View::Overview && (self.capacity_try.is_some() || self.fits()) {
            v.push(Scope::Fits);
        }
        if self.view == View::Compare && !self.changed.is_empty() {
            v.push(Scope::CompareTensors);
        }
        if self.data.len() > 1 && self.view.shows_one_side() {
            v.push(Scope::Sides);
        }
        if self.view == View::Hotspots
            && self
                .primary()
                .is_some_and(|d| !d.hotspots_by_name.is_empty())
        {
            v.push(Scope::Names);
        }
        v
    }

    /// Where time views begin: 0, or where a stream window starts (the
    /// earliest of the traces shown).
    pub fn start_ns(&self) -> u64 {
        self.data.iter().map(|d| d.start_ns()).min().unwrap_or(0)
    }

    /// The whole of what the traces hold: what `0` fits to.
    pub fn full_window(&self) -> (u64, u64) {
        let end = self.end_ns();
        (self.start_ns().min(end.saturating_sub(1)), end)
    }

    pub fn end_ns(&self) -> u64 {
        self.data
            .iter()
            .map(|d| d.end_ns())
            .max()
            .unwrap_or(1)
            .max(1)
    }

    /// The trace views 1-5 show: A, or B after `b` when two are open.
    pub fn primary(&self) -> Option<&Dataset> {
        shown(&self.data, self.side)
    }

    /// A re-simulated model without evictions whose peak live fits: `c`
    /// re-runs it where it would spill.
    pub fn fits(&self) -> bool {
        self.resimulates
            && self.data.len() == 1
            && self.primary().is_some_and(|d| {
                let s = &d.trace.summary;
                s.spill_count == 0 && s.peak_live_bytes > 0 && s.peak_live_bytes <= d.capacity
            })
    }

    /// `c`: the next capacity to try (75 %, then 50 % of peak live), then
    /// back to the one the explorer started with.
    fn try_capacity(&mut self) -> Option<Effect> {
        use spillscope::units::fmt_bytes_precise as b;
        let next = match self.capacity_try {
            None => {
                let d = self.primary()?;
                let peak = d.trace.summary.peak_live_bytes;
                Some(CapacityTry {
                    started: d.capacity,
                    peak,
                    step: 0,
                })
            }
            Some(t) if t.step + 1 < TRY_PERCENT.len() => Some(CapacityTry {
                step: t.step + 1,
                ..t
            }),
            Some(_) => None,
        };
        let was = self.capacity_try;
        self.capacity_try = next;
        self.refreshing = true;
        match next {
            Some(t) => {
                let pct = TRY_PERCENT[t.step];
                let cap = share_of_peak(t.peak, pct);
                // Short enough for the footer at 80 columns.
                self.status = format!(
                    "--capacity {}, {pct} % of peak; c: {}",
                    spillscope::units::fmt_size_exact(cap),
                    match TRY_PERCENT.get(t.step + 1) {
                        Some(p) => format!("{p} %"),
                        None => format!("back to {}", b(t.started)),
                    }
                );
                Some(Effect::Recapacity(Some(cap)))
            }
            None => {
                self.status = format!(
                    "back to {}, as started",
                    was.map(|t| b(t.started)).unwrap_or_default()
                );
                Some(Effect::Recapacity(None))
            }
        }
    }

    /// "A" or "B" when two traces are open (the side views 1-5 show).
    pub fn side_name(&self) -> Option<&'static str> {
        (self.data.len() > 1).then_some(if self.side == 1 { "B" } else { "A" })
    }

    /// Views 1-5 switch to the other trace; the lists and the window start
    /// over on it (ids differ between the two traces).
    fn switch_side(&mut self) {
        if self.data.len() < 2 {
            return;
        }
        self.side = 1 - self.side.min(1);
        self.focus_op = None;
        self.hot.sel = 0;
        self.tensors.sel = 0;
        self.tensors.tensor = self.primary().and_then(|d| d.trips.tensor(0));
        self.resort_hotspots();
        self.window = self.full_window();
        self.cursor = self.window.0;
        self.status = match (self.side_name(), self.primary()) {
            (Some(s), Some(d)) => format!(
                "views 1-5 show {s}: {} [{}]",
                spillscope::safe_text::escape(&d.trace.meta.model),
                d.trace.meta.policy
            ),
            _ => String::new(),
        };
    }

    /// How times print: the primary trace's clock (cycles for an NPU case).
    pub fn clock(&self) -> spillscope::units::Clock {
        self.primary().map(|d| d.clock).unwrap_or_default()
    }

    /// Puts a dataset in a slot, keeping the user's place where it still makes sense.
    fn install(&mut self, slot: usize, d: Dataset) {
        let new_primary = slot == 0
            && self
                .data
                .first()
                .map(|old| !Arc::ptr_eq(&old.trace, &d.trace))
                .unwrap_or(true);
        if new_primary {
            self.suggest.state = SuggestState::Pending;
        }
        // The same run again (a save that changed nothing the simulator
        // reads, or one save seen twice) is not a new "before".
        let repeat = self.data.get(slot).is_some_and(|old| {
            old.trace.meta == d.trace.meta && old.trace.summary == d.trace.summary
        });
        let old = if slot < self.data.len() {
            Some(std::mem::replace(&mut self.data[slot], d))
        } else {
            self.data.push(d);
            None
        };
        // A re-simulation: the run before it stays, for the delta line and
        // Compare's "previous run vs now".
        if self.resimulates && new_primary && !repeat {
            if let Some(old) = old {
                self.previous = Some(Box::new(old));
            }
        }
        self.diff = match (self.data.as_slice(), &self.previous) {
            ([a, b, ..], _) => Some(compare(a, b)),
            ([now], Some(before)) => Some(compare(before, now)),
            _ => None,
        };
        self.changed = self
            .diff
            .as_ref()
            .map(crate::views::compare::changed_tensors)
            .unwrap_or_default();
        self.vela = match self.data.as_slice() {
            [a, b, ..] => spillscope::analysis::vela::compare(&a.trace, &b.trace)
                .or_else(|| spillscope::analysis::vela::compare(&b.trace, &a.trace)),
            _ => None,
        };
        self.plan = match self.data.as_slice() {
            [a, b, ..] => spillscope::analysis::executorch::compare(&a.trace, &b.trace)
                .or_else(|| spillscope::analysis::executorch::compare(&b.trace, &a.trace)),
            _ => None,
        };
        self.resort_hotspots();
        // A window past the data's end, or before a moving stream's start
        // (what it showed fell out), shows everything held again.
        let (start, end) = self.full_window();
        if self.window.1 > end || self.window.0 >= end || self.window.0 < start {
            self.window = (start, end);
        }
        self.cursor = self.cursor.clamp(start, end);
        if self.tensors.tensor.is_none() {
            self.tensors.tensor = self.primary().and_then(|d| d.trips.tensor(0));
        }
        if let Some(t) = self.tensors.tensor {
            if self
                .primary()
                .map(|d| t >= d.trace.tensors.len())
                .unwrap_or(true)
            {
                self.tensors.tensor = None;
            }
        }
    }

    fn resort_hotspots(&mut self) {
        let Some(d) = shown(&self.data, self.side) else {
            return;
        };
        // A trace without spill events ranks by time and memory.
        // Grouping needs a name called more than once.
        self.hot.grouped &= !d.hotspots_by_name.is_empty();
        let keys = crate::views::hotspots::keys_for(
            d.caps.spill_events,
            self.hot.grouped,
            d.trace.summary.cores,
        );
        if !keys.contains(&self.hot.key) {
            self.hot.key = keys[0];
            self.hot.ascending = false;
        }
        self.hot.resort(self.hot.rows(d));
    }

    /// Tensors listed in the Tensor view: those with round trips, busiest first.
    pub fn tensor_list(&self) -> Vec<usize> {
        self.primary()
            .map(|d| d.trips.tensors().collect())
            .unwrap_or_default()
    }

    fn span(&self) -> u64 {
        self.window.1.saturating_sub(self.window.0).max(1)
    }

    fn set_window(&mut self, t0: i128, span: u64) {
        let (start, end) = self.full_window();
        let (start, end) = (start as i128, end as i128);
        let span = (span.max(8) as i128).min((end - start).max(8));
        let t0 = t0.clamp(start, (end - span).max(start));
        self.window = (t0 as u64, (t0 + span) as u64);
    }

    /// Centres the window on `t`, keeping its span.
    pub fn center_on(&mut self, t: u64) {
        let span = self.span();
        self.set_window(t as i128 - span as i128 / 2, span);
        self.cursor = t;
    }

    fn zoom(&mut self, factor: f64) {
        let span = self.span();
        let new_span = ((span as f64 * factor).round() as u64).max(8);
        let anchor = if self.cursor >= self.window.0 && self.cursor < self.window.1 {
            self.cursor
        } else {
            self.window.0 + span / 2
        };
        let rel = (anchor - self.window.0) as f64 / span as f64;
        let t0 = anchor as f64 - rel * new_span as f64;
        self.set_window(t0 as i128, new_span);
    }

    fn pan(&mut self, dir: i128) {
        let span = self.span();
        let step = (span / 4).max(1) as i128;
        self.set_window(self.window.0 as i128 + dir * step, span);
        self.cursor = self.window.0 + span / 2;
    }

    fn jump_spill(&mut self, next: bool) {
        let Some(d) = self.primary() else { return };
        let found = if next {
            d.index.next_spill(self.cursor)
        } else {
            d.index.prev_spill(self.cursor)
        };
        match found {
            Some((t, ev)) => {
                let e = &d.trace.events.at(ev);
                let name = d
                    .trace
                    .tensors
                    .get(e.tensor)
                    .map(|t| t.name)
                    .unwrap_or_default();
                self.status = format!("{} of {} ({} B)", e.kind.as_str(), name, e.bytes);
                if t < self.window.0 || t >= self.window.1 {
                    self.center_on(t);
                }
                self.cursor = t;
            }
            None => {
                self.status = if next {
                    "no later spill event".into()
                } else {
                    "no earlier spill event".into()
                }
            }
        }
    }

    /// Shows op `o` in the timeline.
    pub fn goto_op(&mut self, o: usize) {
        let Some(op) = self
            .primary()
            .and_then(|d| d.trace.ops.get(o).map(|op| op.owned()))
        else {
            return;
        };
        let dur = op.end_ns.saturating_sub(op.start_ns).max(1);
        let span = (dur * 16).max(self.span().min(dur * 64)).min(self.end_ns());
        self.set_window(op.start_ns as i128 - span as i128 / 4, span);
        self.cursor = op.start_ns;
        self.focus_op = Some(o);
        self.view = View::Timeline;
        self.status = format!("op {} ({})", op.name, op.op_type);
    }

    /// Shows tensor `t` in the Tensor view.
    pub fn goto_tensor(&mut self, t: usize) {
        self.tensors.tensor = Some(t);
        if let Some(pos) = self.tensor_list().iter().position(|&x| x == t) {
            self.tensors.sel = pos;
        }
        self.view = View::Tensor;
    }

    /// The `i`-th row of Compare's changed-tensor table.
    pub fn changed_tensor(&self, i: usize) -> Option<&spillscope::analysis::diff::TensorDelta> {
        let &t = self.changed.get(i)?;
        self.diff.as_ref()?.tensors.get(t)
    }

    fn list_len(&self) -> usize {
        match self.view {
            View::Hotspots => self.hot.order.len(),
            View::Tensor => self.tensor_list().len(),
            View::Compare if self.compare.on_tensors => self.changed.len(),
            View::Compare => self.diff.as_ref().map(|d| d.ops.len()).unwrap_or(0),
            View::Suggest => self.suggest.len(),
            View::Timeline => self.primary().map(|d| d.index.spill_count()).unwrap_or(0),
            _ => 0,
        }
    }

    fn move_sel(&mut self, delta: i64) {
        let len = self.list_len();
        if len == 0 {
            return;
        }
        if self.view == View::Timeline {
            return self.move_event(delta, len);
        }
        let sel = match self.view {
            View::Hotspots => &mut self.hot.sel,
            View::Tensor => &mut self.tensors.sel,
            View::Compare if self.compare.on_tensors => &mut self.compare.tensor_sel,
            View::Compare => &mut self.compare.sel,
            View::Suggest => &mut self.suggest.sel,
            _ => return,
        };
        *sel = (*sel as i64 + delta).clamp(0, len as i64 - 1) as usize;
        if self.view == View::Tensor {
            self.tensors.tensor = self.tensor_list().get(self.tensors.sel).copied();
            self.tensors.trip = None;
        }
        // Names in lists are shortened: the selected row's whole name.
        if let Some(name) = self.selected_name() {
            self.status = name;
        }
    }

    /// The whole name of the selected row of the current list view.
    pub fn selected_name(&self) -> Option<String> {
        let d = self.primary()?;
        match self.view {
            View::Hotspots => self.hot.selected(d).map(|h| h.name.to_string()),
            View::Tensor => (self
                .tensors
                .tensor
                .and_then(|t| d.trace.tensors.get(t))
                .map(|t| t.name))
            .map(Into::into),
            View::Compare if self.compare.on_tensors => self
                .changed_tensor(self.compare.tensor_sel)
                .map(|t| t.name.clone()),
            View::Compare => self
                .diff
                .as_ref()
                .and_then(|x| x.ops.get(self.compare.sel))
                .map(|o| o.name.clone()),
            View::Timeline => {
                let (_, ev) = d.index.spill_at(self.timeline.sel?)?;
                let e = &d.trace.events.at(ev);
                let t = d.trace.tensors.get(e.tensor)?;
                Some(format!("{} of {}", e.kind.as_str(), t.name))
            }
            _ => None,
        }
    }

    /// Timeline: selects the spill event `delta` away (from the one at the
    /// cursor when none is selected) and puts the cursor on it.
    fn move_event(&mut self, delta: i64, len: usize) {
        let Some(d) = self.primary() else { return };
        let from = match self.timeline.sel {
            Some(i) => i as i64 + delta,
            None => d.index.spill_position(self.cursor) as i64 + delta.min(0),
        };
        let i = from.clamp(0, len as i64 - 1) as usize;
        let Some((t, _)) = d.index.spill_at(i) else {
            return;
        };
        self.timeline.sel = Some(i);
        if t < self.window.0 || t >= self.window.1 {
            self.center_on(t);
        }
        self.cursor = t;
        if let Some(name) = self.selected_name() {
            self.status = name;
        }
    }

    /// Timeline Enter: the selected event's tensor, in the Tensor view, at
    /// the round trip the event belongs to.
    fn open_event(&mut self) {
        let Some(d) = self.primary() else { return };
        let Some((t_ns, ev)) = self.timeline.sel.and_then(|i| d.index.spill_at(i)) else {
            self.status = "select a spill event first (j/k)".into();
            return;
        };
        let tensor = d.trace.events.tensor(ev);
        let trips = d.trips_of(tensor);
        let trip = trips.as_ref().and_then(|x| {
            x.trips
                .iter()
                .position(|r| r.out_t_ns <= t_ns && r.back_t_ns.is_none_or(|b| t_ns <= b))
        });
        let span = trip
            .and_then(|i| trips.as_ref().map(|x| &x.trips[i]))
            .map(|r| (r.out_t_ns, r.back_t_ns.unwrap_or(r.out_t_ns)));
        self.goto_tensor(tensor);
        self.tensors.trip = trip;
        if let Some((a, b)) = span {
            self.show_span(a, b);
        }
    }

    /// Tensor Enter: the Timeline at the selected tensor's first round trip,
    /// its event selected.
    fn open_first_trip(&mut self) {
        let Some(d) = self.primary() else { return };
        let Some(first) = self
            .tensors
            .tensor
            .and_then(|t| d.trips_of(t))
            .and_then(|x| x.trips.into_iter().next())
        else {
            self.status = "this tensor never goes out to DRAM".into();
            return;
        };
        // The events at the trip's time, from the first of them.
        let at = d.index.spill_position(first.out_t_ns);
        let pos = d
            .index
            .spills_in(at, d.index.spill_count())
            .take_while(|&(t, _)| t == first.out_t_ns)
            .position(|(_, ev)| d.trace.events.tensor(ev) == first.tensor)
            .map(|k| at + k);
        self.view = View::Timeline;
        self.timeline.sel = pos;
        self.show_span(first.out_t_ns, first.back_t_ns.unwrap_or(first.out_t_ns));
        self.cursor = first.out_t_ns;
    }

    /// A window showing `[a, b]` with a margin, cursor at `a`.
    fn show_span(&mut self, a: u64, b: u64) {
        let len = b.saturating_sub(a).max(1);
        let span = (len * 3 / 2).max(self.end_ns() / 200).max(8);
        self.set_window(a as i128 - (span - len) as i128 / 2, span);
        self.cursor = a;
    }

    fn run_search(&mut self) {
        let Some(s) = self.search.as_mut() else {
            return;
        };
        let Some(d) = shown(&self.data, self.side) else {
            return;
        };
        let m = SkimMatcherV2::default();
        let mut hits: Vec<Hit> = Vec::new();
        if !s.query.is_empty() {
            let mut push = |target, name: &str| {
                if let Some((score, indices)) = m.fuzzy_indices(name, &s.query) {
                    hits.push(Hit {
                        target,
                        name: name.to_string(),
                        score,
                        indices,
                    });
                }
            };
            for o in &d.trace.ops {
                push(Target::Op(o.id), o.name);
            }
            for t in &d.trace.tensors {
                push(Target::Tensor(t.id), t.name);
            }
            hits.sort_by(|a, b| {
                b.score
                    .cmp(&a.score)
                    .then(a.name.len().cmp(&b.name.len()))
                    .then(a.name.cmp(&b.name))
            });
            hits.truncate(200);
        }
        s.hits = hits;
        s.selected = 0;
    }

    fn search_key(&mut self, k: &KeyEvent) {
        let Some(s) = self.search.as_mut() else {
            return;
        };
        match k.code {
            KeyCode::Esc => self.search = None,
            KeyCode::Enter => {
                let hit = s.hits.get(s.selected).map(|h| h.target);
                self.search = None;
                match hit {
                    Some(Target::Op(o)) => self.goto_op(o),
                    Some(Target::Tensor(t)) => self.goto_tensor(t),
                    None => {}
                }
            }
            KeyCode::Up => s.selected = s.selected.saturating_sub(1),
            KeyCode::Down => s.selected = (s.selected + 1).min(s.hits.len().saturating_sub(1)),
            KeyCode::Backspace => {
                s.query.pop();
                self.run_search();
            }
            KeyCode::Char(c) if !k.modifiers.contains(KeyModifiers::CONTROL) => {
                s.query.push(c);
                self.run_search();
            }
            _ => {}
        }
    }

    /// Compare: whether each trace is drawn on its own axis (the user's
    /// choice, else when their lengths differ by more than 2x).
    pub fn compare_own_axes(&self) -> bool {
        if let Some(own) = self.compare.axis {
            return own;
        }
        let (a, b) = match (self.data.as_slice(), &self.previous) {
            ([a, b, ..], _) => (a, b),
            ([now], Some(before)) => (&**before, now),
            _ => return false,
        };
        let (x, y) = (a.end_ns().max(1) as f64, b.end_ns().max(1) as f64);
        x.max(y) / x.min(y) > 2.0
    }

    /// Memory map: moves the cursor a column in time or a band in offset.
    fn memory_cursor(&mut self, dt: i64, doff: i64) {
        let Some(d) = self.primary() else { return };
        let cap = super::views::memory::pool_of(self, d)
            .map_or(d.capacity, |p| p.capacity_bytes)
            .max(1);
        let (cols, rows) = super::views::memory::grid_size(self);
        if dt != 0 {
            let step = (self.window.1 - self.window.0) / cols.max(1) as u64;
            let t = (self.cursor as i128 + dt as i128 * step.max(1) as i128)
                .clamp(0, self.end_ns() as i128 - 1) as u64;
            if t < self.window.0 || t >= self.window.1 {
                self.pan(dt as i128);
            }
            self.cursor = t;
        }
        if doff != 0 {
            let band = (cap / rows.max(1) as u64).max(1);
            self.memory.offset = (self.memory.offset as i128 + doff as i128 * band as i128)
                .clamp(0, cap as i128 - 1) as u64;
        }
    }

    /// While `?` is open it takes the keys: scrolling keys scroll it, the
    /// keys that leave or switch it pass, everything else is swallowed (a
    /// Down must not move the list under it). Whether `a` goes on to `act`.
    fn help_takes(&mut self, a: Action) -> bool {
        let step: i32 = match a {
            Action::Up | Action::CursorUp => -1,
            Action::Down | Action::CursorDown => 1,
            Action::PageUp => -10,
            Action::PageDown => 10,
            Action::Quit
            | Action::Help
            | Action::Close
            | Action::Search
            | Action::NextView
            | Action::PrevView
            | Action::GotoView(_) => return true,
            _ => 0,
        };
        let max = crate::ui::help_max_scroll(self) as i32;
        self.help_scroll = (self.help_scroll as i32 + step).clamp(0, max) as u16;
        false
    }

    /// `a` in Suggest: the selected change, to be written into the watched
    /// config; changes a config cannot express say why not.
    fn apply_selected(&mut self) -> Option<Effect> {
        let Some(x) = self.suggest.selected() else {
            self.status = "no suggestion selected".into();
            return None;
        };
        if self.config.is_none() {
            self.status = "to apply suggestions, open the model with --config SCHED.toml".into();
            return None;
        }
        // The detail pane says how to make it; the status (half the
        // footer at 80 columns) only why it was not applied.
        if let Some((why, _)) = spillscope::report::change::hardware_rerun(&x.change) {
            self.status = format!("not applied: {why}");
            return None;
        }
        Some(Effect::Apply(x.change.clone()))
    }

    fn act(&mut self, a: Action) -> Option<Effect> {
        if self.help && !self.help_takes(a) {
            return None;
        }
        match a {
            Action::Quit => self.quit = true,
            Action::NextView => self.view = View::ALL[(self.view.index() + 1) % View::ALL.len()],
            Action::PrevView => {
                self.view = View::ALL[(self.view.index() + View::ALL.len() - 1) % View::ALL.len()]
            }
            Action::GotoView(i) => self.view = View::ALL[i.min(View::ALL.len() - 1)],
            Action::PanLeft => self.pan(-1),
            Action::PanRight => self.pan(1),
            Action::ZoomIn => self.zoom(0.5),
            Action::ZoomOut => self.zoom(2.0),
            Action::ZoomFit => {
                self.window = self.full_window();
            }
            Action::NextSpill => self.jump_spill(true),
            Action::PrevSpill => self.jump_spill(false),
            Action::Up => self.move_sel(-1),
            Action::Down => self.move_sel(1),
            Action::PageUp => self.move_sel(-(self.height.max(10) as i64 - 6)),
            Action::PageDown => self.move_sel(self.height.max(10) as i64 - 6),
            Action::Select => match self.view {
                View::Hotspots => {
                    let pick = self
                        .primary()
                        .and_then(|d| self.hot.selected(d).map(|h| (h.op, h.calls)));
                    if let Some((o, calls)) = pick {
                        self.goto_op(o);
                        if calls > 1 {
                            self.status = format!("{}; the first of {calls} calls", self.status);
                        }
                    }
                }
                View::Suggest => {
                    // A pin suggestion opens its tensor.
                    let pinned = match self.suggest.selected().map(|x| &x.change) {
                        Some(spillscope::analysis::suggest::Change::Pin { tensor }) => {
                            Some(tensor.clone())
                        }
                        _ => None,
                    };
                    if let Some(t) = pinned.and_then(|n| {
                        self.primary()
                            .and_then(|d| d.trace.tensors.iter().position(|t| t.name == n))
                    }) {
                        self.goto_tensor(t);
                    } else if let Some(x) = self.suggest.selected() {
                        // Other changes: how to make it, in full.
                        self.status = spillscope::report::change::how(&x.change);
                    }
                }
                View::Compare if self.compare.on_tensors => {
                    // A changed tensor opens in the Tensor view, on the
                    // side where it makes round trips if the shown one has
                    // none.
                    let trips = self
                        .changed_tensor(self.compare.tensor_sel)
                        .map(|t| [t.a_trips, t.b_trips]);
                    if let Some(trips) = trips {
                        let shown = self.side.min(1);
                        if self.data.len() > 1 && trips[shown] == 0 && trips[1 - shown] > 0 {
                            self.switch_side();
                        }
                    }
                    let t = self.selected_name().and_then(|n| {
                        self.primary()
                            .and_then(|d| d.trace.tensors.iter().position(|t| t.name == n))
                    });
                    if let Some(t) = t {
                        self.goto_tensor(t);
                    }
                }
                View::Compare => {
                    let name = self
                        .diff
                        .as_ref()
                        .and_then(|d| d.ops.get(self.compare.sel))
                        .map(|o| o.name.clone());
                    if let Some(o) = name.and_then(|n| {
                        self.primary()
                            .and_then(|d| d.trace.ops.iter().position(|o| o.name == n))
                    }) {
                        self.goto_op(o);
                    }
                }
                View::Timeline => self.open_event(),
                View::Tensor => self.open_first_trip(),
                _ => {}
            },
            Action::CursorLeft => self.memory_cursor(-1, 0),
            Action::CursorRight => self.memory_cursor(1, 0),
            Action::CursorUp => self.memory_cursor(0, 1),
            Action::CursorDown => self.memory_cursor(0, -1),
            Action::SwitchSide => self.switch_side(),
            Action::TryCapacity => return self.try_capacity(),
            Action::SwitchTable => {
                let n = self.changed.len();
                if n == 0 && !self.compare.on_tensors {
                    self.status = "compare: no tensor's round trips changed".into();
                } else {
                    self.compare.on_tensors = !self.compare.on_tensors;
                    self.status = if self.compare.on_tensors {
                        "compare: the list keys move the tensor table".into()
                    } else {
                        "compare: the list keys move the op table".into()
                    };
                }
            }
            Action::ToggleAxis => {
                let own = self.compare_own_axes();
                self.compare.axis = Some(!own);
                self.status = if own {
                    "compare: one shared time axis".into()
                } else {
                    "compare: each trace on its own axis (normalised to its run)".into()
                };
            }
            Action::Apply => return self.apply_selected(),
            Action::Undo => {
                if self.can_undo {
                    return Some(Effect::Undo);
                }
                self.status =
                    "nothing to undo: no change applied since the explorer started".into();
            }
            Action::SortCycle => {
                let spill = self.primary().is_none_or(|d| d.caps.spill_events);
                let cores = self.primary().map_or(1, |d| d.trace.summary.cores);
                self.hot.key = self.hot.key.next_in(&crate::views::hotspots::keys_for(
                    spill,
                    self.hot.grouped,
                    cores,
                ));
                self.resort_hotspots();
            }
            Action::GroupByName => {
                self.hot.grouped = !self.hot.grouped;
                self.hot.sel = 0;
                self.resort_hotspots();
                self.status = if self.hot.grouped {
                    "hotspots: one row per op name, its calls summed (g: per op)".into()
                } else {
                    "hotspots: one row per op".into()
                };
            }
            Action::SortInvert => {
                self.hot.ascending = !self.hot.ascending;
                self.resort_hotspots();
            }
            Action::Search => {
                self.search = Some(Search::default());
                self.help = false;
            }
            Action::Help => {
                self.help = !self.help;
                self.help_scroll = 0;
            }
            Action::Close => {
                if self.help {
                    self.help = false;
                } else {
                    if self.banner.is_some() {
                        self.warnings_hidden = total_warnings(&self.data);
                    }
                    self.banner = None;
                }
            }
            Action::NextPool => {
                let n = self.primary()?.trace.pools.len();
                if n > 1 {
                    self.memory.pool = (self.memory.pool + 1) % n;
                    self.memory.offset = 0;
                }
            }
            Action::Deeper | Action::Shallower => {
                let d = self.primary()?;
                let (level, levels) = (d.level, d.levels);
                let to = match a {
                    Action::Deeper => level + 1,
                    _ => level.saturating_sub(1),
                };
                if to < 1 || to > levels {
                    self.status = format!(
                        "showing level {level} of {levels} of nested calls: {}",
                        if to < 1 {
                            "already the top"
                        } else {
                            "no deeper calls"
                        }
                    );
                    return None;
                }
                self.status = format!("level {to} of {levels} of nested calls...");
                return Some(Effect::Relevel(to));
            }
            Action::Pause => {
                self.paused = !self.paused;
                if !self.paused {
                    if let Some(d) = self.pending.take() {
                        self.install(0, *d);
                        self.banner = warning_banner(&self.data, self.warnings_hidden);
                    }
                }
            }
        }
        None
    }
}

/// How many warnings the readers gave, over every trace shown.
fn total_warnings(data: &[Dataset]) -> usize {
    data.iter().map(|d| d.warnings.len()).sum()
}

/// One line about what the readers skipped, naming the trace and the newest
/// problem (the rest are counted; `spillscope import` lists them all);
/// none while no more than `hidden` (dismissed) warnings exist.
fn warning_banner(data: &[Dataset], hidden: usize) -> Option<String> {
    let total = total_warnings(data);
    if total <= hidden {
        return None;
    }
    // The newest problem: on a live stream, the one that just arrived.
    let (d, first) = data
        .iter()
        .rev()
        .find_map(|d| d.warnings.last().map(|w| (d, w)))?;
    Some(if total > 1 {
        format!(
            "{}: {first} (+{} more; `spillscope import` lists them)",
            d.label,
            total - 1
        )
    } else {
        format!("{}: {first}", d.label)
    })
}

/// Applies one message. Returns an effect for the runtime, if any.
pub fn update(app: &mut App, msg: Msg) -> Option<Effect> {
    match msg {
        Msg::Key(k) => {
            if k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL) {
                app.quit = true;
                return None;
            }
            if app.search.is_some() {
                app.search_key(&k);
                return None;
            }
            app.status.clear();
            // The help overlay scrolls with the list keys in every view
            // (the Overview has no list of its own).
            let scopes = if app.help {
                let mut v = app.scopes();
                v.push(crate::keys::Scope::List);
                v
            } else {
                app.scopes()
            };
            match action_for(&k, &scopes) {
                Some(a) => app.act(a),
                None => None,
            }
        }
        Msg::Resize(w, h) => {
            app.width = w;
            app.height = h;
            None
        }
        Msg::Loaded { slot, data } => {
            app.refreshing = false;
            app.banner = None;
            if slot == 0 && app.config.is_some() {
                app.config_loads += 1;
                app.config_loaded_at = Some(data.built_at);
            }
            if app.paused && slot == 0 && !app.data.is_empty() {
                app.pending = Some(data);
            } else {
                let first = app.data.is_empty();
                app.install(slot, *data);
                if first {
                    app.window = app.full_window();
                }
                app.banner = warning_banner(&app.data, app.warnings_hidden);
            }
            None
        }
        Msg::Analysed { slot, data } => {
            // Only if nothing newer replaced that slot meanwhile.
            if app
                .data
                .get(slot)
                .map(|d| Arc::ptr_eq(&d.trace, &data.trace))
                .unwrap_or(false)
            {
                app.install(slot, *data);
            }
            None
        }
        Msg::Bounded { trace, optimum } => {
            if app
                .refining
                .as_ref()
                .is_some_and(|t| Arc::ptr_eq(t, &trace))
            {
                app.refining = None;
            }
            app.optimum = Some((trace, optimum));
            None
        }
        Msg::Refining(trace) => {
            app.refining = Some(trace);
            None
        }
        Msg::Unrefined { trace, reason } => {
            app.unrefined = Some(trace);
            app.status = spillscope::safe_text::escape(&reason).into_owned();
            None
        }
        Msg::Progress(p) => {
            app.progress = Some(p);
            None
        }
        Msg::Done => {
            app.progress = None;
            app.refreshing = false;
            app.finished_job()
        }
        // The loop unwraps these; one that reaches here is dropped.
        Msg::Posted(_) => None,
        Msg::Suggested { trace, result } => {
            if app
                .data
                .first()
                .map(|d| Arc::ptr_eq(&d.trace, &trace))
                .unwrap_or(false)
            {
                app.suggest.state = match result {
                    Ok(s) => SuggestState::Ready(s),
                    Err(e) => SuggestState::Unavailable(e),
                };
                app.suggest.sel = app.suggest.sel.min(app.list_len().saturating_sub(1));
            }
            None
        }
        Msg::Failed(e) => {
            app.refreshing = false;
            app.banner = Some(format!("{e} (the last good view stays)"));
            app.finished_job()
        }
        // A followed trace grows while its last refresh is still being
        // analysed: cancelling that job for every append would never let
        // one finish (a stream appends every few milliseconds), so the
        // change waits for it and the newest data is read once it ends.
        // A model's config edit still cancels: that input replaces the run.
        Msg::FileChanged(_) if app.in_flight && !app.resimulates => {
            app.behind = true;
            None
        }
        Msg::FileChanged(_) => {
            app.refreshing = true;
            app.in_flight = true;
            Some(Effect::Refresh)
        }
        Msg::Tick => None,
        Msg::Terminate => {
            app.quit = true;
            None
        }
        Msg::ConfigApplied(r) => {
            match r {
                Ok(text) => {
                    app.status = text;
                    app.can_undo = true;
                }
                Err(e) => app.status = format!("not applied: {e}"),
            }
            None
        }
        Msg::ConfigRestored(r) => {
            match r {
                Ok(text) => {
                    app.status = text;
                    app.can_undo = false;
                }
                Err(e) => app.status = format!("not restored: {e}"),
            }
            None
        }
    }
}

//! The analysis session: one computation per run, whose figures every front
//! end shows (what `asyncgit` is to gitui). Given a run specification or
//! traces, a job produces, each as soon as it is ready:
//!
//! | stage | what | budget |
//! |---|---|---|
//! | `load` | the model (kept by file stamp) or the traces (JSONL streams tailed) | - |
//! | `simulate` | every policy but `planned`, each with its quick per-op bound (`refining` while the exact program runs) | - |
//! | `analyse` | the explorer's datasets: quick, then complete | - |
//! | `bound` | the exact program at the run's capacity: LP / windowed / proven minimum, raising every run's bound | [`Budgets::bound_s`] (5 s, `--ilp-time`) |
//! | `planned` | the planned run, following the bound's plan | (the bound's solve) |
//! | `suggest` | the primary run's suggestions, each candidate re-simulated; a candidate on another graph or capacity under `planned` solves its own plan | [`Budgets::plan_s`] (1 s) per such plan |
//! | `what-if` | on request: a grid of capacities x bandwidths x core counts x policies, each capacity's (and core count's) bound (the program `sim` solves there, shared with it) | [`Budgets::whatif_bound_s`] (5 s) per capacity, in parallel |
//!
//! Every stage is cancellable: a newer request (a new spec, a file change)
//! cancels the running job's token, and the job stops within one solver
//! slice (40 ms), between suggestion candidates or what-if points, or
//! every 64 simulated ops. Progress comes as [`Stage`], done of total.
//! Results are kept in the [`cache::Cache`] by the content of their inputs.
//!
//! The command line runs a job to the end ([`run`]); the explorer keeps a
//! [`Session`] whose worker runs the newest request and posts [`Update`]s.
//! Owns: the job's stages, their figures and the result cache. May import
//! everything in the core; nothing in the core imports it but the front
//! ends' helpers.

pub mod cache;
pub mod dataset;
mod job;
mod kept;
mod planner;
pub mod source;
mod worker;

pub use source::{file_stamp, FileStamp, Source, Tails, TraceOpts};
pub use worker::Session;

use crate::analysis::figures::TrafficBound;
use crate::analysis::runs::{RunRow, RunsReport};
use crate::analysis::suggest::Suggestions;
use crate::analysis::whatif::Knee;
use crate::graph::Graph;
use crate::run::Resolved;
use crate::sim::optimum::{Optimum, DEFAULT_TIME_LIMIT_S};
use crate::sim::EvictionPolicy;
use crate::trace::Trace;
use crate::Result;
use dataset::Dataset;
use std::sync::Arc;

/// A job's stages, in the order it runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    Load,
    Simulate,
    Analyse,
    Bound,
    Planned,
    Suggest,
    WhatIf,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Load => "loading",
            Stage::Simulate => "simulating",
            Stage::Analyse => "analysing",
            Stage::Bound => "solving the bound",
            Stage::Planned => "simulating the planned run",
            Stage::Suggest => "re-simulating suggestions",
            Stage::WhatIf => "what-if",
        }
    }
}

/// How far a job is: `done` of `total` in `stage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub generation: u64,
    pub stage: Stage,
    pub done: usize,
    pub total: usize,
}

/// Each stage's time budget, seconds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Budgets {
    /// The exact program at the run's capacity (bound and plan together);
    /// 0 turns the bound off.
    pub bound_s: f64,
    /// The plan of a re-simulation under `planned` on a graph or capacity
    /// the bound did not solve (suggestion candidates, the knee search).
    pub plan_s: f64,
    /// Each what-if capacity's bound (and plan); 0 leaves what-if rows
    /// unrefined.
    pub whatif_bound_s: f64,
}

impl Default for Budgets {
    fn default() -> Self {
        Budgets {
            bound_s: DEFAULT_TIME_LIMIT_S,
            plan_s: 1.0,
            whatif_bound_s: DEFAULT_TIME_LIMIT_S,
        }
    }
}

/// A what-if grid: every capacity x bandwidth (`None`: the profile's) x
/// policy of the request.
#[derive(Debug, Clone, PartialEq)]
pub struct WhatIfGrid {
    /// The capacities; empty with `curve` set: the report's curve.
    pub capacities: Vec<u64>,
    /// Instead of `capacities`, this many points from a quarter of the
    /// primary run's capacity up to 1.25x its peak live bytes (or the
    /// capacity, if higher): the report's what-if curve.
    pub curve: Option<usize>,
    pub bandwidths: Vec<Option<f64>>,
    /// Core counts (`None`: the profile's); empty means the profile's.
    pub cores: Vec<Option<u32>>,
    /// Only this slice of the grid (`whatif --shard K/N`).
    pub shard: Option<crate::analysis::shard::Shard>,
    /// Also search each policy's zero-traffic capacity (the knees).
    pub knees: bool,
}

/// What a request asks for beyond the runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Wants {
    /// The explorer's datasets (quick, then complete).
    pub datasets: bool,
    /// The exact program's bound (and with it the planned policy's plan).
    pub bound: bool,
    /// The primary run's suggestions.
    pub suggestions: bool,
    /// Only for runs of at most this many ops (the explorer's limit for
    /// re-simulating interactively); larger ones say so.
    pub suggest_max_ops: Option<usize>,
    pub whatif: Option<WhatIfGrid>,
    /// The runs' figures only: their traces keep no events, ops or tensors
    /// (`sim` without `-o`; [`crate::sim::simulate_summary`]), which on a
    /// large graph is most of a run's memory.
    pub summary_only: bool,
}

/// One job's input.
#[derive(Debug, Clone)]
pub struct Request {
    pub source: Source,
    pub wants: Wants,
    pub budgets: Budgets,
    /// The result cache (`None`: `--no-cache`).
    pub cache: Option<cache::Cache>,
}

impl Request {
    /// A request for `source` with the default budgets and the user's
    /// cache.
    pub fn new(source: Source, wants: Wants) -> Request {
        Request {
            source,
            wants,
            budgets: Budgets::default(),
            cache: cache::Cache::user(),
        }
    }
}

/// What a job posts as it goes (the explorer turns each into a message).
#[derive(Debug)]
pub enum Update {
    Progress(Progress),
    /// A new run's (or trace's) dataset for slot 0 or 1.
    Loaded {
        slot: usize,
        data: Box<Dataset>,
    },
    /// The complete analyses of a dataset already posted.
    Analysed {
        slot: usize,
        data: Box<Dataset>,
    },
    /// A better bound than the trace's own is being computed for it.
    Refining {
        trace: Arc<Trace>,
    },
    /// The trace's bound stays its own: refining it would not fit the
    /// memory budget (`reason` says what it needs and what is left).
    Unrefined {
        trace: Arc<Trace>,
        reason: String,
    },
    /// The exact program's result for the trace's run: its figures, not
    /// its plan ([`Optimum::figures`]).
    Bounded {
        trace: Arc<Trace>,
        optimum: Box<Optimum>,
    },
    /// Suggestions for the trace's run.
    Suggested {
        trace: Arc<Trace>,
        result: std::result::Result<Box<Suggestions>, String>,
    },
    /// The job failed (the last good results stay).
    Failed(crate::Error),
    /// The job finished.
    Done,
}

/// An update with the generation of the request it belongs to.
#[derive(Debug)]
pub struct Posted {
    pub generation: u64,
    pub update: Update,
}

/// One simulated (or loaded) run and its figures.
#[derive(Debug, Clone)]
pub struct Run {
    pub policy: Option<EvictionPolicy>,
    pub trace: Arc<Trace>,
    pub bound: TrafficBound,
}

impl Run {
    /// The `sim --format json` row of the run, with its bound.
    pub fn row(&self) -> RunRow {
        RunRow::from_trace(&self.trace).with_bound(self.bound)
    }

    /// Writes the run's bound into its trace's summary (what `-o` writes),
    /// in place where nothing else holds the trace: copying a trace of
    /// 10^6 ops to change two fields doubled `sim -o`'s peak memory.
    pub fn settle_bound(&mut self) {
        let t = Arc::make_mut(&mut self.trace);
        t.summary.lower_bound_traffic_bytes = self.bound.bytes;
        t.summary.lower_bound_method = self.bound.method;
    }

    /// The trace with its bound in its summary, as a copy.
    pub fn trace_with_bound(&self) -> Trace {
        let mut t = (*self.trace).clone();
        t.summary.lower_bound_traffic_bytes = self.bound.bytes;
        t.summary.lower_bound_method = self.bound.method;
        t
    }
}

/// A what-if grid's result.
#[derive(Debug, Clone)]
pub struct WhatIf {
    pub report: RunsReport,
    pub knees: Vec<Knee>,
}

/// Everything a job computed.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// In the request's policy order (or the traces' order).
    pub runs: Vec<Run>,
    pub optimum: Option<Optimum>,
    pub graph: Option<Arc<Graph>>,
    pub resolved: Option<Resolved>,
    /// What the job left out and why (one line each).
    pub notes: Vec<String>,
    pub suggestions: Option<std::result::Result<Suggestions, String>>,
    pub whatif: Option<WhatIf>,
}

impl Outcome {
    /// The runs as the `sim --format json` document.
    pub fn report(&self, model: &str) -> RunsReport {
        RunsReport {
            model: model.to_string(),
            runs: self.runs.iter().map(Run::row).collect(),
            optimum: self.optimum.clone(),
            shard: None,
        }
    }
}

/// Runs `request` to the end on this thread (the command line, Python):
/// the same job the explorer's session runs, never cancelled; `progress`
/// hears each stage.
pub fn run(request: &Request, progress: &(dyn Fn(&Progress) + Sync)) -> Result<Outcome> {
    run_cancellable(request, &crate::cancel::Cancel::never(), progress)
}

/// [`run`] that stops with `Err(Error::Cancelled)` once `cancel` fires
/// (Python's Ctrl-C).
pub fn run_cancellable(
    request: &Request,
    cancel: &crate::cancel::Cancel,
    progress: &(dyn Fn(&Progress) + Sync),
) -> Result<Outcome> {
    let mut tails = Tails::new();
    let post = |u: Update| {
        if let Update::Progress(p) = u {
            progress(&p);
        }
    };
    job::Job::new(0, cancel.clone(), &post, &mut tails)
        .headless()
        .run(request)
}

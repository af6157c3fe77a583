//! One job: a request's stages run in order (see the module table of
//! [`super`]), each checking the job's cancel token, each posting what it
//! found as soon as it has it and filling the [`Outcome`].

use super::cache::KeyBuilder;
use super::dataset::Dataset;
use super::planner::{optimum, SessionPlanner};
use super::source::{label_of, profile_of, Loaded};
use super::{Outcome, Progress, Request, Run, Stage, Tails, Update, WhatIf, WhatIfGrid};
use crate::analysis::figures::{BoundState, TrafficBound};
use crate::analysis::suggest::{inputs_of_trace, suggest_with, Suggestions};
use crate::cancel::Cancel;
use crate::cost::HardwareProfile;
use crate::graph::Graph;
use crate::run::{Resolved, RunSpec};
use crate::sim::optimum::{Optimum, OptimumLimits, PoolSize};
use crate::sim::plan::Residency;
use crate::sim::{
    prepare_graph, simulate_summary, simulate_with, EvictionPolicy, Runner, SimConfig,
};
use crate::trace::{Source as TraceSource, Trace};
use crate::{Error, Result};
use std::sync::Arc;
use std::time::Instant;

/// Runs that took longer than this to simulate are kept in the cache
/// (quicker ones are simulated again: reading a trace back costs about as
/// much).
const CACHE_RUNS_SLOWER_THAN_S: f64 = 0.1;

pub(crate) struct Job<'a> {
    generation: u64,
    cancel: Cancel,
    post: &'a (dyn Fn(Update) + Sync),
    tails: &'a mut Tails,
    /// Only the first frame's datasets: no complete analyses.
    quick_only: bool,
    /// Whether anyone draws the runs: a headless caller (the command line,
    /// Python) reads only the [`Outcome`], so the views' datasets are not
    /// built (on a 10^6-op model they took about 500 MB and seconds).
    views: bool,
    out: Outcome,
}

impl<'a> Job<'a> {
    pub(crate) fn new(
        generation: u64,
        cancel: Cancel,
        post: &'a (dyn Fn(Update) + Sync),
        tails: &'a mut Tails,
    ) -> Job<'a> {
        Job {
            generation,
            cancel,
            post,
            tails,
            quick_only: false,
            views: true,
            out: Outcome::default(),
        }
    }

    pub(crate) fn quick_only(mut self) -> Job<'a> {
        self.quick_only = true;
        self
    }

    /// A job whose runs nobody draws: it posts progress and `Done`, no
    /// datasets.
    pub(crate) fn headless(mut self) -> Job<'a> {
        self.views = false;
        self
    }

    /// Runs every stage the request asks for.
    pub(crate) fn run(mut self, req: &Request) -> Result<Outcome> {
        match &req.source {
            super::Source::Model(spec) => self.model(req, spec)?,
            source => self.traces(req, source)?,
        }
        // A calibration profile read on a model's run is kept here.
        self.tails.keep_traces();
        (self.post)(Update::Done);
        Ok(self.out)
    }

    fn progress(&self, stage: Stage, done: usize, total: usize) {
        (self.post)(Update::Progress(Progress {
            generation: self.generation,
            stage,
            done,
            total,
        }));
    }

    /// A model: load, simulate, bound, planned run, suggestions, what-if.
    fn model(&mut self, req: &Request, spec: &RunSpec) -> Result<()> {
        self.progress(Stage::Load, 0, 1);
        let g = self.tails.graph(spec)?;
        let profile = profile_of(self.tails, spec, &g)?;
        let mut r = spec.resolve_with_profile(&g, profile.as_ref().map(|p| &*p.trace))?;
        // The planned policy plans one pool: among several policies it is
        // left out with a note (alone, the engine refuses it and says why).
        if !r.hardware.is_single_pool()
            && r.policies.len() > 1
            && r.policies.contains(&EvictionPolicy::Planned)
        {
            r.policies.retain(|&p| p != EvictionPolicy::Planned);
            self.out.notes.push(
                "planned: skipped, it plans one pool and this profile declares several".into(),
            );
        }
        self.out.graph = Some(g.clone());
        self.out.resolved = Some(r.clone());
        let cache = req.cache.as_ref();
        let policies = r.policies.clone();
        // One core's graph: with several cores each solves its own share
        // and the bound is their sum; a graph split over cores has no one
        // core graph (its bound is the cores' per-op bounds).
        let whole = prepare_graph(&g, &r.config)?;
        let per_core = crate::sim::cores::core_graph(&whole, &r.hardware, &r.config)?;
        let one_graph = per_core.is_some();
        if !one_graph
            && req.wants.bound
            && req.budgets.bound_s > 0.0
            && r.policies.iter().any(|&p| p != EvictionPolicy::Ideal)
        {
            // Say why the bound stays weak here (the gap reads large).
            self.out.notes.push(
                "bound: per-op only: a graph split has no one core graph for the exact program to solve (the planned policy solves each core's part)".into(),
            );
        }
        let prepared = per_core.unwrap_or(std::borrow::Cow::Borrowed(&whole));
        let cores = r.hardware.cores.count;
        let solves = req.wants.bound
            && req.budgets.bound_s > 0.0
            && r.hardware.is_single_pool()
            && one_graph
            && policies.iter().any(|&p| p != EvictionPolicy::Ideal);
        let first_state = |p: EvictionPolicy| match solves && p != EvictionPolicy::Ideal {
            true => BoundState::Refining,
            false => BoundState::Final,
        };
        // Every policy but the planned one, which follows the bound's plan.
        let mut runs: Vec<Option<Run>> = vec![None; policies.len()];
        for (i, &p) in policies.iter().enumerate() {
            if p == EvictionPolicy::Planned {
                continue;
            }
            self.progress(Stage::Simulate, i, policies.len());
            let trace = self.simulate(req, &g, &r.hardware, &r.config_for(p), None)?;
            let bound = TrafficBound::of(&trace.summary).with_state(first_state(p));
            runs[i] = Some(Run {
                policy: Some(p),
                trace,
                bound,
            });
        }
        let label = label_of(&spec.model);
        if let Some(primary) = runs[0].clone() {
            self.show(0, &label, &primary, solves);
        }
        if let Some(p) = &profile {
            self.show_loaded(1, p);
        }
        // The bound, shared by every policy (it does not depend on one).
        let pool = PoolSize::of(&r.hardware);
        let limits = OptimumLimits {
            time_limit_s: req.budgets.bound_s,
            ..Default::default()
        };
        let planner =
            SessionPlanner::new(cache, req.budgets.plan_s).with_baseline(&prepared, pool, limits);
        if solves {
            self.cancel.check()?;
            let (post, generation) = (self.post, self.generation);
            let tick = move |done, total| {
                post(Update::Progress(Progress {
                    generation,
                    stage: Stage::Bound,
                    done,
                    total,
                }))
            };
            tick(0, 1);
            let o = optimum(cache, &prepared, pool, limits, &self.cancel, &tick)?;
            planner.know(&prepared, pool, o.plan.clone());
            let o = o.times(cores);
            for run in runs.iter_mut().flatten() {
                run.bound = run.bound.refined(&o);
            }
            if let Some(primary) = &runs[0] {
                (self.post)(Update::Bounded {
                    trace: primary.trace.clone(),
                    optimum: Box::new(o.figures()),
                });
            }
            self.out.optimum = Some(o);
        }
        // The planned run follows that solve (or, with the bound off, its
        // own within the default budget).
        if let Some(i) = policies.iter().position(|&p| p == EvictionPolicy::Planned) {
            self.progress(Stage::Planned, 0, 1);
            let plan = match &self.out.optimum {
                Some(o) => o.plan.clone(),
                None if r.hardware.is_single_pool() && one_graph => {
                    crate::sim::Planner::plan(&planner, &prepared, pool, &self.cancel)?
                }
                None => None,
            };
            let cfg = r.config_for(EvictionPolicy::Planned);
            let trace = self.simulate(req, &g, &r.hardware, &cfg, Some(plan))?;
            let own = TrafficBound::of(&trace.summary);
            let bound = match &self.out.optimum {
                Some(o) => own.refined(o),
                None => own,
            };
            let run = Run {
                policy: Some(EvictionPolicy::Planned),
                trace,
                bound,
            };
            if i == 0 {
                self.show(0, &label, &run, false);
                if let Some(o) = &self.out.optimum {
                    (self.post)(Update::Bounded {
                        trace: run.trace.clone(),
                        optimum: Box::new(o.figures()),
                    });
                }
            }
            runs[i] = Some(run);
        }
        self.out.runs = runs.into_iter().flatten().collect();
        if req.wants.suggestions {
            if let Some(primary) = self.out.runs.first().cloned() {
                let cfg = r.first_config();
                self.suggest(req, &g, &r.hardware, &cfg, &primary.trace, &planner)?;
            }
        }
        if let Some(grid) = &req.wants.whatif {
            self.whatif(req, &g, &r, grid)?;
        }
        Ok(())
    }

    /// Posts a run's dataset (quick, then complete), and that its bound is
    /// being refined.
    fn show(&mut self, slot: usize, label: &str, run: &Run, refining: bool) {
        if !self.views {
            return;
        }
        let loaded = Loaded::at_level(label.to_string(), run.trace.clone(), Vec::new(), 1);
        self.show_loaded(slot, &loaded);
        if refining {
            (self.post)(Update::Refining {
                trace: run.trace.clone(),
            });
        }
    }

    fn show_loaded(&mut self, slot: usize, l: &Loaded) {
        if !self.views {
            return;
        }
        // A cached trace's first-frame analyses come back with it; a trace
        // read from its JSON keeps this one's beside it.
        let quick = match self.tails.kept_parts(&l.trace) {
            Some(k) => Dataset::quick_from(l.label.clone(), l.trace.clone(), k),
            None => Dataset::quick(l.label.clone(), l.trace.clone()),
        }
        .with_warnings(l.warnings.clone())
        .with_levels(l.level, l.levels);
        self.tails.keep_parts(&l.trace, || quick.quick_parts());
        // The first frame draws from the quick dataset: it is posted before
        // the complete analyses start, which take longer than the load.
        let analyse = !self.quick_only && !self.cancel.is_cancelled();
        let kept = analyse.then(|| quick.completion());
        (self.post)(Update::Loaded {
            slot,
            data: Box::new(quick),
        });
        if let Some(quick) = kept {
            self.progress(Stage::Analyse, slot, slot + 1);
            (self.post)(Update::Analysed {
                slot,
                data: Box::new(quick.complete()),
            });
        }
    }

    /// Traces (files or in memory): load, analyse, and for a simulator
    /// trace the bound of its run and its suggestions.
    fn traces(&mut self, req: &Request, source: &super::Source) -> Result<()> {
        self.progress(Stage::Load, 0, 1);
        let loaded = source.load_traces(self.tails)?;
        let cache = req.cache.as_ref();
        // Every trace's own figures; a simulator trace's bound is raised
        // by the exact program on the graph that ran. The first frame's
        // datasets go out before that graph is rebuilt.
        let wants_bound = req.wants.bound && req.budgets.bound_s > 0.0;
        let will_refine = |tr: &crate::trace::Trace| {
            wants_bound
                && tr.source == TraceSource::Simulator
                && tr.summary.lower_bound_method != crate::trace::BoundMethod::None
        };
        for (slot, l) in loaded.iter().enumerate().take(2) {
            self.show_loaded(slot, l);
        }
        // What loading and the analyses built and dropped goes back before
        // the bound's graph and solve add theirs (a viewer's peak is here).
        crate::limits::release_free_memory();
        self.tails.keep_traces();
        let mut runs: Vec<Run> = Vec::with_capacity(loaded.len());
        let mut inputs: Vec<Option<(Graph, HardwareProfile, SimConfig)>> = Vec::new();
        for l in &loaded {
            // Rebuilding the graph that ran costs about what loading did:
            // only for a bound that will be solved, and only where the
            // memory budget has room for it and its solve.
            let refine = will_refine(&l.trace);
            let room = match refine {
                true => graph_room(&l.trace, "bound not refined (its graph and exact program)"),
                false => Ok(()),
            };
            let rebuilt = (refine && room.is_ok())
                .then(|| inputs_of_trace(&l.trace).ok())
                .flatten()
                // A multi-core trace keeps the bound it was written with
                // (its cores' per-op bounds): its graph is every core's.
                .filter(|(_, hw, _)| hw.is_single_pool() && hw.cores.count <= 1);
            let state = match (&rebuilt, &room) {
                (Some(_), _) => BoundState::Refining,
                (None, Err(_)) => BoundState::Unrefined,
                (None, Ok(())) => BoundState::Final,
            };
            if let Err(why) = room {
                self.out.notes.push(why.clone());
                if runs.len() < 2 {
                    (self.post)(Update::Unrefined {
                        trace: l.trace.clone(),
                        reason: why,
                    });
                }
            }
            runs.push(Run {
                policy: None,
                trace: l.trace.clone(),
                bound: TrafficBound::of(&l.trace.summary).with_state(state),
            });
            if rebuilt.is_some() && runs.len() <= 2 {
                (self.post)(Update::Refining {
                    trace: l.trace.clone(),
                });
            }
            inputs.push(rebuilt);
        }
        let limits = OptimumLimits {
            time_limit_s: req.budgets.bound_s,
            ..Default::default()
        };
        if inputs.iter().any(Option::is_some) {
            crate::limits::release_free_memory();
        }
        for (i, input) in inputs.iter().enumerate() {
            let Some((g, hw, _)) = input else { continue };
            self.cancel.check()?;
            self.progress(Stage::Bound, i, inputs.len());
            // The trace's graph is the one that ran: its rewrites applied.
            let o = optimum(cache, g, PoolSize::of(hw), limits, &self.cancel, &|_, _| {})?;
            runs[i].bound = runs[i].bound.refined(&o);
            (self.post)(Update::Bounded {
                trace: runs[i].trace.clone(),
                optimum: Box::new(o.figures()),
            });
            if i == 0 {
                self.out.optimum = Some(o);
            }
        }
        self.out.runs = runs;
        let wants_more = req.wants.suggestions || req.wants.whatif.is_some();
        let Some(first) = loaded.first().filter(|_| wants_more) else {
            return Ok(());
        };
        // The first trace's graph, rebuilt for its bound, serves its
        // suggestions too (rebuilding it again held two at once); the
        // others' go now.
        let rebuilt = inputs.into_iter().next().flatten();
        let inputs = match rebuilt {
            Some(x) => Ok(x),
            // Re-simulating needs the graph rebuilt: only where the memory
            // budget has room for it and a run on it.
            None => resimulate_room(&first.trace)
                .and_then(|()| inputs_of_trace(&first.trace).map_err(|e| e.to_string())),
        };
        let (g, hw, cfg) = match inputs {
            Ok(x) => x,
            Err(msg) => {
                self.out.notes.push(msg.clone());
                if req.wants.suggestions {
                    self.out.suggestions = Some(Err(msg.clone()));
                    (self.post)(Update::Suggested {
                        trace: first.trace.clone(),
                        result: Err(msg),
                    });
                }
                return Ok(());
            }
        };
        let planner = SessionPlanner::new(cache, req.budgets.plan_s).with_baseline(
            &g,
            PoolSize::of(&hw),
            limits,
        );
        if let Some(o) = &self.out.optimum {
            planner.know(&g, PoolSize::of(&hw), o.plan.clone());
        }
        if req.wants.suggestions {
            self.suggest(req, &g, &hw, &cfg, &first.trace, &planner)?;
        }
        if let Some(grid) = &req.wants.whatif {
            let r = Resolved {
                hardware: hw,
                policies: vec![cfg.policy],
                config: cfg,
                calibration: None,
                free_at_from: None,
            };
            self.whatif(req, &g, &r, grid)?;
        }
        Ok(())
    }

    /// One simulation, from the cache where it was slow enough to keep.
    fn simulate(
        &self,
        req: &Request,
        g: &Graph,
        hw: &HardwareProfile,
        cfg: &SimConfig,
        plan: Option<Option<Arc<Residency>>>,
    ) -> Result<Arc<Trace>> {
        let mut keyed = cfg.clone();
        if let Some(p) = &plan {
            keyed.plan = p.clone();
        }
        let summary_only = req.wants.summary_only;
        let key = KeyBuilder::new("run")
            .graph(g)
            .hardware(hw)
            .config(&keyed)
            .part("summary_only", &summary_only)
            .finish();
        let cache = req.cache.as_ref();
        if let Some(t) = cache.and_then(|c| c.get::<Trace>(&key)) {
            return Ok(Arc::new(t));
        }
        let started = Instant::now();
        // `None`: not the planned policy; `Some(None)`: planned, no plan found.
        let t = match summary_only {
            true => simulate_summary(g, hw, cfg, plan.flatten(), &self.cancel)?,
            false => simulate_with(g, hw, cfg, plan.flatten(), &self.cancel)?,
        };
        if started.elapsed().as_secs_f64() > CACHE_RUNS_SLOWER_THAN_S {
            if let Some(c) = cache {
                c.put(&key, &t);
            }
        }
        Ok(Arc::new(t))
    }

    /// The suggestions for the run `trace` of `cfg`: from the cache, else
    /// re-simulated candidate by candidate.
    fn suggest(
        &mut self,
        req: &Request,
        g: &Graph,
        hw: &HardwareProfile,
        cfg: &SimConfig,
        trace: &Arc<Trace>,
        planner: &SessionPlanner,
    ) -> Result<()> {
        if let Some(max) = req.wants.suggest_max_ops.filter(|&m| trace.ops.len() > m) {
            let msg = format!(
                "{} ops: more than {max} to re-simulate interactively; run `spillscope suggest` on it",
                trace.ops.len()
            );
            self.out.suggestions = Some(Err(msg.clone()));
            (self.post)(Update::Suggested {
                trace: trace.clone(),
                result: Err(msg),
            });
            return Ok(());
        }
        let key = KeyBuilder::new("suggestions")
            .graph(g)
            .hardware(hw)
            .config(cfg)
            .part("budgets", &req.budgets)
            .finish();
        #[derive(serde::Serialize, serde::Deserialize)]
        struct Stored {
            suggestions: Suggestions,
            configs: Vec<Option<SimConfig>>,
        }
        let cache = req.cache.as_ref();
        let found = match cache.and_then(|c| c.get::<Stored>(&key)) {
            Some(mut s) => {
                for (x, c) in s.suggestions.suggestions.iter_mut().zip(s.configs) {
                    x.sim_config = c;
                }
                Ok(s.suggestions)
            }
            None => {
                let (post, generation) = (self.post, self.generation);
                let tick = move |done, total| {
                    post(Update::Progress(Progress {
                        generation,
                        stage: Stage::Suggest,
                        done,
                        total,
                    }))
                };
                tick(0, 1);
                let runner = Runner {
                    cancel: &self.cancel,
                    planner,
                };
                match suggest_with(g, hw, cfg, runner, &tick) {
                    Err(Error::Cancelled) => return Err(Error::Cancelled),
                    Ok(s) => {
                        if let Some(c) = cache {
                            let configs =
                                s.suggestions.iter().map(|x| x.sim_config.clone()).collect();
                            c.put(
                                &key,
                                &Stored {
                                    suggestions: s.clone(),
                                    configs,
                                },
                            );
                        }
                        Ok(s)
                    }
                    Err(e) => Err(e.to_string()),
                }
            }
        };
        (self.post)(Update::Suggested {
            trace: trace.clone(),
            result: found.clone().map(Box::new),
        });
        self.out.suggestions = Some(found);
        Ok(())
    }

    /// `n` capacities from a quarter of the capacity up to 1.25x the
    /// primary run's peak live bytes (or the capacity, if higher).
    fn curve(&self, hw: &HardwareProfile, n: usize) -> Vec<u64> {
        let cap = hw.memory.capacity.0;
        let peak = self
            .out
            .runs
            .first()
            .map_or(cap, |r| r.trace.summary.peak_live_bytes)
            .max(1);
        let top = (peak + peak / 4).max(cap);
        let lo = (cap / 4).max(1);
        let n = n.max(2) as u64;
        let step = ((top - lo) / (n - 1)).max(1);
        (0..n).map(|i| lo + i * step).collect()
    }

    /// A what-if grid: each capacity's bound first (in parallel, within
    /// its budget, seeding the plans of planned points), then every point,
    /// then the knees.
    fn whatif(&mut self, req: &Request, g: &Graph, r: &Resolved, grid: &WhatIfGrid) -> Result<()> {
        use crate::analysis::shard::ShardInfo;
        use crate::analysis::whatif::{
            grid_on_cores as points_of, knees, run_with, search_knees_with,
        };
        use rayon::prelude::*;
        let capacities = match grid.curve {
            Some(n) => self.curve(&r.hardware, n),
            None => grid.capacities.clone(),
        };
        if capacities.contains(&0) {
            return Err(Error::Hardware("capacity must be greater than zero".into()));
        }
        let core_counts = if grid.cores.is_empty() {
            vec![None]
        } else {
            grid.cores.clone()
        };
        let all = points_of(&capacities, &grid.bandwidths, &core_counts, &r.policies);
        let info = grid.shard.map(|s| ShardInfo {
            index: s.index,
            count: s.count,
            points: all.len(),
            grid: crate::run::grid_fingerprint(g, &r.hardware, &r.config, &all),
        });
        let points = match grid.shard {
            Some(s) => &all[s.range(all.len())],
            None => &all[..],
        };
        let cache = req.cache.as_ref();
        let whole = prepare_graph(g, &r.config)?;
        // Each core count's graph per core (`None`: a graph split, which
        // has no one graph to bound; one core borrows the whole graph),
        // checked before any run.
        let cores_of =
            |p: &crate::analysis::whatif::Point| p.cores.unwrap_or(r.hardware.cores.count).max(1);
        let mut per_cores: Vec<(u32, Option<std::borrow::Cow<Graph>>)> = Vec::new();
        for p in points {
            let k = cores_of(p);
            if per_cores.iter().all(|(c, _)| *c != k) {
                let hw = r.hardware.clone().with_cores(k)?;
                per_cores.push((k, crate::sim::cores::core_graph(&whole, &hw, &r.config)?));
            }
        }
        let mut keys: Vec<(u64, u32)> = points
            .iter()
            .map(|p| (p.capacity_bytes, cores_of(p)))
            .filter(|(_, k)| per_cores.iter().any(|(c, g)| c == k && g.is_some()))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let planned = r.policies.contains(&EvictionPolicy::Planned);
        let bounded = req.budgets.whatif_bound_s > 0.0 && r.hardware.is_single_pool();
        // The same program `sim` solves at each capacity (plan included),
        // so a what-if row and `sim` at that capacity share one solve.
        let limits = OptimumLimits {
            time_limit_s: req.budgets.whatif_bound_s,
            ..Default::default()
        };
        let planner = SessionPlanner::new(cache, req.budgets.plan_s);
        let done = std::sync::atomic::AtomicUsize::new(0);
        let total = points.len() + if bounded { keys.len() } else { 0 };
        let (post, generation) = (self.post, self.generation);
        let tick = || {
            let d = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            post(Update::Progress(Progress {
                generation,
                stage: Stage::WhatIf,
                done: d,
                total,
            }))
        };
        // Each (capacity, cores) bound: one core's graph's, times the cores.
        let bounds: Vec<((u64, u32), Optimum)> = if bounded {
            keys.par_iter()
                .map(|&(c, k)| {
                    let Some(prepared) = per_cores
                        .iter()
                        .find(|(n, _)| *n == k)
                        .and_then(|(_, g)| g.as_deref())
                    else {
                        return Err(Error::Config(format!("no graph per core at {k} cores")));
                    };
                    let hw = r.hardware.clone().with_capacity(c)?;
                    let pool = PoolSize::of(&hw);
                    let o = optimum(cache, prepared, pool, limits, &self.cancel, &|_, _| {})?;
                    if planned {
                        planner.know(prepared, pool, o.plan.clone());
                    }
                    tick();
                    Ok(((c, k), o.times(k)))
                })
                .collect::<Result<_>>()?
        } else {
            Vec::new()
        };
        let runner = Runner {
            cancel: &self.cancel,
            planner: &planner,
        };
        let rows = run_with(g, &r.hardware, &r.config, points, runner, &tick)?;
        let single = r.hardware.is_single_pool();
        let rows = rows
            .into_iter()
            .map(|row| {
                if row.policy == "ideal" || !single {
                    return row;
                }
                let key = (row.capacity_bytes, row.cores.max(1));
                match bounds.iter().find(|(k, _)| *k == key) {
                    Some((_, o)) => {
                        let b = row.bound().refined(o);
                        row.with_bound(b)
                    }
                    None => {
                        let b = row.bound().with_state(BoundState::Unrefined);
                        row.with_bound(b)
                    }
                }
            })
            .collect();
        let searched = if grid.knees {
            let mut all = Vec::new();
            for (k, _) in &per_cores {
                let hw = r.hardware.clone().with_cores(*k)?;
                all.extend(search_knees_with(g, &hw, &r.config, &r.policies, runner)?);
            }
            all
        } else {
            Vec::new()
        };
        let report = crate::analysis::runs::RunsReport {
            model: g.name.clone(),
            runs: rows,
            optimum: None,
            shard: info,
        };
        let knees = knees(&report.runs, &searched);
        self.out.whatif = Some(WhatIf { report, knees });
        Ok(())
    }
}

/// Room for re-simulating `tr`'s run (suggestions, what-if): its graph
/// rebuilt and a run on it, about what the bound's graph and solve take.
/// Only a simulator trace is re-simulated (any other is refused by what it
/// lacks, not its size).
fn resimulate_room(tr: &crate::trace::Trace) -> std::result::Result<(), String> {
    match tr.source {
        TraceSource::Simulator => graph_room(tr, "re-simulating this run (its graph rebuilt)"),
        _ => Ok(()),
    }
}

/// Room in the memory budget for `tr`'s graph rebuilt and solved or run
/// on (about [`crate::limits::BOUND_BYTES_PER_ELEMENT`] per op and
/// tensor); the line that says why not otherwise, starting with `what`.
fn graph_room(tr: &crate::trace::Trace, what: &str) -> std::result::Result<(), String> {
    let elements = (tr.ops.len() + tr.tensors.len()) as u64;
    let need = elements.saturating_mul(crate::limits::BOUND_BYTES_PER_ELEMENT);
    crate::input::check_room(need, what)
}

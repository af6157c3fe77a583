//! Counterfactual suggestions: each candidate change is re-simulated (never
//! guessed) and kept only if it lowers latency; sorted by the milliseconds it
//! saves, each with the typed change that realises it (front ends render it
//! as flags, a schedule-config line or a description).

use super::roundtrips::{round_trips, Out};
use super::runs::RunRow;
use crate::cost::HardwareProfile;
use crate::graph::{transform, Graph};
use crate::sim::config::Split;
use crate::sim::{
    prepare_graph, ActivationDtype, EvictionPolicy, RecomputeSpec, Runner, SimConfig, SolveEach,
    WeightMode,
};
use crate::trace::EventKind;
use crate::units::fmt_bytes;
use crate::Result;
use serde::{Deserialize, Serialize};

/// What a suggestion changes, typed; `kind` names it in JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Change {
    /// Keep a tensor resident (never evicted).
    Pin {
        tensor: String,
    },
    /// Another on-chip capacity (hardware, not a schedule choice).
    Capacity {
        bytes: u64,
    },
    Policy {
        policy: EvictionPolicy,
    },
    Prefetch {
        distance: usize,
    },
    Weights {
        mode: WeightMode,
    },
    /// fp16 activations.
    Fp16,
    /// Fuse conv/matmul + elementwise chains.
    Fuse,
    /// Recompute these tensors instead of reloading them.
    Recompute {
        tensors: Vec<String>,
    },
    /// A memory-aware op order.
    Reorder {
        order: transform::OrderSpec,
    },
    /// Another number of cores on the bus, spread by `split` (hardware:
    /// the count is the profile's, the split the schedule's).
    Cores {
        count: u32,
        split: Split,
    },
    /// Another way to spread the run over the same cores.
    Split {
        split: Split,
    },
}

/// The kind of a [`Change`], for sorting, filtering and labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Pin,
    Capacity,
    Policy,
    Prefetch,
    Weights,
    Fp16,
    Fuse,
    Recompute,
    Reorder,
    Cores,
    Split,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Pin => "pin",
            ChangeKind::Capacity => "capacity",
            ChangeKind::Policy => "policy",
            ChangeKind::Prefetch => "prefetch",
            ChangeKind::Weights => "weights",
            ChangeKind::Fp16 => "fp16",
            ChangeKind::Fuse => "fuse",
            ChangeKind::Recompute => "recompute",
            ChangeKind::Reorder => "reorder",
            ChangeKind::Cores => "cores",
            ChangeKind::Split => "split",
        }
    }
}

impl Change {
    pub fn kind(&self) -> ChangeKind {
        match self {
            Change::Pin { .. } => ChangeKind::Pin,
            Change::Capacity { .. } => ChangeKind::Capacity,
            Change::Policy { .. } => ChangeKind::Policy,
            Change::Prefetch { .. } => ChangeKind::Prefetch,
            Change::Weights { .. } => ChangeKind::Weights,
            Change::Fp16 => ChangeKind::Fp16,
            Change::Fuse => ChangeKind::Fuse,
            Change::Recompute { .. } => ChangeKind::Recompute,
            Change::Reorder { .. } => ChangeKind::Reorder,
            Change::Cores { .. } => ChangeKind::Cores,
            Change::Split { .. } => ChangeKind::Split,
        }
    }

    /// The schedule-config (SCHED.toml) fragment that makes this change, or
    /// `None` for hardware changes a schedule config cannot express.
    pub fn schedule_file(&self) -> Option<crate::sim::ScheduleFile> {
        use crate::sim::ScheduleFile;
        let f = ScheduleFile::default();
        Some(match self {
            Change::Pin { tensor } => ScheduleFile {
                pins: vec![tensor.clone()],
                ..f
            },
            Change::Capacity { .. } => return None,
            Change::Policy { policy } => ScheduleFile {
                policy: Some(*policy),
                ..f
            },
            Change::Prefetch { distance } => ScheduleFile {
                prefetch_distance: Some(*distance),
                ..f
            },
            Change::Weights { mode } => ScheduleFile {
                weights: Some(*mode),
                ..f
            },
            Change::Fp16 => ScheduleFile {
                dtype: Some(ActivationDtype::Fp16),
                ..f
            },
            Change::Fuse => ScheduleFile {
                fuse: Some(true),
                ..f
            },
            Change::Recompute { tensors } => ScheduleFile {
                recompute: Some(RecomputeSpec::Tensors(tensors.clone())),
                ..f
            },
            Change::Reorder { order } => ScheduleFile {
                order: Some(order.clone()),
                ..f
            },
            Change::Cores { .. } => return None,
            Change::Split { split } => ScheduleFile {
                split: Some(*split),
                ..f
            },
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Suggestion {
    #[serde(flatten)]
    pub change: Change,
    pub description: String,
    pub gain_ns: i64,
    pub gain_pct: f64,
    pub run: RunRow,
    /// The baseline config with this change applied, when a schedule config
    /// can express it (everything but hardware changes).
    #[serde(skip)]
    pub sim_config: Option<SimConfig>,
}

impl Suggestion {
    pub fn kind(&self) -> ChangeKind {
        self.change.kind()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Suggestions {
    pub baseline: RunRow,
    pub suggestions: Vec<Suggestion>,
}

pub use crate::graph::transform::to_fp16;

/// Gains at or below this are not listed: 0.1 % of the baseline latency,
/// and at least a microsecond (the cost model's own rounding is far below;
/// a change worth making saves more).
pub fn noise_floor_ns(latency_ns: u64) -> u64 {
    (latency_ns / 1000).max(1000)
}

/// Re-simulates candidate changes of `cfg` on `hw` and returns the ones
/// that save more than [`noise_floor_ns`].
pub fn suggest(g: &Graph, hw: &HardwareProfile, cfg: &SimConfig) -> Result<Suggestions> {
    let cancel = crate::cancel::Cancel::never();
    let runner = Runner {
        cancel: &cancel,
        planner: &SolveEach::default(),
    };
    suggest_with(g, hw, cfg, runner, &|_, _| {})
}

/// [`suggest`] through `runner` (stopped between candidates, and inside
/// each, once its token fires; planned runs take its planner's plans),
/// calling `progress(done, candidates)` as candidates finish.
pub fn suggest_with(
    g: &Graph,
    hw: &HardwareProfile,
    cfg: &SimConfig,
    runner: Runner,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Suggestions> {
    let simulate = |g: &Graph, hw: &HardwareProfile, c: &SimConfig| runner.simulate(g, hw, c);
    // A candidate whose row is all that is read keeps no trace.
    let summarise = |g: &Graph, hw: &HardwareProfile, c: &SimConfig| runner.summarise(g, hw, c);
    let base_tr = simulate(g, hw, cfg)?;
    let baseline = RunRow::from_trace(&base_tr);
    let base_lat = baseline.latency_ns as i64;
    let mut out: Vec<Suggestion> = Vec::new();
    let floor = noise_floor_ns(baseline.latency_ns) as i64;
    let total = candidates(cfg, hw, &baseline);
    let mut done = 0;
    let mut consider =
        |change: Change, description: String, run: RunRow, sim_config: Option<SimConfig>| {
            done += 1;
            progress(done.min(total), total);
            let gain = base_lat - run.latency_ns as i64;
            if gain > floor {
                out.push(Suggestion {
                    change,
                    description,
                    gain_ns: gain,
                    gain_pct: gain as f64 * 100.0 / base_lat.max(1) as f64,
                    run,
                    sim_config,
                });
            }
        };
    // Pin the evicted tensors that move the most, oscillating ones first
    // (a tensor that only streams did not fit beside its op's operands:
    // pinning cannot keep it).
    let ledger = crate::trace::ledger::Ledger::of(&base_tr);
    let mut trips: Vec<_> = round_trips(&base_tr, &ledger)
        .into_iter()
        .filter(|t| t.trips.iter().any(|r| r.out == Out::Evicted))
        .collect();
    trips.sort_by(|a, b| {
        b.oscillating
            .cmp(&a.oscillating)
            .then(b.bytes_moved.cmp(&a.bytes_moved))
            .then(a.tensor.cmp(&b.tensor))
    });
    // A multi-core trace names core c's tensors `core{c}/NAME`; a pin
    // names the graph's tensor (kept on every core).
    let multi = base_tr.summary.cores > 1;
    let graph_name = |n: &str| -> String {
        if multi {
            crate::sim::cores::graph_name(n).to_string()
        } else {
            n.to_string()
        }
    };
    let mut pinned: Vec<String> = Vec::new();
    for t in trips.iter() {
        if pinned.len() == 5 {
            break;
        }
        let name = graph_name(&t.name);
        if cfg.pins.contains(&name) || pinned.contains(&name) {
            continue;
        }
        pinned.push(name.clone());
        let mut c = cfg.clone();
        c.pins.push(name.clone());
        let r = RunRow::from_trace(&summarise(g, hw, &c)?);
        let what = if t.oscillating {
            "oscillating"
        } else {
            "moved"
        };
        consider(
            Change::Pin {
                tensor: name.clone(),
            },
            format!(
                "pin {} ({}, {what} out {}, {} of spill traffic)",
                name,
                fmt_bytes(t.bytes),
                crate::units::count(t.trips.len() as u64, "time"),
                fmt_bytes(t.bytes_moved)
            ),
            r,
            Some(c),
        );
    }
    // The smallest capacity that removes spill traffic: the same search
    // `whatif` prints as its knee.
    if baseline.traffic_bytes > 0 {
        if let Some(z) = super::whatif::zero_traffic_capacity_with(g, hw, cfg, runner)? {
            consider(
                Change::Capacity {
                    bytes: z.capacity_bytes,
                },
                format!(
                    "on-chip capacity {} (from {}): the smallest with no spill traffic (1 % less moves {})",
                    crate::units::fmt_bytes_precise(z.capacity_bytes),
                    crate::units::fmt_bytes_precise(hw.memory.capacity.0),
                    fmt_bytes(z.below_traffic_bytes)
                ),
                z.run.clone(),
                None,
            );
        }
    }
    // Another policy (the planned one says how much less it moves).
    let base_traffic = baseline.traffic_bytes;
    for p in [
        EvictionPolicy::Lru,
        EvictionPolicy::Belady,
        EvictionPolicy::Lifetime,
        EvictionPolicy::Planned,
    ] {
        if p != cfg.policy {
            let c = SimConfig {
                policy: p,
                ..cfg.clone()
            };
            let r = RunRow::from_trace(&summarise(g, hw, &c)?);
            let mut description = format!("switch policy {} -> {p}", cfg.policy);
            if p == EvictionPolicy::Planned && r.traffic_bytes < base_traffic {
                description += &format!(
                    ": a planner would move {} less",
                    fmt_bytes(base_traffic - r.traffic_bytes)
                );
            }
            consider(Change::Policy { policy: p }, description, r, Some(c));
        }
    }
    // Prefetch distance (async DMA only).
    if hw.dma.async_dma {
        let current = cfg.prefetch_distance.unwrap_or(hw.dma.prefetch_distance);
        for d in [0usize, 1, 2, 4, 8] {
            if d != current {
                let c = SimConfig {
                    prefetch_distance: Some(d),
                    ..cfg.clone()
                };
                let r = RunRow::from_trace(&summarise(g, hw, &c)?);
                consider(
                    Change::Prefetch { distance: d },
                    format!(
                        "prefetch distance {current} -> {}",
                        crate::units::count(d as u64, "op")
                    ),
                    r,
                    Some(c),
                );
            }
        }
    }
    // Weights kept resident instead of streamed per use.
    if cfg.weights == WeightMode::Stream {
        let c = SimConfig {
            weights: WeightMode::Resident,
            ..cfg.clone()
        };
        let r = RunRow::from_trace(&summarise(g, hw, &c)?);
        consider(
            Change::Weights {
                mode: WeightMode::Resident,
            },
            "keep weights resident between uses instead of streaming them per op".into(),
            r,
            Some(c),
        );
    }
    // fp16 activations: half the bytes.
    if cfg.dtype != ActivationDtype::Fp16 {
        let c = SimConfig {
            dtype: ActivationDtype::Fp16,
            ..cfg.clone()
        };
        let r = RunRow::from_trace(&summarise(g, hw, &c)?);
        consider(
            Change::Fp16,
            "fp16 activations (f32 activation bytes halved)".into(),
            r,
            Some(c),
        );
    }
    // Fusion of conv/matmul + elementwise chains.
    if !cfg.fuse {
        let (_, fusions) = transform::fuse(g)?;
        if !fusions.is_empty() {
            let c = SimConfig {
                fuse: true,
                ..cfg.clone()
            };
            let r = RunRow::from_trace(&summarise(g, hw, &c)?);
            let bytes: u64 = fusions.iter().map(|f| f.removed_bytes).sum();
            consider(
                Change::Fuse,
                format!(
                    "fuse {} conv/matmul+elementwise chains (e.g. {}): {} of intermediates stay on chip",
                    fusions.len(),
                    fusions[0].name,
                    fmt_bytes(bytes)
                ),
                r,
                Some(c),
            );
        }
    }
    // Recompute instead of reload, where the producer's inputs are resident.
    if cfg.recompute.is_off() && baseline.reloaded_bytes > 0 {
        let all = SimConfig {
            recompute: RecomputeSpec::All(true),
            ..cfg.clone()
        };
        let tr = simulate(g, hw, &all)?;
        let mut names: Vec<String> = Vec::new();
        for e in tr.events.iter().filter(|e| e.kind == EventKind::Recompute) {
            if let Some(t) = tr.tensors.get(e.tensor) {
                let name = graph_name(t.name);
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        if !names.is_empty() {
            let c = SimConfig {
                recompute: RecomputeSpec::Tensors(names.clone()),
                ..cfg.clone()
            };
            let tr = summarise(g, hw, &c)?;
            let shown: Vec<&str> = names.iter().take(3).map(String::as_str).collect();
            consider(
                Change::Recompute {
                    tensors: names.clone(),
                },
                format!(
                    "recompute {} instead of reloading ({}, {} not reloaded)",
                    shown.join(", ") + if names.len() > 3 { ", ..." } else { "" },
                    crate::units::count(names.len() as u64, "tensor"),
                    fmt_bytes(tr.summary.recompute_saved_bytes)
                ),
                RunRow::from_trace(&tr),
                Some(c),
            );
        }
    }
    // A memory-aware op order.
    if cfg.order.is_file() {
        let c = SimConfig {
            order: transform::OrderSpec::Named(transform::NamedOrder::Memory),
            ..cfg.clone()
        };
        let h = prepare_graph(g, &c)?;
        let r = RunRow::from_trace(&summarise(g, hw, &c)?);
        let before = prepare_graph(g, cfg)?;
        let moved = before
            .ops
            .iter()
            .zip(h.ops.iter())
            .filter(|(a, b)| a.name != b.name)
            .count();
        consider(
            Change::Reorder {
                order: c.order.clone(),
            },
            format!(
                "memory-aware op order ({} move): peak live {} -> {}",
                crate::units::count(moved as u64, "op"),
                fmt_bytes(baseline.peak_live_bytes),
                fmt_bytes(crate::graph::Liveness::compute(&h).peak_bytes)
            ),
            r,
            Some(c),
        );
    }
    // On several cores: the other split, and half or twice the cores.
    for (change, h, c) in core_changes(g, hw, cfg)? {
        let tr = simulate(g, &h, &c)?;
        let description = describe_cores(&change, hw, cfg, &tr);
        let sim_config = matches!(change, Change::Split { .. }).then_some(c);
        consider(change, description, RunRow::from_trace(&tr), sim_config);
    }
    out.sort_by(|a, b| {
        b.gain_ns
            .cmp(&a.gain_ns)
            .then(a.kind().as_str().cmp(b.kind().as_str()))
    });
    Ok(Suggestions {
        baseline,
        suggestions: out,
    })
}

/// How many candidates [`suggest_with`] re-simulates at most (for its
/// progress: pins of the five busiest, the capacity search, three other
/// policies, prefetch distances, resident weights, fp16, fusion,
/// recompute, an op order, core changes).
fn candidates(cfg: &SimConfig, hw: &HardwareProfile, baseline: &RunRow) -> usize {
    let mut n = 5 + usize::from(baseline.traffic_bytes > 0) + 3;
    if hw.dma.async_dma {
        n += 4;
    }
    n += usize::from(cfg.weights == WeightMode::Stream);
    n += usize::from(cfg.dtype != ActivationDtype::Fp16);
    n += usize::from(!cfg.fuse);
    n += usize::from(cfg.recompute.is_off() && baseline.reloaded_bytes > 0);
    // Several cores: the other split, half the cores, and twice them
    // where that many may be declared (`core_changes`).
    let k = hw.cores.count;
    if k > 1 {
        n += 2 + usize::from(k * 2 <= crate::cost::hardware::MAX_CORES);
    }
    n + usize::from(cfg.order.is_file())
}

/// The core changes worth re-simulating on a multi-core run: the other
/// split on the same cores, then half and twice the cores (by the same
/// split where the batch divides, else by graph), each with the hardware
/// and config it runs on. None on one core: a core count is the device's,
/// and a run on one core has said it has one.
fn core_changes(
    g: &Graph,
    hw: &HardwareProfile,
    cfg: &SimConfig,
) -> Result<Vec<(Change, HardwareProfile, SimConfig)>> {
    let n = hw.cores.count;
    if n < 2 {
        return Ok(Vec::new());
    }
    let other = match cfg.split {
        Split::Batch => Split::Graph,
        Split::Graph => Split::Batch,
    };
    let prepared = prepare_graph(g, cfg)?;
    let runs = |h: &HardwareProfile, c: &SimConfig| -> bool {
        crate::sim::cores::core_graph(&prepared, h, c).is_ok()
    };
    let mut out = Vec::new();
    let c = SimConfig {
        split: other,
        ..cfg.clone()
    };
    if runs(hw, &c) {
        out.push((Change::Split { split: other }, hw.clone(), c));
    }
    for k in [n / 2, n * 2] {
        if k > crate::cost::hardware::MAX_CORES {
            continue;
        }
        let h = hw.clone().with_cores(k)?;
        let split = [cfg.split, Split::Graph].into_iter().find(|&split| {
            runs(
                &h,
                &SimConfig {
                    split,
                    ..cfg.clone()
                },
            )
        });
        if let Some(split) = split {
            let c = SimConfig {
                split,
                ..cfg.clone()
            };
            out.push((Change::Cores { count: k, split }, h, c));
        }
    }
    Ok(out)
}

/// What a core change does, in one line: the split and how much of the
/// new run's stall the shared bus costs.
fn describe_cores(
    change: &Change,
    hw: &HardwareProfile,
    cfg: &SimConfig,
    tr: &crate::trace::Trace,
) -> String {
    let s = &tr.summary;
    let bus = if s.cores > 1 {
        format!(
            "; {} of its {} stall is waiting for the shared bus",
            crate::units::fmt_ms(s.contention_ns),
            crate::units::fmt_ms(s.stall_ns)
        )
    } else {
        String::new()
    };
    match change {
        Change::Split { split } => format!(
            "split the run by {split} instead of {} on {} cores{bus}",
            cfg.split, hw.cores.count
        ),
        Change::Cores { count: 1, .. } => {
            format!("1 core (from {}): no bus to share", hw.cores.count)
        }
        Change::Cores { count, split } => format!(
            "{count} cores (from {}), split by {split}{bus}",
            hw.cores.count
        ),
        _ => String::new(),
    }
}

/// Rebuilds what a simulator trace was made from (graph, hardware, config),
/// so `suggest TRACE` can re-simulate without the model file.
pub fn inputs_of_trace(tr: &crate::trace::Trace) -> Result<(Graph, HardwareProfile, SimConfig)> {
    use crate::trace::{Producer, Source};
    use crate::Error;
    let (hw, cfg) = match &tr.meta.producer {
        Producer::Simulator { .. } if tr.source == Source::Simulator => {
            match crate::sim::settings::settings(&tr.meta.producer) {
                Some(s) => s,
                None => {
                    return Err(Error::Config(
                        "suggestions re-simulate: this trace does not record a hardware profile and config this version reads".into(),
                    ))
                }
            }
        }
        Producer::Instrumented(i) => {
            // Say what is missing: the run's hardware and schedule, which a
            // measured profile does not record, linked model or not.
            // An ExecuTorch plan or profile comes from a program (.pte).
            let ext = match i.importer {
                crate::trace::Importer::Executorch | crate::trace::Importer::Etdump => "pte",
                _ => "onnx",
            };
            let model = i
                .model
                .as_deref()
                .map(|m| format!("{m}.{ext}"))
                .unwrap_or_else(|| format!("MODEL.{ext}"));
            return Err(Error::Unsupported(format!(
                "a measured profile records no hardware or schedule to re-simulate; simulate the model with its measured op times: spillscope view {model} --capacity SIZE --calibrate PROFILE"
            )));
        }
        Producer::Simulator { .. } => {
            return Err(Error::Config(
                "suggestions re-simulate a simulator trace; this one records a simulation but its source is not `simulator`".into(),
            ))
        }
        Producer::NpuCase(_) => {
            return Err(Error::Config(
                "suggestions re-simulate a graph; an NPU case has its own solver (`spillscope npu solve`)".into(),
            ))
        }
        Producer::Unknown { .. } => {
            return Err(Error::Config(
                "suggestions re-simulate: this trace does not record a hardware profile and config this version reads".into(),
            ))
        }
    };
    // The rebuilt graph already has the trace's rewrites applied.
    Ok((tr.graph()?, hw, cfg.without_graph_transforms()))
}

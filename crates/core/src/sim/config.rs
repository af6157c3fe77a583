//! Knobs of one simulation run that are about scheduling, not hardware.

use super::EvictionPolicy;
pub use crate::graph::transform::{NamedOrder, OrderSpec};
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// How weights (initializers) use on-chip memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum WeightMode {
    /// Loaded from DRAM for each op that uses them, freed after it.
    #[default]
    Stream,
    /// Loaded on first use and kept like activations (evictable, never written back).
    Resident,
    /// Not modelled: no space, no traffic.
    Ignore,
}

impl FromStr for WeightMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "stream" => Ok(WeightMode::Stream),
            "resident" => Ok(WeightMode::Resident),
            "ignore" => Ok(WeightMode::Ignore),
            _ => Err(format!(
                "unknown weight mode {s:?} (use stream, resident or ignore)"
            )),
        }
    }
}

/// The element type activations are stored in (weights keep theirs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ActivationDtype {
    /// As the model declares.
    #[default]
    Native,
    /// f32 activations stored as fp16 (bytes halved).
    #[serde(alias = "f16")]
    Fp16,
}

impl ActivationDtype {
    pub fn is_native(&self) -> bool {
        *self == ActivationDtype::Native
    }
}

impl FromStr for ActivationDtype {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "native" | "f32" => Ok(ActivationDtype::Native),
            "fp16" | "f16" => Ok(ActivationDtype::Fp16),
            _ => Err(format!("unknown dtype {s:?} (use native or fp16)")),
        }
    }
}

/// Which evicted tensors may be recomputed from their producer's inputs
/// instead of reloaded: `true`/`false`, or a list of tensor names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RecomputeSpec {
    All(bool),
    Tensors(Vec<String>),
}

impl Default for RecomputeSpec {
    fn default() -> Self {
        RecomputeSpec::All(false)
    }
}

impl RecomputeSpec {
    pub fn allows(&self, name: &str) -> bool {
        match self {
            RecomputeSpec::All(b) => *b,
            RecomputeSpec::Tensors(v) => v.iter().any(|n| n == name),
        }
    }
    pub fn is_off(&self) -> bool {
        match self {
            RecomputeSpec::All(b) => !*b,
            RecomputeSpec::Tensors(v) => v.is_empty(),
        }
    }
}

/// How a run spreads over several cores (`split`, `--split`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Split {
    /// Each core runs the whole graph on its share of the batch (data
    /// parallel).
    #[default]
    Batch,
    /// Each op runs on one core, placed by a list schedule over the
    /// dependency graph (or the config's `placement`); a tensor used on
    /// another core than its producer's crosses through DRAM.
    Graph,
}

impl Split {
    pub fn is_batch(&self) -> bool {
        *self == Split::Batch
    }

    /// The name the config and `--split` take.
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Batch => "batch",
            Split::Graph => "graph",
        }
    }
}

impl std::fmt::Display for Split {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Split {
    type Err = String;
    fn from_str(s: &str) -> Result<Split, String> {
        match s.trim() {
            "batch" => Ok(Split::Batch),
            "graph" => Ok(Split::Graph),
            other => Err(format!("unknown split {other:?} (batch or graph)")),
        }
    }
}

/// Everything about a run that is the scheduler's choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimConfig {
    pub policy: EvictionPolicy,
    pub weights: WeightMode,
    /// Tensor names kept resident (never evicted).
    pub pins: Vec<String>,
    /// Overrides the hardware profile's prefetch distance.
    pub prefetch_distance: Option<usize>,
    /// `(tensor, step)`: the tensor stays live through op `step` at least
    /// (runtimes that free late, e.g. at subgraph end; `--free-at TRACE`).
    #[serde(default)]
    pub free_at: Vec<(String, usize)>,
    /// Fuse producer→elementwise chains (conv+bn+relu...): intermediates
    /// stay on chip. (The rewrites are written only when set, as traces
    /// from before they existed have them.)
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fuse: bool,
    #[serde(default, skip_serializing_if = "ActivationDtype::is_native")]
    pub dtype: ActivationDtype,
    /// The op order: file, memory-aware, or the user's overrides.
    #[serde(default, skip_serializing_if = "OrderSpec::is_file")]
    pub order: OrderSpec,
    /// Recompute evicted tensors instead of reloading them, where the
    /// producer's inputs are resident and recomputing is quicker.
    #[serde(default, skip_serializing_if = "RecomputeSpec::is_off")]
    pub recompute: RecomputeSpec,
    /// How several cores share the graph (one core: ignored).
    #[serde(default, skip_serializing_if = "Split::is_batch")]
    pub split: Split,
    /// `--split graph`: ops pinned to a core (op name -> core index); the
    /// list schedule places the rest.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub placement: std::collections::BTreeMap<String, u32>,
    /// Measured op durations by op name (`--calibrate`), used instead of the
    /// roofline estimate.
    #[serde(skip)]
    pub measured_ns: Option<std::sync::Arc<std::collections::HashMap<String, u64>>>,
    /// The `planned` policy's plan when the caller already solved it (for
    /// this graph, rewritten, at this capacity); solved in the run if not.
    #[serde(skip)]
    pub plan: Option<std::sync::Arc<super::plan::Residency>>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            policy: EvictionPolicy::Lru,
            weights: WeightMode::Stream,
            pins: Vec::new(),
            prefetch_distance: None,
            free_at: Vec::new(),
            fuse: false,
            dtype: ActivationDtype::Native,
            order: OrderSpec::default(),
            recompute: RecomputeSpec::default(),
            split: Split::Batch,
            placement: Default::default(),
            measured_ns: None,
            plan: None,
        }
    }
}

impl SimConfig {
    pub fn with_policy(policy: EvictionPolicy) -> Self {
        SimConfig {
            policy,
            ..Default::default()
        }
    }

    /// Does this config rewrite the graph (fusion, dtype, order)?
    pub fn transforms_graph(&self) -> bool {
        self.fuse || self.dtype != ActivationDtype::Native || !self.order.is_file()
    }

    /// The same config without graph rewrites (for a graph that already has
    /// them applied, such as one rebuilt from a trace).
    pub fn without_graph_transforms(&self) -> SimConfig {
        SimConfig {
            fuse: false,
            dtype: ActivationDtype::Native,
            order: OrderSpec::default(),
            ..self.clone()
        }
    }
}

/// The schedule config file (`SCHED.toml`) a user edits while the explorer
/// watches it. Every key is optional; unknown keys are errors naming the key.
///
/// ```toml
/// policy = "lru"            # ideal | lru | belady | lifetime | planned
/// weights = "stream"        # stream | resident | ignore
/// pins = ["encoder_out"]    # tensors never evicted
/// prefetch_distance = 2     # ops ahead (async DMA only)
/// fuse = true               # conv+bn+relu style chains keep intermediates on chip
/// dtype = "fp16"            # native | fp16 (activations)
/// order = "memory"          # file | memory | ["op_a", "op_b", ...] (relative order)
/// recompute = true          # or ["tensor", ...]: recompute instead of reload
/// split = "graph"           # batch | graph: how several cores share the graph
/// [free_at]                 # runtimes that free late: tensor -> last step
/// "layer1/out" = 40
/// [placement]               # split = "graph": op -> core
/// "decoder/attn" = 1
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleFile {
    pub policy: Option<EvictionPolicy>,
    pub weights: Option<WeightMode>,
    #[serde(default)]
    pub pins: Vec<String>,
    pub prefetch_distance: Option<usize>,
    #[serde(default)]
    pub free_at: std::collections::BTreeMap<String, usize>,
    pub fuse: Option<bool>,
    pub dtype: Option<ActivationDtype>,
    pub order: Option<OrderSpec>,
    pub recompute: Option<RecomputeSpec>,
    pub split: Option<Split>,
    #[serde(default)]
    pub placement: std::collections::BTreeMap<String, u32>,
}

impl ScheduleFile {
    pub fn load(path: &std::path::Path) -> crate::Result<ScheduleFile> {
        let text = crate::input::read_text(path)?;
        toml::from_str(&text)
            .map_err(|e| crate::Error::toml(path, "schedule config (TOML)", &text, &e))
    }

    /// The file that reproduces `cfg` (the inverse of [`ScheduleFile::apply`]).
    pub fn from_config(cfg: &SimConfig) -> ScheduleFile {
        ScheduleFile {
            policy: Some(cfg.policy),
            weights: Some(cfg.weights),
            pins: cfg.pins.clone(),
            prefetch_distance: cfg.prefetch_distance,
            free_at: cfg.free_at.iter().cloned().collect(),
            fuse: cfg.fuse.then_some(true),
            dtype: (cfg.dtype != ActivationDtype::Native).then_some(cfg.dtype),
            order: (!cfg.order.is_file()).then(|| cfg.order.clone()),
            recompute: (!cfg.recompute.is_off()).then(|| cfg.recompute.clone()),
            split: (!cfg.split.is_batch()).then_some(cfg.split),
            placement: cfg.placement.clone(),
        }
    }

    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_default()
    }

    /// Applies the file over `base` (file values win over defaults; flags
    /// are applied by the caller after this).
    pub fn apply(&self, mut base: SimConfig) -> SimConfig {
        if let Some(p) = self.policy {
            base.policy = p;
        }
        if let Some(w) = self.weights {
            base.weights = w;
        }
        for p in &self.pins {
            if !base.pins.contains(p) {
                base.pins.push(p.clone());
            }
        }
        if let Some(d) = self.prefetch_distance {
            base.prefetch_distance = Some(d);
        }
        for (k, v) in &self.free_at {
            base.free_at.push((k.clone(), *v));
        }
        if let Some(f) = self.fuse {
            base.fuse = f;
        }
        if let Some(d) = self.dtype {
            base.dtype = d;
        }
        if let Some(o) = &self.order {
            base.order = o.clone();
        }
        if let Some(r) = &self.recompute {
            base.recompute = r.clone();
        }
        if let Some(s) = self.split {
            base.split = s;
        }
        for (op, core) in &self.placement {
            base.placement.insert(op.clone(), *core);
        }
        base
    }
}

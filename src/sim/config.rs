//! Knobs of one simulation run that are about scheduling, not hardware.

use super::EvictionPolicy;
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
    /// Measured op durations by op name (`--calibrate`), used instead of the
    /// roofline estimate.
    #[serde(skip)]
    pub measured_ns: Option<std::sync::Arc<std::collections::HashMap<String, u64>>>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            policy: EvictionPolicy::Lru,
            weights: WeightMode::Stream,
            pins: Vec::new(),
            prefetch_distance: None,
            free_at: Vec::new(),
            measured_ns: None,
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
}

/// The schedule config file (`SCHED.toml`) a user edits while the explorer
/// watches it. Every key is optional; unknown keys are errors naming the key.
///
/// ```toml
/// policy = "lru"            # ideal | lru | belady | lifetime
/// weights = "stream"        # stream | resident | ignore
/// pins = ["encoder_out"]    # tensors never evicted
/// prefetch_distance = 2     # ops ahead (async DMA only)
/// [free_at]                 # runtimes that free late: tensor -> last step
/// "layer1/out" = 40
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
}

impl ScheduleFile {
    pub fn load(path: &std::path::Path) -> crate::Result<ScheduleFile> {
        let text = std::fs::read_to_string(path).map_err(|e| crate::Error::io(path, e))?;
        toml::from_str(&text).map_err(|e| {
            crate::Error::parse(path, "schedule config (TOML)", e.message().to_string())
        })
    }

    /// The file that reproduces `cfg` (the inverse of [`ScheduleFile::apply`]).
    pub fn from_config(cfg: &SimConfig) -> ScheduleFile {
        ScheduleFile {
            policy: Some(cfg.policy),
            weights: Some(cfg.weights),
            pins: cfg.pins.clone(),
            prefetch_distance: cfg.prefetch_distance,
            free_at: cfg.free_at.iter().cloned().collect(),
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
        base
    }
}

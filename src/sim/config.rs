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
    /// Extra steps a tensor stays live past its last use (`free_at` overrides).
    #[serde(default)]
    pub free_at: Vec<(String, usize)>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            policy: EvictionPolicy::Lru,
            weights: WeightMode::Stream,
            pins: Vec::new(),
            prefetch_distance: None,
            free_at: Vec::new(),
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

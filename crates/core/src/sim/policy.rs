//! Which resident tensor to push out when a request does not fit.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Victim choice. All but `ideal` respect the capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum EvictionPolicy {
    /// Infinite capacity: the upper bound on speed, never spills.
    Ideal,
    /// Least recently used: the common runtime default.
    #[default]
    Lru,
    /// Furthest next use (Belady's MIN on unit sizes).
    Belady,
    /// The seed's global interval planning: largest size x time to next use.
    Lifetime,
    /// Evictions, reloads and streams from a whole-schedule solve (the
    /// integer program behind the bound): victims are the tensors the plan
    /// keeps off chip, operands it leaves in DRAM stream, weights and graph
    /// inputs take only free room. Belady where the plan is silent.
    Planned,
}

impl EvictionPolicy {
    pub const ALL: [EvictionPolicy; 5] = [
        EvictionPolicy::Ideal,
        EvictionPolicy::Lru,
        EvictionPolicy::Belady,
        EvictionPolicy::Lifetime,
        EvictionPolicy::Planned,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            EvictionPolicy::Ideal => "ideal",
            EvictionPolicy::Lru => "lru",
            EvictionPolicy::Belady => "belady",
            EvictionPolicy::Lifetime => "lifetime",
            EvictionPolicy::Planned => "planned",
        }
    }

    /// Eviction preference: higher evicts first.
    pub fn score(self, size: u64, last_access: u64, next_use: u64, now: u64) -> f64 {
        match self {
            EvictionPolicy::Ideal => 0.0,
            EvictionPolicy::Lru => -(last_access as f64),
            EvictionPolicy::Belady | EvictionPolicy::Planned => next_use as f64,
            EvictionPolicy::Lifetime => size as f64 * (next_use.saturating_sub(now)) as f64,
        }
    }

    /// Parses `lru,belady` or `all`.
    pub fn parse_list(text: &str) -> Result<Vec<EvictionPolicy>, String> {
        let mut v = Vec::new();
        for part in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if part == "all" {
                for p in Self::ALL {
                    if !v.contains(&p) {
                        v.push(p);
                    }
                }
            } else {
                let p: EvictionPolicy = part.parse()?;
                if !v.contains(&p) {
                    v.push(p);
                }
            }
        }
        if v.is_empty() {
            return Err("no policy given".into());
        }
        Ok(v)
    }
}

impl FromStr for EvictionPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "ideal" => EvictionPolicy::Ideal,
            "lru" => EvictionPolicy::Lru,
            "belady" | "furthest" | "furthest-next-use" | "min" => EvictionPolicy::Belady,
            "lifetime" | "global-interval" | "interval" => EvictionPolicy::Lifetime,
            "planned" | "plan" => EvictionPolicy::Planned,
            _ => {
                return Err(format!(
                    "unknown policy {s:?} (use ideal, lru, belady, lifetime, planned or all)"
                ))
            }
        })
    }
}

impl fmt::Display for EvictionPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

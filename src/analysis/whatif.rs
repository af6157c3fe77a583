//! What-if sweeps: the same graph re-simulated over a grid of capacities,
//! bandwidths and policies, in parallel, with the knee of the capacity curve
//! called out ("at 48 MiB spills drop to 0; beyond it no gain").

use super::runs::RunRow;
use crate::cost::HardwareProfile;
use crate::graph::Graph;
use crate::sim::{simulate, EvictionPolicy, SimConfig};
use crate::units::{fmt_bytes, parse_bandwidth, parse_size};
use crate::{Error, Result};
use rayon::prelude::*;
use serde::Serialize;

/// Parses `16MiB..64MiB:4MiB` (inclusive range with step) or `8MiB,16MiB`.
pub fn parse_size_range(text: &str) -> Result<Vec<u64>> {
    parse_range(text, |s| {
        parse_size(s).map(|v| v as f64).map_err(Error::from)
    })
    .map(|v| v.into_iter().map(|x| x as u64).collect())
}

/// Parses `20GB/s..60GB/s:10GB/s` or `30GB/s,60GB/s`.
pub fn parse_bandwidth_range(text: &str) -> Result<Vec<f64>> {
    parse_range(text, |s| parse_bandwidth(s).map_err(Error::from))
}

fn parse_range(text: &str, one: impl Fn(&str) -> Result<f64>) -> Result<Vec<f64>> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match part.split_once("..") {
            Some((a, rest)) => {
                let (b, step) = rest.split_once(':').ok_or_else(|| {
                    Error::Config(format!("range {part:?} needs a step: A..B:STEP"))
                })?;
                let (a, b, step) = (one(a)?, one(b)?, one(step)?);
                if step <= 0.0 || b < a {
                    return Err(Error::Config(format!(
                        "range {part:?}: need A <= B and a positive step"
                    )));
                }
                let n = ((b - a) / step).floor() as usize;
                if n > 10_000 {
                    return Err(Error::Config(format!(
                        "range {part:?} has {n} points; at most 10,000"
                    )));
                }
                out.extend((0..=n).map(|i| a + i as f64 * step));
            }
            None => out.push(one(part)?),
        }
    }
    if out.is_empty() {
        return Err(Error::Config(format!("no values in {text:?}")));
    }
    Ok(out)
}

/// One point of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    pub capacity_bytes: u64,
    pub bandwidth: Option<f64>,
    pub policy: EvictionPolicy,
}

/// Every combination, capacity varying fastest.
pub fn grid(
    capacities: &[u64],
    bandwidths: &[Option<f64>],
    policies: &[EvictionPolicy],
) -> Vec<Point> {
    let mut v = Vec::new();
    for &policy in policies {
        for &bandwidth in bandwidths {
            for &capacity_bytes in capacities {
                v.push(Point {
                    capacity_bytes,
                    bandwidth,
                    policy,
                });
            }
        }
    }
    v
}

/// Simulates every point in parallel; `tick` is called as each finishes.
pub fn run(
    g: &Graph,
    hw: &HardwareProfile,
    base: &SimConfig,
    points: &[Point],
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<RunRow>> {
    points
        .par_iter()
        .map(|p| {
            let mut h = hw.clone().with_capacity(p.capacity_bytes)?;
            if let Some(b) = p.bandwidth {
                h = h.with_bandwidth(b);
            }
            let cfg = SimConfig {
                policy: p.policy,
                ..base.clone()
            };
            let tr = simulate(g, &h, &cfg)?;
            tick();
            Ok(RunRow::from_trace(&tr))
        })
        .collect()
}

/// The knee of one capacity curve (rows of one policy and bandwidth, in
/// capacity order).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Knee {
    pub policy: String,
    pub bandwidth: f64,
    /// Smallest capacity with no spill traffic at all, if any.
    pub zero_spill_capacity: Option<u64>,
    /// Smallest capacity within 1 % of the best latency of the curve.
    pub knee_capacity: u64,
    pub knee_latency_ns: u64,
    pub text: String,
}

pub fn knees(rows: &[RunRow]) -> Vec<Knee> {
    let mut keys: Vec<(String, u64)> = Vec::new();
    for r in rows {
        let k = (r.policy.clone(), r.read_bandwidth.to_bits());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .filter_map(|(policy, bw)| {
            let mut curve: Vec<&RunRow> = rows.iter().filter(|r| r.policy == policy && r.read_bandwidth.to_bits() == bw).collect();
            curve.sort_by_key(|r| r.capacity_bytes);
            let best = curve.iter().map(|r| r.latency_ns).min()?;
            let knee = curve.iter().find(|r| r.latency_ns as f64 <= best as f64 * 1.01)?;
            let zero = curve.iter().find(|r| r.traffic_bytes == 0).map(|r| r.capacity_bytes);
            let text = match zero {
                Some(z) => format!(
                    "{policy}: at {} spills drop to 0; beyond it no gain ({:.3} ms){}",
                    fmt_bytes(z),
                    best as f64 / 1e6,
                    if knee.capacity_bytes < z { format!("; within 1 % of that from {}", fmt_bytes(knee.capacity_bytes)) } else { String::new() }
                ),
                None => format!("{policy}: spills at every capacity tried; within 1 % of the best latency ({:.3} ms) from {}", best as f64 / 1e6, fmt_bytes(knee.capacity_bytes)),
            };
            Some(Knee { policy, bandwidth: f64::from_bits(bw), zero_spill_capacity: zero, knee_capacity: knee.capacity_bytes, knee_latency_ns: knee.latency_ns, text })
        })
        .collect()
}

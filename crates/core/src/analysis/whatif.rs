//! What-if sweeps: the same graph re-simulated over a grid of capacities,
//! bandwidths and policies, in parallel, with the knee of the capacity curve
//! called out ("at 48 MiB spills drop to 0; beyond it no gain"). The knee is
//! one search on the real simulator ([`zero_traffic_capacity`]), the same
//! one the capacity suggestion makes, so both print the same number.

use super::runs::RunRow;
use crate::cost::HardwareProfile;
use crate::graph::Graph;
use crate::sim::{EvictionPolicy, Runner, SimConfig, SolveEach};
use crate::units::{fmt_bytes, fmt_ms, parse_bandwidth, parse_size};
use crate::{Error, Result};
use rayon::prelude::*;
use serde::Serialize;

/// The runner of one-shot library calls: never cancelled, each plan
/// solved anew within the default budget.
macro_rules! default_runner {
    () => {
        Runner {
            cancel: &crate::cancel::Cancel::never(),
            planner: &SolveEach::default(),
        }
    };
}

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

/// Parses a list of core counts: `1,2,4` or `1..8:1` (each 1 or more).
pub fn parse_cores_range(text: &str) -> Result<Vec<u32>> {
    let v = parse_range(text, |s| {
        s.parse::<u32>()
            .map(f64::from)
            .map_err(|_| Error::Config(format!("{s:?} is not a core count (1, 2, ...)")))
    })?;
    v.into_iter()
        .map(|x| {
            let k = x.round() as u32;
            if k == 0 || k > crate::cost::hardware::MAX_CORES {
                Err(Error::Config(format!(
                    "{k} cores: from 1 to {}",
                    crate::cost::hardware::MAX_CORES
                )))
            } else {
                Ok(k)
            }
        })
        .collect()
}

/// One point of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    pub capacity_bytes: u64,
    pub bandwidth: Option<f64>,
    /// Cores on the bus (`whatif --cores`); `None`: the profile's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cores: Option<u32>,
    pub policy: EvictionPolicy,
}

/// Every combination, capacity varying fastest, on the profile's cores.
pub fn grid(
    capacities: &[u64],
    bandwidths: &[Option<f64>],
    policies: &[EvictionPolicy],
) -> Vec<Point> {
    grid_on_cores(capacities, bandwidths, &[None], policies)
}

/// Every combination, capacity varying fastest, then bandwidth, then
/// core count (`None`: the profile's), then policy.
pub fn grid_on_cores(
    capacities: &[u64],
    bandwidths: &[Option<f64>],
    cores: &[Option<u32>],
    policies: &[EvictionPolicy],
) -> Vec<Point> {
    let mut v = Vec::new();
    for &policy in policies {
        for &cores in cores {
            for &bandwidth in bandwidths {
                for &capacity_bytes in capacities {
                    v.push(Point {
                        capacity_bytes,
                        bandwidth,
                        cores,
                        policy,
                    });
                }
            }
        }
    }
    v
}

impl Point {
    /// The hardware of this point: `hw` at its capacity, bandwidth and
    /// core count.
    pub fn hardware(&self, hw: &HardwareProfile) -> Result<HardwareProfile> {
        let mut h = hw.clone().with_capacity(self.capacity_bytes)?;
        if let Some(b) = self.bandwidth {
            h = h.with_bandwidth(b);
        }
        if let Some(k) = self.cores {
            h = h.with_cores(k)?;
        }
        Ok(h)
    }
}

/// Simulates every point in parallel; `tick` is called as each finishes.
pub fn run(
    g: &Graph,
    hw: &HardwareProfile,
    base: &SimConfig,
    points: &[Point],
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<RunRow>> {
    run_with(g, hw, base, points, default_runner!(), tick)
}

/// [`run`] through `runner` (stopped once its token fires).
pub fn run_with(
    g: &Graph,
    hw: &HardwareProfile,
    base: &SimConfig,
    points: &[Point],
    runner: Runner,
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<RunRow>> {
    points
        .par_iter()
        .map(|p| {
            let h = p.hardware(hw)?;
            let cfg = SimConfig {
                policy: p.policy,
                ..base.clone()
            };
            let tr = runner.summarise(g, &h, &cfg)?;
            tick();
            Ok(RunRow::from_trace(&tr))
        })
        .collect()
}

/// How close the knee search gets: the capacity it reports has no spill
/// traffic and this fraction less has some.
pub const KNEE_TOLERANCE: f64 = 0.01;

/// The smallest capacity with no spill traffic, found by searching the
/// real simulator.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ZeroTraffic {
    /// Has no spill traffic.
    pub capacity_bytes: u64,
    /// [`KNEE_TOLERANCE`] less, which has some.
    pub below_bytes: u64,
    /// The traffic just below.
    pub below_traffic_bytes: u64,
    /// The run at the capacity.
    pub run: RunRow,
    /// Simulations the search took.
    pub simulations: usize,
}

/// The smallest capacity at which `cfg` on `hw` moves no spill traffic, to
/// within [`KNEE_TOLERANCE`]: found by bisection where the curve allows (it
/// is checked that the capacity [`KNEE_TOLERANCE`] below still spills, and
/// the search goes on below where fragmentation makes the curve bend back).
/// Deterministic: the same graph, hardware and config give the same answer
/// wherever it is asked (`whatif`, `suggest`). `None` for the ideal policy
/// or when even 256x the peak does not remove the traffic.
pub fn zero_traffic_capacity(
    g: &Graph,
    hw: &HardwareProfile,
    cfg: &SimConfig,
) -> Result<Option<ZeroTraffic>> {
    zero_traffic_capacity_with(g, hw, cfg, default_runner!())
}

/// [`zero_traffic_capacity`] through `runner`.
pub fn zero_traffic_capacity_with(
    g: &Graph,
    hw: &HardwareProfile,
    cfg: &SimConfig,
    runner: Runner,
) -> Result<Option<ZeroTraffic>> {
    if cfg.policy == EvictionPolicy::Ideal {
        return Ok(None);
    }
    let mut sims = 0usize;
    let mut run_at = |c: u64| -> Result<RunRow> {
        sims += 1;
        Ok(RunRow::from_trace(&runner.summarise(
            g,
            &hw.clone().with_capacity(c.max(1))?,
            cfg,
        )?))
    };
    // An upper end with no traffic: from the peak, doubling.
    let peak = crate::sim::prepare_graph(g, cfg)
        .map(|p| crate::graph::Liveness::compute(&p).peak_bytes)?;
    let mut hi = peak.max(1);
    let mut hi_run = run_at(hi)?;
    let mut doublings = 0;
    while hi_run.traffic_bytes > 0 {
        if doublings == 8 {
            return Ok(None);
        }
        hi = hi.saturating_mul(2);
        hi_run = run_at(hi)?;
        doublings += 1;
    }
    // A lower end with traffic: halving.
    let mut lo = hi / 2;
    loop {
        if lo == 0 {
            let below = run_at(1)?;
            if below.traffic_bytes == 0 {
                return Ok(Some(ZeroTraffic {
                    capacity_bytes: 1,
                    below_bytes: 0,
                    below_traffic_bytes: 0,
                    run: below,
                    simulations: sims,
                }));
            }
            lo = 1;
            break;
        }
        let r = run_at(lo)?;
        if r.traffic_bytes > 0 {
            break;
        }
        hi = lo;
        hi_run = r;
        lo /= 2;
    }
    // Bisection: traffic at `lo`, none at `hi`; done when 1 % below `hi`
    // still has traffic.
    let mut guard = 0;
    loop {
        let below = ((hi as f64) * (1.0 - KNEE_TOLERANCE)).floor() as u64;
        if below <= lo || hi - lo <= 1 {
            let b = run_at(below.max(1))?;
            if b.traffic_bytes > 0 || guard >= 64 {
                let mut found = ZeroTraffic {
                    capacity_bytes: hi,
                    below_bytes: below,
                    below_traffic_bytes: b.traffic_bytes,
                    run: hi_run,
                    simulations: 0,
                };
                // A capacity people can type: up to a whole KiB, kept only
                // if it still has no traffic and 1 % less still has some.
                let snapped = hi.div_ceil(1024) * 1024;
                if snapped != hi && hi >= 64 * 1024 {
                    let at = run_at(snapped)?;
                    let below = ((snapped as f64) * (1.0 - KNEE_TOLERANCE)).floor() as u64;
                    let under = run_at(below)?;
                    if at.traffic_bytes == 0 && under.traffic_bytes > 0 {
                        found = ZeroTraffic {
                            capacity_bytes: snapped,
                            below_bytes: below,
                            below_traffic_bytes: under.traffic_bytes,
                            run: at,
                            simulations: 0,
                        };
                    }
                }
                found.simulations = sims;
                return Ok(Some(found));
            }
            // The curve bends back (fragmentation): go on below.
            hi = below.max(1);
            hi_run = b;
            lo = lo.min(hi / 2);
        } else {
            let mid = lo + (hi - lo) / 2;
            let r = run_at(mid)?;
            if r.traffic_bytes == 0 {
                hi = mid;
                hi_run = r;
            } else {
                lo = mid;
            }
        }
        guard += 1;
    }
}

/// The knee of one capacity curve (rows of one policy, bandwidth and core
/// count, in capacity order), with the searched zero-traffic capacity.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Knee {
    pub policy: String,
    pub bandwidth: f64,
    /// Cores on the bus of the curve (capacities are per core).
    pub cores: u32,
    /// Smallest capacity with no spill traffic at all (searched on the
    /// simulator to within 1 %), if any.
    pub zero_spill_capacity: Option<u64>,
    /// Smallest capacity of the grid within 1 % of the curve's best latency.
    pub knee_capacity: u64,
    pub knee_latency_ns: u64,
    pub text: String,
}

/// One policy's zero-traffic search on one core count, for [`knees`].
#[derive(Debug, Clone, PartialEq)]
pub struct Searched {
    pub policy: EvictionPolicy,
    pub cores: u32,
    pub zero: Option<ZeroTraffic>,
}

/// The zero-traffic search for each non-ideal policy of `policies` (in
/// parallel) on `hw`'s cores, for [`knees`].
pub fn search_knees(
    g: &Graph,
    hw: &HardwareProfile,
    base: &SimConfig,
    policies: &[EvictionPolicy],
) -> Result<Vec<Searched>> {
    search_knees_with(g, hw, base, policies, default_runner!())
}

/// [`search_knees`] through `runner`.
pub fn search_knees_with(
    g: &Graph,
    hw: &HardwareProfile,
    base: &SimConfig,
    policies: &[EvictionPolicy],
    runner: Runner,
) -> Result<Vec<Searched>> {
    policies
        .par_iter()
        .filter(|&&p| p != EvictionPolicy::Ideal)
        .map(|&p| {
            let cfg = SimConfig {
                policy: p,
                ..base.clone()
            };
            zero_traffic_capacity_with(g, hw, &cfg, runner).map(|zero| Searched {
                policy: p,
                cores: hw.cores.count.max(1),
                zero,
            })
        })
        .collect()
}

/// The knee of each curve of `rows` (ideal has none: it never spills), with
/// the searched zero-traffic capacity of its policy and core count from
/// `searched`. A sweep over several core counts says which each is for.
pub fn knees(rows: &[RunRow], searched: &[Searched]) -> Vec<Knee> {
    let mut keys: Vec<(String, u64, u32)> = Vec::new();
    for r in rows.iter().filter(|r| r.policy != "ideal") {
        let k = (r.policy.clone(), r.read_bandwidth.to_bits(), r.cores);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let several = keys.iter().any(|k| k.2 != keys[0].2);
    keys.into_iter()
        .filter_map(|(policy, bw, cores)| {
            let mut curve: Vec<&RunRow> = rows
                .iter()
                .filter(|r| {
                    r.policy == policy && r.read_bandwidth.to_bits() == bw && r.cores == cores
                })
                .collect();
            curve.sort_by_key(|r| r.capacity_bytes);
            let best = curve.iter().map(|r| r.latency_ns).min()?;
            let knee = curve
                .iter()
                .find(|r| r.latency_ns as f64 <= best as f64 * 1.01)?;
            let zero = searched
                .iter()
                .find(|s| s.policy.as_str() == policy && s.cores == cores)
                .and_then(|s| s.zero.as_ref());
            let near = format!(
                "within 1 % of the best latency tried ({}) from {}",
                fmt_ms(best),
                crate::units::fmt_bytes_precise(knee.capacity_bytes)
            );
            let who = if several {
                format!(
                    "{policy} on {}",
                    crate::units::count(u64::from(cores), "core")
                )
            } else {
                policy.clone()
            };
            let per = if cores > 1 { " per core" } else { "" };
            let text = match zero {
                Some(z) => format!(
                    "{who}: spill traffic drops to 0 at {}{per} (1 % less still moves {}); {near}",
                    crate::units::fmt_bytes_precise(z.capacity_bytes),
                    fmt_bytes(z.below_traffic_bytes)
                ),
                None => {
                    format!("{who}: spill traffic at every capacity up to 256x the peak; {near}")
                }
            };
            Some(Knee {
                policy,
                bandwidth: f64::from_bits(bw),
                cores,
                zero_spill_capacity: zero.map(|z| z.capacity_bytes),
                knee_capacity: knee.capacity_bytes,
                knee_latency_ns: knee.latency_ns,
                text,
            })
        })
        .collect()
}

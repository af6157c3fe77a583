//! The certified floor: on the shared models and generated graphs at 25, 50
//! and 75 % of each one's peak live bytes, how close the lower bound is to
//! the best traffic achieved (bound / best, as best / bound), how close the
//! planned policy gets to the bound (planned / bound), and how long the
//! bound and plan take (the default 5 s budget). Prints a markdown table
//! (quoted in the README) and the summary against the targets: every ratio
//! <= 1.2, median <= 1.1, bound within 5 s.
//! Run: `cargo bench --bench floor` (the shared ONNX models need the `onnx`
//! feature and ../shared/data/models; missing ones are skipped, saying so).

use spillscope::analysis::optimum::{optimal_traffic, OptimumLimits, PoolSize};
use spillscope::cost::HardwareProfile;
use spillscope::graph::{bounds, gen, Graph};
use spillscope::sim::{simulate, EvictionPolicy, SimConfig};
use std::path::Path;
use std::time::Instant;

fn models() -> Vec<(String, Graph)> {
    let mut v = Vec::new();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/models");
    for name in ["resnet18", "mobilenet_v2", "squeezenet1_1", "resnet50_b8"] {
        let path = dir.join(format!("{name}.shapes.onnx"));
        if !cfg!(feature = "onnx") {
            println!("skipped {name}: built without the onnx feature");
            continue;
        }
        if !path.exists() {
            println!("skipped {name}: {} not found", path.display());
            continue;
        }
        match spillscope::graph::load(&path, &Default::default()) {
            Ok(g) => v.push((name.to_string(), g)),
            Err(e) => println!("skipped {name}: {e}"),
        }
    }
    let encdec = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/encoder_decoder.json");
    if let Ok(g) = spillscope::graph::load(&encdec, &Default::default()) {
        v.push(("encoder-decoder 6+6 (tests/data)".into(), g));
    }
    v.push((
        "transformer 306 ops (gen)".into(),
        gen::transformer_with_ops(300),
    ));
    v.push((
        "transformer 3006 ops (gen)".into(),
        gen::transformer_with_ops(3000),
    ));
    v.push((
        "densenet-121-like (gen)".into(),
        gen::densenet_like(&[6, 12, 24, 16]),
    ));
    v
}

struct Row {
    model: String,
    share: u64,
    best_policy: &'static str,
    best_over_bound: f64,
    planned_over_bound: f64,
    bound: u64,
    method: &'static str,
    solve_ms: Vec<u64>,
    windows: usize,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        return 0.0;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    let base = HardwareProfile::preset("seed-npu").expect("preset");
    let mut rows = Vec::new();
    for (name, g) in models() {
        let peak = simulate(&g, &base, &SimConfig::with_policy(EvictionPolicy::Ideal))
            .expect("ideal run")
            .summary
            .peak_live_bytes;
        for share in [25u64, 50, 75] {
            let cap = peak * share / 100;
            let hw = base.clone().with_capacity(cap).expect("capacity");
            let limits = OptimumLimits {
                time_limit_s: spillscope::analysis::optimum::DEFAULT_TIME_LIMIT_S,
                ..Default::default()
            };
            // Solve time: median of three solves (one when a solve takes
            // more than a second).
            let mut solve_ms = Vec::new();
            let mut opt = None;
            for _ in 0..3 {
                let t = Instant::now();
                let o = optimal_traffic(&g, PoolSize::of(&hw), limits);
                solve_ms.push(t.elapsed().as_millis() as u64);
                opt = Some(o);
                if solve_ms[0] > 1000 {
                    break;
                }
            }
            let Some(opt) = opt else { continue };
            let (bound, method) = opt.tightest(
                bounds::lower_bound_traffic(&g, cap),
                spillscope::trace::BoundMethod::PerOp,
            );
            let mut best = (u64::MAX, "");
            let mut planned = 0;
            for p in [
                EvictionPolicy::Lru,
                EvictionPolicy::Belady,
                EvictionPolicy::Lifetime,
                EvictionPolicy::Planned,
            ] {
                let mut cfg = SimConfig::with_policy(p);
                cfg.plan = opt.plan.clone();
                let traffic = simulate(&g, &hw, &cfg).expect("run").summary.traffic_bytes;
                if traffic < best.0 {
                    best = (traffic, p.as_str());
                }
                if p == EvictionPolicy::Planned {
                    planned = traffic;
                }
            }
            let ratio = |t: u64| {
                if bound == 0 {
                    if t == 0 {
                        1.0
                    } else {
                        f64::INFINITY
                    }
                } else {
                    t as f64 / bound as f64
                }
            };
            rows.push(Row {
                model: name.clone(),
                share,
                best_policy: best.1,
                best_over_bound: ratio(best.0),
                planned_over_bound: ratio(planned),
                bound,
                method: method.as_str(),
                solve_ms,
                windows: opt.windows,
            });
        }
    }
    println!("| model | capacity | bound | best / bound (policy) | planned / bound | bound + plan time | windows |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        let mut ms: Vec<f64> = r.solve_ms.iter().map(|&m| m as f64).collect();
        println!(
            "| {} | {} % of peak | {:.1} MiB ({}) | {:.2} ({}) | {:.2} | {:.0} ms | {} |",
            r.model,
            r.share,
            r.bound as f64 / 1048576.0,
            r.method,
            r.best_over_bound,
            r.best_policy,
            r.planned_over_bound,
            median(&mut ms),
            r.windows
        );
    }
    let mut best: Vec<f64> = rows.iter().map(|r| r.best_over_bound).collect();
    let mut plan: Vec<f64> = rows.iter().map(|r| r.planned_over_bound).collect();
    let worst = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    let slowest = rows
        .iter()
        .flat_map(|r| r.solve_ms.iter().copied())
        .max()
        .unwrap_or(0);
    println!();
    println!(
        "{} cases: best/bound worst {:.2}, median {:.2}; planned/bound worst {:.2}, median {:.2}; slowest bound + plan {} ms (targets: every ratio <= 1.2, median <= 1.1, bound <= 5 s)",
        rows.len(),
        worst(&best),
        median(&mut best),
        worst(&plan),
        median(&mut plan),
        slowest
    );
}

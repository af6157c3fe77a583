//! Scale budgets (issue: hardening): a generated 100,000-op transformer-like
//! graph (`spillscope gen graph --ops 100000`) simulated under each policy
//! at a capacity where it spills. Target: under 1 s each.
//! Run: `cargo bench --no-default-features --bench scale`.

use criterion::{criterion_group, criterion_main, Criterion};
use spillscope::cost::HardwareProfile;
use spillscope::sim::{simulate, EvictionPolicy, SimConfig};
use std::hint::black_box;
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let g = spillscope::graph::gen::transformer_with_ops(100_000);
    let hw = HardwareProfile::preset("seed-npu")
        .unwrap()
        .with_capacity(160 * 1024)
        .unwrap();
    let mut group = c.benchmark_group("transformer_100k_ops");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    for p in EvictionPolicy::ALL {
        group.bench_function(p.as_str(), |b| {
            b.iter(|| simulate(black_box(&g), &hw, &SimConfig::with_policy(p)).unwrap())
        });
    }
    group.finish();
    let tr = simulate(&g, &hw, &SimConfig::with_policy(EvictionPolicy::Lru)).unwrap();
    eprintln!(
        "{} ops, {} tensors, {} events, {} evictions",
        g.ops.len(),
        g.tensors.len(),
        tr.events.len(),
        tr.summary.spill_count
    );
}

/// `copies` disjoint copies of a benchmark case in one DAG (ids and buffer
/// ids offset), so the heuristics' cost can be seen growing with node count
/// (the benchmark's larger cases, 30,000+ nodes, are not in ../shared).
fn replicated_case(case: &serde_json::Value, copies: usize) -> serde_json::Value {
    let nodes = case["Nodes"].as_array().cloned().unwrap_or_default();
    let edges = case["Edges"].as_array().cloned().unwrap_or_default();
    let n = nodes.len() as u64;
    let bufs = nodes
        .iter()
        .filter_map(|x| x["BufId"].as_u64())
        .max()
        .map_or(0, |m| m + 1);
    let (mut all_nodes, mut all_edges) = (Vec::new(), Vec::new());
    for c in 0..copies as u64 {
        for x in &nodes {
            let mut x = x.clone();
            x["Id"] = (x["Id"].as_u64().unwrap_or(0) + c * n).into();
            if let Some(b) = x["BufId"].as_u64() {
                x["BufId"] = (b + c * bufs).into();
            }
            if let Some(list) = x["Bufs"].as_array() {
                let shifted: Vec<u64> = list
                    .iter()
                    .filter_map(|b| b.as_u64())
                    .map(|b| b + c * bufs)
                    .collect();
                x["Bufs"] = shifted.into();
            }
            all_nodes.push(x);
        }
        for e in &edges {
            let (a, b) = (e[0].as_u64().unwrap_or(0), e[1].as_u64().unwrap_or(0));
            all_edges.push(serde_json::json!([a + c * n, b + c * n]));
        }
    }
    serde_json::json!({"Nodes": all_nodes, "Edges": all_edges})
}

/// The NPU heuristics (schedule, allocation with spills, check, timing) on
/// 1x, 4x and 8x the Matmul case (4,160 to 33,280 nodes): time should grow
/// about linearly. Skipped when ../shared is absent.
fn npu(c: &mut Criterion) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/npu/Matmul_Case0.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("SKIP npu scale: {} not found", path.display());
        return;
    };
    let case: serde_json::Value = serde_json::from_str(&text).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("npu_heuristics");
    group.sample_size(10);
    for copies in [1usize, 4, 8] {
        let p = dir.path().join(format!("Matmul_x{copies}.json"));
        std::fs::write(&p, replicated_case(&case, copies).to_string()).unwrap();
        let k = spillscope::npu::Kernel::load(&p).unwrap();
        group.bench_function(format!("{}_nodes", k.len()), |b| {
            b.iter(|| spillscope::npu::solve::solve(black_box(&k), Default::default()).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench, npu);
criterion_main!(benches);

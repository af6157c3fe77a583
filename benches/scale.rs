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
    let g = spillscope::cli::gen_cmd::transformer_with_ops(100_000);
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

criterion_group!(benches, bench);
criterion_main!(benches);

//! A 64-point capacity sweep of ResNet-50 batch 8 (the bundled shapes-only
//! ONNX) under LRU, in parallel. Run: `cargo bench --bench whatif`.

use criterion::{criterion_group, criterion_main, Criterion};
use spillscope::analysis::whatif::{grid, run};
use spillscope::cost::HardwareProfile;
use spillscope::sim::{EvictionPolicy, SimConfig};
use std::path::Path;

fn bench(c: &mut Criterion) {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/resnet50_b8.shapes.onnx");
    let j = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/encoder_decoder.json");
    let g = if cfg!(feature = "onnx") {
        spillscope::graph::load(&p, &Default::default())
    } else {
        spillscope::graph::load(&j, &Default::default())
    }
    .expect("bundled model loads");
    let hw = HardwareProfile::preset("seed-npu").unwrap();
    let caps: Vec<u64> = (1..=64).map(|i| (i * 2) << 20).collect();
    let points = grid(&caps, &[None], &[EvictionPolicy::Lru]);
    let mut grp = c.benchmark_group("whatif");
    grp.sample_size(10);
    grp.bench_function("resnet50_b8_64_capacities", |b| {
        b.iter(|| run(&g, &hw, &SimConfig::default(), &points, &|| {}).unwrap())
    });
    grp.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

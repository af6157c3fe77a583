//! Simulation speed: ResNet-50 at batch 8 (the bundled shapes-only ONNX)
//! under each policy on the seed profile, and all four in a row; then the
//! same batch spread over several cores sharing the bus (LRU, 4 MiB per
//! core: each core's lockstep run plus its run alone on the bus, for the
//! contention split). Run: `cargo bench --bench sim`.

use criterion::{criterion_group, criterion_main, Criterion};
use spillscope::cost::HardwareProfile;
use spillscope::sim::{simulate, EvictionPolicy, SimConfig};
use std::hint::black_box;
use std::path::Path;

fn load() -> spillscope::graph::Graph {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/resnet50_b8.shapes.onnx");
    if p.extension().is_some() && cfg!(feature = "onnx") {
        spillscope::graph::load(&p, &Default::default()).expect("bundled model loads")
    } else {
        // Without ONNX support, fall back to the encoder-decoder graph JSON.
        let j = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/encoder_decoder.json");
        spillscope::graph::load(&j, &Default::default()).expect("graph JSON loads")
    }
}

fn bench(c: &mut Criterion) {
    let g = load();
    let hw = HardwareProfile::preset("seed-npu").unwrap();
    let mut group = c.benchmark_group("resnet50_b8_32MiB");
    for p in EvictionPolicy::ALL {
        group.bench_function(p.as_str(), |b| {
            b.iter(|| simulate(black_box(&g), &hw, &SimConfig::with_policy(p)).unwrap())
        });
    }
    group.bench_function("all_four", |b| {
        b.iter(|| {
            for p in EvictionPolicy::ALL {
                black_box(simulate(&g, &hw, &SimConfig::with_policy(p)).unwrap());
            }
        })
    });
    group.finish();
    let mut group = c.benchmark_group("resnet50_b8_4MiB_per_core_lru");
    group.sample_size(10);
    let cfg = SimConfig::with_policy(EvictionPolicy::Lru);
    let graph_split = SimConfig {
        split: spillscope::sim::config::Split::Graph,
        ..cfg.clone()
    };
    for (name, cores, cfg) in [
        ("1_core", 1, &cfg),
        ("2_cores_batch", 2, &cfg),
        ("4_cores_batch", 4, &cfg),
        ("2_cores_graph", 2, &graph_split),
    ] {
        let hw = hw
            .clone()
            .with_capacity(4 << 20)
            .and_then(|h| h.with_cores(cores))
            .unwrap();
        group.bench_function(name, |b| {
            b.iter(|| simulate(black_box(&g), &hw, cfg).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! Simulation speed: ResNet-50 at batch 8 (the bundled shapes-only ONNX)
//! under each policy on the seed profile, and all four in a row.
//! Run: `cargo bench --bench sim`.

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
}

criterion_group!(benches, bench);
criterion_main!(benches);

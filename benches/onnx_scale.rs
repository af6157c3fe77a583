//! A 100,000-node ONNX model whose intermediate shapes are in `value_info`
//! (as a model saved after ONNX shape inference): load it (shapes from the
//! file, tract not run) and simulate three policies, the issue's "under
//! 3 s" target; the same load with tract's analysis is timed once per run
//! for comparison (printed, it takes seconds).
//! Run: `cargo bench --bench onnx_scale`.

use criterion::{criterion_group, criterion_main, Criterion};
use prost::Message;
use spillscope::cost::HardwareProfile;
use spillscope::graph::{self, LoadOptions};
use spillscope::sim::{simulate, EvictionPolicy, SimConfig};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tract_onnx::pb;
use tract_onnx::pb::tensor_shape_proto::dimension::Value as Dim;

const SEQ: i64 = 64;
const HIDDEN: i64 = 256;

fn vi(name: &str, dims: &[i64]) -> pb::ValueInfoProto {
    pb::ValueInfoProto {
        name: name.into(),
        r#type: Some(pb::TypeProto {
            denotation: String::new(),
            value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor {
                elem_type: 1,
                shape: Some(pb::TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|&d| pb::tensor_shape_proto::Dimension {
                            denotation: String::new(),
                            value: Some(Dim::DimValue(d)),
                        })
                        .collect(),
                }),
            })),
        }),
        doc_string: String::new(),
    }
}

/// Layers of MatMul -> Add (residual from two layers back) -> Relu, with
/// external weights (only their shapes are stored), `nodes` nodes in all.
fn model(nodes: usize) -> Vec<u8> {
    let layers = nodes / 3;
    let mut node = Vec::with_capacity(nodes);
    let mut value_info = Vec::with_capacity(nodes);
    let mut init = Vec::with_capacity(layers);
    let mut prev = "x".to_string();
    let mut skip = "x".to_string();
    let n = |name: String, op: &str, ins: Vec<String>, out: &str| pb::NodeProto {
        name,
        op_type: op.into(),
        input: ins,
        output: vec![out.to_string()],
        ..Default::default()
    };
    for l in 0..layers {
        let (w, m, a, r) = (
            format!("w{l}"),
            format!("m{l}"),
            format!("a{l}"),
            format!("r{l}"),
        );
        init.push(pb::TensorProto {
            name: w.clone(),
            dims: vec![HIDDEN, HIDDEN],
            data_type: 1,
            data_location: Some(pb::tensor_proto::DataLocation::External as i32),
            ..Default::default()
        });
        node.push(n(format!("mm{l}"), "MatMul", vec![prev.clone(), w], &m));
        node.push(n(
            format!("add{l}"),
            "Add",
            vec![m.clone(), skip.clone()],
            &a,
        ));
        node.push(n(format!("relu{l}"), "Relu", vec![a.clone()], &r));
        for t in [&m, &a, &r] {
            value_info.push(vi(t, &[SEQ, HIDDEN]));
        }
        skip = prev;
        prev = r;
    }
    let graph = pb::GraphProto {
        name: "chain100k".into(),
        node,
        initializer: init,
        input: vec![vi("x", &[SEQ, HIDDEN])],
        output: vec![vi(&prev, &[SEQ, HIDDEN])],
        value_info,
        ..Default::default()
    };
    pb::ModelProto {
        ir_version: 8,
        opset_import: vec![pb::OperatorSetIdProto {
            domain: String::new(),
            version: 17,
        }],
        graph: Some(graph),
        ..Default::default()
    }
    .encode_to_vec()
}

fn model_file() -> PathBuf {
    let p = std::env::temp_dir().join(format!("spillscope-chain100k-{}.onnx", std::process::id()));
    std::fs::write(&p, model(100_000)).unwrap();
    p
}

fn load_and_simulate(p: &Path, hw: &HardwareProfile) {
    let g = graph::load(p, &LoadOptions::default()).unwrap();
    for policy in [
        EvictionPolicy::Lru,
        EvictionPolicy::Belady,
        EvictionPolicy::Lifetime,
    ] {
        std::hint::black_box(simulate(&g, hw, &SimConfig::with_policy(policy)).unwrap());
    }
}

fn bench(c: &mut Criterion) {
    let p = model_file();
    let g = graph::load(&p, &LoadOptions::default()).unwrap();
    eprintln!("{} ops, {} tensors", g.ops.len(), g.tensors.len());
    let mut hw = HardwareProfile::preset("seed-npu").unwrap();
    // Half of the peak: every policy has to spill.
    hw.memory.capacity.0 = graph::Liveness::compute(&g).peak_bytes / 2;
    let t = Instant::now();
    let inferred = graph::onnx::load_onnx_inferred(&p, &LoadOptions::default());
    eprintln!(
        "load with tract's analysis: {:.2} s ({})",
        t.elapsed().as_secs_f64(),
        if inferred.is_ok() { "ok" } else { "failed" }
    );
    let mut group = c.benchmark_group("onnx_100k_nodes");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("load (shapes from value_info)", |b| {
        b.iter(|| graph::load(&p, &LoadOptions::default()).unwrap())
    });
    group.bench_function("load + lru, belady, lifetime", |b| {
        b.iter(|| load_and_simulate(&p, &hw))
    });
    group.finish();
    let _ = std::fs::remove_file(&p);
}

criterion_group!(benches, bench);
criterion_main!(benches);

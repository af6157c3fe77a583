//! The ONNX front end on hand-made models (built here with prost): symbolic
//! dims with --dim, custom ops whose outputs are annotated in value_info,
//! a truly unknown shape, an unsupported dtype, and external weights that
//! are absent.
#![cfg(feature = "onnx")]

use prost::Message;
use spillscope::graph::{self, LoadOptions};
use tract_onnx::pb;
use tract_onnx::pb::tensor_shape_proto::dimension::Value as Dim;

fn vi(name: &str, dims: &[Result<i64, &str>], elem: i32) -> pb::ValueInfoProto {
    pb::ValueInfoProto {
        name: name.into(),
        r#type: Some(pb::TypeProto {
            denotation: String::new(),
            value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor {
                elem_type: elem,
                shape: Some(pb::TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|d| pb::tensor_shape_proto::Dimension {
                            denotation: String::new(),
                            value: Some(match d {
                                Ok(v) => Dim::DimValue(*v),
                                Err(p) => Dim::DimParam(p.to_string()),
                            }),
                        })
                        .collect(),
                }),
            })),
        }),
        doc_string: String::new(),
    }
}

fn node(name: &str, op: &str, ins: &[&str], outs: &[&str], domain: &str) -> pb::NodeProto {
    pb::NodeProto {
        name: name.into(),
        op_type: op.into(),
        domain: domain.into(),
        input: ins.iter().map(|s| s.to_string()).collect(),
        output: outs.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

fn model(
    nodes: Vec<pb::NodeProto>,
    inputs: Vec<pb::ValueInfoProto>,
    outputs: Vec<pb::ValueInfoProto>,
    value_info: Vec<pb::ValueInfoProto>,
    inits: Vec<pb::TensorProto>,
) -> Vec<u8> {
    let m = pb::ModelProto {
        ir_version: 8,
        opset_import: vec![pb::OperatorSetIdProto {
            domain: String::new(),
            version: 17,
        }],
        graph: Some(pb::GraphProto {
            name: "g".into(),
            node: nodes,
            input: inputs,
            output: outputs,
            value_info,
            initializer: inits,
            ..Default::default()
        }),
        ..Default::default()
    };
    m.encode_to_vec()
}

fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn symbolic_dims_are_bound_with_dim() {
    let dir = tempfile::tempdir().unwrap();
    let m = model(
        vec![
            node("relu", "Relu", &["x"], &["y"], ""),
            node("neg", "Neg", &["y"], &["z"], ""),
        ],
        vec![vi("x", &[Err("N"), Ok(16)], 1)],
        vec![vi("z", &[Err("N"), Ok(16)], 1)],
        vec![],
        vec![],
    );
    let p = write(&dir, "sym.onnx", &m);
    // Unbound: the error names the tensor and suggests --dim.
    let e = graph::load(&p, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"x\"") && e.contains("--dim"), "{e}");
    let g = graph::load(
        &p,
        &LoadOptions {
            dims: vec![("N".into(), 8)],
            batch: None,
        },
    )
    .unwrap();
    for t in ["x", "y", "z"] {
        assert_eq!(g.tensor_by_name(t).unwrap().bytes, 8 * 16 * 4, "{t}");
    }
    // A dim whose bytes overflow 64 bits, or pass the simulator's 2^53
    // bytes in total, is an error naming the first tensor it breaks.
    for (n, needle) in [(1u64 << 60, "overflows 64 bits"), (1u64 << 48, "8 PiB")] {
        let e = graph::load(
            &p,
            &LoadOptions {
                dims: vec![("N".into(), n)],
                batch: None,
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("\"x\"") && e.contains(needle), "{e}");
    }
}

#[test]
fn custom_ops_keep_going_on_annotated_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let m = model(
        vec![
            node("custom", "FancyVendorOp", &["x"], &["y"], "com.vendor"),
            node("relu", "Relu", &["y"], &["z"], ""),
        ],
        vec![vi("x", &[Ok(2), Ok(8)], 1)],
        vec![vi("z", &[Ok(2), Ok(32)], 1)],
        vec![vi("y", &[Ok(2), Ok(32)], 10)],
        vec![],
    );
    let p = write(&dir, "custom.onnx", &m);
    let g = graph::load(&p, &LoadOptions::default()).unwrap();
    assert_eq!(g.op_by_name("custom").unwrap().op_type, "FancyVendorOp");
    // y is f16 per value_info: 2*32*2 bytes.
    assert_eq!(g.tensor_by_name("y").unwrap().bytes, 128);
    assert_eq!(g.tensor_by_name("z").unwrap().bytes, 2 * 32 * 4);

    // Without the annotation the shape is truly unknown: say which tensor.
    let m = model(
        vec![
            node("custom", "FancyVendorOp", &["x"], &["y"], "com.vendor"),
            node("relu", "Relu", &["y"], &["z"], ""),
        ],
        vec![vi("x", &[Ok(2), Ok(8)], 1)],
        vec![vi("z", &[Ok(2), Ok(32)], 1)],
        vec![],
        vec![],
    );
    let p = write(&dir, "unknown.onnx", &m);
    let e = graph::load(&p, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"y\"") && e.contains("unknown"), "{e}");
}

#[test]
fn unsupported_dtype_and_absent_external_weights() {
    let dir = tempfile::tempdir().unwrap();
    // A string initializer: not something with a byte size we model.
    let bad = pb::TensorProto {
        name: "w".into(),
        dims: vec![4],
        data_type: 8,
        ..Default::default()
    };
    let m = model(
        vec![node("add", "Add", &["x", "w"], &["y"], "")],
        vec![vi("x", &[Ok(4)], 1)],
        vec![vi("y", &[Ok(4)], 1)],
        vec![],
        vec![bad],
    );
    let p = write(&dir, "dtype.onnx", &m);
    let e = graph::load(&p, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"w\"") && e.contains("dtype"), "{e}");

    // A weight stored in a file that is not there: only its shape matters.
    let ext = pb::TensorProto {
        name: "w".into(),
        dims: vec![16, 8],
        data_type: 1,
        data_location: Some(pb::tensor_proto::DataLocation::External as i32),
        external_data: vec![
            pb::StringStringEntryProto {
                key: "location".into(),
                value: "weights.bin".into(),
            },
            pb::StringStringEntryProto {
                key: "length".into(),
                value: "512".into(),
            },
        ],
        ..Default::default()
    };
    let m = model(
        vec![node("mm", "MatMul", &["x", "w"], &["y"], "")],
        vec![vi("x", &[Ok(2), Ok(16)], 1)],
        vec![vi("y", &[Ok(2), Ok(8)], 1)],
        vec![],
        vec![ext],
    );
    let p = write(&dir, "external.onnx", &m);
    let g = graph::load(&p, &LoadOptions::default()).unwrap();
    assert_eq!(g.tensor_by_name("w").unwrap().bytes, 16 * 8 * 4);
    assert_eq!(
        g.tensor_by_name("w").unwrap().kind,
        spillscope::graph::TensorKind::Weight
    );
    assert_eq!(g.tensor_by_name("y").unwrap().bytes, 2 * 8 * 4);
    // MatMul FLOPs: 2 * M * N * K = 2 * 2 * 8 * 16.
    assert_eq!(g.op_by_name("mm").unwrap().flops, 512.0);
}

/// Fuzzing found tract panicking on a pooling node whose `pads` is shorter
/// than its kernel's rank; the loader turns that into one error naming the
/// file instead of crashing (and prints no panic message).
#[test]
fn a_model_that_makes_tract_panic_is_a_clear_error() {
    let ints = |name: &str, v: &[i64]| pb::AttributeProto {
        name: name.into(),
        r#type: pb::attribute_proto::AttributeType::Ints as i32,
        ints: v.to_vec(),
        ..Default::default()
    };
    let mut pool = node("pool", "MaxPool", &["x"], &["y"], "");
    pool.attribute = vec![ints("kernel_shape", &[2, 2]), ints("pads", &[0, 0])];
    // The output's spatial dims are left to inference, so tract runs (a
    // file that gives every shape is read without it).
    let bytes = model(
        vec![pool],
        vec![vi("x", &[Ok(1), Ok(3), Ok(8), Ok(8)], 1)],
        vec![vi("y", &[Ok(1), Ok(3), Err("H"), Err("W")], 1)],
        vec![],
        vec![],
    );
    let dir = tempfile::tempdir().unwrap();
    let p = write(&dir, "bad_pads.onnx", &bytes);
    let e = graph::load(&p, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("bad_pads.onnx") && e.contains("malformed model"),
        "{e}"
    );
    // Through the binary: one line on stderr, a non-zero exit, no panic text.
    let o = assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .args(["sim", p.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// A model whose `value_info` gives every tensor a shape loads from the
/// file alone (no tract analysis) and to the same graph as tract infers.
#[test]
fn complete_value_info_gives_the_tract_graph_without_tract() {
    let Some(dir) = common_shared("models") else {
        return;
    };
    let mut checked = 0;
    for name in [
        "resnet18.shapes.onnx",
        "mobilenet_v2.shapes.onnx",
        "squeezenet1_1.shapes.onnx",
        "resnet50_b8.shapes.onnx",
    ] {
        let p = dir.join(name);
        if !p.exists() {
            continue;
        }
        let t0 = std::time::Instant::now();
        let fast = graph::load(&p, &LoadOptions::default()).unwrap();
        let t_fast = t0.elapsed();
        let t0 = std::time::Instant::now();
        let slow = graph::onnx::load_onnx_inferred(&p, &LoadOptions::default()).unwrap();
        let t_slow = t0.elapsed();
        eprintln!("{name}: from the file {t_fast:?}, with tract {t_slow:?}");
        assert_eq!(fast.tensors.len(), slow.tensors.len(), "{name}");
        assert_eq!(fast.ops.len(), slow.ops.len(), "{name}");
        for t in &slow.tensors {
            let f = fast.tensor_by_name(t.name).unwrap();
            assert_eq!((f.bytes, f.kind), (t.bytes, t.kind), "{name}: {}", t.name);
        }
        for (a, b) in fast.ops.iter().zip(&slow.ops) {
            assert_eq!((&a.name, a.flops), (&b.name, b.flops), "{name}");
        }
        checked += 1;
    }
    assert!(
        checked > 0,
        "no .shapes.onnx model in ../shared/data/models"
    );
}

fn common_shared(sub: &str) -> Option<std::path::PathBuf> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data")
        .join(sub);
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("SKIP: {} absent", p.display());
        None
    }
}

/// Tensor ids are the same on every load: weights are declared in the
/// file's initializer order (they were once in a hash map's order, so two
/// `sim -o` of one model wrote different ids).
#[test]
fn weights_keep_the_files_order_on_every_load() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/resnet18.shapes.onnx");
    let bytes = std::fs::read(&path).unwrap();
    let proto = pb::ModelProto::decode(bytes.as_slice()).unwrap();
    let file_order: Vec<String> = proto
        .graph
        .unwrap()
        .initializer
        .iter()
        .map(|i| i.name.to_string())
        .collect();
    assert!(file_order.len() > 20, "{}", file_order.len());
    let names = |g: &graph::Graph| -> Vec<String> {
        g.tensors.iter().map(|t| t.name.to_string()).collect()
    };
    let a = graph::load(&path, &LoadOptions::default()).unwrap();
    let b = graph::load(&path, &LoadOptions::default()).unwrap();
    assert_eq!(names(&a), names(&b));
    let weights: Vec<String> = a
        .tensors
        .iter()
        .filter(|t| t.kind == graph::TensorKind::Weight)
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(weights, file_order);
}

/// A `value_info` that contradicts its op (an Add of two [1, 64, 8, 8]
/// tensors claiming 3,037,000,500 channels, or a zero dimension) is refused
/// naming the tensor and the op, instead of a 2.2 TiB peak or a 0-byte
/// tensor; the truthful file loads.
#[test]
fn a_value_info_that_contradicts_its_op_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let x = |n: &str, c: i64| vi(n, &[Ok(1), Ok(c), Ok(8), Ok(8)], 1);
    let make = |claimed: i64| {
        model(
            vec![
                node("relu", "Relu", &["a"], &["r"], ""),
                node("add", "Add", &["r", "b"], &["sum"], ""),
            ],
            vec![x("a", 64), x("b", 64)],
            vec![x("sum", claimed)],
            vec![x("r", 64)],
            vec![],
        )
    };
    let ok = write(&dir, "ok.onnx", &make(64));
    assert_eq!(
        graph::load(&ok, &LoadOptions::default()).unwrap().ops.len(),
        2
    );
    for claimed in [3_037_000_500, 0] {
        let p = write(&dir, "lie.onnx", &make(claimed));
        let e = graph::load(&p, &LoadOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("tensor \"sum\""), "{e}");
        assert!(
            e.contains(&format!("[1, {claimed}, 8, 8]")) && e.contains("makes [1, 64, 8, 8]"),
            "{e}"
        );
        assert!(e.contains("Add \"add\""), "{e}");
    }
}

//! Liveness against DESIGN.md's reference definition: hand-built cases and
//! the exact reference peaks of the shared ONNX models.

use crate::common;
use common::graph;
#[cfg(feature = "onnx")]
use common::shared_data;
#[cfg(feature = "onnx")]
use spillscope::graph::{self, LoadOptions};
use spillscope::graph::{LiveInterval, Liveness, TensorKind};

#[test]
fn intervals_follow_def_use() {
    // x is a graph input; y is an output nobody consumes; z is unconsumed.
    let g = graph(
        &[
            ("p", &["x"], &["a"]),
            ("q", &["a"], &["b", "z"]),
            ("r", &["a", "b"], &["y"]),
        ],
        100,
        &[],
        &["y"],
    );
    let l = Liveness::compute(&g);
    let iv = |n: &str| l.intervals.get(g.tensor_by_name(n).unwrap().id).unwrap();
    assert_eq!(iv("x"), LiveInterval { start: 0, end: 0 });
    assert_eq!(iv("a"), LiveInterval { start: 0, end: 2 });
    assert_eq!(iv("b"), LiveInterval { start: 1, end: 2 });
    assert_eq!(iv("z"), LiveInterval { start: 1, end: 1 });
    assert_eq!(iv("y"), LiveInterval { start: 2, end: 2 });
    assert_eq!(l.live_bytes, vec![200, 300, 300]);
    assert_eq!(l.peak_bytes, 300);
}

#[test]
fn weights_are_excluded_and_outputs_live_to_end() {
    let g = graph(
        &[
            ("p", &["x", "w1"], &["a"]),
            ("q", &["a"], &["b"]),
            ("r", &["b"], &["c"]),
        ],
        10,
        &[("w1", 1000)],
        &["a", "c"],
    );
    assert_eq!(g.tensor_by_name("w1").unwrap().kind, TensorKind::Weight);
    let l = Liveness::compute(&g);
    // a is a graph output: live 0..=2 even though q is its last consumer.
    assert_eq!(l.live_bytes, vec![20, 20, 30]);
}

#[test]
fn free_at_override_extends_a_lifetime() {
    let g = graph(
        &[
            ("p", &["x"], &["a"]),
            ("q", &["a"], &["b"]),
            ("r", &["b"], &["c"]),
        ],
        10,
        &[],
        &["c"],
    );
    let a = g.tensor_by_name("a").unwrap().id;
    let l = Liveness::compute_with(&g, &[(a, 2)]);
    assert_eq!(
        l.intervals.get(a).unwrap(),
        LiveInterval { start: 0, end: 2 }
    );
    assert_eq!(l.live_bytes, vec![20, 20, 30]);
}

#[cfg(feature = "onnx")]
#[test]
fn reference_peaks_of_shared_models() {
    let Some(dir) = shared_data("models") else {
        return;
    };
    let cases = [
        ("resnet18.shapes.onnx", 6_422_528u64),
        ("mobilenet_v2.shapes.onnx", 9_633_800),
        ("squeezenet1_1.shapes.onnx", 6_308_352),
        ("resnet50_b8.shapes.onnx", 77_070_336),
        ("mobilenet_v2.onnx", 9_633_800),
        ("squeezenet1_1.onnx", 6_308_352),
    ];
    for (file, peak) in cases {
        let g = graph::load(&dir.join(file), &LoadOptions::default()).unwrap();
        let l = Liveness::compute(&g);
        assert_eq!(l.peak_bytes, peak, "{file}");
        // Every intermediate has a concrete size.
        assert!(g.tensors.iter().all(|t| t.shape.is_some()), "{file}");
    }
}

#[cfg(feature = "onnx")]
#[test]
fn batch_override_scales_activations() {
    let Some(dir) = shared_data("models") else {
        return;
    };
    let g = graph::load(
        &dir.join("resnet18.shapes.onnx"),
        &LoadOptions {
            dims: vec![],
            batch: Some(4),
        },
    )
    .unwrap();
    // Activations scale with the batch; weights do not.
    assert_eq!(Liveness::compute(&g).peak_bytes, 4 * 6_422_528);
    let g1 = graph::load(&dir.join("resnet18.shapes.onnx"), &LoadOptions::default()).unwrap();
    assert_eq!(g.weight_bytes(), g1.weight_bytes());
    assert!(
        g1.weight_bytes() > 40_000_000,
        "resnet18 has ~46.8 MB of fp32 weights"
    );
}

/// The streamed graph JSON loader (what every command uses) builds the same
/// graph as lowering the parsed document, whatever order the file's keys
/// come in and with a byte-order mark; its errors are the document path's:
/// a tensor it refuses is named, an unknown, duplicate or missing key is
/// one line with its position.
#[test]
fn the_streamed_graph_loader_equals_the_document_path() {
    use spillscope::graph::json::{graph_from_json, load_graph_json, GraphJson};
    let dir = tempfile::tempdir().unwrap();
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let generated = spillscope::graph::json::graph_to_json(
        &spillscope::graph::gen::transformer_like(3, 64, 128),
    );
    let mut docs: Vec<(String, serde_json::Value)> = vec![(
        "generated".into(),
        serde_json::to_value(&generated).unwrap(),
    )];
    for f in [
        "encoder_decoder.json",
        "evil_names.json",
        "long_source_encdec.json",
    ] {
        let text = std::fs::read_to_string(data.join(f)).unwrap();
        docs.push((f.into(), serde_json::from_str(&text).unwrap()));
    }
    for (label, doc) in docs {
        let expected = graph_from_json(
            serde_json::from_value::<GraphJson>(doc.clone()).unwrap(),
            "g",
        )
        .unwrap();
        let expected = serde_json::to_value(&expected).unwrap();
        // Keys reversed (outputs and ops before tensors) and a BOM.
        let obj = doc.as_object().unwrap();
        let mut text = String::from("\u{feff}{");
        for (i, (k, v)) in obj.iter().rev().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text += &format!("{}:{}", serde_json::to_string(k).unwrap(), v);
        }
        text.push('}');
        let p = dir.path().join("g.json");
        std::fs::write(&p, &text).unwrap();
        let got = serde_json::to_value(load_graph_json(&p).unwrap()).unwrap();
        assert_eq!(got, expected, "{label}");
    }
    let cases: [(&str, &[&str]); 5] = [
        (
            r#"{"tensors":[{"name":"x"}],"ops":[]}"#,
            &["\"x\"", "neither `bytes` nor `shape`"],
        ),
        (
            r#"{"tensors":[],"ops":[],"extra":1}"#,
            &["g.json:1:", "unknown field `extra`"],
        ),
        (
            r#"{"tensors":[],"tensors":[],"ops":[]}"#,
            &["duplicate field `tensors`"],
        ),
        (r#"{"tensors":[]}"#, &["missing field `ops`"]),
        (r#"[1,2]"#, &["g.json:1:", "graph JSON object"]),
    ];
    for (text, needles) in cases {
        let p = dir.path().join("g.json");
        std::fs::write(&p, text).unwrap();
        let e = load_graph_json(&p).unwrap_err().to_string();
        assert_eq!(e.lines().count(), 1, "{e}");
        for n in needles {
            assert!(e.contains(n), "{text}: {e} lacks {n}");
        }
    }
}

/// The builder keeps what it is given as the graph's own columns and
/// resolves names as they come: operands declared after their op, ops
/// given out of dependency order (scheduled, ids and producers follow the
/// new order), an op reading a tensor twice listed once as its consumer,
/// FLOPs kept where given and estimated where not.
#[test]
fn the_builder_links_late_names_and_reorders_ops() {
    use spillscope::graph::{GraphBuilder, OpSpec, TensorSpec};
    let t = |name: &str, kind: Option<TensorKind>| TensorSpec {
        name: name.into(),
        bytes: 64,
        kind,
        shape: Some(vec![4, 4]),
        dtype: Some("f32".into()),
    };
    let op = |name: &str, ins: &[&str], outs: &[&str], flops: Option<f64>| OpSpec {
        name: name.into(),
        op_type: "Add".into(),
        inputs: ins.iter().map(|&s| s.into()).collect(),
        outputs: outs.iter().map(|&s| s.into()).collect(),
        flops,
    };
    let mut b = GraphBuilder::new("late");
    b.tensor(t("x", Some(TensorKind::Input)));
    // `second` reads `a`, which `first` (declared after it) makes; `a`
    // and `y` are declared after both ops.
    b.op(op("second", &["a", "a"], &["y"], None));
    b.op(op("first", &["x"], &["a"], Some(7.0)));
    b.tensor(t("a", None)).tensor(t("y", None)).output("y");
    let g = b.build().unwrap();
    let names: Vec<&str> = g.ops.iter().map(|o| o.name).collect();
    assert_eq!(names, ["first", "second"]);
    assert_eq!(g.ops.iter().map(|o| o.id).collect::<Vec<_>>(), [0, 1]);
    let a = g.tensor_by_name("a").unwrap();
    assert_eq!((a.producer, a.consumers), (Some(0), &[1][..]));
    assert_eq!(a.kind, TensorKind::Activation);
    let y = g.tensor_by_name("y").unwrap();
    assert_eq!((y.kind, y.producer), (TensorKind::Output, Some(1)));
    assert_eq!(g.tensor_by_name("x").unwrap().consumers, &[0]);
    assert_eq!(g.ops.at(0).flops, 7.0);
    // Estimated: an elementwise op over 16 elements.
    assert_eq!(g.ops.at(1).flops, 16.0);
    assert_eq!(g.ops.at(1).inputs, &[a.id, a.id]);
    // In dependency order already: the file's order, unchanged.
    let mut b = GraphBuilder::new("ordered");
    b.tensor(t("x", Some(TensorKind::Input)))
        .tensor(t("a", None))
        .tensor(t("y", None));
    b.op(op("p", &["x"], &["a"], None))
        .op(op("q", &["a", "x"], &["y"], None));
    let g = b.build().unwrap();
    assert_eq!(g.ops.iter().map(|o| o.name).collect::<Vec<_>>(), ["p", "q"]);
    assert_eq!(g.tensor_by_name("x").unwrap().consumers, &[0, 1]);
    // Not listed as an output: an activation nobody reads.
    assert_eq!(g.tensor_by_name("y").unwrap().kind, TensorKind::Activation);
}

/// Each way a graph can be malformed is refused naming the culprit, and
/// the first check in the builder's order is the one reported.
#[test]
fn the_builder_names_what_it_refuses() {
    use spillscope::graph::{GraphBuilder, OpSpec, TensorSpec};
    let t = |name: &str, kind: Option<TensorKind>| TensorSpec {
        name: name.into(),
        bytes: 8,
        kind,
        shape: None,
        dtype: None,
    };
    let op = |name: &str, ins: &[&str], outs: &[&str]| OpSpec {
        name: name.into(),
        op_type: "Relu".into(),
        inputs: ins.iter().map(|&s| s.into()).collect(),
        outputs: outs.iter().map(|&s| s.into()).collect(),
        flops: None,
    };
    let fails = |tensors: &[(&str, Option<TensorKind>)],
                 ops: &[(&str, &[&str], &[&str])],
                 outputs: &[&str]| {
        let mut b = GraphBuilder::new("bad");
        for &(n, k) in tensors {
            b.tensor(t(n, k));
        }
        for &(n, i, o) in ops {
            b.op(op(n, i, o));
        }
        for &o in outputs {
            b.output(o);
        }
        b.build().unwrap_err().to_string()
    };
    let input = Some(TensorKind::Input);
    let e = fails(&[("x", input), ("x", None)], &[("p", &["x"], &["q"])], &[]);
    assert!(e.contains("x") && e.contains("declared twice"), "{e}");
    let e = fails(
        &[("x", input), ("y", None)],
        &[("p", &["x", "ghost"], &["y"])],
        &[],
    );
    assert!(
        e.contains("p") && e.contains("\"ghost\"") && e.contains("not declared"),
        "{e}"
    );
    let e = fails(
        &[("x", input), ("y", None)],
        &[("p", &["x"], &["y"]), ("r", &["x"], &["y"])],
        &[],
    );
    assert!(e.contains("produced by both \"p\" and \"r\""), "{e}");
    let e = fails(&[("x", input)], &[("p", &["x"], &["x"])], &[]);
    assert!(
        e.contains("graph input/weight but op \"p\" produces it"),
        "{e}"
    );
    let e = fails(
        &[("x", input), ("y", None), ("z", None)],
        &[("p", &["x"], &["y"]), ("p", &["y"], &["z"])],
        &[],
    );
    assert!(e.contains("op name used twice"), "{e}");
    let e = fails(
        &[("x", input), ("y", None)],
        &[("p", &["x"], &["y"])],
        &["nope"],
    );
    assert!(e.contains("nope") && e.contains("not declared"), "{e}");
    let e = fails(
        &[("x", input), ("a", None), ("b", None)],
        &[("p", &["x", "b"], &["a"]), ("q", &["a"], &["b"])],
        &[],
    );
    assert!(e.contains("cycle") || e.contains("Cycle"), "{e}");
    // The tensor declared twice is reported before the undeclared operand.
    let e = fails(
        &[("x", input), ("x", None)],
        &[("p", &["ghost"], &["y"])],
        &[],
    );
    assert!(e.contains("declared twice"), "{e}");
}

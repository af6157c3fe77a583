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
    let iv = |n: &str| l.intervals[g.tensor_by_name(n).unwrap().id].unwrap();
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
    assert_eq!(l.intervals[a].unwrap(), LiveInterval { start: 0, end: 2 });
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

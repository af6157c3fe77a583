//! Calibration from measured durations, and free points from reality.

use crate::common;
use common::{graph, test_hw};
use spillscope::analysis::calibrate::{free_points, measured_durations, roofline_vs_measured};
use spillscope::sim::{simulate, EvictionPolicy, SimConfig, WeightMode};
use spillscope::trace::build::TraceBuilder;
use spillscope::trace::{EventKind, TraceOp};
use std::sync::Arc;

fn g() -> spillscope::graph::Graph {
    graph(
        &[
            ("op0", &["x"], &["a"]),
            ("op1", &["a"], &["b"]),
            ("op2", &["b"], &["c"]),
            ("op3", &["c"], &["d"]),
        ],
        1024,
        &[],
        &["d"],
    )
}

/// A measured trace: op i took (i+1) * 10 us; tensor `a` freed during op3.
fn measured() -> spillscope::trace::Trace {
    let mut b = TraceBuilder::new(spillscope::trace::Source::Instrumented, "m", "runtime");
    let mut t = 0;
    for i in 0..4u64 {
        let d = (i + 1) * 10_000;
        b.op(TraceOp::span(format!("op{i}"), "Add", t, t + d));
        t += d;
    }
    let a = b.tensor("a", 1024, spillscope::trace::TensorKind::Activation, "mem");
    b.event(0, EventKind::Alloc, a, 1024, "mem", None, Some(0), None);
    b.event(95_000, EventKind::Free, a, 1024, "mem", None, Some(3), None);
    b.finish()
}

#[test]
fn measured_durations_replace_the_roofline() {
    let m = measured_durations(&measured());
    assert_eq!(m["op2"], 30_000);
    let cfg = SimConfig {
        policy: EvictionPolicy::Ideal,
        weights: WeightMode::Ignore,
        measured_ns: Some(Arc::new(m.clone())),
        ..Default::default()
    };
    let tr = simulate(&g(), &test_hw(1 << 20), &cfg).unwrap();
    for (i, o) in tr.ops.iter().enumerate() {
        assert_eq!(o.end_ns - o.start_ns, (i as u64 + 1) * 10_000, "{}", o.name);
    }
    assert_eq!(tr.summary.latency_ns, 100_000);
    let (types, matched) = roofline_vs_measured(&g(), &test_hw(1 << 20), &m);
    assert_eq!(matched, 4);
    assert_eq!(types.len(), 1);
    assert_eq!(types[0].measured_ns, 100_000);
    assert!(
        types[0].ratio > 1.0,
        "the roofline of tiny Adds is far below 10 us"
    );
}

#[test]
fn free_points_from_an_instrumented_trace_extend_lifetimes() {
    let graph = g();
    let f = free_points(&graph, &measured());
    assert_eq!(f, vec![("a".to_string(), 3)]);
    let base = simulate(
        &graph,
        &test_hw(1 << 20),
        &SimConfig {
            policy: EvictionPolicy::Ideal,
            weights: WeightMode::Ignore,
            ..Default::default()
        },
    )
    .unwrap();
    let late = simulate(
        &graph,
        &test_hw(1 << 20),
        &SimConfig {
            policy: EvictionPolicy::Ideal,
            weights: WeightMode::Ignore,
            free_at: f,
            ..Default::default()
        },
    )
    .unwrap();
    // a now lives through op3 beside c and d: peak 3 tensors instead of 2.
    assert_eq!(base.summary.peak_live_bytes, 2048);
    assert_eq!(late.summary.peak_live_bytes, 3072);
    // With room for only two, the late free forces spills.
    let tight = simulate(
        &graph,
        &test_hw(2048),
        &SimConfig {
            policy: EvictionPolicy::Lru,
            weights: WeightMode::Ignore,
            free_at: free_points(&graph, &measured()),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(tight.summary.spill_count > 0 || tight.summary.streamed_bytes > 0);
}

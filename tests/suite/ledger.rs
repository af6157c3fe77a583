//! One spill ledger: every trace the simulator writes (every policy, every
//! rewrite, fragmentation and streaming cases) passes `verify`, and an
//! independent replay of its events alone (tests/common/replay.rs, which
//! never calls the library's ledger) reproduces every ledger field of the
//! summary. Also: the shared models at 25/50/75 % of their peak, traces
//! written before the ledger, and the figures that must agree with each
//! other (classification vs evicted out, hotspots vs totals, round trips
//! that end where the tensor comes back).

use crate::common;
use common::replay::{replay, summary_fields};
use common::test_hw;
use proptest::prelude::*;
use spillscope::analysis::classify::classify;
use spillscope::analysis::hotspots::hotspots;
use spillscope::analysis::roundtrips::{round_trips, Back};
use spillscope::cost::HardwareProfile;
use spillscope::graph::{Graph, GraphBuilder, OpSpec, TensorSpec};
use spillscope::sim::config::{NamedOrder, OrderSpec};
use spillscope::sim::{
    simulate, ActivationDtype, EvictionPolicy, RecomputeSpec, SimConfig, WeightMode,
};
use spillscope::trace::ledger::{Ledger, Part};
use spillscope::trace::{verify::verify, EventKind, Trace};

/// A random DAG with convs feeding elementwise chains (so fusion applies),
/// weights, and sizes that make ops stream at small capacities.
fn arb_graph() -> impl Strategy<Value = Graph> {
    (3usize..22, any::<u64>()).prop_map(|(n, seed)| {
        let mut next = crate::common::xorshift(seed | 1);
        let mut b = GraphBuilder::new("random");
        let mut tensors: Vec<String> = Vec::new();
        let declare = |b: &mut GraphBuilder, name: String, bytes: u64, weight: bool| {
            b.tensor(TensorSpec {
                name: name.into(),
                bytes,
                kind: weight.then_some(spillscope::graph::TensorKind::Weight),
                shape: None,
                dtype: Some("f32".into()),
            });
        };
        declare(&mut b, "in0".into(), 64 * (1 + next(16)), false);
        tensors.push("in0".into());
        for i in 0..n {
            let mut ins = Vec::new();
            for _ in 0..1 + next(3) {
                let len = tensors.len() as u64;
                let idx = if next(4) == 0 {
                    next(len)
                } else {
                    len - 1 - next(len.min(3))
                };
                let t = tensors[idx as usize].clone();
                if !ins.contains(&t) {
                    ins.push(t);
                }
            }
            let op_type = ["Conv", "Relu", "Add", "MatMul", "Sigmoid"][next(5) as usize];
            if matches!(op_type, "Conv" | "MatMul") && next(2) == 0 {
                let w = format!("w{i}");
                declare(&mut b, w.clone(), 64 * (1 + next(8)), true);
                ins.push(w);
            }
            let out = format!("t{i}");
            declare(&mut b, out.clone(), 64 * (1 + next(32)), false);
            b.op(OpSpec {
                name: format!("op{i}").into(),
                op_type: op_type.into(),
                inputs: ins.into_iter().map(Into::into).collect(),
                outputs: vec![out.clone().into()],
                flops: Some(1000.0 * (1 + next(100)) as f64),
            });
            tensors.push(out);
        }
        let last = tensors.last().cloned().unwrap_or_default();
        b.output(last);
        b.build().expect("random graphs are valid DAGs")
    })
}

/// Every rule of the contract and every ledger field, by an independent
/// replay.
fn check(tr: &Trace, what: &str) -> Result<(), TestCaseError> {
    let rep = verify(tr, 5);
    prop_assert!(rep.ok(), "{what}: {:?}", rep.violations);
    let fields = replay(tr).map_err(|e| TestCaseError::fail(format!("{what}: {e}")))?;
    prop_assert_eq!(fields, summary_fields(tr), "{}", what);
    prop_assert!(
        tr.summary.lower_bound_traffic_bytes <= tr.summary.traffic_bytes,
        "{what}: bound {} above traffic {}",
        tr.summary.lower_bound_traffic_bytes,
        tr.summary.traffic_bytes
    );
    // The library's ledger agrees with the replay, and the classification
    // and per-op figures add up to its parts.
    let ledger = Ledger::of(tr);
    prop_assert!(ledger.mismatches(&tr.summary).is_empty());
    let c = classify(tr, &ledger);
    prop_assert_eq!(
        (c.capacity_count + c.lifetime_count) as u64,
        tr.summary.spill_count
    );
    prop_assert_eq!(
        c.capacity_bytes + c.lifetime_bytes,
        tr.summary.spilled_bytes
    );
    let hs = hotspots(tr, &ledger);
    let per_op: u64 = hs.iter().map(|h| h.traffic_bytes).sum();
    prop_assert_eq!(per_op, tr.summary.traffic_bytes, "{}", what);
    // Round trips end where the tensor comes back.
    for t in round_trips(tr, &ledger) {
        for rt in &t.trips {
            if let Some(back) = rt.back_t_ns {
                prop_assert!(back >= rt.out_t_ns);
            } else {
                // Never back: no reload or stream in of it after going out.
                let again = tr.events.iter().any(|e| {
                    e.tensor == t.tensor
                        && e.t_ns >= rt.out_t_ns
                        && matches!(e.kind, EventKind::Reload | EventKind::StreamIn)
                        && e.op != rt.out_op
                });
                prop_assert!(
                    !again,
                    "{what}: {} comes back but its trip says never",
                    t.name
                );
            }
        }
    }
    Ok(())
}

fn configs() -> Vec<(&'static str, SimConfig)> {
    let base = SimConfig::default();
    vec![
        ("plain", base.clone()),
        (
            "fuse",
            SimConfig {
                fuse: true,
                ..base.clone()
            },
        ),
        (
            "fp16",
            SimConfig {
                dtype: ActivationDtype::Fp16,
                ..base.clone()
            },
        ),
        (
            "recompute",
            SimConfig {
                recompute: RecomputeSpec::All(true),
                ..base.clone()
            },
        ),
        (
            "order",
            SimConfig {
                order: OrderSpec::Named(NamedOrder::Memory),
                ..base.clone()
            },
        ),
        (
            "prefetch",
            SimConfig {
                prefetch_distance: Some(3),
                ..base.clone()
            },
        ),
        (
            "resident",
            SimConfig {
                weights: WeightMode::Resident,
                ..base.clone()
            },
        ),
        (
            "ignore",
            SimConfig {
                weights: WeightMode::Ignore,
                ..base
            },
        ),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn every_simulated_trace_verifies_and_replays_to_its_summary(
        g in arb_graph(),
        cap_units in 1u64..48,
        async_dma in any::<bool>(),
        fit in any::<bool>(),
    ) {
        let cap = cap_units * 128;
        let mut hw = test_hw(cap);
        hw.dma.async_dma = async_dma;
        hw.dma.prefetch_distance = if async_dma { 2 } else { 0 };
        if fit {
            hw.memory.allocator = spillscope::cost::hardware::AllocatorFit::BestFit;
        }
        for (name, cfg) in configs() {
            for p in EvictionPolicy::ALL {
                let cfg = SimConfig { policy: p, ..cfg.clone() };
                let tr = simulate(&g, &hw, &cfg).unwrap();
                check(&tr, &format!("{name} {p} at {cap}"))?;
                // And the same trace through a file.
                let back = Trace::from_slice(tr.to_json().as_bytes()).unwrap();
                prop_assert!(back.recomputed.is_empty(), "{:?}", back.recomputed);
            }
        }
    }
}

/// The property above is not vacuous: its cases stream in and out, evict
/// with and without write-backs, reload, and recompute.
#[test]
fn random_cases_exercise_every_part() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut seen = [0u64; 6];
    let mut clean_evicts = 0;
    for _ in 0..60 {
        let g = arb_graph().new_tree(&mut runner).unwrap().current();
        for (cap, (_, cfg)) in [256u64, 1024]
            .into_iter()
            .flat_map(|c| configs().into_iter().map(move |x| (c, x)))
        {
            let tr = simulate(&g, &test_hw(cap), &cfg).unwrap();
            let l = Ledger::of(&tr);
            for (i, p) in Part::ALL.iter().enumerate() {
                seen[i] += l.total.get(*p).count;
            }
            clean_evicts += tr
                .events
                .iter()
                .filter(|e| e.kind == EventKind::Evict && e.written_bytes == Some(0))
                .count();
        }
    }
    eprintln!("parts seen (evicted out, reloaded, streamed in, streamed out, weights, input loads): {seen:?}; evictions without a write-back: {clean_evicts}");
    assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
    assert!(clean_evicts > 0);
}

/// The shared models at 25, 50 and 75 % of their peak live bytes, every
/// policy: verify passes and the replay reproduces the summary.
#[cfg(feature = "onnx")]
#[test]
fn shared_models_replay_to_their_summaries() {
    let Some(dir) = common::shared_data("models") else {
        return;
    };
    for name in [
        "resnet18.shapes.onnx",
        "mobilenet_v2.shapes.onnx",
        "squeezenet1_1.shapes.onnx",
        "resnet50_b8.shapes.onnx",
    ] {
        let g = spillscope::graph::load(&dir.join(name), &Default::default()).unwrap();
        let peak = spillscope::graph::Liveness::compute(&g).peak_bytes;
        for pct in [25u64, 50, 75] {
            let hw = HardwareProfile::preset("seed-npu")
                .unwrap()
                .with_capacity(peak * pct / 100)
                .unwrap();
            for p in EvictionPolicy::ALL {
                let tr = simulate(&g, &hw, &SimConfig::with_policy(p)).unwrap();
                let what = format!("{name} at {pct}% {p}");
                let rep = verify(&tr, 5);
                assert!(rep.ok(), "{what}: {:?}", rep.violations);
                assert_eq!(replay(&tr).unwrap(), summary_fields(&tr), "{what}");
                assert!(
                    tr.summary.lower_bound_traffic_bytes <= tr.summary.traffic_bytes,
                    "{what}"
                );
                if p != EvictionPolicy::Ideal && pct < 75 {
                    assert!(tr.summary.traffic_bytes > 0, "{what}: no spill traffic");
                }
            }
        }
    }
}

/// A tensor evicted and later streamed in by a consumer: its round trip
/// ends at that consumer (streamed), not "never".
#[test]
fn a_round_trip_ends_at_the_stream_in_that_brings_it_back() {
    // x is produced, evicted while `big` runs (which needs all the room),
    // then read by `wide`, whose working set does not fit: x streams in.
    let k = 1024;
    let g = common::typed(
        &[
            ("p", "Relu", &["in"], &["x"]),
            ("big", "Relu", &["in"], &["y"]),
            ("wide", "Add", &["x", "y", "in"], &["z"]),
        ],
        &[("in", 4 * k), ("x", 4 * k), ("y", 10 * k), ("z", 8 * k)],
        &["z"],
    );
    let hw = test_hw(16 * k);
    let tr = simulate(&g, &hw, &SimConfig::with_policy(EvictionPolicy::Lru)).unwrap();
    let ledger = Ledger::of(&tr);
    let x = tr.tensors.iter().position(|t| t.name == "x").unwrap();
    let trips = round_trips(&tr, &ledger);
    let tx = trips.iter().find(|t| t.tensor == x).expect("x goes out");
    assert_eq!(tx.trips.len(), 1);
    let wide = tr.ops.iter().position(|o| o.name == "wide").unwrap();
    assert!(tr.ops.at(wide).streamed.contains(&x), "x streams into wide");
    assert_eq!(tx.trips[0].back, Some(Back::StreamedIn));
    assert_eq!(tx.trips[0].back_op, Some(wide));
    assert_eq!(replay(&tr).unwrap(), summary_fields(&tr));
}

/// Traces written before the ledger (no stream events, no `written_bytes`,
/// streamed bytes folded into spilled/reloaded) still load: the summary is
/// recomputed from the events and the reader is told which fields changed.
#[test]
fn traces_from_before_the_ledger_load_with_the_recomputed_fields_named() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/legacy/edge-resnet50-b3.lru.v0.json");
    let raw: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    let tr = Trace::load(&p).unwrap();
    let changed: Vec<&str> = tr.recomputed.iter().map(|m| m.field).collect();
    assert!(changed.contains(&"spilled_bytes"), "{changed:?}");
    assert!(changed.contains(&"reloaded_bytes"), "{changed:?}");
    for m in &tr.recomputed {
        if let Some(v) = raw["summary"][m.field].as_u64() {
            assert_eq!(m.stored, v, "{}", m.field);
        }
    }
    // The stored figures folded streaming in: they were larger.
    let old = &raw["summary"];
    assert!(old["spilled_bytes"].as_u64().unwrap() > tr.summary.spilled_bytes);
    let l = Ledger::of(&tr);
    assert!(!l.derived_streams.is_empty());
    // Streamed parts derived from the ops' lists; the sum still holds.
    assert_eq!(
        tr.summary.traffic_bytes,
        tr.summary.spilled_bytes
            + tr.summary.reloaded_bytes
            + tr.summary.streamed_in_bytes
            + tr.summary.streamed_out_bytes
    );
    assert!(tr.summary.streamed_out_bytes > 0);
    // verify says what is missing.
    let rep = verify(&tr, 50);
    assert!(rep
        .violations
        .iter()
        .any(|v| v.rule == "stream-event-missing"));
    assert!(rep.violations.iter().any(|v| v.rule == "ledger"));
}

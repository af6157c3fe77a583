//! Graph rewrites the what-if engine re-simulates, on hand-built graphs with
//! known answers: a fusion that removes exactly one spill, a recompute that
//! beats a reload, a memory-aware order that lowers peak live bytes, order
//! overrides, and SCHED.toml carrying all of them.

use crate::common;
use common::{test_hw, typed};
use spillscope::analysis::suggest::suggest;
use spillscope::graph::transform::{
    fuse, memory_aware_order, order_with_overrides, reorder, NamedOrder, OrderSpec,
};
use spillscope::graph::{Graph, Liveness};
use spillscope::sim::{
    simulate, ActivationDtype, EvictionPolicy, RecomputeSpec, ScheduleFile, SimConfig, WeightMode,
};
use spillscope::trace::{verify::verify, EventKind};

const K: u64 = 1024;

fn lru() -> SimConfig {
    SimConfig {
        policy: EvictionPolicy::Lru,
        weights: WeightMode::Ignore,
        ..Default::default()
    }
}

/// A long-lived tensor L competes with conv's output c and relu's output r;
/// fused, c never exists and L stays.
fn fusion_graph() -> Graph {
    typed(
        &[
            ("p", "Identity", &["x"], &["L"]),
            ("conv", "Conv", &["x"], &["c"]),
            ("relu", "Relu", &["c"], &["r"]),
            ("cat", "Concat", &["r", "L"], &["out"]),
        ],
        &[("L", 200 * K), ("c", 256 * K), ("r", 256 * K)],
        &["out"],
    )
}

#[test]
fn fusion_removes_exactly_one_spill() {
    let g = fusion_graph();
    let hw = test_hw(600 * K);
    let plain = simulate(&g, &hw, &lru()).unwrap();
    assert_eq!(plain.summary.spill_count, 1, "L is evicted once");
    assert_eq!(plain.summary.reloaded_bytes, 200 * K);

    let (fused, fusions) = fuse(&g).unwrap();
    assert_eq!(fusions.len(), 1);
    assert_eq!(fusions[0].ops, vec!["conv", "relu"]);
    assert_eq!(fusions[0].removed_tensors, vec!["c"]);
    assert_eq!(fusions[0].removed_bytes, 256 * K);
    assert_eq!(fused.ops.len(), 3);
    assert!(fused.tensor_by_name("c").is_none());
    assert_eq!(fused.ops.at(1).op_type, "Conv+Relu");

    let cfg = SimConfig {
        fuse: true,
        ..lru()
    };
    let tr = simulate(&g, &hw, &cfg).unwrap();
    assert_eq!(tr.summary.spill_count, 0);
    assert_eq!(tr.summary.traffic_bytes, 0);
    assert!(verify(&tr, 10).violations.is_empty());
    assert!(tr.summary.latency_ns < plain.summary.latency_ns);
    // And the suggestion says so, with the gain of that exact run.
    let s = suggest(&g, &hw, &lru()).unwrap();
    let f = s
        .suggestions
        .iter()
        .find(|x| x.kind().as_str() == "fuse")
        .unwrap();
    assert_eq!(f.run.latency_ns, tr.summary.latency_ns);
    assert_eq!(
        f.gain_ns,
        plain.summary.latency_ns as i64 - tr.summary.latency_ns as i64
    );
}

#[test]
fn fusion_stops_at_shared_or_output_intermediates() {
    // c is read twice: no fusion through it.
    let g = typed(
        &[
            ("conv", "Conv", &["x"], &["c"]),
            ("relu", "Relu", &["c"], &["r"]),
            ("add", "Add", &["r", "c"], &["out"]),
        ],
        &[],
        &["out"],
    );
    assert!(fuse(&g).unwrap().1.is_empty());
    // A graph output is never fused away.
    let g = typed(
        &[
            ("conv", "Conv", &["x"], &["c"]),
            ("relu", "Relu", &["c"], &["r"]),
        ],
        &[],
        &["c", "r"],
    );
    assert!(fuse(&g).unwrap().1.is_empty());
    // conv -> bn -> relu -> add(skip) is one chain of four.
    let g = typed(
        &[
            ("conv", "Conv", &["x"], &["c"]),
            ("bn", "BatchNormalization", &["c"], &["b"]),
            ("relu", "Relu", &["b"], &["r"]),
            ("add", "Add", &["r", "x"], &["out"]),
        ],
        &[],
        &["out"],
    );
    let (h, f) = fuse(&g).unwrap();
    assert_eq!(f[0].ops, vec!["conv", "bn", "relu", "add"]);
    assert_eq!(h.ops.len(), 1);
    assert_eq!(h.ops.at(0).inputs.len(), 1, "x once");
}

/// `a` is cheap to recompute from `x`, which stays resident; reloading it
/// costs a DRAM transfer.
fn recompute_graph() -> Graph {
    typed(
        &[
            ("f", "Relu", &["x"], &["a"]),
            ("g", "Identity", &["x"], &["b"]),
            ("h", "Identity", &["b"], &["c"]),
            ("k", "Add", &["a", "x", "c"], &["out"]),
        ],
        &[
            ("x", 256 * K),
            ("a", 256 * K),
            ("b", 512 * K),
            ("c", 256 * K),
            ("out", 16 * K),
        ],
        &["out"],
    )
}

#[test]
fn recompute_beats_reload() {
    let g = recompute_graph();
    let hw = test_hw(1024 * K);
    let plain = simulate(&g, &hw, &lru()).unwrap();
    let reloads: Vec<_> = plain
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Reload)
        .map(|e| plain.tensors.at(e.tensor).name)
        .collect();
    assert_eq!(reloads, vec!["a"]);

    let cfg = SimConfig {
        recompute: RecomputeSpec::Tensors(vec!["a".into()]),
        ..lru()
    };
    let tr = simulate(&g, &hw, &cfg).unwrap();
    let recomputed: Vec<_> = tr
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Recompute)
        .map(|e| tr.tensors.at(e.tensor).name)
        .collect();
    assert_eq!(recomputed, vec!["a"]);
    assert_eq!(tr.summary.reloaded_bytes, 0);
    assert_eq!(tr.summary.recompute_saved_bytes, 256 * K);
    assert!(
        verify(&tr, 10).violations.is_empty(),
        "{:?}",
        verify(&tr, 10).violations
    );
    assert!(
        tr.summary.latency_ns < plain.summary.latency_ns,
        "recompute {} vs reload {}",
        tr.summary.latency_ns,
        plain.summary.latency_ns
    );
    // Not allowed for other tensors, nothing changes.
    let other = SimConfig {
        recompute: RecomputeSpec::Tensors(vec!["b".into()]),
        ..lru()
    };
    assert_eq!(
        simulate(&g, &hw, &other).unwrap().summary.latency_ns,
        plain.summary.latency_ns
    );
    // The suggestion names the tensor and its gain is that run's.
    let s = suggest(&g, &hw, &lru()).unwrap();
    let r = s
        .suggestions
        .iter()
        .find(|x| x.kind().as_str() == "recompute")
        .unwrap();
    assert!(r.description.contains("recompute a "), "{}", r.description);
    assert_eq!(r.run.latency_ns, tr.summary.latency_ns);
    assert_eq!(r.sim_config.as_ref().unwrap().recompute, cfg.recompute);
}

#[test]
fn recompute_is_refused_when_the_producer_input_is_gone() {
    // x dies before a is needed again: a must be reloaded.
    let g = typed(
        &[
            ("f", "Relu", &["x"], &["a"]),
            ("g", "Identity", &["x"], &["b"]),
            ("h", "Identity", &["b"], &["c"]),
            ("k", "Add", &["a", "c"], &["out"]),
        ],
        &[
            ("x", 256 * K),
            ("a", 256 * K),
            ("b", 512 * K),
            ("c", 256 * K),
            ("out", 16 * K),
        ],
        &["out"],
    );
    let hw = test_hw(900 * K);
    let cfg = SimConfig {
        recompute: RecomputeSpec::All(true),
        ..lru()
    };
    let tr = simulate(&g, &hw, &cfg).unwrap();
    assert!(tr.events.iter().all(|e| e.kind != EventKind::Recompute));
    assert!(
        tr.summary.reloaded_bytes >= 256 * K,
        "a is reloaded instead"
    );
}

/// Two independent branches, each big then small: file order interleaves
/// them (both big tensors live at once); the memory-aware order finishes one
/// branch first.
fn branches_graph() -> Graph {
    typed(
        &[
            ("a1", "Identity", &["x"], &["A"]),
            ("b1", "Identity", &["x"], &["B"]),
            ("a2", "Identity", &["A"], &["a"]),
            ("b2", "Identity", &["B"], &["b"]),
            ("join", "Add", &["a", "b"], &["out"]),
        ],
        &[("A", 512 * K), ("B", 512 * K), ("a", 16 * K), ("b", 16 * K)],
        &["out"],
    )
}

#[test]
fn memory_aware_order_lowers_peak_live_bytes() {
    let g = branches_graph();
    let before = Liveness::compute(&g).peak_bytes;
    let order = memory_aware_order(&g);
    let h = reorder(&g, &order).unwrap();
    let names: Vec<&str> = h.ops.iter().map(|o| o.name).collect();
    assert_eq!(names, vec!["a1", "a2", "b1", "b2", "join"]);
    let after = Liveness::compute(&h).peak_bytes;
    assert_eq!(before, 64 * K + 512 * K + 512 * K);
    assert_eq!(after, 64 * K + 512 * K + 16 * K);
    // At a capacity between the two peaks, the reorder removes all spill traffic.
    let hw = test_hw(800 * K);
    let plain = simulate(&g, &hw, &lru()).unwrap();
    let cfg = SimConfig {
        order: OrderSpec::Named(NamedOrder::Memory),
        ..lru()
    };
    let tr = simulate(&g, &hw, &cfg).unwrap();
    assert!(plain.summary.traffic_bytes > 0);
    assert_eq!(tr.summary.traffic_bytes, 0);
    let s = suggest(&g, &hw, &lru()).unwrap();
    let r = s
        .suggestions
        .iter()
        .find(|x| x.kind().as_str() == "reorder")
        .unwrap();
    assert_eq!(r.run.latency_ns, tr.summary.latency_ns);
    assert!(r.description.contains("2 ops move"), "{}", r.description);
}

#[test]
fn order_overrides_are_followed_or_named() {
    let g = branches_graph();
    let o = order_with_overrides(&g, &["b1".into(), "b2".into(), "a1".into()]).unwrap();
    let names: Vec<&str> = o.iter().map(|&i| g.ops.at(i).name).collect();
    assert_eq!(names, vec!["b1", "b2", "a1", "a2", "join"]);
    let e = order_with_overrides(&g, &["a2".into(), "a1".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"a2\""), "{e}");
    let e = order_with_overrides(&g, &["nope".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("no op named \"nope\""), "{e}");
}

#[test]
fn schedule_file_carries_rewrites_both_ways() {
    let text = r#"
policy = "belady"
fuse = true
dtype = "fp16"
order = ["b1", "b2"]
recompute = ["a"]
"#;
    let f: ScheduleFile = toml::from_str(text).unwrap();
    let cfg = f.apply(SimConfig::default());
    assert!(cfg.fuse);
    assert_eq!(cfg.dtype, ActivationDtype::Fp16);
    assert_eq!(cfg.order, OrderSpec::Ops(vec!["b1".into(), "b2".into()]));
    assert_eq!(cfg.recompute, RecomputeSpec::Tensors(vec!["a".into()]));
    let back: ScheduleFile = toml::from_str(&ScheduleFile::from_config(&cfg).to_toml()).unwrap();
    assert_eq!(back.apply(SimConfig::default()), cfg);
    // Named order and boolean recompute parse too; unknown values are errors.
    let f: ScheduleFile = toml::from_str("order = \"memory\"\nrecompute = true\n").unwrap();
    let cfg = f.apply(SimConfig::default());
    assert_eq!(cfg.order, OrderSpec::Named(NamedOrder::Memory));
    assert_eq!(cfg.recompute, RecomputeSpec::All(true));
    assert!(toml::from_str::<ScheduleFile>("dtype = \"int3\"\n").is_err());
    assert!(toml::from_str::<ScheduleFile>("fusion = true\n").is_err());
}

#[test]
fn fp16_halves_activation_bytes_in_the_run() {
    let g = fusion_graph();
    let hw = test_hw(600 * K);
    let cfg = SimConfig {
        dtype: ActivationDtype::Fp16,
        ..lru()
    };
    let tr = simulate(&g, &hw, &cfg).unwrap();
    let c = tr.tensors.iter().find(|t| t.name == "c").unwrap();
    assert_eq!(c.bytes, 128 * K);
    assert_eq!(tr.summary.spill_count, 0);
}

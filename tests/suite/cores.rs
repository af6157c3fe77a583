//! Several cores on one DRAM bus (`[cores]`, `--cores`): each core runs
//! its share of the batch, the bus divides its time among the cores'
//! transfers, and each op's stall splits into its own and contention.

use crate::common;
use common::replay::{replay, summary_fields};
use proptest::prelude::*;
use spillscope::cost::HardwareProfile;
use spillscope::graph::{self, Graph, LoadOptions};
use spillscope::sim::{simulate, EvictionPolicy, SimConfig};
use spillscope::trace::verify::verify;
use spillscope::trace::Trace;

fn encdec() -> Graph {
    graph::load(
        std::path::Path::new("tests/data/encoder_decoder.json"),
        &LoadOptions::default(),
    )
    .unwrap()
}

fn hw(capacity: u64, cores: u32) -> HardwareProfile {
    HardwareProfile::preset("seed-npu")
        .unwrap()
        .with_capacity(capacity)
        .unwrap()
        .with_cores(cores)
        .unwrap()
}

/// Every multi-core trace passes verify (per-core pools, no overlap, the
/// ledger replayed), its bus is never more than fully busy, and its
/// contention is a part of its stall.
fn check(tr: &Trace, what: &str) {
    let rep = verify(tr, 5);
    assert!(rep.ok(), "{what}: {:?}", rep.violations);
    let s = &tr.summary;
    assert_eq!(replay(tr).unwrap(), summary_fields(tr), "{what}");
    let bus = tr
        .counters
        .iter()
        .find(|c| c.name == "bus_occupancy")
        .unwrap();
    assert!(
        bus.samples.iter().all(|&(_, f)| (0.0..=1.0).contains(&f)),
        "{what}"
    );
    let ops_contention: u64 = tr.ops.iter().filter_map(|o| o.contention_ns).sum();
    assert_eq!(ops_contention, s.contention_ns, "{what}");
    assert!(s.contention_ns <= s.stall_ns, "{what}");
    for o in &tr.ops {
        assert!(
            o.contention_ns.unwrap_or(0) <= o.stall_ns,
            "{what}: {}",
            o.name
        );
    }
}

#[test]
fn two_cores_share_the_bus_and_pass_verify() {
    let g = encdec();
    let peak = graph::Liveness::compute(&g).peak_bytes;
    for p in EvictionPolicy::ALL {
        for cores in [2, 4] {
            let tr = simulate(&g, &hw(peak / 6, cores), &SimConfig::with_policy(p)).unwrap();
            let what = format!("{p} on {cores} cores");
            check(&tr, &what);
            assert_eq!(tr.summary.cores, cores, "{what}");
            assert_eq!(tr.ops.len(), g.ops.len() * cores as usize, "{what}");
            let units: std::collections::BTreeSet<_> = tr
                .ops
                .iter()
                .filter_map(|o| o.unit.as_ref())
                .map(|u| u.as_str())
                .collect();
            assert_eq!(units.len(), cores as usize, "{what}: {units:?}");
            assert_eq!(tr.pools.len(), cores as usize, "{what}");
            if p != EvictionPolicy::Ideal {
                assert!(tr.summary.contention_ns > 0, "{what}: no contention");
            }
        }
    }
}

/// The same work per core: 2 cores each on half the batch against 1 core
/// on that half. Under pressure the shared bus makes the pair slower, but
/// not twice as slow; the per-core bound is the sum of the cores'.
#[test]
fn two_cores_on_half_a_batch_each_collide_on_the_bus() {
    let g = encdec();
    let half = spillscope::graph::transform::split_batch(&g, 2).unwrap();
    let peak = graph::Liveness::compute(&half).peak_bytes;
    let cfg = SimConfig::with_policy(EvictionPolicy::Lru);
    let one = simulate(&half, &hw(peak / 4, 1), &cfg).unwrap();
    let two = simulate(&g, &hw(peak / 4, 2), &cfg).unwrap();
    check(&two, "lru at a quarter of the peak");
    let (l1, l2) = (one.summary.latency_ns, two.summary.latency_ns);
    assert!(l2 as f64 > 1.05 * l1 as f64, "{l2} vs {l1}");
    assert!(l2 < 2 * l1, "{l2} vs {l1}");
    assert_eq!(two.summary.traffic_bytes, 2 * one.summary.traffic_bytes);
    assert_eq!(
        two.summary.lower_bound_traffic_bytes,
        2 * one.summary.lower_bound_traffic_bytes
    );
    // No spill and an ample bus: the cores barely meet.
    let roomy = hw(4 * peak, 2).with_bandwidth(1e15);
    let alone = simulate(&half, &hw(4 * peak, 1).with_bandwidth(1e15), &cfg).unwrap();
    let pair = simulate(&g, &roomy, &cfg).unwrap();
    let (a, b) = (alone.summary.latency_ns, pair.summary.latency_ns);
    assert!((b as f64) <= 1.05 * a as f64, "{b} vs {a}");
}

/// `cores = 1` is today's simulator: the profile written out is the same
/// and so is every figure.
#[test]
fn one_core_is_the_single_core_simulator() {
    let g = encdec();
    let base = HardwareProfile::preset("seed-npu")
        .unwrap()
        .with_capacity(1 << 20)
        .unwrap();
    let one = base.clone().with_cores(1).unwrap();
    assert_eq!(base.to_toml(), one.to_toml());
    let cfg = SimConfig::with_policy(EvictionPolicy::Belady);
    let a = serde_json::to_string(&simulate(&g, &base, &cfg).unwrap()).unwrap();
    let b = serde_json::to_string(&simulate(&g, &one, &cfg).unwrap()).unwrap();
    assert_eq!(a, b);
    assert!(!a.contains("contention_ns"));
}

#[test]
fn a_batch_the_cores_cannot_share_is_refused_in_one_line() {
    let g = encdec();
    let err = simulate(&g, &hw(1 << 20, 3), &SimConfig::default()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("128") && msg.contains("3 cores"), "{msg}");
    assert!(!msg.contains('\n'));
    let err = HardwareProfile::preset("seed-npu")
        .unwrap()
        .with_cores(0)
        .unwrap_err();
    assert!(err.to_string().contains("cores.count"), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    /// With a bus of unbounded bandwidth (and no setup latency) no core
    /// ever waits for another; contention is never negative and never more
    /// than the stall it is part of.
    #[test]
    fn contention_is_zero_on_an_unbounded_bus(
        cores in prop::sample::select(vec![2u32, 4]),
        pct in 10u64..90,
        policy in 1usize..4,
    ) {
        let g = encdec();
        let peak = graph::Liveness::compute(&g).peak_bytes;
        let cfg = SimConfig::with_policy(EvictionPolicy::ALL[policy]);
        let mut h = hw(peak * pct / 100, cores).with_bandwidth(1e18);
        h.dram.latency_ns = 0.0;
        let tr = simulate(&g, &h, &cfg).unwrap();
        check(&tr, "unbounded bus");
        prop_assert_eq!(tr.summary.contention_ns, 0);
        let tight = simulate(&g, &hw(peak * pct / 100, cores), &cfg).unwrap();
        check(&tight, "seed bus");
    }
}

/// ResNet-50 at batch 4 split over 2 cores against batch 2 on 1 core (the
/// same work per core): slower by more than 5 % under 4 MiB per core (the
/// transfers collide), yet faster than twice; within 5 % with no spill and
/// an ample bus.
#[cfg(feature = "onnx")]
#[test]
fn resnet50_batch_four_on_two_cores() {
    let Some(dir) = common::shared_data("models") else {
        return;
    };
    let path = dir.join("resnet50_b8.shapes.onnx");
    let at = |batch| {
        graph::load(
            &path,
            &LoadOptions {
                batch: Some(batch),
                ..Default::default()
            },
        )
        .unwrap()
    };
    let (b4, b2) = (at(4), at(2));
    let cfg = SimConfig::with_policy(EvictionPolicy::Lru);
    let one = simulate(&b2, &hw(4 << 20, 1), &cfg).unwrap();
    let two = simulate(&b4, &hw(4 << 20, 2), &cfg).unwrap();
    check(&two, "resnet50 at 4 MiB per core");
    let (l1, l2) = (one.summary.latency_ns, two.summary.latency_ns);
    eprintln!(
        "resnet50 lru 4 MiB: 1 core b2 {l1} ns, 2 cores b4 {l2} ns, contention {} ns",
        two.summary.contention_ns
    );
    assert!(l2 as f64 > 1.05 * l1 as f64, "{l2} vs {l1}");
    assert!(l2 < 2 * l1, "{l2} vs {l1}");
    let ample = |cores| hw(1 << 30, cores).with_bandwidth(1e13);
    let one = simulate(&b2, &ample(1), &cfg).unwrap();
    let two = simulate(&b4, &ample(2), &cfg).unwrap();
    check(&two, "resnet50 with no spill");
    let (l1, l2) = (one.summary.latency_ns, two.summary.latency_ns);
    eprintln!("resnet50 no spill: 1 core b2 {l1} ns, 2 cores b4 {l2} ns");
    assert!((l2 as f64) <= 1.05 * l1 as f64, "{l2} vs {l1}");
}

/// Suggestions on a multi-core run name the graph's tensors (a pin keeps
/// a tensor on every core), so each one re-simulates.
#[test]
fn suggestions_on_several_cores_pin_the_graphs_tensors() {
    let g = encdec();
    let cfg = SimConfig::with_policy(EvictionPolicy::Lru);
    // Evictions, so pins of the busiest evicted tensors are tried (with a
    // core's name they failed the whole suggestion run).
    let h = hw(768 << 10, 2);
    assert!(simulate(&g, &h, &cfg).unwrap().summary.spill_count > 0);
    let s = spillscope::analysis::suggest::suggest(&g, &h, &cfg).unwrap();
    let pins: Vec<&str> = s
        .suggestions
        .iter()
        .filter_map(|x| match &x.change {
            spillscope::analysis::suggest::Change::Pin { tensor } => Some(tensor.as_str()),
            _ => None,
        })
        .collect();
    for p in &pins {
        assert!(g.tensor_by_name(p).is_some(), "{p}");
    }
    eprintln!("{} suggestions, pins {pins:?}", s.suggestions.len());
}

fn graph_split(cores: u32, capacity: u64, policy: EvictionPolicy) -> (Graph, Trace) {
    let g = encdec();
    let cfg = SimConfig {
        split: spillscope::sim::config::Split::Graph,
        ..SimConfig::with_policy(policy)
    };
    let tr = simulate(&g, &hw(capacity, cores), &cfg).unwrap();
    (g, tr)
}

/// `--split graph`: every op runs once, on one core; a tensor read on
/// another core than its producer's is streamed out there and read in
/// here only after it reached DRAM, and no op ends before its inputs'
/// producers; every trace passes verify.
#[test]
fn a_graph_split_runs_each_op_once_and_crosses_through_dram() {
    for cores in [2u32, 4] {
        for p in EvictionPolicy::ALL {
            let (g, tr) = graph_split(cores, 1 << 20, p);
            let what = format!("{p} on {cores} cores, split graph");
            check(&tr, &what);
            assert_eq!(tr.ops.len(), g.ops.len(), "{what}");
            let mut seen = std::collections::BTreeSet::new();
            for o in &tr.ops {
                assert!(
                    seen.insert(spillscope::sim::cores::graph_name(&o.name).to_string()),
                    "{what}"
                );
            }
            // When each (graph) tensor reached DRAM from another core.
            let mut out_at = std::collections::HashMap::new();
            let mut end_of = std::collections::HashMap::new();
            for o in &tr.ops {
                for &t in &o.outputs {
                    end_of.insert(
                        spillscope::sim::cores::graph_name(&tr.tensors[t].name),
                        o.end_ns,
                    );
                }
            }
            for e in tr.events.iter() {
                if e.kind == spillscope::trace::EventKind::StreamOut {
                    let name =
                        spillscope::sim::cores::graph_name(&tr.tensors[e.tensor].name).to_string();
                    out_at.insert(name, e.dma_end_ns.unwrap());
                }
            }
            let mut crossings = 0;
            for e in tr.events.iter() {
                let t = &tr.tensors[e.tensor];
                let name = spillscope::sim::cores::graph_name(&t.name);
                let is_load = matches!(
                    e.kind,
                    spillscope::trace::EventKind::Alloc | spillscope::trace::EventKind::StreamIn
                ) && e.dma_start_ns.is_some();
                let crossed = t.kind == spillscope::graph::TensorKind::Input
                    && g.tensor_by_name(name).is_some_and(|x| x.producer.is_some());
                if is_load && crossed {
                    crossings += 1;
                    let published = out_at[name];
                    assert!(
                        e.dma_start_ns.unwrap() >= published,
                        "{what}: {name} read before it was written"
                    );
                }
            }
            for o in &tr.ops {
                for &t in &o.inputs {
                    let name = spillscope::sim::cores::graph_name(&tr.tensors[t].name);
                    // An op's interval includes its wait for data, so it
                    // may start first, but it cannot end before its input
                    // was produced.
                    if let Some(&end) = end_of.get(name) {
                        assert!(
                            o.end_ns >= end,
                            "{what}: {} before its input {name}",
                            o.name
                        );
                    }
                }
            }
            if p == EvictionPolicy::Lru {
                eprintln!(
                    "{what}: {crossings} reads of tensors from another core, latency {} ns",
                    tr.summary.latency_ns
                );
            }
        }
    }
}

/// The schedule config pins ops to cores; an unknown op or a core past the
/// run's is refused naming it; on one core a graph split is the single-core
/// simulator.
#[test]
fn a_placement_pins_ops_and_one_core_ignores_the_split() {
    let g = encdec();
    let mut cfg = SimConfig {
        split: spillscope::sim::config::Split::Graph,
        ..SimConfig::with_policy(EvictionPolicy::Lru)
    };
    cfg.placement.insert("dec5.ffn.fc2".into(), 1);
    cfg.placement.insert("enc0.attn.sdpa".into(), 1);
    let tr = simulate(&g, &hw(1 << 20, 2), &cfg).unwrap();
    check(&tr, "pinned");
    for name in ["dec5.ffn.fc2", "enc0.attn.sdpa"] {
        let o = tr
            .ops
            .iter()
            .find(|o| spillscope::sim::cores::graph_name(&o.name) == name)
            .unwrap();
        assert_eq!(o.unit.as_ref().unwrap().as_str(), "core1", "{name}");
    }
    cfg.placement.insert("no_such_op".into(), 0);
    let err = simulate(&g, &hw(1 << 20, 2), &cfg).unwrap_err().to_string();
    assert!(err.contains("no_such_op"), "{err}");
    cfg.placement.remove("no_such_op");
    cfg.placement.insert("dec0.ffn.fc1".into(), 2);
    let err = simulate(&g, &hw(1 << 20, 2), &cfg).unwrap_err().to_string();
    assert!(err.contains("core 2") && err.contains("2 cores"), "{err}");
    let one = SimConfig {
        split: spillscope::sim::config::Split::Graph,
        ..SimConfig::with_policy(EvictionPolicy::Belady)
    };
    let base = HardwareProfile::preset("seed-npu")
        .unwrap()
        .with_capacity(1 << 20)
        .unwrap();
    let a = simulate(&g, &base, &SimConfig::with_policy(EvictionPolicy::Belady)).unwrap();
    let b = simulate(&g, &base, &one).unwrap();
    assert_eq!(a.summary, b.summary);
    assert_eq!(a.events, b.events);
}

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
    // Each core's ops tile its time: their shares add up to at most 100 %.
    let ledger = spillscope::trace::ledger::Ledger::of(tr);
    let share: f64 = spillscope::analysis::hotspots::hotspots(tr, &ledger)
        .iter()
        .map(|h| h.latency_share)
        .sum();
    assert!(
        share <= 1.0 + 1e-9,
        "{what}: ops take {share} of the cores' time"
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
                .filter_map(|o| o.unit)
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
                    seen.insert(spillscope::sim::cores::graph_name(o.name).to_string()),
                    "{what}"
                );
            }
            // When each (graph) tensor reached DRAM from another core.
            let mut out_at = std::collections::HashMap::new();
            let mut end_of = std::collections::HashMap::new();
            for o in &tr.ops {
                for &t in o.outputs {
                    end_of.insert(
                        spillscope::sim::cores::graph_name(tr.tensors.at(t).name),
                        o.end_ns,
                    );
                }
            }
            for e in tr.events.iter() {
                if e.kind == spillscope::trace::EventKind::StreamOut {
                    let name = spillscope::sim::cores::graph_name(tr.tensors.at(e.tensor).name)
                        .to_string();
                    out_at.insert(name, e.dma_end_ns.unwrap());
                }
            }
            let mut crossings = 0;
            for e in tr.events.iter() {
                let t = &tr.tensors.at(e.tensor);
                let name = spillscope::sim::cores::graph_name(t.name);
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
                for &t in o.inputs {
                    let name = spillscope::sim::cores::graph_name(tr.tensors.at(t).name);
                    // An op starts once its inputs from other cores are in
                    // DRAM (its core idles meanwhile, which is no stall),
                    // and cannot end before they were produced.
                    if let Some(&end) = end_of.get(name) {
                        assert!(
                            o.end_ns >= end,
                            "{what}: {} before its input {name}",
                            o.name
                        );
                    }
                    if let Some(&out) = out_at.get(name) {
                        if tr.tensors.at(t).kind == spillscope::graph::TensorKind::Input {
                            assert!(
                                o.start_ns >= out,
                                "{what}: {} before {name} in DRAM",
                                o.name
                            );
                        }
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
            .find(|o| spillscope::sim::cores::graph_name(o.name) == name)
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

/// `whatif --cores 1,2,4`: one row per core count at each capacity, each
/// the figures `simulate` gives on that many cores (contention included);
/// the table gains a cores column and each core count its own knee.
#[test]
fn whatif_sweeps_core_counts() {
    let model =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/encoder_decoder.json");
    let run = |format: &str| {
        let o = assert_cmd::Command::cargo_bin("spillscope")
            .unwrap()
            .args([
                "whatif",
                model.to_str().unwrap(),
                "--capacity",
                "512KiB,1MiB",
            ])
            .args(["--cores", "1,2,4", "--ilp-time", "0", "--format", format])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let v: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 6);
    let g = encdec();
    let cfg = SimConfig::with_policy(EvictionPolicy::Lru);
    let mut contended = 0;
    for (i, (cores, cap)) in [1u32, 2, 4]
        .iter()
        .flat_map(|&k| [(k, 512u64 << 10), (k, 1 << 20)])
        .enumerate()
    {
        let r = &runs[i];
        let tr = simulate(&g, &hw(cap, cores), &cfg).unwrap();
        let what = format!("{cores} cores at {cap}");
        assert_eq!(r["capacity_bytes"], cap, "{what}");
        assert_eq!(r["cores"].as_u64().unwrap_or(1), u64::from(cores), "{what}");
        assert_eq!(r["latency_ns"], tr.summary.latency_ns, "{what}");
        assert_eq!(r["traffic_bytes"], tr.summary.traffic_bytes, "{what}");
        if cores > 1 {
            assert_eq!(r["contention_ns"], tr.summary.contention_ns, "{what}");
            contended += u64::from(tr.summary.contention_ns > 0);
        } else {
            assert!(r.get("contention_ns").is_none(), "{what}");
        }
    }
    assert!(contended > 0, "no row had contention");
    let table = run("table");
    let head: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(head[..3], ["capacity", "cores", "policy"], "{table}");
    assert!(table.contains("contention"), "{table}");
    for k in [1, 2, 4] {
        let noun = if k == 1 { "core" } else { "cores" };
        assert!(table.contains(&format!("lru on {k} {noun}: ")), "{table}");
    }
    // A core count out of range is named once, in one line.
    let o = assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .args(["whatif", model.to_str().unwrap(), "--cores", "1,0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert_eq!(
        err.trim(),
        "spillscope: error: config: --cores 1,0: 0 cores: from 1 to 64"
    );
    let csv = run("csv");
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .ends_with(",cores,contention_ns"),
        "{csv}"
    );
    assert_eq!(
        csv.lines().nth(3).unwrap().split(',').nth(17),
        Some("2"),
        "{csv}"
    );
}

/// On several cores, `suggest` re-simulates the other split and half and
/// twice the cores, listing each that saves time with the simulator's
/// figures: on the encoder-decoder at 1 MiB per core, 4 cores split by
/// batch are slower than 2 (their spills collide on the bus), so from 4
/// cores going down to 2 is suggested and from 2 going up to 4 is not;
/// from a graph split, splitting by batch saves time and is a line a
/// schedule config can hold.
#[test]
fn suggest_proposes_a_core_count_and_a_split() {
    use spillscope::analysis::suggest::{noise_floor_ns, suggest, Change};
    use spillscope::sim::config::Split;
    let g = encdec();
    let cfg = SimConfig::with_policy(EvictionPolicy::Lru);
    let lat = |k: u32, c: &SimConfig| simulate(&g, &hw(1 << 20, k), c).unwrap().summary.latency_ns;
    let (two, four) = (lat(2, &cfg), lat(4, &cfg));
    assert!(four > two + noise_floor_ns(four), "{four} vs {two}");
    let s = suggest(&g, &hw(1 << 20, 4), &cfg).unwrap();
    let down = s
        .suggestions
        .iter()
        .find(|x| matches!(x.change, Change::Cores { count: 2, .. }))
        .expect("2 cores suggested");
    assert_eq!(down.run.latency_ns, two);
    assert_eq!(down.gain_ns, four as i64 - two as i64);
    assert!(
        down.description
            .starts_with("2 cores (from 4), split by batch; ")
            && down.description.contains("waiting for the shared bus"),
        "{}",
        down.description
    );
    let how = spillscope::report::change::how(&down.change);
    assert!(how.starts_with("--cores 2 --split batch"), "{how}");
    assert!(down.sim_config.is_none(), "a core count is hardware");
    let dir = tempfile::tempdir().unwrap();
    let sched = dir.path().join("s.toml");
    let err = spillscope::run::apply_change(&sched, &down.change).unwrap_err();
    assert!(err.to_string().contains("--cores"), "{err}");
    let s = suggest(&g, &hw(1 << 20, 2), &cfg).unwrap();
    assert!(s
        .suggestions
        .iter()
        .all(|x| !matches!(x.change, Change::Cores { count: 4, .. })));
    let h = hw(1 << 20, 2);
    let base = simulate(&g, &h, &cfg).unwrap();
    // From a graph split: by batch is faster, and the config can say so.
    let by_graph = SimConfig {
        split: Split::Graph,
        ..cfg.clone()
    };
    let s = suggest(&g, &h, &by_graph).unwrap();
    let split = s
        .suggestions
        .iter()
        .find(|x| {
            x.change
                == Change::Split {
                    split: Split::Batch,
                }
        })
        .expect("split by batch suggested");
    assert_eq!(split.run.latency_ns, base.summary.latency_ns);
    assert_eq!(split.sim_config.as_ref().unwrap().split, Split::Batch);
    spillscope::run::apply_change(&sched, &split.change).unwrap();
    let text = std::fs::read_to_string(&sched).unwrap();
    assert!(text.contains("split = \"batch\""), "{text}");
    // One core has no core changes to suggest.
    let one = suggest(&g, &hw(1 << 20, 1), &cfg).unwrap();
    assert!(one
        .suggestions
        .iter()
        .all(|x| !matches!(x.change, Change::Cores { .. } | Change::Split { .. })));
}

fn cli(args: &[&str]) -> String {
    let o = assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// The placement is reported (per core in `report`, op by op with
/// `sim --write-placement`) and what is written pins the same run when
/// passed back with `--config`; the report's per-core rows add up to the
/// run's ops, stall and contention.
#[test]
fn the_placement_is_reported_and_pins_the_same_run() {
    let model = "tests/data/encoder_decoder.json";
    let dir = tempfile::tempdir().unwrap();
    let sched = dir.path().join("placed.toml");
    let s = sched.to_str().unwrap();
    let base = [
        "sim",
        model,
        "--capacity",
        "1MiB",
        "--policy",
        "lru",
        "--cores",
        "2",
    ];
    let json = |extra: &[&str]| -> serde_json::Value {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        serde_json::from_str(&cli(&args)).unwrap()
    };
    let first = json(&[
        "--split",
        "graph",
        "--write-placement",
        s,
        "--format",
        "json",
    ]);
    let file = spillscope::sim::ScheduleFile::load(&sched).unwrap();
    let g = encdec();
    assert_eq!(file.placement.len(), g.ops.len());
    assert!(file.placement.values().all(|&c| c < 2));
    for o in &g.ops {
        assert!(file.placement.contains_key(o.name), "{}", o.name);
    }
    let counts = first["runs"][0]["ops_per_core"].clone();
    let n0 = file.placement.values().filter(|&&c| c == 0).count();
    assert_eq!(counts[0], n0 as u64, "{counts}");
    // The file holds split = "graph": no --split needed to rerun it.
    let again = json(&["--config", s, "--format", "json"]);
    for k in [
        "latency_ns",
        "traffic_bytes",
        "stall_ns",
        "contention_ns",
        "ops_per_core",
    ] {
        assert_eq!(first["runs"][0][k], again["runs"][0][k], "{k}");
    }
    // The table says why its bound is only per-op.
    let o = assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .args(base)
        .args(["--split", "graph"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("bound: per-op only: a graph split has no one core graph"),
        "{out}"
    );
    // Refused where there is no placement, before anything runs.
    let o = assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .args(base)
        .args([
            "--write-placement",
            dir.path().join("x.toml").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("--split graph"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // The report's Cores section: one row per core, adding up.
    let (_, tr) = graph_split(2, 1 << 20, EvictionPolicy::Lru);
    let rep = spillscope::analysis::report::build(&tr);
    assert_eq!(rep.cores.len(), 2);
    assert_eq!(
        rep.cores.iter().map(|c| c.ops).sum::<u64>(),
        tr.ops.len() as u64
    );
    assert_eq!(
        rep.cores.iter().map(|c| c.stall_ns).sum::<u64>(),
        tr.summary.stall_ns
    );
    assert_eq!(
        rep.cores.iter().map(|c| c.contention_ns).sum::<u64>(),
        tr.summary.contention_ns
    );
    assert_eq!(
        rep.cores.iter().map(|c| c.traffic_bytes).sum::<u64>(),
        tr.summary.traffic_bytes
    );
    assert_eq!(rep.split, Some(spillscope::sim::config::Split::Graph));
    let md = spillscope::report::markdown::to_markdown(&rep);
    for want in [
        "## Cores",
        "| core0 ",
        "bus wait",
        "of which bus contention",
        "split by graph",
        "--write-placement",
    ] {
        assert!(md.contains(want), "{want}:\n{md}");
    }
    let html = spillscope::report::html::to_html(&rep);
    assert!(html.contains("Cores") && html.contains("bus wait"), "html");
}

/// `[cores] shared = SIZE`: under a graph split, a tensor read on another
/// core lives in the shared pool where it fits, written and read in place:
/// the run passes verify (the pool's stays never overlap, the ledger
/// replays), the crossings' DRAM traffic is gone, every tensor in the pool
/// has a reader on another core and is held from before its first reader
/// starts until its last ends; a pool too small for any of them leaves
/// every figure as it was.
#[test]
fn a_shared_pool_carries_the_crossings_on_chip() {
    let g = encdec();
    let cfg = SimConfig {
        split: spillscope::sim::config::Split::Graph,
        ..SimConfig::with_policy(EvictionPolicy::Lru)
    };
    let with_shared = |size: u64| {
        let mut h = hw(1 << 20, 2);
        h.cores.shared = Some(spillscope::units::Size(size));
        simulate(&g, &h, &cfg).unwrap()
    };
    // Every policy, on 2 and 4 cores, passes verify with the pool.
    for p in EvictionPolicy::ALL {
        for cores in [2, 4] {
            let mut h = hw(512 << 10, cores);
            h.cores.shared = Some(spillscope::units::Size(512 << 10));
            let c = SimConfig {
                policy: p,
                ..cfg.clone()
            };
            let tr = simulate(&g, &h, &c).unwrap();
            check(&tr, &format!("{p} on {cores} cores with 512 KiB shared"));
        }
    }
    let dram = simulate(&g, &hw(1 << 20, 2), &cfg).unwrap();
    let on_chip = with_shared(4 << 20);
    check(&on_chip, "shared 4 MiB");
    assert!(on_chip.pools.iter().any(|p| p.name == "shared"));
    let shared: Vec<spillscope::trace::TensorRef> = on_chip
        .tensors
        .iter()
        .filter(|t| t.pool == "shared")
        .collect();
    assert!(!shared.is_empty(), "no tensor crossed through the pool");
    let core_of_op = |o: usize| spillscope::analysis::cores::core_of(on_chip.ops.at(o));
    for t in &shared {
        let producer = core_of_op(t.producer.unwrap());
        assert!(
            t.consumers.iter().any(|&o| core_of_op(o) != producer),
            "{} has no reader on another core",
            t.name
        );
        let alloc = on_chip
            .events
            .iter()
            .find(|e| e.tensor == t.id && e.kind == spillscope::trace::EventKind::Alloc)
            .unwrap();
        let free = on_chip
            .events
            .iter()
            .find(|e| e.tensor == t.id && e.kind == spillscope::trace::EventKind::Free)
            .unwrap();
        for &o in t.consumers {
            let op = on_chip.ops.at(o);
            assert!(op.inputs.contains(&t.id), "{}", op.name);
            assert!(
                alloc.t_ns <= op.start_ns && op.end_ns <= free.t_ns,
                "{}",
                t.name
            );
        }
    }
    let (a, b) = (&dram.summary, &on_chip.summary);
    assert!(
        b.streamed_out_bytes < a.streamed_out_bytes,
        "{} vs {}",
        b.streamed_out_bytes,
        a.streamed_out_bytes
    );
    assert!(b.traffic_bytes < a.traffic_bytes);
    // Too small for any crossing: the DRAM run, figure for figure.
    let tiny = with_shared(64);
    check(&tiny, "shared 64 B");
    assert!(tiny.tensors.iter().all(|t| t.pool != "shared"));
    assert_eq!(summary_fields(&tiny), summary_fields(&dram));
    assert_eq!(tiny.summary.latency_ns, dram.summary.latency_ns);
    // Declared on a batch split (nothing crosses) it changes nothing.
    let mut h = hw(1 << 20, 2);
    h.cores.shared = Some(spillscope::units::Size(4 << 20));
    let batch = SimConfig::with_policy(EvictionPolicy::Lru);
    assert_eq!(
        simulate(&g, &h, &batch).unwrap().summary.latency_ns,
        simulate(&g, &hw(1 << 20, 2), &batch)
            .unwrap()
            .summary
            .latency_ns
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]
    /// Any placement, any shared pool size, any policy: the run passes
    /// verify (the pool's stays never overlap in time and bytes), and no
    /// crossing through the pool adds DRAM traffic the same run through
    /// DRAM does not have.
    #[test]
    fn shared_pool_stays_never_overlap(
        cores in 2u32..5,
        seed in any::<u64>(),
        cap_pct in 20u64..120,
        shared_pct in 1u64..60,
        policy in 0usize..5,
    ) {
        let g = encdec();
        let peak = graph::Liveness::compute(&g).peak_bytes;
        let mut x = seed | 1;
        let placement = g
            .ops
            .iter()
            .map(|o| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (o.name.to_string(), (x % u64::from(cores)) as u32)
            })
            .collect();
        let cfg = SimConfig {
            split: spillscope::sim::config::Split::Graph,
            placement,
            ..SimConfig::with_policy(EvictionPolicy::ALL[policy])
        };
        let dram_hw = hw(peak * cap_pct / 100, cores);
        let mut shared_hw = dram_hw.clone();
        shared_hw.cores.shared = Some(spillscope::units::Size(peak * shared_pct / 100));
        let dram = simulate(&g, &dram_hw, &cfg).unwrap();
        let on_chip = simulate(&g, &shared_hw, &cfg).unwrap();
        check(&on_chip, "random placement with a shared pool");
        prop_assert!(on_chip.summary.streamed_out_bytes <= dram.summary.streamed_out_bytes);
    }
}

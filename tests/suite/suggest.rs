//! Suggestions are re-simulated: each gain is confirmed here by a second,
//! independent simulation, and the capacity suggestion matches the whatif knee.

use crate::common;
use spillscope::analysis::suggest::{suggest, to_fp16, Change};
use spillscope::analysis::whatif::{grid, knees, run, search_knees};
use spillscope::cost::HardwareProfile;
use spillscope::graph::transform::{fuse, memory_aware_order, reorder};
use spillscope::graph::Graph;
use spillscope::sim::{simulate, EvictionPolicy, RecomputeSpec, SimConfig, WeightMode};
use std::path::Path;

fn confirm(g: &Graph, hw: &HardwareProfile, base: &SimConfig) -> usize {
    let s = suggest(g, hw, base).unwrap();
    let base_lat = simulate(g, hw, base).unwrap().summary.latency_ns;
    assert_eq!(s.baseline.latency_ns, base_lat);
    assert!(
        s.suggestions
            .windows(2)
            .all(|w| w[0].gain_ns >= w[1].gain_ns),
        "sorted by gain"
    );
    for x in &s.suggestions {
        let again = match x.kind().as_str() {
            "pin" => {
                let Change::Pin { tensor: name } = x.change.clone() else {
                    panic!("{:?}", x.change)
                };
                let mut c = base.clone();
                c.pins.push(name);
                simulate(g, hw, &c).unwrap()
            }
            "capacity" => simulate(
                g,
                &hw.clone().with_capacity(x.run.capacity_bytes).unwrap(),
                base,
            )
            .unwrap(),
            "policy" => simulate(
                g,
                hw,
                &SimConfig {
                    policy: x.run.policy.parse().unwrap(),
                    ..base.clone()
                },
            )
            .unwrap(),
            "prefetch" => {
                let Change::Prefetch { distance: d } = x.change else {
                    panic!("{:?}", x.change)
                };
                simulate(
                    g,
                    hw,
                    &SimConfig {
                        prefetch_distance: Some(d),
                        ..base.clone()
                    },
                )
                .unwrap()
            }
            "weights" => simulate(
                g,
                hw,
                &SimConfig {
                    weights: WeightMode::Resident,
                    ..base.clone()
                },
            )
            .unwrap(),
            "fp16" => simulate(&to_fp16(g), hw, base).unwrap(),
            "fuse" => simulate(&fuse(g).unwrap().0, hw, base).unwrap(),
            "reorder" => simulate(&reorder(g, &memory_aware_order(g)).unwrap(), hw, base).unwrap(),
            "recompute" => {
                let Change::Recompute { tensors: names } = x.change.clone() else {
                    panic!("{:?}", x.change)
                };
                assert!(!names.is_empty(), "{:?}", x.change);
                simulate(
                    g,
                    hw,
                    &SimConfig {
                        recompute: RecomputeSpec::Tensors(names),
                        ..base.clone()
                    },
                )
                .unwrap()
            }
            k => panic!("unknown kind {k}"),
        };
        assert_eq!(
            again.summary.latency_ns, x.run.latency_ns,
            "{}",
            x.description
        );
        assert_eq!(
            x.gain_ns,
            base_lat as i64 - again.summary.latency_ns as i64,
            "{}",
            x.description
        );
        assert!(x.gain_ns > 0 && x.gain_pct > 0.0);
    }
    // The capacity suggestion is the what-if knee: one search, one number,
    // with no spill traffic there and some 1 % below.
    if let Some(c) = s
        .suggestions
        .iter()
        .find(|x| x.kind().as_str() == "capacity")
    {
        let caps: Vec<u64> = (1..=8).map(|i| hw.memory.capacity.0 * i).collect();
        let rows = run(g, hw, base, &grid(&caps, &[None], &[base.policy]), &|| {}).unwrap();
        let searched = search_knees(g, hw, base, &[base.policy]).unwrap();
        let k = &knees(&rows, &searched)[0];
        assert_eq!(
            k.zero_spill_capacity,
            Some(c.run.capacity_bytes),
            "{}",
            k.text
        );
        assert_eq!(c.run.traffic_bytes, 0);
        let below = (c.run.capacity_bytes as f64 * 0.99) as u64;
        let at_below = simulate(g, &hw.clone().with_capacity(below).unwrap(), base).unwrap();
        assert!(at_below.summary.traffic_bytes > 0, "{}", k.text);
    }
    s.suggestions.len()
}

/// The 6+6 encoder-decoder of tests/data.
fn encoder_decoder() -> Graph {
    spillscope::graph::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/encoder_decoder.json"),
        &Default::default(),
    )
    .unwrap()
}

/// The seed preset at `bytes` of capacity.
fn seed_at(bytes: u64) -> HardwareProfile {
    HardwareProfile::preset("seed-npu")
        .unwrap()
        .with_capacity(bytes)
        .unwrap()
}

#[test]
fn encoder_decoder_suggestions_are_confirmed() {
    let g = encoder_decoder();
    let hw = seed_at(640 * 1024);
    let n = confirm(&g, &hw, &SimConfig::with_policy(EvictionPolicy::Lru));
    assert!(n >= 3, "fp16, capacity and policy at least");
}

/// One long-lived tensor reused by every decoder layer (the encoder output
/// of a long-source encoder-decoder): LRU evicts it in every layer; pinning
/// it is suggested, and the gain is confirmed by an independent run.
#[test]
fn encoder_output_oscillates_under_lru_and_pinning_it_is_suggested() {
    let g = spillscope::graph::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/long_source_encdec.json"),
        &Default::default(),
    )
    .unwrap();
    let hw = seed_at(1600 * 1024);
    let base = SimConfig {
        policy: EvictionPolicy::Lru,
        weights: WeightMode::Ignore,
        ..Default::default()
    };
    let tr = simulate(&g, &hw, &base).unwrap();
    let trips = spillscope::analysis::roundtrips::round_trips(
        &tr,
        &spillscope::trace::ledger::Ledger::of(&tr),
    );
    let memory = trips.iter().find(|t| t.name == "enc5.ffn.norm").unwrap();
    assert!(memory.oscillating, "flagged as oscillating");
    assert_eq!(
        memory.trips.len(),
        5,
        "one round trip per later decoder layer"
    );
    // Of the tensors evicted (others only stream), it moves the most.
    let evicted = trips
        .iter()
        .find(|t| {
            t.trips
                .iter()
                .any(|r| r.out == spillscope::analysis::roundtrips::Out::Evicted)
        })
        .unwrap();
    assert_eq!(evicted.name, "enc5.ffn.norm", "ranked first by bytes moved");
    let s = suggest(&g, &hw, &base).unwrap();
    let pin = s
        .suggestions
        .iter()
        .find(|x| x.kind().as_str() == "pin" && x.description.contains("enc5.ffn.norm"))
        .expect("pinning the encoder output is suggested");
    assert!(
        pin.description.contains("oscillating out 5 times"),
        "{}",
        pin.description
    );
    let mut c = base.clone();
    c.pins.push("enc5.ffn.norm".into());
    let again = simulate(&g, &hw, &c).unwrap();
    assert_eq!(
        pin.gain_ns,
        tr.summary.latency_ns as i64 - again.summary.latency_ns as i64
    );
    assert!(pin.gain_ns > 0);
    assert!(again.summary.traffic_bytes < tr.summary.traffic_bytes);
    confirm(&g, &hw, &base);
}

#[cfg(feature = "onnx")]
#[test]
fn edge_resnet50_suggestions_are_confirmed() {
    let g = spillscope::graph::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/resnet50_b8.shapes.onnx"),
        &spillscope::graph::LoadOptions {
            dims: vec![],
            batch: Some(3),
        },
    )
    .unwrap();
    let hw = HardwareProfile::preset("edge-npu-16m").unwrap();
    let n = confirm(&g, &hw, &SimConfig::with_policy(EvictionPolicy::Lru));
    assert!(n >= 2);
}

#[test]
fn write_config_realises_the_best_schedule_suggestion() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("sched.toml");
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/encoder_decoder.json");
    let bin = || assert_cmd::Command::cargo_bin("spillscope").unwrap();
    let o = bin()
        .args([
            "suggest",
            model.to_str().unwrap(),
            "--capacity",
            "640KiB",
            "--format",
            "json",
            "--write-config",
            cfg.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let best = v["suggestions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["kind"] != "capacity")
        .unwrap()
        .clone();
    for k in [
        "kind",
        "description",
        "gain_ns",
        "gain_pct",
        "config_change",
        "run",
    ] {
        assert!(!best[k].is_null(), "{k}");
    }
    // Simulating with the written config gives the suggestion's latency.
    let o = bin()
        .args([
            "sim",
            model.to_str().unwrap(),
            "--capacity",
            "640KiB",
            "--format",
            "json",
            "--config",
            cfg.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let sim: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(sim["runs"].as_array().unwrap().len(), 1);
    assert_eq!(sim["runs"][0]["latency_ns"], best["run"]["latency_ns"]);
    // Never overwritten without --force; the file is untouched.
    let before = std::fs::read(&cfg).unwrap();
    let o = bin()
        .args([
            "suggest",
            model.to_str().unwrap(),
            "--capacity",
            "640KiB",
            "--write-config",
            cfg.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--force"));
    assert_eq!(std::fs::read(&cfg).unwrap(), before);
}

#[test]
fn suggest_from_a_simulator_trace_matches_suggest_from_the_model() {
    use spillscope::analysis::suggest::inputs_of_trace;
    let tr = spillscope::trace::Trace::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/encdec-1mib.lru.json"),
    )
    .unwrap();
    let (g2, hw2, cfg2) = inputs_of_trace(&tr).unwrap();
    let g = encoder_decoder();
    let hw = seed_at(1 << 20);
    let a = suggest(&g, &hw, &SimConfig::with_policy(EvictionPolicy::Lru)).unwrap();
    let b = suggest(&g2, &hw2, &cfg2).unwrap();
    assert_eq!(a.baseline, b.baseline);
    assert_eq!(a.suggestions, b.suggestions);
    // An imported (measured) trace cannot be re-simulated.
    let mut m = tr.clone();
    m.source = spillscope::trace::Source::Instrumented;
    assert!(inputs_of_trace(&m)
        .unwrap_err()
        .to_string()
        .contains("simulator trace"));
}

/// The knee, on the shared models: the capacity `suggest` proposes has no
/// spill traffic and 1 % less has some, and it is the number `whatif`
/// prints as its knee.
#[cfg(feature = "onnx")]
#[test]
fn suggested_capacity_is_the_knee_on_the_shared_models() {
    let Some(dir) = common::shared_data("models") else {
        return;
    };
    for name in [
        "resnet18.shapes.onnx",
        "mobilenet_v2.shapes.onnx",
        "squeezenet1_1.shapes.onnx",
    ] {
        let model = dir.join(name);
        let g = spillscope::graph::load(&model, &Default::default()).unwrap();
        let peak = spillscope::graph::Liveness::compute(&g).peak_bytes;
        let cap = peak / 2;
        let hw = HardwareProfile::preset("seed-npu")
            .unwrap()
            .with_capacity(cap)
            .unwrap();
        let base = SimConfig::with_policy(EvictionPolicy::Lru);
        let s = suggest(&g, &hw, &base).unwrap();
        let c = s
            .suggestions
            .iter()
            .find(|x| x.kind().as_str() == "capacity")
            .unwrap_or_else(|| panic!("{name}: no capacity suggestion"));
        let Change::Capacity { bytes } = c.change else {
            unreachable!()
        };
        let at = |c: u64| {
            simulate(&g, &hw.clone().with_capacity(c).unwrap(), &base)
                .unwrap()
                .summary
                .traffic_bytes
        };
        assert_eq!(at(bytes), 0, "{name}: traffic at the suggested {bytes}");
        assert!(at(bytes * 99 / 100) > 0, "{name}: none 1 % below {bytes}");
        // `whatif` prints the same knee.
        let o = common::run_ok(&[
            "whatif",
            model.to_str().unwrap(),
            "--capacity",
            &format!("{cap},{}", cap * 3),
        ]);
        let text = String::from_utf8_lossy(&o.stdout);
        let knee = format!(
            "lru: spill traffic drops to 0 at {}",
            spillscope::units::fmt_bytes_precise(bytes)
        );
        assert!(text.contains(&knee), "{name}: {knee}\n{text}");
    }
}

/// On the encoder-decoder at 1 MiB every online policy moves 15.0 MiB; the
/// planned policy is suggested with how much less it moves, and that figure
/// is the difference of the two runs' traffic.
#[test]
fn the_planned_policy_is_suggested_with_the_traffic_it_saves() {
    let g = encoder_decoder();
    let hw = seed_at(1 << 20);
    let base = SimConfig::with_policy(EvictionPolicy::Lru);
    let s = suggest(&g, &hw, &base).unwrap();
    let planned = s
        .suggestions
        .iter()
        .find(|x| {
            x.change
                == Change::Policy {
                    policy: EvictionPolicy::Planned,
                }
        })
        .expect("the planned policy is suggested");
    let lru = simulate(&g, &hw, &base).unwrap().summary.traffic_bytes;
    let plan = simulate(&g, &hw, &SimConfig::with_policy(EvictionPolicy::Planned))
        .unwrap()
        .summary
        .traffic_bytes;
    assert!(plan < lru, "planned {plan} vs lru {lru}");
    let saved = spillscope::units::fmt_bytes(lru - plan);
    assert!(
        planned
            .description
            .ends_with(&format!("a planner would move {saved} less")),
        "{}",
        planned.description
    );
}

//! The bundled sample traces are honest: each verifies, and re-simulating
//! with the documented command gives the same summary.

use spillscope::sim::{simulate, EvictionPolicy, SimConfig};
use spillscope::trace::{verify::verify, Trace};
use std::path::Path;

fn sample(name: &str) -> Trace {
    Trace::load(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("sample-traces")
            .join(name),
    )
    .unwrap()
}

#[test]
fn every_sample_trace_verifies() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().map(|x| x == "json").unwrap_or(false) {
            let tr = Trace::load(&p).unwrap();
            let rep = verify(&tr, 5);
            assert!(rep.ok(), "{}: {:?}", p.display(), rep.violations);
            n += 1;
        }
    }
    assert!(n >= 12, "expected the sample traces, found {n}");
}

#[test]
fn encoder_decoder_sample_matches_a_fresh_run() {
    let g = spillscope::graph::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/encoder_decoder.json"),
        &Default::default(),
    )
    .unwrap();
    let hw = spillscope::cost::HardwareProfile::preset("seed-npu")
        .unwrap()
        .with_capacity(1 << 20)
        .unwrap();
    for p in EvictionPolicy::ALL {
        let fresh = simulate(&g, &hw, &SimConfig::with_policy(p)).unwrap();
        let stored = sample(&format!("encdec-1mib.{p}.json"));
        assert_eq!(
            fresh.summary, stored.summary,
            "{p}: regenerate with scripts/regen-samples.sh"
        );
    }
}

#[cfg(feature = "onnx")]
#[test]
fn resnet50_samples_match_a_fresh_run() {
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/resnet50_b8.shapes.onnx");
    let g = spillscope::graph::load(
        &model,
        &spillscope::graph::LoadOptions {
            dims: vec![],
            batch: Some(3),
        },
    )
    .unwrap();
    for (prefix, preset) in [
        ("seed-resnet50-b3", "seed-npu"),
        ("edge-resnet50-b3", "edge-npu-16m"),
    ] {
        let hw = spillscope::cost::HardwareProfile::preset(preset).unwrap();
        for p in EvictionPolicy::ALL {
            let fresh = simulate(&g, &hw, &SimConfig::with_policy(p)).unwrap();
            let stored = sample(&format!("{prefix}.{p}.json"));
            assert_eq!(
                fresh.summary, stored.summary,
                "{prefix} {p}: regenerate with scripts/regen-samples.sh"
            );
        }
    }
}

/// The typed trace model writes what it read: every sample trace (written
/// when kinds, sources, bounds and the producer's records were strings and
/// untyped JSON) re-serialises byte for byte, through both loaders.
#[test]
fn sample_traces_round_trip_byte_for_byte() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().map(|x| x == "json").unwrap_or(false) {
            let bytes = std::fs::read(&p).unwrap();
            let text = std::str::from_utf8(&bytes).unwrap().trim_end();
            let tr = Trace::load(&p).unwrap();
            assert!(
                matches!(
                    tr.meta.producer,
                    spillscope::trace::Producer::Simulator { .. }
                ),
                "{}",
                p.display()
            );
            assert!(
                tr.to_json() == text,
                "{} changed on re-writing",
                p.display()
            );
            assert!(
                Trace::load_streamed(&p).unwrap().to_json() == text,
                "{}",
                p.display()
            );
            n += 1;
        }
    }
    assert!(n >= 12);
}

/// Kernel traces from before ops had a `unit` spelled the pipe into the op
/// type (`MATMUL@CUBE`): they load with the pipe as the unit.
#[test]
fn pipe_spelled_in_op_types_becomes_the_unit() {
    let text = r#"{"schema":"spillscope.trace/1","source":"simulator",
      "meta":{"model":"k","policy":"npu","hardware":{"kind":"npu-kernel","time_unit":"cycles","capacities":{"L1":1024}},
              "config":{"total_cycles":9,"extra_traffic":0,"peak_residency":4},"tool_version":"0.1.0"},
      "pools":[{"name":"L1","capacity_bytes":1024,"alignment":1}],
      "tensors":[{"id":0,"name":"b","bytes":4,"kind":"input","pool":"L1","producer":null,"consumers":[0]}],
      "ops":[{"id":0,"name":"m#1","op_type":"MATMUL@CUBE","start_ns":0,"end_ns":5,"inputs":[0]},
             {"id":1,"name":"v#2","op_type":"ADD@VECTOR","start_ns":5,"end_ns":9}],
      "events":[],"summary":{"latency_ns":9,"spill_count":0,"spilled_bytes":0,"reloaded_bytes":0,
      "traffic_bytes":0,"stall_ns":0,"peak_live_bytes":4,"peak_resident_bytes":4,"lower_bound_traffic_bytes":0}}"#;
    let tr = Trace::from_slice(text.as_bytes()).unwrap();
    assert_eq!(tr.ops.at(0).op_type, "MATMUL");
    assert_eq!(tr.ops.at(0).unit.as_ref().unwrap().as_str(), "CUBE");
    assert_eq!(tr.ops.at(1).unit.as_ref().unwrap().as_str(), "VECTOR");
    let spillscope::trace::Producer::NpuCase(n) = &tr.meta.producer else {
        panic!("{:?}", tr.meta.producer)
    };
    assert_eq!((n.total_cycles, n.peak_residency), (9, 4));
}

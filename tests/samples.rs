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

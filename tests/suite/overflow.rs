//! Sizes and times that do not fit are errors naming the tensor or op,
//! never saturated figures: `--batch`/`--dim` overflow, a 2^40 x 2^40
//! tensor, a graph past 2^53 bytes and a clock past 2^62 ns, through every
//! command that simulates (one line, exit 2); and a property test over
//! extreme shapes and FLOPs through the library.

use crate::common;
use assert_cmd::Command;
use proptest::prelude::*;
use spillscope::graph::json::{graph_from_json, GraphJson};
use spillscope::limits;
use spillscope::sim::{simulate, EvictionPolicy as Policy, SimConfig};

const COMMANDS: [&[&str]; 5] = [
    &["sim"],
    &["whatif"],
    &["suggest"],
    &["report", "-o", "-"],
    &["view"],
];

/// `args` fails with one line containing each needle, exit code 2, no panic.
fn fails_in_one_line(args: &[&str], needles: &[&str]) {
    let o = Command::cargo_bin("spillscope")
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err:?}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: {err:?} lacks {n:?}");
    }
}

/// Every simulating command fails on `model` (plus `extra` flags) in one
/// line containing each needle.
fn every_command_fails(model: &str, extra: &[&str], needles: &[&str]) {
    for cmd in COMMANDS {
        let mut args: Vec<&str> = vec![cmd[0], model];
        args.extend(&cmd[1..]);
        args.extend(extra);
        fails_in_one_line(&args, needles);
    }
}

fn write_graph(dir: &tempfile::TempDir, name: &str, doc: &serde_json::Value) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, doc.to_string()).unwrap();
    p.to_string_lossy().into_owned()
}

fn chain(shape_mid: serde_json::Value, flops: f64) -> serde_json::Value {
    serde_json::json!({
        "tensors": [
            {"name": "x", "shape": [4, 4], "dtype": "f32", "kind": "input"},
            {"name": "huge", "shape": shape_mid, "dtype": "f32"},
            {"name": "y", "shape": [4, 4], "dtype": "f32", "kind": "output"}
        ],
        "ops": [
            {"name": "grow", "op_type": "Expand", "inputs": ["x"], "outputs": ["huge"], "flops": flops},
            {"name": "shrink", "op_type": "ReduceSum", "inputs": ["huge"], "outputs": ["y"]}
        ]
    })
}

#[test]
fn a_2_40_by_2_40_tensor_is_one_error_line_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let g = write_graph(
        &dir,
        "g.json",
        &chain(serde_json::json!([1u64 << 40, 1u64 << 40]), 1.0),
    );
    every_command_fails(
        &g,
        &[],
        &[
            "\"huge\"",
            "overflows 64 bits",
            "1099511627776x1099511627776",
        ],
    );
}

#[test]
fn a_graph_past_2_53_bytes_is_one_error_line_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    // 2^30 x 2^22 f32 = 2^54 bytes: fits 64 bits, not the simulator's range.
    let g = write_graph(
        &dir,
        "g.json",
        &chain(serde_json::json!([1u64 << 30, 1u64 << 22]), 1.0),
    );
    every_command_fails(&g, &[], &["\"huge\"", "8 PiB"]);
}

#[test]
fn a_clock_past_2_62_ns_names_the_op() {
    let dir = tempfile::tempdir().unwrap();
    let g = write_graph(&dir, "g.json", &chain(serde_json::json!([64, 64]), 1e300));
    every_command_fails(&g, &[], &["\"grow\"", "2^62 ns"]);
    // A bandwidth so low that one transfer outlasts the clock.
    let g = write_graph(
        &dir,
        "s.json",
        &chain(serde_json::json!([1u64 << 20, 1u64 << 10]), 1.0),
    );
    every_command_fails(
        &g,
        &["--capacity", "1MiB", "--bandwidth", "0.000001B/s"],
        &["2^62 ns"],
    );
}

#[test]
fn negative_flops_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let g = write_graph(&dir, "g.json", &chain(serde_json::json!([4, 4]), -1.0));
    every_command_fails(&g, &[], &["\"grow\"", "flops"]);
}

#[test]
fn batch_overflow_on_a_real_model_is_one_error_line_everywhere() {
    if !cfg!(feature = "onnx") {
        eprintln!("skipped: built without the onnx feature");
        return;
    }
    let Some(m) = common::shared_data("models/mobilenet_v2.onnx") else {
        return;
    };
    let m = m.to_string_lossy().into_owned();
    every_command_fails(
        &m,
        &["--batch", "10000000000000"],
        &["overflows 64 bits", "10000000000000x"],
    );
    // Fits 64 bits per tensor, not 2^53 bytes in total.
    every_command_fails(&m, &["--batch", "1000000000"], &["8 PiB"]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    /// Any shapes and FLOPs: either an error naming a tensor or op, or a
    /// run whose every figure lies inside the limits (debug builds also
    /// panic on any unchecked overflow on the way).
    #[test]
    fn extreme_dims_fail_cleanly_or_fit(
        dims in prop::collection::vec(prop_oneof![1u64..8, Just(1u64 << 20), Just(1u64 << 31), Just(u64::MAX / 3)], 2..4),
        flops in prop_oneof![Just(0.0), Just(1e9), Just(1e25), Just(1e300)],
        cap in prop_oneof![Just(1u64 << 10), Just(1u64 << 30), Just(1u64 << 50)],
    ) {
        let doc: GraphJson = serde_json::from_value(chain(serde_json::json!(dims), flops)).unwrap();
        let g = match graph_from_json(doc, "prop") {
            Ok(g) => g,
            Err(e) => {
                let e = e.to_string();
                prop_assert!(e.contains("\"huge\""), "{e}");
                return Ok(());
            }
        };
        let hw = common::test_hw(cap);
        for policy in [Policy::Lru, Policy::Belady] {
            let cfg = SimConfig { policy, ..SimConfig::default() };
            match simulate(&g, &hw, &cfg) {
                Ok(tr) => {
                    let s = &tr.summary;
                    prop_assert!(s.latency_ns < limits::MAX_NS);
                    prop_assert!(s.traffic_bytes < limits::MAX_TOTAL_BYTES);
                    prop_assert!(tr.events.iter().all(|e| e.t_ns < limits::MAX_NS));
                    prop_assert!(tr.ops.iter().all(|o| o.end_ns <= s.latency_ns));
                }
                Err(e) => {
                    let e = e.to_string();
                    prop_assert!(e.contains("\"grow\"") || e.contains("\"shrink\""), "{e}");
                    prop_assert!(e.contains("2^62"), "{e}");
                }
            }
        }
    }
}

#[test]
fn a_trace_past_the_clock_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.json");
    std::fs::write(
        &p,
        r#"{"traceEvents":[{"name":"conv","ph":"X","ts":0,"dur":10,"pid":1,"tid":1},{"name":"relu","ph":"X","ts":10,"dur":1e30,"pid":1,"tid":1}]}"#,
    )
    .unwrap();
    let p = p.to_string_lossy().into_owned();
    let out = dir.path().join("out.json").to_string_lossy().into_owned();
    for args in [
        vec!["import", p.as_str(), "-o", out.as_str()],
        vec!["view", p.as_str()],
        vec!["report", p.as_str(), "-o", "-"],
    ] {
        fails_in_one_line(&args, &["op \"relu\"", "2^62 ns"]);
    }
}

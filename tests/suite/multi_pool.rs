//! Several on-chip pools from a hardware profile's `[[pools]]`: a real
//! model simulated with its weights in a buffer of their own passes
//! `verify`, says what each pool holds, and its traces draw one lane per
//! pool; bad pool declarations and the one-pool-only planned policy are
//! refused with one line.

use crate::common;
use common::run as spillscope;
use common::screen::render;
use std::path::Path;

const WBUF: &str = "# Weights in a 1 MiB buffer of their own.\n[[pools]]\nname = \"wbuf\"\ncapacity = \"1MiB\"\nkinds = [\"weight\"]\n";

#[test]
fn weights_in_their_own_pool_replay_cleanly() {
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/resnet18.shapes.onnx");
    let dir = tempfile::tempdir().unwrap();
    let hw = dir.path().join("wbuf.toml");
    std::fs::write(&hw, WBUF).unwrap();
    let out = dir.path().join("r.json");
    let o = spillscope(&[
        "sim",
        model.to_str().unwrap(),
        "--hw",
        hw.to_str().unwrap(),
        "--capacity",
        "2MiB",
        "--policy",
        "lru,belady",
        "-o",
        out.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        text.contains("pools: sram 2.0 MiB") && text.contains("wbuf 1.0 MiB (weights)"),
        "{text}"
    );
    for p in ["lru", "belady"] {
        let path = dir.path().join(format!("r.{p}.json"));
        let v = spillscope(&["verify", path.to_str().unwrap()]);
        assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));
        let tr: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let pools: Vec<&str> = tr["pools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(pools, ["sram", "wbuf"]);
        // Every weight lives in wbuf, everything else in sram, and each
        // event is in its tensor's pool.
        let tensors = tr["tensors"].as_array().unwrap();
        for t in tensors {
            let want = if t["kind"] == "weight" {
                "wbuf"
            } else {
                "sram"
            };
            assert_eq!(t["pool"], want, "{}", t["name"]);
        }
        let mut in_wbuf = 0;
        for e in tr["events"].as_array().unwrap() {
            let t = &tensors[e["tensor"].as_u64().unwrap() as usize];
            assert_eq!(e["pool"], t["pool"]);
            in_wbuf += usize::from(e["pool"] == "wbuf");
        }
        assert!(in_wbuf > 0, "weights were loaded into wbuf");
        // The explorer's timeline at 120x40 draws a lane per pool.
        let trace = spillscope::trace::Trace::load(&path).unwrap();
        let mut app =
            spillscope_explorer::app::App::new(vec![spillscope_explorer::data::Dataset::build(
                "r.json", trace,
            )]);
        app.view = spillscope_explorer::app::View::Timeline;
        let screen = render(&app, 120, 40);
        assert!(
            screen.contains(" sram ") && screen.contains(" wbuf "),
            "{screen}"
        );
    }
    // The planned policy plans one pool: refused, naming the pools.
    let o = spillscope(&[
        "sim",
        model.to_str().unwrap(),
        "--hw",
        hw.to_str().unwrap(),
        "--policy",
        "planned",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("planned policy plans one pool") && err.contains("sram, wbuf"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn bad_pool_declarations_are_one_line_each() {
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/resnet18.shapes.onnx");
    let dir = tempfile::tempdir().unwrap();
    for (text, says) in [
        (
            "[[pools]]\nname = \"sram\"\ncapacity = 10\nkinds = [\"weight\"]\n",
            "declared twice",
        ),
        (
            "[[pools]]\nname = \"w\"\ncapacity = 0\nkinds = [\"weight\"]\n",
            "capacity must be greater than zero",
        ),
        (
            "[[pools]]\nname = \"w\"\ncapacity = 64\n",
            "takes no tensors",
        ),
        (
            "[[pools]]\nname = \"w\"\ncapacity = 64\nkinds = [\"bias\"]\n",
            "unknown variant",
        ),
        (
            "[[pools]]\nname = \"w\"\ncapacity = 64\nalignment = 3\nkinds = [\"weight\"]\n",
            "power of two",
        ),
    ] {
        let hw = dir.path().join("bad.toml");
        std::fs::write(&hw, text).unwrap();
        let o = spillscope(&["sim", model.to_str().unwrap(), "--hw", hw.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{text}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{text}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// Among several policies (`--policy all`) the one-pool planned policy is
/// left out with a note and the others run (alone it is refused, above);
/// each run's peak live is given as a share of every pool's capacity.
#[test]
fn planned_is_skipped_among_several_policies_with_several_pools() {
    let dir = tempfile::tempdir().unwrap();
    let case = common::write_matmul_case(dir.path(), 2, 2, 2);
    let case = case.to_str().unwrap();
    let o = common::run_ok(&["sim", case, "--hw", "npu-benchmark", "--policy", "all"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("planned: skipped"), "{out}");
    // Peak live counts tensors of several pools here: its share is of the
    // pools holding them (a Matmul has none in UB: L1 4 KiB + L0A/L0B
    // 256 B + L0C 512 B), not of L1 alone.
    assert!(out.contains("% of 5.0 KiB)"), "{out}");
    let o = common::run_ok(&[
        "sim",
        case,
        "--hw",
        "npu-benchmark",
        "--policy",
        "all",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ran: Vec<&str> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["policy"].as_str().unwrap())
        .collect();
    assert!(
        !ran.contains(&"planned") && ran.contains(&"belady") && ran.len() >= 3,
        "{ran:?}"
    );
    for r in v["runs"].as_array().unwrap() {
        assert_eq!(r["live_pools_capacity_bytes"], 5120);
        assert_eq!(r["capacity_bytes"], 4096);
    }
}

//! The binary end to end: help texts, bad input gets one clear line naming
//! the file and the problem (never a panic or backtrace), verify's exit code.

use crate::common;
use assert_cmd::Command;
use std::path::Path;

fn bin() -> Command {
    Command::cargo_bin("spillscope").unwrap()
}

/// Runs and returns (exit code, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    let o = bin().args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

fn one_line_error(args: &[&str], needles: &[&str]) {
    let (code, _, err) = run(args);
    assert_ne!(code, 0, "{args:?} should fail");
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{args:?}: {err}"
    );
    assert_eq!(
        err.trim().lines().count(),
        1,
        "{args:?}: one line expected, got {err:?}"
    );
    for n in needles {
        assert!(err.contains(n), "{args:?}: {err:?} lacks {n:?}");
    }
}

#[test]
fn help_is_complete() {
    let (code, out, _) = run(&["--help"]);
    assert_eq!(code, 0);
    for sub in ["sim", "verify", "hw", "sample"] {
        assert!(out.contains(sub), "{sub} missing from --help");
    }
    let (_, sim, _) = run(&["sim", "--help"]);
    for flag in [
        "--policy",
        "--hw",
        "--capacity",
        "--bandwidth",
        "--dim",
        "--batch",
        "--weights",
        "--pin",
        "--prefetch",
        "--output",
        "--format",
        "--force",
    ] {
        assert!(sim.contains(flag), "sim --help lacks {flag}");
    }
    let (_, ver, _) = run(&["verify", "--help"]);
    assert!(ver.contains("--limit"));
    // Every command that simulates lists every policy, every preset and
    // every model format.
    for cmd in ["sim", "view", "whatif", "suggest", "report"] {
        let (_, h, _) = run(&[cmd, "--help"]);
        let policies = spillscope::sim::EvictionPolicy::ALL.map(|p| p.as_str());
        for word in policies
            .iter()
            .chain(spillscope::cost::hardware::PRESETS)
            .chain(&["ONNX", "TFLite", "graph JSON"])
        {
            assert!(h.contains(word), "{cmd} --help lacks {word}");
        }
    }
    let (_, imp, _) = run(&["import", "--help"]);
    for f in ["ONNX Runtime", "PyTorch", "Chrome", "JSONL", "Vela"] {
        assert!(imp.contains(f), "import --help lacks {f}");
    }
}

#[test]
fn bad_inputs_get_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    one_line_error(
        &["sim", &d("missing.onnx")],
        &["missing.onnx", "No such file"],
    );
    one_line_error(&["sim", &d("missing.json")], &["missing.json"]);
    std::fs::write(d("text.onnx"), "this is not a protobuf at all, just words").unwrap();
    if cfg!(feature = "onnx") {
        one_line_error(
            &["sim", &d("text.onnx")],
            &["text.onnx", "not a valid ONNX model"],
        );
    } else {
        one_line_error(
            &["sim", &d("text.onnx")],
            &["text.onnx", "ONNX support was not compiled in"],
        );
    }
    std::fs::write(d("g.json"), "{\"tensors\": [], \"ops\": [").unwrap();
    one_line_error(&["sim", &d("g.json")], &["g.json", "graph JSON"]);
    let good = r#"{"tensors":[{"name":"x","bytes":64},{"name":"y","bytes":64}],"ops":[{"name":"n","inputs":["x"],"outputs":["y"]}],"outputs":["y"]}"#;
    std::fs::write(d("ok.json"), good).unwrap();
    one_line_error(&["sim", &d("ok.json"), "--capacity", "0"], &["capacity"]);
    one_line_error(&["sim", &d("ok.json"), "--capacity=-5MB"], &["size"]);
    one_line_error(
        &["sim", &d("ok.json"), "--hw", "warp-drive"],
        &["unknown preset", "warp-drive"],
    );
    one_line_error(
        &["sim", &d("ok.json"), "--hw", &d("nope.toml")],
        &["nope.toml"],
    );
    one_line_error(&["sim", &d("ok.json"), "--policy", "fifo"], &["fifo"]);
    one_line_error(&["sim", &d("ok.json"), "--pin", "ghost"], &["ghost"]);
    let dt = r#"{"tensors":[{"name":"x","shape":[4],"dtype":"quaternion"}],"ops":[]}"#;
    std::fs::write(d("dt.json"), dt).unwrap();
    one_line_error(&["sim", &d("dt.json")], &["quaternion", "dtype"]);
    let cyc = r#"{"tensors":[{"name":"a","bytes":4},{"name":"b","bytes":4}],"ops":[{"name":"p","inputs":["b"],"outputs":["a"]},{"name":"q","inputs":["a"],"outputs":["b"]}]}"#;
    std::fs::write(d("cyc.json"), cyc).unwrap();
    one_line_error(&["sim", &d("cyc.json")], &["cycle"]);
    let dang = r#"{"tensors":[{"name":"a","bytes":4}],"ops":[{"name":"p","inputs":["ghost"],"outputs":["a"]}]}"#;
    std::fs::write(d("dang.json"), dang).unwrap();
    one_line_error(&["sim", &d("dang.json")], &["\"p\"", "ghost"]);
    let unk = r#"{"tensors":[],"ops":[],"colour":"red"}"#;
    std::fs::write(d("unk.json"), unk).unwrap();
    one_line_error(&["sim", &d("unk.json")], &["colour"]);
}

#[cfg(feature = "onnx")]
#[test]
fn truncated_and_odd_onnx_files() {
    let Some(models) = common::shared_data("models") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(models.join("squeezenet1_1.shapes.onnx")).unwrap();
    let cut = dir.path().join("cut.onnx");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    one_line_error(&["sim", cut.to_str().unwrap()], &["cut.onnx"]);
    let empty = dir.path().join("empty.onnx");
    std::fs::write(&empty, b"").unwrap();
    one_line_error(&["sim", empty.to_str().unwrap()], &["empty.onnx"]);
}

#[test]
fn sim_writes_traces_that_verify_and_refuses_to_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let g = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/encoder_decoder.json");
    let out = dir.path().join("t.json");
    let (code, table, err) = run(&[
        "sim",
        g.to_str().unwrap(),
        "--capacity",
        "2MiB",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    for p in ["ideal", "lru", "belady", "lifetime"] {
        assert!(table.contains(p));
        let f = dir.path().join(format!("t.{p}.json"));
        assert!(f.exists(), "{f:?}");
        let (vc, vout, _) = run(&["verify", f.to_str().unwrap()]);
        assert_eq!(vc, 0, "{vout}");
        assert!(vout.contains("OK"));
    }
    let (code, _, err) = run(&["sim", g.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("--force"), "{err}");
    let (code, _, _) = run(&[
        "sim",
        g.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--force",
    ]);
    assert_eq!(code, 0);
}

#[test]
fn sim_json_follows_the_contract() {
    let g = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/encoder_decoder.json");
    let (code, out, err) = run(&[
        "sim",
        g.to_str().unwrap(),
        "--capacity",
        "2MiB",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["model"].is_string());
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 5);
    for r in runs {
        for k in [
            "policy",
            "capacity_bytes",
            "latency_ns",
            "spill_count",
            "spilled_bytes",
            "reloaded_bytes",
            "traffic_bytes",
            "stall_ns",
            "peak_live_bytes",
            "peak_resident_bytes",
            "lower_bound_traffic_bytes",
            "throughput_fps",
        ] {
            assert!(!r[k].is_null(), "run lacks {k}");
        }
        assert_eq!(r["capacity_bytes"], 2 * 1024 * 1024);
    }
    let (_, md, _) = run(&[
        "sim",
        g.to_str().unwrap(),
        "--format",
        "markdown",
        "--policy",
        "lru",
    ]);
    assert!(md.contains("| lru |"));
}

#[test]
fn verify_flags_a_broken_trace_with_exit_code_1() {
    let dir = tempfile::tempdir().unwrap();
    let g = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/encoder_decoder.json");
    let out = dir.path().join("t.json");
    let (code, _, _) = run(&[
        "sim",
        g.to_str().unwrap(),
        "--capacity",
        "2MiB",
        "--policy",
        "lru",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let mut tr: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    // Shrink the pool so placements pass capacity.
    tr["pools"][0]["capacity_bytes"] = 4096.into();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, tr.to_string()).unwrap();
    let (code, text, err) = run(&["verify", bad.to_str().unwrap(), "--limit", "3"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        text.contains("[capacity]") && text.contains("passes pool"),
        "{text}"
    );
    assert!(text.contains("more"), "{text}");
}

#[test]
fn hw_lists_and_prints_presets() {
    let (code, out, _) = run(&["hw"]);
    assert_eq!(code, 0);
    assert!(out.contains("seed-npu") && out.contains("edge-npu-16m"));
    let (_, toml, _) = run(&["hw", "edge-npu-16m"]);
    assert!(toml.contains("capacity = 16777216"), "{toml}");
}

#[test]
fn no_arguments_off_a_terminal_prints_the_sample_table() {
    let (code, out, err) = run(&[]);
    assert_eq!(code, 0, "{err}");
    for p in ["ideal", "lru", "belady", "lifetime", "ResNet-50 batch 3"] {
        assert!(out.contains(p), "{out}");
    }
}

/// First contact: each mistake a new user makes gets one line naming what
/// is wrong and what to run instead, and exit code 2.
#[test]
fn first_contact_mistakes_get_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let model = root.join("tests/data/encoder_decoder.json");
    let model = model.to_str().unwrap();
    let trace = root.join("sample-traces/encdec-1mib.lru.json");
    let trace = trace.to_str().unwrap();
    let exit2 = |args: &[&str], needles: &[&str], never: &[&str]| {
        let (code, _, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err:?}");
        for n in needles {
            assert!(err.contains(n), "{args:?}: {err:?} lacks {n:?}");
        }
        for n in never {
            assert!(!err.contains(n), "{args:?}: {err:?} has {n:?}");
        }
    };
    // A missing argument is named.
    exit2(&["diff", trace], &["<B>"], &[]);
    exit2(&["sim"], &["<MODEL>"], &[]);
    // A trace where a model is expected, and the reverse, with the command.
    exit2(
        &["sim", trace],
        &["a spillscope trace, not a model", "spillscope view"],
        &["unknown field", "schema", "config:"],
    );
    exit2(
        &["verify", model],
        &["a model, not a trace", "spillscope sim"],
        &["config:"],
    );
    exit2(&["diff", trace, model], &["a model, not a trace"], &[]);
    exit2(&["view", trace, model], &["a model, not a trace"], &[]);
    // A missing file: its path and the OS's reason.
    exit2(
        &["view", &d("missing.json")],
        &["missing.json", "No such file or directory"],
        &["entity not found"],
    );
    // TOML mistakes carry file:line:column.
    std::fs::write(d("sched.toml"), "policy = \"lru\"\nfuse = tru\n").unwrap();
    exit2(
        &["sim", model, "--config", &d("sched.toml")],
        &["sched.toml:2:8", "schedule config"],
        &[],
    );
    std::fs::write(d("sched2.toml"), "policy = \"lru\"\nprefetch = 3\n").unwrap();
    exit2(
        &["sim", model, "--config", &d("sched2.toml")],
        &["sched2.toml:2:1", "prefetch_distance"],
        &[],
    );
    std::fs::write(
        d("hw.toml"),
        "name = \"x\"\n[memory]\ncapacity = 12\ncolour = 1\n",
    )
    .unwrap();
    let (code, _, err) = run(&["sim", model, "--hw", &d("hw.toml")]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("hw.toml:"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err:?}");
}

/// Detection reads a bounded prefix and says what it assumed; a JSONL line
/// over the limit is named with the limit, whatever the file's name.
#[test]
fn detection_says_what_it_assumed_and_long_lines_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    let long = format!(
        "{{\"kind\":\"op_begin\",\"op\":\"{}\",\"t_ns\":1}}\n",
        "x".repeat(3 << 20)
    );
    for name in ["run.jsonl", "run.json"] {
        std::fs::write(d(name), &long).unwrap();
        let (code, _, err) = run(&["import", &d(name)]);
        assert_eq!(code, 2, "{name}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains("line 1") && err.contains("1.0 MiB"),
            "{name}: {err}"
        );
    }
    std::fs::write(d("odd.json"), "{\"hello\": 1}\n").unwrap();
    let (code, _, err) = run(&["import", &d("odd.json")]);
    assert_eq!(code, 2);
    assert!(
        err.contains("read as Chrome trace JSON because") && err.contains("--from"),
        "{err}"
    );
}

/// Each error names the flag or the file it is about, in one line, exit 2.
#[test]
fn errors_name_the_flag_or_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let m = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/encoder_decoder.json");
    let m = m.to_str().unwrap();
    let pin = dir.path().join("pins.toml");
    std::fs::write(&pin, "pins = [\"nope\"]\n").unwrap();
    let png = dir.path().join("r.png");
    std::fs::write(&png, b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
    let (pin, png) = (pin.to_str().unwrap(), png.to_str().unwrap());
    for (args, needles) in [
        (
            vec!["sim", m, "--capacity", "-5MiB"],
            vec!["--capacity", "-5MiB", "cannot be negative"],
        ),
        (
            vec!["sim", m, "--capacity", "0"],
            vec!["--capacity", "greater than zero"],
        ),
        (
            vec!["whatif", m, "--capacity", "0,1MiB"],
            vec!["--capacity 0,1MiB", "greater than zero"],
        ),
        (
            vec!["sim", m, "--config", pin],
            vec!["pins.toml: pins: no tensor named \"nope\""],
        ),
        (
            vec!["sim", m, "--pin", "nope"],
            vec!["--pin: no tensor named \"nope\""],
        ),
        (vec!["sim", png], vec!["r.png: a PNG image, not a model"]),
        (vec!["import", png], vec!["r.png: a PNG image, not a trace"]),
    ] {
        let (code, _, _) = run(&args);
        assert_eq!(code, 2, "{args:?}");
        one_line_error(&args, &needles);
    }
}

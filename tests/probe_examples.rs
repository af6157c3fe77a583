//! The probe's examples end to end: the C runtime simulation is compiled
//! with the system C compiler against the probe's static library and the
//! generated header; the Rust example records from several threads; both
//! streams are imported and verified by spillscope.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Builds the probe (library and examples) into its own target dir, so the
/// outer `cargo test` build is not disturbed.
fn build_probe() -> Option<PathBuf> {
    let target = root().join("target/probe-examples");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let st = Command::new(cargo)
        .args([
            "build",
            "-q",
            "-p",
            "spill-probe",
            "--lib",
            "--examples",
            "--target-dir",
        ])
        .arg(&target)
        .current_dir(root())
        .status()
        .ok()?;
    assert!(st.success(), "building spill-probe failed");
    Some(target.join("debug"))
}

fn spillscope(args: &[&str]) -> std::process::Output {
    assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .args(args)
        .output()
        .unwrap()
}

fn import_and_verify(jsonl: &Path, dir: &Path) -> serde_json::Value {
    let trace = dir.join(format!(
        "{}.trace.json",
        jsonl.file_stem().unwrap().to_string_lossy()
    ));
    let o = spillscope(&[
        "import",
        jsonl.to_str().unwrap(),
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert!(
        o.status.success(),
        "import: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = spillscope(&["verify", trace.to_str().unwrap(), "--format", "json"]);
    assert!(
        o.status.success(),
        "verify: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap()
}

#[test]
fn c_runtime_simulation_links_the_probe_and_its_stream_verifies() {
    if Command::new("cc").arg("--version").output().is_err() {
        eprintln!("SKIP: no system C compiler (cc)");
        return;
    }
    let Some(lib_dir) = build_probe() else {
        eprintln!("SKIP: cargo not runnable from the test");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("runtime_sim");
    let o = Command::new("cc")
        .arg(root().join("probe/examples/runtime_sim.c"))
        .arg("-I")
        .arg(root().join("probe/include"))
        .arg(lib_dir.join("libspill_probe.a"))
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "cc: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let jsonl = dir.path().join("c_run.jsonl");
    let o = Command::new(&exe).arg(&jsonl).arg("40").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    assert!(String::from_utf8_lossy(&o.stdout).contains("dropped 0"));
    let tr = import_and_verify(&jsonl, dir.path());
    assert_eq!(tr["ops"].as_array().unwrap().len(), 40);
    let kinds: Vec<&str> = tr["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    for k in ["alloc", "evict", "reload", "free"] {
        assert!(kinds.contains(&k), "{k} in the C run's trace");
    }
}

#[test]
fn rust_threads_example_stream_verifies() {
    let Some(bin_dir) = build_probe() else {
        eprintln!("SKIP: cargo not runnable from the test");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("threads.jsonl");
    let o = Command::new(bin_dir.join("examples/threads"))
        .arg(&jsonl)
        .args(["4", "500"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("0 dropped"));
    let tr = import_and_verify(&jsonl, dir.path());
    assert_eq!(tr["ops"].as_array().unwrap().len(), 2000);
    let threads: std::collections::BTreeSet<u64> = tr["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["thread"].as_u64())
        .collect();
    assert_eq!(threads.len(), 4);
}

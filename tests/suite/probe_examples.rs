//! The probe's examples end to end: the C runtime simulation is compiled
//! with the system C compiler against the probe's static library and the
//! generated header; the Rust example records from several threads; both
//! streams are imported and verified by spillscope.

use crate::common;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::probe::build_probe;

fn import_and_verify(jsonl: &Path, dir: &Path) -> serde_json::Value {
    let trace = dir.join(format!(
        "{}.trace.json",
        jsonl.file_stem().unwrap().to_string_lossy()
    ));
    common::run_ok(&[
        "import",
        jsonl.to_str().unwrap(),
        "-o",
        trace.to_str().unwrap(),
    ]);
    // Not run_ok: verify names the violations on stdout.
    let o = assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .args(["verify", trace.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "verify: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap()
}

/// `probe/examples/runtime_sim.c` compiled into `dir`, or `None` (said
/// why) when there is no C compiler or cargo.
fn compile_runtime_sim(dir: &Path) -> Option<PathBuf> {
    common::probe::compile_c_example("runtime_sim", dir)
}

/// A stream's lines.
fn stream_lines(jsonl: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A stream's lines without their timestamps (which differ run to run).
fn untimed_lines(jsonl: &Path) -> Vec<serde_json::Value> {
    let mut lines = stream_lines(jsonl);
    for v in &mut lines {
        v.as_object_mut().unwrap().remove("t_ns");
    }
    lines
}

#[test]
fn c_runtime_simulation_links_the_probe_and_its_stream_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = compile_runtime_sim(dir.path()) else {
        return;
    };
    let jsonl = dir.path().join("c_run.jsonl");
    let o = Command::new(&exe).arg(&jsonl).arg("40").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    assert!(String::from_utf8_lossy(&o.stdout).contains("dropped 0"));
    let tr = import_and_verify(&jsonl, dir.path());
    assert_eq!(tr["ops"].as_array().unwrap().len(), 40);
    // The declared scratchpad, not the most it held.
    assert_eq!(tr["pools"][0]["name"], "sram");
    assert_eq!(tr["pools"][0]["capacity_bytes"], 1 << 20);
    assert_eq!(tr["pools"][0]["alignment"], 256);
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
fn streams_are_flushed_at_exit_without_close() {
    // The C runtime calls exit() and the Rust example std::process::exit
    // with the probe still open: the atexit flush must deliver the same
    // stream as an orderly close.
    let dir = tempfile::tempdir().unwrap();
    if let Some(exe) = compile_runtime_sim(dir.path()) {
        let (closed, exited) = (
            dir.path().join("closed.jsonl"),
            dir.path().join("exited.jsonl"),
        );
        let o = Command::new(&exe).arg(&closed).arg("300").output().unwrap();
        assert!(o.status.success());
        let o = Command::new(&exe)
            .arg(&exited)
            .args(["300", "exit"])
            .output()
            .unwrap();
        assert!(o.status.success());
        let want = untimed_lines(&closed);
        assert!(want.len() > 1000, "{} lines", want.len());
        assert_eq!(untimed_lines(&exited), want);
        import_and_verify(&exited, dir.path());
    }
    let Some(bin_dir) = build_probe() else {
        eprintln!("SKIP: cargo not runnable from the test");
        return;
    };
    let jsonl = dir.path().join("threads_exit.jsonl");
    let o = Command::new(bin_dir.join("examples/threads"))
        .arg(&jsonl)
        .args(["3", "400", "exit"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines = untimed_lines(&jsonl);
    let ends = lines.iter().filter(|l| l["kind"] == "op_end").count();
    assert_eq!(ends, 1200, "every op of every thread reached the file");
    let tr = import_and_verify(&jsonl, dir.path());
    assert_eq!(tr["ops"].as_array().unwrap().len(), 1200);
}

#[test]
fn rust_threads_example_stream_verifies() {
    let Some(bin_dir) = build_probe() else {
        eprintln!("SKIP: cargo not runnable from the test");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Both clocks: the time-stamp counter (default where it is invariant)
    // and the OS monotonic clock (SPILL_PROBE_NO_TSC).
    for no_tsc in [false, true] {
        let jsonl = dir.path().join(format!("threads_{no_tsc}.jsonl"));
        let mut cmd = Command::new(bin_dir.join("examples/threads"));
        if no_tsc {
            cmd.env("SPILL_PROBE_NO_TSC", "1");
        }
        let o = cmd.arg(&jsonl).args(["4", "500"]).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(String::from_utf8_lossy(&o.stdout).contains("0 dropped"));
        // Each thread's timestamps never go back and span a plausible
        // run (under a minute, more than nothing).
        let mut last = std::collections::HashMap::new();
        let (mut lo, mut hi) = (u64::MAX, 0);
        for l in stream_lines(&jsonl) {
            let (thread, t) = (l["thread"].as_u64().unwrap(), l["t_ns"].as_u64().unwrap());
            let prev = last.insert(thread, t).unwrap_or(0);
            assert!(t >= prev, "no_tsc={no_tsc}: thread {thread} went back");
            (lo, hi) = (lo.min(t), hi.max(t));
        }
        assert!(hi > lo && hi - lo < 60_000_000_000, "span {lo}..{hi} ns");
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
}

/// The probe's stream followed live: the C runtime records 250 ops, 30 ms
/// apart (7.5 s), while `spillscope view --watch` (the real binary, in tmux) shows
/// the run grow, and ends on the whole run.
#[test]
fn the_explorer_follows_a_probe_stream_live() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = compile_runtime_sim(dir.path()) else {
        return;
    };
    let jsonl = dir.path().join("live.jsonl");
    let mut runtime = Command::new(&exe)
        .arg(&jsonl)
        .arg("250")
        .env("PACE_US", "30000")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The pool line and the first op are on disk within moments.
    let start = std::time::Instant::now();
    while std::fs::read_to_string(&jsonl).map_or(0, |s| s.lines().count()) < 4 {
        assert!(start.elapsed() < Duration::from_secs(5), "no stream");
        std::thread::sleep(Duration::from_millis(20));
    }
    let cmd = format!(
        "{} view {} --watch; sleep 3",
        env!("CARGO_BIN_EXE_spillscope"),
        jsonl.display()
    );
    let Some(t) = common::tmux::Tmux::open("probe-live", &cmd, |s| s.contains("LIVE")) else {
        let _ = runtime.kill();
        let _ = runtime.wait();
        return;
    };
    // The Overview's "evicted out  1.5 MiB (12 evictions)".
    let evictions = |s: &str| -> Option<u64> {
        let line = s.lines().find(|l| l.contains("evicted out"))?;
        let after = line.split('(').nth(1)?;
        after.split_whitespace().next()?.parse().ok()
    };
    let first = t
        .wait_for(Duration::from_secs(5), |s| evictions(s).is_some())
        .expect("the overview shows the run");
    let early = evictions(&first).unwrap();
    assert!(
        early < 100,
        "seen only when the run is mostly to come: {early}"
    );
    // While the runtime still runs, the view moves on.
    t.wait_for(Duration::from_secs(3), |s| {
        evictions(s).is_some_and(|n| n > early)
    })
    .expect("new events show while the runtime records");
    assert!(
        runtime.try_wait().unwrap().is_none(),
        "the runtime was still running"
    );
    assert!(runtime.wait().unwrap().success());
    // The finished run, as `import` reads the whole file: same evictions,
    // peak at the declared 1 MiB.
    let tr = import_and_verify(&jsonl, dir.path());
    let total = tr["summary"]["spill_count"].as_u64().unwrap();
    assert!(total > early + 100, "{total} evictions in all");
    let s = t
        .wait_for(Duration::from_secs(5), |s| evictions(s) == Some(total))
        .expect("the whole run shows once written");
    assert!(s.contains("1.0 MiB / 1.0 MiB cap"), "{s}");
    assert!(s.contains("resident bytes per op"), "{s}");
    t.send(&["q"]);
}

//! A runtime that dies mid-run keeps its recorded events: the C program
//! `probe/examples/crash_runtime.c` records 2 x 50,000 events (each thread
//! writes its count to a side file before each event) and thread 0 dies at
//! its 30,000th by SIGKILL, a null-pointer write (SIGSEGV), abort() or the
//! runtime's own SIGSEGV handler; or exits cleanly without closing. Every
//! event recorded before the death must reach the stream, in order per
//! thread, none invented: at once through the crash handler, or (SIGKILL)
//! through recovery by `spillscope import`, `spillscope probe recover` or
//! the next `spill_probe_open`.

use crate::common;
use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

const THREADS: usize = 2;
const EVENTS: u64 = 50_000;
const CRASH_AT: u64 = 30_000;

struct Run {
    dir: tempfile::TempDir,
    stream: PathBuf,
    status: ExitStatus,
}

impl Run {
    fn rings(&self) -> PathBuf {
        self.dir.path().join("rings")
    }
    /// Ring files left in the run's ring directory.
    fn ring_files(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.rings())
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    }
    /// What thread `i` said it had started (its side file).
    fn count(&self, i: usize) -> u64 {
        let p = self.dir.path().join(format!("count{i}"));
        std::fs::read_to_string(p).map_or(0, |s| s.trim().parse().unwrap_or(0))
    }
}

fn crash_runtime(dir: &Path) -> Option<PathBuf> {
    common::probe::compile_c_example("crash_runtime", dir)
}

fn run(exe: &Path, mode: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("rings")).unwrap();
    let stream = dir.path().join("run.jsonl");
    let status = Command::new(exe)
        .arg(&stream)
        .arg(dir.path())
        .arg(mode)
        .arg(THREADS.to_string())
        .arg(EVENTS.to_string())
        .arg(CRASH_AT.to_string())
        .env("SPILL_PROBE_RING_DIR", dir.path().join("rings"))
        .status()
        .unwrap();
    Run {
        dir,
        stream,
        status,
    }
}

/// The allocs of each runtime thread (`tI/K`), K in stream order.
fn per_thread(stream: &Path) -> BTreeMap<usize, Vec<u64>> {
    let mut out: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
    for l in std::fs::read_to_string(stream).unwrap_or_default().lines() {
        let v: serde_json::Value = serde_json::from_str(l).expect("whole JSON lines only");
        if v["kind"] != "alloc" {
            continue;
        }
        let name = v["tensor"].as_str().unwrap();
        let (t, k) = name[1..].split_once('/').unwrap();
        let k: u64 = k.parse().unwrap();
        assert_eq!(v["bytes"].as_u64(), Some(k), "{l}");
        out.entry(t.parse().unwrap()).or_default().push(k);
    }
    out
}

/// Every event each thread recorded before the death is in the stream, in
/// order, none twice or invented: thread I's events are exactly
/// 0..m with m = its count (or one less: it died between count and event).
fn all_recorded_events_present(r: &Run) {
    let got = per_thread(&r.stream);
    for i in 0..THREADS {
        let c = r.count(i);
        let ks = got.get(&i).cloned().unwrap_or_default();
        let m = ks.len() as u64;
        assert!(
            m == c || m + 1 == c,
            "thread {i}: {m} events in the stream, count file says {c}"
        );
        assert!(
            ks.iter().copied().eq(0..m),
            "thread {i}: events out of order or repeated"
        );
    }
    // Thread 0 died exactly at its CRASH_AT-th event, before counting it.
    assert_eq!(r.count(0), CRASH_AT);
    assert_eq!(got[&0].len() as u64, CRASH_AT);
}

fn spillscope(args: &[&str]) -> std::process::Output {
    assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn sigkill_events_are_recovered_by_import_probe_recover_and_the_next_open() {
    let d = tempfile::tempdir().unwrap();
    let Some(exe) = crash_runtime(d.path()) else {
        return;
    };
    // 1. `spillscope import` of the stream recovers first.
    let r = run(&exe, "kill");
    assert_eq!(r.status.signal(), Some(libc_sigkill()), "{:?}", r.status);
    assert_eq!(r.ring_files().len(), 1, "the dead session's ring file");
    // At death the stream may end in a half-written line; count whole ones.
    let before = std::fs::read_to_string(&r.stream)
        .unwrap_or_default()
        .lines()
        .filter(|l| {
            serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| v["kind"] == "alloc")
        })
        .count();
    let trace = r.dir.path().join("t.json");
    let o = Command::new(env!("CARGO_BIN_EXE_spillscope"))
        .args([
            "import",
            r.stream.to_str().unwrap(),
            "-o",
            trace.to_str().unwrap(),
        ])
        .env("SPILL_PROBE_RING_DIR", r.rings())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let said =
        String::from_utf8_lossy(&o.stderr).into_owned() + &String::from_utf8_lossy(&o.stdout);
    assert!(said.contains("recovered"), "{said}");
    all_recorded_events_present(&r);
    let after: usize = per_thread(&r.stream).values().map(Vec::len).sum();
    eprintln!("SIGKILL: {before} events in the stream at death, {after} after recovery");
    assert!(
        r.ring_files().is_empty(),
        "recovered ring files are removed"
    );
    let tr: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    assert_eq!(tr["events"].as_array().unwrap().len(), after);

    // 2. `spillscope probe recover RING`.
    let r = run(&exe, "kill");
    let ring = r.ring_files().pop().expect("a ring file");
    let o = spillscope(&["probe", "recover", ring.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("recovered") && out.contains("run.jsonl"),
        "{out}"
    );
    all_recorded_events_present(&r);
    assert!(r.ring_files().is_empty());
    // Again: nothing is left, and nothing is written twice.
    let o = spillscope(&["probe", "recover", ring.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("no ring file"));
    all_recorded_events_present(&r);

    // 3. The next `spill_probe_open` of the stream (a clean run after it).
    let r = run(&exe, "kill");
    let counts: Vec<u64> = (0..THREADS).map(|i| r.count(i)).collect();
    let status = Command::new(&exe)
        .arg(&r.stream)
        .arg(d.path())
        .args(["exit", "1", "10", "999"])
        .env("SPILL_PROBE_RING_DIR", r.rings())
        .output()
        .unwrap();
    assert!(status.status.success());
    assert!(String::from_utf8_lossy(&status.stderr).contains("recovered"));
    // The dead run's events come first, whole; then the new run's ten.
    let got = per_thread(&r.stream);
    assert_eq!(got[&0].len() as u64, CRASH_AT + 10);
    assert!(got[&0][..CRASH_AT as usize].iter().copied().eq(0..CRASH_AT));
    assert!(got[&0][CRASH_AT as usize..].iter().copied().eq(0..10));
    let m1 = got[&1].len() as u64;
    assert!(
        m1 == counts[1] || m1 + 1 == counts[1],
        "{m1} vs {}",
        counts[1]
    );
    assert!(r.ring_files().is_empty());
}

fn libc_sigkill() -> i32 {
    9
}

#[test]
fn sigsegv_and_abort_are_flushed_by_the_handler() {
    let d = tempfile::tempdir().unwrap();
    let Some(exe) = crash_runtime(d.path()) else {
        return;
    };
    for (mode, sig) in [("segv", 11), ("abort", 6)] {
        let r = run(&exe, mode);
        assert_eq!(r.status.signal(), Some(sig), "{mode}: {:?}", r.status);
        // The crashing thread's events are all in the stream at once: the
        // handler wrote them before the process went.
        let got = per_thread(&r.stream);
        assert!(got[&0].iter().copied().eq(0..CRASH_AT), "{mode}: thread 0");
        // The other thread ran on while the handler worked; what it
        // recorded after the flush is in the ring file, and recovery adds
        // exactly that.
        let rings = r.ring_files();
        assert_eq!(rings.len(), 1, "{mode}");
        match spill_probe::recover_ring(&rings[0], None).unwrap() {
            spill_probe::Recovered::Done(x) => {
                eprintln!(
                    "{mode}: {} events recovered after the handler's flush",
                    x.events
                )
            }
            other => panic!("{mode}: {other:?}"),
        }
        all_recorded_events_present(&r);
    }
}

#[test]
fn the_runtimes_own_handler_still_runs_after_the_flush() {
    let d = tempfile::tempdir().unwrap();
    let Some(exe) = crash_runtime(d.path()) else {
        return;
    };
    let r = run(&exe, "handler");
    assert_eq!(r.status.code(), Some(42), "{:?}", r.status);
    assert!(
        r.dir.path().join("handler").exists(),
        "the runtime's handler ran"
    );
    let got = per_thread(&r.stream);
    assert!(
        got[&0].iter().copied().eq(0..CRASH_AT),
        "flushed before it ran"
    );
    for ring in r.ring_files() {
        spill_probe::recover_ring(&ring, None).unwrap();
    }
    all_recorded_events_present(&r);
}

#[test]
fn a_clean_exit_is_unchanged() {
    let d = tempfile::tempdir().unwrap();
    let Some(exe) = crash_runtime(d.path()) else {
        return;
    };
    let r = run(&exe, "exit");
    assert!(r.status.success(), "{:?}", r.status);
    let got = per_thread(&r.stream);
    for i in 0..THREADS {
        assert!(got[&i].iter().copied().eq(0..EVENTS), "thread {i}");
        assert_eq!(r.count(i), EVENTS);
    }
    assert!(
        r.ring_files().is_empty(),
        "a clean exit leaves no ring file"
    );
}

//! The probe under load: 8 threads x 1,000,000 events with every event
//! accounted for (written or reported dropped), per-thread order kept,
//! every line valid JSON; a reader tailing the file while it is written
//! sees only whole events; the hot path allocates nothing; the C header is
//! the generated one.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{BufRead, Read};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// Counts allocations made by threads that opted in.
struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);
thread_local! { static COUNT_ME: std::cell::Cell<bool> = const { std::cell::Cell::new(false) }; }
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if COUNT_ME.try_with(|c| c.get()).unwrap_or(false) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
}
#[global_allocator]
static A: Counting = Counting;

/// The probe is process-global: tests take turns.
static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn eight_threads_million_events_each_all_accounted_in_order() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile_dir();
    let path = dir.join("load.jsonl");
    const THREADS: u64 = 8;
    const EVENTS: u64 = 1_000_000;
    let probe = spill_probe::Probe::open_with(&path, 1 << 16).unwrap();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            s.spawn(move || {
                let name = format!("t{t}");
                for i in 0..EVENTS {
                    // bytes carries the per-thread sequence number.
                    spill_probe::alloc(&name, i, "sram", None);
                }
            });
        }
    });
    let stats = probe.close().unwrap();
    assert_eq!(stats.threads, THREADS as u32);
    assert_eq!(stats.written + stats.dropped, THREADS * EVENTS, "{stats:?}");
    // Read it back: every line JSON, per-thread sequence strictly increasing,
    // dropped lines adding up.
    let f = std::io::BufReader::new(std::fs::File::open(&path).unwrap());
    let mut last: std::collections::HashMap<u64, i64> = Default::default();
    let mut name_of: std::collections::HashMap<u64, String> = Default::default();
    let (mut events, mut dropped) = (0u64, 0u64);
    for line in f.lines() {
        let line = line.unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        match v["kind"].as_str().unwrap() {
            "alloc" => {
                let thread = v["thread"].as_u64().unwrap();
                let seq = v["bytes"].as_i64().unwrap();
                let prev = last.entry(thread).or_insert(-1);
                assert!(seq > *prev, "thread {thread}: {seq} after {prev}");
                *prev = seq;
                // Threads are numbered in registration order, names by
                // spawn order: each number must always carry one name (a
                // ring never mixes producers), and no two numbers the same.
                let tensor = v["tensor"].as_str().unwrap().to_string();
                let owner = name_of.entry(thread).or_insert_with(|| tensor.clone());
                assert_eq!(*owner, tensor, "thread {thread} carries two names");
                events += 1;
            }
            "dropped" => dropped += v["count"].as_u64().unwrap(),
            k => panic!("unexpected kind {k}"),
        }
    }
    assert_eq!(events, stats.written);
    assert_eq!(dropped, stats.dropped);
    let names: std::collections::HashSet<&String> = name_of.values().collect();
    assert_eq!(
        names.len(),
        name_of.len(),
        "two threads share a name: {name_of:?}"
    );
    eprintln!(
        "8 x 1M: {} written, {} dropped",
        stats.written, stats.dropped
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_tailing_reader_sees_only_whole_events() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile_dir();
    let path = dir.join("tail.jsonl");
    let probe = spill_probe::Probe::open(&path).unwrap();
    let done = AtomicBool::new(false);
    let (complete, partial_seen) = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            // Follow the file like `view --watch`: take whole lines only,
            // keep a partial last line for the next read.
            let mut f = loop {
                if let Ok(f) = std::fs::File::open(&path) {
                    break f;
                }
            };
            let (mut buf, mut pending) = (Vec::new(), Vec::new());
            let (mut complete, mut partial_seen) = (0u64, 0u64);
            loop {
                let finished = done.load(Ordering::Acquire);
                buf.clear();
                f.read_to_end(&mut buf).unwrap();
                pending.extend_from_slice(&buf);
                // Parse every whole line, then drop them in one go (draining
                // line by line would shift the buffer once per line).
                let mut start = 0;
                while let Some(nl) = pending[start..].iter().position(|&b| b == b'\n') {
                    let line = &pending[start..start + nl];
                    serde_json::from_slice::<serde_json::Value>(line)
                        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(line)));
                    complete += 1;
                    start += nl + 1;
                }
                pending.drain(..start);
                if !pending.is_empty() {
                    partial_seen += 1;
                }
                if finished && buf.is_empty() {
                    assert!(pending.is_empty(), "file ends in a partial line");
                    return (complete, partial_seen);
                }
            }
        });
        for i in 0..200_000u64 {
            spill_probe::op_begin("op");
            spill_probe::alloc("x", i, "sram", Some(0));
            spill_probe::free("x", "sram");
            spill_probe::op_end();
        }
        let stats = probe.close().unwrap();
        done.store(true, Ordering::Release);
        let r = reader.join().unwrap();
        assert_eq!(r.0, stats.written + dropped_lines(&path));
        r
    });
    assert!(complete >= 1);
    eprintln!("tail: {complete} complete lines read live, {partial_seen} reads ended mid-line (kept for later)");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every line of a finished stream, parsed.
fn json_lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn dropped_lines(path: &std::path::Path) -> u64 {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"dropped\""))
        .count() as u64
}

#[test]
fn the_hot_path_allocates_nothing() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile_dir();
    let probe = spill_probe::Probe::open(dir.join("alloc.jsonl")).unwrap();
    spill_probe::alloc("warm-up registers this thread's ring", 1, "sram", None);
    COUNT_ME.with(|c| c.set(true));
    for i in 0..10_000 {
        spill_probe::op_begin("conv");
        spill_probe::alloc("layer1/conv/output_0", i, "sram", Some(i * 2));
        spill_probe::evict("layer1/conv/output_0", i, "sram", None);
        spill_probe::reload("layer1/conv/output_0", i, "sram", Some(0));
        spill_probe::free("layer1/conv/output_0", "sram");
        spill_probe::spill_probe_alloc(c"layer1/conv/output_1".as_ptr(), i, c"sram".as_ptr(), -1);
        spill_probe::op_end();
    }
    COUNT_ME.with(|c| c.set(false));
    assert_eq!(
        ALLOCS.load(Ordering::Relaxed),
        0,
        "allocations on the hot path"
    );
    let s = probe.close().unwrap();
    assert_eq!(s.written + s.dropped, 70_001);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn long_names_and_awkward_characters_survive() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile_dir();
    let path = dir.join("names.jsonl");
    let probe = spill_probe::Probe::open(&path).unwrap();
    let long = "a/very/long/".repeat(20) + "tensor";
    spill_probe::alloc(&long, 1, "a-pool-name-longer-than-sixteen", Some(3));
    spill_probe::alloc("quote\"back\\slash\nnewline", 2, "sram", None);
    spill_probe::free(&long, "a-pool-name-longer-than-sixteen");
    probe.close().unwrap();
    let lines = json_lines(&path);
    assert_eq!(lines[0]["tensor"], long.as_str());
    assert_eq!(lines[0]["pool"], "a-pool-name-longer-than-sixteen");
    assert_eq!(lines[0]["offset"], 3);
    assert_eq!(lines[1]["tensor"], "quote\"back\\slash\nnewline");
    assert!(lines[1].get("offset").is_none());
    assert_eq!(lines[2]["kind"], "free");
    assert!(lines[2].get("bytes").is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn names_of_every_length_arrive_intact() {
    // The hot path copies names with overlapping wide loads chosen by
    // length; every length from empty to past the inline limit (and pools
    // past theirs) must come out byte for byte, on a fresh thread too.
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile_dir();
    let path = dir.join("lengths.jsonl");
    let probe = spill_probe::Probe::open(&path).unwrap();
    let alphabet: Vec<char> = ('a'..='z').chain('A'..='Z').chain('0'..='9').collect();
    let text = |n: usize, shift: usize| -> String {
        (0..n)
            .map(|i| alphabet[(i * 7 + shift) % alphabet.len()])
            .collect()
    };
    let expected: Vec<(String, String)> = (0..=100)
        .map(|n| (text(n, n), text(n % 24, n + 3)))
        .collect();
    std::thread::scope(|s| {
        s.spawn(|| {
            for (i, (name, pool)) in expected.iter().enumerate() {
                spill_probe::alloc(name, i as u64, pool, None);
            }
        });
    });
    probe.close().unwrap();
    let lines = json_lines(&path);
    assert_eq!(lines.len(), expected.len());
    for (line, (name, pool)) in lines.iter().zip(&expected) {
        assert_eq!(
            line["tensor"],
            name.as_str(),
            "name of length {}",
            name.len()
        );
        assert_eq!(line["pool"], pool.as_str(), "pool of length {}", pool.len());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_c_entry_point_records_its_event() {
    // What a C runtime calls: NUL-terminated names (short, past the inline
    // limit, NULL), offsets < 0 meaning unknown.
    use spill_probe::*;
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile_dir();
    let path = dir.join("c.jsonl");
    let cpath = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    assert_eq!(spill_probe_open(cpath.as_ptr()), 0);
    let long = std::ffi::CString::new("x".repeat(90)).unwrap();
    let (sram, t) = (c"sram", c"t0");
    spill_probe_pool(c"sram".as_ptr(), 1 << 20, 64);
    spill_probe_op_begin(c"conv1".as_ptr());
    spill_probe_alloc(t.as_ptr(), 64, sram.as_ptr(), 128);
    spill_probe_evict(t.as_ptr(), 64, sram.as_ptr(), -1);
    spill_probe_reload(long.as_ptr(), 65, sram.as_ptr(), 0);
    spill_probe_recompute(t.as_ptr(), 66, sram.as_ptr(), 256);
    spill_probe_free(t.as_ptr(), std::ptr::null());
    spill_probe_op_end();
    assert_eq!(spill_probe_close(), 0);
    let lines = json_lines(&path);
    let kinds: Vec<&str> = lines.iter().map(|l| l["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "pool",
            "op_begin",
            "alloc",
            "evict",
            "reload",
            "recompute",
            "free",
            "op_end"
        ]
    );
    assert_eq!(
        (
            &lines[0]["pool"],
            &lines[0]["capacity_bytes"],
            &lines[0]["alignment"]
        ),
        (&"sram".into(), &(1 << 20).into(), &64.into())
    );
    let lines = &lines[1..];
    assert_eq!(lines[0]["op"], "conv1");
    assert_eq!(
        (
            &lines[1]["tensor"],
            &lines[1]["bytes"],
            &lines[1]["pool"],
            &lines[1]["offset"]
        ),
        (&"t0".into(), &64.into(), &"sram".into(), &128.into())
    );
    assert!(lines[2].get("offset").is_none(), "offset -1 is unknown");
    assert_eq!(lines[3]["tensor"], "x".repeat(90));
    assert_eq!(lines[3]["offset"], 0);
    assert_eq!(
        (&lines[4]["bytes"], &lines[4]["offset"]),
        (&66.into(), &256.into())
    );
    assert_eq!(lines[5]["pool"], "");
    assert!(lines[5].get("bytes").is_none());
    let t: Vec<u64> = lines.iter().map(|l| l["t_ns"].as_u64().unwrap()).collect();
    assert!(
        t.windows(2).all(|w| w[0] <= w[1]),
        "timestamps go back: {t:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ring_size_comes_from_the_environment() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile_dir();
    let path = dir.join("env.jsonl");
    const VAR: &str = "SPILL_PROBE_RING_RECORDS";
    for bad in ["abc", "0", "1", "99999999999"] {
        std::env::set_var(VAR, bad);
        let err = spill_probe::Probe::open(&path).err().expect(bad);
        assert!(err.to_string().contains(&format!("{VAR}={bad}")), "{err}");
        let cpath = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        assert_eq!(spill_probe::spill_probe_open(cpath.as_ptr()), -1);
    }
    // A 4-record ring overflows on a burst the writer cannot keep up with;
    // every event is still accounted for.
    std::env::set_var(VAR, "4");
    let probe = spill_probe::Probe::open(&path).unwrap();
    std::env::remove_var(VAR);
    for i in 0..10_000 {
        spill_probe::alloc("t", i, "sram", None);
    }
    let s = probe.close().unwrap();
    assert_eq!(s.written + s.dropped, 10_000);
    assert!(s.dropped > 0 && s.written >= 4, "{s:?}");
    assert!(dropped_lines(&path) > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn closed_probe_records_nothing_and_reopens() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile_dir();
    spill_probe::alloc("before open", 1, "sram", None);
    let p = spill_probe::Probe::open(dir.join("a.jsonl")).unwrap();
    spill_probe::alloc("x", 1, "sram", None);
    assert_eq!(p.close().unwrap().written, 1);
    spill_probe::alloc("after close", 1, "sram", None);
    assert!(!spill_probe::is_open());
    let p = spill_probe::Probe::open(dir.join("b.jsonl")).unwrap();
    spill_probe::alloc("y", 1, "sram", None);
    drop(p); // Drop flushes too.
    assert_eq!(
        std::fs::read_to_string(dir.join("b.jsonl"))
            .unwrap()
            .lines()
            .count(),
        1
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_c_header_is_the_generated_one() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("include/spill_probe.h");
    let want = spill_probe::c_header();
    if std::env::var_os("UPDATE_HEADER").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        have, want,
        "include/spill_probe.h is stale: run with UPDATE_HEADER=1"
    );
    // Every exported function is declared.
    let src = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"),
    )
    .unwrap();
    for line in src
        .lines()
        .filter(|l| l.starts_with("pub extern \"C\" fn "))
    {
        let name = line["pub extern \"C\" fn ".len()..]
            .split('(')
            .next()
            .unwrap();
        assert!(
            have.contains(&format!(" {name}(")),
            "{name} missing from the header"
        );
    }
}

fn tempfile_dir() -> std::path::PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let d = std::env::temp_dir().join(format!(
        "spill-probe-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

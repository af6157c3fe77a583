//! The analysis session behind every front end: a newer request stops the
//! stale job within a solver slice; the result cache is keyed by every
//! input (each mutated in turn misses and matches a fresh computation) and
//! says when it served a result; for one spec, `sim` (table, the line under
//! it, JSON) and `report --format json` show one bound and one gap.

use spillscope::session::cache::Cache;
use spillscope::session::{Budgets, Posted, Request, Session, Source, Stage, Update, Wants};
use spillscope::sim::EvictionPolicy;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

/// DenseNet-121's layout as graph JSON in `dir`: at 4 MiB its bound takes
/// the exact program's whole budget.
fn densenet(dir: &Path) -> PathBuf {
    let g = spillscope::graph::gen::densenet_like(&[6, 12, 24, 16]);
    let p = dir.join("densenet.json");
    let json = serde_json::to_string(&spillscope::graph::json::graph_to_json(&g)).unwrap();
    std::fs::write(&p, json).unwrap();
    p
}

fn spec(model: &Path, capacity: u64, policy: EvictionPolicy) -> spillscope::run::RunSpec {
    let mut s = spillscope::run::RunSpec::new(model);
    s.flags.capacity = Some(capacity);
    s.flags.policies = Some(vec![policy]);
    s
}

fn request(spec: spillscope::run::RunSpec, cache: Option<Cache>, bound_s: f64) -> Request {
    Request {
        source: Source::Model(Box::new(spec)),
        wants: Wants {
            bound: true,
            suggestions: true,
            ..Default::default()
        },
        budgets: Budgets {
            bound_s,
            ..Default::default()
        },
        cache,
    }
}

fn next(rx: &Receiver<Posted>) -> Posted {
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the session answers")
}

#[test]
fn a_newer_request_stops_the_running_bound_within_a_slice() {
    let dir = tempfile::tempdir().unwrap();
    let model = densenet(dir.path());
    let (tx, rx) = channel();
    let session = Session::spawn(move |p| {
        let _ = tx.send(p);
    });
    let first = session.submit(request(
        spec(&model, 4 << 20, EvictionPolicy::Lru),
        None,
        5.0,
    ));
    // Into the bound's solve.
    loop {
        let p = next(&rx);
        assert_eq!(p.generation, first);
        if let Update::Progress(pr) = p.update {
            if pr.stage == Stage::Bound && pr.done >= 1 {
                break;
            }
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let asked = Instant::now();
    let second = session.submit(request(
        spec(&model, 8 << 20, EvictionPolicy::Lru),
        None,
        5.0,
    ));
    let mut stale_bound = false;
    let latency = loop {
        let p = next(&rx);
        if p.generation == first {
            stale_bound |= matches!(p.update, Update::Bounded { .. });
            continue;
        }
        assert_eq!(p.generation, second);
        break asked.elapsed();
    };
    println!("cancellation latency: {latency:?}");
    assert!(!stale_bound, "the stale job posted its bound");
    // One 40 ms slice and a microlp call's overrun; generous for a loaded
    // CI machine (the `session` bench measures the figure).
    assert!(latency < Duration::from_millis(1500), "{latency:?}");
    // The new job runs to the end, with its own bound.
    let mut bounded = false;
    loop {
        let p = next(&rx);
        assert_eq!(p.generation, second);
        match p.update {
            Update::Bounded { optimum, .. } => {
                // A view keeps the bound's figures, not the job's plan.
                assert!(optimum.plan.is_none());
                assert!(optimum.variables > 0);
                bounded = true;
            }
            Update::Done => break,
            Update::Failed(e) => panic!("{e}"),
            _ => {}
        }
    }
    assert!(bounded);
}

/// What a run's result is, to compare a cached run with a fresh one.
fn figures(o: &spillscope::session::Outcome) -> Vec<(u64, u64, String, u64)> {
    o.runs
        .iter()
        .map(|r| {
            let row = r.row();
            (
                row.traffic_bytes,
                row.lower_bound_traffic_bytes,
                row.lower_bound_method.as_str().to_string(),
                row.latency_ns,
            )
        })
        .collect()
}

fn entries(dir: &Path) -> usize {
    walk(dir)
}

fn walk(dir: &Path) -> usize {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.flatten()
        .map(|e| {
            if e.path().is_dir() {
                walk(&e.path())
            } else {
                1
            }
        })
        .sum()
}

#[test]
fn every_input_keys_the_cache_and_a_cached_result_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let cache_dir = dir.path().join("cache");
    let cache = || Some(Cache::at(&cache_dir));
    // An encoder-decoder whose bound proves quickly: every mutation below
    // solves again.
    let model = dir.path().join("encdec.json");
    let base_json = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/encoder_decoder.json"),
    )
    .unwrap();
    std::fs::write(&model, &base_json).unwrap();
    let hw_file = dir.path().join("hw.toml");
    std::fs::write(&hw_file, "[dram]\nread_bandwidth = \"60GB/s\"\n").unwrap();
    let sched = dir.path().join("sched.toml");
    std::fs::write(&sched, "policy = \"lru\"\n").unwrap();
    let base = || {
        let mut s = spec(&model, 1 << 20, EvictionPolicy::Lru);
        s.flags.policies = None;
        s.hardware = hw_file.display().to_string();
        s.schedule = Some(sched.clone());
        s
    };
    let run = |s: spillscope::run::RunSpec, c: Option<Cache>, bound_s: f64| {
        spillscope::session::run(&request(s, c, bound_s), &|_| {}).unwrap()
    };
    let first = run(base(), cache(), 2.0);
    assert!(!first.optimum.as_ref().unwrap().cached);
    let written = entries(&cache_dir);
    assert!(written >= 2, "bound and suggestions kept: {written}");
    let again = run(base(), cache(), 2.0);
    assert!(
        again.optimum.as_ref().unwrap().cached,
        "a cached result says so"
    );
    assert_eq!(figures(&again), figures(&first));
    assert_eq!(entries(&cache_dir), written, "a hit writes nothing new");
    // Each input changed in turn: a miss (a new entry), and what it gives
    // is what a run without the cache gives.
    type Mutation<'a> = (
        &'static str,
        Box<dyn Fn() + 'a>,
        Box<dyn Fn() -> spillscope::run::RunSpec + 'a>,
        f64,
    );
    let mutations: Vec<Mutation> = vec![
        (
            "graph",
            Box::new(|| {
                // The same path, one activation's shape changed.
                let mut v: serde_json::Value = serde_json::from_str(&base_json).unwrap();
                v["tensors"][2]["shape"][1] = 1024.into();
                std::fs::write(&model, serde_json::to_string(&v).unwrap()).unwrap();
            }),
            Box::new(base),
            2.0,
        ),
        (
            "hardware",
            Box::new(|| std::fs::write(&hw_file, "[dram]\nread_bandwidth = \"30GB/s\"\n").unwrap()),
            Box::new(base),
            2.0,
        ),
        (
            "config",
            Box::new(|| {
                std::fs::write(&sched, "policy = \"lru\"\nweights = \"resident\"\n").unwrap()
            }),
            Box::new(base),
            2.0,
        ),
        (
            "capacity",
            Box::new(|| {}),
            Box::new(|| {
                let mut s = base();
                s.flags.capacity = Some(768 << 10);
                s
            }),
            2.0,
        ),
        (
            "policy",
            Box::new(|| {}),
            Box::new(|| {
                let mut s = base();
                s.flags.policies = Some(vec![EvictionPolicy::Belady]);
                s
            }),
            2.0,
        ),
        ("budget", Box::new(|| {}), Box::new(base), 3.0),
    ];
    for (what, mutate, spec_of, budget) in mutations {
        let before = entries(&cache_dir);
        mutate();
        let cached = run(spec_of(), cache(), budget);
        let fresh = run(spec_of(), None, budget);
        assert_eq!(
            figures(&cached),
            figures(&fresh),
            "{what}: served a stale entry"
        );
        assert!(
            entries(&cache_dir) > before,
            "{what}: no new entry, so no miss"
        );
    }
}

/// The bound and gap of the `lru` row, three ways from one `sim` run.
fn sim_figures(out: &str, json: &serde_json::Value) -> (String, String) {
    let row = out
        .lines()
        .find(|l| l.starts_with("lru "))
        .expect("an lru row");
    let run = &json["runs"][0];
    let bound = spillscope::units::fmt_bytes(run["lower_bound_traffic_bytes"].as_u64().unwrap());
    let method = run["lower_bound_method"].as_str().unwrap().to_string();
    let cell = format!("{bound} {method}");
    assert!(row.contains(&cell), "table row {row:?} lacks {cell:?}");
    let gap = format!("(+{:.0}%)", run["gap_ratio"].as_f64().unwrap() * 100.0);
    assert!(row.contains(&gap), "table row {row:?} lacks {gap:?}");
    let line = out
        .lines()
        .find(|l| l.contains("each policy above it"))
        .expect("the line under the table");
    assert!(line.contains(&cell), "line {line:?} lacks {cell:?}");
    assert!(line.contains("lru +") && line.contains(&gap), "{line}");
    (cell, gap)
}

#[test]
fn one_spec_shows_one_bound_and_one_gap_in_sim_and_report() {
    let dir = tempfile::tempdir().unwrap();
    let model = densenet(dir.path());
    let cache = dir.path().join("cache");
    let m = model.to_str().unwrap();
    let args = ["--capacity", "4MiB", "--policy", "lru", "--ilp-time", "2"];
    let run = |extra: &[&str]| {
        let mut c = assert_cmd::Command::cargo_bin("spillscope").unwrap();
        c.env("SPILLSCOPE_CACHE_DIR", &cache).args(extra);
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let started = Instant::now();
    let table = run(&[&["sim", m], &args[..]].concat());
    let solve = started.elapsed();
    let json: serde_json::Value =
        serde_json::from_str(&run(
            &[&["sim", m], &args[..], &["--format", "json"]].concat()
        ))
        .unwrap();
    let (cell, gap) = sim_figures(&table, &json);
    assert!(!cell.ends_with("per-op"), "the program's bound: {cell}");
    // The second command read the first's solve instead of solving again.
    assert_eq!(json["optimum"]["cached"], true, "{solve:?}");
    let report: serde_json::Value =
        serde_json::from_str(&run(
            &[&["report", m], &args[..], &["--format", "json"]].concat()
        ))
        .unwrap();
    let s = &report["summary"];
    assert_eq!(
        s["lower_bound_traffic_bytes"],
        json["runs"][0]["lower_bound_traffic_bytes"]
    );
    assert_eq!(
        s["lower_bound_method"],
        json["runs"][0]["lower_bound_method"]
    );
    assert_eq!(s["gap_ratio"], json["runs"][0]["gap_ratio"]);
    println!("bound {cell}, gap {gap}, solved in {solve:?}");
}

/// A DenseNet-style simulator trace at 2 MiB (it spills), written to `dir`.
fn spilling_trace(dir: &Path) -> PathBuf {
    let g = spillscope::graph::gen::densenet_like(&[6, 12]);
    let mut hw = spillscope::cost::HardwareProfile::preset("seed-npu").unwrap();
    hw.memory.capacity.0 = 2 << 20;
    let tr = spillscope::sim::simulate(&g, &hw, &spillscope::sim::SimConfig::default()).unwrap();
    let p = dir.join("t.json");
    tr.write(&p, true).unwrap();
    p
}

/// A simulator trace opened in the explorer: the first frame's quick
/// dataset is posted before the complete analyses and before the graph is
/// rebuilt for the bound (which each cost about what the load did), and a
/// trace whose bound will be refined says so before it is solved.
#[test]
fn a_trace_is_shown_before_its_analyses_and_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let p = spilling_trace(dir.path());
    let (tx, rx) = channel();
    let session = Session::spawn(move |p| {
        let _ = tx.send(p);
    });
    session.submit(Request {
        source: Source::Traces(vec![p], Default::default()),
        wants: Wants {
            datasets: true,
            bound: true,
            ..Default::default()
        },
        budgets: Budgets {
            bound_s: 5.0,
            ..Default::default()
        },
        cache: None,
    });
    let mut order = Vec::new();
    loop {
        match next(&rx).update {
            Update::Loaded { slot: 0, data } => {
                assert!(!data.complete, "the first dataset is the quick one");
                order.push("loaded");
            }
            Update::Analysed { slot: 0, data } => {
                assert!(data.complete);
                order.push("analysed");
            }
            Update::Progress(pr) if pr.stage == Stage::Analyse => order.push("analysing"),
            Update::Refining { .. } => order.push("refining"),
            Update::Bounded { .. } => order.push("bounded"),
            Update::Failed(e) => panic!("{e}"),
            Update::Done => break,
            _ => {}
        }
    }
    assert_eq!(
        order,
        ["loaded", "analysing", "analysed", "refining", "bounded"]
    );
}

/// A trace read from its JSON is kept in the binary trace cache after its
/// first dataset is posted (writing it first would hold the first frame
/// back), and the next request reads it from there: the same trace.
#[test]
fn a_trace_is_cached_after_its_first_frame_and_read_from_the_cache_next() {
    use spillscope::session::source::TraceOpts;
    use spillscope::trace::store::TraceStore;
    let dir = tempfile::tempdir().unwrap();
    let p = spilling_trace(dir.path());
    let store = TraceStore::at(dir.path().join("traces")).with_min_bytes(0);
    let entry = store.entry_path(&p);
    let mut opts = TraceOpts::default();
    opts.import.store = Some(store);
    let request = Request {
        source: Source::Traces(vec![p.clone()], opts),
        wants: Wants {
            datasets: true,
            ..Default::default()
        },
        budgets: Budgets::default(),
        cache: None,
    };
    let mut shown = Vec::new();
    let mut figures = Vec::new();
    let mut inodes = Vec::new();
    // A new session each time: one session keeps what it read in memory.
    for _ in 0..2 {
        let (tx, rx) = channel();
        let session = Session::spawn(move |p| {
            let _ = tx.send(p);
        });
        session.submit(request.clone());
        loop {
            match next(&rx).update {
                Update::Loaded { slot: 0, data } => {
                    if shown.is_empty() {
                        assert!(!entry.exists(), "kept before the first frame was posted");
                    }
                    shown.push(data.trace.clone());
                    figures.push((data.ledger.clone(), data.class.clone()));
                }
                Update::Failed(e) => panic!("{e}"),
                Update::Done => break,
                _ => {}
            }
        }
        assert!(entry.exists(), "kept once the job is done");
        inodes.push(std::os::unix::fs::MetadataExt::ino(
            &std::fs::metadata(&entry).unwrap(),
        ));
    }
    assert_eq!(
        inodes[0], inodes[1],
        "the second run read the entry, not rewrote it"
    );
    assert_eq!(shown.len(), 2);
    assert_eq!(*shown[0], *shown[1]);
    assert_eq!(*shown[1], spillscope::trace::Trace::load(&p).unwrap());
    // The first frame's ledger and classification were kept beside the
    // trace, and the second run's (read back) are the first's (computed).
    let store = TraceStore::at(dir.path().join("traces")).with_min_bytes(0);
    match store.lookup(&p).unwrap() {
        spillscope::trace::store::Lookup::Hit(_, Some(extra)) => {
            assert!(!extra.bytes().is_empty())
        }
        _ => panic!("the entry holds the first frame's analyses"),
    }
    assert_eq!(figures[0], figures[1]);
    assert!(figures[1].1.capacity_count + figures[1].1.lifetime_count > 0);
}

//! Pathological but valid inputs (issue: hardening): each gives a result or
//! one clear error, in bounded time. Limits here are generous (debug
//! builds on a shared 2-core machine); the speed targets are benchmarks.

use crate::common;
use common::test_hw;
use spillscope::graph::gen;
use spillscope::sim::{simulate, EvictionPolicy, SimConfig, WeightMode};
use spillscope::trace::verify::verify;
use std::time::{Duration, Instant};

const BOUND: Duration = Duration::from_secs(120);

fn lru() -> SimConfig {
    SimConfig {
        policy: EvictionPolicy::Lru,
        weights: WeightMode::Ignore,
        ..Default::default()
    }
}

#[test]
fn a_100k_op_chain_simulates_and_verifies() {
    let t = Instant::now();
    let g = gen::chain(100_000, 4096);
    let tr = simulate(&g, &test_hw(16 * 1024), &lru()).unwrap();
    assert_eq!(tr.ops.len(), 100_000);
    assert_eq!(
        tr.summary.traffic_bytes, 0,
        "a chain always fits two tensors"
    );
    assert!(verify(&tr, 5).violations.is_empty());
    assert!(t.elapsed() < BOUND, "{:?}", t.elapsed());
}

#[test]
fn a_10k_way_fanout_streams_the_join_and_verifies() {
    let t = Instant::now();
    let g = gen::fanout(10_000, 1024);
    let tr = simulate(&g, &test_hw(256 * 1024), &lru()).unwrap();
    let join = tr.ops.iter().find(|o| o.name == "join").unwrap();
    assert!(
        !join.streamed.is_empty(),
        "10,000 inputs cannot all be resident"
    );
    assert!(verify(&tr, 5).violations.is_empty());
    assert!(tr.summary.traffic_bytes >= tr.summary.lower_bound_traffic_bytes);
    assert!(t.elapsed() < BOUND, "{:?}", t.elapsed());
}

#[test]
fn a_tensor_larger_than_the_pool_is_streamed() {
    let g = common::graph(
        &[("big", &["x"], &["y"]), ("small", &["y"], &["z"])],
        1024,
        &[("y", 1 << 30)],
        &["z"],
    );
    let tr = simulate(&g, &test_hw(32 << 20), &lru()).unwrap();
    let y = tr.tensors.iter().position(|t| t.name == "y").unwrap();
    assert!(tr
        .ops
        .iter()
        .all(|o| !o.inputs.contains(&y) && !o.outputs.contains(&y) || o.streamed.contains(&y)));
    assert!(verify(&tr, 5).violations.is_empty());
}

#[test]
fn zero_byte_tensors_and_ops_without_outputs_are_fine() {
    let g = common::graph(
        &[
            ("a", &["x"], &["e"]),
            ("sink", &["e"], &[]),
            ("b", &["x"], &["z"]),
        ],
        0,
        &[("z", 64)],
        &["z"],
    );
    let tr = simulate(&g, &test_hw(1024), &lru()).unwrap();
    assert_eq!(tr.ops.len(), 3);
    assert!(verify(&tr, 5).violations.is_empty());
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn one_line_error(args: &[&str]) -> String {
    let o = assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let e = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(e.trim_end().lines().count(), 1, "one line: {e}");
    e
}

#[test]
fn duplicate_names_and_deep_nesting_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let dup = write(
        dir.path(),
        "dup.json",
        r#"{"name":"d","tensors":[{"name":"x","bytes":4},{"name":"x","bytes":4}],"ops":[]}"#,
    );
    let e = one_line_error(&["sim", dup.to_str().unwrap()]);
    assert!(e.contains("\"x\"") || e.contains("x"), "{e}");
    assert!(e.contains("twice"), "{e}");
    // 100,000 levels of nesting: a parse error, not a stack overflow.
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    let p = write(dir.path(), "deep.json", &deep);
    let e = one_line_error(&["sim", p.to_str().unwrap()]);
    assert!(e.contains("deep.json"), "{e}");
    let e = one_line_error(&["verify", p.to_str().unwrap()]);
    assert!(e.contains("deep.json"), "{e}");
    let p = write(
        dir.path(),
        "deep_npu.json",
        &("{\"Nodes\":".to_string() + &deep + "}"),
    );
    let e = one_line_error(&["npu", "schedule", p.to_str().unwrap()]);
    assert!(e.contains("deep_npu.json"), "{e}");
}

#[test]
fn a_trace_whose_time_goes_backwards_is_flagged() {
    let g = gen::chain(10, 1024);
    let mut tr = simulate(&g, &test_hw(4096), &lru()).unwrap();
    let n = tr.events.len();
    tr.events.update(n - 1, |e| e.t_ns = 0);
    tr.events.update(n - 2, |e| e.t_ns = e.t_ns.max(1));
    let r = verify(&tr, 20);
    assert!(
        r.violations.iter().any(|v| v.rule == "time-order"),
        "{:?}",
        r.violations
    );
    // The explorer's analyses still build on it (no panic).
    let d = spillscope_explorer::data::Dataset::build("backwards", tr);
    assert!(d.end_ns() > 0);
}

/// An op recorded as ending before it starts, beside a `live_bytes`
/// counter sampled at its own times (not one sample per op): the reader
/// lets it through, and the explorer's
/// analyses build on it (the chart's step for that op spans no samples)
/// instead of panicking on a backwards range (found by the fuzz smoke).
#[test]
fn an_op_that_ends_before_it_starts_beside_a_timed_counter_still_builds() {
    let mut tr = simulate(&gen::chain(10, 1024), &test_hw(4096), &lru()).unwrap();
    tr.ops.update(3, |o| {
        o.start_ns = o.end_ns + 5_000;
    });
    let live = tr
        .counters
        .iter_mut()
        .find(|c| c.name == "live_bytes")
        .expect("a simulated trace counts live bytes");
    live.samples.pop();
    assert_ne!(live.samples.len(), tr.ops.len());
    let d = spillscope_explorer::data::Dataset::build("backwards op", tr);
    assert_eq!(d.live_by_step.len(), d.trace.ops.len());
}

#[test]
fn gen_makes_deterministic_graphs_and_traces() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    for out in [&a, &b] {
        common::run_ok(&[
            "gen",
            "graph",
            "--kind",
            "transformer",
            "--ops",
            "1000",
            "-o",
            out.to_str().unwrap(),
        ]);
    }
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let g = spillscope::graph::load(&a, &Default::default()).unwrap();
    assert!((990..=1010).contains(&g.ops.len()), "{}", g.ops.len());
    let t = dir.path().join("t.json");
    common::run_ok(&[
        "gen",
        "trace",
        "--events",
        "20000",
        "-o",
        t.to_str().unwrap(),
    ]);
    let tr = spillscope::trace::Trace::load(&t).unwrap();
    assert!(
        (10_000..=40_000).contains(&tr.events.len()),
        "{}",
        tr.events.len()
    );
    assert!(verify(&tr, 5).violations.is_empty());
    // Never overwrites without --force.
    let o = assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .args(["gen", "graph", "-o", a.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!o.status.success());
}

#[test]
fn inputs_over_the_size_cap_are_refused_with_the_way_out() {
    let model =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/encoder_decoder.json");
    let trace =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/encdec-1mib.lru.json");
    for args in [
        vec!["sim", model.to_str().unwrap()],
        vec!["verify", trace.to_str().unwrap()],
        vec!["import", trace.to_str().unwrap()],
        vec!["report", trace.to_str().unwrap()],
    ] {
        let o = assert_cmd::Command::cargo_bin("spillscope")
            .unwrap()
            .env("SPILLSCOPE_MAX_INPUT_BYTES", "1000")
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            e.contains("over the input cap of 1000 bytes"),
            "{args:?}: {e}"
        );
        assert!(e.contains("SPILLSCOPE_MAX_INPUT_BYTES"), "{e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    }
}

/// The binary run with `args` under the memory budget `budget`.
fn under_budget(budget: &str, args: &[&str]) -> std::process::Output {
    assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .env("SPILLSCOPE_MEMORY_BUDGET", budget)
        .args(args)
        .output()
        .unwrap()
}

/// Fails naming the first of `needles` that `text` lacks.
fn assert_mentions(text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(text.contains(needle), "{needle:?} missing: {text}");
    }
}

/// A graph whose load would not fit the memory budget is refused before it
/// is read, in one line that names the file, the estimate, the budget and
/// the knob (instead of the allocator aborting half-way); the same graph
/// runs under a budget it fits, and a budget that does not parse is an
/// error rather than no protection.
#[test]
fn graphs_over_the_memory_budget_are_refused_in_one_line() {
    let model =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/encoder_decoder.json");
    let run = |budget: &str| {
        let o = under_budget(
            budget,
            &["sim", model.to_str().unwrap(), "--capacity", "1MiB"],
        );
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, e) = run("1KiB");
    assert_eq!(code, Some(2), "{e}");
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    assert_mentions(
        &e,
        &[
            "encoder_decoder.json",
            "needs about",
            "1.0 KiB",
            "SPILLSCOPE_MEMORY_BUDGET",
        ],
    );
    let (code, e) = run("1GiB");
    assert_eq!(code, Some(0), "{e}");
    let (code, e) = run("lots");
    assert_eq!(code, Some(2), "{e}");
    assert!(e.contains("SPILLSCOPE_MEMORY_BUDGET=\"lots\""), "{e}");
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
}

/// A bound whose refinement (the graph rebuilt from the trace and its
/// exact program) would not fit the memory budget is left as the trace
/// recorded it, marked `unrefined` with no gap printed against it, and a
/// note says what it needs and what the budget is; with room it is refined.
#[test]
fn a_bound_that_would_not_fit_the_memory_budget_stays_unrefined_and_says_why() {
    let run = |budget: &str| {
        let o = under_budget(budget, &["sample", "--format", "json"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        (v, String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let (tight, note) = run("1KiB");
    let (roomy, quiet) = run("64GiB");
    let bounded = |v: &serde_json::Value| -> Vec<serde_json::Value> {
        v["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["lower_bound_method"] != "none")
            .cloned()
            .collect()
    };
    assert!(!bounded(&tight).is_empty());
    for r in bounded(&tight) {
        assert_eq!(r["bound_state"], "unrefined", "{r}");
        assert!(r["gap_ratio"].is_null(), "{r}");
    }
    for r in bounded(&roomy) {
        assert!(r.get("bound_state").is_none(), "{r}");
        assert!(r["gap_ratio"].is_number(), "{r}");
    }
    assert_mentions(
        &note,
        &[
            "bound not refined",
            "needed",
            "1.0 KiB",
            "SPILLSCOPE_MEMORY_BUDGET",
        ],
    );
    assert!(!quiet.contains("not refined"), "{quiet}");
}

/// Suggestions re-simulate the run on its graph rebuilt from the trace:
/// where that would not fit the memory budget the report says so in its
/// notes and carries no suggestions, instead of the graph crowding out
/// the viewer; with room they are there.
#[test]
fn suggestions_that_would_not_fit_the_memory_budget_say_why() {
    let trace =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/encdec-1mib.lru.json");
    let report = |budget: &str| -> serde_json::Value {
        let o = under_budget(
            budget,
            &["report", trace.to_str().unwrap(), "--format", "json"],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let tight = report("1KiB");
    assert!(tight["suggestions"].is_null(), "{}", tight["suggestions"]);
    let notes = tight["notes"].to_string();
    assert_mentions(
        &notes,
        &["re-simulating this run", "needed", "1.0 KiB budget"],
    );
    let roomy = report("64GiB");
    assert!(
        roomy["suggestions"]["baseline"].is_object(),
        "{}",
        roomy["suggestions"]
    );
    assert!(!roomy["notes"].to_string().contains("re-simulating"));
}

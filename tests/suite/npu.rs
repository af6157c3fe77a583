//! NPU kernel DAGs: the checker rejects every kind of broken solution with
//! the rule named; the shared benchmark cases are solved with the figures
//! asserted (skipped when ../shared/data/npu is absent); CSV and JSON load
//! the same case; the CLI writes, checks and imports solutions.

use crate::common;
use spillscope::npu::check::{evaluate, read_solution, write_solution};
use spillscope::npu::schedule::{l0_violation, peak_residency};
use spillscope::npu::solve::{solve, SolveOptions};
use spillscope::npu::{Kernel, Solution};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Two L1 tiles (COPY_IN), each MOVEd into its own L0A buffer.
const TINY: &str = r#"{
 "Nodes": [
  {"Id": 0, "Op": "ALLOC", "BufId": 0, "Size": 1000, "Type": "L1"},
  {"Id": 1, "Op": "ALLOC", "BufId": 1, "Size": 1000, "Type": "L1"},
  {"Id": 2, "Op": "COPY_IN", "Pipe": "MTE2", "Cycles": 10, "Bufs": [0]},
  {"Id": 3, "Op": "COPY_IN", "Pipe": "MTE2", "Cycles": 10, "Bufs": [1]},
  {"Id": 4, "Op": "ALLOC", "BufId": 2, "Size": 128, "Type": "L0A"},
  {"Id": 5, "Op": "MOVE", "Pipe": "MTE1", "Cycles": 5, "Bufs": [0, 2]},
  {"Id": 6, "Op": "ALLOC", "BufId": 3, "Size": 128, "Type": "L0A"},
  {"Id": 7, "Op": "MOVE", "Pipe": "MTE1", "Cycles": 5, "Bufs": [1, 3]},
  {"Id": 8, "Op": "FREE", "BufId": 0, "Size": 1000, "Type": "L1"},
  {"Id": 9, "Op": "FREE", "BufId": 1, "Size": 1000, "Type": "L1"},
  {"Id": 10, "Op": "FREE", "BufId": 2, "Size": 128, "Type": "L0A"},
  {"Id": 11, "Op": "FREE", "BufId": 3, "Size": 128, "Type": "L0A"}
 ],
 "Edges": [[0,2],[0,8],[1,3],[1,9],[2,5],[4,5],[4,10],[3,7],[6,7],[6,11],[5,8],[5,10],[7,9],[7,11]]
}"#;

fn tiny() -> (tempfile::TempDir, Kernel) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("Tiny.json");
    std::fs::write(&p, TINY).unwrap();
    let k = Kernel::load(&p).unwrap();
    (dir, k)
}

fn sol(order: &[usize], offsets: &[(u32, u64)], spills: &[(u32, u64)]) -> Solution {
    Solution {
        order: order.to_vec(),
        offsets: offsets.to_vec(),
        spills: spills.to_vec(),
    }
}

const OFFSETS: [(u32, u64); 4] = [(0, 0), (1, 1000), (2, 0), (3, 0)];
const VALID: [usize; 12] = [0, 2, 4, 5, 10, 1, 3, 6, 7, 8, 9, 11];

#[test]
fn a_valid_solution_is_timed_by_pipes() {
    let (_d, k) = tiny();
    let m = evaluate(&k, &sol(&VALID, &OFFSETS, &[])).unwrap();
    assert_eq!(m.peak_residency, 2000);
    assert_eq!(m.extra_traffic, 0);
    // MTE2: COPY_IN 0..10, COPY_IN 10..20; MTE1: MOVE 10..15, MOVE 20..25.
    assert_eq!(m.total_cycles, 25);
}

#[test]
fn a_spill_pair_costs_traffic_and_cycles() {
    let (_d, k) = tiny();
    // buf0 (COPY_IN-filled) leaves after its COPY_IN and comes back at 2000
    // for the MOVE: ids 12 (OUT) and 13 (IN).
    let order = [0, 2, 12, 1, 3, 6, 7, 11, 9, 13, 4, 5, 10, 8];
    let m = evaluate(
        &k,
        &sol(&order, &[(0, 0), (1, 0), (2, 0), (3, 0)], &[(0, 2000)]),
    )
    .unwrap();
    assert_eq!(m.extra_traffic, 1000, "a COPY_IN-filled buffer costs Size");
    assert_eq!(m.spill_count, 1);
    // SPILL_OUT of a COPY_IN buffer takes 0 cycles; SPILL_IN 2*1000+150 on
    // MTE2 after the second COPY_IN: 20 + 2150, then the MOVE (5).
    assert_eq!(m.total_cycles, 20 + 2150 + 5);
}

fn rule_of(k: &Kernel, s: &Solution) -> &'static str {
    evaluate(k, s).unwrap_err().rule
}

#[test]
fn broken_solutions_are_rejected_with_the_rule_named() {
    let (_d, k) = tiny();
    // Order against an edge (COPY_IN before its ALLOC).
    let mut o = VALID;
    o.swap(0, 1);
    assert_eq!(rule_of(&k, &sol(&o, &OFFSETS, &[])), "order");
    // Overlapping offsets of two live L1 buffers.
    let bad = [(0, 0), (1, 500), (2, 0), (3, 0)];
    assert_eq!(rule_of(&k, &sol(&VALID, &bad, &[])), "overlap");
    // Past the L1 capacity (4096).
    let bad = [(0, 0), (1, 3500), (2, 0), (3, 0)];
    assert_eq!(rule_of(&k, &sol(&VALID, &bad, &[])), "capacity");
    // Two L0A buffers live at once.
    let o = [0, 2, 4, 1, 3, 6, 5, 7, 10, 11, 8, 9];
    assert_eq!(rule_of(&k, &sol(&o, &OFFSETS, &[])), "l0-double");
    // A node twice, a node missing, an id that does not exist.
    let mut o = VALID.to_vec();
    o[11] = 0;
    assert_eq!(rule_of(&k, &sol(&o, &OFFSETS, &[])), "duplicate");
    assert_eq!(rule_of(&k, &sol(&VALID[..11], &OFFSETS, &[])), "missing");
    let mut o = VALID.to_vec();
    o.push(12);
    assert_eq!(rule_of(&k, &sol(&o, &OFFSETS, &[])), "unknown-id");
    // Spill ids out of order: two spills whose OUTs appear as 14 then 12.
    let order = [0, 2, 14, 1, 3, 12, 6, 7, 11, 9, 13, 15, 4, 5, 10, 8];
    let spills = [(1, 1000), (0, 0)];
    assert_eq!(
        rule_of(
            &k,
            &sol(&order, &[(0, 0), (1, 1000), (2, 0), (3, 0)], &spills)
        ),
        "spill-ids"
    );
    // SPILL_IN before its SPILL_OUT.
    let order = [0, 2, 13, 12, 1, 3, 6, 7, 11, 9, 4, 5, 10, 8];
    assert_eq!(
        rule_of(&k, &sol(&order, &OFFSETS, &[(0, 2000)])),
        "spill-pair"
    );
    // A use while spilled out.
    let order = [0, 2, 12, 4, 5, 13, 10, 1, 3, 6, 7, 11, 9, 8];
    assert_eq!(
        rule_of(&k, &sol(&order, &OFFSETS, &[(0, 2000)])),
        "operand-not-resident"
    );
    // Spilling an L0 buffer.
    let order = [0, 2, 4, 12, 13, 5, 10, 1, 3, 6, 7, 11, 9, 8];
    assert_eq!(rule_of(&k, &sol(&order, &OFFSETS, &[(2, 0)])), "spill-l0");
    // A buffer without an offset.
    assert_eq!(
        rule_of(&k, &sol(&VALID, &OFFSETS[..3], &[])),
        "missing-offset"
    );
}

/// One rule set for kernels and traces: the checker's residency, overlap
/// and use-while-spilled verdicts are `trace::verify`'s on the solution
/// replayed in schedule order (named by schedule line), and its traffic is
/// the trace ledger's.
#[test]
fn the_checker_is_trace_verify_plus_the_benchmark_rules() {
    use spillscope::npu::to_trace::to_trace;
    let (_d, k) = tiny();
    let order = [0, 2, 12, 1, 3, 6, 7, 11, 9, 13, 4, 5, 10, 8];
    let good = sol(&order, &[(0, 0), (1, 0), (2, 0), (3, 0)], &[(0, 2000)]);
    let m = evaluate(&k, &good).unwrap();
    let tr = to_trace(&k, &good).unwrap();
    assert!(spillscope::trace::verify::verify(&tr, 10).ok());
    assert_eq!(tr.summary.traffic_bytes, m.extra_traffic);
    assert_eq!(tr.summary.spill_count as usize, m.spill_count);
    // buf0 reloaded at 2000 over buf1 (at 2500, still live).
    let late_free = [0, 2, 12, 1, 3, 6, 7, 11, 13, 4, 5, 10, 8, 9];
    let bad = sol(
        &late_free,
        &[(0, 0), (1, 2500), (2, 0), (3, 0)],
        &[(0, 2000)],
    );
    let v = evaluate(&k, &bad).unwrap_err();
    assert_eq!(v.rule, "overlap");
    // Line 9 of the schedule is the SPILL_IN (id 13) that lands on buf1.
    assert!(v.detail.starts_with("schedule line 9:"), "{}", v.detail);
    assert!(
        v.detail.contains("\"buf0\"") && v.detail.contains("\"buf1\""),
        "{}",
        v.detail
    );
    // A FREE of a buffer that is spilled out.
    let order = [0, 2, 4, 5, 10, 12, 8, 13, 1, 3, 6, 7, 11, 9];
    let v = evaluate(&k, &sol(&order, &OFFSETS, &[(0, 2000)])).unwrap_err();
    assert_eq!(v.rule, "free-not-resident", "{v}");
}

#[test]
fn the_tiny_case_is_solved_validly_and_round_trips_through_files() {
    let (d, k) = tiny();
    let r = solve(&k, SolveOptions::default()).unwrap();
    let m = evaluate(&k, &r.cycles.solution).unwrap();
    assert_eq!(m, r.cycles.metrics);
    assert!(l0_violation(&k, &r.peak.solution.order).is_none());
    let out = d.path().join("sol");
    write_solution(&out, &r.cycles.solution, false).unwrap();
    assert_eq!(read_solution(&out).unwrap(), r.cycles.solution);
    // Never overwritten without force.
    assert!(write_solution(&out, &r.cycles.solution, false).is_err());
    write_solution(&out, &r.cycles.solution, true).unwrap();
}

#[test]
fn loading_errors_name_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            r#"{"Nodes": [{"Id": 0, "Op": "ALLOC", "BufId": 0, "Size": 5000, "Type": "L1"}], "Edges": []}"#,
            "larger than L1",
        ),
        (
            r#"{"Nodes": [{"Id": 0, "Op": "ALLOC", "BufId": 0, "Size": 5, "Type": "L2"}], "Edges": []}"#,
            "Type",
        ),
        (
            r#"{"Nodes": [{"Id": 0, "Op": "ALLOC", "BufId": 0, "Size": 5, "Type": "L1"}], "Edges": []}"#,
            "never freed",
        ),
        (
            r#"{"Nodes": [{"Id": 0, "Op": "X", "Pipe": "CUBE", "Cycles": 1, "Bufs": [7]}], "Edges": []}"#,
            "never allocated",
        ),
        (
            r#"{"Nodes": [{"Id": 0, "Op": "X", "Pipe": "CUBE", "Cycles": 1}, {"Id": 1, "Op": "Y", "Pipe": "CUBE", "Cycles": 1}], "Edges": [[0,1],[1,0]]}"#,
            "cycle",
        ),
        (
            r#"{"Nodes": [{"Id": 0, "Op": "X", "Pipe": "CUBE", "Cycles": 1}], "Edges": [[0,9]]}"#,
            "does not exist",
        ),
        (
            r#"{"Nodes": [{"Id": 3, "Op": "X", "Pipe": "CUBE", "Cycles": 1}], "Edges": []}"#,
            "not in 0..1",
        ),
        (r#"{"Nodes": "#, "NPU kernel DAG"),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let p = dir.path().join(format!("c{i}.json"));
        std::fs::write(&p, text).unwrap();
        let e = Kernel::load(&p).unwrap_err().to_string();
        assert!(e.contains(want), "{want:?} not in {e:?}");
    }
}

fn shared_case(name: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/npu")
        .join(format!("{name}.json"));
    if p.exists() {
        Some(p)
    } else {
        eprintln!("SKIP: {} absent", p.display());
        None
    }
}

/// The heuristics alone (no search) on the benchmark's three cases: exact,
/// deterministic figures. Matmul and Conv reach the best published peak;
/// Matmul's banded walk (bands of 3, 2 and 3 rows) reaches the best extra
/// traffic the 60 s search used to need (12,416).
#[test]
fn shared_cases_heuristic_figures() {
    // (case, peak, heuristic traffic, heuristic cycles)
    let expect = [
        ("Matmul_Case0", 9216, 12416, 130101),
        ("FlashAttention_Case0", 4500, 3584, 39591),
        ("Conv_Case0", 6912, 52224, 490111),
    ];
    for (name, peak, traffic, cycles) in expect {
        let Some(p) = shared_case(name) else { return };
        let k = Kernel::load(&p).unwrap();
        let r = solve(&k, SolveOptions::default()).unwrap();
        assert_eq!(r.peak.metrics.peak_residency, peak, "{name} peak");
        assert_eq!(peak_residency(&k, &r.peak.solution.order), peak);
        assert!(l0_violation(&k, &r.peak.solution.order).is_none());
        assert_eq!(r.traffic.metrics.extra_traffic, traffic, "{name} traffic");
        assert_eq!(r.cycles.metrics.total_cycles, cycles, "{name} cycles");
        // The written solution passes the checker with the same figures,
        // and its trace replays cleanly.
        let m = evaluate(&k, &r.cycles.solution).unwrap();
        assert_eq!(m, r.cycles.metrics);
        let tr = spillscope::npu::to_trace::to_trace(&k, &r.cycles.solution).unwrap();
        let v = spillscope::trace::verify::verify(&tr, 5);
        assert!(v.violations.is_empty(), "{name}: {:?}", v.violations);
        assert_eq!(tr.summary.traffic_bytes, m.extra_traffic);
    }
}

/// The incremental peak search's figure is a full evaluation's: the order
/// it returns, scheduled from scratch, has exactly the peak and peak count
/// it reports (and every accepted move is checked the same way by a debug
/// assertion inside the search), never above the start's.
#[test]
fn incremental_peak_search_agrees_with_full_evaluation() {
    use spillscope::npu::peak;
    use spillscope::npu::schedule::peak_profile;
    use spillscope::npu::solve::{groups, schedule_of, Plan, Rng};
    let dir = tempfile::tempdir().unwrap();
    let mut paths = vec![common::write_matmul_case(dir.path(), 4, 4, 2)];
    paths.extend(shared_case("FlashAttention_Case0"));
    for p in paths {
        let k = Kernel::load(&p).unwrap();
        let gs = groups(&k);
        let sources: Vec<Vec<usize>> = vec![Vec::new(); gs.len()];
        let full = |order: &[usize]| {
            let plan = Plan {
                order: order.to_vec(),
                lookahead: 0,
                alloc: Default::default(),
            };
            let (peak, count) = peak_profile(&k, &schedule_of(&k, &gs, &sources, &plan).unwrap());
            (peak, count, 0)
        };
        let start: Vec<usize> = (0..gs.len()).collect();
        let f = peak::search(
            &k,
            &gs,
            &start,
            Duration::from_secs(3600),
            20_000,
            &mut Rng::new(7),
        )
        .unwrap();
        assert_eq!(f.evaluations, 20_000);
        assert_eq!(f.score, full(&f.order), "{}", k.name);
        assert!(f.score <= full(&start), "{}", k.name);
        let mut sorted = f.order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, start, "a permutation of the groups");
    }
}

/// The peak search (ties broken by how often the peak is reached; moves
/// evaluated incrementally) goes below the best published FlashAttention
/// peak (4,498): a fixed number of evaluations, so the figure is exact on
/// any machine. (The search that re-scheduled every node per move reached
/// 4,380 in these 40,000 evaluations; this is the 60 s figure it reached.)
#[test]
fn flash_attention_peak_goes_below_the_published_best() {
    let Some(p) = shared_case("FlashAttention_Case0") else {
        return;
    };
    let k = Kernel::load(&p).unwrap();
    let starts = spillscope::npu::solve::start_plans(&k, 0);
    let f = spillscope::npu::solve::search_limited(
        &k,
        spillscope::npu::solve::Goal::Peak,
        &starts[..1],
        Duration::from_secs(3600),
        40_000,
        1,
        0,
    )
    .unwrap();
    assert_eq!(f.evaluations, 40_000);
    assert_eq!(f.metrics.peak_residency, 4246);
    // Independently recomputed, and a valid schedule for the checker.
    assert_eq!(peak_residency(&k, &f.solution.order), 4246);
    assert!(l0_violation(&k, &f.solution.order).is_none());
    let a = spillscope::npu::alloc::allocate(&k, &f.solution.order).unwrap();
    evaluate(&k, &a.solution).unwrap();
}

/// A short search never does worse than the heuristics, and FlashAttention
/// beats the published traffic (3,584) within a second of search.
#[test]
fn a_short_search_improves_on_the_heuristics() {
    let Some(p) = shared_case("FlashAttention_Case0") else {
        return;
    };
    let k = Kernel::load(&p).unwrap();
    let base = solve(&k, SolveOptions::default()).unwrap();
    let r = solve(
        &k,
        SolveOptions {
            time: Duration::from_secs(4),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(r.traffic.metrics.extra_traffic <= base.traffic.metrics.extra_traffic);
    assert!(r.cycles.metrics.extra_traffic <= r.traffic_budget);
    assert!(r.peak.metrics.peak_residency <= base.peak.metrics.peak_residency);
    evaluate(&k, &r.cycles.solution).unwrap();
}

#[test]
fn csv_and_json_load_the_same_case() {
    let Some(p) = shared_case("Conv_Case0") else {
        return;
    };
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut nodes = String::from("Id,Op,BufId,Size,Type,Pipe,Cycles,Bufs\n");
    for n in v["Nodes"].as_array().unwrap() {
        let f = |k: &str| {
            n.get(k)
                .map(|x| x.to_string().trim_matches('"').to_string())
                .unwrap_or_default()
        };
        let bufs = n
            .get("Bufs")
            .map(|b| {
                format!(
                    "\"[{}]\"",
                    b.as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
            .unwrap_or_default();
        nodes += &format!(
            "{},{},{},{},{},{},{},{}\n",
            f("Id"),
            f("Op"),
            f("BufId"),
            f("Size"),
            f("Type"),
            f("Pipe"),
            f("Cycles"),
            bufs
        );
    }
    let mut edges = String::from("StartNodeId,EndNodeId\n");
    for e in v["Edges"].as_array().unwrap() {
        edges += &format!("{},{}\n", e[0], e[1]);
    }
    std::fs::write(dir.path().join("Conv_Case0_Nodes.csv"), nodes).unwrap();
    std::fs::write(dir.path().join("Conv_Case0_Edges.csv"), edges).unwrap();
    let a = Kernel::load(&p).unwrap();
    let b = Kernel::load(&dir.path().join("Conv_Case0_Nodes.csv")).unwrap();
    assert_eq!(a.name, b.name);
    assert_eq!(a.nodes, b.nodes);
    assert_eq!(a.succ, b.succ);
    assert_eq!(a.buffers, b.buffers);
}

#[test]
fn cli_solve_check_import_verify() {
    let Some(p) = shared_case("FlashAttention_Case0") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sol");
    let bin = || assert_cmd::Command::cargo_bin("spillscope").unwrap();
    let run = |args: &[&str]| bin().args(args).output().unwrap();
    let case = p.to_str().unwrap();
    let o = run(&[
        "npu",
        "solve",
        case,
        "--out",
        out.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["peak_residency"], 4500);
    for f in ["schedule.txt", "memory.txt", "spill.txt"] {
        assert!(out.join(f).exists(), "{f}");
    }
    let o = run(&[
        "npu",
        "check",
        case,
        out.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(o.status.success());
    let c: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(c["valid"], true);
    assert_eq!(c["metrics"], v["written"]);
    // A second solve into the same directory needs --force.
    let o = run(&["npu", "solve", case, "--out", out.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--force"));
    // Break it: swap two lines so an edge is violated; check exits 1 naming the rule.
    let sched = std::fs::read_to_string(out.join("schedule.txt")).unwrap();
    let mut lines: Vec<&str> = sched.lines().collect();
    let last = lines.len() - 1;
    lines.swap(0, last);
    std::fs::write(out.join("schedule.txt"), lines.join("\n")).unwrap();
    let o = run(&["npu", "check", case, out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("[order]"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // Import (heuristic solution) and verify the trace.
    let tr = dir.path().join("fa.json");
    let o = run(&["npu", "import", case, "-o", tr.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(&["verify", tr.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    // The report works on kernel traces too.
    let o = run(&["report", tr.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("## Hotspots"));
}

/// The generator writes the benchmark's Matmul exactly as the benchmark
/// does: `matmul(8, 8, 8)` is Matmul_Case0, node for node and edge for
/// edge; so larger tilings are cases of the same family, not look-alikes.
#[test]
fn generated_matmul_is_the_benchmark_case() {
    let Some(p) = shared_case("Matmul_Case0") else {
        return;
    };
    let published: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    let made = spillscope::npu::gen::matmul(8, 8, 8).unwrap().to_value();
    assert_eq!(made["Nodes"], published["Nodes"]);
    assert_eq!(made["Edges"], published["Edges"]);
}

/// Generated and replicated cases load, and the CLI writes them without
/// clobbering what is there.
#[test]
fn cli_gen_writes_loadable_cases() {
    let dir = tempfile::tempdir().unwrap();
    let mm = dir.path().join("mm.json");
    let out = assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .args(["npu", "gen", "matmul", "2", "3", "4", "-o"])
        .arg(&mm)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let nodes = 7 * 2 * 3 * 4 + 3 * (2 * 4 + 4 * 3 + 2 * 3);
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("({nodes} nodes)")));
    let k = Kernel::load(&mm).unwrap();
    assert_eq!(k.len(), nodes);
    // A second write without --force refuses.
    let again = assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .args(["npu", "gen", "matmul", "2", "3", "4", "-o"])
        .arg(&mm)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
    let rep = dir.path().join("rep.json");
    let out = assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .args(["npu", "gen", "replicate"])
        .arg(&mm)
        .args(["3", "-o"])
        .arg(&rep)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = Kernel::load(&rep).unwrap();
    assert_eq!(r.len(), 3 * nodes);
    // Three independent copies: the heuristics' traffic and peak are those
    // of one copy scaled (traffic) and no worse than three times (peak).
    let one = solve(&k, SolveOptions::default()).unwrap();
    let three = solve(&r, SolveOptions::default()).unwrap();
    assert!(three.peak.metrics.peak_residency <= 3 * one.peak.metrics.peak_residency);
    assert!(three.peak.metrics.peak_residency >= one.peak.metrics.peak_residency);
    let m = evaluate(&r, &three.cycles.solution).unwrap();
    assert_eq!(m, three.cycles.metrics);
}

/// At the size of the benchmark's held-out Matmul (16 x 16 x 16 tiles,
/// 30,976 nodes; a 60 s local search had stalled at 423,168 bytes on the
/// held-out case, and the heuristics gave 432,000 on this tiling before),
/// the banded walk alone (no search) goes below the best published extra
/// traffic for that size (316,672), and the checker agrees with the figure.
#[test]
fn banded_walk_beats_the_published_traffic_at_31k_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let p = common::write_matmul_case(dir.path(), 16, 16, 16);
    let k = Kernel::load(&p).unwrap();
    assert_eq!(k.len(), 30_976);
    let r = solve(&k, SolveOptions::default()).unwrap();
    assert_eq!(r.traffic.metrics.extra_traffic, 313_088);
    assert!(r.traffic.metrics.extra_traffic < 316_672);
    let m = evaluate(&k, &r.traffic.solution).unwrap();
    assert_eq!(m, r.traffic.metrics);
}

/// A kernel DAG enters through the graph front end: `sim --hw
/// npu-benchmark` runs it as a graph with one pool per buffer type (the
/// benchmark's capacities) and each op on its pipe; every run replays
/// cleanly through `verify`, tensors and events sit in their buffer type's
/// pool, and the explorer draws a lane per pipe and per pool.
#[test]
fn kernel_dag_simulates_as_a_graph_with_pools_and_pipes() {
    let dir = tempfile::tempdir().unwrap();
    let case = common::write_matmul_case(dir.path(), 4, 4, 4);
    assert_eq!(
        spillscope::input::detect(&case).unwrap(),
        spillscope::input::Format::Kernel
    );
    let out = dir.path().join("k.json");
    let o = assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .args(["sim"])
        .arg(&case)
        .args(["--hw", "npu-benchmark", "--policy", "lru,belady", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("pools: L1 4.0 KiB") && text.contains("L0C 512 B"),
        "{text}"
    );
    for p in ["lru", "belady"] {
        let path = dir.path().join(format!("k.{p}.json"));
        let tr = spillscope::trace::Trace::load(&path).unwrap();
        let v = spillscope::trace::verify::verify(&tr, 5);
        assert!(v.violations.is_empty(), "{p}: {:?}", v.violations);
        let pools: Vec<&str> = tr.pools.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(pools, ["L1", "UB", "L0A", "L0B", "L0C"]);
        let caps: Vec<u64> = tr.pools.iter().map(|p| p.capacity_bytes).collect();
        assert_eq!(caps, [4096, 1024, 256, 256, 512]);
        for t in &tr.tensors {
            assert_eq!(Some(t.pool), t.name.split('/').next(), "{}", t.name);
        }
        for e in &tr.events {
            assert_eq!(e.pool, tr.tensors.at(e.tensor).pool);
        }
        // Every op on its pipe, as the case says.
        for op in &tr.ops {
            let want = match op.op_type {
                "COPY_IN" => "MTE2",
                "MOVE" => "MTE1",
                "MATMUL" => "CUBE",
                "COPY_OUT" => "FIXP",
                other => panic!("unexpected op {other}"),
            };
            assert_eq!(
                op.unit.as_ref().map(|u| u.as_str()),
                Some(want),
                "{}",
                op.name
            );
        }
        assert!(tr.summary.traffic_bytes >= tr.summary.lower_bound_traffic_bytes);
        // The explorer's timeline at 120x40: a lane per pipe and per pool.
        let mut app =
            spillscope_explorer::app::App::new(vec![spillscope_explorer::data::Dataset::build(
                "k.json", tr,
            )]);
        app.view = spillscope_explorer::app::View::Timeline;
        let screen = common::screen::render(&app, 120, 40);
        for lane in [" CUBE", " MTE2", " L1 ", " UB ", " L0A", " L0C"] {
            assert!(screen.contains(lane), "lane {lane}:\n{screen}");
        }
    }
}

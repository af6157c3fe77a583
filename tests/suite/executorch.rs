//! ExecuTorch programs, their memory plans and ETDump profiles
//! (`../shared/data/executorch`, skipped with a reason when absent): every
//! planned buffer of the imported plan equals the reference read from the
//! exported program (`plan.*.json`), arena 1 stays within the program's
//! size, DRAM bytes equal the plan's arena-2 bytes, traces verify, the
//! ETDump import has the Inspector's op count and latency, `sim` under
//! `ideal` needs no more than ExecuTorch's greedy arena, and hostile files
//! fail in one line with exit 2.

use crate::common;
use spillscope::trace::import::executorch::ExecutorchInfo;
use spillscope::trace::{EventKind, Producer, Trace};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const MODELS: [&str; 3] = ["mobilenet_v3_small", "squeezenet1_1", "tiny_transformer"];

/// The model's programs: `(plan name, .pte)` for greedy and both banked sizes.
fn programs(root: &Path, m: &str) -> Vec<(String, PathBuf)> {
    let mut v: Vec<(String, PathBuf)> = std::fs::read_dir(root.join(m))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "pte"))
        .map(|p| {
            let stem = p.file_stem().unwrap().to_string_lossy().to_string();
            (stem.trim_start_matches(&format!("{m}.")).to_string(), p)
        })
        .collect();
    v.sort();
    assert_eq!(v.len(), 3, "{m}: greedy and two banked programs");
    v
}

/// Planned buffers as (mem_id, offset, bytes), counted.
type Buffers = BTreeMap<(u32, u64, u64), usize>;

/// `plan.<name>.json`: its buffers and the arena sizes.
fn reference(root: &Path, m: &str, plan: &str) -> (Buffers, Vec<u64>) {
    let text = std::fs::read_to_string(root.join(m).join(format!("plan.{plan}.json"))).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut bufs = BTreeMap::new();
    for b in v["buffers"].as_array().unwrap() {
        let key = (
            b["mem_id"].as_u64().unwrap() as u32,
            b["mem_offset"].as_u64().unwrap(),
            b["allocated_bytes"].as_u64().unwrap(),
        );
        *bufs.entry(key).or_insert(0) += 1;
    }
    let sizes = v["non_const_buffer_sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap())
        .collect();
    (bufs, sizes)
}

fn info(tr: &Trace) -> &ExecutorchInfo {
    match &tr.meta.producer {
        Producer::Instrumented(i) => i.executorch.as_deref().expect("an ExecuTorch plan"),
        p => panic!("not an import: {p:?}"),
    }
}

fn import(path: &Path, opts: &spillscope::trace::import::ImportOptions) -> Trace {
    spillscope::trace::import::import(path, None, opts)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .0
}

#[test]
fn every_planned_buffer_matches_the_exported_plan() {
    let Some(root) = common::shared_data("executorch") else {
        return;
    };
    for m in MODELS {
        for (plan, pte) in programs(&root, m) {
            let tr = import(&pte, &Default::default());
            let (want, sizes) = reference(&root, m, &plan);
            let i = info(&tr);
            let mut got = BTreeMap::new();
            for b in &i.buffers {
                *got.entry((b.arena, b.offset, b.bytes)).or_insert(0) += 1;
                // The trace's tensor is the buffer, at the buffer's size.
                assert_eq!(tr.tensors.at(b.tensor).bytes, b.bytes, "{m} {plan}");
            }
            assert_eq!(got, want, "{m} {plan}: planned buffers");
            assert_eq!(i.arena_bytes, sizes, "{m} {plan}: arena sizes");
            // Arena 1's extent, from the trace's own placements.
            let extent = tr
                .events
                .iter()
                .filter(|e| e.kind == EventKind::Alloc)
                .filter_map(|e| e.offset.map(|o| o + e.bytes))
                .max()
                .unwrap();
            assert!(
                extent <= sizes[1],
                "{m} {plan}: {extent} > arena 1 {}",
                sizes[1]
            );
            // DRAM: what ops write plus the inputs the caller puts there is
            // the plan's arena-2 bytes.
            let arena2: u64 = want
                .iter()
                .filter(|((id, _, _), _)| *id == 2)
                .map(|((_, _, b), n)| b * *n as u64)
                .sum();
            assert_eq!(
                tr.summary.streamed_out_bytes + i.dram_input_bytes,
                arena2,
                "{m} {plan}: DRAM bytes written"
            );
            if plan == "greedy" {
                assert_eq!(arena2, 0);
                assert_eq!(tr.summary.traffic_bytes, 0, "{m}: nothing spilled");
            } else {
                assert!(arena2 > 0, "{m} {plan}: the banked plan uses DRAM");
            }
            let report = spillscope::trace::verify::verify(&tr, 5);
            assert!(report.ok(), "{m} {plan}: {report:?}");
        }
    }
}

/// The Inspector table's `OPERATOR_CALL` rows: their count and the last
/// run's summed duration (ms).
fn inspector_calls(root: &Path, m: &str) -> (usize, f64) {
    let mut r = csv::Reader::from_path(root.join(m).join(format!("{m}.inspector.csv"))).unwrap();
    let headers = r.headers().unwrap().clone();
    let col = |n: &str| headers.iter().position(|h| h == n).unwrap();
    let (name, raw) = (col("event_name"), col("raw"));
    let (mut n, mut sum) = (0, 0.0);
    for rec in r.records() {
        let rec = rec.unwrap();
        if &rec[name] != "OPERATOR_CALL" {
            continue;
        }
        n += 1;
        let last = rec[raw]
            .trim_matches(['[', ']'])
            .split(',')
            .next_back()
            .unwrap();
        sum += last.trim().parse::<f64>().unwrap();
    }
    (n, sum)
}

#[test]
fn the_etdump_import_has_the_inspectors_ops_and_latency() {
    let Some(root) = common::shared_data("executorch") else {
        return;
    };
    for m in MODELS {
        let etdp = root.join(m).join(format!("{m}.etdp"));
        let pte = root.join(m).join(format!("{m}.greedy.pte"));
        let (calls, last_ms) = inspector_calls(&root, m);
        let alone = import(&etdp, &Default::default());
        let opts = spillscope::trace::import::ImportOptions {
            program: Some(pte.clone()),
            ..Default::default()
        };
        let with_plan = import(&etdp, &opts);
        for tr in [&alone, &with_plan] {
            assert_eq!(tr.ops.len(), calls, "{m}: one op per OPERATOR_CALL");
            let ms = tr.summary.latency_ns as f64 / 1e6;
            assert!(
                (ms - last_ms).abs() <= 0.03 * last_ms,
                "{m}: latency {ms} ms, the last run's sum {last_ms} ms"
            );
            let op_ms: f64 = tr
                .ops
                .iter()
                .map(|o| (o.end_ns - o.start_ns) as f64)
                .sum::<f64>()
                / 1e6;
            assert!(
                (op_ms - last_ms).abs() < 1e-3 * last_ms,
                "{m}: {op_ms} vs {last_ms}"
            );
        }
        assert!(spillscope::trace::verify::verify(&with_plan, 5).ok(), "{m}");
        assert_eq!(info(&with_plan).run, Some(2), "{m}: the last of two runs");
        // --run 1 is the other run, and a run the profile lacks is refused.
        let first = import(
            &etdp,
            &spillscope::trace::import::ImportOptions {
                run: Some(1),
                ..opts.clone()
            },
        );
        assert_ne!(
            first.summary.latency_ns, with_plan.summary.latency_ns,
            "{m}"
        );
        let three = spillscope::trace::import::ImportOptions {
            run: Some(3),
            ..opts
        };
        let e = spillscope::trace::import::import(&etdp, None, &three).unwrap_err();
        assert!(e.to_string().contains("has 2 runs"), "{e}");
    }
}

#[test]
fn sim_under_ideal_needs_no_more_than_the_greedy_arena() {
    let Some(root) = common::shared_data("executorch") else {
        return;
    };
    for m in MODELS {
        let pte = root.join(m).join(format!("{m}.greedy.pte"));
        let (_, sizes) = reference(&root, m, "greedy");
        let o = common::run_ok(&[
            "sim",
            &pte.to_string_lossy(),
            "--policy",
            "ideal",
            "--format",
            "json",
        ]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let peak = v["runs"][0]["peak_live_bytes"].as_u64().unwrap();
        assert!(
            peak > 0 && peak <= sizes[1],
            "{m}: peak live {peak} > arena {}",
            sizes[1]
        );
        // The graph is the program's: one op per kernel call.
        let g = spillscope::graph::load(&pte, &Default::default()).unwrap();
        let p = spillscope::graph::executorch::Program::load(&pte).unwrap();
        assert_eq!(g.ops.len(), p.calls.len(), "{m}");
        assert!(
            g.weight_bytes() > 0,
            "{m}: the program's constants are weights"
        );
    }
}

/// Runs the binary, expecting exit 2 and one line naming `needles`.
fn one_line_error(args: &[&str], needles: &[&str]) {
    let o = common::run(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: {err}");
    }
}

#[test]
fn hostile_programs_and_profiles_fail_in_one_line() {
    let Some(root) = common::shared_data("executorch") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let pte = std::fs::read(root.join("tiny_transformer/tiny_transformer.greedy.pte")).unwrap();
    let etdp = std::fs::read(root.join("tiny_transformer/tiny_transformer.etdp")).unwrap();
    let cut = tmp.path().join("cut.pte");
    std::fs::write(&cut, &pte[..pte.len() / 3]).unwrap();
    let mut bent = pte.clone();
    bent[0] ^= 0x40; // the root offset points elsewhere
    let bent_path = tmp.path().join("bent.pte");
    std::fs::write(&bent_path, &bent).unwrap();
    let short = tmp.path().join("short.etdp");
    std::fs::write(&short, &etdp[..40]).unwrap();
    for f in [&cut, &bent_path] {
        let f = f.to_string_lossy();
        one_line_error(&["sim", &f], &["ExecuTorch program"]);
        one_line_error(&["import", &f], &["ExecuTorch program"]);
    }
    one_line_error(&["import", &short.to_string_lossy()], &["ETDump"]);
}

#[test]
fn suggest_on_a_banked_program_says_what_the_planner_saves() {
    let Some(root) = common::shared_data("executorch") else {
        return;
    };
    let banked = root.join("squeezenet1_1/squeezenet1_1.banked_1540k.pte");
    let o = common::run_ok(&["suggest", &banked.to_string_lossy()]);
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out
        .lines()
        .find(|l| l.starts_with("ExecuTorch's plan in this program"))
        .unwrap_or_else(|| panic!("{out}"));
    // Its figures are import's and sim's at arena 1's size.
    let plan = import(&banked, &Default::default());
    let sram = info(&plan).arena_bytes[1];
    let sim = common::run_ok(&[
        "sim",
        &banked.to_string_lossy(),
        "--policy",
        "planned",
        "--capacity",
        &sram.to_string(),
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&sim.stdout).unwrap();
    let planned = v["runs"][0]["traffic_bytes"].as_u64().unwrap();
    assert!(planned < plan.summary.traffic_bytes, "{line}");
    let fmt = spillscope::units::fmt_bytes;
    assert!(
        line.contains(&format!(
            "moves {} through DRAM; spillscope's planned policy at that size moves {}: {} less",
            fmt(plan.summary.traffic_bytes),
            fmt(planned),
            fmt(plan.summary.traffic_bytes - planned)
        )),
        "{line}"
    );
    // A plan all in arena 1 has nothing to compare.
    let greedy = root.join("squeezenet1_1/squeezenet1_1.greedy.pte");
    let o = common::run_ok(&["suggest", &greedy.to_string_lossy()]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("ExecuTorch's plan"));
}

/// ExecuTorch's BankedGreedy plan of SqueezeNet at 1.5 MiB and spillscope's
/// planned run of the same program at arena 1's size, as trace files.
fn plan_and_run(root: &Path, dir: &Path) -> (PathBuf, PathBuf, Trace, Trace) {
    let pte = root.join("squeezenet1_1/squeezenet1_1.banked_1540k.pte");
    let plan = import(&pte, &Default::default());
    let sram = info(&plan).arena_bytes[1];
    let (a, b) = (dir.join("banked.json"), dir.join("planned.json"));
    plan.write(&a, true).unwrap();
    common::run_ok(&[
        "sim",
        &pte.to_string_lossy(),
        "--policy",
        "planned",
        "--capacity",
        &sram.to_string(),
        "-o",
        &b.to_string_lossy(),
    ]);
    let run = Trace::load(&b).unwrap();
    (a, b, plan, run)
}

#[test]
fn diff_and_compare_show_the_plan_against_the_run() {
    let Some(root) = common::shared_data("executorch") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, plan, run) = plan_and_run(&root, tmp.path());
    // The spilled sets, independently: arena-2 intermediates of the plan,
    // intermediates the run evicts or streams out.
    use spillscope::trace::TensorKind;
    let dram: std::collections::BTreeSet<&str> = info(&plan)
        .buffers
        .iter()
        .filter(|x| x.arena != 1 && plan.tensors.at(x.tensor).kind == TensorKind::Activation)
        .map(|x| plan.tensors.at(x.tensor).name)
        .collect();
    let spilled: std::collections::BTreeSet<&str> = run
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Evict | EventKind::StreamOut))
        .map(|e| run.tensors.at(e.tensor))
        .filter(|t| t.kind == TensorKind::Activation)
        .map(|t| t.name)
        .collect();
    let inter = plan
        .tensors
        .iter()
        .filter(|t| t.kind == TensorKind::Activation)
        .count();
    let only_plan = dram.difference(&spilled).count();
    let only_run = spilled.difference(&dram).count();
    let agree = 100.0 * (inter - only_plan - only_run) as f64 / inter as f64;
    let fmt = spillscope::units::fmt_bytes;
    let want = [
        format!(
            "spilled set: {agree:.1}% of {inter} agree ({} both, {only_plan} only ExecuTorch, {only_run} only spillscope)",
            dram.intersection(&spilled).count()
        ),
        format!(
            "DRAM traffic: ExecuTorch {}, spillscope {}; bound {} (ilp)",
            fmt(plan.summary.traffic_bytes),
            fmt(run.summary.traffic_bytes),
            fmt(run.summary.lower_bound_traffic_bytes)
        ),
    ];
    assert!(
        only_plan > 0,
        "the planner keeps some of BankedGreedy's DRAM tensors on chip"
    );
    let out = common::run_ok(&["diff", &a.to_string_lossy(), &b.to_string_lossy()]);
    let text = String::from_utf8_lossy(&out.stdout);
    for w in &want {
        assert!(text.contains(w.as_str()), "{w}\n{text}");
    }
    let json = common::run_ok(&[
        "diff",
        &b.to_string_lossy(),
        &a.to_string_lossy(),
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["executorch_side"], "B");
    assert_eq!(
        v["executorch"]["only_plan_spilled"]
            .as_array()
            .unwrap()
            .len(),
        only_plan
    );
    // The Compare view shows the same two lines, at both sizes.
    use spillscope_explorer::app::{App, View};
    use spillscope_explorer::data::Dataset;
    let mut app = App::new(vec![
        Dataset::build("banked_1540k", plan),
        Dataset::build("planned", run),
    ]);
    app.view = View::Compare;
    let small = common::screen::render(&app, 80, 24);
    for w in &want {
        assert!(small.contains(w.as_str()), "{w}\n{small}");
    }
    insta::assert_snapshot!("executorch_compare_80x24", small);
    insta::assert_snapshot!(
        "executorch_compare_120x40",
        common::screen::render(&app, 120, 40)
    );
}

#[test]
fn an_etdump_alone_points_to_its_program_and_calibrates_it() {
    let Some(root) = common::shared_data("executorch") else {
        return;
    };
    let etdp = root.join("squeezenet1_1/squeezenet1_1.etdp");
    let pte = root.join("squeezenet1_1/squeezenet1_1.greedy.pte");
    let tmp = tempfile::tempdir().unwrap();
    let md = tmp.path().join("r.md");
    common::run_ok(&[
        "report",
        &etdp.to_string_lossy(),
        "-o",
        &md.to_string_lossy(),
    ]);
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains("view RUN.etdp --model MODEL.pte"), "{text}");
    assert!(
        !text.contains(".onnx"),
        "an ETDump's program is a .pte: {text}"
    );
    // Its op names are the program's: every call is calibrated.
    let o = common::run_ok(&[
        "sim",
        &pte.to_string_lossy(),
        "--calibrate",
        &etdp.to_string_lossy(),
        "--policy",
        "lru",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("65 of 65 ops measured"), "{out}");
}

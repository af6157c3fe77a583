//! Real runtime traces as first-class inputs, on `../shared/data/traces`
//! (skipped with a reason when absent): each trace says what it can
//! support and nothing invented is shown; ONNX Runtime profiles link to
//! their model (original or optimised); PyTorch's nested calls fold to the
//! top level; ops rank by time and memory, checked against the raw files.

use crate::common;
use common::screen::render;
use common::{root, run_ok};
use serde_json::Value;
use spillscope::analysis::hotspots::{hotspots, order_hotspots, HotspotKey};
use spillscope::trace::caps::Capabilities;
use spillscope::trace::import::{import, ImportOptions};
use spillscope::trace::ledger::Ledger;
use spillscope::trace::nesting::collapse;
use spillscope::trace::{Producer, Trace};
use spillscope_explorer::app::App;
use spillscope_explorer::data::Dataset;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn traces() -> Option<PathBuf> {
    common::shared_data("traces")
}

fn model(name: &str) -> PathBuf {
    let m = common::shared_data("models").expect("models beside traces");
    ["", ".shapes"]
        .iter()
        .map(|s| m.join(format!("{name}{s}.onnx")))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("no model for {name}"))
}

fn linked(profile: &Path, model: &Path) -> Trace {
    let g = spillscope::graph::load(model, &Default::default()).unwrap();
    let opts = ImportOptions {
        model: Some(Arc::new(g)),
        ..Default::default()
    };
    import(profile, None, &opts).unwrap().0
}

fn link_of(tr: &Trace) -> spillscope::trace::import::ort_link::LinkSummary {
    match &tr.meta.producer {
        Producer::Instrumented(i) => i.linked.clone().expect("linked"),
        p => panic!("{p:?}"),
    }
}

#[test]
fn an_ort_profile_without_its_model_shows_no_invented_figures() {
    let Some(dir) = traces() else { return };
    let p = dir.join("ort_resnet18.json");
    let out = run_ok(&["report", p.to_str().unwrap(), "--format", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &v["summary"];
    for k in [
        "capacity_bytes",
        "peak_live_bytes",
        "peak_resident_bytes",
        "lower_bound_traffic_bytes",
        "spill_count",
        "traffic_bytes",
    ] {
        assert!(s.get(k).is_none(), "summary carries {k}: {s}");
    }
    assert!(v["classification"].is_null(), "{}", v["classification"]);
    assert_eq!(v["capabilities"]["frees"], false);
    assert_eq!(v["capabilities"]["capacity"], false);
    let missing: Vec<&str> = v["measured"]["missing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["what"].as_str().unwrap())
        .collect();
    assert!(missing.contains(&"frees") && missing.contains(&"declared capacity"));
    assert!(v["measured"].get("peak_live_bytes").is_none());
    assert!(v["series"]["live_bytes"].as_array().unwrap().is_empty());
    // The markdown says why, and how to get it.
    let md = String::from_utf8(run_ok(&["report", p.to_str().unwrap()]).stdout).unwrap();
    assert!(md.contains("--model MODEL.onnx"), "{md}");
    assert!(!md.contains("peak live"), "{md}");
    // The Overview: no capacity, peak-live or lifetime figure; the reason.
    let (tr, _) = import(&p, None, &Default::default()).unwrap();
    let app = App::new(vec![Dataset::build("ort_resnet18.json", tr)]);
    let screen = render(&app, 100, 30);
    for banned in ["cap ", "peak live", "lifetime ", "capacity ("] {
        assert!(!screen.contains(banned), "{banned:?} on screen:\n{screen}");
    }
    assert!(
        screen.contains("no frees") && screen.contains("--model"),
        "{screen}"
    );
}

#[test]
fn noopt_profiles_link_every_node_to_their_model() {
    let Some(dir) = traces() else { return };
    let mut seen = 0;
    for name in ["resnet18", "mobilenet_v2", "squeezenet1_1", "resnet50_b8"] {
        let p = dir.join(format!("ort_{name}.noopt.json"));
        if !p.exists() {
            continue;
        }
        let tr = linked(&p, &model(name));
        let l = link_of(&tr);
        assert_eq!(l.unmatched, 0, "{name}: {}", l.line());
        assert_eq!(l.by_name, l.profile_nodes, "{name}: {}", l.line());
        // Lifetimes from the graph: frees, so a real peak.
        let caps = Capabilities::of(&tr);
        assert!(caps.frees, "{name}");
        assert!(tr.summary.peak_live_bytes > 0);
        seen += 1;
    }
    assert!(seen >= 2, "only {seen} noopt profiles");
}

#[test]
fn optimised_profiles_link_to_the_optimised_model_and_report_the_original() {
    let Some(dir) = traces() else { return };
    let ours = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ort");
    for name in ["resnet18", "mobilenet_v2"] {
        let p = dir.join(format!("ort_{name}.json"));
        // The optimised model ORT wrote: every node by name.
        let opt = linked(&p, &ours.join(format!("{name}.optimised.onnx")));
        let l = link_of(&opt);
        assert_eq!(l.by_name, l.profile_nodes, "{name}: {}", l.line());
        assert_eq!(l.unmatched, 0);
        // The original model: the match count is reported, and every Conv
        // and Gemm of the graph is an op of the trace (fused groups are
        // named after their convolution).
        let orig = model(name);
        let tr = linked(&p, &orig);
        let l = link_of(&tr);
        assert!(l.line().contains("linked"), "{}", l.line());
        assert_eq!(l.unmatched, 0, "{}", l.line());
        assert!(l.renamed > 0 && l.inserted > 0, "{}", l.line());
        let g = spillscope::graph::load(&orig, &Default::default()).unwrap();
        let names: std::collections::HashSet<&str> = tr.ops.iter().map(|o| o.name).collect();
        for o in g
            .ops
            .iter()
            .filter(|o| matches!(o.op_type, "Conv" | "Gemm" | "MatMul"))
        {
            assert!(names.contains(o.name), "{name}: {} not linked", o.name);
        }
        // Linked either way, the run is the same: one peak of live bytes
        // (fused nodes hold no inner tensors), up to the few bytes of shape
        // tensors the two graphs spell differently.
        let (a, b) = (tr.summary.peak_live_bytes, opt.summary.peak_live_bytes);
        assert!(a.abs_diff(b) * 1000 <= a.max(b), "{name}: {a} vs {b}");
    }
}

/// Top-level ops of a PyTorch trace from the raw file: `(name, ts, dur)`
/// of `cpu_op`s not inside another on their thread, with each one's self
/// time (duration minus its direct children's).
fn torch_top_level(raw: &Value) -> Vec<(String, f64, f64, f64)> {
    let mut ops: Vec<(f64, f64, String, i64)> = raw["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "cpu_op")
        .map(|e| {
            (
                e["ts"].as_f64().unwrap(),
                e["dur"].as_f64().unwrap(),
                e["name"].as_str().unwrap().to_string(),
                e["tid"].as_i64().unwrap_or(0),
            )
        })
        .collect();
    ops.sort_by(|a, b| {
        a.0.partial_cmp(&b.0)
            .unwrap()
            .then(b.1.partial_cmp(&a.1).unwrap())
    });
    let mut stack: Vec<(f64, usize)> = Vec::new();
    let mut top: Vec<(String, f64, f64, f64)> = Vec::new();
    let mut parent_of_top: Vec<Option<usize>> = Vec::new();
    for (ts, dur, name, _) in &ops {
        while stack.last().is_some_and(|s| s.0 <= *ts) {
            stack.pop();
        }
        if stack.is_empty() {
            top.push((name.clone(), *ts, *dur, *dur));
            parent_of_top.push(None);
            stack.push((ts + dur, top.len() - 1));
        } else {
            // A direct child of a top-level op takes its time off the
            // parent's self time.
            if stack.len() == 1 {
                let p = stack[0].1;
                top[p].3 -= dur;
            }
            stack.push((ts + dur, usize::MAX));
        }
    }
    top
}

#[test]
fn pytorch_traces_fold_to_the_top_level() {
    let Some(dir) = traces() else { return };
    for name in ["torch_resnet18", "torch_mobilenet_v2"] {
        let p = dir.join(format!("{name}.json"));
        let raw: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let (full, _) = import(&p, None, &Default::default()).unwrap();
        assert!(
            full.ops.iter().any(|o| o.parent.is_some()),
            "{name}: no nesting"
        );
        let tr = collapse(&full, 1);
        assert!(
            !tr.ops.iter().any(|o| o.name == "aten::empty"),
            "{name}: aten::empty at the top level"
        );
        let top = torch_top_level(&raw);
        assert_eq!(tr.ops.len(), top.len(), "{name}");
        let sum: u64 = tr.ops.iter().map(|o| o.end_ns - o.start_ns).sum();
        assert!(
            sum <= tr.summary.latency_ns,
            "{name}: {sum} > {}",
            tr.summary.latency_ns
        );
        // The peak is the file's own maximum `Total Allocated`.
        let max_total = raw["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == "[memory]")
            .filter_map(|e| e["args"]["Total Allocated"].as_f64())
            .fold(0.0, f64::max);
        assert_eq!(tr.summary.peak_live_bytes, max_total as u64, "{name}");
        // Hotspots rank by self time; the first is the raw file's largest.
        let hs = hotspots(&tr, &Ledger::of(&tr));
        let order = order_hotspots(&hs, HotspotKey::SelfTime, false);
        let best = top
            .iter()
            .max_by(|a, b| a.3.partial_cmp(&b.3).unwrap())
            .unwrap();
        let first = &hs[order[0]];
        assert_eq!(first.name, best.0, "{name}");
        assert!(
            (first.self_ns as f64 - best.3 * 1000.0).abs() <= 2000.0,
            "{name}: self {} ns vs {} us in the file",
            first.self_ns,
            best.3
        );
        // Memory is attributed to the top-level op around it: what is live
        // at the peak adds up to the peak.
        let at_peak: u64 = hs.iter().map(|h| h.peak_bytes).sum();
        assert!(at_peak <= tr.summary.peak_live_bytes, "{name}");
    }
}

#[test]
fn ort_hotspots_rank_by_self_time_as_the_raw_file_says() {
    let Some(dir) = traces() else { return };
    let mut seen = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let p = e.path();
        let file = p.file_name().unwrap().to_string_lossy().into_owned();
        if !file.starts_with("ort_") {
            continue;
        }
        let raw: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let evs = raw.as_array().unwrap();
        // The last run's node events: the one the importer takes.
        let runs: Vec<(f64, f64)> = evs
            .iter()
            .filter(|e| e["name"] == "model_run")
            .map(|e| (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap()))
            .collect();
        let (t0, d0) = *runs.last().unwrap();
        let best = evs
            .iter()
            .filter(|e| e["cat"] == "Node" && e["name"].as_str().unwrap().ends_with("_kernel_time"))
            .filter(|e| {
                let ts = e["ts"].as_f64().unwrap();
                ts >= t0 && ts <= t0 + d0
            })
            .max_by(|a, b| a["dur"].as_f64().partial_cmp(&b["dur"].as_f64()).unwrap())
            .unwrap();
        let (tr, _) = import(&p, None, &Default::default()).unwrap();
        assert!(!Capabilities::of(&tr).spill_events);
        let hs = hotspots(&tr, &Ledger::of(&tr));
        let first = &hs[order_hotspots(&hs, HotspotKey::SelfTime, false)[0]];
        let want = best["name"]
            .as_str()
            .unwrap()
            .trim_end_matches("_kernel_time");
        assert_eq!(first.name, want, "{file}");
        let us = best["dur"].as_f64().unwrap();
        assert!(
            (first.self_ns as f64 - us * 1000.0).abs() <= 1000.0,
            "{file}"
        );
        seen += 1;
    }
    assert!(seen >= 4, "only {seen} ORT profiles");
}

#[test]
fn explorer_opens_measured_traces_on_time_and_folds_calls_with_keys() {
    let Some(dir) = traces() else { return };
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use spillscope_explorer::app::{update, Effect, Msg, View};
    let (full, _) = import(&dir.join("torch_resnet18.json"), None, &Default::default()).unwrap();
    let levels = spillscope::trace::nesting::Nesting::of(&full.ops).levels();
    assert!(levels > 2);
    let d = Dataset::build("torch", collapse(&full, 1)).with_levels(1, levels);
    let mut app = App::new(vec![d]);
    app.view = View::Hotspots;
    update(
        &mut app,
        Msg::Key(KeyEvent::new(KeyCode::Char('3'), KeyModifiers::NONE)),
    );
    assert_eq!(
        app.hot.key,
        HotspotKey::SelfTime,
        "a trace without spills ranks by self time"
    );
    let screen = render(&app, 80, 24);
    assert!(
        screen.contains("self") && screen.contains("</> call depth"),
        "{screen}"
    );
    let e = update(
        &mut app,
        Msg::Key(KeyEvent::new(KeyCode::Char('>'), KeyModifiers::NONE)),
    );
    assert_eq!(e, Some(Effect::Relevel(2)));
    let e = update(
        &mut app,
        Msg::Key(KeyEvent::new(KeyCode::Char('<'), KeyModifiers::NONE)),
    );
    assert_eq!(e, None, "already at the top level");
    // `s` cycles through time and memory keys only.
    let mut keys = vec![app.hot.key];
    for _ in 0..8 {
        update(
            &mut app,
            Msg::Key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::NONE)),
        );
        keys.push(app.hot.key);
    }
    assert!(
        keys.iter().all(|k| HotspotKey::MEASURED.contains(k)),
        "{keys:?}"
    );
}

/// PyTorch calls one op name once per layer: `g` in Hotspots groups the
/// calls by name, each figure the sum of its calls' (so `aten::conv2d`,
/// 20 calls, is not hidden behind the biggest single `aten::add_`); the
/// report's table of names shows the same sums; Enter opens the first call.
#[test]
fn pytorch_hotspots_group_by_op_name() {
    let Some(dir) = traces() else { return };
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use spillscope_explorer::app::{update, Msg, View};
    let path = dir.join("torch_resnet18.json");
    let (full, _) = import(&path, None, &Default::default()).unwrap();
    let tr = collapse(&full, 1);
    let hs = hotspots(&tr, &Ledger::of(&tr));
    let mut app = App::new(vec![Dataset::build("torch", tr.clone())]);
    let key = |app: &mut App, c: char| {
        update(
            app,
            Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)),
        );
    };
    key(&mut app, '3');
    assert!(render(&app, 80, 24).contains("g by name"));
    key(&mut app, 'g');
    assert!(app.hot.grouped);
    let d = app.primary().unwrap();
    let conv: Vec<_> = hs.iter().filter(|h| h.name == "aten::conv2d").collect();
    assert!(conv.len() > 1, "resnet18 calls conv2d per layer");
    let g = d
        .hotspots_by_name
        .iter()
        .find(|h| h.name == "aten::conv2d")
        .unwrap();
    assert_eq!(g.calls, conv.len() as u64);
    assert_eq!(
        g.duration_ns,
        conv.iter().map(|h| h.duration_ns).sum::<u64>()
    );
    assert_eq!(g.self_ns, conv.iter().map(|h| h.self_ns).sum::<u64>());
    assert_eq!(
        g.alloc_bytes,
        conv.iter().map(|h| h.alloc_bytes).sum::<u64>()
    );
    // Every call is in exactly one row.
    assert_eq!(
        d.hotspots_by_name.iter().map(|h| h.calls).sum::<u64>(),
        hs.len() as u64
    );
    let total_ms = spillscope::units::fmt_ms(g.duration_ns);
    // Sorted by total time, conv2d leads (the report's order too).
    while app.hot.key != HotspotKey::TotalTime {
        key(&mut app, 's');
    }
    assert_eq!(
        app.hot.selected(app.primary().unwrap()).unwrap().name,
        "aten::conv2d"
    );
    let screen = render(&app, 80, 24);
    assert!(
        screen.contains("op names (") && screen.contains("calls"),
        "{screen}"
    );
    let out = run_ok(&["report", path.to_str().unwrap()]);
    let md = String::from_utf8(out.stdout).unwrap();
    let row = md
        .lines()
        .skip_while(|l| !l.starts_with("## By op name"))
        .find(|l| l.starts_with("| aten::conv2d |"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(row.contains(&format!("| {} |", conv.len())), "{row}");
    assert!(row.contains(&total_ms), "{row} lacks {total_ms}");
    // Enter opens the name's first call, and says so.
    update(
        &mut app,
        Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
    );
    assert_ne!(app.view, View::Hotspots);
    assert!(
        app.status
            .contains(&format!("first of {} calls", conv.len())),
        "{}",
        app.status
    );
    // g again: one row per op.
    key(&mut app, '3');
    key(&mut app, 'g');
    assert!(!app.hot.grouped);
    assert_eq!(app.hot.order.len(), hs.len());
}

/// The Memory view of a PyTorch profile (which records no evictions) says
/// spills are not recorded, not that there were none.
#[test]
fn a_profile_without_spill_events_does_not_claim_none_in_the_memory_view() {
    let Some(dir) = traces() else { return };
    use spillscope_explorer::app::View;
    let (full, _) = import(&dir.join("torch_resnet18.json"), None, &Default::default()).unwrap();
    let mut app = App::new(vec![Dataset::build("torch", collapse(&full, 1))]);
    app.view = View::Memory;
    let screen = render(&app, 100, 30);
    assert!(
        screen.contains("spills not recorded by this trace"),
        "{screen}"
    );
    assert!(!screen.contains("no lifetime spills"), "{screen}");
}

#[test]
fn a_calibrated_view_shows_the_latency_sim_gives_and_compares_per_op() {
    let Some(dir) = traces() else { return };
    let profile = dir.join("ort_resnet18.noopt.json");
    let m = model("resnet18");
    let flags = ["--capacity", "2MiB", "--policy", "lru"];
    let out = run_ok(
        &[
            &[
                "sim",
                m.to_str().unwrap(),
                "--calibrate",
                profile.to_str().unwrap(),
            ][..],
            &flags,
            &["--format", "json"],
        ]
        .concat(),
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let latency = spillscope::units::fmt_ms(v["runs"][0]["latency_ns"].as_u64().unwrap());
    let cmd = format!(
        "{} view {} {} --calibrate {}; sleep 3",
        env!("CARGO_BIN_EXE_spillscope"),
        m.display(),
        flags.join(" "),
        profile.display()
    );
    let Some(t) =
        common::tmux::Tmux::open_at("calibrated", &cmd, (80, 24), |s| s.contains("latency"))
    else {
        return;
    };
    let s = t.screen();
    let line = s.lines().find(|l| l.contains("latency")).unwrap();
    assert!(line.contains(&latency), "sim says {latency}:\n{s}");
    // Compare: the simulation (A) against the profile (B), op by op.
    t.send(&["6"]);
    let s = t
        .wait_for(std::time::Duration::from_secs(5), |s| {
            s.contains("matched by name")
        })
        .expect("compare of the simulation and the profile");
    assert!(s.contains("measured") && s.contains("B/A"), "{s}");
    t.send(&["q"]);
}

#[test]
fn diff_against_a_profile_compares_time_not_invented_spills() {
    let Some(dir) = traces() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let sim = tmp.path().join("s.json");
    let m = model("resnet18");
    run_ok(&[
        "sim",
        m.to_str().unwrap(),
        "--capacity",
        "2MiB",
        "--policy",
        "lru",
        "-o",
        sim.to_str().unwrap(),
    ]);
    let prof = dir.join("ort_resnet18.noopt.json");
    let out = run_ok(&["diff", sim.to_str().unwrap(), prof.to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("op (by |dur B-A|)"), "{text}");
    assert!(
        !text.contains("spill traffic B-A") && !text.contains("trips B"),
        "{text}"
    );
    let out = run_ok(&[
        "diff",
        sim.to_str().unwrap(),
        prof.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ops_by"], "duration");
    assert!(v.get("traffic_delta_bytes").is_none() && v.get("tensors").is_none());
    // Sorted by |dur B-A| as the header says.
    let d: Vec<i64> = v["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (o["b_duration_ns"].as_i64().unwrap() - o["a_duration_ns"].as_i64().unwrap()).abs()
        })
        .collect();
    assert!(d.windows(2).all(|w| w[0] >= w[1]), "{d:?}");
}

/// A profile of another batch links by name but its sizes are not the
/// model's: it is refused naming the mismatch, not shown with the model's
/// bytes as if measured.
#[test]
fn a_profile_whose_sizes_are_not_the_models_is_refused() {
    let Some(dir) = traces() else { return };
    let src = dir.join("ort_resnet18.noopt.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&src).unwrap()).unwrap();
    for e in v.as_array_mut().unwrap() {
        if let Some(s) = e["args"]["output_size"]
            .as_str()
            .and_then(|s| s.parse::<u64>().ok())
        {
            e["args"]["output_size"] = Value::String((s * 8).to_string());
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("ort_b8.json");
    std::fs::write(&p, v.to_string()).unwrap();
    let m = model("resnet18");
    let o = common::run(&[
        "import",
        p.to_str().unwrap(),
        "--model",
        m.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("does not match resnet18.shapes at its shapes"),
        "{err}"
    );
    assert!(err.contains("linked nodes write other sizes"), "{err}");
    assert!(
        err.contains("8x the model's") && err.contains("--batch N"),
        "the fix is named: {err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // The profile as recorded still links.
    common::run_ok(&[
        "import",
        src.to_str().unwrap(),
        "--model",
        m.to_str().unwrap(),
    ]);
}

/// `--batch` on `import` and `view` reads the `--model` at the shapes the
/// profile ran: ResNet-50 profiled at batch 8 links to the batch-8 model,
/// is refused against the same model read at batch 1 (in one line, exit
/// 2, naming the 8x), and `--batch 8` gives what the model as saved gives.
#[test]
fn import_and_view_read_the_model_at_the_profiles_batch() {
    let Some(dir) = traces() else { return };
    let p = dir.join("ort_resnet50_b8.noopt.json");
    let m = root().join("sample-traces/resnet50_b8.shapes.onnx");
    let (p, m) = (p.to_str().unwrap(), m.to_str().unwrap());
    for cmd in ["import", "view"] {
        let o = common::run(&[cmd, p, "--model", m, "--batch", "1"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {err}");
        assert!(err.contains("8x the model's"), "{cmd}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{cmd}: {err}");
    }
    let json = |extra: &[&str]| -> Value {
        let o = run_ok(&[&["import", p, "--model", m, "--format", "json"][..], extra].concat());
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let (saved, b8) = (json(&[]), json(&["--batch", "8"]));
    for k in [
        "allocated_bytes",
        "peak_live_bytes",
        "allocations",
        "linked",
        "ops",
    ] {
        assert!(!saved[k].is_null(), "{k} missing: {saved}");
        assert_eq!(saved[k], b8[k], "{k}");
    }
    assert!(saved["peak_live_bytes"].as_u64().unwrap() > 0);
}

//! Triage at 80x24 in tmux, as a user would: an invalid config save names
//! `sched.toml:LINE:COL` and the valid keys; pause holds new data behind a
//! badge; the Timeline's event list opens the Tensor view; the live delta
//! line's signs agree with two `sim --format json` runs; a pin suggestion
//! applied with `a` rewrites the watched config and `u` restores it byte
//! for byte. Skips (with a message) where tmux or the shared models are
//! missing.

use crate::common;
use crate::common::{bin, root};
use common::tmux::Tmux;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const SIZE: (u16, u16) = (80, 24);

const MODEL_FLAGS: &str = "--capacity 640KiB --weights ignore";

/// The explorer simulating the encoder-decoder under a watched
/// `sched.toml` (starting as `policy = "lru"`) at 80x24.
fn live(name: &str) -> Option<(tempfile::TempDir, PathBuf, Tmux)> {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("sched.toml");
    std::fs::write(&cfg, "policy = \"lru\"\n").unwrap();
    // Run where the config is, as users do: it is named `sched.toml`.
    let cmd = format!(
        "cd {} && {} view {} {MODEL_FLAGS} --config sched.toml; sleep 3",
        dir.path().display(),
        bin().display(),
        root().join("tests/data/encoder_decoder.json").display(),
    );
    let t = Tmux::open_at(name, &cmd, SIZE, |s| {
        s.contains("[lru]") && s.contains("LIVE")
    })?;
    Some((dir, cfg, t))
}

const WAIT: Duration = Duration::from_secs(5);

#[test]
fn an_invalid_config_save_names_line_column_and_the_valid_keys() {
    let Some((_dir, cfg, t)) = live("badkey") else {
        return;
    };
    std::fs::write(&cfg, "policy = \"lru\"\nprefetch = 3\n").unwrap();
    let s = t
        .wait_for(WAIT, |s| s.contains("sched.toml:2:1"))
        .expect("banner with the position");
    assert!(s.contains("unknown field `prefetch`"), "{s}");
    // The list of valid keys starts on screen, wrapped, not cut; the
    // banner says how many more lines `?` shows.
    for key in ["policy", "prefetch_distance"] {
        assert!(s.contains(&format!("`{key}`")), "{key} missing:\n{s}");
    }
    assert!(s.contains("? shows all"), "{s}");
    assert!(s.contains("[lru]"), "the last good view stays:\n{s}");
    // `?` shows the whole message, every key included.
    t.send(&["?"]);
    let s = t.wait_for(WAIT, |s| s.contains("`dtype`")).expect("help");
    assert!(s.contains("sched.toml:2:1"), "{s}");
    for key in ["recompute", "split", "placement"] {
        assert!(s.contains(&format!("`{key}`")), "{key} missing:\n{s}");
    }
    t.send(&["q"]);
}

#[test]
fn pause_then_edit_shows_paused_and_new_data_at_80_columns() {
    let Some((_dir, cfg, t)) = live("pause") else {
        return;
    };
    t.send(&["p"]);
    t.wait_for(WAIT, |s| s.contains("PAUSED")).expect("paused");
    std::fs::write(&cfg, "policy = \"belady\"\n").unwrap();
    let s = t
        .wait_for(WAIT, |s| s.contains("new data"))
        .expect("new data badge");
    let header = s.lines().next().unwrap_or("");
    assert!(
        header.contains("PAUSED") && header.contains("new data"),
        "{s}"
    );
    assert!(
        header.contains("Overview"),
        "the active view keeps its name:\n{s}"
    );
    assert!(s.contains("[lru]"), "paused: the old run stays:\n{s}");
    t.send(&["p"]);
    t.wait_for(WAIT, |s| s.contains("[belady]"))
        .expect("unpausing shows the new run");
    t.send(&["q"]);
}

#[test]
fn timeline_j_and_enter_open_the_tensor_of_that_event() {
    let Some((_dir, _cfg, t)) = live("events") else {
        return;
    };
    t.send(&["2"]);
    t.wait_for(WAIT, |s| s.contains("legend:"))
        .expect("timeline");
    t.send(&["j", "j"]);
    std::thread::sleep(Duration::from_millis(300));
    // The selected event's tensor, from the status line (its full name).
    let s = t.screen();
    // The footer's status: "KIND of TENSOR".
    let status = s.lines().last().unwrap_or("").to_string();
    let tensor = status
        .split(" of ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .map(str::to_string)
        .unwrap_or_default();
    assert!(
        !tensor.is_empty(),
        "the status names the selected event's tensor:\n{s}"
    );
    t.send(&["Enter"]);
    let s = t
        .wait_for(WAIT, |s| s.contains("4 Tensor"))
        .expect("Enter opens the Tensor view");
    // The detail pane is titled with that tensor.
    let title = s.lines().find(|l| l.contains("┌") && l.contains(&tensor));
    assert!(title.is_some(), "Tensor view on {tensor}:\n{s}");
    t.send(&["q"]);
}

fn sim_json(policy: &str) -> serde_json::Value {
    let out = Command::new(bin())
        .arg("sim")
        .arg(root().join("tests/data/encoder_decoder.json"))
        .args(MODEL_FLAGS.split(' '))
        .args(["--policy", policy, "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["runs"][0].clone()
}

#[test]
fn the_delta_line_after_a_save_agrees_with_two_sim_runs() {
    let (a, b) = (sim_json("lru"), sim_json("belady"));
    let Some((_dir, cfg, t)) = live("delta") else {
        return;
    };
    std::fs::write(&cfg, "policy = \"belady\"\n").unwrap();
    let s = t
        .wait_for(WAIT, |s| {
            s.contains("[belady]") && s.contains("vs previous")
        })
        .expect("delta line");
    let line = s.lines().find(|l| l.contains("vs previous")).unwrap();
    let arrow = |field: &str| {
        let d = b[field].as_i64().unwrap() - a[field].as_i64().unwrap();
        match d.signum() {
            1 => "↑",
            -1 => "↓",
            _ => "=",
        }
    };
    // Each figure's arrow, in order: latency, traffic, evictions, stall.
    let arrows: Vec<&str> = line
        .split([',', ' '])
        .flat_map(|w| ["↑", "↓", "="].into_iter().filter(move |a| w.ends_with(a)))
        .collect();
    let want = [
        arrow("latency_ns"),
        arrow("traffic_bytes"),
        arrow("spill_count"),
        arrow("stall_ns"),
    ];
    assert_eq!(arrows, want, "{line}");
    let evictions = b["spill_count"].as_i64().unwrap() - a["spill_count"].as_i64().unwrap();
    assert!(line.contains(&format!("evictions {evictions:+}")), "{line}");
    t.send(&["q"]);
}

#[test]
fn a_applies_a_pin_suggestion_and_u_restores_the_config_byte_for_byte() {
    let model = root().join("../shared/data/models/squeezenet1_1.onnx");
    if !model.exists() {
        eprintln!("SKIP: {} is absent", model.display());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("sched.toml");
    let original = "# my schedule\npolicy = \"lru\"   # keep this comment\n";
    std::fs::write(&cfg, original).unwrap();
    let cmd = format!(
        "{} view {} --capacity 1MiB --config {}; sleep 3",
        bin().display(),
        model.display(),
        cfg.display()
    );
    let Some(t) = Tmux::open_at("apply", &cmd, SIZE, |s| s.contains("LIVE")) else {
        return;
    };
    t.send(&["7"]);
    t.wait_for(Duration::from_secs(60), |s| s.contains(" pin "))
        .expect("suggestions with a pin");
    // Down to the first pin suggestion.
    for _ in 0..10 {
        if t.screen().contains("how: --pin") {
            break;
        }
        t.send(&["j"]);
        std::thread::sleep(Duration::from_millis(200));
    }
    let s = t.screen();
    assert!(s.contains("how: --pin"), "{s}");
    assert!(s.contains("a writes it into sched.toml"), "{s}");
    t.send(&["a"]);
    let s = t
        .wait_for(Duration::from_secs(30), |s| s.contains("vs previous"))
        .expect("the re-simulated run");
    let text = std::fs::read_to_string(&cfg).unwrap();
    assert!(text.contains("pins = [\"/features/"), "{text}");
    assert!(
        text.contains("# keep this comment"),
        "comments kept:\n{text}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("sched.toml.bak")).unwrap(),
        original
    );
    // Pinning saves time: latency and traffic go down.
    let line = s.lines().find(|l| l.contains("vs previous")).unwrap();
    assert!(
        line.contains("latency -") && line.contains("traffic -"),
        "{line}"
    );
    t.send(&["u"]);
    t.wait_for(Duration::from_secs(30), |s| s.contains("restored"))
        .expect("undo");
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), original);
    assert!(!dir.path().join("sched.toml.bak").exists());
    t.send(&["q"]);
}

/// Two traces at 80x24: the tab bar says which one views 1-5 show, `b`
/// switches it (the Overview's latency follows), and in Compare `t` moves
/// the selection into the changed-tensor table, whose row's whole name the
/// status line carries.
#[test]
fn two_traces_views_name_their_side_and_b_and_t_switch() {
    let (a, b) = (
        root().join("sample-traces/edge-resnet50-b3.lru.json"),
        root().join("sample-traces/edge-resnet50-b3.ideal.json"),
    );
    let lat = |p: &Path| {
        let t = spillscope::trace::Trace::load(p).unwrap();
        spillscope::units::Clock::Nanoseconds.fmt(t.summary.latency_ns)
    };
    let (la, lb) = (lat(&a), lat(&b));
    let cmd = format!("{} view {} {}", bin().display(), a.display(), b.display());
    let Some(t) = Tmux::open_at("sides", &cmd, SIZE, |s| {
        s.contains("Overview") && s.contains("A: ")
    }) else {
        return;
    };
    let s = t.screen();
    assert!(s.contains(&la), "A's latency {la} on the Overview:\n{s}");
    t.send(&["b"]);
    // The whole frame: a capture can land between the tab bar's update and
    // the footer's (the status line is the last row drawn).
    let s = t
        .wait_for(Duration::from_secs(3), |s| {
            s.contains("B: ") && s.contains("views 1-5 show B")
        })
        .unwrap_or_else(|s| panic!("b shows B and says so:\n{s}"));
    assert!(s.contains(&lb), "B's latency {lb} on the Overview:\n{s}");
    assert!(s.contains("views 1-5 show B"), "{s}");
    t.send(&["6"]);
    t.wait_for(Duration::from_secs(3), |s| s.contains("[lru] vs [ideal]"))
        .expect("Compare names both policies");
    t.send(&["t"]);
    t.wait_for(Duration::from_secs(3), |s| {
        s.contains("move the tensor table")
    })
    .expect("t gives the keys to the tensor table");
    t.send(&["j"]);
    let s = t
        .wait_for(Duration::from_secs(3), |s| {
            s.contains("_output_0") && !s.contains("move the tensor table")
        })
        .expect("the selected tensor's whole name");
    let last_lines: Vec<&str> = s.lines().rev().take(3).collect();
    assert!(
        last_lines
            .iter()
            .any(|l| l.contains("/Conv_output_0") || l.contains("/Add_output_0")),
        "status carries a tensor name:\n{s}"
    );
    t.send(&["q"]);
}

/// A model that fits, at 80x24: the Overview says so and `c` re-runs it at
/// 75 % and then 50 % of its peak live bytes, each run's latency equal to
/// `sim --capacity` at that size; a third `c` goes back to where it started.
#[test]
fn a_model_that_fits_is_re_run_where_it_spills_with_c() {
    let model = root().join("tests/data/encoder_decoder.json");
    let cmd = format!(
        "{} view {} --weights ignore",
        bin().display(),
        model.display()
    );
    let Some(t) = Tmux::open_at("fits", &cmd, SIZE, |s| s.contains("the model fits")) else {
        return;
    };
    let sim_latency = |cap: &str| {
        let out = Command::new(bin())
            .args([
                "sim",
                model.to_str().unwrap(),
                "--weights",
                "ignore",
                "--policy",
                "lru",
            ])
            .args(["--capacity", cap, "--format", "json"])
            .output()
            .unwrap();
        assert!(out.status.success());
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let ns = v["runs"][0]["latency_ns"]
            .as_u64()
            .or(v["latency_ns"].as_u64())
            .unwrap();
        spillscope::units::Clock::Nanoseconds.fmt(ns)
    };
    for (cap, shown) in [("960KiB", "960.0 KiB cap"), ("640KiB", "640.0 KiB cap")] {
        t.send(&["c"]);
        let s = t
            .wait_for(Duration::from_secs(10), |s| s.contains(shown))
            .unwrap_or_else(|e| panic!("c re-runs at {cap}:\n{e}"));
        let lat = sim_latency(cap);
        assert!(
            s.contains(&format!("latency     {lat}")),
            "sim says {lat} at {cap}:\n{s}"
        );
    }
    t.send(&["c"]);
    t.wait_for(Duration::from_secs(10), |s| {
        s.contains("32.0 MiB cap") && s.contains("as started")
    })
    .expect("back to the capacity it started with");
    t.send(&["q"]);
}

/// Real traces at 80x24: a PyTorch profile's Hotspots group by op name
/// with `g` (ResNet-18's 20 `aten::conv2d` calls on one row, ranked first
/// by total time), and a profile linked to its model at the wrong batch is
/// refused in one line before any screen opens (the terminal untouched).
#[test]
fn real_traces_group_by_name_and_a_wrong_batch_is_refused() {
    let Some(dir) = common::shared_data("traces") else {
        return;
    };
    let torch = dir.join("torch_resnet18.json");
    let cmd = format!("{} view {}; sleep 3", bin().display(), torch.display());
    let Some(t) = Tmux::open_at("torchname", &cmd, SIZE, |s| s.contains("Overview")) else {
        return;
    };
    t.send(&["3"]);
    t.wait_for(WAIT, |s| s.contains("g by name"))
        .unwrap_or_else(|s| panic!("g offered:\n{s}"));
    t.send(&["g"]);
    let s = t
        .wait_for(WAIT, |s| s.contains("op names ("))
        .unwrap_or_else(|s| panic!("grouped:\n{s}"));
    // Sorted by total time: s until the arrow is on "total".
    let mut s = s;
    for _ in 0..8 {
        if s.contains("total ↓") {
            break;
        }
        t.send(&["s"]);
        std::thread::sleep(Duration::from_millis(150));
        s = t.screen();
    }
    let first = s
        .lines()
        .find(|l| l.contains("aten::"))
        .unwrap_or_else(|| panic!("{s}"));
    assert!(
        first.contains("aten::conv2d") && first.contains(" 20 "),
        "{s}"
    );
    t.send(&["q"]);
    // The wrong batch: one line, exit 2.
    let ort = dir.join("ort_resnet50_b8.noopt.json");
    let model = root().join("sample-traces/resnet50_b8.shapes.onnx");
    let cmd = format!(
        "{} view {} --model {} --batch 1; echo EXIT=$?; sleep 3",
        bin().display(),
        ort.display(),
        model.display()
    );
    let t = Tmux::start("wrongbatch", &cmd, SIZE.0, SIZE.1).expect("tmux");
    let s = t
        .wait_for(WAIT, |s| s.contains("EXIT="))
        .unwrap_or_else(|s| panic!("{s}"));
    // The pane wraps the line at 80 columns: read it whole.
    let flat: String = s.lines().collect();
    assert!(flat.contains("EXIT=2"), "{s}");
    assert!(flat.contains("8x the model's"), "{s}");
}

/// Two cores at 80x24: the Overview's stall names the bus contention with
/// `sim --format json`'s figure, the timeline has a lane per core, and a
/// live edit of the policy re-runs both cores.
#[test]
fn two_cores_show_their_lanes_and_the_bus_contention() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("sched.toml");
    std::fs::write(&cfg, "policy = \"lru\"\n").unwrap();
    let model = root().join("tests/data/encoder_decoder.json");
    let flags = "--capacity 640KiB --cores 2";
    let out = Command::new(bin())
        .arg("sim")
        .arg(&model)
        .args(flags.split(' '))
        .args(["--policy", "lru", "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &v["runs"][0];
    assert_eq!(run["cores"], 2, "{run}");
    let contention = run["contention_ns"].as_u64().unwrap();
    assert!(contention > 0, "{run}");
    let shown = spillscope::units::fmt_ms(contention);
    let cmd = format!(
        "cd {} && {} view {} {flags} --config sched.toml; sleep 3",
        dir.path().display(),
        bin().display(),
        model.display(),
    );
    let Some(t) = Tmux::open_at("cores", &cmd, SIZE, |s| {
        s.contains("[lru]") && s.contains("contention")
    }) else {
        return;
    };
    let s = t.screen();
    assert!(
        s.contains(&shown),
        "contention {shown} on the Overview:\n{s}"
    );
    t.send(&["2"]);
    let s = t
        .wait_for(WAIT, |s| s.contains(" core0") && s.contains(" core1"))
        .expect("a timeline lane per core");
    assert!(s.contains("bus"), "{s}");
    std::fs::write(&cfg, "policy = \"belady\"\n").unwrap();
    t.send(&["1"]);
    // A debug build re-runs two cores (each twice: with the bus shared
    // and alone) beside the other tests: more than WAIT on a loaded CI.
    t.wait_for(4 * WAIT, |s| {
        s.contains("[belady]") && s.contains("contention")
    })
    .expect("the edit re-runs both cores");
    t.send(&["q"]);
}

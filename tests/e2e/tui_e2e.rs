//! The real binary in tmux: keys in, screen out; and a watched schedule
//! config rewritten under a running explorer. Skips (with a message) where
//! tmux is not installed.

use crate::common;
use crate::common::{bin, root};
use common::tmux::Tmux;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

#[test]
fn search_a_tensor_tab_and_quit() {
    let trace = root().join("sample-traces/encdec-1mib.lru.json");
    let cmd = format!(
        "{} view {}; echo EXITED $?; sleep 3",
        bin().display(),
        trace.display()
    );
    let Some(t) = Tmux::open("search", &cmd, |s| {
        s.contains("Overview") && s.contains("latency")
    }) else {
        return;
    };
    t.send(&["/"]);
    t.wait_for(Duration::from_secs(2), |s| {
        s.contains("search ops and tensors")
    })
    .expect("search overlay");
    t.send_literal("dec2.attn.norm");
    t.wait_for(Duration::from_secs(2), |s| s.contains("/ dec2.attn.norm_"))
        .expect("query typed");
    t.send(&["Enter"]);
    let s = t
        .wait_for(Duration::from_secs(2), |s| s.contains("round trip"))
        .expect("tensor view");
    assert!(
        s.contains("dec2.attn.norm") && s.contains("steps 85..89"),
        "{s}"
    );
    t.send(&["Tab"]);
    t.wait_for(Duration::from_secs(2), |s| s.contains("Memory map"))
        .expect("Tab to the memory map");
    t.send(&["q"]);
    let s = t
        .wait_for(Duration::from_secs(3), |s| s.contains("EXITED"))
        .expect("quit");
    assert!(s.contains("EXITED 0"), "{s}");
    // The alternate screen is gone: the explorer's frame is not on the shell screen.
    assert!(!s.contains("Memory map"), "terminal not restored:\n{s}");
}

/// The explorer following a copy of the LRU sample trace (`t.json` in a
/// fresh temporary directory) with `--watch`, on its first live frame.
fn watch_lru_trace(name: &str) -> Option<(tempfile::TempDir, PathBuf, Tmux)> {
    let dir = tempfile::tempdir().unwrap();
    let tr = dir.path().join("t.json");
    std::fs::copy(root().join("sample-traces/encdec-1mib.lru.json"), &tr).unwrap();
    let cmd = format!("{} view {} --watch; sleep 3", bin().display(), tr.display());
    let t = Tmux::open(name, &cmd, |s| s.contains("[lru]") && s.contains("LIVE"))?;
    Some((dir, tr, t))
}

/// The explorer simulating the encoder-decoder under a watched schedule
/// config (`sched.toml`, starting as `policy = "lru"`), on its first live
/// frame.
fn watch_lru_config(name: &str) -> Option<(tempfile::TempDir, PathBuf, Tmux)> {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("sched.toml");
    std::fs::write(&cfg, "policy = \"lru\"\n").unwrap();
    let model = root().join("tests/data/encoder_decoder.json");
    let cmd = format!(
        "{} view {} --capacity 640KiB --weights ignore --config {}; sleep 3",
        bin().display(),
        model.display(),
        cfg.display()
    );
    let t = Tmux::open(name, &cmd, |s| s.contains("[lru]") && s.contains("LIVE"))?;
    Some((dir, cfg, t))
}

#[test]
fn a_watched_trace_reloads_when_rewritten() {
    let Some((_dir, tr, t)) = watch_lru_trace("watch") else {
        return;
    };
    // Another process rewrites the trace in place.
    let text =
        std::fs::read_to_string(root().join("sample-traces/encdec-1mib.belady.json")).unwrap();
    std::fs::write(&tr, text).unwrap();
    t.wait_for(Duration::from_secs(2), |s| s.contains("[belady]"))
        .expect("reloaded within 2 s");
    // Truncated mid-write: keep the last good view, say what is wrong.
    std::fs::write(&tr, "{\"schema\": \"spillscope.trace/1\", \"source\"").unwrap();
    let s = t
        .wait_for(Duration::from_secs(2), |s| s.contains("not a valid"))
        .expect("banner");
    assert!(s.contains("[belady]"), "{s}");
    t.send(&["q"]);
}

#[test]
fn rewriting_a_watched_config_updates_the_screen() {
    let Some((dir, cfg, t)) = watch_lru_config("live") else {
        return;
    };
    std::fs::write(&cfg, "policy = \"belady\"\n").unwrap();
    let changed = t.wait_for(Duration::from_secs(2), |s| s.contains("[belady]"));
    assert!(
        changed.is_ok(),
        "screen did not change within 2 s:\n{}",
        changed.unwrap_err()
    );
    // A broken save keeps the last good view and shows the error.
    std::fs::write(&cfg, "polcy = \"lru\"\n").unwrap();
    let s = t
        .wait_for(Duration::from_secs(2), |s| s.contains("polcy"))
        .expect("error banner");
    assert!(s.contains("[belady]"), "last good view kept:\n{s}");
    // Atomic save (write elsewhere, rename over) is seen too and clears the banner.
    let tmp = dir.path().join("sched.toml.new");
    std::fs::write(&tmp, "policy = \"lifetime\"\n").unwrap();
    std::fs::rename(&tmp, &cfg).unwrap();
    let s = t
        .wait_for(Duration::from_secs(2), |s| s.contains("[lifetime]"))
        .expect("atomic save seen");
    assert!(!s.contains("polcy"), "banner cleared:\n{s}");
    t.send(&["q"]);
}

#[test]
fn the_terminal_is_restored_on_sigterm_and_sighup() {
    for sig in ["TERM", "HUP", "INT"] {
        let dir = tempfile::tempdir().unwrap();
        let tr = dir.path().join(format!("sig{sig}.json"));
        std::fs::copy(root().join("sample-traces/encdec-1mib.lru.json"), &tr).unwrap();
        let cmd = format!(
            "{} view {}; echo EXITED $?; sleep 3",
            bin().display(),
            tr.display()
        );
        let Some(t) = Tmux::open(&format!("sig{sig}"), &cmd, |s| {
            s.contains("Overview") && s.contains("latency")
        }) else {
            return;
        };
        let pattern = format!("^{} view {}", bin().display(), tr.display());
        let ok = Command::new("pkill")
            .args([&format!("-{sig}"), "-f", &pattern])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "pkill found no explorer process");
        let s = t
            .wait_for(Duration::from_secs(3), |s| s.contains("EXITED"))
            .expect("exits on the signal");
        assert!(
            !s.contains("latency"),
            "SIG{sig}: the explorer's screen is still there:\n{s}"
        );
        // Raw mode is off again: a typed line echoes in the shell.
        t.send_literal("echo typed-ok");
        t.send(&["Enter"]);
        t.wait_for(Duration::from_secs(2), |s| {
            s.matches("typed-ok").count() >= 1
        })
        .expect("terminal usable again");
    }
}

/// A panic inside the explorer leaves a usable terminal: the alternate
/// screen is gone, raw mode is off, the panic message is readable.
#[test]
fn the_terminal_is_restored_after_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let tr = dir.path().join("panic.json");
    std::fs::copy(root().join("sample-traces/encdec-1mib.lru.json"), &tr).unwrap();
    let cmd = format!(
        "SPILLSCOPE_TEST_PANIC_ON_KEY=1 {} view {}; echo EXITED $?; sleep 3",
        bin().display(),
        tr.display()
    );
    let Some(t) = Tmux::open("panic", &cmd, |s| {
        s.contains("Overview") && s.contains("latency")
    }) else {
        return;
    };
    t.send(&["j"]);
    let s = t
        .wait_for(Duration::from_secs(3), |s| s.contains("EXITED"))
        .expect("exits after the panic");
    assert!(s.contains("EXITED 101"), "{s}");
    assert!(s.contains("test panic"), "panic message shown:\n{s}");
    assert!(
        !s.contains("latency"),
        "the explorer's screen is still there:\n{s}"
    );
    t.send_literal("echo typed-ok");
    t.send(&["Enter"]);
    t.wait_for(Duration::from_secs(2), |s| s.contains("typed-ok"))
        .expect("terminal usable again");
}

/// A watched trace deleted and re-created (as some tools write), and
/// appended to in two halves: the last good view stays until the file is
/// whole again, then the new content shows.
#[test]
fn a_watched_trace_deleted_and_recreated_recovers() {
    let Some((_dir, tr, t)) = watch_lru_trace("recreate") else {
        return;
    };
    std::fs::remove_file(&tr).unwrap();
    let s = t
        .wait_for(Duration::from_secs(3), |s| s.contains("t.json"))
        .expect("a banner names the missing file");
    assert!(s.contains("[lru]"), "last good view kept:\n{s}");
    // Re-created in two writes: first half, then the rest.
    let text = std::fs::read(root().join("sample-traces/encdec-1mib.belady.json")).unwrap();
    let (a, b) = text.split_at(text.len() / 2);
    std::fs::write(&tr, a).unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let s = t.screen();
    assert!(
        s.contains("[lru]"),
        "a half-written file never replaces the view:\n{s}"
    );
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(&tr)
        .unwrap()
        .write_all(b)
        .unwrap();
    t.wait_for(Duration::from_secs(3), |s| s.contains("[belady]"))
        .expect("the re-created trace shows");
    t.send(&["q"]);
}

/// A runtime appending to a JSONL stream under `view --watch`: half a
/// line is never shown (nor complained about), the completed line is; a
/// malformed line is named in the banner while the stream keeps going.
#[test]
fn a_jsonl_stream_appended_in_partial_lines() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    std::fs::write(
        &path,
        concat!(
            "{\"kind\":\"pool\",\"pool\":\"sram\",\"capacity_bytes\":1048576,\"alignment\":64}\n",
            "{\"t_ns\":1000,\"kind\":\"op_begin\",\"op\":\"first_conv\",\"thread\":0}\n",
            "{\"t_ns\":2000,\"kind\":\"alloc\",\"tensor\":\"act_a\",\"bytes\":4096,\"pool\":\"sram\",\"offset\":0,\"thread\":0}\n",
            "{\"t_ns\":3000,\"kind\":\"op_end\",\"op\":\"first_conv\",\"thread\":0}\n",
        ),
    )
    .unwrap();
    let append = |text: &str| {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f.sync_data().unwrap();
    };
    let cmd = format!(
        "{} view {} --watch; sleep 3",
        bin().display(),
        path.display()
    );
    let Some(t) = Tmux::open("jsonl", &cmd, |s| {
        s.contains("peak live   4.0 KiB") && s.contains("LIVE")
    }) else {
        return;
    };
    // Half a line (the writer was interrupted mid-event).
    append("{\"t_ns\":4000,\"kind\":\"op_begin\",\"op\":\"second_gemm\",\"thr");
    std::thread::sleep(Duration::from_millis(1200));
    let s = t.screen();
    assert!(s.contains("peak live   4.0 KiB"), "{s}");
    assert!(!s.contains(" ! "), "a partial line is not a problem:\n{s}");
    // The rest of it, and more events.
    append(concat!(
        "ead\":0}\n",
        "{\"t_ns\":5000,\"kind\":\"alloc\",\"tensor\":\"act_b\",\"bytes\":8192,\"pool\":\"sram\",\"offset\":4096,\"thread\":0}\n",
        "{\"t_ns\":9000,\"kind\":\"op_end\",\"op\":\"second_gemm\",\"thread\":0}\n",
    ));
    t.wait_for(Duration::from_secs(3), |s| {
        s.contains("peak live   12.0 KiB")
    })
    .expect("the completed event shows");
    t.send(&["3"]);
    t.wait_for(Duration::from_secs(2), |s| s.contains("second_gemm"))
        .expect("the op from the completed line is listed");
    // A garbled line: named, skipped, the stream goes on.
    append(concat!(
        "garbage from a crashed writer\n",
        "{\"t_ns\":9500,\"kind\":\"op_begin\",\"op\":\"third_relu\",\"thread\":0}\n",
        "{\"t_ns\":9900,\"kind\":\"op_end\",\"op\":\"third_relu\",\"thread\":0}\n",
    ));
    let s = t
        .wait_for(Duration::from_secs(3), |s| {
            s.contains("third_relu") && s.contains("line 8")
        })
        .expect("the bad line is named and later lines still arrive");
    assert!(s.contains("run.jsonl: line 8"), "{s}");
    t.send(&["q"]);
}

/// A stream followed with a small window (`--keep`): the screen says it is
/// a window and what fell out, and the eviction total of the whole stream
/// stays exact as the window moves (one eviction every 8 ops), reconciled
/// with the window's classified evictions plus the earlier ones.
#[test]
fn a_stream_followed_in_a_window_keeps_its_whole_totals() {
    use common::stream::{op_lines, POOL_LINE};
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    writeln!(f, "{POOL_LINE}").unwrap();
    let (mut n, mut t) = (0u64, 1_000_000u64);
    let mut append = |f: &mut std::fs::File, ops: u64| {
        let mut lines = Vec::new();
        for _ in 0..ops {
            t = op_lines(n, t, &mut lines);
            n += 1;
        }
        for l in &lines {
            writeln!(f, "{l}").unwrap();
        }
        f.sync_data().unwrap();
    };
    append(&mut f, 800);
    let cmd = format!(
        "{} view {} --watch --keep 300; sleep 3",
        bin().display(),
        path.display()
    );
    let Some(t) = Tmux::open_at("window", &cmd, (80, 24), |s| {
        s.contains("100 evictions") && s.contains("= evicted out")
    }) else {
        return;
    };
    let s = t.screen();
    assert!(
        s.contains("WINDOW"),
        "the tab bar says it is a window:\n{s}"
    );
    assert!(s.contains("window: the last"), "{s}");
    assert!(s.contains("+ earlier"), "{s}");
    // 2,000 more ops: 250 more evictions, most of them long out of the window.
    append(&mut f, 2_000);
    let s = t
        .wait_for(Duration::from_secs(10), |s| s.contains("350 evictions"))
        .expect("the whole stream's evictions, counted as they fall out");
    let earlier: u64 = s
        .lines()
        .find_map(|l| l.split("+ earlier ").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|x| x.parse().ok())
        .expect("the earlier evictions");
    let window: u64 = ["capacity ", "lifetime "]
        .iter()
        .map(|k| {
            s.lines()
                .find_map(|l| l.split(k).nth(1))
                .and_then(|r| r.split_whitespace().next())
                .and_then(|x| x.parse::<u64>().ok())
                .expect("a class count")
        })
        .sum();
    assert_eq!(
        earlier + window,
        350,
        "the split adds up to the total:\n{s}"
    );
    assert!(earlier > 300, "most fell out of a 300-event window:\n{s}");
    t.send(&["q"]);
}

/// A config saved many times faster than the debounce: the explorer ends
/// on the last save's result (only the newest re-run matters).
#[test]
fn saves_faster_than_the_debounce_end_on_the_last_one() {
    let Some((_dir, cfg, t)) = watch_lru_config("burst") else {
        return;
    };
    let policies = ["belady", "lifetime", "lru", "ideal"];
    for i in 0..40 {
        std::fs::write(&cfg, format!("policy = \"{}\"\n", policies[i % 4])).unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    std::fs::write(&cfg, "policy = \"belady\"\n").unwrap();
    let s = t
        .wait_for(Duration::from_secs(3), |s| {
            s.contains("[belady]") && !s.contains("...")
        })
        .expect("the last save wins");
    // And it stays there (no stale re-run lands afterwards).
    std::thread::sleep(Duration::from_millis(1500));
    assert!(t.screen().contains("[belady]"), "{s}");
    t.send(&["q"]);
}

/// One run, the same figures everywhere: `sim --format json`, the trace's
/// summary, `report --format json` and the explorer's Overview at 80x24
/// (read off the screen) agree on every ledger figure and the bound.
#[test]
fn one_run_shows_the_same_figures_in_every_output() {
    same_figures_in_every_output("lru");
}

/// The same for the planned policy: the explorer re-simulating the model
/// live solves the same plan as `sim` did, and shows the same figures.
#[test]
fn a_planned_run_shows_the_same_figures_in_every_output() {
    same_figures_in_every_output("planned");
}

fn same_figures_in_every_output(policy: &str) {
    let dir = tempfile::tempdir().unwrap();
    let model = root().join("tests/data/encoder_decoder.json");
    let trace = dir.path().join("t.json");
    let m = model.to_str().unwrap();
    let flags = ["--capacity", "768KiB", "--policy", policy];
    let sim = common::run_ok(
        &[
            &["sim", m][..],
            &flags,
            &["-o", trace.to_str().unwrap(), "--format", "json"],
        ]
        .concat(),
    );
    let sim: serde_json::Value = serde_json::from_slice(&sim.stdout).unwrap();
    let run = &sim["runs"][0];
    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let report = common::run_ok(&[&["report", m][..], &flags, &["--format", "json"]].concat());
    let report: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let fields = [
        "spill_count",
        "spilled_bytes",
        "reloaded_bytes",
        "streamed_in_bytes",
        "streamed_out_bytes",
        "traffic_bytes",
        "lower_bound_traffic_bytes",
        "lower_bound_method",
        "latency_ns",
        "stall_ns",
        "peak_live_bytes",
    ];
    for f in fields {
        assert_eq!(run[f], file["summary"][f], "sim json vs trace: {f}");
        assert_eq!(run[f], report["summary"][f], "sim json vs report: {f}");
    }
    assert!(
        run["traffic_bytes"].as_u64().unwrap() > 0,
        "a run that spills"
    );
    // The explorer's Overview, as a user reads it: of the trace `sim`
    // wrote, and of the model simulated live (whose bound comes from the
    // same exact program, found in the background).
    let b = |f: &str| spillscope::units::fmt_bytes(run[f].as_u64().unwrap());
    let expect = [
        format!(
            "evicted out {} ({})",
            b("spilled_bytes"),
            spillscope::units::count(run["spill_count"].as_u64().unwrap(), "eviction")
        ),
        format!("reloaded    {}", b("reloaded_bytes")),
        format!(
            "streamed    in {}, out {}",
            b("streamed_in_bytes"),
            b("streamed_out_bytes")
        ),
        format!("traffic     {}", b("traffic_bytes")),
        format!(
            "{} ({}",
            b("lower_bound_traffic_bytes"),
            run["lower_bound_method"].as_str().unwrap()
        ),
        // The gap and its ratio, as `sim --format json` has them.
        match run["gap_ratio"].as_f64() {
            Some(r) if r == 0.0 && run["lower_bound_method"] == "ilp" => {
                "gap         0 B (optimal)".to_string()
            }
            Some(r) => format!(
                "gap         {} (+{:.0}%)",
                b("gap_to_bound_bytes"),
                r * 100.0
            ),
            None => format!("gap         {}", b("gap_to_bound_bytes")),
        },
    ];
    let live = format!("{} {}", m, flags.join(" "));
    let (in_file, in_live) = (
        format!("same-figures-{policy}"),
        format!("same-live-{policy}"),
    );
    for (name, what) in [
        (in_file.as_str(), trace.to_str().unwrap()),
        (in_live.as_str(), live.as_str()),
    ] {
        let cmd = format!("{} view {what}; sleep 3", bin().display());
        let Some(t) = Tmux::start(name, &cmd, 80, 24) else {
            return;
        };
        let s = t
            .wait_for(Duration::from_secs(15), |s| {
                expect.iter().all(|e| s.contains(e.as_str()))
            })
            .unwrap_or_else(|last| last);
        for e in &expect {
            assert!(s.contains(e.as_str()), "{name}: Overview lacks {e:?}:\n{s}");
        }
        t.send(&["q"]);
    }
}

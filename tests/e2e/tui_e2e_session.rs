//! The live loop at 80x24 in tmux, on a model whose bound takes the exact
//! program's whole budget (DenseNet-121's layout at 4 MiB): the config is
//! edited to `planned` and back to `lru`, a suggestion is applied with `a`
//! and undone with `u`; Suggest then shows the final run's suggestions
//! within the time `spillscope suggest` takes for the same config plus 2 s,
//! and the Overview's bound is the one `sim --format json` prints for it.
//! Skips (with a message) where tmux is missing.

use crate::common;
use crate::common::bin;
use common::tmux::Tmux;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// No cache: every figure below is computed, not read back.
const FLAGS: &[&str] = &["--capacity", "4MiB", "--ilp-time", "2", "--no-cache"];

fn densenet(dir: &Path) -> PathBuf {
    let g = spillscope::graph::gen::densenet_like(&[6, 12, 24, 16]);
    let p = dir.join("densenet.json");
    let json = serde_json::to_string(&spillscope::graph::json::graph_to_json(&g)).unwrap();
    std::fs::write(&p, json).unwrap();
    p
}

/// The explorer on the generated DenseNet under a watched `sched.toml`
/// (lru), in tmux at 80x24: its directory, model, config and pane.
fn live_densenet(name: &str) -> Option<(tempfile::TempDir, PathBuf, PathBuf, Tmux)> {
    let dir = tempfile::tempdir().unwrap();
    let model = densenet(dir.path());
    let cfg = dir.path().join("sched.toml");
    std::fs::write(&cfg, "policy = \"lru\"\n").unwrap();
    let cmd = format!(
        "cd {} && {} view {} {} --config sched.toml; sleep 3",
        dir.path().display(),
        bin().display(),
        model.display(),
        FLAGS.join(" ")
    );
    let t = Tmux::open_at(name, &cmd, (80, 24), |s| s.contains("[lru]"))?;
    Some((dir, model, cfg, t))
}

/// Whether a line is the Suggest list's title (at 80 columns its middle
/// form: "N suggestions saving > FLOOR; baseline ...").
fn suggest_title(l: &str) -> bool {
    l.contains("suggestion") && l.contains(" saving ") && l.contains("baseline ")
}

/// The Suggest view's title for a run of `policy` with `latency`.
fn suggestions_for(s: &str, latency: &str, policy: &str) -> bool {
    s.lines()
        .any(|l| suggest_title(l) && l.contains(&format!("baseline {latency} [{policy}]")))
}

#[test]
fn after_edits_suggest_and_the_bound_follow_the_final_config() {
    let Some((dir, model, cfg, t)) = live_densenet("session") else {
        return;
    };
    // The first run's bound is refined in place, then its suggestions come.
    let s = t
        .wait_for(Duration::from_secs(60), |s| {
            s.contains("lower bound") && !s.contains("refining")
        })
        .expect("the bound refined");
    let bound_line = s
        .lines()
        .find(|l| l.contains("lower bound"))
        .unwrap()
        .to_string();
    t.send(&["7"]);
    let s = t
        .wait_for(Duration::from_secs(60), |s| s.lines().any(suggest_title))
        .expect("suggestions");
    let latency = s
        .lines()
        .find_map(|l| {
            let i = l.find("baseline ")?;
            Some(l[i + 9..].split(" [").next()?.to_string())
        })
        .expect("the baseline latency");
    // planned, then back to lru before its suggestions are done.
    std::fs::write(&cfg, "policy = \"planned\"\n").unwrap();
    t.wait_for(Duration::from_secs(30), |s| s.contains("[planned]"))
        .expect("the planned run");
    std::fs::write(&cfg, "policy = \"lru\"\n").unwrap();
    t.wait_for(Duration::from_secs(60), |s| {
        suggestions_for(s, &latency, "lru")
    })
    .expect("lru's suggestions again");
    // Apply the top suggestion; once its run replaces lru's, undo it.
    t.send(&["a"]);
    t.wait_for(Duration::from_secs(30), |s| {
        !suggestions_for(s, &latency, "lru")
    })
    .expect("the applied change re-simulated");
    assert_ne!(std::fs::read_to_string(&cfg).unwrap(), "policy = \"lru\"\n");
    t.send(&["u"]);
    let undone = Instant::now();
    t.wait_for(Duration::from_secs(5), |_| {
        std::fs::read_to_string(&cfg).unwrap() == "policy = \"lru\"\n"
    })
    .expect("u restores the file");
    let s = t
        .wait_for(Duration::from_secs(60), |s| {
            suggestions_for(s, &latency, "lru")
        })
        .expect("the final run's suggestions");
    let shown = undone.elapsed();
    // What `spillscope suggest` takes for the same final config.
    let started = Instant::now();
    let o = std::process::Command::new(bin())
        .current_dir(dir.path())
        .args(["suggest", model.to_str().unwrap(), "--config", "sched.toml"])
        .args(FLAGS)
        .output()
        .unwrap();
    let cli = started.elapsed();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    println!("suggestions on screen {shown:?} after u; `suggest` takes {cli:?}");
    assert!(
        shown <= cli + Duration::from_secs(2),
        "{shown:?} after the last change, `suggest` takes {cli:?}\n{s}"
    );
    // The Overview's bound, final, is sim's for the final config.
    t.send(&["1"]);
    let s = t
        .wait_for(Duration::from_secs(60), |s| {
            s.contains("lower bound") && !s.contains("refining")
        })
        .expect("the final bound");
    let o = std::process::Command::new(bin())
        .current_dir(dir.path())
        .args(["sim", model.to_str().unwrap(), "--config", "sched.toml"])
        .args(FLAGS)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let run = &v["runs"][0];
    let want = format!(
        "{} ({})",
        spillscope::units::fmt_bytes(run["lower_bound_traffic_bytes"].as_u64().unwrap()),
        run["lower_bound_method"].as_str().unwrap()
    );
    let line = s.lines().find(|l| l.contains("lower bound")).unwrap();
    assert!(line.contains(&want), "{line:?} vs sim's {want}");
    assert!(bound_line.contains(&want), "the first run's {bound_line:?}");
    let gap = format!("(+{:.0}%)", run["gap_ratio"].as_f64().unwrap() * 100.0);
    assert!(
        s.lines().any(|l| l.contains("gap") && l.contains(&gap)),
        "gap {gap}:\n{s}"
    );
}

/// `?` and live state at 80x24 on a model whose work takes seconds: the
/// tab bar shows the running stage with n of m, the Overview's title the
/// watched config; `?` lists the view's keys and, scrolled, the glossary,
/// while the list under it stays put; after a save to `planned` the badge
/// says `[planned]` and the config is still named.
#[test]
fn help_and_live_state_at_80x24() {
    let Some((_dir, _model, cfg, t)) = live_densenet("helplive") else {
        return;
    };
    let tabs = |s: &str| s.lines().next().unwrap_or("").to_string();
    // Some stage with its count, while the bound and suggestions run.
    // The config is named with which load of it is shown (80 columns: the
    // short form, "sched.toml #N HH:MM:SS").
    let load = |s: &str| -> Option<u32> {
        let title = s.lines().find(|l| l.contains("sched.toml"))?;
        title
            .split(['#', ','])
            .nth(1)
            .map(|x| x.trim_start_matches(" load "))
            .and_then(|x| x.split_whitespace().next())
            .and_then(|n| n.parse().ok())
    };
    // The whole frame (the title is drawn after the tab bar).
    let s = t
        .wait_for(Duration::from_secs(60), |s| {
            let bar = tabs(s);
            bar.contains('/') && bar.chars().any(|c| c.is_ascii_digit()) && load(s).is_some()
        })
        .unwrap_or_else(|s| {
            panic!("a stage with n of m in the tab bar, the config's load in the title:\n{s}")
        });
    assert!(tabs(&s).contains("[lru]"), "the badge stays: {s}");
    let first = load(&s).unwrap();
    assert!(first >= 1, "{s}");
    // Hotspots, then ?: Down scrolls the help, not the list.
    t.send(&["3"]);
    let before = t
        .wait_for(Duration::from_secs(30), |s| s.contains("Hotspots:"))
        .expect("hotspots");
    let rows = |s: &str| -> Vec<String> {
        s.lines()
            .skip(3)
            .take(5)
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    t.send(&["?"]);
    let s = t
        .wait_for(Duration::from_secs(5), |s| s.contains("keys (Esc closes"))
        .expect("help");
    // One Down at a time, each drawn before the next; what scrolls past
    // is collected: every Hotspots key and the glossary are reachable.
    let mut s = s;
    let mut seen = s.clone();
    for _ in 0..60 {
        if s.contains(" 0 below") {
            break;
        }
        let was = s.clone();
        t.send(&["Down"]);
        s = t
            .wait_for(Duration::from_secs(2), |now| now != was)
            .unwrap_or_else(|now| now);
        seen += &s;
    }
    assert!(
        s.contains(" 0 below") && s.contains("keys (Esc closes"),
        "scrolled to the end:\n{s}"
    );
    for what in ["s/i", "Cycle the sort column", "capacity spill:"] {
        assert!(seen.contains(what), "{what} not reachable in ?:\n{seen}");
    }
    t.send(&["Escape"]);
    let after = t
        .wait_for(Duration::from_secs(5), |s| !s.contains("keys (Esc closes"))
        .expect("help closed");
    assert_eq!(rows(&before), rows(&after), "the list moved under the help");
    // A save to planned: the badge follows, the config stays named.
    std::fs::write(&cfg, "policy = \"planned\"\n").unwrap();
    t.send(&["1"]);
    t.wait_for(Duration::from_secs(30), |s| {
        tabs(s).contains("[planned]") && load(s).is_some_and(|n| n > first)
    })
    .unwrap_or_else(|s| panic!("the planned run, a new load of the config:\n{s}"));
    t.send(&["q"]);
}

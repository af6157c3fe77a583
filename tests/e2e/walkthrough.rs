//! The README's five-minute triage, run as a new user would: every command
//! of its walkthrough block, in order, from a scratch directory, with the
//! `spillscope` it names being the binary the tests built. `view` lines
//! open in tmux at 80x24, where the figures the README quotes must be on
//! screen; the other lines must succeed, and their output must carry the
//! figures the README's steps quote.

use crate::common::tmux::Tmux;
use crate::common::{bin, root};
use std::process::Command;
use std::time::Duration;

/// The walkthrough's lines (between its markers), without the code fence.
fn walkthrough() -> Vec<String> {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let block = readme
        .split("<!-- walkthrough -->")
        .nth(1)
        .and_then(|s| s.split("<!-- /walkthrough -->").next())
        .expect("README has a walkthrough block");
    block
        .lines()
        .filter(|l| !l.starts_with("```") && !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// The shell's prelude: `spillscope` is the built binary; the variables
/// earlier lines set.
fn prelude(vars: &[String]) -> String {
    let mut p = format!("spillscope() {{ '{}' \"$@\"; }}\n", bin().display());
    for v in vars {
        p += v;
        p += "\n";
    }
    p
}

/// The README's figures for each command, as the walkthrough's steps quote
/// them: a changed figure must change the README too.
fn quoted(line: &str) -> &'static [&'static str] {
    if line.contains("--policy lru,planned") {
        &[
            "4.043 ms",
            "26.0 MiB",
            "2.3 MiB (+10%)",
            "23.7 MiB ilp",
            "0.301 ms",
            "0 B (optimal)",
        ]
    } else if line.contains("--write-config") {
        &["-0.301 ms (7.5 %)  fuse 17 conv/matmul+elementwise chains"]
    } else if line.contains("fixed.toml -o after.json") {
        &["3.741 ms", "12.2 MiB", "0 B (optimal)"]
    } else if line.starts_with("spillscope verify") {
        &["OK"]
    } else {
        &[]
    }
}

#[test]
fn the_readme_walkthrough_runs_as_written() {
    let lines = walkthrough();
    assert!(lines.len() >= 8, "{lines:?}");
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        root().join("sample-traces"),
        dir.path().join("sample-traces"),
    )
    .unwrap();
    let mut vars: Vec<String> = Vec::new();
    let mut views = 0;
    for line in &lines {
        if !line.starts_with("spillscope ") && line.contains('=') && !line.contains(' ') {
            vars.push(line.clone());
            continue;
        }
        if line.starts_with("spillscope view") {
            views += 1;
            let Some(()) = view(dir.path(), &prelude(&vars), line, views) else {
                eprintln!("skipped the view lines: tmux unavailable");
                continue;
            };
            continue;
        }
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!("{}{line}", prelude(&vars)))
            .current_dir(dir.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "`{line}` failed:\n{text}");
        for q in quoted(line) {
            assert!(text.contains(q), "`{line}` does not print {q:?}:\n{text}");
        }
    }
    assert_eq!(views, 2, "the walkthrough opens the explorer twice");
    for f in ["triage.toml", "fixed.toml", "before.json", "after.json"] {
        assert!(dir.path().join(f).exists(), "{f} was not written");
    }
}

/// One `view` line in tmux at 80x24: the first (a model under a config)
/// shows the run's figures, and its Hotspots and Suggest views fill; the
/// second (two traces) shows Compare saying what differs.
fn view(dir: &std::path::Path, prelude: &str, line: &str, n: usize) -> Option<()> {
    let script = dir.join(format!("view{n}.sh"));
    std::fs::write(&script, format!("{prelude}{line}\nsleep 3\n")).unwrap();
    let cmd = format!("cd {} && bash {}", dir.display(), script.display());
    let wait = Duration::from_secs(20);
    let t = Tmux::open_at(&format!("walk{n}"), &cmd, (80, 24), |s| {
        s.contains("Overview")
    })?;
    if n == 1 {
        let s = t
            .wait_for(wait, |s| s.contains("4.043 ms") && s.contains("26.0 MiB"))
            .unwrap_or_else(|s| panic!("the Overview's figures:\n{s}"));
        assert!(s.contains("[lru]"), "{s}");
        t.send(&["7"]);
        t.wait_for(wait, |s| s.contains("fuse 17"))
            .unwrap_or_else(|s| panic!("Suggest:\n{s}"));
        t.send(&["3"]);
        t.wait_for(wait, |s| s.contains("Hotspots:"))
            .unwrap_or_else(|s| panic!("Hotspots:\n{s}"));
    } else {
        t.send(&["6"]);
        let s = t
            .wait_for(wait, |s| s.contains("differ in"))
            .unwrap_or_else(|s| panic!("Compare:\n{s}"));
        assert!(s.contains("A:") && s.contains("B:"), "{s}");
    }
    t.send(&["q"]);
    Some(())
}

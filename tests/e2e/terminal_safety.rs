//! Names that try to drive the terminal (a model named with OSC 0 / OSC 2,
//! ops and tensors with OSC 52 clipboard writes, CSI clear-screen and a C1
//! CSI) pass through every command and the explorer in a real tmux pane:
//! afterwards tmux holds no clipboard buffer, the pane's title is what it
//! was, and the bytes the commands wrote to the pane hold none of the
//! sequences, while the names show escaped (`\u001b`). Skips (with a
//! message) without tmux.

use crate::common;
use crate::common::{bin, root};
use common::tmux::Tmux;
use std::path::Path;
use std::time::Duration;

/// Every command that prints names, in one script, each followed by a
/// marker line; an error that quotes a name from a schedule config too.
fn script(dir: &Path) -> String {
    let b = bin().display().to_string();
    let m = root().join("tests/data/evil_names.json");
    let m = m.display();
    let f = "--capacity 1MiB";
    let cmds = [
        format!("{b} sim {m} {f}"),
        format!("{b} sim {m} {f} --format markdown"),
        format!("{b} sim {m} {f} --format json"),
        format!("{b} sim {m} {f} --policy lru -o a.json"),
        format!("{b} sim {m} {f} --policy belady -o b.json"),
        format!("{b} report {m} {f}"),
        format!("{b} report {m} {f} --format html"),
        format!("{b} whatif {m} --capacity 1MiB,2MiB"),
        format!("{b} suggest {m} {f}"),
        format!("{b} diff a.json b.json"),
        format!("{b} import a.json"),
        format!("{b} verify a.json"),
        format!("{b} export a.json --chrome -"),
        format!("{b} sim {m} {f} --config bad.toml"),
    ];
    let mut s = format!("cd {}\n", dir.display());
    for (i, c) in cmds.iter().enumerate() {
        s += &format!("{c}\necho MARK-{i}-DONE\n");
    }
    s
}

#[test]
fn hostile_names_change_neither_clipboard_nor_title_nor_screen() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.toml"),
        "pins = [\"nope\\u001b]52;c;ZXJy\\u0007\\u001b[2J\"]\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("run.sh"), script(dir.path())).unwrap();
    let Some(t) = Tmux::start("escapes", "sh", 120, 40) else {
        return;
    };
    t.run(&["set", "-g", "set-clipboard", "on"]);
    let title = t.run(&["display", "-p", "#{pane_title}"]);
    let raw = dir.path().join("pane.raw");
    t.run(&["pipe-pane", "-o", &format!("cat >> {}", raw.display())]);
    t.send_literal(&format!(
        "sh {}/run.sh; echo ALL-DONE | tr A-Z a-z",
        dir.path().display()
    ));
    t.send(&["Enter"]);
    t.wait_for(Duration::from_secs(120), |s| s.contains("all-done"))
        .expect("the commands finished");
    // Let pipe-pane's reader drain.
    std::thread::sleep(Duration::from_millis(500));
    let bytes = std::fs::read(&raw).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    for i in 0..14 {
        assert!(
            text.contains(&format!("MARK-{i}-DONE")),
            "command {i} did not finish: {}",
            text.chars()
                .skip(text.chars().count().saturating_sub(2000))
                .collect::<String>()
        );
    }
    for (seq, what) in [
        ("\x1b]52", "an OSC 52 clipboard write"),
        ("\x1b]0;", "an OSC 0 title"),
        ("\x1b]2;", "an OSC 2 title"),
        ("\x1b[2J", "a clear-screen"),
        ("\u{9b}", "a C1 CSI"),
        ("\u{202e}", "a bidirectional override"),
    ] {
        assert!(!text.contains(seq), "the commands wrote {what} to the pane");
    }
    // The names are there, escaped, in tables, reports and errors alike.
    assert!(
        text.contains("enc0.ffn.gelu\\u001b]52;c;b3duZWQ=\\u0007"),
        "{text}"
    );
    assert!(
        text.contains("nope\\u{1b}]52") || text.contains("nope\\u001b]52"),
        "the config error quotes the pin escaped"
    );

    // The explorer on the same model: every view, then quit.
    t.send_literal(&format!(
        "{} view {} --capacity 1MiB",
        bin().display(),
        root().join("tests/data/evil_names.json").display()
    ));
    t.send(&["Enter"]);
    t.wait_for(Duration::from_secs(20), |s| s.contains("LIVE"))
        .expect("the explorer's first frame");
    for k in ["2", "3", "4", "5", "6", "7", "1"] {
        t.send(&[k]);
        std::thread::sleep(Duration::from_millis(300));
    }
    t.send(&["q"]);
    std::thread::sleep(Duration::from_millis(500));
    t.send_literal("echo EXPLORER-CLOSED | tr A-Z a-z");
    t.send(&["Enter"]);
    t.wait_for(Duration::from_secs(5), |s| s.contains("explorer-closed"))
        .expect("the shell after the explorer");
    std::thread::sleep(Duration::from_millis(300));
    let bytes = std::fs::read(&raw).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    for seq in ["\x1b]52", "\x1b]0;", "\x1b]2;", "\u{9b}"] {
        assert!(!text.contains(seq), "{seq:?} reached the pane");
    }
    assert_eq!(
        t.run(&["list-buffers"]),
        "",
        "a clipboard buffer was written"
    );
    assert_eq!(
        t.run(&["display", "-p", "#{pane_title}"]),
        title,
        "the title changed"
    );
}

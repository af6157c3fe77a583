//! The binary trace cache: a trace read from its JSON, from the cache, and
//! through the JSONL tail that wrote it gives the same ledger and draws
//! the same views; the real binary serves the second open from the cache
//! with the same first screen, and `--no-cache` keeps nothing.

use crate::common;
use crate::stream_window::{read, stream};
use proptest::prelude::*;
use spillscope::trace::ledger::Ledger;
use spillscope::trace::store::{Opened, TraceStore};
use spillscope::trace::Trace;
use spillscope_explorer::app::{App, View};
use spillscope_explorer::data::Dataset;

/// Every view of `tr` at 80x24, under one label.
fn views(tr: &Trace) -> Vec<String> {
    let mut a = App::new(vec![Dataset::build("stream", tr.clone())]);
    a.tensors.tensor = a.tensor_list().first().copied();
    View::ALL
        .iter()
        .map(|&v| {
            a.view = v;
            common::screen::render(&a, 80, 24)
        })
        .collect()
}

fn same_ledger(a: &Trace, b: &Trace) -> Result<(), TestCaseError> {
    let (la, lb) = (Ledger::of(a), Ledger::of(b));
    prop_assert_eq!(la.fields(), lb.fields());
    prop_assert_eq!(la.per_pool, lb.per_pool);
    prop_assert_eq!(&a.summary, &b.summary);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn json_cache_and_tail_give_the_same_ledger_and_views(
        seed in any::<u64>(),
        steps in 20usize..300,
        keep in prop::option::of(1usize..80),
    ) {
        let tail = read(&stream(seed, steps), keep);
        prop_assume!(!tail.events.is_empty());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stream.json");
        std::fs::write(&path, tail.to_json()).unwrap();
        let store = TraceStore::at(dir.path().join("cache")).with_min_bytes(0);

        let json = Trace::load(&path).unwrap();
        let (stored, how) = store.open(&path).unwrap();
        prop_assert_eq!(how, Opened::Stored);
        let (cached, how) = store.open(&path).unwrap();
        prop_assert_eq!(how, Opened::Cached);

        prop_assert_eq!(&cached, &json);
        prop_assert_eq!(&stored, &json);
        prop_assert_eq!(cached.window(), tail.window());
        same_ledger(&tail, &json)?;
        same_ledger(&json, &cached)?;
        let screens = views(&tail);
        prop_assert_eq!(&views(&json), &screens);
        prop_assert_eq!(&views(&cached), &screens);
    }
}

/// A trace past the cache's size threshold (8 MiB), made by the binary.
fn large_trace(dir: &std::path::Path) -> std::path::PathBuf {
    let p = dir.join("large.json");
    common::run_ok(&[
        "gen",
        "trace",
        "--events",
        "40000",
        "-o",
        &p.to_string_lossy(),
    ]);
    let size = std::fs::metadata(&p).unwrap().len();
    assert!(
        size >= spillscope::trace::store::DEFAULT_MIN_BYTES,
        "{size} bytes"
    );
    p
}

fn entries(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    match std::fs::read_dir(dir.join(spillscope::trace::store::DIR)) {
        Ok(d) => d.flatten().map(|e| e.path()).collect(),
        Err(_) => Vec::new(),
    }
}

/// The first frame of `view` on `trace` at 80x24 with `cache` as the cache
/// directory (the Overview, settled).
fn first_screen(trace: &std::path::Path, cache: &std::path::Path, extra: &str) -> Option<String> {
    let cmd = format!(
        "SPILLSCOPE_CACHE_DIR={} {} view {} --ilp-time 0 {extra}",
        cache.display(),
        common::bin().display(),
        trace.display()
    );
    let t = common::tmux::Tmux::open_at("cache", &cmd, (80, 24), |s| s.contains("latency"))?;
    // The complete analyses and the suggestions land after the first
    // frame: wait until no job is in progress (the tab bar's "..." or a
    // count of done work, "8/18") and the screen stops changing.
    let busy = |s: &str| {
        s.lines().next().is_some_and(|l| {
            l.contains("...")
                || l.split_whitespace().any(|w| {
                    w.split_once('/').is_some_and(|(a, b)| {
                        !a.is_empty()
                            && !b.is_empty()
                            && a.chars().all(|c| c.is_ascii_digit())
                            && b.chars().all(|c| c.is_ascii_digit())
                    })
                })
        })
    };
    // Still for a second (five polls): under load a stage can hold a
    // frame longer than one poll.
    let mut last = t.screen();
    let mut still = 0;
    for _ in 0..300 {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let now = t.screen();
        still = if now == last { still + 1 } else { 0 };
        if still >= 5 && !busy(&now) {
            break;
        }
        last = now;
    }
    t.send(&["q"]);
    Some(last)
}

#[test]
fn view_opens_a_large_trace_from_the_cache_the_second_time_with_the_same_screen() {
    let dir = tempfile::tempdir().unwrap();
    let trace = large_trace(dir.path());
    let cache = dir.path().join("cache");
    let Some(first) = first_screen(&trace, &cache, "") else {
        return;
    };
    let made = entries(&cache);
    assert_eq!(made.len(), 1, "one entry after the first open: {made:?}");
    let meta = |p: &std::path::Path| {
        let m = std::fs::metadata(p).unwrap();
        (
            std::os::unix::fs::MetadataExt::ino(&m),
            m.modified().unwrap(),
        )
    };
    let (inode, stamp) = meta(&made[0]);
    std::thread::sleep(std::time::Duration::from_millis(50));
    let second = first_screen(&trace, &cache, "").unwrap();
    assert_eq!(second, first, "the cached open draws what the JSON drew");
    // The entry was read (and touched: trimming goes by last use), not
    // written again (a write renames a new file into place).
    let after = entries(&cache);
    assert_eq!(after, made);
    let (inode_after, used) = meta(&after[0]);
    assert_eq!(inode_after, inode, "the entry was rewritten");
    assert!(used > stamp);

    let none = dir.path().join("none");
    let third = first_screen(&trace, &none, "--no-cache").unwrap();
    assert_eq!(third, first);
    assert!(entries(&none).is_empty(), "--no-cache keeps nothing");
}

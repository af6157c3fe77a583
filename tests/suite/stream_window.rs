//! A JSONL stream held in a bounded window (`--keep`): whatever the window
//! size, the trace it gives has the whole stream's ledger (per pool), peak,
//! latency and pool capacities, passes `verify`, holds every event from
//! the window's start, and reads back from its own JSON the same; a tail
//! fed in pieces gives what one read of the whole file gives.

use proptest::prelude::*;
use spillscope::trace::import::jsonl::{JsonlState, JsonlTail};
use spillscope::trace::ledger::{Ledger, LedgerFields};
use spillscope::trace::{verify::verify, Trace};
use std::io::Write;

#[derive(Clone, Copy, PartialEq)]
enum St {
    Gone,
    Resident,
    /// In DRAM only; `true` when its copy is current.
    Dram,
}

/// A runtime's stream: ops on two threads, tensors placed at fixed
/// offsets (no overlap), evicted (with or without a write-back when DRAM
/// already holds a copy), reloaded, streamed in and out, freed; in time
/// order. Valid by construction, so the whole stream passes `verify`.
pub(crate) fn stream(seed: u64, steps: usize) -> Vec<String> {
    let mut next = crate::common::xorshift(seed | 1);
    let n_t = 12usize;
    let mut st = vec![St::Gone; n_t];
    let mut dram = vec![false; n_t];
    let mut open = [0usize; 2];
    let mut t = 1_000_000u64;
    let mut ops = 0;
    let mut out = vec![
        r#"{"kind":"pool","pool":"sram","capacity_bytes":1048576,"alignment":64}"#.to_string(),
    ];
    let pools = ["sram", "l2"];
    for _ in 0..steps {
        t += 1 + next(5);
        let th = next(2) as usize;
        let k = next(12) as usize;
        let pool = pools[k % 3 / 2];
        let bytes = 64 * (1 + k as u64);
        let mem = |kind: &str, extra: String| {
            format!(
                r#"{{"t_ns":{t},"kind":"{kind}","tensor":"act{k}","bytes":{bytes},"pool":"{pool}","thread":{th}{extra}}}"#
            )
        };
        let off = format!(r#","offset":{}"#, k as u64 * 4096);
        match next(8) {
            // Runtimes nest calls a few deep, and close what they open.
            0 if open[th] < 3 => {
                out.push(format!(
                    r#"{{"t_ns":{t},"kind":"op_begin","op":"op{ops}","thread":{th}}}"#
                ));
                ops += 1;
                open[th] += 1;
            }
            1 if open[th] > 0 => {
                out.push(format!(r#"{{"t_ns":{t},"kind":"op_end","thread":{th}}}"#));
                open[th] -= 1;
            }
            2 | 3 => match st[k] {
                St::Gone => {
                    out.push(mem("alloc", off));
                    st[k] = St::Resident;
                    dram[k] = false;
                }
                St::Dram if dram[k] => {
                    out.push(mem("reload", off));
                    st[k] = St::Resident;
                }
                _ => {}
            },
            4 if st[k] == St::Resident => {
                let w = if dram[k] && next(2) == 0 { 0 } else { bytes };
                out.push(mem("evict", format!(r#","written_bytes":{w}"#)));
                st[k] = St::Dram;
                dram[k] = true;
            }
            5 if st[k] == St::Resident => {
                out.push(mem("free", String::new()));
                st[k] = St::Gone;
            }
            6 if st[k] != St::Resident && dram[k] => out.push(mem("stream_in", String::new())),
            7 if st[k] == St::Gone => {
                out.push(mem("stream_out", String::new()));
                st[k] = St::Dram;
                dram[k] = true;
            }
            _ => {}
        }
    }
    out
}

pub(crate) fn read(lines: &[String], keep: Option<usize>) -> Trace {
    let mut s = JsonlState::new("stream");
    if let Some(k) = keep {
        s.keep(k);
    }
    for (i, l) in lines.iter().enumerate() {
        s.feed(l, i + 1);
    }
    s.snapshot()
}

fn pools(tr: &Trace) -> Vec<(String, u64)> {
    let mut v: Vec<_> = tr
        .pools
        .iter()
        .map(|p| (p.name.clone(), p.capacity_bytes))
        .collect();
    v.sort();
    v
}

/// Everything a windowed trace must share with the whole one.
fn same_stream(whole: &Trace, part: &Trace) {
    let (a, b) = (Ledger::of(whole), Ledger::of(part));
    assert_eq!(a.fields(), b.fields(), "ledger totals");
    assert_eq!(a.per_pool, b.per_pool, "ledger per pool");
    assert_eq!(
        LedgerFields::of_summary(&whole.summary),
        LedgerFields::of_summary(&part.summary)
    );
    let (s, w) = (&whole.summary, &part.summary);
    assert_eq!(s.peak_live_bytes, w.peak_live_bytes, "peak live");
    assert_eq!(s.latency_ns, w.latency_ns, "latency");
    assert_eq!(s.stall_ns, w.stall_ns, "stall");
    assert_eq!(pools(whole), pools(part), "pools");
    let r = verify(part, 5);
    assert!(r.ok(), "the window fails verify: {:?}", r.violations);
    let win = part.window().expect("a kept trace says it is a window");
    assert_eq!(
        win.events_before + part.events.len() as u64,
        whole.events.len() as u64,
        "every event is in the window or counted before it"
    );
    assert_eq!(
        win.ops_before + part.ops.len() as u64,
        whole.ops.len() as u64,
        "every op is in the window or counted before it"
    );
    let from = |tr: &Trace| tr.events.times().filter(|&t| t >= win.from_ns).count();
    assert_eq!(
        from(whole),
        from(part),
        "the window holds every event from its start"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_window_of_any_size_keeps_the_whole_streams_ledger(
        seed in any::<u64>(),
        steps in 20usize..400,
        keep in 1usize..60,
    ) {
        let lines = stream(seed, steps);
        let whole = read(&lines, None);
        prop_assume!(!whole.events.is_empty());
        let r = verify(&whole, 5);
        prop_assert!(r.ok(), "the generated stream is invalid: {:?}", r.violations);
        let part = read(&lines, Some(keep));
        same_stream(&whole, &part);
        // What it writes, it reads back: the same ledger, still valid.
        let back = Trace::from_slice(part.to_json().as_bytes()).expect("reads back");
        same_stream(&whole, &back);
        prop_assert_eq!(back.window(), part.window());
    }
}

#[test]
fn the_window_stays_bounded_and_says_what_fell_out() {
    let lines = stream(7, 20_000);
    let whole = read(&lines, None);
    let part = read(&lines, Some(100));
    same_stream(&whole, &part);
    let w = part.window().unwrap();
    assert!(w.is_trimmed());
    assert!(
        part.events.len() <= 125 + 12 && part.ops.len() <= 125 + 6,
        "{} events and {} ops held for keep 100",
        part.events.len(),
        part.ops.len()
    );
    assert!(part.tensors.len() <= 12);
    assert!(whole.events.len() > 5_000);
    assert!(w.events_before as usize >= whole.events.len() - 137);
    assert!(
        !w.total_before().is_empty(),
        "spill traffic fell out with the events"
    );
    // Unbounded, nothing says it is a window.
    assert!(whole.window().is_none());
}

#[test]
fn a_kept_tail_fed_in_pieces_equals_the_whole_file() {
    let lines = stream(11, 3_000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    let mut tail = JsonlTail::new(&path);
    tail.state.keep(50);
    for chunk in lines.chunks(97) {
        for l in chunk {
            writeln!(f, "{l}").unwrap();
        }
        f.flush().unwrap();
        tail.poll().unwrap();
    }
    let whole = read(&lines, None);
    let piecewise = tail.state.snapshot();
    same_stream(&whole, &piecewise);
    // The same file imported with the same bound: the same trace.
    let opts = spillscope::trace::import::ImportOptions {
        keep: Some(50),
        ..Default::default()
    };
    let (imported, _) = spillscope::trace::import::import(&path, None, &opts).unwrap();
    same_stream(&whole, &imported);
    assert_eq!(imported.events.len(), piecewise.events.len());
}

//! Checks a solution (ours or another tool's) and recomputes its metrics.
//! Two rule sets, first broken rule returned: the benchmark's own
//! (`rules`: ids, edges, spill numbering, offsets, L0) and the trace
//! contract's, by replaying the solution's trace in schedule order through
//! `trace::verify` (residency, overlap, capacity, use while spilled, the
//! ledger), the same checks every simulated or imported trace gets.

use super::model::{BufType, Kernel, NodeKind, Pipe};
use super::{rules, to_trace, Metrics, Solution};
use crate::cost::pipes::{pipe_times, Timed};
use crate::trace::verify::{verify, Violation};
use crate::{Error, Result};
use std::path::Path;

/// Cycles of one spill half.
pub fn spill_cycles(size: u64, out_of_copy_in: bool) -> u64 {
    if out_of_copy_in {
        0
    } else {
        2 * size + 150
    }
}

/// One stay of a buffer on chip: placed by `start` (ALLOC or SPILL_IN), left
/// by `end` (SPILL_OUT or FREE), at `offset`.
#[derive(Debug, Clone, Copy)]
struct Stay {
    buf: usize,
    offset: u64,
    start: usize,
    end: usize,
}

/// Checks `sol` and returns its metrics, or the first broken rule.
pub fn evaluate(k: &Kernel, sol: &Solution) -> std::result::Result<Metrics, Violation> {
    evaluate_timed(k, sol).map(|(m, _)| m)
}

/// [`evaluate`], also returning each node's `(start, end)` cycle (spill
/// ids included), for timelines.
pub fn evaluate_timed(
    k: &Kernel,
    sol: &Solution,
) -> std::result::Result<(Metrics, Vec<(u64, u64)>), Violation> {
    rules::check(k, sol)?;
    let replay = to_trace::schedule_replay(k, sol);
    if let Some(mut v) = verify(&replay, 1).violations.into_iter().next() {
        // Replay time is the schedule position.
        v.detail = format!("schedule line {}: {}", v.t_ns + 1, v.detail);
        return Err(v);
    }
    Ok(measure(k, sol))
}

/// The metrics and node times of a solution known to be valid (the
/// allocator's own, inside the search; [`evaluate`] checks first).
pub fn measure(k: &Kernel, sol: &Solution) -> (Metrics, Vec<(u64, u64)>) {
    let n = k.len();
    let total = n + 2 * sol.spills.len();
    let mut pos = vec![0usize; total];
    for (p, &i) in sol.order.iter().enumerate() {
        if let Some(x) = pos.get_mut(i) {
            *x = p;
        }
    }
    let (stays, peak, extra) = walk(k, sol);
    let preds = timing_edges(k, sol, &pos, &stays);
    let timed: Vec<Timed> = (0..total).map(|i| timed(k, sol, i)).collect();
    let (span, cycles) = pipe_times(&sol.order, &timed, &preds);
    let m = Metrics {
        peak_residency: peak,
        extra_traffic: extra,
        total_cycles: cycles,
        spill_count: sol.spills.len(),
    };
    (m, span)
}

/// Stays on chip, the peak L1 + UB residency (ALLOC/FREE only, spills
/// ignored, as the benchmark defines it) and the spill traffic.
fn walk(k: &Kernel, sol: &Solution) -> (Vec<Stay>, u64, u64) {
    let n = k.len();
    let mut offset: Vec<u64> = vec![0; k.buffers.len()];
    for &(buf, off) in &sol.offsets {
        if let Some(&b) = k.buf_index.get(&buf) {
            offset[b] = off;
        }
    }
    let mut open: Vec<Option<usize>> = vec![None; k.buffers.len()];
    let mut stays: Vec<Stay> = Vec::new();
    let (mut cur, mut peak, mut extra) = (0i64, 0i64, 0u64);
    for &i in &sol.order {
        let (b, placed_at) = if i >= n {
            let Some(&(buf, new_off)) = sol.spills.get((i - n) / 2) else {
                continue;
            };
            let Some(&b) = k.buf_index.get(&buf) else {
                continue;
            };
            if (i - n).is_multiple_of(2) {
                let buf = &k.buffers[b];
                extra += if buf.copy_in { buf.size } else { 2 * buf.size };
                (b, None)
            } else {
                (b, Some(new_off))
            }
        } else {
            match &k.nodes[i].kind {
                NodeKind::Alloc { buf, size, ty } => {
                    if !ty.is_l0() {
                        cur += *size as i64;
                        peak = peak.max(cur);
                    }
                    let b = k.buf_index[buf];
                    (b, Some(offset[b]))
                }
                NodeKind::Free { buf, size, ty } => {
                    if !ty.is_l0() {
                        cur -= *size as i64;
                    }
                    (k.buf_index[buf], None)
                }
                NodeKind::Op { .. } => continue,
            }
        };
        match placed_at {
            Some(off) => {
                open[b] = Some(stays.len());
                stays.push(Stay {
                    buf: b,
                    offset: off,
                    start: i,
                    end: usize::MAX,
                });
            }
            None => {
                if let Some(s) = open[b].take() {
                    stays[s].end = i;
                }
            }
        }
    }
    (stays, peak.max(0) as u64, extra)
}

/// Predecessors of every id for timing: the DAG's edges, each spill's
/// (after the last use before it, before the first use after it), and
/// address reuse (a stay starts after the stays that last held its bytes).
fn timing_edges(k: &Kernel, sol: &Solution, pos: &[usize], stays: &[Stay]) -> Vec<Vec<usize>> {
    let n = k.len();
    let mut preds: Vec<Vec<usize>> = Vec::with_capacity(pos.len());
    preds.extend(k.pred.iter().cloned());
    preds.resize(pos.len(), Vec::new());
    for (s, &(buf, _)) in sol.spills.iter().enumerate() {
        let Some(buf) = k.buf_index.get(&buf).map(|&b| &k.buffers[b]) else {
            continue;
        };
        let (o, inn) = (n + 2 * s, n + 2 * s + 1);
        preds[o].push(buf.alloc);
        preds[inn].push(o);
        preds[buf.free].push(inn);
        for &u in &buf.users {
            if pos[u] < pos[o] {
                preds[o].push(u);
            } else if pos[u] > pos[inn] {
                preds[u].push(inn);
            }
        }
    }
    for ty in BufType::ALL {
        let cap = ty.capacity() as usize;
        let mut last: Vec<Option<usize>> = vec![None; cap];
        let mut ids: Vec<usize> = (0..stays.len())
            .filter(|&s| k.buffers[stays[s].buf].ty == ty)
            .collect();
        ids.sort_by_key(|&s| pos[stays[s].start]);
        for s in ids {
            let off = (stays[s].offset as usize).min(cap);
            let size = k.buffers[stays[s].buf].size as usize;
            let mut seen: Vec<usize> = Vec::new();
            for slot in &mut last[off..(off + size).min(cap)] {
                if let Some(p) = *slot {
                    if !seen.contains(&p) {
                        seen.push(p);
                    }
                }
                *slot = Some(s);
            }
            for p in seen {
                let end = stays[p].end;
                if end != usize::MAX && end != stays[s].start {
                    preds[stays[s].start].push(end);
                }
            }
        }
    }
    preds
}

/// The pipe and cycles of id `i` (memory nodes take none).
fn timed(k: &Kernel, sol: &Solution, i: usize) -> Timed {
    let n = k.len();
    if i < n {
        return match &k.nodes[i].kind {
            NodeKind::Op { pipe, cycles, .. } => Timed {
                unit: Some(pipe.index()),
                cycles: *cycles,
            },
            _ => Timed {
                unit: None,
                cycles: 0,
            },
        };
    }
    let s = (i - n) / 2;
    let Some(buf) = sol
        .spills
        .get(s)
        .and_then(|(b, _)| k.buf_index.get(b))
        .map(|&b| &k.buffers[b])
    else {
        return Timed {
            unit: None,
            cycles: 0,
        };
    };
    if (i - n).is_multiple_of(2) {
        Timed {
            unit: Some(Pipe::Mte3.index()),
            cycles: spill_cycles(buf.size, buf.copy_in),
        }
    } else {
        Timed {
            unit: Some(Pipe::Mte2.index()),
            cycles: spill_cycles(buf.size, false),
        }
    }
}

/// Writes `schedule.txt`, `memory.txt` and `spill.txt` into `dir`.
pub fn write_solution(dir: &Path, sol: &Solution, force: bool) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let join = |v: Vec<String>| v.join("\n") + if v.is_empty() { "" } else { "\n" };
    let files = [
        (
            "schedule.txt",
            join(sol.order.iter().map(|i| i.to_string()).collect()),
        ),
        (
            "memory.txt",
            join(
                sol.offsets
                    .iter()
                    .map(|(b, o)| format!("{b}:{o}"))
                    .collect(),
            ),
        ),
        (
            "spill.txt",
            join(sol.spills.iter().map(|(b, o)| format!("{b}:{o}")).collect()),
        ),
    ];
    for (name, text) in files {
        crate::output::write_atomic(&dir.join(name), &text, force)?;
    }
    Ok(())
}

/// Reads the three files back (any tool's output).
pub fn read_solution(dir: &Path) -> Result<Solution> {
    let read = |name: &str| -> Result<String> {
        let p = dir.join(name);
        std::fs::read_to_string(&p).map_err(|e| Error::io(&p, e))
    };
    let bad = |name: &str, line: usize, what: &str| {
        Error::parse(
            dir.join(name),
            "NPU solution",
            format!("line {line}: {what}"),
        )
    };
    let mut sol = Solution::default();
    for (ln, l) in read("schedule.txt")?.lines().enumerate() {
        let l = l.trim();
        if l.is_empty() {
            continue;
        }
        sol.order.push(
            l.parse()
                .map_err(|_| bad("schedule.txt", ln + 1, "expected a node id"))?,
        );
    }
    let pairs = |name: &str, text: String| -> Result<Vec<(u32, u64)>> {
        let mut v = Vec::new();
        for (ln, l) in text.lines().enumerate() {
            let l = l.trim();
            if l.is_empty() {
                continue;
            }
            let (a, b) = l
                .split_once(':')
                .ok_or_else(|| bad(name, ln + 1, "expected BufId:Offset"))?;
            v.push((
                a.trim()
                    .parse()
                    .map_err(|_| bad(name, ln + 1, "BufId is not a number"))?,
                b.trim()
                    .parse()
                    .map_err(|_| bad(name, ln + 1, "offset is not a number"))?,
            ));
        }
        Ok(v)
    };
    sol.offsets = pairs("memory.txt", read("memory.txt")?)?;
    sol.spills = pairs("spill.txt", read("spill.txt").unwrap_or_default())?;
    Ok(sol)
}

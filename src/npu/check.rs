//! Validates a solution (ours or another tool's) against every rule of the
//! benchmark and recomputes its metrics. Each violation names its rule.

use super::model::{BufType, Kernel, NodeKind, Pipe};
use super::{Metrics, Solution};
use crate::cost::pipes::{pipe_times, Timed};
use crate::{Error, Result};
use std::path::Path;

/// A broken rule: which one, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub rule: &'static str,
    pub detail: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}", self.rule, self.detail)
    }
}

fn v(rule: &'static str, detail: String) -> Violation {
    Violation { rule, detail }
}

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
    let n = k.len();
    let total = n + 2 * sol.spills.len();
    // Every id exactly once.
    let mut pos = vec![usize::MAX; total];
    for (p, &i) in sol.order.iter().enumerate() {
        if i >= total {
            return Err(v(
                "unknown-id",
                format!(
                    "schedule line {}: node {i} does not exist (case has {n} nodes and {} spills)",
                    p + 1,
                    sol.spills.len()
                ),
            ));
        }
        if pos[i] != usize::MAX {
            return Err(v(
                "duplicate",
                format!(
                    "node {i} is scheduled twice (lines {} and {})",
                    pos[i] + 1,
                    p + 1
                ),
            ));
        }
        pos[i] = p;
    }
    if let Some(i) = (0..total).find(|&i| pos[i] == usize::MAX) {
        return Err(v("missing", format!("node {i} is not scheduled")));
    }
    // Original edges.
    for a in 0..n {
        for &b in &k.succ[a] {
            if pos[a] > pos[b] {
                return Err(v(
                    "order",
                    format!(
                        "edge {a} -> {b}: node {b} ({}) is scheduled before node {a} ({})",
                        k.nodes[b].op, k.nodes[a].op
                    ),
                ));
            }
        }
    }
    // Spill ids: the k-th SPILL_OUT in the schedule is n + 2k; IN follows OUT.
    let mut outs: Vec<(usize, usize)> =
        (0..sol.spills.len()).map(|s| (pos[n + 2 * s], s)).collect();
    outs.sort_unstable();
    for (rank, &(_, s)) in outs.iter().enumerate() {
        if rank != s {
            return Err(v("spill-ids", format!("spill {} (ids {}, {}) is the {}th SPILL_OUT in the schedule; ids must follow that order", s + 1, n + 2 * s, n + 2 * s + 1, rank + 1)));
        }
        if pos[n + 2 * s + 1] < pos[n + 2 * s] {
            return Err(v(
                "spill-pair",
                format!(
                    "SPILL_IN {} comes before its SPILL_OUT {}",
                    n + 2 * s + 1,
                    n + 2 * s
                ),
            ));
        }
    }
    // Offsets.
    let mut first = vec![None; k.buffers.len()];
    for &(buf, off) in &sol.offsets {
        let Some(&b) = k.buf_index.get(&buf) else {
            return Err(v(
                "unknown-buffer",
                format!("memory: buffer {buf} does not exist"),
            ));
        };
        if first[b].replace(off).is_some() {
            return Err(v(
                "duplicate-offset",
                format!("memory: buffer {buf} listed twice"),
            ));
        }
    }
    if let Some(b) = (0..k.buffers.len()).find(|&b| first[b].is_none()) {
        return Err(v(
            "missing-offset",
            format!("memory: no offset for buffer {}", k.buffers[b].id),
        ));
    }
    // Walk the schedule: stays, uses, capacity, L0 rule.
    let mut spill_of_buf: Vec<Vec<usize>> = vec![Vec::new(); k.buffers.len()];
    for (s, &(buf, _)) in sol.spills.iter().enumerate() {
        let Some(&b) = k.buf_index.get(&buf) else {
            return Err(v(
                "unknown-buffer",
                format!("spill {}: buffer {buf} does not exist", s + 1),
            ));
        };
        spill_of_buf[b].push(s);
    }
    #[derive(Clone, Copy, PartialEq)]
    enum St {
        NotYet,
        In(usize),
        Out,
        Freed,
    }
    let mut st = vec![St::NotYet; k.buffers.len()];
    let mut stays: Vec<Stay> = Vec::new();
    let mut resident: Vec<Vec<usize>> = vec![Vec::new(); 5]; // stay ids per pool
    let mut l0: [Option<u32>; 5] = [None; 5];
    let (mut cur, mut peak) = (0i64, 0i64);
    let mut extra = 0u64;
    let overlap = |a: &Stay, b: &Stay| {
        let (sa, sb) = (k.buffers[a.buf].size, k.buffers[b.buf].size);
        a.offset < b.offset + sb && b.offset < a.offset + sa
    };
    let open = |b: usize,
                offset: u64,
                start: usize,
                stays: &mut Vec<Stay>,
                resident: &mut Vec<Vec<usize>>|
     -> std::result::Result<usize, Violation> {
        let buf = &k.buffers[b];
        if offset + buf.size > buf.ty.capacity() {
            return Err(v(
                "capacity",
                format!(
                    "buffer {} at offset {offset} + {} passes {} capacity {}",
                    buf.id,
                    buf.size,
                    buf.ty.as_str(),
                    buf.ty.capacity()
                ),
            ));
        }
        let st_new = Stay {
            buf: b,
            offset,
            start,
            end: usize::MAX,
        };
        for &o in &resident[buf.ty.index()] {
            if overlap(&stays[o], &st_new) {
                return Err(v("overlap", format!("buffer {} at [{offset}, {}) overlaps buffer {} at [{}, {}) in {} (node {start})", buf.id, offset + buf.size, k.buffers[stays[o].buf].id, stays[o].offset, stays[o].offset + k.buffers[stays[o].buf].size, buf.ty.as_str())));
            }
        }
        stays.push(st_new);
        resident[buf.ty.index()].push(stays.len() - 1);
        Ok(stays.len() - 1)
    };
    let close = |sid: usize, end: usize, stays: &mut Vec<Stay>, resident: &mut Vec<Vec<usize>>| {
        stays[sid].end = end;
        let ty = k.buffers[stays[sid].buf].ty.index();
        resident[ty].retain(|&x| x != sid);
    };
    for &i in &sol.order {
        if i >= n {
            let s = (i - n) / 2;
            let is_out = (i - n).is_multiple_of(2);
            let (buf, new_off) = sol.spills[s];
            let b = k.buf_index[&buf];
            if k.buffers[b].ty.is_l0() {
                return Err(v(
                    "spill-l0",
                    format!(
                        "spill {} of L0 buffer {buf}: L0 buffers are not spilled",
                        s + 1
                    ),
                ));
            }
            if is_out {
                let St::In(sid) = st[b] else {
                    return Err(v(
                        "spill-pair",
                        format!("SPILL_OUT {i} of buffer {buf}, which is not resident"),
                    ));
                };
                close(sid, i, &mut stays, &mut resident);
                st[b] = St::Out;
                extra += if k.buffers[b].copy_in {
                    k.buffers[b].size
                } else {
                    2 * k.buffers[b].size
                };
            } else {
                if st[b] != St::Out {
                    return Err(v(
                        "spill-pair",
                        format!("SPILL_IN {i} of buffer {buf}, which is not spilled out"),
                    ));
                }
                let sid = open(b, new_off, i, &mut stays, &mut resident)?;
                st[b] = St::In(sid);
            }
            continue;
        }
        match &k.nodes[i].kind {
            NodeKind::Alloc { buf, size, ty } => {
                let b = k.buf_index[buf];
                if ty.is_l0() {
                    if let Some(o) = l0[ty.index()] {
                        return Err(v(
                            "l0-double",
                            format!(
                                "{} holds buffer {o} when node {i} allocates buffer {buf}",
                                ty.as_str()
                            ),
                        ));
                    }
                    l0[ty.index()] = Some(*buf);
                } else {
                    cur += *size as i64;
                    peak = peak.max(cur);
                }
                let sid = open(b, first[b].unwrap_or(0), i, &mut stays, &mut resident)?;
                st[b] = St::In(sid);
            }
            NodeKind::Free { buf, size, ty } => {
                let b = k.buf_index[buf];
                match st[b] {
                    St::In(sid) => close(sid, i, &mut stays, &mut resident),
                    _ => return Err(v("spill-pair", format!("FREE {i} of buffer {buf}, which is not resident (a SPILL_OUT without its SPILL_IN?)"))),
                }
                st[b] = St::Freed;
                if ty.is_l0() {
                    l0[ty.index()] = None;
                } else {
                    cur -= *size as i64;
                }
            }
            NodeKind::Op { bufs, .. } => {
                for buf in bufs {
                    let b = k.buf_index[buf];
                    if !matches!(st[b], St::In(_)) {
                        return Err(v(
                            "use-while-spilled",
                            format!(
                                "node {i} ({}) uses buffer {buf}, which is not resident then",
                                k.nodes[i].op
                            ),
                        ));
                    }
                }
            }
        }
    }
    let _ = St::Freed;
    // Timing over original + spill + address-reuse edges.
    let mut preds: Vec<Vec<usize>> = Vec::with_capacity(total);
    preds.extend(k.pred.iter().cloned());
    preds.resize(total, Vec::new());
    for (b, ss) in spill_of_buf.iter().enumerate() {
        let buf = &k.buffers[b];
        for &s in ss {
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
    }
    // Address reuse: the start of each stay waits for the end of the stays
    // that last held any of its bytes.
    for ty in BufType::ALL {
        let mut last: Vec<Option<usize>> = vec![None; ty.capacity() as usize];
        let mut ids: Vec<usize> = (0..stays.len())
            .filter(|&s| k.buffers[stays[s].buf].ty == ty)
            .collect();
        ids.sort_by_key(|&s| pos[stays[s].start]);
        for s in ids {
            let (off, size) = (
                stays[s].offset as usize,
                k.buffers[stays[s].buf].size as usize,
            );
            let mut seen: Vec<usize> = Vec::new();
            for slot in &mut last[off..(off + size).min(ty.capacity() as usize)] {
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
    let timed: Vec<Timed> = (0..total)
        .map(|i| {
            if i < n {
                match &k.nodes[i].kind {
                    NodeKind::Op { pipe, cycles, .. } => Timed {
                        unit: Some(pipe.index()),
                        cycles: *cycles,
                    },
                    _ => Timed {
                        unit: None,
                        cycles: 0,
                    },
                }
            } else {
                let s = (i - n) / 2;
                let b = k.buf_index[&sol.spills[s].0];
                let buf = &k.buffers[b];
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
        })
        .collect();
    // The reuse edges must agree with the schedule (a stay starts after the
    // previous holder left, which the overlap check already ensures).
    let (span, cycles) = pipe_times(&sol.order, &timed, &preds);
    Ok((
        Metrics {
            peak_residency: peak.max(0) as u64,
            extra_traffic: extra,
            total_cycles: cycles,
            spill_count: sol.spills.len(),
        },
        span,
    ))
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

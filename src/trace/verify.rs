//! Replays a trace and checks every invariant DESIGN.md lists: placements
//! never overlap or pass capacity, operands are resident while their op runs
//! (unless streamed), evict only resident tensors, reload only evicted ones,
//! events in time order. Simulator and imported traces get the same checks.

use super::{EventKind, TensorKind, Trace};
use std::collections::{BTreeMap, HashMap};

/// One broken invariant, with names a person can look up.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Violation {
    pub event_index: Option<usize>,
    pub t_ns: u64,
    pub rule: &'static str,
    pub detail: String,
}

/// The outcome of a replay.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct VerifyReport {
    pub events_checked: usize,
    pub ops_checked: usize,
    pub violations: Vec<Violation>,
    /// Violations beyond the ones kept.
    pub more: usize,
}

impl VerifyReport {
    pub fn ok(&self) -> bool {
        self.violations.is_empty()
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// Never placed, or freed.
    Gone,
    /// A valid copy exists only in DRAM.
    Dram,
    Resident {
        offset: u64,
        end: u64,
    },
}

/// Per pool: capacity and resident blocks (offset -> (end, tensor)).
type PoolState = (u64, BTreeMap<u64, (u64, usize)>);

struct Replay<'a> {
    tr: &'a Trace,
    pools: HashMap<&'a str, PoolState>,
    state: Vec<State>,
    report: VerifyReport,
    limit: usize,
}

impl<'a> Replay<'a> {
    fn tname(&self, t: usize) -> String {
        self.tr
            .tensors
            .get(t)
            .map(|x| x.name.clone())
            .unwrap_or_else(|| format!("#{t}"))
    }
    fn oname(&self, o: Option<usize>) -> String {
        match o.and_then(|o| self.tr.ops.get(o)) {
            Some(op) => format!(" during op {:?}", op.name),
            None => String::new(),
        }
    }
    fn fail(&mut self, idx: Option<usize>, t_ns: u64, rule: &'static str, detail: String) {
        if self.report.violations.len() < self.limit {
            self.report.violations.push(Violation {
                event_index: idx,
                t_ns,
                rule,
                detail,
            });
        } else {
            self.report.more += 1;
        }
    }

    fn place(&mut self, idx: usize, e: &super::Event) {
        let (t, pool, offset, bytes, t_ns, op) =
            (e.tensor, e.pool.as_str(), e.offset, e.bytes, e.t_ns, e.op);
        let Some(offset) = offset else {
            // Placement unknown (some instrumented traces): track residency only.
            self.state[t] = State::Resident {
                offset: u64::MAX,
                end: u64::MAX,
            };
            return;
        };
        let end = offset.saturating_add(bytes.max(1));
        let cap = match self.pools.get(pool) {
            Some(p) => p.0,
            None => {
                self.fail(
                    Some(idx),
                    t_ns,
                    "unknown-pool",
                    format!(
                        "tensor {:?} placed in pool {pool:?}, which the trace does not declare",
                        self.tname(t)
                    ),
                );
                self.state[t] = State::Resident { offset, end };
                return;
            }
        };
        if end > cap {
            let name = self.tname(t);
            let on = self.oname(op);
            self.fail(
                Some(idx),
                t_ns,
                "capacity",
                format!(
                    "tensor {name:?} at [{offset}, {end}) passes pool {pool:?} capacity {cap}{on}"
                ),
            );
        }
        let overlap = {
            let blocks = &self.pools[pool].1;
            let before = blocks
                .range(..end)
                .next_back()
                .filter(|(&o, &(e, _))| o < end && e > offset)
                .map(|(_, &(_, who))| who);
            before
        };
        if let Some(other) = overlap {
            let (a, b) = (self.tname(t), self.tname(other));
            let on = self.oname(op);
            self.fail(
                Some(idx),
                t_ns,
                "overlap",
                format!("tensor {a:?} at [{offset}, {end}) overlaps resident tensor {b:?}{on}"),
            );
        }
        if let Some(p) = self.pools.get_mut(pool) {
            p.1.insert(offset, (end, t));
        }
        self.state[t] = State::Resident { offset, end };
    }

    fn unplace(&mut self, t: usize, pool: &str) {
        if let State::Resident { offset, .. } = self.state[t] {
            if let Some(p) = self.pools.get_mut(pool) {
                if p.1.get(&offset).map(|x| x.1) == Some(t) {
                    p.1.remove(&offset);
                }
            }
        }
    }

    fn check_op(&mut self, o: usize) {
        let op = &self.tr.ops[o];
        for &t in op.inputs.iter().chain(op.outputs.iter()) {
            if op.streamed.contains(&t) {
                continue;
            }
            if !matches!(self.state.get(t), Some(State::Resident { .. })) {
                let (tn, on) = (self.tname(t), op.name.clone());
                self.fail(None, op.start_ns, "operand-not-resident", format!("op {on:?} starts but its operand {tn:?} is not resident (and not listed in `streamed`)"));
            }
        }
        // A streamed output is written to DRAM by its op and lives on there.
        for &t in &op.streamed {
            if op.outputs.contains(&t)
                && t < self.state.len()
                && !matches!(self.state[t], State::Resident { .. })
            {
                self.state[t] = State::Dram;
            }
        }
    }
}

/// Replays `tr`; keeps the first `limit` violations.
pub fn verify(tr: &Trace, limit: usize) -> VerifyReport {
    let mut r = Replay {
        tr,
        pools: tr
            .pools
            .iter()
            .map(|p| (p.name.as_str(), (p.capacity_bytes, BTreeMap::new())))
            .collect(),
        state: tr
            .tensors
            .iter()
            .map(|t| {
                if matches!(t.kind, TensorKind::Weight | TensorKind::Input) {
                    State::Dram
                } else {
                    State::Gone
                }
            })
            .collect(),
        report: VerifyReport::default(),
        limit: limit.max(1),
    };
    let nt = tr.tensors.len();
    // Op starts are checkpoints: an op is checked once every event at or
    // before its start that belongs to it (or an earlier op) has been applied.
    let mut order: Vec<usize> = (0..tr.ops.len()).collect();
    order.sort_by_key(|&o| (tr.ops[o].start_ns, o));
    let mut next_op = 0usize;
    // Operands of running ops may not be evicted or freed mid-op.
    let mut running: Vec<usize> = Vec::new();
    let mut last_t = 0u64;
    for (idx, e) in tr.events.iter().enumerate() {
        while next_op < order.len() {
            let o = order[next_op];
            let s = tr.ops[o].start_ns;
            let belongs_later = e.op.map(|eo| eo > o).unwrap_or(false);
            if s < e.t_ns || (s == e.t_ns && belongs_later) {
                r.check_op(o);
                running.push(o);
                next_op += 1;
            } else {
                break;
            }
        }
        running.retain(|&o| tr.ops[o].end_ns > e.t_ns);
        r.report.events_checked += 1;
        if e.t_ns < last_t {
            r.fail(
                Some(idx),
                e.t_ns,
                "time-order",
                format!("event at {} ns comes after one at {last_t} ns", e.t_ns),
            );
        }
        last_t = last_t.max(e.t_ns);
        if e.tensor >= nt {
            r.fail(
                Some(idx),
                e.t_ns,
                "unknown-tensor",
                format!(
                    "event refers to tensor id {}, the trace has {nt} tensors",
                    e.tensor
                ),
            );
            continue;
        }
        let t = e.tensor;
        let name = r.tname(t);
        let on = r.oname(e.op);
        if let (Some(s), Some(en)) = (e.dma_start_ns, e.dma_end_ns) {
            if en < s {
                r.fail(
                    Some(idx),
                    e.t_ns,
                    "dma-time",
                    format!(
                        "{} of {name:?}: DMA ends at {en} before it starts at {s}",
                        e.kind.as_str()
                    ),
                );
            }
        }
        match e.kind {
            EventKind::Alloc => {
                if matches!(r.state[t], State::Resident { .. }) {
                    r.fail(
                        Some(idx),
                        e.t_ns,
                        "double-alloc",
                        format!("alloc of {name:?}, which is already resident{on}"),
                    );
                    r.unplace(t, &e.pool);
                }
                r.place(idx, e);
            }
            EventKind::Reload => {
                match r.state[t] {
                    State::Dram => {}
                    State::Resident { .. } => {
                        r.fail(
                            Some(idx),
                            e.t_ns,
                            "reload-not-evicted",
                            format!("reload of {name:?}, which is resident{on}"),
                        );
                        r.unplace(t, &e.pool);
                    }
                    State::Gone => r.fail(
                        Some(idx),
                        e.t_ns,
                        "reload-not-evicted",
                        format!("reload of {name:?}, which was never evicted{on}"),
                    ),
                }
                r.place(idx, e);
            }
            EventKind::Recompute => {
                if matches!(r.state[t], State::Resident { .. }) {
                    r.unplace(t, &e.pool);
                }
                r.place(idx, e);
            }
            EventKind::Evict | EventKind::Free => {
                if !matches!(r.state[t], State::Resident { .. }) {
                    let rule = if e.kind == EventKind::Evict {
                        "evict-not-resident"
                    } else {
                        "free-not-resident"
                    };
                    r.fail(
                        Some(idx),
                        e.t_ns,
                        rule,
                        format!("{} of {name:?}, which is not resident{on}", e.kind.as_str()),
                    );
                }
                for &o in &running {
                    let op = &tr.ops[o];
                    let operand = op.inputs.contains(&t) || op.outputs.contains(&t);
                    if operand
                        && !op.streamed.contains(&t)
                        && e.t_ns > op.start_ns
                        && e.t_ns < op.end_ns
                    {
                        let opn = op.name.clone();
                        r.fail(
                            Some(idx),
                            e.t_ns,
                            "operand-removed-mid-op",
                            format!(
                                "{} of {name:?} while op {opn:?} that uses it is running",
                                e.kind.as_str()
                            ),
                        );
                    }
                }
                r.unplace(t, &e.pool);
                r.state[t] = if e.kind == EventKind::Evict {
                    State::Dram
                } else {
                    State::Gone
                };
            }
        }
    }
    while next_op < order.len() {
        r.check_op(order[next_op]);
        next_op += 1;
    }
    r.report.ops_checked = tr.ops.len();
    r.report
}

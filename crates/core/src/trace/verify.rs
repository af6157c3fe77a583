//! Replays a trace and checks every invariant of the contract
//! (docs/trace-format.md): placements never overlap or pass capacity,
//! operands are resident while their op runs (unless streamed, with their
//! stream events), evict only resident tensors and drop one only when DRAM
//! holds a current copy, reload and stream in only such a copy, events in
//! time order, and every ledger field of the summary equals the events'
//! sum. Simulator and imported traces get the same checks.

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

impl Violation {
    /// A broken rule found outside a replay (no event, no time).
    pub fn new(rule: &'static str, detail: String) -> Self {
        Violation {
            event_index: None,
            t_ns: 0,
            rule,
            detail,
        }
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}", self.rule, self.detail)
    }
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
    /// DRAM holds a current copy (graph inputs and weights start there;
    /// a write-back or stream out puts one there; producing a value on chip
    /// means DRAM has none yet).
    dram: Vec<bool>,
    /// `(op, tensor)` of every stream event seen.
    streams: std::collections::HashSet<(usize, usize)>,
    report: VerifyReport,
    limit: usize,
}

impl<'a> Replay<'a> {
    fn tname(&self, t: usize) -> String {
        self.tr
            .tensors
            .get(t)
            .map(|x| x.name.to_string())
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

    fn place(&mut self, idx: usize, e: &super::EventRef<'_>) {
        let (t, pool, offset, bytes, t_ns, op) =
            (e.tensor, e.pool, e.offset, e.bytes, e.t_ns, e.op);
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
        // A compiler's in-place output (Vela's elementwise ops) may take
        // memory of an operand its op reads for the last time.
        let in_place = |other: usize| {
            e.reason == Some(super::residency::IN_PLACE)
                && op.is_some_and(|o| {
                    self.tr
                        .ops
                        .get(o)
                        .is_some_and(|x| x.inputs.contains(&other))
                })
        };
        if let Some(other) = overlap.filter(|&o| !in_place(o)) {
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
        let op = &self.tr.ops.at(o);
        for &t in op.inputs.iter().chain(op.outputs.iter()) {
            if op.streamed.contains(&t) {
                continue;
            }
            if !matches!(self.state.get(t), Some(State::Resident { .. })) {
                let (tn, on) = (self.tname(t), op.name);
                self.fail(None, op.start_ns, "operand-not-resident", format!("op {on:?} starts but its operand {tn:?} is not resident (and not listed in `streamed`)"));
            }
        }
        // A streamed output is written to DRAM by its op and lives on there.
        for &t in op.streamed {
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
    let starts_in_dram =
        |t: super::TensorRef| matches!(t.kind, TensorKind::Weight | TensorKind::Input);
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
                if starts_in_dram(t) {
                    State::Dram
                } else {
                    State::Gone
                }
            })
            .collect(),
        dram: tr.tensors.iter().map(starts_in_dram).collect(),
        streams: Default::default(),
        report: VerifyReport::default(),
        limit: limit.max(1),
    };
    if let Some(w) = tr.window() {
        // A window of a longer stream: DRAM's copies from before it.
        for &t in &w.in_dram_before {
            if let Some(d) = r.dram.get_mut(t) {
                *d = true;
            }
        }
    }
    // Op starts are checkpoints: an op is checked once every event at or
    // before its start that belongs to it (or an earlier op) has been applied.
    let mut order: Vec<usize> = (0..tr.ops.len()).collect();
    order.sort_by_key(|&o| (tr.ops.at(o).start_ns, o));
    let mut next_op = 0usize;
    // Operands of running ops may not be evicted or freed mid-op.
    let mut running: Vec<usize> = Vec::new();
    let mut last_t = 0u64;
    for (idx, e) in tr.events.iter().enumerate() {
        while next_op < order.len() {
            let o = order[next_op];
            let s = tr.ops.at(o).start_ns;
            let belongs_later = e.op.map(|eo| eo > o).unwrap_or(false);
            if s < e.t_ns || (s == e.t_ns && belongs_later) {
                r.check_op(o);
                running.push(o);
                next_op += 1;
            } else {
                break;
            }
        }
        running.retain(|&o| tr.ops.at(o).end_ns > e.t_ns);
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
        r.apply(idx, &e, &running);
    }
    while next_op < order.len() {
        r.check_op(order[next_op]);
        next_op += 1;
    }
    r.check_streams();
    r.check_ledger();
    r.report.ops_checked = tr.ops.len();
    r.report
}

/// Whether DRAM holds a current copy of a tensor of `kind` after event
/// `e`, given whether it did before: a value produced on chip has none
/// yet; streaming it out or writing it back on eviction makes one. The one
/// rule, shared by the replay here and a stream window's trimming.
pub(crate) fn dram_after(kind: TensorKind, dram: bool, e: &super::EventRef<'_>) -> bool {
    match e.kind {
        EventKind::Alloc => dram && matches!(kind, TensorKind::Weight | TensorKind::Input),
        EventKind::StreamOut => true,
        EventKind::Evict => dram || super::ledger::Ledger::bytes(e) > 0,
        _ => dram,
    }
}

impl Replay<'_> {
    /// Applies one event, checking the rules that concern it.
    fn apply(&mut self, idx: usize, e: &super::EventRef<'_>, running: &[usize]) {
        let tr = self.tr;
        if e.tensor >= tr.tensors.len() {
            self.fail(
                Some(idx),
                e.t_ns,
                "unknown-tensor",
                format!(
                    "event refers to tensor id {}, the trace has {} tensors",
                    e.tensor,
                    tr.tensors.len()
                ),
            );
            return;
        }
        let t = e.tensor;
        let name = self.tname(t);
        let on = self.oname(e.op);
        if let (Some(s), Some(en)) = (e.dma_start_ns, e.dma_end_ns) {
            if en < s {
                self.fail(
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
                if matches!(self.state[t], State::Resident { .. }) {
                    self.fail(
                        Some(idx),
                        e.t_ns,
                        "double-alloc",
                        format!("alloc of {name:?}, which is already resident{on}"),
                    );
                    self.unplace(t, e.pool);
                }
                self.place(idx, e);
            }
            EventKind::Reload => {
                match self.state[t] {
                    State::Resident { .. } => {
                        self.fail(
                            Some(idx),
                            e.t_ns,
                            "reload-not-evicted",
                            format!("reload of {name:?}, which is resident{on}"),
                        );
                        self.unplace(t, e.pool);
                    }
                    _ if !self.dram[t] => self.fail(
                        Some(idx),
                        e.t_ns,
                        "reload-not-evicted",
                        format!("reload of {name:?}, which DRAM holds no current copy of{on}"),
                    ),
                    _ => {}
                }
                self.place(idx, e);
            }
            EventKind::Recompute => {
                if matches!(self.state[t], State::Resident { .. }) {
                    self.unplace(t, e.pool);
                }
                self.place(idx, e);
            }
            EventKind::StreamIn => {
                if !self.dram[t] {
                    self.fail(
                        Some(idx),
                        e.t_ns,
                        "stream-in-not-in-dram",
                        format!("stream_in of {name:?}, which DRAM holds no current copy of{on}"),
                    );
                }
                if let Some(o) = e.op {
                    self.streams.insert((o, t));
                }
            }
            EventKind::StreamOut => {
                if !matches!(self.state[t], State::Resident { .. }) {
                    self.state[t] = State::Dram;
                }
                if let Some(o) = e.op {
                    self.streams.insert((o, t));
                }
            }
            EventKind::Evict | EventKind::Free => self.remove(idx, e, running),
        }
        self.dram[t] = dram_after(tr.tensors.at(t).kind, self.dram[t], e);
    }

    /// `evict` or `free` of a resident tensor, never of a running op's
    /// operand; an eviction that writes nothing back needs a current DRAM copy.
    fn remove(&mut self, idx: usize, e: &super::EventRef<'_>, running: &[usize]) {
        let (t, tr) = (e.tensor, self.tr);
        let name = self.tname(t);
        let on = self.oname(e.op);
        if !matches!(self.state[t], State::Resident { .. }) {
            let rule = if e.kind == EventKind::Evict {
                "evict-not-resident"
            } else {
                "free-not-resident"
            };
            self.fail(
                Some(idx),
                e.t_ns,
                rule,
                format!("{} of {name:?}, which is not resident{on}", e.kind.as_str()),
            );
        }
        for &o in running {
            let op = &tr.ops.at(o);
            let operand = op.inputs.contains(&t) || op.outputs.contains(&t);
            if operand && !op.streamed.contains(&t) && e.t_ns > op.start_ns && e.t_ns < op.end_ns {
                let opn = op.name;
                self.fail(
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
        if e.kind == EventKind::Evict {
            let wrote = super::ledger::Ledger::bytes(e);
            if wrote == 0 && !self.dram[t] {
                self.fail(
                    Some(idx),
                    e.t_ns,
                    "evict-without-writeback",
                    format!(
                        "evict of {name:?} writes nothing back, and DRAM holds no current copy{on}"
                    ),
                );
            }
        }
        self.unplace(t, e.pool);
        self.state[t] = if e.kind == EventKind::Evict {
            State::Dram
        } else {
            State::Gone
        };
    }

    /// Every operand an op lists in `streamed` has a stream event of that op.
    fn check_streams(&mut self) {
        let tr = self.tr;
        if self.streams.is_empty() && tr.ops.iter().any(|o| !o.streamed.is_empty()) {
            // A trace from before stream events: one line says so.
            self.fail(
                None,
                0,
                "stream-event-missing",
                "ops list streamed operands but the trace has no stream events (written before the ledger; re-simulate or re-import it)".into(),
            );
            return;
        }
        for o in &tr.ops {
            for &t in o.streamed {
                if !self.streams.contains(&(o.id, t)) {
                    let name = self.tname(t);
                    self.fail(
                        None,
                        o.start_ns,
                        "stream-event-missing",
                        format!("op {:?} streams {name:?} without a stream event", o.name),
                    );
                }
            }
        }
    }

    /// Every ledger field of the summary equals the events' sum, and the
    /// lower bound is not above the traffic.
    fn check_ledger(&mut self) {
        let tr = self.tr;
        let mut wrong: Vec<super::ledger::Mismatch> = tr.recomputed.clone();
        wrong.extend(super::ledger::Ledger::of(tr).mismatches(&tr.summary));
        for m in wrong {
            self.fail(
                None,
                0,
                "ledger",
                format!(
                    "summary.{} is {}, the events add up to {}",
                    m.field, m.stored, m.events
                ),
            );
        }
        let s = &tr.summary;
        if s.lower_bound_traffic_bytes > s.traffic_bytes {
            self.fail(
                None,
                0,
                "bound-above-traffic",
                format!(
                    "summary.lower_bound_traffic_bytes {} is above traffic_bytes {}",
                    s.lower_bound_traffic_bytes, s.traffic_bytes
                ),
            );
        }
    }
}

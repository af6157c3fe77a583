//! Capacity vs lifetime (scheduling) spills. A spill is a *capacity* spill
//! when the live bytes at that step exceed the pool; otherwise it would have
//! fit and is a *lifetime* spill (fragmentation, late free, order). The
//! split covers exactly the ledger's evicted-out part: its counts and
//! bytes (write-backs) add up to `spill_count` and `spilled_bytes`.

use crate::trace::ledger::{Ledger, Part};
use crate::trace::{EventKind, TensorKind, Trace};
use crate::units::fmt_bytes;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SpillClass {
    Capacity,
    Lifetime,
}

/// One classified eviction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassifiedSpill {
    pub event: usize,
    /// What it wrote back (its part of `spilled_bytes`).
    pub written_bytes: u64,
    pub tensor: usize,
    pub op: Option<usize>,
    pub class: SpillClass,
    pub live_bytes: u64,
    pub capacity_bytes: u64,
    /// The simulator's reason, where recorded (`fragmentation`, `capacity`, `stream`).
    pub cause: String,
}

/// Totals of the split: counts add up to `spill_count`, bytes (written
/// back) to `spilled_bytes`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Classification {
    pub spills: Spills,
    pub capacity_count: usize,
    pub lifetime_count: usize,
    pub capacity_bytes: u64,
    pub lifetime_bytes: u64,
}

/// The classified evictions in event (time) order, 9 bytes each: the
/// event's index, its class and its cause as an id into one list of
/// distinct causes. What the event itself says (bytes written back, tensor,
/// op, live bytes, the pool's capacity) is read from the trace when a row
/// is asked for: a row held whole cost about 150 bytes with its cause's
/// string (194 MB for a 10M-event trace's 1.25 million evictions, held
/// twice while the first frame's split gave way to the complete one).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Spills {
    event: Vec<u32>,
    class: Vec<SpillClass>,
    cause: Vec<u32>,
    causes: Vec<String>,
    /// The lifetime spills' numbers, in event order: a view that marks
    /// them finds the next one without walking the capacity spills (the
    /// memory map at the whole run read every spill of a 10M-event trace,
    /// 10 ms a frame).
    lifetime: Vec<u32>,
}

impl Spills {
    pub fn len(&self) -> usize {
        self.event.len()
    }

    pub fn is_empty(&self) -> bool {
        self.event.is_empty()
    }

    /// The event index of spill `k`.
    pub fn event(&self, k: usize) -> usize {
        self.event[k] as usize
    }

    pub fn class(&self, k: usize) -> SpillClass {
        self.class[k]
    }

    /// The simulator's reason or the named cause of spill `k`.
    pub fn cause(&self, k: usize) -> &str {
        &self.causes[self.cause[k] as usize]
    }

    /// The first spill whose event is at or after index `event`.
    pub fn from_event(&self, event: usize) -> usize {
        self.event.partition_point(|&e| (e as usize) < event)
    }

    /// The first lifetime spill whose event is at or after index `event`,
    /// as a place in the lifetime spills ([`Spills::lifetime_spill`]).
    pub fn lifetime_from_event(&self, event: usize) -> usize {
        (self.lifetime).partition_point(|&k| (self.event[k as usize] as usize) < event)
    }

    /// The spill at place `j` of the lifetime spills, if there is one.
    pub fn lifetime_spill(&self, j: usize) -> Option<usize> {
        self.lifetime.get(j).map(|&k| k as usize)
    }

    /// The lifetime spills' numbers from their classes.
    fn index_lifetime(&mut self) {
        let lifetime = (self.class.iter().enumerate())
            .filter(|(_, &c)| c == SpillClass::Lifetime)
            .map(|(k, _)| k as u32);
        self.lifetime = lifetime.collect();
    }

    /// Spill `k` whole, its figures read from `tr` (the trace it was
    /// classified from).
    pub fn row(&self, tr: &Trace, k: usize) -> ClassifiedSpill {
        let i = self.event(k);
        let e = tr.events.at(i);
        let (live, cap) = live_and_capacity(tr, &e);
        ClassifiedSpill {
            event: i,
            written_bytes: Ledger::bytes(&e),
            tensor: e.tensor,
            op: e.op,
            class: self.class(k),
            live_bytes: live,
            capacity_bytes: cap,
            cause: self.cause(k).to_string(),
        }
    }

    /// Every row, in event order.
    pub fn rows<'a>(&'a self, tr: &'a Trace) -> impl Iterator<Item = ClassifiedSpill> + 'a {
        (0..self.len()).map(move |k| self.row(tr, k))
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.event.capacity() * 4
            + self.class.capacity()
            + self.cause.capacity() * 4
            + self.causes.iter().map(|c| c.capacity() + 24).sum::<usize>()
    }
}

/// The classification kept beside a cached trace (a second open
/// classifies nothing), as columns.
impl Classification {
    pub(crate) fn encode<W: std::io::Write>(
        &self,
        w: &mut crate::trace::columnar::Writer<W>,
    ) -> std::io::Result<()> {
        let counts = [self.capacity_count as u64, self.lifetime_count as u64];
        w.u64s(
            4,
            counts
                .into_iter()
                .chain([self.capacity_bytes, self.lifetime_bytes]),
        )?;
        let s = &self.spills;
        w.u64s(1, std::iter::once(s.len() as u64))?;
        w.u32s(s.len(), s.event.iter().copied())?;
        let tag = |c: &SpillClass| *c as u8;
        w.u8s(s.len(), s.class.iter().map(tag))?;
        w.u32s(s.len(), s.cause.iter().copied())?;
        w.u64s(1, std::iter::once(s.causes.len() as u64))?;
        w.strs(s.causes.len(), s.causes.iter().map(String::as_str))
    }

    /// A classification [`Classification::encode`] wrote of a trace of
    /// `events` events (each spill's event and cause checked).
    pub(crate) fn decode(
        r: &mut crate::trace::columnar::Reader,
        events: usize,
    ) -> Result<Classification, String> {
        let c = r.u64s(4, "classification counts")?;
        let n = r.count("classified spills")?;
        let event = r.u32s(n, "classified spill events")?.to_vec();
        let class = r.tags(n, "spill classes", |t| match t {
            0 => Some(SpillClass::Capacity),
            1 => Some(SpillClass::Lifetime),
            _ => None,
        })?;
        let cause = r.u32s(n, "spill causes")?.to_vec();
        let k = r.count("spill causes")?;
        let names = r.strs(k, "spill causes")?;
        let causes: Vec<String> = (0..k).map(|i| names.get(i).to_string()).collect();
        if event.iter().any(|&e| e as usize >= events) || cause.iter().any(|&c| c as usize >= k) {
            return Err("classified spills: an event or cause out of range".into());
        }
        let mut spills = Spills {
            event,
            class,
            cause,
            causes,
            lifetime: Vec::new(),
        };
        spills.index_lifetime();
        Ok(Classification {
            spills,
            capacity_count: c[0] as usize,
            lifetime_count: c[1] as usize,
            capacity_bytes: c[2],
            lifetime_bytes: c[3],
        })
    }
}

/// Builds [`Spills`], keeping each distinct cause once.
#[derive(Default)]
struct SpillsBuilder {
    out: Spills,
    ids: HashMap<String, u32>,
}

impl SpillsBuilder {
    fn push(&mut self, event: usize, class: SpillClass, cause: &str) {
        let id = match self.ids.get(cause) {
            Some(&id) => id,
            None => {
                let id = self.out.causes.len() as u32;
                self.out.causes.push(cause.to_string());
                self.ids.insert(cause.to_string(), id);
                id
            }
        };
        // Event indexes fit: a trace's events are counted in u32 ids.
        self.out.event.push(event as u32);
        self.out.class.push(class);
        self.out.cause.push(id);
    }

    fn finish(mut self) -> Spills {
        self.out.event.shrink_to_fit();
        self.out.class.shrink_to_fit();
        self.out.cause.shrink_to_fit();
        self.out.index_lifetime();
        self.out
    }
}

/// Live bytes at an eviction (its own record, else the counter) and its
/// pool's capacity.
fn live_and_capacity(tr: &Trace, e: &crate::trace::EventRef<'_>) -> (u64, u64) {
    let cap = tr
        .pools
        .iter()
        .find(|p| p.name == e.pool)
        .map(|p| p.capacity_bytes)
        .unwrap_or(u64::MAX);
    let live = e.live_bytes.or_else(|| live_at(tr, e.t_ns)).unwrap_or(0);
    (live, cap)
}

/// Live bytes at time `t` from the `live_bytes` counter (last sample at or before `t`).
fn live_at(tr: &Trace, t: u64) -> Option<u64> {
    let c = tr.counters.iter().find(|c| c.name == "live_bytes")?;
    let i = c.samples.partition_point(|s| s.0 <= t);
    c.samples.get(i.checked_sub(1)?).map(|s| s.1 as u64)
}

/// What was on chip at one eviction, from replaying the events before it.
struct Residency<'a> {
    /// Per pool: offset -> (end, tensor).
    pools: HashMap<&'a str, BTreeMap<u64, (u64, usize)>>,
    at: HashMap<usize, (&'a str, u64)>,
}

impl<'a> Residency<'a> {
    /// Applies event `e`, held in `pool` (a name borrowed from the trace's
    /// events, which outlive the replay).
    fn apply(&mut self, e: &crate::trace::EventRef<'_>, pool: &'a str) {
        match e.kind {
            EventKind::Alloc | EventKind::Reload | EventKind::Recompute => {
                if let Some(off) = e.offset {
                    self.pools
                        .entry(pool)
                        .or_default()
                        .insert(off, (off + e.bytes, e.tensor));
                    self.at.insert(e.tensor, (pool, off));
                }
            }
            EventKind::Free | EventKind::Evict => {
                if let Some((pool, off)) = self.at.remove(&e.tensor) {
                    if let Some(m) = self.pools.get_mut(pool) {
                        m.remove(&off);
                    }
                }
            }
            EventKind::StreamIn | EventKind::StreamOut => {}
        }
    }

    /// Largest hole and free bytes of `pool` (capacity `cap`).
    fn holes(&self, pool: &str, cap: u64) -> (u64, u64) {
        let (mut largest, mut free, mut cursor) = (0u64, 0u64, 0u64);
        if let Some(m) = self.pools.get(pool) {
            for (&off, &(end, _)) in m {
                let gap = off.saturating_sub(cursor);
                largest = largest.max(gap);
                free += gap;
                cursor = cursor.max(end);
            }
        }
        let tail = cap.saturating_sub(cursor);
        (largest.max(tail), free + tail)
    }
}

/// Names the cause of a lifetime spill: the hole that was too small for the
/// request, or a tensor still resident after its last use (freed late).
fn lifetime_cause(tr: &Trace, res: &Residency, i: usize, cap: u64) -> Option<String> {
    let e = &tr.events.at(i);
    let name = |t: usize| tr.tensors.get(t).map(|x| x.name).unwrap_or("?").to_string();
    // The request this eviction made room for: the next placement at the same time.
    let request = tr
        .events
        .range(i..tr.events.len())
        .take_while(|x| x.t_ns == e.t_ns)
        .find(|x| {
            matches!(
                x.kind,
                EventKind::Alloc | EventKind::Reload | EventKind::Recompute
            ) && x.pool == e.pool
        });
    let (largest, free) = res.holes(e.pool, cap);
    if let Some(r) = request {
        if largest < r.bytes && free >= r.bytes {
            return Some(format!(
                "fragmentation: largest hole {} < {} needed for {} ({} free in all)",
                crate::units::fmt_bytes_precise(largest),
                crate::units::fmt_bytes_precise(r.bytes),
                name(r.tensor),
                fmt_bytes(free)
            ));
        }
    }
    let op = e.op?;
    let late = res
        .pools
        .get(e.pool)?
        .values()
        .filter_map(|&(end, t)| {
            let x = tr.tensors.get(t)?;
            let last = *x.consumers.iter().max()?;
            (x.kind != TensorKind::Output && x.kind != TensorKind::Weight && last < op)
                .then_some((end, t, last))
        })
        .max_by_key(|&(_, t, _)| tr.tensors.at(t).bytes)?;
    Some(format!(
        "late free: {} ({}) still resident after its last use at op {}",
        name(late.1),
        fmt_bytes(tr.tensors.at(late.1).bytes),
        late.2
    ))
}

/// The split with the recorded reasons only (fast: what the explorer's
/// first frame needs).
pub fn classify(tr: &Trace, ledger: &Ledger) -> Classification {
    classify_impl(tr, ledger, false)
}

/// The split with each lifetime spill's cause named (the hole that was too
/// small, or a tensor freed late), from a replay of the events.
pub fn classify_with_causes(tr: &Trace, ledger: &Ledger) -> Classification {
    classify_impl(tr, ledger, true)
}

fn classify_impl(tr: &Trace, ledger: &Ledger, causes: bool) -> Classification {
    let mut out = Classification::default();
    let mut res = Residency {
        pools: HashMap::new(),
        at: HashMap::new(),
    };
    let mut replayed = 0usize;
    let mut spills = SpillsBuilder::default();
    // Only evictions are classified: their rows alone are built.
    for i in 0..tr.events.len() {
        if ledger.part(i) != Some(Part::EvictedOut) {
            continue;
        }
        let e = tr.events.at(i);
        let written = Ledger::bytes(&e);
        let (live, cap) = live_and_capacity(tr, &e);
        let class = if live > cap {
            SpillClass::Capacity
        } else {
            SpillClass::Lifetime
        };
        let detail = if causes && class == SpillClass::Lifetime {
            // Replay up to this eviction (events are in time order).
            for j in replayed..i {
                res.apply(&tr.events.at(j), tr.events.pool(j));
            }
            replayed = i;
            lifetime_cause(tr, &res, i, cap)
        } else {
            None
        };
        match class {
            SpillClass::Capacity => {
                out.capacity_count += 1;
                out.capacity_bytes += written;
            }
            SpillClass::Lifetime => {
                out.lifetime_count += 1;
                out.lifetime_bytes += written;
            }
        }
        let cause = match (&detail, e.reason) {
            (Some(d), _) => d.as_str(),
            (None, Some(r)) => r,
            (None, None) => match class {
                SpillClass::Capacity => "capacity",
                SpillClass::Lifetime => "order or fragmentation",
            },
        };
        spills.push(i, class, cause);
    }
    out.spills = spills.finish();
    out
}

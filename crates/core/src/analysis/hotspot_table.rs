//! The hotspot table an open trace keeps: every op's row, or the rows
//! grouped by op name. A row per op stored whole cost 216 bytes (81 MB at
//! 375,000 ops); the table keeps what the ledger and the events add to the
//! op's own fields, as narrow sparse columns ([`super::op_figures`]), and
//! assembles a row when it is asked for (a screen's worth at a time, or
//! once per row to sort).

use super::hotspots::{
    group_by_name, in_order, latency_ns, names_repeat, op_figures, order_hotspots, row, sort_value,
    Hotspot, HotspotKey, SortValue,
};
use super::op_figures::FigureTable;
use crate::trace::ledger::Ledger;
use crate::trace::Trace;
use std::sync::Arc;

/// Hotspot rows: every op's, made from the trace on demand, or rows held
/// whole (grouped by name, or none).
#[derive(Debug, Clone)]
pub struct Hotspots(Rows);

#[derive(Debug, Clone)]
enum Rows {
    PerOp {
        trace: Arc<Trace>,
        figures: FigureTable,
        latency: f64,
    },
    Held(Vec<Hotspot>),
}

impl Default for Hotspots {
    fn default() -> Self {
        Hotspots(Rows::Held(Vec::new()))
    }
}

impl Hotspots {
    /// Every op's hotspot, in op order (the figures of
    /// [`super::hotspots::hotspots`], one row each).
    pub fn of(trace: &Arc<Trace>, ledger: &Ledger) -> Hotspots {
        let figures = op_figures(trace, ledger);
        Hotspots(Rows::PerOp {
            latency: latency_ns(trace),
            trace: trace.clone(),
            figures,
        })
    }

    /// Rows held as they are.
    pub fn from_rows(rows: Vec<Hotspot>) -> Hotspots {
        Hotspots(Rows::Held(rows))
    }

    pub fn len(&self) -> usize {
        match &self.0 {
            Rows::PerOp { figures, .. } => figures.len(),
            Rows::Held(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes the table holds (the trace it reads not counted): the
    /// per-op figure docs/memory.md quotes.
    pub fn heap_bytes(&self) -> usize {
        match &self.0 {
            Rows::PerOp { figures, .. } => figures.heap_bytes(),
            Rows::Held(v) => v.capacity() * std::mem::size_of::<Hotspot>(),
        }
    }

    /// Row `i` (op `i`'s, for every op's table).
    pub fn get(&self, i: usize) -> Option<Hotspot> {
        match &self.0 {
            Rows::PerOp {
                trace,
                figures,
                latency,
            } => (i < figures.len()).then(|| row(trace, i, &figures.at(i), *latency, true)),
            Rows::Held(v) => v.get(i).cloned(),
        }
    }

    /// The rows in order, each made as it is reached.
    pub fn iter(&self) -> impl Iterator<Item = Hotspot> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }

    /// The rows grouped by op name ([`super::hotspots::by_name`]) when
    /// some name is called more than once; empty otherwise.
    pub fn by_name_if_repeated(&self) -> Hotspots {
        let repeated = match &self.0 {
            Rows::PerOp { trace, .. } => names_repeat(trace.ops.iter().map(|o| o.name)),
            Rows::Held(v) => names_repeat(v.iter().map(|h| h.name.as_str())),
        };
        match repeated {
            true => Hotspots::from_rows(group_by_name(self.iter())),
            false => Hotspots::default(),
        }
    }

    /// Display order (row indices) by `key`, largest first unless
    /// `ascending`, ties by op: as [`order_hotspots`] on the rows.
    pub fn order(&self, key: HotspotKey, ascending: bool) -> Vec<usize> {
        let (trace, figures, latency) = match &self.0 {
            Rows::Held(v) => return order_hotspots(v, key, ascending),
            Rows::PerOp {
                trace,
                figures,
                latency,
            } => (trace, figures, *latency),
        };
        // Each row's value once, the type borrowed from the trace: a row
        // per comparison would copy names n log n times.
        let values: Vec<(SortValue, usize)> = (0..figures.len())
            .map(|i| {
                let h = row(trace, i, &figures.at(i), latency, false);
                (sort_value(&h, trace.ops.at(i).op_type, key), h.op)
            })
            .collect();
        let mut idx: Vec<usize> = (0..values.len()).collect();
        idx.sort_by(|&a, &b| {
            let ((va, oa), (vb, ob)) = (&values[a], &values[b]);
            in_order(va, vb, ascending).then(oa.cmp(ob))
        });
        idx
    }
}

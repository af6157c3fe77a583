//! A trace's ops held as columns (struct of arrays), as its events are
//! ([`super::Events`]): one vector per field, op types and units interned,
//! the operand lists as one array of ids with offsets, optional fields
//! stored only once some op carries them. What an op costs:
//!
//! | column                         | bytes per op                             |
//! |--------------------------------|------------------------------------------|
//! | `name`                         | 24 (inline up to 24 bytes, else + heap)  |
//! | `op_type`, `unit`              | 4 each (dictionary ids; `unit` 0 until some op has one) |
//! | `start_ns`, `end_ns`, `stall_ns` | 8 each                                 |
//! | `inputs`, `outputs`, `streamed` | 8 each (an offset) + 8 per id           |
//! | `bound`                        | 1                                        |
//! | `id`                           | 0 while every op's id is its index, else 8 |
//! | `flops`, `parent`, `self_ns`, `contention_ns` | 0 until some op has it, then 3/16 per op and 8 per value|
//!
//! The vector of [`TraceOp`] rows it replaced held 232 bytes of struct per
//! op and a heap allocation for each non-empty id list. Readers take rows
//! as [`OpRef`] values ([`Ops::at`], [`Ops::iter`]): the same field names,
//! borrowing the strings and lists, so nothing is copied to read an op.
//! Writers push owned [`TraceOp`] rows; the JSON is the same array of
//! objects, written and read one op at a time.

use super::columnar::{bound_of, bound_tag, Reader, Writer};
use super::{Bound, CompactString, TraceOp, Unit};
use crate::cols::{own_index, row_list, Dictionary, IdLists, Lazy, Names, OptCol, Slab};
use serde::Serialize;
use std::collections::HashMap;

/// One op, borrowed from the columns: what [`TraceOp`] holds, with its
/// strings and id lists borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct OpRef<'a> {
    pub id: usize,
    pub name: &'a str,
    pub op_type: &'a str,
    pub start_ns: u64,
    pub end_ns: u64,
    pub stall_ns: u64,
    pub inputs: &'a [usize],
    pub outputs: &'a [usize],
    pub streamed: &'a [usize],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flops: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound: Option<Bound>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<&'a Unit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contention_ns: Option<u64>,
}

impl OpRef<'_> {
    /// The op as an owned row (to change it and push or set it back).
    pub fn owned(&self) -> TraceOp {
        TraceOp {
            id: self.id,
            name: self.name.into(),
            op_type: self.op_type.into(),
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            stall_ns: self.stall_ns,
            inputs: self.inputs.to_vec(),
            outputs: self.outputs.to_vec(),
            streamed: self.streamed.to_vec(),
            flops: self.flops,
            bound: self.bound,
            unit: self.unit.cloned(),
            parent: self.parent,
            self_ns: self.self_ns,
            contention_ns: self.contention_ns,
        }
    }
}

impl TraceOp {
    /// The row borrowed as the columns lend it.
    pub fn row(&self) -> OpRef<'_> {
        OpRef {
            id: self.id,
            name: &self.name,
            op_type: &self.op_type,
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            stall_ns: self.stall_ns,
            inputs: &self.inputs,
            outputs: &self.outputs,
            streamed: &self.streamed,
            flops: self.flops,
            bound: self.bound,
            unit: self.unit.as_ref(),
            parent: self.parent,
            self_ns: self.self_ns,
            contention_ns: self.contention_ns,
        }
    }
}

/// An op's inputs by op id, from the columns or from rows still being
/// built (an importer's list of [`TraceOp`]).
pub trait OpInputs {
    fn inputs_of(&self, op: usize) -> Option<&[usize]>;
}

impl OpInputs for Ops {
    fn inputs_of(&self, op: usize) -> Option<&[usize]> {
        (op < self.len()).then(|| self.inputs.get(op))
    }
}

impl OpInputs for [TraceOp] {
    fn inputs_of(&self, op: usize) -> Option<&[usize]> {
        self.get(op).map(|o| &o.inputs[..])
    }
}

impl OpInputs for Vec<TraceOp> {
    fn inputs_of(&self, op: usize) -> Option<&[usize]> {
        self[..].inputs_of(op)
    }
}

/// Units (pipes, cores), each stored once; id 0 is "no unit".
#[derive(Debug, Clone, Default)]
struct Units {
    list: Vec<Unit>,
    ids: HashMap<CompactString, u32>,
}

impl Units {
    fn id(&mut self, u: Option<&str>) -> u32 {
        let Some(u) = u else { return 0 };
        if let Some(&i) = self.ids.get(u) {
            return i;
        }
        self.list.push(Unit(u.into()));
        let i = self.list.len() as u32;
        self.ids.insert(u.into(), i);
        i
    }

    fn get(&self, id: u32) -> Option<&Unit> {
        id.checked_sub(1).and_then(|i| self.list.get(i as usize))
    }
}

/// No unit (the `unit` column's default).
fn no_unit(_: usize) -> u32 {
    0
}

/// A trace's ops, in trace order (see the module's doc).
#[derive(Clone, Default)]
pub struct Ops {
    /// Empty while every op's id is its index.
    id: Lazy<usize>,
    name: Names,
    op_type: Slab<u32>,
    start_ns: Slab<u64>,
    end_ns: Slab<u64>,
    stall_ns: Slab<u64>,
    inputs: IdLists,
    outputs: IdLists,
    streamed: IdLists,
    bound: Vec<Option<Bound>>,
    /// Empty until some op has a unit.
    unit: Lazy<u32>,
    flops: OptCol,
    parent: OptCol,
    self_ns: OptCol,
    contention_ns: OptCol,
    types: Dictionary,
    units: Units,
}

row_list!(Ops, OpRef, TraceOp, "an array of ops");

impl Ops {
    pub fn new() -> Ops {
        Ops::default()
    }

    pub fn len(&self) -> usize {
        self.name.len()
    }

    /// Whether every op's id is its row (no id column kept).
    pub fn ids_are_rows(&self) -> bool {
        self.id.vals.is_empty()
    }

    /// Op `i` as a row. Panics when `i` is out of range, like indexing.
    pub fn at(&self, i: usize) -> OpRef<'_> {
        OpRef {
            id: self.id.get(i, own_index),
            name: self.name.get(i),
            op_type: self.types.name(self.op_type[i]),
            start_ns: self.start_ns[i],
            end_ns: self.end_ns[i],
            stall_ns: self.stall_ns[i],
            inputs: self.inputs.get(i),
            outputs: self.outputs.get(i),
            streamed: self.streamed.get(i),
            flops: self.flops.get(i).map(f64::from_bits),
            bound: self.bound[i],
            unit: self.units.get(self.unit.get(i, no_unit)),
            parent: self.parent.get(i).map(|p| p as usize),
            self_ns: self.self_ns.get(i),
            contention_ns: self.contention_ns.get(i),
        }
    }

    /// Appends an op.
    pub fn push(&mut self, o: TraceOp) {
        self.push_fields(&o.row());
        self.name.push(&o.name);
    }

    /// Appends an op from a borrowed row (its name copied).
    pub fn push_ref(&mut self, r: OpRef<'_>) {
        self.push_fields(&r);
        self.name.push(r.name);
    }

    /// Every column of a push but the name.
    fn push_fields(&mut self, r: &OpRef<'_>) {
        let i = self.len();
        self.id.push(i, r.id, own_index);
        self.start_ns.push(r.start_ns);
        self.end_ns.push(r.end_ns);
        self.stall_ns.push(r.stall_ns);
        self.inputs.push(r.inputs);
        self.outputs.push(r.outputs);
        self.streamed.push(r.streamed);
        self.bound.push(r.bound);
        self.push_rest(i, OpRest::of(r));
    }

    /// Appends `other`'s ops after these (a part parsed on its own).
    pub fn append(&mut self, other: Ops) {
        let (rows, n) = (self.len(), other.len());
        let types = self.types.ids_of(&other.types);
        let units: Vec<u32> = std::iter::once(0)
            .chain(
                other
                    .units
                    .list
                    .iter()
                    .map(|u| self.units.id(Some(u.as_str()))),
            )
            .collect();
        self.id.append(rows, &other.id, n, own_index, |v| v);
        self.op_type
            .extend(other.op_type.iter().map(|&t| types[t as usize]));
        self.start_ns.extend_from_slice(&other.start_ns);
        self.end_ns.extend_from_slice(&other.end_ns);
        self.stall_ns.extend_from_slice(&other.stall_ns);
        self.inputs.append(&other.inputs);
        self.outputs.append(&other.outputs);
        self.streamed.append(&other.streamed);
        self.bound.extend_from_slice(&other.bound);
        self.unit
            .append(rows, &other.unit, n, no_unit, |u| units[u as usize]);
        let theirs = [
            &other.flops,
            &other.parent,
            &other.self_ns,
            &other.contention_ns,
        ];
        for (mine, theirs) in self.opt_cols_mut().into_iter().zip(theirs) {
            mine.append(rows, theirs);
        }
        self.name.append(&other.name);
    }

    /// Appends op `i`'s interned and optional fields (what [`Ops::push`]
    /// and [`Ops::push_ref`] append one op at a time).
    fn push_rest(&mut self, i: usize, r: OpRest<'_>) {
        let t = self.types.id(r.op_type);
        self.op_type.push(t);
        let unit = self.units.id(r.unit);
        self.unit.push(i, unit, no_unit);
        self.flops.push(i, r.flops.map(f64::to_bits));
        self.parent.push(i, r.parent.map(|p| p as u64));
        self.self_ns.push(i, r.self_ns);
        self.contention_ns.push(i, r.contention_ns);
    }

    /// For [`Ops::update`]: scalars change in place; a changed operand
    /// list needs the columns rebuilt (rare: only fixing up a trace moves
    /// operands).
    fn set_in_place(&mut self, i: usize, before: &TraceOp, o: &TraceOp) -> bool {
        // Names are one blob: a renamed op rebuilds it, as a changed list
        // rebuilds its column.
        let lists_same = o.inputs == before.inputs
            && o.outputs == before.outputs
            && o.streamed == before.streamed
            && o.name == before.name;
        if !lists_same {
            return false;
        }
        let n = self.len();
        self.id.set(i, n, o.id, own_index);
        self.op_type[i] = self.types.id(&o.op_type);
        self.start_ns[i] = o.start_ns;
        self.end_ns[i] = o.end_ns;
        self.stall_ns[i] = o.stall_ns;
        self.bound[i] = o.bound;
        let unit = self.units.id(o.unit.as_ref().map(Unit::as_str));
        self.unit.set(i, n, unit, no_unit);
        self.flops.set(i, o.flops.map(f64::to_bits));
        self.parent.set(i, o.parent.map(|p| p as u64));
        self.self_ns.set(i, o.self_ns);
        self.contention_ns.set(i, o.contention_ns);
        true
    }

    pub fn truncate(&mut self, n: usize) {
        if n >= self.len() {
            return;
        }
        for v in [&mut self.start_ns, &mut self.end_ns, &mut self.stall_ns] {
            v.truncate(n);
        }
        self.id.truncate(n);
        self.name.truncate(n);
        self.op_type.truncate(n);
        self.bound.truncate(n);
        self.unit.truncate(n);
        for l in [&mut self.inputs, &mut self.outputs, &mut self.streamed] {
            l.truncate(n);
        }
        for c in self.opt_cols_mut() {
            c.truncate(n);
        }
    }

    fn opt_cols_mut(&mut self) -> [&mut OptCol; 4] {
        [
            &mut self.flops,
            &mut self.parent,
            &mut self.self_ns,
            &mut self.contention_ns,
        ]
    }

    /// Gives back the columns' unused room (after loading).
    pub fn shrink_to_fit(&mut self) {
        for v in [&mut self.start_ns, &mut self.end_ns, &mut self.stall_ns] {
            v.shrink_to_fit();
        }
        self.id.shrink();
        self.name.shrink();
        self.op_type.shrink_to_fit();
        self.bound.shrink_to_fit();
        self.unit.shrink();
        for l in [&mut self.inputs, &mut self.outputs, &mut self.streamed] {
            l.shrink();
        }
        for c in self.opt_cols_mut() {
            c.shrink();
        }
    }

    /// Heap bytes the columns hold (their capacity, the dictionaries at
    /// 64 bytes a name): the figure docs/memory.md quotes per op.
    pub fn heap_bytes(&self) -> usize {
        let lists: usize = [&self.inputs, &self.outputs, &self.streamed]
            .iter()
            .map(|l| l.heap_bytes())
            .sum();
        let opt: usize = [
            &self.flops,
            &self.parent,
            &self.self_ns,
            &self.contention_ns,
        ]
        .iter()
        .map(|c| c.heap_bytes())
        .sum();
        (self.start_ns.capacity() + self.end_ns.capacity() + self.stall_ns.capacity()) * 8
            + self.id.heap_bytes()
            + self.name.heap_bytes()
            + self.op_type.capacity() * 4
            + self.unit.heap_bytes()
            + self.bound.capacity()
            + lists
            + opt
            + (self.types.len() + self.units.list.len()) * 64
    }

    /// The largest tensor id an op's operand lists name.
    pub fn max_operand(&self) -> Option<usize> {
        let lists = [&self.inputs, &self.outputs, &self.streamed];
        lists.iter().flat_map(|l| l.ids.iter().copied().max()).max()
    }

    /// Whether any op has a parent (the column is kept only once one does).
    pub fn has_parents(&self) -> bool {
        !self.parent.vals.is_empty()
    }

    /// Whether any op's own time is given apart from its children's.
    pub fn has_self_times(&self) -> bool {
        !self.self_ns.vals.is_empty()
    }

    /// Whether every op's parent, where it has one, comes before it.
    pub fn parents_before(&self) -> bool {
        self.parent.vals.is_empty()
            || (0..self.len()).all(|i| self.parent.get(i).is_none_or(|p| (p as usize) < i))
    }

    /// Every op's parent, in op order, read from its column alone (no
    /// row built: what a walk over millions of ops wants).
    pub fn parents(&self) -> impl Iterator<Item = Option<usize>> + '_ {
        self.parent
            .rows(0, self.len())
            .map(|p| p.map(|p| p as usize))
    }

    /// Every op's start (a column, for loops that need no whole row).
    pub fn start_col(&self) -> &[u64] {
        &self.start_ns
    }

    /// Every op's end.
    pub fn end_col(&self) -> &[u64] {
        &self.end_ns
    }

    /// Every op's stall.
    pub fn stall_col(&self) -> &[u64] {
        &self.stall_ns
    }
}

/// An op's interned and optional fields, appended one op at a time.
pub(crate) struct OpRest<'a> {
    pub op_type: &'a str,
    pub unit: Option<&'a str>,
    pub flops: Option<f64>,
    pub parent: Option<usize>,
    pub self_ns: Option<u64>,
    pub contention_ns: Option<u64>,
}

impl<'a> OpRest<'a> {
    fn of<'b>(o: &'b OpRef<'a>) -> OpRest<'a> {
        OpRest {
            op_type: o.op_type,
            unit: o.unit.map(Unit::as_str),
            flops: o.flops,
            parent: o.parent,
            self_ns: o.self_ns,
            contention_ns: o.contention_ns,
        }
    }
}

impl Ops {
    /// The columns as they are held, for the binary cache
    /// ([`super::columnar`]): reading them back is a copy per column, no
    /// row assembled and no type or unit interned again.
    pub(super) fn encode<W: std::io::Write>(&self, w: &mut Writer<W>) -> std::io::Result<()> {
        let n = self.len();
        w.u64s(1, std::iter::once(n as u64))?;
        w.counted(self.id.vals.iter().map(|&v| v as u64))?;
        w.names(&self.name)?;
        w.dict(&self.types)?;
        w.u32s(n, self.op_type.iter().copied())?;
        w.u64s(n, self.start_ns.iter().copied())?;
        w.u64s(n, self.end_ns.iter().copied())?;
        w.u64s(n, self.stall_ns.iter().copied())?;
        w.id_lists(&self.inputs)?;
        w.id_lists(&self.outputs)?;
        w.id_lists(&self.streamed)?;
        w.u8s(n, self.bound.iter().map(|&b| bound_tag(b)))?;
        let units = &self.units.list;
        w.u64s(1, std::iter::once(units.len() as u64))?;
        w.strs(units.len(), units.iter().map(|u| u.as_str()))?;
        w.counted(self.unit.vals.iter().map(|&u| u64::from(u)))?;
        for c in [
            &self.flops,
            &self.parent,
            &self.self_ns,
            &self.contention_ns,
        ] {
            w.opt_col(c, n)?;
        }
        Ok(())
    }

    /// What [`Ops::encode`] wrote, every length, tag, type and unit id
    /// checked (references are the trace's checks).
    pub(super) fn decode(r: &mut Reader) -> Result<Ops, String> {
        let n = r.count("ops")?;
        let id = r.counted(n, "op ids")?;
        let name = r.names(n, "op names")?;
        let types = r.dict("op types")?;
        let op_type = r.ids_below(n, types.len(), "op type ids")?;
        let start_ns = r.u64s(n, "op starts")?;
        let end_ns = r.u64s(n, "op ends")?;
        let stall_ns = r.u64s(n, "op stalls")?;
        let inputs = r.id_lists(n, "op inputs")?;
        let outputs = r.id_lists(n, "op outputs")?;
        let streamed = r.id_lists(n, "op streamed operands")?;
        let bound = r.tags(n, "op bounds", bound_of)?;
        let k = r.count("op units")?;
        let strs = r.strs(k, "op units")?;
        let mut units = Units::default();
        for i in 0..k {
            units.id(Some(strs.get(i)));
        }
        if units.list.len() != k {
            return Err("op units: a unit named twice".into());
        }
        let unit = r.counted(n, "op unit ids")?;
        if let Some(bad) = unit.iter().find(|&&u| u > k as u64) {
            return Err(format!("op unit ids: {bad} of {k}"));
        }
        let mut opt = [(); 4].map(|_| OptCol::default());
        for (c, what) in
            opt.iter_mut()
                .zip(["op flops", "op parents", "op self times", "op contention"])
        {
            *c = r.opt_col(n, what)?;
        }
        let [flops, parent, self_ns, contention_ns] = opt;
        Ok(Ops {
            id: Lazy::of_u64s(id),
            name,
            op_type,
            start_ns,
            end_ns,
            stall_ns,
            inputs,
            outputs,
            streamed,
            bound,
            unit: Lazy {
                vals: unit.iter().map(|&u| u as u32).collect(),
            },
            flops,
            parent,
            self_ns,
            contention_ns,
            types,
            units,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_op() -> impl Strategy<Value = TraceOp> {
        let ids = || proptest::collection::vec(0usize..50, 0..4);
        (
            (
                0usize..8,
                "[a-z]{0,30}",
                prop::sample::select(vec!["Conv", "Add", ""]),
            ),
            (0u64..1000, 0u64..1000, 0u64..50),
            (ids(), ids(), ids()),
            (
                proptest::option::of(0.0f64..1e9),
                prop::sample::select(vec![None, Some(Bound::Compute), Some(Bound::Memory)]),
                proptest::option::of(prop::sample::select(vec!["CUBE", "VECTOR"])),
            ),
            (
                proptest::option::of(0usize..8),
                proptest::option::of(0u64..99),
                proptest::option::of(0u64..99),
            ),
        )
            .prop_map(
                |((id, name, ty), (s, e, st), (i, o, m), (f, b, u), (p, sn, c))| TraceOp {
                    id,
                    name: name.into(),
                    op_type: ty.into(),
                    start_ns: s,
                    end_ns: e,
                    stall_ns: st,
                    inputs: i,
                    outputs: o,
                    streamed: m,
                    flops: f,
                    bound: b,
                    unit: u.map(|u| Unit(u.into())),
                    parent: p,
                    self_ns: sn,
                    contention_ns: c,
                },
            )
    }

    proptest! {
        /// Every row comes back as pushed, the JSON is the row vector's
        /// byte for byte and reads back to the same columns.
        #[test]
        fn columns_hold_what_rows_held(rows in proptest::collection::vec(arb_op(), 0..20)) {
            let ops: Ops = rows.iter().cloned().collect();
            prop_assert_eq!(ops.len(), rows.len());
            for (i, r) in rows.iter().enumerate() {
                prop_assert_eq!(ops.at(i).owned(), r.clone());
                prop_assert_eq!(ops.at(i), r.row());
            }
            let json = serde_json::to_string(&ops).unwrap();
            prop_assert_eq!(&json, &serde_json::to_string(&rows).unwrap());
            let back: Ops = serde_json::from_str(&json).unwrap();
            prop_assert_eq!(&back, &ops);
            let rev: Vec<TraceOp> = ops.iter().rev().map(|o| o.owned()).collect();
            let mut want = rows.clone();
            want.reverse();
            prop_assert_eq!(rev, want);
        }

        /// Changing one op changes that op only, lists included; cutting
        /// keeps the rows before the cut.
        #[test]
        fn an_update_or_a_cut_changes_only_what_it_names(
            rows in proptest::collection::vec(arb_op(), 1..12),
            new in arb_op(),
            at in 0usize..12,
            cut in 0usize..14,
        ) {
            let at = at % rows.len();
            let mut ops: Ops = rows.iter().cloned().collect();
            ops.update(at, |o| *o = new.clone());
            let mut want = rows.clone();
            want[at] = new.clone();
            prop_assert_eq!(&ops, &want.iter().cloned().collect::<Ops>());
            for (i, w) in want.iter().enumerate() {
                prop_assert_eq!(ops.at(i).owned(), w.clone());
            }
            ops.truncate(cut);
            want.truncate(cut);
            prop_assert_eq!(ops.iter().map(|o| o.owned()).collect::<Vec<_>>(), want.clone());
            // What is pushed after a cut lands where the cut left off.
            ops.push(new.clone());
            want.push(new);
            prop_assert_eq!(ops.iter().map(|o| o.owned()).collect::<Vec<_>>(), want);
        }
    }

    /// An op type or unit is stored once however many ops name it, and an
    /// op whose id is its index costs no id.
    #[test]
    fn repeated_names_and_plain_ids_cost_nothing_per_op() {
        let mut ops = Ops::new();
        for i in 0..1000 {
            let mut o = TraceOp::span(format!("op{i}"), "Conv", i, i + 1);
            o.id = i as usize;
            o.unit = Some(Unit("CUBE".into()));
            ops.push(o);
        }
        assert_eq!((ops.types.len(), ops.units.list.len()), (2, 1));
        assert!(ops.id.vals.is_empty());
        assert_eq!(ops.at(999).id, 999);
        let mut odd = TraceOp::span("x", "Add", 0, 1);
        odd.id = 7;
        ops.push(odd);
        assert_eq!(ops.id.vals.len(), 1001);
        assert_eq!((ops.at(999).id, ops.at(1000).id), (999, 7));
    }
}

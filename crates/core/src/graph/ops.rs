//! A graph's ops held as columns (struct of arrays), as a trace's are: a
//! 10^6-op model is loaded, simulated and bounded on the board it runs
//! on, where a vector of [`Op`] rows (136 bytes of struct and two heap
//! lists each) did not fit. What an op costs:
//!
//! | column               | bytes per op                                   |
//! |----------------------|------------------------------------------------|
//! | `name`               | its length + 8 (one blob with ends)            |
//! | `op_type`, `unit`    | 4 each (dictionary ids; `unit` 0 until some op has one) |
//! | `inputs`, `outputs`  | 8 each (an offset) + 8 per id                  |
//! | `flops`              | 8                                              |
//! | `id`                 | 0 while every op's id is its index, else 8     |
//!
//! Readers take rows as [`OpRef`] values ([`Ops::at`], [`Ops::iter`]): the
//! same field names as [`Op`], borrowing the strings and lists. Writers
//! push owned [`Op`] rows, or change them through [`Ops::update`].

use super::{Op, OpId, TensorId};
use crate::cols::{own_index, row_list, Dictionary, IdLists, Lazy, Names};
use serde::Serialize;

/// One op, borrowed from the columns: what [`Op`] holds, its strings and
/// lists borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct OpRef<'a> {
    pub id: OpId,
    pub name: &'a str,
    pub op_type: &'a str,
    pub inputs: &'a [TensorId],
    pub outputs: &'a [TensorId],
    pub flops: f64,
    pub unit: Option<&'a str>,
}

impl OpRef<'_> {
    /// The op as an owned row (to change it, or push it elsewhere).
    pub fn owned(&self) -> Op {
        Op {
            id: self.id,
            name: self.name.into(),
            op_type: self.op_type.into(),
            inputs: self.inputs.to_vec(),
            outputs: self.outputs.to_vec(),
            flops: self.flops,
            unit: self.unit.map(str::to_string),
        }
    }
}

impl Op {
    /// The row borrowed as the columns lend it.
    pub fn row(&self) -> OpRef<'_> {
        OpRef {
            id: self.id,
            name: &self.name,
            op_type: &self.op_type,
            inputs: &self.inputs,
            outputs: &self.outputs,
            flops: self.flops,
            unit: self.unit.as_deref(),
        }
    }
}

/// No unit (the `unit` column's default; units are dictionary ids from 1).
fn no_unit(_: usize) -> u32 {
    0
}

/// A graph's ops in schedule order (see the module's doc).
#[derive(Clone, Default)]
pub struct Ops {
    /// Empty while every op's id is its index.
    id: Lazy<usize>,
    name: Names,
    op_type: Vec<u32>,
    inputs: IdLists,
    outputs: IdLists,
    flops: Vec<f64>,
    /// Empty until some op has a unit.
    unit: Lazy<u32>,
    types: Dictionary,
    units: Dictionary,
}

row_list!(Ops, OpRef, Op, "an array of ops");

impl Ops {
    pub fn new() -> Ops {
        Ops::default()
    }

    pub fn len(&self) -> usize {
        self.name.len()
    }

    /// Op `i`'s name (what a lookup by name compares).
    #[inline]
    pub fn name(&self, i: usize) -> &str {
        self.name.get(i)
    }

    /// Op `i`'s inputs (one field, for hot loops).
    #[inline]
    pub fn inputs(&self, i: usize) -> &[TensorId] {
        self.inputs.get(i)
    }

    #[inline]
    pub fn outputs(&self, i: usize) -> &[TensorId] {
        self.outputs.get(i)
    }

    #[inline]
    pub fn flops(&self, i: usize) -> f64 {
        self.flops[i]
    }

    /// Op `i` as a row. Panics when `i` is out of range, like indexing.
    #[inline]
    pub fn at(&self, i: usize) -> OpRef<'_> {
        let unit = self.unit.get(i, no_unit);
        OpRef {
            id: self.id.get(i, own_index),
            name: self.name.get(i),
            op_type: self.types.name(self.op_type[i]),
            inputs: self.inputs.get(i),
            outputs: self.outputs.get(i),
            flops: self.flops[i],
            unit: (unit != 0).then(|| self.units.name(unit)),
        }
    }

    /// Appends an op.
    pub fn push(&mut self, o: Op) {
        self.push_row(o.row());
    }

    /// Appends an op from a borrowed row (another graph's, say).
    pub fn push_row(&mut self, r: OpRef<'_>) {
        let i = self.len();
        self.id.push(i, r.id, own_index);
        self.name.push(r.name);
        let t = self.types.id(r.op_type);
        self.op_type.push(t);
        self.inputs.push(r.inputs);
        self.outputs.push(r.outputs);
        self.flops.push(r.flops);
        let u = r.unit.map_or(0, |u| self.units.id(u));
        self.unit.push(i, u, no_unit);
    }

    /// Sets op `i`'s FLOPs (the builder estimates them once every
    /// tensor is known).
    pub fn set_flops(&mut self, i: usize, flops: f64) {
        self.flops[i] = flops;
    }

    /// Sets operand `slot` of op `i`'s inputs (or outputs): the builder
    /// resolves a name declared after its op.
    pub(crate) fn set_operand(&mut self, i: usize, output: bool, slot: usize, t: TensorId) {
        match output {
            true => self.outputs.set(i, slot, t),
            false => self.inputs.set(i, slot, t),
        }
    }

    /// For [`Ops::update`]: the type, unit and FLOPs change in place; a
    /// changed name, id or operand list needs the columns rebuilt.
    fn set_in_place(&mut self, i: usize, before: &Op, o: &Op) -> bool {
        let in_place = o.name == before.name
            && o.id == before.id
            && o.inputs == before.inputs
            && o.outputs == before.outputs;
        if !in_place {
            return false;
        }
        let n = self.len();
        self.op_type[i] = self.types.id(&o.op_type);
        self.flops[i] = o.flops;
        let u = o.unit.as_deref().map_or(0, |u| self.units.id(u));
        self.unit.set(i, n, u, no_unit);
        true
    }

    /// Gives back the columns' unused room (after building).
    pub fn shrink_to_fit(&mut self) {
        self.id.shrink();
        self.name.shrink();
        self.op_type.shrink_to_fit();
        self.inputs.shrink();
        self.outputs.shrink();
        self.flops.shrink_to_fit();
        self.unit.shrink();
    }

    /// Heap bytes the columns hold (the dictionaries at 64 bytes a name):
    /// the figure docs/memory.md quotes per op.
    pub fn heap_bytes(&self) -> usize {
        self.id.heap_bytes()
            + self.name.heap_bytes()
            + self.op_type.capacity() * 4
            + self.inputs.heap_bytes()
            + self.outputs.heap_bytes()
            + self.flops.capacity() * 8
            + self.unit.heap_bytes()
            + (self.types.len() + self.units.len()) * 64
    }
}

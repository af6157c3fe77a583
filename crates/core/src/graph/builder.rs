//! Turns named ops and tensors (as every front end sees them) into a checked
//! [`Graph`]: resolves names, links producers and consumers, rejects dangling
//! references and cycles with the culprit named, and fixes a schedule order.

use super::{Graph, OpId, OpRef, Ops, TensorKind, TensorRef, Tensors};
use crate::cols::IdLists;
use crate::limits;
use crate::{Error, Result};
use compact_str::CompactString;
use hashbrown::HashTable;
use std::hash::BuildHasher;

/// A tensor as declared by a front end.
#[derive(Debug, Clone)]
pub struct TensorSpec {
    pub name: CompactString,
    pub bytes: u64,
    /// `Some(kind)` when the front end knows it (inputs, weights, outputs);
    /// activations are inferred.
    pub kind: Option<TensorKind>,
    pub shape: Option<Vec<u64>>,
    pub dtype: Option<CompactString>,
}

/// An op as declared by a front end; operands by tensor name.
#[derive(Debug, Clone)]
pub struct OpSpec {
    pub name: CompactString,
    pub op_type: CompactString,
    pub inputs: Vec<CompactString>,
    pub outputs: Vec<CompactString>,
    /// FLOPs if the front end knows them; otherwise estimated from shapes.
    pub flops: Option<f64>,
}

/// Names to ids without a second copy of each name: the table holds ids
/// (4 bytes each) and hashes and compares the names where they are
/// stored. A map from owned names cost about 50 bytes a tensor at 10^6.
/// The hash is hashbrown's seeded default (foldhash): growing the table
/// hashes every name again, which SipHash made a tenth of loading a
/// 10^6-op graph.
#[derive(Default)]
struct NameIndex {
    ids: HashTable<u32>,
    state: hashbrown::DefaultHashBuilder,
}

impl NameIndex {
    fn find<'a>(&self, name: &str, names: impl Fn(usize) -> &'a str) -> Option<usize> {
        let h = self.state.hash_one(name);
        self.ids
            .find(h, |&i| names(i as usize) == name)
            .map(|&i| i as usize)
    }

    /// Adds id `i` under `name` unless the name is there: then its id.
    fn insert<'a>(
        &mut self,
        i: usize,
        name: &str,
        names: impl Fn(usize) -> &'a str,
    ) -> Option<usize> {
        if let Some(j) = self.find(name, &names) {
            return Some(j);
        }
        let h = self.state.hash_one(name);
        let state = &self.state;
        self.ids
            .insert_unique(h, i as u32, |&j| state.hash_one(names(j as usize)));
        None
    }
}

/// An operand whose tensor was not declared when its op was: resolved by
/// name when the graph is built.
struct Pending {
    op: usize,
    output: bool,
    slot: usize,
    name: CompactString,
}

/// No tensor yet (an operand still [`Pending`]), no producer.
const NONE: usize = usize::MAX;

/// Collects specs, then [`GraphBuilder::build`] checks and links them.
/// Specs are kept as the graph's own columns as they arrive (names in one
/// blob, operands resolved to ids when their tensors are known), so
/// building a 10^6-op graph holds little beyond the graph it makes.
#[derive(Default)]
pub struct GraphBuilder {
    name: String,
    /// Declared tensors in declaration order; kinds, producers and
    /// consumers are set by [`GraphBuilder::build`].
    tensors: Tensors,
    declared: Vec<Option<TensorKind>>,
    index: NameIndex,
    /// The first tensor declared twice (its second declaration).
    twice: Option<usize>,
    /// Ops in file order, FLOPs 0 where the front end gave none.
    ops: Ops,
    flops_known: Vec<bool>,
    op_index: NameIndex,
    /// The first op whose name was used before.
    op_twice: Option<usize>,
    pending: Vec<Pending>,
    outputs: Vec<String>,
    /// Tensor count and bytes past what 32-bit ids can hold: refused.
    too_many: bool,
}

impl std::fmt::Debug for GraphBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphBuilder")
            .field("name", &self.name)
            .field("tensors", &self.tensors.len())
            .field("ops", &self.ops.len())
            .finish()
    }
}

impl GraphBuilder {
    pub fn new(name: impl Into<String>) -> Self {
        GraphBuilder {
            name: name.into(),
            ..Default::default()
        }
    }
    /// Names the graph (a file that names itself overrides its file name).
    pub fn set_name(&mut self, name: impl Into<String>) -> &mut Self {
        self.name = name.into();
        self
    }
    pub fn tensor(&mut self, spec: TensorSpec) -> &mut Self {
        let i = self.tensors.len();
        if i >= u32::MAX as usize {
            self.too_many = true;
            return self;
        }
        let tensors = &self.tensors;
        let seen = self.index.insert(i, &spec.name, |j| tensors.name(j));
        if seen.is_some() && self.twice.is_none() {
            self.twice = Some(i);
        }
        self.tensors.push_row(TensorRef {
            id: i,
            name: &spec.name,
            bytes: spec.bytes,
            kind: spec.kind.unwrap_or(TensorKind::Activation),
            shape: spec.shape.as_deref(),
            dtype: spec.dtype.as_deref(),
            producer: None,
            consumers: &[],
        });
        self.declared.push(spec.kind);
        self
    }
    pub fn op(&mut self, spec: OpSpec) -> &mut Self {
        let i = self.ops.len();
        if i >= u32::MAX as usize {
            self.too_many = true;
            return self;
        }
        let ops = &self.ops;
        if self
            .op_index
            .insert(i, &spec.name, |j| ops.name(j))
            .is_some()
            && self.op_twice.is_none()
        {
            self.op_twice = Some(i);
        }
        let mut resolve = |names: &[CompactString], output: bool| -> Vec<usize> {
            let tensors = &self.tensors;
            names
                .iter()
                .enumerate()
                .map(|(slot, n)| {
                    self.index.find(n, |j| tensors.name(j)).unwrap_or_else(|| {
                        self.pending.push(Pending {
                            op: i,
                            output,
                            slot,
                            name: n.clone(),
                        });
                        NONE
                    })
                })
                .collect()
        };
        let inputs = resolve(&spec.inputs, false);
        let outputs = resolve(&spec.outputs, true);
        self.ops.push_row(OpRef {
            id: i,
            name: &spec.name,
            op_type: &spec.op_type,
            inputs: &inputs,
            outputs: &outputs,
            flops: spec.flops.unwrap_or(0.0),
            unit: None,
        });
        self.flops_known.push(spec.flops.is_some());
        self
    }
    /// Marks a tensor as a graph output (live to the end).
    pub fn output(&mut self, name: impl Into<String>) -> &mut Self {
        self.outputs.push(name.into());
        self
    }

    /// Resolves what is left of the names, checks sizes (see
    /// [`crate::limits`]) and orders the ops, with the culprit named on
    /// failure: tensors or ops declared twice, an operand or output never
    /// declared, a tensor produced twice or an input produced, a cycle.
    pub fn build(mut self) -> Result<Graph> {
        if self.too_many {
            return Err(Error::Config(format!(
                "graph {:?}: more than {} tensors or ops, the most spillscope holds",
                self.name,
                u32::MAX - 1
            )));
        }
        if let Some(i) = self.twice {
            return Err(Error::Tensor {
                tensor: self.tensors.at(i).name.into(),
                detail: "declared twice".into(),
            });
        }
        check_total_bytes(&self.tensors)?;
        if let Some(i) = self.op_twice {
            return Err(Error::Node {
                node: self.ops.at(i).name.into(),
                detail: "op name used twice".into(),
            });
        }
        self.resolve_pending()?;
        let producer = self.producers()?;
        let order = schedule(&self.ops, &producer)?;
        let is_output = self.output_flags()?;
        let GraphBuilder {
            name,
            tensors,
            declared,
            ops,
            flops_known,
            ..
        } = self;
        let (ops, flops_known, new_id) = match order {
            None => (ops, flops_known, None),
            Some(order) => {
                let mut by_pos = Ops::new();
                let mut known = Vec::with_capacity(order.len());
                let mut new_id = vec![0usize; order.len()];
                for (pos, &old) in order.iter().enumerate() {
                    by_pos.push_row(OpRef {
                        id: pos,
                        ..ops.at(old)
                    });
                    known.push(flops_known[old]);
                    new_id[old] = pos;
                }
                by_pos.shrink_to_fit();
                (by_pos, known, Some(new_id))
            }
        };
        let consumers = consumer_lists(&ops, tensors.len());
        let kinds = (0..tensors.len())
            .map(|i| match (is_output[i], declared[i], producer[i]) {
                (true, _, _) => TensorKind::Output,
                (_, Some(k), _) if k != TensorKind::Output => k,
                (_, _, p) if p != NONE => TensorKind::Activation,
                _ => TensorKind::Input,
            })
            .collect();
        let producer = producer
            .into_iter()
            .map(|p| match (&new_id, p) {
                (_, NONE) => NONE,
                (Some(new_id), p) => new_id[p],
                (None, p) => p,
            })
            .collect();
        let mut tensors = tensors;
        tensors.link(kinds, producer, consumers);
        // The columns grew by doubling as specs came: give the room back.
        tensors.shrink_to_fit();
        let mut ops = ops;
        ops.shrink_to_fit();
        for (pos, &known) in flops_known.iter().enumerate() {
            if !known {
                let f = super::flops::estimate(ops.at(pos), &tensors);
                ops.set_flops(pos, f);
            }
        }
        Ok(Graph { name, tensors, ops })
    }

    /// Operands named before their tensors were declared, by id now; the
    /// first still undeclared is refused naming its op.
    fn resolve_pending(&mut self) -> Result<()> {
        for p in std::mem::take(&mut self.pending) {
            let tensors = &self.tensors;
            let Some(t) = self.index.find(&p.name, |j| tensors.name(j)) else {
                return Err(Error::Node {
                    node: self.ops.at(p.op).name.into(),
                    detail: format!("refers to tensor {:?}, which is not declared", p.name),
                });
            };
            self.ops.set_operand(p.op, p.output, p.slot, t);
        }
        Ok(())
    }

    /// Each tensor's producer (an op in file order, or [`NONE`]); a tensor
    /// produced twice, or an input or weight produced, is refused.
    fn producers(&self) -> Result<Vec<usize>> {
        let mut producer = vec![NONE; self.tensors.len()];
        for (i, o) in self.ops.iter().enumerate() {
            for &t in o.outputs {
                let name = || self.tensors.at(t).name.into();
                if producer[t] != NONE {
                    return Err(Error::Tensor {
                        tensor: name(),
                        detail: format!(
                            "produced by both {:?} and {:?}",
                            self.ops.at(producer[t]).name,
                            o.name
                        ),
                    });
                }
                if matches!(
                    self.declared[t],
                    Some(TensorKind::Weight | TensorKind::Input)
                ) {
                    return Err(Error::Tensor {
                        tensor: name(),
                        detail: format!("is a graph input/weight but op {:?} produces it", o.name),
                    });
                }
                producer[t] = i;
            }
        }
        Ok(producer)
    }

    /// Which tensors the front end listed as graph outputs.
    fn output_flags(&self) -> Result<Vec<bool>> {
        let mut is_output = vec![false; self.tensors.len()];
        for o in &self.outputs {
            let Some(t) = self.index.find(o, |j| self.tensors.name(j)) else {
                return Err(Error::Tensor {
                    tensor: o.clone(),
                    detail: "listed as a graph output but not declared".into(),
                });
            };
            is_output[t] = true;
        }
        Ok(is_output)
    }
}

/// Each tensor's consumers (op positions, in order, an op reading a
/// tensor twice listed once), counted then filled: no list per tensor.
fn consumer_lists(ops: &Ops, n_tensors: usize) -> IdLists {
    IdLists::counted(n_tensors, |f| {
        for (pos, o) in ops.iter().enumerate() {
            for (k, &t) in o.inputs.iter().enumerate() {
                if !o.inputs[..k].contains(&t) {
                    f(t, pos);
                }
            }
        }
    })
}

/// A topological order of the ops preferring file order: `None` when the
/// file's order is already topological (it is kept: the liveness contract
/// is defined on it), else the order; a cycle is named by an op on it.
fn schedule(ops: &Ops, producer: &[usize]) -> Result<Option<Vec<OpId>>> {
    let mut forward = true;
    for (i, o) in ops.iter().enumerate() {
        for &t in o.inputs {
            let p = producer[t];
            if p == i {
                return Err(Error::Cycle {
                    node: o.name.into(),
                });
            }
            forward &= p == NONE || p < i;
        }
    }
    if forward {
        return Ok(None);
    }
    let n_ops = ops.len();
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n_ops];
    let mut indegree = vec![0usize; n_ops];
    for (i, o) in ops.iter().enumerate() {
        for &t in o.inputs {
            let p = producer[t];
            if p != NONE {
                succ[p].push(i);
                indegree[i] += 1;
            }
        }
    }
    super::topo::list_schedule(&succ, indegree, &mut super::topo::Earliest)
        .map(Some)
        .map_err(|ran| {
            let mut seen = vec![false; n_ops];
            for &i in &ran {
                seen[i] = true;
            }
            let stuck = seen.iter().position(|&s| !s).unwrap_or(0);
            Error::Cycle {
                node: ops.at(stuck).name.into(),
            }
        })
}

/// The graph's tensors must total at most [`limits::MAX_GRAPH_BYTES`], so
/// every later size and sum is exact and fits; the error names the tensor
/// whose bytes cross the limit.
fn check_total_bytes(tensors: &Tensors) -> Result<()> {
    let mut total = 0u64;
    for t in tensors {
        total = total
            .checked_add(t.bytes)
            .filter(|&s| s <= limits::MAX_GRAPH_BYTES)
            .ok_or_else(|| Error::Tensor {
                tensor: t.name.into(),
                detail: format!(
                    "its {} bring the graph's tensors past 8 PiB (2^53 bytes), the most spillscope simulates exactly",
                    crate::units::fmt_bytes(t.bytes)
                ),
            })?;
    }
    Ok(())
}

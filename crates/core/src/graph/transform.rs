//! Graph rewrites that a compiler could apply and that the what-if engine
//! re-simulates: fusing producer→elementwise chains (intermediates stay on
//! chip, as the 003 seed's conv+bn+relu example), fp16 activations, and
//! schedule orders (memory-aware, or the user's overrides). Each returns a new
//! [`Graph`] checked by the builder, so the simulator sees one IR.

use super::{topo, Graph, GraphBuilder, OpId, OpSpec, TensorKind, TensorSpec};
use crate::{Error, Result};
use compact_str::CompactString;
use serde::{Deserialize, Serialize};

use std::collections::HashMap;

/// Ops that start a fusable chain: they produce a tile the next ops can
/// consume from on-chip registers/buffers without a round trip to memory.
const FUSION_HEADS: &[&str] = &["Conv", "ConvTranspose", "Gemm", "MatMul"];
/// Elementwise (per-tile) ops that can be folded into the chain.
const FUSION_TAILS: &[&str] = &[
    "BatchNormalization",
    "Relu",
    "Clip",
    "Sigmoid",
    "HardSigmoid",
    "HardSwish",
    "LeakyRelu",
    "PRelu",
    "Tanh",
    "Gelu",
    "Silu",
    "Mish",
    "Elu",
    "Add",
    "Mul",
    "Div",
    "Sub",
];

/// One fused chain: the ops folded together and the tensors that no longer
/// touch memory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fusion {
    pub ops: Vec<String>,
    pub name: String,
    pub removed_tensors: Vec<String>,
    pub removed_bytes: u64,
}

/// A builder holding `g`'s tensors except `skip` (by name), no ops yet.
fn specs_of_except(g: &Graph, skip: &std::collections::HashSet<&str>) -> GraphBuilder {
    let mut b = GraphBuilder::new(g.name.clone());
    for t in g.tensors.iter().filter(|t| !skip.contains(t.name)) {
        b.tensor(TensorSpec {
            name: t.name.into(),
            bytes: t.bytes,
            kind: match t.kind {
                TensorKind::Activation | TensorKind::Output => None,
                k => Some(k),
            },
            shape: t.shape.map(<[u64]>::to_vec),
            dtype: t.dtype.map(Into::into),
        });
        if t.kind == TensorKind::Output {
            b.output(t.name);
        }
    }
    b
}

fn specs_of(g: &Graph) -> GraphBuilder {
    specs_of_except(g, &Default::default())
}

/// Op `i` as a builder spec, its operands by name and its FLOPs as known.
pub(crate) fn op_spec(g: &Graph, i: OpId) -> OpSpec {
    let o = &g.ops.at(i);
    OpSpec {
        name: o.name.into(),
        op_type: o.op_type.into(),
        inputs: o
            .inputs
            .iter()
            .map(|&t| g.tensors.at(t).name.into())
            .collect(),
        outputs: o
            .outputs
            .iter()
            .map(|&t| g.tensors.at(t).name.into())
            .collect(),
        flops: Some(o.flops),
    }
}

/// The single-output tensor of op `i` that only op `next` reads, if the
/// chain may continue through it.
fn chain_link(g: &Graph, i: OpId) -> Option<OpId> {
    let o = &g.ops.at(i);
    if o.outputs.len() != 1 {
        return None;
    }
    let t = &g.tensors.at(o.outputs[0]);
    if t.kind != TensorKind::Activation || t.consumers.len() != 1 {
        return None;
    }
    let next = t.consumers[0];
    FUSION_TAILS
        .contains(&g.ops.at(next).op_type)
        .then_some(next)
}

/// Fuses every head op with the elementwise ops that alone consume its output
/// (`Conv→BatchNormalization→Relu`, `Conv→Add→Relu`, `MatMul→Add→Gelu`...).
/// The fused op runs at the position of the chain's last op, reads the
/// union of the chain's outside inputs and writes the last output; the
/// intermediates vanish from memory. Returns the rewritten graph and the
/// chains (empty when nothing fused: the graph is then an unchanged copy).
pub fn fuse(g: &Graph) -> Result<(Graph, Vec<Fusion>)> {
    let mut chain_of: Vec<Option<usize>> = vec![None; g.ops.len()];
    let mut chains: Vec<Vec<OpId>> = Vec::new();
    for i in 0..g.ops.len() {
        if chain_of[i].is_some() || !FUSION_HEADS.contains(&g.ops.at(i).op_type) {
            continue;
        }
        let mut chain = vec![i];
        let mut cur = i;
        while let Some(next) = chain_link(g, cur) {
            if chain_of[next].is_some() {
                break;
            }
            chain.push(next);
            cur = next;
        }
        if chain.len() > 1 {
            for &o in &chain {
                chain_of[o] = Some(chains.len());
            }
            chains.push(chain);
        }
    }
    let mut ops: Vec<OpSpec> = Vec::with_capacity(g.ops.len());
    let mut fusions = Vec::new();
    for (i, chain) in chain_of.iter().enumerate() {
        match *chain {
            None => {
                ops.push(op_spec(g, i));
            }
            Some(c) if *chains[c].last().unwrap_or(&i) == i => {
                let chain = &chains[c];
                let inner: Vec<usize> = chain[..chain.len() - 1]
                    .iter()
                    .map(|&o| g.ops.outputs(o)[0])
                    .collect();
                let mut inputs: Vec<CompactString> = Vec::new();
                for &o in chain {
                    for &t in g.ops.inputs(o) {
                        let name = g.tensors.at(t).name;
                        if !inner.contains(&t) && !inputs.iter().any(|n| n == name) {
                            inputs.push(name.into());
                        }
                    }
                }
                let name = chain
                    .iter()
                    .map(|&o| g.ops.at(o).name)
                    .collect::<Vec<_>>()
                    .join("+");
                let op_type = chain
                    .iter()
                    .map(|&o| g.ops.at(o).op_type)
                    .collect::<Vec<_>>()
                    .join("+");
                ops.push(OpSpec {
                    name: name.clone().into(),
                    op_type: op_type.into(),
                    inputs,
                    outputs: g
                        .ops
                        .at(i)
                        .outputs
                        .iter()
                        .map(|&t| g.tensors.at(t).name.into())
                        .collect(),
                    flops: Some(chain.iter().map(|&o| g.ops.flops(o)).sum()),
                });
                fusions.push(Fusion {
                    ops: chain
                        .iter()
                        .map(|&o| g.ops.at(o).name.to_string())
                        .collect(),
                    name,
                    removed_tensors: inner
                        .iter()
                        .map(|&t| g.tensors.at(t).name.to_string())
                        .collect(),
                    removed_bytes: inner.iter().map(|&t| g.tensors.bytes(t)).sum(),
                });
            }
            Some(_) => {}
        }
    }
    if fusions.is_empty() {
        return Ok((g.clone(), fusions));
    }
    // Intermediates nobody reads any more are dropped by not declaring them.
    let dead: std::collections::HashSet<&str> = fusions
        .iter()
        .flat_map(|f| f.removed_tensors.iter().map(String::as_str))
        .collect();
    let mut b = specs_of_except(g, &dead);
    for spec in ops {
        b.op(spec);
    }
    Ok((b.build()?, fusions))
}

/// A copy of `g` with activations (not weights) in fp16: f32 tensors halve.
pub fn to_fp16(g: &Graph) -> Graph {
    let mut h = g.clone();
    for i in 0..h.tensors.len() {
        h.tensors.update(i, |t| {
            let is_f32 = t
                .dtype
                .as_deref()
                .map(|d| matches!(d, "f32" | "float32" | "float"))
                .unwrap_or(true);
            if t.kind != TensorKind::Weight && is_f32 {
                t.bytes = t.bytes.div_ceil(2);
                t.dtype = Some("f16".into());
            }
        });
    }
    h
}

/// One core's share of `g` when `cores` cores each run the graph on an
/// equal share of its batch (data parallel): the batch is the leading
/// dimension of the graph inputs' shapes, which must agree and divide by
/// `cores`. A tensor whose leading dimension is the batch keeps `1/cores`
/// of it; every other activation keeps `1/cores` of its bytes (rounded
/// up), weights stay whole (each core reads them), and every op's FLOPs
/// divide by `cores`.
pub fn split_batch(g: &Graph, cores: u64) -> Result<Graph> {
    if cores <= 1 {
        return Ok(g.clone());
    }
    let batch = graph_batch(g)?;
    if batch % cores != 0 {
        return Err(Error::Config(format!(
            "split batch: the batch is {batch}, which {cores} cores cannot share equally: read the model at a batch that is a multiple of {cores} (--batch)"
        )));
    }
    let mut h = g.clone();
    // Shapes change: the columns are rebuilt once.
    h.tensors.update_all(|_, t| {
        if t.kind == TensorKind::Weight {
            return;
        }
        match t.shape.as_mut() {
            Some(shape) if shape.first() == Some(&batch) => {
                shape[0] = batch / cores;
                t.bytes = t.bytes / batch * (batch / cores);
            }
            _ => t.bytes = t.bytes.div_ceil(cores),
        }
    });
    for i in 0..h.ops.len() {
        h.ops.update(i, |op| op.flops /= cores as f64);
    }
    Ok(h)
}

/// The batch of `g`: the leading dimension its graph inputs agree on.
fn graph_batch(g: &Graph) -> Result<u64> {
    let mut batch: Option<(u64, &str)> = None;
    for t in g.tensors.iter().filter(|t| t.kind == TensorKind::Input) {
        let Some(&b) = t.shape.as_ref().and_then(|s| s.first()) else {
            continue;
        };
        match batch {
            Some((other, name)) if other != b => {
                return Err(Error::Config(format!(
                    "split batch: graph inputs disagree on the batch ({name:?} has {other}, {:?} has {b}), so no batch splits them all",
                    t.name
                )))
            }
            _ => batch = Some((b, t.name)),
        }
    }
    batch.map(|(b, _)| b).ok_or_else(|| {
        Error::Config(
            "split batch: no graph input has a shape, so the batch is unknown: give the graph inputs shapes"
                .into(),
        )
    })
}

/// Which order the ops run in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OrderSpec {
    /// `"file"` (as given) or `"memory"` (memory-aware greedy).
    Named(NamedOrder),
    /// Op names that must run in this relative order; the rest keep theirs.
    Ops(Vec<String>),
}

impl Default for OrderSpec {
    fn default() -> Self {
        OrderSpec::Named(NamedOrder::File)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NamedOrder {
    File,
    Memory,
}

impl std::str::FromStr for OrderSpec {
    type Err = std::convert::Infallible;
    /// `file`, `memory`, or comma-separated op names (`--order`).
    fn from_str(s: &str) -> Result<OrderSpec, Self::Err> {
        Ok(match s.trim() {
            "file" => OrderSpec::Named(NamedOrder::File),
            "memory" => OrderSpec::Named(NamedOrder::Memory),
            list => OrderSpec::Ops(
                list.split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect(),
            ),
        })
    }
}

impl OrderSpec {
    pub fn is_file(&self) -> bool {
        matches!(self, OrderSpec::Named(NamedOrder::File))
    }
}

/// A memory-aware topological order: among the ready ops, run the one that
/// frees the most bytes net of what it allocates (ties: file order). Greedy,
/// O((ops + edges) log ops); it often lowers peak live bytes of graphs with
/// parallel branches (run a branch to its end before starting the next).
pub fn memory_aware_order(g: &Graph) -> Vec<OpId> {
    let (succ, indegree) = topo::from_preds(&topo::op_preds(g));
    let mut picker = FreesMost {
        g,
        // Remaining unscheduled consumers per tensor.
        remaining: g.tensors.iter().map(|t| t.consumers.len()).collect(),
        done: vec![false; g.ops.len()],
    };
    // A graph's ops are acyclic (its builder checked): every op runs.
    topo::list_schedule(&succ, indegree, &mut picker).unwrap_or_else(|ran| ran)
}

/// [`memory_aware_order`]'s choice: bytes allocated net of bytes freed.
struct FreesMost<'a> {
    g: &'a Graph,
    remaining: Vec<usize>,
    done: Vec<bool>,
}

impl topo::Picker for FreesMost<'_> {
    type Key = (i64, OpId);
    fn key(&self, i: usize) -> Option<(i64, OpId)> {
        let (g, o) = (self.g, &self.g.ops.at(i));
        let alloc: u64 = o.outputs.iter().map(|&t| g.tensors.bytes(t)).sum();
        let mut freed = 0u64;
        let mut seen: Vec<usize> = Vec::new();
        for &t in o.inputs {
            let tt = &g.tensors.at(t);
            if seen.contains(&t) || tt.kind != TensorKind::Activation {
                continue;
            }
            seen.push(t);
            if self.remaining[t] == 1 {
                freed += tt.bytes;
            }
        }
        Some((alloc as i64 - freed as i64, i))
    }
    fn ran(&mut self, i: usize, changed: &mut Vec<usize>) {
        let g = self.g;
        self.done[i] = true;
        let mut seen: Vec<usize> = Vec::new();
        for &t in g.ops.inputs(i) {
            if seen.contains(&t) {
                continue;
            }
            seen.push(t);
            let uses = g
                .tensors
                .at(t)
                .consumers
                .iter()
                .filter(|&&c| c == i)
                .count();
            self.remaining[t] = self.remaining[t].saturating_sub(uses);
            // The last remaining consumer now frees it: its priority changed.
            if self.remaining[t] == 1 {
                if let Some(&c) = g.tensors.consumers(t).iter().find(|&&c| !self.done[c]) {
                    changed.push(c);
                }
            }
        }
    }
}

/// The file order with the listed ops forced into the listed relative
/// order: a topological sort that takes the earliest ready op in file order,
/// except that a listed op may run only when it is the next listed one.
/// Errors name the op that cannot run where it was asked to (dependency).
pub fn order_with_overrides(g: &Graph, names: &[String]) -> Result<Vec<OpId>> {
    let n = g.ops.len();
    let by_name: HashMap<&str, OpId> = g.ops.iter().enumerate().map(|(i, o)| (o.name, i)).collect();
    let mut rank: Vec<Option<usize>> = vec![None; n];
    for (k, name) in names.iter().enumerate() {
        let &i = by_name
            .get(name.as_str())
            .ok_or_else(|| Error::Config(format!("order: no op named {name:?} in the graph")))?;
        if rank[i].is_some() {
            return Err(Error::Config(format!("order: op {name:?} listed twice")));
        }
        rank[i] = Some(k);
    }
    let (succ, indegree) = topo::from_preds(&topo::op_preds(g));
    let mut picker = Listed {
        rank,
        listed: names.iter().map(|nm| by_name[nm.as_str()]).collect(),
        next: 0,
    };
    let order = topo::list_schedule(&succ, indegree, &mut picker).unwrap_or_else(|ran| ran);
    let (listed, next_listed) = (picker.listed, picker.next);
    if order.len() < n {
        let stuck = listed
            .get(next_listed)
            .map(|&i| g.ops.at(i).name)
            .unwrap_or_default();
        let before = next_listed
            .checked_sub(1)
            .and_then(|k| listed.get(k))
            .map(|&i| format!(" after {:?}", g.ops.at(i).name))
            .unwrap_or_default();
        return Err(Error::Config(format!(
            "order: op {stuck:?} cannot run{before}: its inputs come from ops listed later"
        )));
    }
    Ok(order)
}

/// [`order_with_overrides`]'s choice: file order, a listed op only when it
/// is the next listed one.
struct Listed {
    rank: Vec<Option<usize>>,
    listed: Vec<OpId>,
    next: usize,
}

impl topo::Picker for Listed {
    type Key = OpId;
    fn key(&self, i: usize) -> Option<OpId> {
        match self.rank[i] {
            Some(k) if k != self.next => None,
            _ => Some(i),
        }
    }
    fn ran(&mut self, i: usize, changed: &mut Vec<usize>) {
        if self.rank[i].is_some() {
            self.next += 1;
            changed.extend(self.listed.get(self.next));
        }
    }
}

/// `g` with its ops in `order` (a permutation that respects dependencies).
pub fn reorder(g: &Graph, order: &[OpId]) -> Result<Graph> {
    if order.iter().copied().eq(0..g.ops.len()) {
        return Ok(g.clone());
    }
    let mut b = specs_of(g);
    for &i in order {
        b.op(op_spec(g, i));
    }
    b.build()
}

/// Applies the order spec.
pub fn apply_order(g: &Graph, spec: &OrderSpec) -> Result<Graph> {
    match spec {
        OrderSpec::Named(NamedOrder::File) => Ok(g.clone()),
        OrderSpec::Named(NamedOrder::Memory) => reorder(g, &memory_aware_order(g)),
        OrderSpec::Ops(names) => reorder(g, &order_with_overrides(g, names)?),
    }
}

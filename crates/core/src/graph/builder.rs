//! Turns named ops and tensors (as every front end sees them) into a checked
//! [`Graph`]: resolves names, links producers and consumers, rejects dangling
//! references and cycles with the culprit named, and fixes a schedule order.

use super::{Graph, Op, OpId, Tensor, TensorId, TensorKind};
use crate::limits;
use crate::{Error, Result};
use compact_str::CompactString;
use std::collections::HashMap;

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

/// Collects specs, then [`GraphBuilder::build`] checks and links them.
#[derive(Debug, Default)]
pub struct GraphBuilder {
    name: String,
    tensors: Vec<TensorSpec>,
    ops: Vec<OpSpec>,
    outputs: Vec<String>,
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
        self.tensors.push(spec);
        self
    }
    pub fn op(&mut self, spec: OpSpec) -> &mut Self {
        self.ops.push(spec);
        self
    }
    /// Marks a tensor as a graph output (live to the end).
    pub fn output(&mut self, name: impl Into<String>) -> &mut Self {
        self.outputs.push(name.into());
        self
    }

    /// Resolves names, checks sizes (see [`crate::limits`]) and orders the
    /// ops. The specs' strings move into the graph rather than being copied,
    /// and each op's operand names are dropped once resolved, so building
    /// holds little beyond the specs and the graph (a 10^6-op graph is
    /// several hundred MB of them).
    pub fn build(self) -> Result<Graph> {
        let GraphBuilder {
            name,
            tensors: mut specs,
            ops: mut op_specs,
            outputs,
        } = self;
        let links = Links::resolve(&specs, &mut op_specs, &outputs)?;
        let mut tensors: Vec<Tensor> = specs
            .iter_mut()
            .enumerate()
            .map(|(i, s)| {
                let kind = if links.is_output[i] {
                    TensorKind::Output
                } else {
                    match (s.kind, links.producer[i]) {
                        (Some(k), _) if k != TensorKind::Output => k,
                        (_, Some(_)) => TensorKind::Activation,
                        (_, None) => TensorKind::Input,
                    }
                };
                Tensor {
                    id: i,
                    name: std::mem::take(&mut s.name),
                    bytes: s.bytes,
                    kind,
                    shape: s.shape.take(),
                    dtype: s.dtype.take(),
                    producer: links.producer[i].map(|p| links.new_id[p]),
                    consumers: Vec::new(),
                }
            })
            .collect();
        drop(specs);
        let Links {
            mut op_in,
            mut op_out,
            order,
            ..
        } = links;
        let mut ops: Vec<Op> = Vec::with_capacity(order.len());
        for (pos, &old) in order.iter().enumerate() {
            let s = &mut op_specs[old];
            let inputs = std::mem::take(&mut op_in[old]);
            for &t in &inputs {
                if tensors[t].consumers.last() != Some(&pos) {
                    tensors[t].consumers.push(pos);
                }
            }
            ops.push(Op {
                id: pos,
                name: std::mem::take(&mut s.name),
                op_type: std::mem::take(&mut s.op_type),
                inputs,
                outputs: std::mem::take(&mut op_out[old]),
                flops: 0.0,
                unit: None,
            });
        }
        for t in &mut tensors {
            t.consumers.shrink_to_fit();
        }
        for (pos, &old) in order.iter().enumerate() {
            ops[pos].flops = match op_specs[old].flops {
                Some(f) => f,
                None => super::flops::estimate(&ops[pos], &tensors),
            };
        }
        Ok(Graph { name, tensors, ops })
    }
}

/// What resolving the names found: each tensor's producer and whether it is
/// a graph output, each op's operands by id (file order), and the schedule
/// order with each op's position in it.
struct Links {
    producer: Vec<Option<OpId>>,
    is_output: Vec<bool>,
    op_in: Vec<Vec<TensorId>>,
    op_out: Vec<Vec<TensorId>>,
    order: Vec<OpId>,
    new_id: Vec<usize>,
}

impl Links {
    /// Resolves every name, with the culprit named on failure: tensors or
    /// ops declared twice, an operand or output never declared, a tensor
    /// produced twice or an input produced, a cycle. Each op's operand
    /// names are dropped as soon as they are resolved.
    fn resolve(tensors: &[TensorSpec], ops: &mut [OpSpec], outputs: &[String]) -> Result<Links> {
        let mut index: HashMap<&str, TensorId> = HashMap::with_capacity(tensors.len());
        for (i, t) in tensors.iter().enumerate() {
            if index.insert(t.name.as_str(), i).is_some() {
                return Err(Error::Tensor {
                    tensor: t.name.clone().into(),
                    detail: "declared twice".into(),
                });
            }
        }
        check_total_bytes(tensors)?;
        check_op_names(ops)?;
        let resolve = |op: &OpSpec, name: &str| -> Result<TensorId> {
            index.get(name).copied().ok_or_else(|| Error::Node {
                node: op.name.clone().into(),
                detail: format!("refers to tensor {name:?}, which is not declared"),
            })
        };
        let n_ops = ops.len();
        let mut producer: Vec<Option<OpId>> = vec![None; tensors.len()];
        let mut op_in: Vec<Vec<TensorId>> = Vec::with_capacity(n_ops);
        let mut op_out: Vec<Vec<TensorId>> = Vec::with_capacity(n_ops);
        for i in 0..n_ops {
            let o = &ops[i];
            let ins = o
                .inputs
                .iter()
                .map(|n| resolve(o, n))
                .collect::<Result<Vec<_>>>()?;
            let outs = o
                .outputs
                .iter()
                .map(|n| resolve(o, n))
                .collect::<Result<Vec<_>>>()?;
            for &t in &outs {
                if let Some(p) = producer[t] {
                    return Err(Error::Tensor {
                        tensor: tensors[t].name.clone().into(),
                        detail: format!("produced by both {:?} and {:?}", ops[p].name, o.name),
                    });
                }
                if matches!(
                    tensors[t].kind,
                    Some(TensorKind::Weight | TensorKind::Input)
                ) {
                    return Err(Error::Tensor {
                        tensor: tensors[t].name.clone().into(),
                        detail: format!("is a graph input/weight but op {:?} produces it", o.name),
                    });
                }
                producer[t] = Some(i);
            }
            op_in.push(ins);
            op_out.push(outs);
            ops[i].inputs = Vec::new();
            ops[i].outputs = Vec::new();
        }
        let order = schedule(ops, &producer, &op_in)?;
        let mut new_id = vec![0usize; n_ops];
        for (pos, &old) in order.iter().enumerate() {
            new_id[old] = pos;
        }
        let mut is_output = vec![false; tensors.len()];
        for o in outputs {
            let Some(&t) = index.get(o.as_str()) else {
                return Err(Error::Tensor {
                    tensor: o.clone(),
                    detail: "listed as a graph output but not declared".into(),
                });
            };
            is_output[t] = true;
        }
        Ok(Links {
            producer,
            is_output,
            op_in,
            op_out,
            order,
            new_id,
        })
    }
}

/// Each op name may be used once.
fn check_op_names(ops: &[OpSpec]) -> Result<()> {
    let mut op_names: HashMap<&str, OpId> = HashMap::with_capacity(ops.len());
    for (i, o) in ops.iter().enumerate() {
        if op_names.insert(o.name.as_str(), i).is_some() {
            return Err(Error::Node {
                node: o.name.clone().into(),
                detail: "op name used twice".into(),
            });
        }
    }
    Ok(())
}

/// A topological order of the ops preferring file order: it keeps the
/// file's order when that is already topological (the liveness contract is
/// defined on it); a cycle is named by an op on it.
fn schedule(
    ops: &[OpSpec],
    producer: &[Option<OpId>],
    op_in: &[Vec<TensorId>],
) -> Result<Vec<OpId>> {
    let n_ops = ops.len();
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n_ops];
    let mut indegree = vec![0usize; n_ops];
    for (i, ins) in op_in.iter().enumerate() {
        for &t in ins {
            if let Some(p) = producer[t] {
                if p == i {
                    return Err(Error::Cycle {
                        node: ops[i].name.clone().into(),
                    });
                }
                succ[p].push(i);
                indegree[i] += 1;
            }
        }
    }
    super::topo::list_schedule(&succ, indegree, &mut super::topo::Earliest).map_err(|ran| {
        let mut seen = vec![false; n_ops];
        for &i in &ran {
            seen[i] = true;
        }
        let stuck = seen.iter().position(|&s| !s).unwrap_or(0);
        Error::Cycle {
            node: ops[stuck].name.clone().into(),
        }
    })
}

/// The graph's tensors must total at most [`limits::MAX_GRAPH_BYTES`], so
/// every later size and sum is exact and fits; the error names the tensor
/// whose bytes cross the limit.
fn check_total_bytes(tensors: &[TensorSpec]) -> Result<()> {
    let mut total = 0u64;
    for t in tensors {
        total = total
            .checked_add(t.bytes)
            .filter(|&s| s <= limits::MAX_GRAPH_BYTES)
            .ok_or_else(|| Error::Tensor {
                tensor: t.name.clone().into(),
                detail: format!(
                    "its {} bring the graph's tensors past 8 PiB (2^53 bytes), the most spillscope simulates exactly",
                    crate::units::fmt_bytes(t.bytes)
                ),
            })?;
    }
    Ok(())
}

//! Turns named ops and tensors (as every front end sees them) into a checked
//! [`Graph`]: resolves names, links producers and consumers, rejects dangling
//! references and cycles with the culprit named, and fixes a schedule order.

use super::{Graph, Op, OpId, Tensor, TensorId, TensorKind};
use crate::limits;
use crate::{Error, Result};
use std::collections::HashMap;

/// A tensor as declared by a front end.
#[derive(Debug, Clone)]
pub struct TensorSpec {
    pub name: String,
    pub bytes: u64,
    /// `Some(kind)` when the front end knows it (inputs, weights, outputs);
    /// activations are inferred.
    pub kind: Option<TensorKind>,
    pub shape: Option<Vec<u64>>,
    pub dtype: Option<String>,
}

/// An op as declared by a front end; operands by tensor name.
#[derive(Debug, Clone)]
pub struct OpSpec {
    pub name: String,
    pub op_type: String,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
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
    /// ops.
    pub fn build(self) -> Result<Graph> {
        let mut index: HashMap<&str, TensorId> = HashMap::with_capacity(self.tensors.len());
        for (i, t) in self.tensors.iter().enumerate() {
            if index.insert(t.name.as_str(), i).is_some() {
                return Err(Error::Tensor {
                    tensor: t.name.clone(),
                    detail: "declared twice".into(),
                });
            }
        }
        check_total_bytes(&self.tensors)?;
        let mut op_names: HashMap<&str, OpId> = HashMap::with_capacity(self.ops.len());
        for (i, o) in self.ops.iter().enumerate() {
            if op_names.insert(o.name.as_str(), i).is_some() {
                return Err(Error::Node {
                    node: o.name.clone(),
                    detail: "op name used twice".into(),
                });
            }
        }
        let resolve = |op: &OpSpec, name: &str| -> Result<TensorId> {
            index.get(name).copied().ok_or_else(|| Error::Node {
                node: op.name.clone(),
                detail: format!("refers to tensor {name:?}, which is not declared"),
            })
        };
        let n_ops = self.ops.len();
        let mut producer: Vec<Option<OpId>> = vec![None; self.tensors.len()];
        let mut op_in: Vec<Vec<TensorId>> = Vec::with_capacity(n_ops);
        let mut op_out: Vec<Vec<TensorId>> = Vec::with_capacity(n_ops);
        for (i, o) in self.ops.iter().enumerate() {
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
                        tensor: self.tensors[t].name.clone(),
                        detail: format!("produced by both {:?} and {:?}", self.ops[p].name, o.name),
                    });
                }
                if matches!(
                    self.tensors[t].kind,
                    Some(TensorKind::Weight | TensorKind::Input)
                ) {
                    return Err(Error::Tensor {
                        tensor: self.tensors[t].name.clone(),
                        detail: format!("is a graph input/weight but op {:?} produces it", o.name),
                    });
                }
                producer[t] = Some(i);
            }
            op_in.push(ins);
            op_out.push(outs);
        }

        // Dependencies between ops, for cycle checks and a topological
        // order preferring file order: it keeps the file's order when that
        // is already topological (the liveness contract is defined on it).
        let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n_ops];
        let mut indegree = vec![0usize; n_ops];
        for (i, ins) in op_in.iter().enumerate() {
            for &t in ins {
                if let Some(p) = producer[t] {
                    if p == i {
                        return Err(Error::Cycle {
                            node: self.ops[i].name.clone(),
                        });
                    }
                    succ[p].push(i);
                    indegree[i] += 1;
                }
            }
        }
        let order = super::topo::list_schedule(&succ, indegree, &mut super::topo::Earliest)
            .map_err(|ran| {
                let mut seen = vec![false; n_ops];
                for &i in &ran {
                    seen[i] = true;
                }
                let stuck = seen.iter().position(|&s| !s).unwrap_or(0);
                Error::Cycle {
                    node: self.ops[stuck].name.clone(),
                }
            })?;
        let mut new_id = vec![0usize; n_ops];
        for (pos, &old) in order.iter().enumerate() {
            new_id[old] = pos;
        }

        let out_set: std::collections::HashSet<&str> =
            self.outputs.iter().map(|s| s.as_str()).collect();
        for o in &self.outputs {
            if !index.contains_key(o.as_str()) {
                return Err(Error::Tensor {
                    tensor: o.clone(),
                    detail: "listed as a graph output but not declared".into(),
                });
            }
        }
        let mut tensors: Vec<Tensor> = self
            .tensors
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let kind = if out_set.contains(s.name.as_str()) {
                    TensorKind::Output
                } else {
                    match (s.kind, producer[i]) {
                        (Some(k), _) if k != TensorKind::Output => k,
                        (_, Some(_)) => TensorKind::Activation,
                        (_, None) => TensorKind::Input,
                    }
                };
                Tensor {
                    id: i,
                    name: s.name.clone(),
                    bytes: s.bytes,
                    kind,
                    shape: s.shape.clone(),
                    dtype: s.dtype.clone(),
                    producer: producer[i].map(|p| new_id[p]),
                    consumers: Vec::new(),
                }
            })
            .collect();
        let mut ops: Vec<Op> = Vec::with_capacity(n_ops);
        for (pos, &old) in order.iter().enumerate() {
            let s = &self.ops[old];
            let mut inputs = op_in[old].clone();
            let outputs = op_out[old].clone();
            for &t in &inputs {
                if tensors[t].consumers.last() != Some(&pos) {
                    tensors[t].consumers.push(pos);
                }
            }
            inputs.shrink_to_fit();
            ops.push(Op {
                id: pos,
                name: s.name.clone(),
                op_type: s.op_type.clone(),
                inputs,
                outputs,
                flops: 0.0,
                unit: None,
            });
        }
        for (pos, &old) in order.iter().enumerate() {
            ops[pos].flops = match self.ops[old].flops {
                Some(f) => f,
                None => super::flops::estimate(&ops[pos], &tensors),
            };
        }
        Ok(Graph {
            name: self.name,
            tensors,
            ops,
        })
    }
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
                tensor: t.name.clone(),
                detail: format!(
                    "its {} bring the graph's tensors past 8 PiB (2^53 bytes), the most spillscope simulates exactly",
                    crate::units::fmt_bytes(t.bytes)
                ),
            })?;
    }
    Ok(())
}

//! Which graph nodes an ONNX Runtime profile's nodes ran. With graph
//! optimisation on (ORT's default), the profile names nodes of the
//! *optimised* graph: the NCHWc layout transformer renames each convolution
//! after its output tensor with a `_nchwc` suffix (`/layer1/layer1.0/relu/
//! Relu_output_0_nchwc`), fuses the activation after it (Conv+Relu runs as
//! one node named after the Relu's output), folds a following Add (and its
//! activation) into the convolution's sum input, and inserts layout
//! reorders (`ReorderOutput`) that no graph node stands for.
//!
//! [`Linker::link`] maps one profile node to the group of graph nodes it
//! ran: by name; else through the `_nchwc` rename (the producer of the named
//! tensor, plus the convolution or matmul it was fused onto); reorders are
//! recognised as inserted. [`Linker::absorb`] then gives elementwise graph
//! nodes that never appear (folded into the convolution before them) to
//! that convolution's node. The profile's op is named after its group's
//! anchor (the convolution or matmul when there is one), so `--calibrate`
//! and Compare match it to the graph by name.
//!
//! With the optimised model ORT writes (`SessionOptions.
//! optimized_model_filepath`), every node links by name.

use crate::graph::{Graph, OpId};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// How a profile node was linked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// Its name is a graph node's.
    ByName,
    /// Renamed by ORT's layout transformer (`<tensor>_nchwc`), possibly with
    /// fused neighbours.
    Renamed,
    /// A layout reorder ORT inserted: no graph node.
    Inserted,
    /// Nothing in the graph matches.
    Unmatched,
}

/// What linking a profile to a model found, kept in the trace's meta.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkSummary {
    /// The model's name.
    pub model: String,
    /// Distinct node names in the profile's run.
    pub profile_nodes: usize,
    pub by_name: usize,
    /// Through ORT's `_nchwc` renames.
    pub renamed: usize,
    /// Layout reorders ORT inserted.
    pub inserted: usize,
    pub unmatched: usize,
    /// The first unmatched names (at most 10).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmatched_names: Vec<String>,
    /// Graph nodes other than Constant ones (ORT folds those away).
    pub graph_nodes: usize,
    /// Graph nodes the profile ran (alone or fused).
    pub graph_nodes_run: usize,
    /// Of those, how many ran fused into another node.
    pub fused: usize,
}

impl LinkSummary {
    /// One line for people.
    pub fn line(&self) -> String {
        let mut s = format!(
            "linked {} of {} profile nodes to {} ({} by name, {} through ORT's layout renames, {})",
            self.by_name + self.renamed,
            self.profile_nodes - self.inserted,
            self.model,
            self.by_name,
            self.renamed,
            crate::units::count(self.inserted as u64, "inserted reorder")
        );
        s += &format!(
            "; {} of {} graph nodes (Constants aside) ran, {} of them fused into a neighbour",
            self.graph_nodes_run, self.graph_nodes, self.fused
        );
        if self.unmatched > 0 {
            s += &format!(
                "; not in the model: {}{}",
                self.unmatched_names.join(", "),
                if self.unmatched > self.unmatched_names.len() {
                    ", ..."
                } else {
                    ""
                }
            );
        }
        s
    }
}

/// Op types ORT fuses onto the convolution or matmul before them.
const FUSABLE: &[&str] = &[
    "Relu",
    "Clip",
    "Sigmoid",
    "HardSigmoid",
    "LeakyRelu",
    "Tanh",
    "Add",
    "Sum",
    "BatchNormalization",
    "HardSwish",
    "Mul",
];

fn anchors(op_type: &str) -> bool {
    matches!(
        op_type,
        "Conv" | "MatMul" | "Gemm" | "ConvTranspose" | "FusedConv"
    )
}

/// Name lookups over one graph (built once per import).
pub struct Linker<'g> {
    g: &'g Graph,
    op: HashMap<&'g str, OpId>,
    tensor: HashMap<&'g str, usize>,
}

impl<'g> Linker<'g> {
    pub fn new(g: &'g Graph) -> Linker<'g> {
        Linker {
            g,
            op: g.ops.iter().map(|o| (o.name, o.id)).collect(),
            tensor: g.tensors.iter().map(|t| (t.name, t.id)).collect(),
        }
    }

    /// The graph nodes profile node `name` ran, anchor first.
    pub fn link(&self, name: &str) -> (Link, Vec<OpId>) {
        if let Some(&o) = self.op.get(name) {
            return (Link::ByName, vec![o]);
        }
        if name.starts_with("Reorder") {
            return (Link::Inserted, Vec::new());
        }
        let Some(t) = name
            .strip_suffix("_nchwc")
            .and_then(|t| self.tensor.get(t).copied())
        else {
            return (Link::Unmatched, Vec::new());
        };
        let Some(p) = self.g.tensors.at(t).producer else {
            return (Link::Unmatched, Vec::new());
        };
        // Walk back over fused activations to the convolution they ran on.
        let mut group = vec![p];
        let mut cur = p;
        while FUSABLE.contains(&self.g.ops.at(cur).op_type) {
            let prev = self.g.ops.at(cur).inputs.iter().find_map(|&i| {
                let x = &self.g.tensors.at(i);
                x.producer.filter(|_| x.consumers.len() == 1)
            });
            match prev {
                Some(q) => {
                    group.push(q);
                    cur = q;
                    if anchors(self.g.ops.at(q).op_type) {
                        break;
                    }
                }
                None => break,
            }
        }
        // Anchor first: the convolution or matmul, else the producer.
        if let Some(i) = group
            .iter()
            .position(|&o| anchors(self.g.ops.at(o).op_type))
        {
            let a = group.remove(i);
            group.insert(0, a);
        }
        (Link::Renamed, group)
    }

    /// Elementwise graph nodes no profile node ran, whose input came from a
    /// node that ran (and went nowhere else): ORT folded them into it.
    /// `ran[op]` is the profile op each graph node ran in; filled in here.
    /// Returns how many were absorbed.
    pub fn absorb(&self, ran: &mut [Option<usize>]) -> usize {
        let mut n = 0;
        for o in &self.g.ops {
            if ran[o.id].is_some() || !FUSABLE.contains(&o.op_type) {
                continue;
            }
            let host = o.inputs.iter().find_map(|&i| {
                let x = &self.g.tensors.at(i);
                x.producer
                    .filter(|_| x.consumers.len() == 1)
                    .and_then(|p| ran[p])
            });
            if let Some(h) = host {
                ran[o.id] = Some(h);
                n += 1;
            }
        }
        n
    }
}

//! `--split graph`: which core runs each op, and each core's part of the
//! graph. Ops are placed by a list schedule over the dependency graph in
//! schedule order (each op goes to the core where it could start first,
//! counting the DRAM round trip of every input produced on another core),
//! or where the schedule config's `placement` pins them. A core's part
//! keeps its ops in schedule order; a tensor read on another core than
//! its producer's is published (streamed out) where it is produced and is
//! an input in DRAM on each core that reads it.

use crate::cost::roofline::op_time_ns;
use crate::cost::HardwareProfile;
use crate::graph::{Graph, Op, Tensor, TensorKind};
use crate::{Error, Result};
use std::collections::BTreeMap;

/// The core of every op (by op id), from the list schedule and `pinned`
/// (op name -> core); an unknown op name or a core past `cores` is an
/// error naming it.
pub fn place(
    g: &Graph,
    hw: &HardwareProfile,
    cores: usize,
    pinned: &BTreeMap<String, u32>,
) -> Result<Vec<usize>> {
    let mut fixed: Vec<Option<usize>> = vec![None; g.ops.len()];
    for (name, &core) in pinned {
        let op = g
            .ops
            .iter()
            .find(|o| o.name == name.as_str())
            .ok_or_else(|| {
                Error::Config(format!("placement: no op named {name:?} in the graph"))
            })?;
        if core as usize >= cores {
            return Err(Error::Config(format!(
                "placement: op {name:?} on core {core}, but the run has {cores} cores (0 to {})",
                cores - 1
            )));
        }
        fixed[op.id] = Some(core as usize);
    }
    let bw = hw
        .dram
        .read_bandwidth
        .0
        .min(hw.dram.write_bandwidth.0)
        .max(1.0);
    let mut free = vec![0f64; cores];
    let mut finish = vec![0f64; g.ops.len()];
    let mut at = vec![0usize; g.ops.len()];
    for op in &g.ops {
        let start_on = |c: usize| {
            op.inputs
                .iter()
                .filter_map(|&t| {
                    let p = g.tensors.producer(t)?;
                    let cross = if at[p] == c {
                        0.0
                    } else {
                        // Out to DRAM on its core, back in on this one.
                        2.0 * g.tensors.bytes(t) as f64 / bw * 1e9
                    };
                    Some(finish[p] + cross)
                })
                .fold(free[c], f64::max)
        };
        let c = fixed[op.id].unwrap_or_else(|| {
            (0..cores)
                .min_by(|&a, &b| start_on(a).total_cmp(&start_on(b)).then(a.cmp(&b)))
                .unwrap_or(0)
        });
        let start = start_on(c);
        let bytes: u64 = op
            .inputs
            .iter()
            .chain(op.outputs.iter())
            .map(|&t| g.tensors.bytes(t))
            .sum();
        finish[op.id] = start + op_time_ns(hw, op.flops, bytes).time_ns;
        free[c] = finish[op.id];
        at[op.id] = c;
    }
    Ok(at)
}

/// One core's part of the graph and how it maps to the whole.
#[derive(Debug, Clone)]
pub struct Part {
    pub graph: Graph,
    /// Global tensor id of each of the part's tensors.
    pub tensor_of: Vec<usize>,
    /// Global op id of each of the part's ops.
    pub op_of: Vec<usize>,
    /// Tensors read on another core: streamed out when produced here.
    pub publish: Vec<bool>,
    /// Tensors produced on another core: in DRAM once published there.
    pub cross_in: Vec<bool>,
}

/// Each core's part of `g` under the placement `at`.
pub fn parts(g: &Graph, at: &[usize], cores: usize) -> Vec<Part> {
    (0..cores).map(|c| part(g, at, c)).collect()
}

fn part(g: &Graph, at: &[usize], c: usize) -> Part {
    let op_of: Vec<usize> = g
        .ops
        .iter()
        .filter(|o| at[o.id] == c)
        .map(|o| o.id)
        .collect();
    let mut local: Vec<Option<usize>> = vec![None; g.tensors.len()];
    let mut tensor_of: Vec<usize> = Vec::new();
    for &o in &op_of {
        for &t in g.ops.inputs(o).iter().chain(g.ops.outputs(o).iter()) {
            if local[t].is_none() {
                local[t] = Some(tensor_of.len());
                tensor_of.push(t);
            }
        }
    }
    let local_op: BTreeMap<usize, usize> = op_of.iter().enumerate().map(|(i, &o)| (o, i)).collect();
    let mut publish = vec![false; tensor_of.len()];
    let mut cross_in = vec![false; tensor_of.len()];
    let tensors: Vec<Tensor> = tensor_of
        .iter()
        .enumerate()
        .map(|(id, &t)| {
            let src = &g.tensors.at(t);
            let producer = src.producer.and_then(|p| local_op.get(&p).copied());
            let elsewhere = src.producer.is_some() && producer.is_none();
            cross_in[id] = elsewhere;
            publish[id] = producer.is_some() && src.consumers.iter().any(|&u| at[u] != c);
            Tensor {
                id,
                kind: if elsewhere {
                    TensorKind::Input
                } else {
                    src.kind
                },
                producer,
                consumers: src
                    .consumers
                    .iter()
                    .filter_map(|u| local_op.get(u).copied())
                    .collect(),
                ..src.owned()
            }
        })
        .collect();
    let ops: Vec<Op> = op_of
        .iter()
        .enumerate()
        .map(|(i, &o)| {
            let src = g.ops.at(o);
            Op {
                id: i,
                inputs: src.inputs.iter().filter_map(|&t| local[t]).collect(),
                outputs: src.outputs.iter().filter_map(|&t| local[t]).collect(),
                ..src.owned()
            }
        })
        .collect();
    Part {
        graph: Graph {
            name: g.name.clone(),
            tensors: tensors.into(),
            ops: ops.into(),
        },
        tensor_of,
        op_of,
        publish,
        cross_in,
    }
}

//! A program's kernel calls as the IR, like an ONNX or TFLite model: one
//! op per kernel call in chain 0's order, one tensor per tensor value that
//! owns memory. ExecuTorch's emitter lists a call's arguments as its
//! inputs, then its `out` arguments, then its return value, which names
//! the `out` tensors again: the last argument says what the call writes.
//! A delegate call (a backend, an NPU's, running a lowered subgraph) is
//! one op writing the tensors it names that nothing wrote before.
//! A static view (`view_copy` turned into an alias by ExecuTorch's
//! passes) is a planned value no call writes, sharing the memory of the
//! value last written at its arena offset: it is read as that value, so
//! liveness counts the memory once, as ExecuTorch does.

use super::pte::{Call, Program, Slot, Value};
use crate::graph::{Graph, GraphBuilder, OpSpec, TensorKind, TensorSpec};
use std::collections::HashMap;

/// The graph, and what each value stands for in it (op `i` is call `i`).
pub struct Lowered {
    pub graph: Graph,
    /// Per program value, the graph tensor it is (aliases map to the value
    /// whose memory they share), if it is one.
    pub tensor_of_value: Vec<Option<usize>>,
    /// Per graph tensor, the value whose memory it is.
    pub value_of_tensor: Vec<usize>,
}

/// The values a kernel call writes: its return value, flattened.
fn returned(p: &Program, c: &Call) -> Vec<usize> {
    match c.args.last().map(|&a| (a, &p.values[a])) {
        Some((a, Value::Tensor(_))) => vec![a],
        Some((_, Value::List(items))) => items.clone(),
        _ => Vec::new(),
    }
}

/// Per call, the values it writes. A kernel call writes what its return
/// value names. A delegate call (a backend running a whole subgraph) lists
/// its inputs, then its outputs, with no return value repeated: it writes
/// the tensors it names that nothing wrote before (not a plan input, not a
/// constant, not written by an earlier call).
pub fn writes(p: &Program) -> Vec<Vec<usize>> {
    let mut seen = vec![false; p.values.len()];
    for &i in &p.inputs {
        seen[i] = true;
    }
    p.calls
        .iter()
        .map(|c| {
            let w: Vec<usize> = if c.op.starts_with(DELEGATE) {
                p.tensor_args(c)
                    .into_iter()
                    .filter(|&v| !seen[v] && p.tensor(v).is_some_and(|t| !t.constant))
                    .collect()
            } else {
                returned(p, c)
            };
            for v in p.tensor_args(c).into_iter().chain(w.iter().copied()) {
                seen[v] = true;
            }
            w
        })
        .collect()
}

/// How a delegate call's op is named (`delegate:XnnpackBackend`).
pub const DELEGATE: &str = "delegate:";

/// The value each program value's memory belongs to (itself, or for a
/// static view the value last written at its slot before it is read).
pub fn owners(p: &Program, writes: &[Vec<usize>]) -> Vec<usize> {
    let mut owner: Vec<usize> = (0..p.values.len()).collect();
    // Seen: written by a call, a plan input, or already resolved.
    let mut seen = vec![false; p.values.len()];
    let mut at_slot: HashMap<Slot, usize> = HashMap::new();
    for &i in &p.inputs {
        seen[i] = true;
        if let Some(s) = p.tensor(i).and_then(|t| t.slot) {
            at_slot.insert(s, i);
        }
    }
    for (c, written) in p.calls.iter().zip(writes) {
        for v in p.tensor_args(c) {
            let Some(slot) = p.tensor(v).and_then(|t| t.slot) else {
                continue;
            };
            if !seen[v] && !written.contains(&v) {
                seen[v] = true;
                if let Some(&base) = at_slot.get(&slot) {
                    owner[v] = owner[base];
                }
            }
        }
        for &v in written {
            seen[v] = true;
            if let Some(s) = p.tensor(v).and_then(|t| t.slot) {
                at_slot.insert(s, v);
            }
        }
    }
    owner
}

/// The graph of `p`, named `name`.
pub fn lower(p: &Program, name: &str) -> Result<Lowered, String> {
    if p.calls.is_empty() {
        return Err("the plan has no kernel calls".into());
    }
    let writes = writes(p);
    let owner = owners(p, &writes);
    let mut specs = Vec::with_capacity(p.calls.len());
    let mut used = vec![false; p.values.len()];
    let mut produced = vec![false; p.values.len()];
    for (c, written) in p.calls.iter().zip(&writes) {
        let outs: Vec<usize> = written
            .iter()
            .copied()
            .filter(|&v| p.tensor(v).is_some())
            .map(|v| owner[v])
            .collect();
        let mut ins: Vec<usize> = Vec::new();
        for v in p.tensor_args(c).into_iter().map(|v| owner[v]) {
            if !outs.contains(&v) && !ins.contains(&v) {
                ins.push(v);
            }
        }
        for &v in ins.iter().chain(&outs) {
            used[v] = true;
        }
        for &v in &outs {
            produced[v] = true;
        }
        let short = short_name(&c.op);
        specs.push(OpSpec {
            name: format!("{short}_{}", c.instruction).into(),
            op_type: short.into(),
            inputs: ins.iter().map(|v| value_name(*v).into()).collect(),
            outputs: outs.iter().map(|v| value_name(*v).into()).collect(),
            flops: Some(flops(p, &c.op, &ins, &outs)),
        });
    }
    let mut b = GraphBuilder::new(name);
    let mut tensor_of_value = vec![None; p.values.len()];
    let mut value_of_tensor = Vec::new();
    for (v, val) in p.values.iter().enumerate() {
        let Value::Tensor(t) = val else { continue };
        let is_input = p.inputs.contains(&v);
        if owner[v] != v || !(used[v] || is_input) {
            continue;
        }
        let kind = if is_input {
            Some(TensorKind::Input)
        } else if t.constant || !produced[v] {
            Some(TensorKind::Weight)
        } else {
            None
        };
        b.tensor(TensorSpec {
            name: value_name(v).into(),
            bytes: t.bytes,
            kind,
            shape: Some(t.shape.clone()),
            dtype: Some(t.dtype.into()),
        });
        tensor_of_value[v] = Some(value_of_tensor.len());
        value_of_tensor.push(v);
    }
    for (v, o) in owner.iter().enumerate() {
        if tensor_of_value[v].is_none() {
            tensor_of_value[v] = tensor_of_value[*o];
        }
    }
    for s in specs {
        b.op(s);
    }
    for &o in &p.outputs {
        if p.tensor(o).is_some() {
            b.output(value_name(owner[o]));
        }
    }
    let graph = b.build().map_err(|e| e.to_string())?;
    Ok(Lowered {
        graph,
        tensor_of_value,
        value_of_tensor,
    })
}

/// A value's tensor name: its index in the plan (`v52`), which ExecuTorch's
/// own tools print too.
pub fn value_name(v: usize) -> String {
    format!("v{v}")
}

/// `aten::convolution.out` -> `convolution`; `dim_order_ops::_clone_dim_order.out`
/// -> `_clone_dim_order`; a delegate is named by its backend.
pub fn short_name(op: &str) -> &str {
    if let Some(backend) = op.strip_prefix(DELEGATE) {
        return backend;
    }
    let base = op.rsplit("::").next().unwrap_or(op);
    base.split('.').next().unwrap_or(base)
}

/// FLOPs of one call from its kernel and shapes (the same simple counts as
/// the other front ends: 2 per multiply-add, one per element otherwise,
/// none for copies and views).
fn flops(p: &Program, op: &str, ins: &[usize], outs: &[usize]) -> f64 {
    let shape = |v: usize| p.tensor(v).map(|t| t.shape.as_slice()).unwrap_or(&[]);
    let elems = |v: usize| shape(v).iter().product::<u64>() as f64;
    let out: f64 = outs.iter().map(|&v| elems(v)).sum();
    let inp: f64 = ins.iter().map(|&v| elems(v)).sum();
    let last = |i: usize| {
        ins.get(i)
            .and_then(|&v| shape(v).last().copied())
            .unwrap_or(1) as f64
    };
    match short_name(op) {
        // Weight [Cout, Cin/groups, kh, kw].
        "convolution" => match ins.get(1).map(|&w| shape(w)) {
            Some([_, rest @ ..]) if !rest.is_empty() => {
                2.0 * out * rest.iter().product::<u64>() as f64
            }
            _ => 2.0 * out,
        },
        // addmm(bias, mat1, mat2): K = mat1's last dimension.
        "addmm" => 2.0 * out * last(1),
        "mm" | "bmm" | "matmul" | "linear" | "baddbmm" => 2.0 * out * last(0),
        "_softmax"
        | "_log_softmax"
        | "native_layer_norm"
        | "native_group_norm"
        | "native_batch_norm"
        | "_native_batch_norm_legit_no_training"
        | "mean"
        | "sum"
        | "amax"
        | "amin"
        | "any"
        | "max_pool2d_with_indices"
        | "avg_pool2d"
        | "adaptive_avg_pool2d"
        | "max_pool2d" => 5.0 * inp.max(out),
        s if is_data_movement(s) => 0.0,
        _ => out,
    }
}

/// Kernels that only move or copy bytes.
fn is_data_movement(s: &str) -> bool {
    s.ends_with("_copy")
        || matches!(
            s,
            "cat"
                | "clone"
                | "_clone_dim_order"
                | "_to_dim_order_copy"
                | "full_like"
                | "full"
                | "constant_pad_nd"
                | "split_with_sizes_copy"
                | "index"
                | "embedding"
                | "stack"
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::executorch::pte::PteTensor;

    fn tensor(slot: Option<(u32, u64)>, constant: bool) -> Value {
        Value::Tensor(PteTensor {
            shape: vec![1, 4],
            dtype: "float32",
            bytes: 16,
            slot: slot.map(|(arena, offset)| Slot { arena, offset }),
            constant,
        })
    }

    /// A delegate writing v2 from input v0 and weight v1; a static view v3
    /// of v2 read by a kernel writing v4 (args: input, out, return).
    fn program() -> Program {
        Program {
            method: "forward".into(),
            values: vec![
                tensor(Some((1, 0)), false),
                tensor(None, true),
                tensor(Some((1, 16)), false),
                tensor(Some((1, 16)), false),
                tensor(Some((1, 32)), false),
            ],
            calls: vec![
                Call {
                    instruction: 0,
                    op: format!("{DELEGATE}NpuBackend"),
                    args: vec![0, 1, 2],
                },
                Call {
                    instruction: 1,
                    op: "aten::relu.out".into(),
                    args: vec![3, 4, 4],
                },
            ],
            inputs: vec![0],
            outputs: vec![4],
            arena_bytes: vec![0, 48],
            instructions: 2,
        }
    }

    #[test]
    fn delegates_write_what_is_new_and_views_read_their_base() {
        let p = program();
        assert_eq!(writes(&p), vec![vec![2], vec![4]]);
        let l = lower(&p, "m").unwrap();
        let g = &l.graph;
        let names = |ids: &[usize]| -> Vec<String> {
            ids.iter()
                .map(|&t| g.tensors.at(t).name.to_string())
                .collect()
        };
        assert_eq!(g.ops.len(), 2);
        assert_eq!(g.ops.at(0).name, "NpuBackend_0");
        assert_eq!(names(g.ops.inputs(0)), ["v0", "v1"]);
        assert_eq!(names(g.ops.outputs(0)), ["v2"]);
        // The view is its base: no tensor of its own, read as v2.
        assert_eq!(names(g.ops.inputs(1)), ["v2"]);
        assert_eq!(names(g.ops.outputs(1)), ["v4"]);
        assert!(g.tensor_by_name("v3").is_none());
        assert_eq!(l.tensor_of_value[3], l.tensor_of_value[2]);
        assert_eq!(g.tensor_by_name("v1").unwrap().kind, TensorKind::Weight);
        assert_eq!(g.tensor_by_name("v0").unwrap().kind, TensorKind::Input);
        assert_eq!(g.tensor_by_name("v4").unwrap().kind, TensorKind::Output);
    }
}

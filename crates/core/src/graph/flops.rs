//! FLOP estimates per op type from tensor shapes, for the roofline time
//! (seed 003: an op's time is the larger of FLOPs/peak and bytes/bandwidth).
//! Estimates are deliberately simple and documented; `--calibrate` replaces
//! them with measured durations.

use super::{OpRef, TensorRef, Tensors};

fn elems(t: TensorRef<'_>) -> f64 {
    match t.elements() {
        Some(e) => e as f64,
        None => {
            // Without a shape, assume 4-byte elements.
            (t.bytes / 4) as f64
        }
    }
}

/// Which unit of work dominates an op: used for the roofline class and FLOPs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpClass {
    /// Conv, Gemm, MatMul, attention: many FLOPs per byte.
    Contraction,
    /// Add, Relu, BatchNorm, ...: about one FLOP per element.
    Elementwise,
    /// Pooling, reductions, softmax, normalisation.
    Reduction,
    /// Reshape, Transpose, Concat, Gather, ...: moves bytes, no arithmetic.
    DataMovement,
}

pub fn classify(op_type: &str) -> OpClass {
    match op_type {
        "Conv" | "ConvTranspose" | "Gemm" | "MatMul" | "MatMulInteger" | "QLinearConv"
        | "QLinearMatMul" | "Einsum" | "Attention" | "FusedConv" | "FusedGemm" => {
            OpClass::Contraction
        }
        "MaxPool"
        | "AveragePool"
        | "GlobalAveragePool"
        | "GlobalMaxPool"
        | "ReduceMean"
        | "ReduceSum"
        | "ReduceMax"
        | "ReduceMin"
        | "ReduceProd"
        | "ReduceL2"
        | "Softmax"
        | "LogSoftmax"
        | "LayerNormalization"
        | "InstanceNormalization"
        | "GroupNormalization"
        | "LRN"
        | "TopK"
        | "ArgMax"
        | "ArgMin" => OpClass::Reduction,
        "Reshape" | "Transpose" | "Concat" | "Split" | "Slice" | "Gather" | "Flatten"
        | "Squeeze" | "Unsqueeze" | "Identity" | "Shape" | "Constant" | "Expand" | "Tile"
        | "Pad" | "Resize" | "Upsample" | "ConstantOfShape" | "Cast" | "GatherElements"
        | "ScatterND" | "DepthToSpace" | "SpaceToDepth" => OpClass::DataMovement,
        _ => OpClass::Elementwise,
    }
}

/// Estimated floating-point operations of one op.
pub fn estimate(op: OpRef<'_>, tensors: &Tensors) -> f64 {
    let out_elems: f64 = op.outputs.iter().map(|&t| elems(tensors.at(t))).sum();
    let in_elems: f64 = op.inputs.iter().map(|&t| elems(tensors.at(t))).sum();
    match op.op_type {
        "Conv" | "ConvTranspose" | "QLinearConv" | "FusedConv" => {
            // 2 * outputs * (Cin/group * kH * kW) = 2 * out * W_elems / Cout.
            let w = op.inputs.get(1).map(|&t| tensors.at(t));
            match w.and_then(|w| w.shape) {
                Some(ws) if !ws.is_empty() && ws[0] > 0 => {
                    let per_out: f64 = ws[1..].iter().product::<u64>() as f64;
                    if op.op_type == "ConvTranspose" {
                        2.0 * in_elems.max(1.0) * per_out
                    } else {
                        2.0 * out_elems * per_out
                    }
                }
                _ => 2.0 * out_elems * 9.0,
            }
        }
        "Gemm" | "MatMul" | "MatMulInteger" | "QLinearMatMul" | "FusedGemm" => {
            // 2 * M * N * K = 2 * out * K, K = last dim of A (or first if transA).
            let k = op
                .inputs
                .first()
                .and_then(|&t| tensors.at(t).shape)
                .and_then(|s| s.last().copied())
                .unwrap_or(1) as f64;
            2.0 * out_elems * k
        }
        _ => match classify(op.op_type) {
            OpClass::DataMovement => 0.0,
            OpClass::Reduction => 5.0 * in_elems.max(out_elems),
            _ => out_elems.max(in_elems.min(out_elems)),
        },
    }
}

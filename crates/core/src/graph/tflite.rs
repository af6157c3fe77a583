//! The TFLite front end: subgraph 0 of a `.tflite` flatbuffer lowered into
//! the IR. Every TFLite tensor carries its shape and type, so no inference
//! is needed: bytes = elements x element size (int8 = 1 byte); a tensor no
//! op produces that is not a graph input is a constant (a weight); the
//! file's operator order is the schedule. The flatbuffer is read through
//! tract-tflite's generated schema (verified before anything is read, so a
//! truncated or hostile file is one error, not a panic).

use super::{GraphBuilder, LoadOptions, OpSpec, TensorKind, TensorSpec};
use crate::{Error, Result};
use std::collections::HashSet;
use std::path::Path;
use tract_tflite::tflite;

const FORMAT: &str = "TFLite model";

/// The 4-byte file identifier at offset 4 of every TFLite flatbuffer.
pub const IDENTIFIER: &[u8; 4] = b"TFL3";

/// Loads `path` (subgraph 0) into the IR.
pub fn load_tflite(path: &Path, opts: &LoadOptions) -> Result<super::Graph> {
    if opts.batch.is_some() || !opts.dims.is_empty() {
        return Err(Error::Unsupported(format!(
            "{}: --batch and --dim do not apply to TFLite models (their shapes are fixed in the file)",
            path.display()
        )));
    }
    let bytes = crate::input::read(path)?;
    let name = path
        .file_name()
        .map(|s| s.to_string_lossy().trim_end_matches(".tflite").to_string())
        .unwrap_or_default();
    lower(&bytes, &name).map_err(|detail| Error::parse(path, FORMAT, detail))
}

/// What one TFLite tensor contributes to the IR.
struct Declared {
    name: String,
    shape: Vec<u64>,
    dtype: &'static str,
    bytes: u64,
}

/// The flatbuffer in `bytes` as a graph named `name`; errors are the detail
/// of a parse error (the caller names the file).
fn lower(bytes: &[u8], name: &str) -> std::result::Result<super::Graph, String> {
    if bytes.len() < 8 || &bytes[4..8] != IDENTIFIER {
        return Err("no TFL3 file identifier (not a TFLite flatbuffer)".into());
    }
    // The verifier's message spans lines: one line for people.
    let model = tflite::root_as_model(bytes).map_err(|e| {
        let msg = e.to_string();
        format!(
            "damaged flatbuffer: {}",
            msg.split_whitespace().collect::<Vec<_>>().join(" ")
        )
    })?;
    let subgraphs = model.subgraphs().ok_or("the model has no subgraphs")?;
    if subgraphs.is_empty() {
        return Err("the model has no subgraphs".into());
    }
    let sg = subgraphs.get(0);
    let codes = model
        .operator_codes()
        .ok_or("the model has no operator codes")?;
    let tensors = sg.tensors().ok_or("subgraph 0 has no tensors")?;
    let ops = sg.operators().ok_or("subgraph 0 has no operators")?;
    if ops.is_empty() {
        return Err("subgraph 0 has no operators".into());
    }
    let n_tensors = tensors.len();
    let indices = |v, what: &str| checked_indices(v, n_tensors, what);
    let mut declared: Vec<Declared> = Vec::with_capacity(n_tensors);
    let mut seen = HashSet::new();
    for (i, t) in tensors.iter().enumerate() {
        let (dtype, size) = dtype_of(t.type_())
            .ok_or_else(|| format!("tensor {i}: unsupported type {:?}", t.type_()))?;
        // A negative dimension (-1: unknown) would make a 0-byte tensor,
        // and i32::MAX is a sentinel, not a size (17.5 TiB peaks).
        let raw: Vec<i32> = t.shape().map(|s| s.iter().collect()).unwrap_or_default();
        if let Some(&d) = raw.iter().find(|&&d| !(0..i32::MAX).contains(&d)) {
            return Err(format!(
                "tensor {i} ({:?}): dimension {d} in shape {raw:?} is not a size (a model used here has fixed, non-negative shapes)",
                t.name().unwrap_or("")
            ));
        }
        let shape: Vec<u64> = raw.iter().map(|&d| d as u64).collect();
        let elems: u64 = crate::limits::elems_of(&shape).ok_or_else(|| {
            format!("tensor {i}: shape {shape:?} has more elements than 64 bits count")
        })?;
        // Names are usually unique; a repeat gets its index so both exist.
        let mut tname = t.name().unwrap_or("").to_string();
        if tname.is_empty() || !seen.insert(tname.clone()) {
            tname = format!("{tname}#{i}");
            seen.insert(tname.clone());
        }
        declared.push(Declared {
            name: tname,
            shape,
            dtype,
            bytes: crate::limits::bytes_of_elems(elems, size)
                .ok_or_else(|| format!("tensor {i}: size overflows 64 bits"))?,
        });
    }
    let graph_inputs: Vec<usize> = indices(sg.inputs(), "the subgraph's input list")?;
    let graph_outputs: Vec<usize> = indices(sg.outputs(), "the subgraph's output list")?;

    let mut specs: Vec<OpSpec> = Vec::with_capacity(ops.len());
    let mut op_names: HashSet<String> = HashSet::new();
    let mut produced = vec![false; n_tensors];
    let mut used = vec![false; n_tensors];
    for (k, op) in ops.iter().enumerate() {
        let ci = op.opcode_index() as usize;
        if ci >= codes.len() {
            return Err(format!(
                "operator {k} uses opcode {ci}, out of range (the model has {})",
                codes.len()
            ));
        }
        let op_type = op_type_of(&codes.get(ci));
        if matches!(op_type.as_str(), "WHILE" | "IF" | "CALL_ONCE") {
            return Err(format!(
                "operator {k} is {op_type}: control flow over subgraphs is not supported"
            ));
        }
        let what = format!("operator {k} ({op_type})");
        let ins: Vec<usize> = indices(op.inputs(), &what)?;
        let outs: Vec<usize> = indices(op.outputs(), &what)?;
        for &t in &outs {
            produced[t] = true;
        }
        for &t in &ins {
            used[t] = true;
        }
        let flops = flops_of(&op_type, &ins, &outs, &declared);
        // An op is named after its first output, as TFLite tools (and
        // Vela) show it; a repeat gets its index.
        let mut op_name = outs
            .first()
            .map(|&t| declared[t].name.clone())
            .unwrap_or_else(|| format!("{op_type}_{k}"));
        if !op_names.insert(op_name.clone()) {
            op_name = format!("{op_name}#op{k}");
            op_names.insert(op_name.clone());
        }
        specs.push(OpSpec {
            name: op_name.into(),
            op_type: op_type.into(),
            inputs: ins
                .iter()
                .map(|&t| declared[t].name.as_str().into())
                .collect(),
            outputs: outs
                .iter()
                .map(|&t| declared[t].name.as_str().into())
                .collect(),
            flops: Some(flops),
        });
    }

    let mut b = GraphBuilder::new(name);
    let inputs: HashSet<usize> = graph_inputs.iter().copied().collect();
    for (i, d) in declared.iter().enumerate() {
        if !produced[i] && !used[i] && !inputs.contains(&i) {
            continue; // not part of subgraph 0's computation
        }
        let kind = if inputs.contains(&i) {
            Some(TensorKind::Input)
        } else if !produced[i] {
            Some(TensorKind::Weight)
        } else {
            None
        };
        b.tensor(TensorSpec {
            name: d.name.clone().into(),
            bytes: d.bytes,
            kind,
            shape: Some(d.shape.clone()),
            dtype: Some(d.dtype.to_string().into()),
        });
    }
    for s in specs {
        b.op(s);
    }
    for &o in &graph_outputs {
        b.output(declared[o].name.clone());
    }
    b.build().map_err(|e| e.to_string())
}

/// Tensor indices from the file, checked against the subgraph's `n`
/// tensors (-1, an omitted optional operand, left out).
fn checked_indices(
    v: Option<impl IntoIterator<Item = i32>>,
    n: usize,
    what: &str,
) -> std::result::Result<Vec<usize>, String> {
    v.into_iter()
        .flatten()
        .filter(|&i| i != -1)
        .map(|i| match usize::try_from(i) {
            Ok(u) if u < n => Ok(u),
            _ => Err(format!(
                "{what} refers to tensor {i}, out of range (subgraph 0 has {n})"
            )),
        })
        .collect()
}

/// The element type's name and size in bits.
fn dtype_of(t: tflite::TensorType) -> Option<(&'static str, u64)> {
    use tflite::TensorType as T;
    Some(match t {
        T::FLOAT32 => ("float32", 32),
        T::FLOAT16 => ("float16", 16),
        T::INT32 => ("int32", 32),
        T::UINT8 => ("uint8", 8),
        T::INT64 => ("int64", 64),
        T::BOOL => ("bool", 8),
        T::INT16 => ("int16", 16),
        T::INT8 => ("int8", 8),
        T::FLOAT64 => ("float64", 64),
        T::UINT64 => ("uint64", 64),
        T::UINT32 => ("uint32", 32),
        T::UINT16 => ("uint16", 16),
        T::INT4 => ("int4", 4),
        T::COMPLEX64 => ("complex64", 64),
        T::COMPLEX128 => ("complex128", 128),
        _ => return None,
    })
}

/// The builtin operator's name (`CONV_2D`), or a custom op's code.
fn op_type_of(code: &tflite::OperatorCode) -> String {
    // Files written before the extended enum keep the code in the
    // deprecated byte; newer ones set both (take the larger).
    let builtin = tflite::BuiltinOperator(
        code.builtin_code()
            .0
            .max(code.deprecated_builtin_code() as i32),
    );
    if builtin == tflite::BuiltinOperator::CUSTOM {
        return code.custom_code().unwrap_or("CUSTOM").to_string();
    }
    builtin
        .variant_name()
        .map(str::to_string)
        .unwrap_or_else(|| format!("BUILTIN_{}", builtin.0))
}

/// FLOPs from the operands' shapes (2 per multiply-add for contractions,
/// one per output element otherwise): TFLite's weight layouts are known.
fn flops_of(op_type: &str, ins: &[usize], outs: &[usize], d: &[Declared]) -> f64 {
    let elems = |t: usize| d[t].shape.iter().product::<u64>() as f64;
    let out = outs.first().map(|&t| elems(t)).unwrap_or(0.0);
    let dim = |t: usize, k: usize| d[t].shape.get(k).copied().unwrap_or(1) as f64;
    let last = |t: usize| d[t].shape.last().copied().unwrap_or(1) as f64;
    match (op_type, ins.get(1)) {
        // Filter [cout, kh, kw, cin]: kh*kw*cin MACs per output element.
        ("CONV_2D", Some(&w)) => 2.0 * out * dim(w, 1) * dim(w, 2) * dim(w, 3),
        // Filter [1, kh, kw, cout]: kh*kw per output element.
        ("DEPTHWISE_CONV_2D", Some(&w)) => 2.0 * out * dim(w, 1) * dim(w, 2),
        // Weights [out, in].
        ("FULLY_CONNECTED", Some(&w)) => 2.0 * out * last(w),
        ("BATCH_MATMUL", _) => 2.0 * out * ins.first().map(|&a| last(a)).unwrap_or(1.0),
        ("TRANSPOSE_CONV", _) => 2.0 * out * ins.get(1).map(|&w| elems(w)).unwrap_or(1.0),
        _ => out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_foreign_bytes_are_refused_by_name() {
        assert!(lower(b"", "m").unwrap_err().contains("TFL3"));
        assert!(lower(b"\0\0\0\0ONNX1234", "m")
            .unwrap_err()
            .contains("TFL3"));
        let err = lower(b"\x10\0\0\0TFL3\0\0\0\0", "m").unwrap_err();
        assert!(err.contains("damaged"), "{err}");
    }
}

//! The spillscope graph JSON format, for IRs that are not ONNX (MLIR dumps,
//! in-house compilers). Documented in `docs/graph-json.md`:
//!
//! ```json
//! { "name": "toy",
//!   "tensors": [ {"name": "x", "bytes": 4096, "kind": "input"},
//!                {"name": "w", "shape": [64, 3, 3, 3], "dtype": "f32", "kind": "weight"},
//!                {"name": "y", "bytes": 8192} ],
//!   "ops": [ {"name": "conv", "op_type": "Conv", "inputs": ["x", "w"], "outputs": ["y"]} ],
//!   "outputs": ["y"] }
//! ```
//! Edges are implied by tensor names: an op's output feeds every op that lists
//! it as an input. Ops are taken in file order when that order is topological.

use super::{Graph, GraphBuilder, OpSpec, TensorKind, TensorSpec};
use crate::limits;
use crate::{Error, Result};
use compact_str::CompactString;
use serde::{Deserialize, Serialize};
use std::path::Path;

mod stream;

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphJson {
    #[serde(default)]
    pub name: Option<String>,
    pub tensors: Vec<TensorJson>,
    pub ops: Vec<OpJson>,
    #[serde(default)]
    pub outputs: Vec<CompactString>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorJson {
    pub name: CompactString,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::input::exact_vec_opt"
    )]
    pub shape: Option<Vec<u64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<CompactString>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<TensorKind>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpJson {
    pub name: CompactString,
    #[serde(default = "default_op_type")]
    pub op_type: CompactString,
    #[serde(default, deserialize_with = "crate::input::exact_vec")]
    pub inputs: Vec<CompactString>,
    #[serde(default, deserialize_with = "crate::input::exact_vec")]
    pub outputs: Vec<CompactString>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flops: Option<f64>,
}

/// An op as the builder took it, written back as the file spells it.
impl From<OpSpec> for OpJson {
    fn from(s: OpSpec) -> OpJson {
        OpJson {
            name: s.name,
            op_type: s.op_type,
            inputs: s.inputs,
            outputs: s.outputs,
            flops: s.flops,
        }
    }
}

fn default_op_type() -> CompactString {
    "Unknown".into()
}

/// Bytes per element of a dtype name (ONNX and numpy spellings).
pub fn dtype_size(dtype: &str) -> Option<u64> {
    Some(match dtype.to_ascii_lowercase().as_str() {
        "f64" | "float64" | "double" | "i64" | "int64" | "u64" | "uint64" | "c64" | "complex64" => {
            8
        }
        "f32" | "float32" | "float" | "i32" | "int32" | "u32" | "uint32" => 4,
        "f16" | "float16" | "half" | "bf16" | "bfloat16" | "i16" | "int16" | "u16" | "uint16" => 2,
        "i8" | "int8" | "u8" | "uint8" | "bool" | "f8" | "float8" | "fp8" => 1,
        "c128" | "complex128" => 16,
        _ => return None,
    })
}

/// Lowers parsed graph JSON into the IR; `origin` names the file in errors.
pub fn graph_from_json(doc: GraphJson, origin: &str) -> Result<Graph> {
    let mut b = GraphBuilder::new(doc.name.unwrap_or_else(|| origin.to_string()));
    for t in doc.tensors {
        b.tensor(tensor_spec(t)?);
    }
    for o in doc.ops {
        b.op(op_spec(o)?);
    }
    for o in doc.outputs {
        b.output(o);
    }
    b.build()
}

/// One tensor of the file as the builder takes it: its size from `bytes`,
/// else from its shape and dtype (f32 by default).
pub(crate) fn tensor_spec(t: TensorJson) -> Result<TensorSpec> {
    let bytes = match (t.bytes, &t.shape, &t.dtype) {
        (Some(b), _, _) => b,
        (None, Some(shape), dtype) => {
            let dt = dtype.as_deref().unwrap_or("f32");
            let size = dtype_size(dt).ok_or_else(|| Error::Tensor {
                tensor: t.name.clone().into(),
                detail: format!("unsupported dtype {dt:?}"),
            })?;
            limits::elems_of(shape)
                .and_then(|n| n.checked_mul(size))
                .ok_or_else(|| Error::Tensor {
                    tensor: t.name.clone().into(),
                    detail: format!(
                        "size overflows 64 bits (shape {} of {dt})",
                        limits::shape_text(shape)
                    ),
                })?
        }
        (None, None, _) => {
            return Err(Error::Tensor {
                tensor: t.name.clone().into(),
                detail: "has neither `bytes` nor `shape`: its size is unknown".into(),
            })
        }
    };
    Ok(TensorSpec {
        name: t.name,
        bytes,
        kind: t.kind,
        shape: t.shape,
        dtype: t.dtype,
    })
}

/// One op of the file as the builder takes it; FLOPs, when given, must be a
/// number of zero or more.
pub(crate) fn op_spec(o: OpJson) -> Result<OpSpec> {
    if let Some(f) = o.flops.filter(|f| f.is_nan() || *f < 0.0) {
        return Err(Error::Node {
            node: o.name.into(),
            detail: format!("flops must be zero or more, not {f}"),
        });
    }
    Ok(OpSpec {
        name: o.name,
        op_type: o.op_type,
        inputs: o.inputs,
        outputs: o.outputs,
        flops: o.flops,
    })
}

/// Reads a graph JSON file as a stream ([`stream`]): neither the file's
/// text nor a parsed document is ever held whole, only the builder's specs
/// and then the graph. Refused in one line before reading when it would
/// not fit the memory budget ([`crate::input::check_budget`]).
pub fn load_graph_json(path: &Path) -> Result<Graph> {
    let size = crate::input::check_size(path)?;
    crate::input::check_budget(
        path,
        size,
        limits::GRAPH_JSON_BYTES_PER_FILE_BYTE,
        "graph JSON",
    )?;
    let origin = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    stream::load(path, &origin)
}

/// Writes a graph back out in the JSON format (used by `gen` and tests).
pub fn graph_to_json(g: &Graph) -> GraphJson {
    GraphJson {
        name: Some(g.name.clone()),
        tensors: g.tensors.iter().map(tensor_json).collect(),
        ops: (0..g.ops.len()).map(|i| op_json(g, i)).collect(),
        outputs: output_names(g).map(Into::into).collect(),
    }
}

fn tensor_json(t: crate::graph::TensorRef) -> TensorJson {
    TensorJson {
        name: t.name.into(),
        bytes: Some(t.bytes),
        shape: t.shape.map(<[u64]>::to_vec),
        dtype: t.dtype.map(Into::into),
        kind: match t.kind {
            TensorKind::Output | TensorKind::Activation => None,
            k => Some(k),
        },
    }
}

fn op_json(g: &Graph, i: usize) -> OpJson {
    super::transform::op_spec(g, i).into()
}

fn output_names(g: &Graph) -> impl Iterator<Item = &str> {
    g.tensors
        .iter()
        .filter(|t| t.kind == TensorKind::Output)
        .map(|t| t.name)
}

/// A graph as [`graph_to_json`] writes it, made row by row as it is
/// serialised: `gen graph --ops 10000000` held the graph, a copy of it as
/// rows and its 2.3 GB of text at once (7.6 GB).
pub struct GraphJsonOf<'a>(pub &'a Graph);

impl Serialize for GraphJsonOf<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use crate::output::SeqOf;
        use serde::ser::SerializeStruct;
        let g = self.0;
        let mut st = s.serialize_struct("GraphJson", 4)?;
        st.serialize_field("name", &Some(&g.name))?;
        st.serialize_field("tensors", &SeqOf(|| g.tensors.iter().map(tensor_json)))?;
        st.serialize_field("ops", &SeqOf(|| (0..g.ops.len()).map(|i| op_json(g, i))))?;
        st.serialize_field("outputs", &SeqOf(|| output_names(g)))?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::gen;

    #[test]
    fn a_graph_streamed_out_is_the_graph_written_whole() {
        let onnx_like = {
            let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/data/encoder_decoder.json");
            load_graph_json(&p).unwrap()
        };
        for g in [
            gen::transformer_with_ops(300),
            gen::chain(20, 4096),
            gen::fanout(7, 100),
            gen::densenet_like(&[2, 3]),
            onnx_like,
        ] {
            let whole = serde_json::to_string(&graph_to_json(&g)).unwrap();
            let streamed = serde_json::to_string(&GraphJsonOf(&g)).unwrap();
            assert_eq!(streamed, whole, "{}", g.name);
            // And it reads back as the same graph.
            let back: GraphJson = serde_json::from_str(&streamed).unwrap();
            assert_eq!(back.ops.len(), g.ops.len());
            assert_eq!(back.tensors.len(), g.tensors.len());
        }
    }
}

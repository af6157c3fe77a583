//! The graph IR: ops in a schedule order, tensors with byte sizes and def-use
//! links (dependencies between ops follow from them; [`topo`] is the one
//! topological sort). Every front end (ONNX, graph JSON, generated graphs)
//! lowers into this one shape so the simulator sees one IR.
//!
//! Owns: the IR, the front ends that build it, liveness, FLOP estimates,
//! graph rewrites (fusion, fp16, order) and the per-op lower bound on spill
//! traffic. May import only the foundations (`units`, `input`, `error`);
//! everything else in the pipeline imports it.

pub mod bounds;
pub mod builder;
pub mod executorch;
pub mod flops;
pub mod gen;
pub mod json;
pub mod kernel;
pub mod liveness;
#[cfg(feature = "onnx")]
pub mod onnx;
pub mod ops;
pub mod tensors;
#[cfg(feature = "tflite")]
pub mod tflite;
pub mod topo;
pub mod transform;

pub use builder::{GraphBuilder, OpSpec, TensorSpec};
pub use liveness::{LiveInterval, Liveness};
pub use ops::{OpRef, Ops};
pub use tensors::{TensorRef, Tensors};

use compact_str::CompactString;
use serde::{Deserialize, Serialize};
use std::path::Path;

pub type TensorId = usize;
pub type OpId = usize;

/// Role of a tensor; decides where it starts (DRAM or on chip) and whether a
/// DRAM copy already exists (weights and inputs can be dropped without a write).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TensorKind {
    Input,
    Activation,
    Weight,
    Output,
}

impl TensorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TensorKind::Input => "input",
            TensorKind::Activation => "activation",
            TensorKind::Weight => "weight",
            TensorKind::Output => "output",
        }
    }
}

/// A value flowing between ops.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tensor {
    pub id: TensorId,
    pub name: CompactString,
    pub bytes: u64,
    pub kind: TensorKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<u64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<CompactString>,
    pub producer: Option<OpId>,
    pub consumers: Vec<OpId>,
}

impl Tensor {
    pub fn elements(&self) -> Option<u64> {
        self.shape.as_ref().map(|s| s.iter().product())
    }
}

/// One operator at one step of the schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Op {
    pub id: OpId,
    pub name: CompactString,
    pub op_type: CompactString,
    pub inputs: Vec<TensorId>,
    pub outputs: Vec<TensorId>,
    /// Floating-point operations, for the roofline time.
    pub flops: f64,
    /// The unit (pipe) it runs on, when the front end knows it (a kernel
    /// DAG's MTE2, CUBE, ...); the trace's ops carry it.
    pub unit: Option<String>,
}

/// A computation graph in schedule order (op index = step). Serialised
/// only to key the result cache by its content.
#[derive(Debug, Clone, Serialize)]
pub struct Graph {
    pub name: String,
    pub tensors: Tensors,
    pub ops: Ops,
}

impl Graph {
    pub fn tensor_by_name(&self, name: &str) -> Option<TensorRef<'_>> {
        self.tensors.iter().find(|t| t.name == name)
    }
    pub fn op_by_name(&self, name: &str) -> Option<OpRef<'_>> {
        self.ops.iter().find(|o| o.name == name)
    }
    /// Bytes of all weights (initializers), streamed or resident.
    pub fn weight_bytes(&self) -> u64 {
        self.tensors
            .iter()
            .filter(|t| t.kind == TensorKind::Weight)
            .map(|t| t.bytes)
            .sum()
    }
    /// Distinct operand tensors of an op (inputs then outputs), in order.
    pub fn operands(&self, op: OpId) -> Vec<TensorId> {
        let o = self.ops.at(op);
        let mut v: Vec<TensorId> = Vec::with_capacity(o.inputs.len() + o.outputs.len());
        for &t in o.inputs.iter().chain(o.outputs.iter()) {
            if !v.contains(&t) {
                v.push(t);
            }
        }
        v
    }
}

/// Options that shape how a model file is lowered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadOptions {
    /// Values for symbolic dimensions (`--dim N=8`).
    pub dims: Vec<(String, u64)>,
    /// Override the leading (batch) dimension of every graph input.
    pub batch: Option<u64>,
}

/// Loads a model by file type: `.onnx` and `.tflite` through tract's
/// readers, otherwise graph JSON.
pub fn load(path: &Path, opts: &LoadOptions) -> crate::Result<Graph> {
    if let Err(e) = std::fs::metadata(path) {
        return Err(crate::Error::io(path, e));
    }
    // A trace given where a model is expected: say which command reads it.
    let detected = crate::input::detect(path).ok();
    if let Some(f) = detected {
        if !f.is_model() {
            return Err(crate::Error::WrongInput {
                path: path.to_path_buf(),
                what: format!("{}, not a model", crate::units::with_article(f.label())),
                hint: "open it with `spillscope view`, `report` or `verify`; `suggest` re-simulates a spillscope trace".into(),
            });
        }
    }
    let is_onnx = path
        .extension()
        .map(|e| e.eq_ignore_ascii_case("onnx"))
        .unwrap_or(false);
    if is_onnx {
        #[cfg(feature = "onnx")]
        {
            return onnx::load_onnx(path, opts);
        }
        #[cfg(not(feature = "onnx"))]
        {
            let _ = opts;
            return Err(crate::Error::Unsupported(format!(
                "{}: ONNX support was not compiled in (build with the `onnx` feature)",
                path.display()
            )));
        }
    }
    if detected == Some(crate::input::Format::Tflite) {
        #[cfg(feature = "tflite")]
        {
            return tflite::load_tflite(path, opts);
        }
        #[cfg(not(feature = "tflite"))]
        {
            return Err(crate::Error::Unsupported(format!(
                "{}: TFLite support was not compiled in (build with the `tflite` feature)",
                path.display()
            )));
        }
    }
    if detected == Some(crate::input::Format::Pte) {
        return executorch::load(path, opts);
    }
    if detected == Some(crate::input::Format::Kernel) {
        return kernel::Kernel::load(path)?.to_graph();
    }
    if let Some(kind) = crate::input::foreign_kind(path) {
        return Err(crate::Error::WrongInput {
            path: path.to_path_buf(),
            what: format!("{kind}, not a model"),
            hint: "spillscope reads ONNX (.onnx), TFLite (.tflite), ExecuTorch (.pte), graph JSON and NPU kernel DAGs"
                .into(),
        });
    }
    json::load_graph_json(path)
}

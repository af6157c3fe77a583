//! ONNX front end through tract: every intermediate tensor's shape and dtype
//! comes from tract's analysis of the per-node inference model (which keeps
//! ONNX node and tensor names), falling back to the file's `value_info`.
//!
//! Weight *values* never matter here, only their sizes, so initializers whose
//! external data file is absent are turned into typed graph inputs before
//! tract sees them: the model loads with nothing but its `.onnx` file.

use super::{Graph, GraphBuilder, LoadOptions, OpSpec, TensorKind, TensorSpec};
use crate::limits;
use crate::{Error, Result};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use tract_onnx::pb;
use tract_onnx::pb::tensor_shape_proto::dimension::Value as DimValue;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::infer::Factoid;

/// Bytes per element of an ONNX `TensorProto.DataType` code, and its name.
fn onnx_dtype(code: i32) -> Option<(f64, &'static str)> {
    Some(match code {
        1 => (4.0, "f32"),
        2 => (1.0, "u8"),
        3 => (1.0, "i8"),
        4 => (2.0, "u16"),
        5 => (2.0, "i16"),
        6 => (4.0, "i32"),
        7 => (8.0, "i64"),
        9 => (1.0, "bool"),
        10 => (2.0, "f16"),
        11 => (8.0, "f64"),
        12 => (4.0, "u32"),
        13 => (8.0, "u64"),
        14 => (8.0, "c64"),
        15 => (16.0, "c128"),
        16 => (2.0, "bf16"),
        17..=20 => (1.0, "f8"),
        21 | 22 => (0.5, "i4"),
        _ => return None,
    })
}

fn tract_dtype(dt: DatumType) -> Option<(f64, String)> {
    let name = format!("{dt:?}").to_lowercase();
    let size = match dt {
        // Shape values are int64 in ONNX; tract carries them as symbolic dims.
        DatumType::TDim => 8.0,
        DatumType::String | DatumType::Blob => return None,
        other => other.size_of() as f64,
    };
    Some((size, name))
}

/// Bytes of a tensor of `shape` with `elem` bytes per element (0.5 for
/// 4-bit types), or an error naming the tensor when it overflows 64 bits
/// (a `--batch` or `--dim` far beyond any device).
fn bytes_of(tensor: &str, shape: &[u64], elem: f64, dtype: &str) -> Result<u64> {
    let bits = (elem * 8.0).round() as u64;
    limits::elems_of(shape)
        .and_then(|n| limits::bytes_of_elems(n, bits))
        .ok_or_else(|| Error::Tensor {
            tensor: tensor.to_string(),
            detail: format!(
                "size overflows 64 bits (shape {} of {dtype})",
                limits::shape_text(shape)
            ),
        })
}

struct Known {
    shape: Option<Vec<u64>>,
    dtype: Option<(f64, String)>,
}

fn value_info_entry(vi: &pb::ValueInfoProto) -> Known {
    let mut k = Known {
        shape: None,
        dtype: None,
    };
    if let Some(pb::type_proto::Value::TensorType(tt)) =
        vi.r#type.as_ref().and_then(|t| t.value.as_ref())
    {
        k.dtype = onnx_dtype(tt.elem_type).map(|(s, n)| (s, n.to_string()));
        if let Some(sh) = &tt.shape {
            let dims: Option<Vec<u64>> = sh
                .dim
                .iter()
                .map(|d| match &d.value {
                    Some(DimValue::DimValue(v)) if *v >= 0 => Some(*v as u64),
                    _ => None,
                })
                .collect();
            k.shape = dims;
        }
    }
    k
}

fn substitute_dims(vi: &mut pb::ValueInfoProto, dims: &HashMap<String, u64>, batch: Option<u64>) {
    if let Some(pb::type_proto::Value::TensorType(tt)) =
        vi.r#type.as_mut().and_then(|t| t.value.as_mut())
    {
        if let Some(sh) = tt.shape.as_mut() {
            for (i, d) in sh.dim.iter_mut().enumerate() {
                if i == 0 {
                    if let Some(b) = batch {
                        d.value = Some(DimValue::DimValue(b as i64));
                        continue;
                    }
                }
                if let Some(DimValue::DimParam(p)) = &d.value {
                    if let Some(&v) = dims.get(p) {
                        d.value = Some(DimValue::DimValue(v as i64));
                    }
                }
            }
        }
    }
}

std::thread_local! {
    /// Set while tract runs under [`guarded`]: its panics are caught and
    /// reported as errors, so they must not also be printed.
    static QUIET_PANICS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, turning a panic inside it into an error naming the file.
/// tract indexes attributes of malformed models without checks (fuzzing
/// found `pads` shorter than the kernel's rank panicking in its padding
/// code); a bad file must be one clear error, not a crash.
fn guarded<T>(path: &Path, f: impl FnOnce() -> Result<T>) -> Result<T> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET_PANICS.with(std::cell::Cell::get) {
                previous(info)
            }
        }));
    });
    let was = QUIET_PANICS.with(|q| q.replace(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET_PANICS.with(|q| q.set(was));
    r.unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown failure".into());
        Err(Error::parse(
            path,
            "ONNX model",
            format!("malformed model: tract failed while analysing it ({msg})"),
        ))
    })
}

/// Where tensor shapes come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shapes {
    /// The file's own `value_info` when it gives every tensor a shape and a
    /// dtype (tract's analysis, most of a large model's load time, is then
    /// skipped); tract otherwise.
    FileWhenComplete,
    /// Always tract's analysis (the file's `value_info` as a fallback).
    Inferred,
}

/// Loads an ONNX model into the IR. Shapes come from the file's
/// `value_info` when it has one for every tensor (as models saved after
/// ONNX shape inference do), else from tract's analysis.
pub fn load_onnx(path: &Path, opts: &LoadOptions) -> Result<Graph> {
    guarded(path, || {
        load_onnx_unguarded(path, opts, Shapes::FileWhenComplete)
    })
}

/// [`load_onnx`] with tract's analysis whatever the file says (to check the
/// file's shapes against it).
pub fn load_onnx_inferred(path: &Path, opts: &LoadOptions) -> Result<Graph> {
    guarded(path, || load_onnx_unguarded(path, opts, Shapes::Inferred))
}

fn load_onnx_unguarded(path: &Path, opts: &LoadOptions, shapes: Shapes) -> Result<Graph> {
    let bytes = crate::input::read(path)?;
    let framework = tract_onnx::onnx();
    let mut proto: pb::ModelProto = framework
        .proto_model_for_read(&mut bytes.as_slice())
        .map_err(|e| Error::parse(path, "ONNX model", format!("{e:#}")))?;
    drop(bytes);
    let name = path
        .file_name()
        .map(|s| s.to_string_lossy().trim_end_matches(".onnx").to_string())
        .unwrap_or_default();
    let graph = proto
        .graph
        .as_mut()
        .ok_or_else(|| Error::parse(path, "ONNX model", "the file holds no graph"))?;
    if graph.node.is_empty() {
        return Err(Error::parse(path, "ONNX model", "the graph has no nodes"));
    }

    // Initializer sizes come straight from their dims.
    let mut initializers: HashMap<String, Known> = HashMap::new();
    // The file's order, so tensor ids are the same on every load.
    let init_order: Vec<String> = graph.initializer.iter().map(|i| i.name.clone()).collect();
    for init in &graph.initializer {
        let dt = onnx_dtype(init.data_type).ok_or_else(|| Error::Tensor {
            tensor: init.name.clone(),
            detail: format!("unsupported ONNX dtype code {}", init.data_type),
        })?;
        let shape: Vec<u64> = init.dims.iter().map(|&d| d.max(0) as u64).collect();
        initializers.insert(
            init.name.clone(),
            Known {
                shape: Some(shape),
                dtype: Some((dt.0, dt.1.to_string())),
            },
        );
    }

    // Symbolic dims and batch overrides.
    let dims: HashMap<String, u64> = opts.dims.iter().cloned().collect();
    let init_names: HashSet<String> = graph.initializer.iter().map(|i| i.name.clone()).collect();
    for vi in graph.input.iter_mut() {
        let is_init = init_names.contains(&vi.name);
        substitute_dims(vi, &dims, if is_init { None } else { opts.batch });
    }
    if opts.batch.is_some() {
        // value_info was inferred for the original batch; let tract redo it.
        graph.value_info.clear();
        for vi in graph.output.iter_mut() {
            if let Some(pb::type_proto::Value::TensorType(tt)) =
                vi.r#type.as_mut().and_then(|t| t.value.as_mut())
            {
                tt.shape = None;
            }
        }
    } else {
        for vi in graph.value_info.iter_mut().chain(graph.output.iter_mut()) {
            substitute_dims(vi, &dims, None);
        }
    }

    // Weights stored outside the file become typed inputs: only shapes matter.
    let mut moved = Vec::new();
    graph.initializer.retain(|init| {
        let external = init.data_location == Some(pb::tensor_proto::DataLocation::External as i32);
        if external && init.raw_data.is_empty() {
            moved.push(pb::ValueInfoProto {
                name: init.name.clone(),
                r#type: Some(pb::TypeProto {
                    denotation: String::new(),
                    value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor {
                        elem_type: init.data_type,
                        shape: Some(pb::TensorShapeProto {
                            dim: init
                                .dims
                                .iter()
                                .map(|&d| pb::tensor_shape_proto::Dimension {
                                    denotation: String::new(),
                                    value: Some(DimValue::DimValue(d)),
                                })
                                .collect(),
                        }),
                    })),
                }),
                doc_string: String::new(),
            });
            false
        } else {
            true
        }
    });
    let moved_names: HashSet<String> = moved.iter().map(|v| v.name.clone()).collect();
    graph.input.retain(|vi| !moved_names.contains(&vi.name));
    graph.input.extend(moved);

    // Fallback shapes from the file itself.
    let mut annotated: HashMap<String, Known> = HashMap::new();
    for vi in graph
        .value_info
        .iter()
        .chain(graph.input.iter())
        .chain(graph.output.iter())
    {
        annotated.insert(vi.name.clone(), value_info_entry(vi));
    }

    let graph_inputs: Vec<String> = graph
        .input
        .iter()
        .filter(|vi| !init_names.contains(&vi.name))
        .map(|vi| vi.name.clone())
        .collect();
    let graph_outputs: Vec<String> = graph.output.iter().map(|vi| vi.name.clone()).collect();
    let nodes = graph.node.clone();

    // tract's analysis: shapes of every outlet, by ONNX tensor name; not
    // needed when the file already says everything.
    let complete = |k: Option<&Known>| k.is_some_and(|k| k.shape.is_some() && k.dtype.is_some());
    let file_says_all = nodes
        .iter()
        .flat_map(|n| n.input.iter().chain(&n.output))
        .filter(|t| !t.is_empty())
        .all(|t| complete(initializers.get(t)) || complete(annotated.get(t)));
    let dir = path.parent().and_then(|p| p.to_str());
    let mut facts: HashMap<String, Known> = HashMap::new();
    if shapes == Shapes::Inferred || !file_says_all {
        match framework.parse(&proto, dir) {
            Ok(parsed) => {
                let mut model = parsed.model;
                // Obstinate: keep going past ops tract cannot analyse.
                let _ = model.analyse(true);
                for (tname, outlet) in &parsed.outlets_by_name {
                    if let Ok(fact) = model.outlet_fact(*outlet) {
                        let shape = fact
                            .shape
                            .as_concrete_finite()
                            .ok()
                            .flatten()
                            .map(|s| s.iter().map(|&d| d as u64).collect::<Vec<u64>>());
                        let dtype = fact.datum_type.concretize().and_then(tract_dtype);
                        facts.insert(tname.clone(), Known { shape, dtype });
                    }
                }
            }
            Err(e) => {
                // Unknown ops or odd attributes: keep going on annotated shapes.
                eprintln!(
                    "warning: {}: tract could not parse the model ({}); using the file's value_info",
                    path.display(),
                    crate::safe_text::escape(&e.to_string())
                );
            }
        }
    }

    let mut b = GraphBuilder::new(name);
    let mut declared: HashSet<String> = HashSet::new();
    let mut declare = |b: &mut GraphBuilder, tname: &str, kind: Option<TensorKind>| -> Result<()> {
        if tname.is_empty() || !declared.insert(tname.to_string()) {
            return Ok(());
        }
        let pick = |k: Option<&Known>| -> (Option<Vec<u64>>, Option<(f64, String)>) {
            match k {
                Some(k) => (k.shape.clone(), k.dtype.clone()),
                None => (None, None),
            }
        };
        let (mut shape, mut dtype) = pick(initializers.get(tname));
        let (fs, fd) = pick(facts.get(tname));
        let (vs, vd) = pick(annotated.get(tname));
        if shape.is_none() {
            shape = fs.or(vs);
        }
        // Prefer the file's declared dtype (ONNX names), then tract's.
        if dtype.is_none() {
            dtype = vd.or(fd);
        }
        let (Some(shape), Some((elem, dtname))) = (shape, dtype) else {
            return Err(Error::Tensor {
                tensor: tname.to_string(),
                detail: "shape or dtype unknown: tract could not infer it and the file has no value_info for it (try --dim NAME=VALUE for symbolic dims)".into(),
            });
        };
        b.tensor(TensorSpec {
            name: tname.to_string().into(),
            bytes: bytes_of(tname, &shape, elem, &dtname)?,
            kind,
            shape: Some(shape),
            dtype: Some(dtname.into()),
        });
        Ok(())
    };
    for n in &graph_inputs {
        declare(&mut b, n, Some(TensorKind::Input))?;
    }
    for n in &init_order {
        declare(&mut b, n, Some(TensorKind::Weight))?;
    }
    let mut names_used: HashSet<String> = HashSet::new();
    for (i, node) in nodes.iter().enumerate() {
        for t in node.input.iter().chain(node.output.iter()) {
            declare(&mut b, t, None)?;
        }
        let mut nname = if node.name.is_empty() {
            format!("{}_{i}", node.op_type)
        } else {
            node.name.clone()
        };
        if !names_used.insert(nname.clone()) {
            nname = format!("{nname}#{i}");
            names_used.insert(nname.clone());
        }
        b.op(OpSpec {
            name: nname.into(),
            op_type: node.op_type.clone().into(),
            inputs: node
                .input
                .iter()
                .filter(|s| !s.is_empty())
                .map(|s| s.as_str().into())
                .collect(),
            outputs: node
                .output
                .iter()
                .filter(|s| !s.is_empty())
                .map(|s| s.as_str().into())
                .collect(),
            flops: None,
        });
    }
    for o in &graph_outputs {
        b.output(o.clone());
    }
    let g = b.build()?;
    for op in &g.ops {
        check_elementwise(&g, op)?;
    }
    Ok(g)
}

/// Ops whose first output has the broadcast shape of their inputs.
const ELEMENTWISE: &[&str] = &[
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "Max",
    "Min",
    "Sum",
    "Mean",
    "Where",
    "PRelu",
    "Relu",
    "Sigmoid",
    "Tanh",
    "Exp",
    "Log",
    "Sqrt",
    "Abs",
    "Neg",
    "Clip",
    "LeakyRelu",
    "Elu",
    "Selu",
    "HardSigmoid",
    "HardSwish",
    "Erf",
    "Softplus",
    "Gelu",
    "Identity",
    "Reciprocal",
    "Floor",
    "Ceil",
    "Round",
    "Sign",
    "Sin",
    "Cos",
];

/// The file's shape of an elementwise op's output checked against the
/// op's own rule (numpy broadcasting of its inputs): a `value_info` that
/// claims 3,037,000,500 channels for an Add, or a zero dimension, is
/// refused naming the tensor and the op, instead of a peak of 2.2 TiB or a
/// tensor of 0 bytes.
fn check_elementwise(g: &Graph, op: crate::graph::OpRef<'_>) -> Result<()> {
    if !ELEMENTWISE.contains(&op.op_type) {
        return Ok(());
    }
    let shape = |t: usize| g.tensors.at(t).shape;
    let Some(&out) = op.outputs.first() else {
        return Ok(());
    };
    let ins: Option<Vec<&[u64]>> = op.inputs.iter().map(|&t| shape(t)).collect();
    let (Some(ins), Some(declared)) = (ins, shape(out)) else {
        return Ok(());
    };
    let Some(expected) = broadcast(&ins) else {
        return Ok(()); // inputs that do not broadcast: tract's concern
    };
    if *declared != expected {
        return Err(Error::Tensor {
            tensor: g.tensors.at(out).name.into(),
            detail: format!(
                "the file gives it shape {declared:?}, but {} {:?} of inputs shaped {:?} makes {expected:?}",
                op.op_type, op.name, ins
            ),
        });
    }
    Ok(())
}

/// Numpy broadcasting of `shapes` (aligned at their last dimension; equal
/// dims or 1), or `None` where they do not broadcast.
fn broadcast(shapes: &[&[u64]]) -> Option<Vec<u64>> {
    let rank = shapes.iter().map(|s| s.len()).max()?;
    let mut out = vec![1u64; rank];
    for s in shapes {
        for (i, &d) in s.iter().rev().enumerate() {
            let o = &mut out[rank - 1 - i];
            match (*o, d) {
                (a, b) if a == b => {}
                (1, b) => *o = b,
                (_, 1) => {}
                _ => return None,
            }
        }
    }
    Some(out)
}

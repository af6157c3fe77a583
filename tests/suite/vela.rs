//! TFLite models and Arm Vela's plans (`../shared/data/vela`, skipped with a
//! reason when absent): the models load with the reference liveness peak
//! (computed here straight from the flatbuffer), every Vela run imports
//! with its op count, DRAM feature-map bytes and spilled set equal to
//! Vela's own files (read here independently), traces verify, `diff`
//! against spillscope prints the known agreement, and hostile inputs fail
//! in one line with exit 2.
#![cfg(feature = "tflite")]

use crate::common;

use spillscope::trace::{EventKind, TensorKind, Trace};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tract_tflite::tflite;

const MODELS: [&str; 4] = ["ds_cnn_l", "kwt_tiny", "mobilenet_v2", "mobilenet_v3_small"];
const CONFIGS: [&str; 5] = [
    "u55_shared_perf_default",
    "u65_dedicated_perf_1024k",
    "u65_dedicated_perf_1024k_nocascade",
    "u65_dedicated_perf_256k",
    "u65_dedicated_perf_256k_nocascade",
];

fn model_path(root: &Path, m: &str) -> PathBuf {
    root.join(m).join(format!("{m}_int8.tflite"))
}

/// The reference liveness peak (DESIGN.md) straight from the flatbuffer:
/// steps are operators in file order; constants (no producer, not a graph
/// input) excluded; inputs live from step 0, outputs to the end.
fn reference_peak(bytes: &[u8]) -> u64 {
    let model = tflite::root_as_model(bytes).unwrap();
    let sg = model.subgraphs().unwrap().get(0);
    let tensors = sg.tensors().unwrap();
    let ops = sg.operators().unwrap();
    let n = ops.len();
    let size = |i: usize| -> u64 {
        let t = tensors.get(i);
        let elems: u64 = t
            .shape()
            .map(|s| s.iter().map(|d| d as u64).product())
            .unwrap_or(1);
        let bits = match t.type_() {
            tflite::TensorType::INT8 | tflite::TensorType::UINT8 | tflite::TensorType::BOOL => 8,
            tflite::TensorType::INT16 | tflite::TensorType::FLOAT16 => 16,
            tflite::TensorType::INT32 | tflite::TensorType::FLOAT32 => 32,
            tflite::TensorType::INT64 => 64,
            other => panic!("type {other:?} not expected in these models"),
        };
        elems * bits / 8
    };
    let mut first: Vec<Option<usize>> = vec![None; tensors.len()];
    let mut last: Vec<Option<usize>> = vec![None; tensors.len()];
    for i in sg.inputs().unwrap().iter() {
        first[i as usize] = Some(0);
    }
    for (k, op) in ops.iter().enumerate() {
        for o in op.outputs().unwrap().iter() {
            first[o as usize] = Some(k);
            last[o as usize] = Some(k);
        }
        for i in op.inputs().unwrap().iter().filter(|&i| i >= 0) {
            last[i as usize] = Some(k);
        }
    }
    for o in sg.outputs().unwrap().iter() {
        last[o as usize] = Some(n - 1);
    }
    (0..n)
        .map(|k| {
            (0..tensors.len())
                .filter(|&t| matches!((first[t], last[t]), (Some(a), Some(z)) if a <= k && k <= z))
                .map(size)
                .sum::<u64>()
        })
        .max()
        .unwrap()
}

#[test]
fn tflite_models_load_with_the_reference_liveness_peak() {
    let Some(root) = common::shared_data("vela") else {
        return;
    };
    for m in MODELS {
        let path = model_path(&root, m);
        let g = spillscope::graph::load(&path, &Default::default()).unwrap();
        let reference = reference_peak(&std::fs::read(&path).unwrap());
        let peak = spillscope::graph::Liveness::compute(&g).peak_bytes;
        assert_eq!(peak, reference, "{m}");
        if m == "mobilenet_v2" {
            assert_eq!(peak, 1_505_280); // 1,470 KiB
        }
        // int8 activations are one byte per element.
        let t = g
            .tensors
            .iter()
            .find(|t| t.kind == spillscope::graph::TensorKind::Input)
            .unwrap();
        assert_eq!(t.dtype, Some("int8"));
        assert_eq!(Some(t.bytes), t.elements());
        assert!(
            g.ops.iter().all(|o| o.flops > 0.0),
            "{m}: every op has FLOPs"
        );
    }
}

/// A CSV's rows as header -> cell maps.
fn csv_rows(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut rd = csv::Reader::from_path(path).unwrap();
    let h: Vec<String> = rd.headers().unwrap().iter().map(str::to_string).collect();
    rd.records()
        .map(|r| {
            h.iter()
                .cloned()
                .zip(r.unwrap().iter().map(str::to_string))
                .collect()
        })
        .collect()
}

fn file_ending(dir: &Path, suffix: &str) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(suffix))
        .unwrap_or_else(|| panic!("{}: no *{suffix}", dir.display()))
}

/// `stdout.txt`'s `Allocation, memory Dram, usage mask: FeatureMap` rows:
/// (name, size).
fn dram_feature_map_rows(dir: &Path) -> Vec<(String, u64)> {
    let text = std::fs::read_to_string(dir.join("stdout.txt")).unwrap();
    let mut rows = Vec::new();
    let mut on = false;
    for line in text.lines() {
        if line.starts_with("Allocation, memory ") {
            on = line.contains("memory Dram,") && line.ends_with("FeatureMap");
            continue;
        }
        if !on
            || line.starts_with('#')
            || line.starts_with("Allocation Peak")
            || line.starts_with("Start Time")
        {
            on = on && !line.starts_with('#') && !line.starts_with("Allocation Peak");
            continue;
        }
        let parts: Vec<&str> = line.splitn(6, ':').collect();
        if parts.len() == 6 {
            rows.push((
                parts[5].trim().to_string(),
                parts[2].trim().parse().unwrap(),
            ));
        }
    }
    rows
}

#[test]
fn every_vela_run_imports_as_vela_reported_it() {
    let Some(root) = common::shared_data("vela") else {
        return;
    };
    let mut dirs = 0;
    for m in MODELS {
        for c in CONFIGS {
            let dir = root.join(m).join(c);
            let (tr, _) =
                spillscope::trace::import::import(&dir, None, &Default::default()).unwrap();
            let info = spillscope::analysis::vela::vela_info(&tr).expect("a Vela trace");
            // Ops: the per-layer CSV's NPU rows.
            let per_layer = csv_rows(&file_ending(&dir, "_per-layer.csv"));
            let npu_rows = per_layer.iter().filter(|r| r["Target"] == "NPU").count();
            assert_eq!(tr.ops.len(), npu_rows, "{m}/{c}");
            // Vela's per-op DRAM feature-map bytes add up to its summary.
            let summary = csv_rows(
                &std::fs::read_dir(&dir)
                    .unwrap()
                    .flatten()
                    .map(|e| e.path())
                    .find(|p| p.to_string_lossy().contains("_summary_"))
                    .unwrap(),
            );
            let want_w: f64 = summary[0]["dram_feature_map_write_bytes"].parse().unwrap();
            let want_r: f64 = summary[0]["dram_feature_map_read_bytes"].parse().unwrap();
            assert_eq!(
                info.ops_dram_feature_map_write_bytes, want_w as u64,
                "{m}/{c}"
            );
            assert_eq!(
                info.ops_dram_feature_map_read_bytes, want_r as u64,
                "{m}/{c}"
            );
            // Weights: each op's encoded weights, read once (Vela's own
            // dram_weight_read_bytes is burst-weighted and differs).
            let encoded: f64 = summary[0]["total_npu_encoded_weights"].parse().unwrap();
            assert_eq!(
                tr.summary.weight_traffic_bytes, encoded as u64,
                "{m}/{c}: weights"
            );
            let secs: f64 = summary[0]["inference_time"].parse().unwrap();
            assert!(
                (tr.summary.latency_ns as f64 - secs * 1e9).abs() <= tr.ops.len() as f64,
                "{m}/{c}: latency"
            );
            // The spilled set: feature maps Vela left in DRAM (stdout.txt).
            let rows = dram_feature_map_rows(&dir);
            let listed: BTreeSet<String> = rows.iter().map(|r| r.0.clone()).collect();
            let written: BTreeSet<usize> = tr
                .events
                .iter()
                .filter(|e| e.kind == EventKind::StreamOut)
                .map(|e| e.tensor)
                .collect();
            let in_dram: BTreeSet<String> = tr
                .tensors
                .iter()
                .filter(|t| {
                    written.contains(&t.id)
                        || (t.kind == TensorKind::Input && !allocated(&tr, t.id))
                })
                .map(|t| t.name.to_string())
                .collect();
            assert_eq!(in_dram, listed, "{m}/{c}: spilled set");
            // Raw ledger bytes: every DRAM feature map but the input is
            // written once, at its size as Vela stores it.
            let input: u64 = tr
                .tensors
                .iter()
                .filter(|t| t.kind == TensorKind::Input)
                .map(|t| t.name)
                .map(|n| rows.iter().filter(|r| r.0 == n).map(|r| r.1).sum::<u64>())
                .sum();
            let listed_bytes: u64 = rows.iter().map(|r| r.1).sum();
            assert_eq!(
                tr.summary.streamed_out_bytes,
                listed_bytes - input,
                "{m}/{c}"
            );
            // SRAM: in-place outputs share their operand's bytes, so the
            // peak is Vela's own (its address high-water mark, which with
            // cascades' buffers can sit above the live bytes).
            let used = (summary[0]["sram_memory_used"].parse::<f64>().unwrap() * 1024.0) as u64;
            if c.ends_with("nocascade") {
                assert_eq!(tr.summary.peak_live_bytes, used, "{m}/{c}: SRAM peak");
            }
            assert!(tr.summary.peak_live_bytes <= used, "{m}/{c}");
            if c.starts_with("u65") {
                assert!(
                    tr.summary.peak_live_bytes <= tr.summary.capacity_bytes,
                    "{m}/{c}"
                );
            }
            let report = spillscope::trace::verify::verify(&tr, 10);
            assert!(
                report.violations.is_empty(),
                "{m}/{c}: {:?}",
                report.violations
            );
            dirs += 1;
        }
    }
    assert_eq!(dirs, 20);
}

fn allocated(tr: &Trace, t: usize) -> bool {
    tr.events
        .iter()
        .any(|e| e.tensor == t && e.kind == EventKind::Alloc)
}

/// `sim` of MobileNetV2 with belady at Vela's 256 KiB on the U65 profile,
/// written into `dir`.
fn mobilenet_v2_belady_256k(root: &Path, dir: &Path) -> PathBuf {
    let sim = dir.join("belady.json");
    let model = model_path(root, "mobilenet_v2");
    common::run_ok(&[
        "sim",
        model.to_str().unwrap(),
        "--hw",
        "ethos-u65-high-end",
        "--capacity",
        "256KiB",
        "--policy",
        "belady",
        "-o",
        sim.to_str().unwrap(),
    ]);
    sim
}

#[test]
fn diff_of_vela_and_belady_at_256k_prints_the_known_agreement() {
    let Some(root) = common::shared_data("vela") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let sim = mobilenet_v2_belady_256k(&root, tmp.path());
    let vela = root.join("mobilenet_v2/u65_dedicated_perf_256k_nocascade");
    let out = common::run_ok(&["diff", vela.to_str().unwrap(), sim.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "Vela (A): Ethos_U65_256 on Ethos_U65_High_End, Dedicated_Sram, SRAM 256.0 KiB, cascading off; spillscope (B): belady at 256.0 KiB",
        "spilled set: 90.6% agree over 64 feature maps (50 both on chip, 8 both in DRAM, 1 only Vela, 5 only spillscope)",
        "DRAM feature-map bytes of those 64 (raw): Vela 7.6 MiB, spillscope 8.1 MiB",
        "DRAM feature-map bytes of all intermediates: Vela 7.6 MiB, spillscope 8.1 MiB, spillscope's lower bound 7.6 MiB (ilp)",
        "Vela's own intermediates (softmax/mean decomposed): 28 tensors",
        "padded by Vela (NHCWB16 channels): 4 tensors",
        "op output (by |Vela - spillscope|)",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    // JSON: the same figures, exact.
    let out = common::run_ok(&[
        "diff",
        vela.to_str().unwrap(),
        sim.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &v["vela"];
    assert_eq!(v["vela_side"], "A");
    assert_eq!(c["matched"], 64);
    assert_eq!(c["both_on_chip"], 50);
    assert_eq!(c["both_spilled"].as_array().unwrap().len(), 8);
    // Vela's DRAM intermediates, each written once and read by each
    // reader at its stored size (stdout.txt's DRAM rows but input and
    // output: 3,963,904 B written, the same read back).
    assert_eq!(c["vela_dram_bytes"], 2 * 3_963_904);
    assert_eq!(c["vela_matched_bytes"], c["vela_dram_bytes"]);
    // Vela's intermediates: each DRAM feature map written once, read by
    // each reader; the per-op rows add up to the totals on both sides.
    let rows = c["ops"].as_array().unwrap();
    let sum = |k: &str| rows.iter().map(|r| r[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!(sum("vela_bytes"), c["vela_dram_bytes"].as_u64().unwrap());
    assert_eq!(sum("sim_bytes"), c["sim_dram_bytes"].as_u64().unwrap());
    assert!(c["bound_bytes"].as_u64().unwrap() <= c["sim_dram_bytes"].as_u64().unwrap());
}

/// A one-op TFLite model (RELU over `[1, 4]` int8) whose op reads tensor
/// `input_index`.
fn tiny_tflite(input_index: i32) -> Vec<u8> {
    tiny_tflite_of(input_index, tflite::TensorType::INT8)
}

fn tiny_tflite_of(input_index: i32, ty: tflite::TensorType) -> Vec<u8> {
    tiny_tflite_shaped(input_index, ty, &[1, 4])
}

/// The one-op model with both tensors of `dims`.
fn tiny_tflite_shaped(input_index: i32, ty: tflite::TensorType, dims: &[i32]) -> Vec<u8> {
    let mut b = flatbuffers::FlatBufferBuilder::new();
    let mut ts = Vec::new();
    for name in ["x", "y"] {
        let shape = b.create_vector(dims);
        let name = b.create_string(name);
        ts.push(tflite::Tensor::create(
            &mut b,
            &tflite::TensorArgs {
                shape: Some(shape),
                type_: ty,
                name: Some(name),
                ..Default::default()
            },
        ));
    }
    let (t_in, t_out) = (ts[0], ts[1]);
    let tensors = b.create_vector(&[t_in, t_out]);
    let ins = b.create_vector(&[input_index]);
    let outs = b.create_vector(&[1i32]);
    let op = tflite::Operator::create(
        &mut b,
        &tflite::OperatorArgs {
            opcode_index: 0,
            inputs: Some(ins),
            outputs: Some(outs),
            ..Default::default()
        },
    );
    let ops = b.create_vector(&[op]);
    let g_in = b.create_vector(&[0i32]);
    let g_out = b.create_vector(&[1i32]);
    let sg = tflite::SubGraph::create(
        &mut b,
        &tflite::SubGraphArgs {
            tensors: Some(tensors),
            inputs: Some(g_in),
            outputs: Some(g_out),
            operators: Some(ops),
            ..Default::default()
        },
    );
    let code = tflite::OperatorCode::create(
        &mut b,
        &tflite::OperatorCodeArgs {
            builtin_code: tflite::BuiltinOperator::RELU,
            deprecated_builtin_code: tflite::BuiltinOperator::RELU.0 as i8,
            ..Default::default()
        },
    );
    let codes = b.create_vector(&[code]);
    let sgs = b.create_vector(&[sg]);
    let model = tflite::Model::create(
        &mut b,
        &tflite::ModelArgs {
            version: 3,
            operator_codes: Some(codes),
            subgraphs: Some(sgs),
            ..Default::default()
        },
    );
    tflite::finish_model_buffer(&mut b, model);
    b.finished_data().to_vec()
}

#[test]
fn a_tiny_tflite_model_lowers_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("tiny.tflite");
    std::fs::write(&p, tiny_tflite(0)).unwrap();
    let g = spillscope::graph::load(&p, &Default::default()).unwrap();
    assert_eq!(g.ops.len(), 1);
    assert_eq!(g.ops.at(0).op_type, "RELU");
    assert_eq!(g.ops.at(0).name, "y");
    let bytes: Vec<(&str, u64)> = g.tensors.iter().map(|t| (t.name, t.bytes)).collect();
    assert_eq!(bytes, vec![("x", 4), ("y", 4)]);
    // Float models: 4 bytes per element.
    let f = tmp.path().join("float.tflite");
    std::fs::write(&f, tiny_tflite_of(0, tflite::TensorType::FLOAT32)).unwrap();
    let g = spillscope::graph::load(&f, &Default::default()).unwrap();
    assert_eq!(g.tensors.at(0).bytes, 16);
    assert_eq!(g.tensors.at(0).dtype, Some("float32"));
    // A string tensor has no size: refused by name.
    let s = tmp.path().join("string.tflite");
    std::fs::write(&s, tiny_tflite_of(0, tflite::TensorType::STRING)).unwrap();
    let err = spillscope::graph::load(&s, &Default::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("tensor 0: unsupported type"), "{err}");
    // Without the extension, the content says what it is.
    let q = tmp.path().join("tiny.bin");
    std::fs::write(&q, tiny_tflite(0)).unwrap();
    assert_eq!(
        spillscope::input::detect(&q).unwrap(),
        spillscope::input::Format::Tflite
    );
}

/// Runs the binary, expecting exit 2 and one line naming `needles`.
fn one_line_error(args: &[&str], needles: &[&str]) {
    let o = assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: {err} lacks {n:?}");
    }
}

#[test]
fn hostile_tflite_and_vela_inputs_fail_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let p = |n: &str| tmp.path().join(n).to_string_lossy().into_owned();
    // Out-of-range tensor index in an operator.
    std::fs::write(p("oob.tflite"), tiny_tflite(7)).unwrap();
    one_line_error(
        &["sim", &p("oob.tflite"), "--capacity", "1KiB"],
        &["oob.tflite", "tensor 7, out of range"],
    );
    // Truncated.
    let whole = tiny_tflite(0);
    std::fs::write(p("cut.tflite"), &whole[..whole.len() / 2]).unwrap();
    one_line_error(
        &["sim", &p("cut.tflite"), "--capacity", "1KiB"],
        &["cut.tflite", "damaged flatbuffer"],
    );
    // A negative (unknown) dimension and the i32::MAX sentinel: not sizes.
    for (dims, file) in [
        (&[1, -1][..], "neg.tflite"),
        (&[1, i32::MAX][..], "max.tflite"),
    ] {
        std::fs::write(
            p(file),
            tiny_tflite_shaped(0, tflite::TensorType::INT8, dims),
        )
        .unwrap();
        one_line_error(
            &["sim", &p(file), "--capacity", "1KiB"],
            &[
                file,
                &format!("dimension {} in shape", dims[1]),
                "is not a size",
            ],
        );
    }
    std::fs::write(p("empty.tflite"), b"").unwrap();
    one_line_error(&["view", &p("empty.tflite")], &["empty.tflite", "TFL3"]);
    let Some(root) = common::shared_data("vela") else {
        return;
    };
    let model = model_path(&root, "ds_cnn_l");
    let bytes = std::fs::read(&model).unwrap();
    std::fs::write(p("cut_real.tflite"), &bytes[..bytes.len() / 3]).unwrap();
    one_line_error(
        &["sim", &p("cut_real.tflite"), "--capacity", "64KiB"],
        &["cut_real.tflite", "damaged flatbuffer"],
    );
    // Vela directories missing a file each.
    let src = root.join("ds_cnn_l/u65_dedicated_perf_256k");
    for (missing, needle) in [
        ("_per-layer.csv", "_per-layer.csv"),
        ("_debug.xml", "--enable-debug-db"),
    ] {
        let dir = tmp.path().join(format!("vela{missing}"));
        std::fs::create_dir(&dir).unwrap();
        for e in std::fs::read_dir(&src).unwrap().flatten() {
            if !e.file_name().to_string_lossy().ends_with(missing) {
                std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
            }
        }
        let d = dir.to_string_lossy().into_owned();
        one_line_error(&["import", &d], &[&d, needle]);
        one_line_error(&["report", &d], &[needle]);
    }
    // A directory with no Vela output at all.
    let empty = tmp.path().join("nothing");
    std::fs::create_dir(&empty).unwrap();
    one_line_error(&["import", &empty.to_string_lossy()], &["no Vela output"]);
}

#[test]
fn the_explorer_compares_vela_with_spillscope_at_80x24_and_120x40() {
    use spillscope_explorer::app::{App, View};
    use spillscope_explorer::data::Dataset;
    let Some(root) = common::shared_data("vela") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let sim = mobilenet_v2_belady_256k(&root, tmp.path());
    let vela = root.join("mobilenet_v2/u65_dedicated_perf_256k_nocascade");
    let (tv, _) = spillscope::trace::import::import(&vela, None, &Default::default()).unwrap();
    let ts = Trace::load(&sim).unwrap();
    let mut a = App::new(vec![
        Dataset::build("u65_dedicated_perf_256k_nocascade", tv),
        Dataset::build("belady.json", ts),
    ]);
    a.view = View::Compare;
    let small = common::screen::render(&a, 80, 24);
    assert!(
        small.contains("spilled set: 90.6% of 64 agree (8 both, 1 only Vela, 5 only spillscope)"),
        "{small}"
    );
    assert!(
        small.contains("DRAM bytes: Vela 7.6 MiB, spillscope 8.1 MiB; bound 7.6 MiB (ilp)"),
        "{small}"
    );
    insta::assert_snapshot!("vela_compare_80x24", small);
    insta::assert_snapshot!("vela_compare_120x40", common::screen::render(&a, 120, 40));
}

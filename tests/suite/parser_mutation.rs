//! In-suite fuzzing (issue: hardening): every parser gets real inputs with
//! random damage (bytes flipped, inserted, deleted, the file cut short) and
//! must answer with a value or an error — never a panic, never a hang.
//! Bounded: a few dozen cases per format.

use proptest::prelude::*;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Applies the edits: (position fraction, kind, byte).
fn mutate(src: &[u8], edits: &[(f64, u8, u8)]) -> Vec<u8> {
    let mut v = src.to_vec();
    for &(at, kind, byte) in edits {
        if v.is_empty() {
            v.push(byte);
            continue;
        }
        let i = ((at * v.len() as f64) as usize).min(v.len() - 1);
        match kind % 4 {
            0 => v[i] = byte,
            1 => v.insert(i, byte),
            2 => {
                v.remove(i);
            }
            _ => v.truncate(i),
        }
    }
    v
}

fn edits() -> impl Strategy<Value = Vec<(f64, u8, u8)>> {
    proptest::collection::vec((0.0f64..1.0, any::<u8>(), any::<u8>()), 1..5)
}

/// Writes the mutant next to nothing else and runs `parse` on it.
fn with_file(name: &str, bytes: &[u8], parse: impl FnOnce(&Path)) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    parse(&p);
}

fn read(p: &Path) -> Option<Vec<u8>> {
    match std::fs::read(p) {
        Ok(b) => Some(b),
        Err(_) => {
            eprintln!("SKIP: {} absent", p.display());
            None
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn graph_json(e in edits()) {
        let src = read(&root().join("tests/data/encoder_decoder.json")).unwrap();
        with_file("g.json", &mutate(&src, &e), |p| {
            if let Ok(g) = spillscope::graph::load(p, &Default::default()) {
                let hw = spillscope::cost::HardwareProfile::preset("seed-npu").unwrap();
                let _ = spillscope::sim::simulate(&g, &hw, &Default::default());
            }
        });
    }

    #[test]
    fn jsonl_stream(e in edits()) {
        let src: &[u8] = br#"{"kind":"pool","pool":"sram","capacity_bytes":4096}
{"t_ns":1,"kind":"op_begin","op":"a","thread":0}
{"t_ns":2,"kind":"alloc","tensor":"x","bytes":64,"pool":"sram","offset":0,"thread":0}
{"t_ns":3,"kind":"evict","tensor":"x","pool":"sram","thread":0}
{"t_ns":4,"kind":"reload","tensor":"x","bytes":64,"pool":"sram","offset":64,"thread":0}
{"t_ns":5,"kind":"op_end","thread":0}
"#;
        with_file("s.jsonl", &mutate(src, &e), |p| {
            if let Ok((tr, _)) = spillscope::trace::import::import(p, None, &Default::default()) {
                let _ = spillscope::trace::verify::verify(&tr, 5);
                let _ = spillscope_explorer::data::Dataset::build("m", tr);
            }
        });
    }

    #[test]
    fn runtime_profiles(e in edits(), which in 0usize..2) {
        let name = ["ort_resnet18.json", "torch_mobilenet_v2.json"][which];
        let Some(src) = read(&root().join("../shared/data/traces").join(name)) else { return Ok(()); };
        with_file(name, &mutate(&src, &e), |p| {
            if let Ok((tr, _)) = spillscope::trace::import::import(p, None, &Default::default()) {
                let _ = spillscope::trace::verify::verify(&tr, 5);
                let _ = spillscope_explorer::data::Dataset::build("m", tr);
            }
        });
    }

    #[test]
    fn npu_cases(e in edits(), csv in any::<bool>()) {
        let tiny = br#"{"Nodes":[{"Id":0,"Op":"ALLOC","BufId":0,"Size":100,"Type":"L1"},{"Id":1,"Op":"COPY_IN","Pipe":"MTE2","Cycles":5,"Bufs":[0]},{"Id":2,"Op":"ALLOC","BufId":1,"Size":64,"Type":"L0A"},{"Id":3,"Op":"MOVE","Pipe":"MTE1","Cycles":3,"Bufs":[0,1]},{"Id":4,"Op":"FREE","BufId":0,"Size":100,"Type":"L1"},{"Id":5,"Op":"FREE","BufId":1,"Size":64,"Type":"L0A"}],"Edges":[[0,1],[1,3],[2,3],[0,4],[3,4],[2,5],[3,5]]}"#;
        let dir = tempfile::tempdir().unwrap();
        let p = if csv {
            let nodes = b"Id,Op,BufId,Size,Type,Pipe,Cycles,Bufs\n0,ALLOC,0,100,L1,,,\n1,COPY_IN,,,,MTE2,5,\"[0]\"\n2,ALLOC,1,64,L0A,,,\n3,MOVE,,,,MTE1,3,\"[0, 1]\"\n4,FREE,0,100,L1,,,\n5,FREE,1,64,L0A,,,\n";
            std::fs::write(dir.path().join("T_Edges.csv"), b"StartNodeId,EndNodeId\n0,1\n1,3\n2,3\n0,4\n3,4\n2,5\n3,5\n").unwrap();
            let p = dir.path().join("T_Nodes.csv");
            std::fs::write(&p, mutate(nodes, &e)).unwrap();
            p
        } else {
            let p = dir.path().join("T.json");
            std::fs::write(&p, mutate(tiny, &e)).unwrap();
            p
        };
        if let Ok(k) = spillscope::npu::Kernel::load(&p) {
            if let Ok(r) = spillscope::npu::solve::solve(&k, Default::default()) {
                prop_assert!(spillscope::npu::check::evaluate(&k, &r.cycles.solution).is_ok());
            }
        }
    }

    #[test]
    fn toml_configs(e in edits(), which in 0usize..3) {
        let (name, src): (&str, Vec<u8>) = match which {
            0 => ("hw.toml", std::fs::read(root().join("profiles/edge-npu-16m.toml")).unwrap()),
            1 => ("sched.toml", b"policy = \"belady\"\nweights = \"stream\"\npins = [\"a\", \"b\"]\nprefetch_distance = 2\nfuse = true\ndtype = \"fp16\"\norder = [\"x\", \"y\"]\nrecompute = true\n[free_at]\n\"a\" = 4\n".to_vec()),
            _ => ("theme.toml", std::fs::read(root().join("themes/light.toml")).unwrap()),
        };
        with_file(name, &mutate(&src, &e), |p| match which {
            0 => { let _ = spillscope::cost::HardwareProfile::load(p.to_str().unwrap()); }
            1 => { let _ = spillscope::sim::ScheduleFile::load(p); }
            _ => { let _ = spillscope_explorer::theme::Theme::load(Some(p.to_str().unwrap()), spillscope_explorer::theme::ColorMode::TrueColor); }
        });
    }
}

#[cfg(feature = "onnx")]
proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn onnx_models(e in edits()) {
        let src = std::fs::read(root().join("sample-traces/resnet18.shapes.onnx")).unwrap();
        with_file("m.onnx", &mutate(&src, &e), |p| {
            let _ = spillscope::graph::load(p, &Default::default());
        });
    }
}

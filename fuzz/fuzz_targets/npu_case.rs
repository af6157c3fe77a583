#![no_main]
//! NPU kernel DAG JSON — or, when the input holds a NUL byte, the CSV pair
//! (nodes before it, edges after) — then the heuristics and the checker.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("spillscope-fuzz-npu-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let p = match data.iter().position(|&b| b == 0) {
        Some(cut) => {
            let nodes = dir.join("case_Nodes.csv");
            if std::fs::write(&nodes, &data[..cut]).is_err()
                || std::fs::write(dir.join("case_Edges.csv"), &data[cut + 1..]).is_err()
            {
                return;
            }
            nodes
        }
        None => {
            let p = dir.join("case.json");
            if std::fs::write(&p, data).is_err() {
                return;
            }
            p
        }
    };
    if let Ok(k) = spillscope::npu::Kernel::load(&p) {
        if k.len() <= 5_000 {
            if let Ok(r) = spillscope::npu::solve::solve(&k, Default::default()) {
                assert!(spillscope::npu::check::evaluate(&k, &r.cycles.solution).is_ok());
            }
        }
    }
});

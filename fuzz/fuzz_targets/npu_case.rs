#![no_main]
//! NPU kernel DAG JSON, then the heuristics and the checker.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("spillscope-fuzz-npu-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let p = dir.join("case.json");
    if std::fs::write(&p, data).is_err() {
        return;
    }
    if let Ok(k) = spillscope::npu::Kernel::load(&p) {
        if k.len() <= 5_000 {
            if let Ok(r) = spillscope::npu::solve::solve(&k, Default::default()) {
                assert!(spillscope::npu::check::evaluate(&k, &r.cycles.solution).is_ok());
            }
        }
    }
});

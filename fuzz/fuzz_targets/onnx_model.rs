#![no_main]
//! The ONNX front end (tract's protobuf reader and shape inference, then
//! spillscope's import), through a temporary file as the CLI reads it; a
//! small simulation of whatever loads. Needs `--features onnx`.
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("spillscope-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let p = dir.join("m.onnx");
    if std::fs::write(&p, data).is_err() {
        return;
    }
    if let Ok(g) = spillscope::graph::load(&p, &Default::default()) {
        common::simulate_small(&g);
    }
});

#![no_main]
//! The importers (format detected from the bytes: Chrome / ORT / PyTorch /
//! JSONL), through a temporary file as the CLI reads them.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("spillscope-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    for name in ["in.json", "in.jsonl"] {
        let p = dir.join(name);
        if std::fs::write(&p, data).is_ok() {
            if let Ok((tr, _)) = spillscope::trace::import::import(&p, None, &Default::default()) {
                let _ = spillscope::trace::verify::verify(&tr, 5);
            }
        }
    }
});

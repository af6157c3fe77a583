#![no_main]
//! An ETDump profile (`.etdp`): damaged bytes are an error, never a panic,
//! and every run of what parses can be asked for its calls and kernels.
use libfuzzer_sys::fuzz_target;
use spillscope::trace::import::executorch::Etdump;

fuzz_target!(|data: &[u8]| {
    if let Ok(d) = Etdump::parse(data) {
        for r in &d.runs {
            let (t0, kernels) = (r.start(), r.kernels());
            for e in r.calls() {
                let _ = (e.start - t0, kernels.get(&e.instruction));
            }
        }
        let _ = d.run(None);
    }
});

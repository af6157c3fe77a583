#![no_main]
//! An ExecuTorch program (`.pte`): damaged bytes are an error, never a
//! panic; what parses lowers to a graph, and its plan imports as a trace
//! that `verify` can check.
use libfuzzer_sys::fuzz_target;
use spillscope::graph::executorch::{lower, Program};

fuzz_target!(|data: &[u8]| {
    let Ok(p) = Program::parse(data) else {
        return;
    };
    let _ = lower::lower(&p, "fuzz");
    if let Ok((tr, _)) = spillscope::trace::import::executorch::plan_trace(&p, "fuzz", None, None) {
        let _ = spillscope::trace::verify::verify(&tr, 5);
    }
});

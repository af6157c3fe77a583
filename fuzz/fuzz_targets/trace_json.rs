#![no_main]
//! spillscope.trace/1 JSON, then verify and the explorer's analyses.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(tr) = spillscope::trace::Trace::from_slice(data) {
        let _ = spillscope::trace::verify::verify(&tr, 5);
        let _ = spillscope_explorer::data::Dataset::build("fuzz", tr);
    }
});

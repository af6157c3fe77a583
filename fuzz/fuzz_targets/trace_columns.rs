#![no_main]
//! The binary trace cache's body (a trace as columns): decoding damaged
//! bytes is an error, never a panic, and what decodes passes the checks a
//! JSON trace passes, so the analyses can run on it.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(tr) = spillscope::trace::columnar::decode(data) {
        let _ = spillscope::trace::verify::verify(&tr, 5);
        let _ = spillscope_explorer::data::Dataset::build("fuzz", tr);
    }
});

#![no_main]
//! Graph JSON front end, then a simulation of whatever loads.
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = serde_json::from_slice::<spillscope::graph::json::GraphJson>(data) else {
        return;
    };
    if let Ok(g) = spillscope::graph::json::graph_from_json(doc, "fuzz") {
        common::simulate_small(&g);
    }
});

#![no_main]
//! Graph JSON front end, then a simulation of whatever loads.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = serde_json::from_slice::<spillscope::graph::json::GraphJson>(data) else {
        return;
    };
    if let Ok(g) = spillscope::graph::json::graph_from_json(doc, "fuzz") {
        if g.ops.len() <= 2_000 {
            let hw = spillscope::cost::HardwareProfile::preset("seed-npu")
                .unwrap()
                .with_capacity(64 * 1024)
                .unwrap();
            let _ = spillscope::sim::simulate(&g, &hw, &Default::default());
        }
    }
});

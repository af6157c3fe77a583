//! Shared by the targets that load a graph: simulate it when it is small
//! enough to keep each run fast.

/// Simulates `g` at a capacity where most graphs spill (graphs over 2,000
/// ops are skipped: the fuzzer wants many short runs).
pub fn simulate_small(g: &spillscope::graph::Graph) {
    if g.ops.len() <= 2_000 {
        let hw = spillscope::cost::HardwareProfile::preset("seed-npu")
            .unwrap()
            .with_capacity(64 * 1024)
            .unwrap();
        let _ = spillscope::sim::simulate(g, &hw, &Default::default());
    }
}

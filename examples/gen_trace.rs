fn main() {
    let blocks: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(41_700);
    let out = std::env::args()
        .nth(2)
        .unwrap_or("/tmp/million.json".into());
    let g = spillscope::graph::gen::transformer_like(blocks, 64, 128);
    let mut hw = spillscope::cost::HardwareProfile::preset("seed-npu").unwrap();
    hw.memory.capacity.0 = 160 * 1024;
    let tr = spillscope::sim::simulate(&g, &hw, &spillscope::sim::SimConfig::default()).unwrap();
    std::fs::write(&out, tr.to_json()).unwrap();
    println!("{} events", tr.events.len());
}

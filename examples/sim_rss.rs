//! Simulates a graph JSON the way `spillscope sim --policy lru` does, step
//! by step, and prints this process's resident memory after each step (and
//! the peak so far): where a large graph's memory goes, with the run
//! that keeps only its summary and then the one that records its trace.
//! Usage: cargo run --release --example sim_rss -- GRAPH.json
use spillscope::cost::hardware::HardwareProfile;
use spillscope::graph::Graph;
use spillscope::sim::{EvictionPolicy, SimConfig};

fn status(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let l = s.lines().find(|l| l.starts_with(key))?.to_string();
            l.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .unwrap_or(0)
}

fn step(what: &str, t: std::time::Instant) {
    println!(
        "{what:<28} {:>6} MB resident, {:>6} MB peak, {:>6.2} s",
        status("VmRSS") / 1024,
        status("VmHWM") / 1024,
        t.elapsed().as_secs_f64()
    );
}

fn main() {
    let p = std::env::args().nth(1).expect("graph JSON path");
    let t = std::time::Instant::now();
    step("start", t);
    let g: Graph = spillscope::graph::json::load_graph_json(std::path::Path::new(&p)).unwrap();
    step("graph loaded", t);
    let hw = HardwareProfile::preset("seed-npu").unwrap();
    let cfg = SimConfig {
        policy: EvictionPolicy::Lru,
        ..Default::default()
    };
    let summary = spillscope::sim::simulate_summary(
        &g,
        &hw,
        &cfg,
        None,
        &spillscope::cancel::Cancel::never(),
    )
    .unwrap();
    step("simulated (summary only)", t);
    drop(summary);
    let tr = spillscope::sim::simulate(&g, &hw, &cfg).unwrap();
    step("simulated (trace)", t);
    let row = spillscope::analysis::runs::RunRow::from_trace(&tr);
    step("summary row", t);
    drop(tr);
    step("trace dropped", t);
    println!("{} ops, traffic {} B", g.ops.len(), row.traffic_bytes);
}

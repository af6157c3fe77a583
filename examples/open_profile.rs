//! Times each stage of opening a trace in the explorer and prints the peak
//! RSS of this process (which only opens the trace).
//! Usage: cargo run --release --example open_profile -- TRACE.json
use std::time::Instant;
fn main() {
    let p = std::env::args().nth(1).expect("trace path");
    let t = Instant::now();
    let bytes = std::fs::read(&p).unwrap();
    let read = t.elapsed();
    let t = Instant::now();
    let tr = spillscope::trace::Trace::from_slice(&bytes).unwrap();
    let parse = t.elapsed();
    drop(bytes);
    let t = Instant::now();
    let idx = spillscope::analysis::timeline::TimelineIndex::build(&tr);
    let index = t.elapsed();
    let t = Instant::now();
    let hs = spillscope::analysis::hotspots::hotspots(&tr);
    let hot = t.elapsed();
    let t = Instant::now();
    let rt = spillscope::analysis::roundtrips::round_trips(&tr);
    let trips = t.elapsed();
    let t = Instant::now();
    let rt2 = spillscope::analysis::roundtrips::round_trips(&tr);
    println!("trips again {:?} {}", t.elapsed(), rt2.len());
    let t = Instant::now();
    let cl = spillscope::analysis::classify::classify(&tr);
    let class = t.elapsed();
    let t = Instant::now();
    let pl = spillscope::analysis::memmap::placements(&tr);
    let place = t.elapsed();
    let t = Instant::now();
    let d = spillscope::tui::data::Dataset::build("x", tr);
    let all = t.elapsed();
    let hwm = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("VmHWM"))
        .unwrap()
        .to_string();
    println!("read {read:?} parse {parse:?} index {index:?} hotspots {hot:?} trips {trips:?} classify {class:?} placements {place:?} dataset {all:?}");
    println!(
        "{hwm}; {} {} {} {} {}",
        idx.end_ns,
        hs.len(),
        rt.len(),
        cl.spills.len(),
        pl.len() + d.placements.len()
    );
}

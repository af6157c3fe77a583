use spillscope::analysis::optimum::{optimal_traffic, OptimumLimits};
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let g = spillscope::graph::load(std::path::Path::new(&args[1]), &Default::default()).unwrap();
    let cap: u64 = args[2].parse().unwrap();
    let t = std::time::Instant::now();
    let o = optimal_traffic(
        &g,
        cap,
        OptimumLimits {
            time_limit_s: 60.0,
            ..Default::default()
        },
    );
    println!("{o:?} in {:?}", t.elapsed());
}

use spillscope::npu::solve::{search, start_plans as file_plans, Goal};
use spillscope::npu::Kernel;
use std::time::Duration;
fn main() {
    if std::env::var_os("PROXY").is_some() {
        proxy_demo();
        return;
    }
    if std::env::var_os("SOLVE").is_some() {
        solve_demo();
        return;
    }
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5.0);
    for c in ["Matmul_Case0", "FlashAttention_Case0", "Conv_Case0"] {
        let k = Kernel::load(std::path::Path::new(&format!(
            "../shared/data/npu/{c}.json"
        )))
        .unwrap();
        let starts = file_plans(&k, 4);
        for goal in [Goal::Peak, Goal::Traffic] {
            let t = std::time::Instant::now();
            let f = search(&k, goal, &starts, Duration::from_secs_f64(secs), 1, 4).unwrap();
            println!(
                "{c} {goal:?}: {:?} lookahead {} evals {} in {:?}",
                f.metrics,
                f.plan.lookahead,
                f.evaluations,
                t.elapsed()
            );
            if goal == Goal::Traffic {
                let budget = f.metrics.extra_traffic * 105 / 100;
                for b in [budget, f.metrics.extra_traffic * 3] {
                    let t = std::time::Instant::now();
                    let mut st = starts.clone();
                    st.push(f.plan.clone());
                    let g = search(
                        &k,
                        Goal::CyclesWithin(b),
                        &st,
                        Duration::from_secs_f64(secs),
                        2,
                        6,
                    )
                    .unwrap();
                    println!(
                        "   cycles within {b}: {:?} lookahead {} evals {} in {:?}",
                        g.metrics,
                        g.plan.lookahead,
                        g.evaluations,
                        t.elapsed()
                    );
                }
            }
        }
    }
}
#[allow(dead_code)]
pub fn proxy_demo() {
    use spillscope::npu::solve::*;
    for c in ["Matmul_Case0", "FlashAttention_Case0", "Conv_Case0"] {
        let k = Kernel::load(std::path::Path::new(&format!(
            "../shared/data/npu/{c}.json"
        )))
        .unwrap();
        let gs = groups(&k);
        let mut px = Proxy::new(&k, &gs);
        let file: Vec<usize> = (0..gs.len()).collect();
        let loc = locality_order(&k, &gs);
        println!(
            "{c}: groups {} proxy file {} locality {}",
            gs.len(),
            px.traffic(&file),
            px.traffic(&loc)
        );
        let t = std::time::Instant::now();
        let mut rng = Rng::new(7);
        let (best, bt) = proxy_search(&mut px, &file, Duration::from_secs(5), &mut rng);
        println!("   proxy search: {bt} in {:?}", t.elapsed());
        let starts = vec![Plan {
            order: best.clone(),
            lookahead: 0,
        }];
        let f = search(&k, Goal::Traffic, &starts, Duration::from_secs(0), 1, 0).unwrap();
        println!("   real: {:?}", f.metrics);
    }
}
pub fn solve_demo() {
    use spillscope::npu::solve::*;
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5.0);
    for c in ["Matmul_Case0", "FlashAttention_Case0", "Conv_Case0"] {
        let k = Kernel::load(std::path::Path::new(&format!(
            "../shared/data/npu/{c}.json"
        )))
        .unwrap();
        let r = solve(
            &k,
            SolveOptions {
                time: Duration::from_secs_f64(secs),
                ..Default::default()
            },
        )
        .unwrap();
        println!(
            "{c}: peak {} | traffic {:?} | cycles {:?} (budget {}) in {:?}",
            r.peak.metrics.peak_residency,
            r.traffic.metrics,
            r.cycles.metrics,
            r.traffic_budget,
            r.elapsed
        );
    }
}

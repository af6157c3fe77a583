//! ExecuTorch's memory plans beside spillscope's, as the README's markdown
//! tables (run by `scripts/executorch_table.sh`). For each model directory
//! under DATA (`<model>/<model>.greedy.pte`, `<model>.banked_<K>k.pte`, as
//! in `../shared/data/executorch`):
//! - ExecuTorch's greedy arena, the liveness peak of the same graph, and
//!   each policy's smallest capacity with no spill traffic (the `whatif`
//!   knee search);
//! - at each BankedGreedy SRAM size: the DRAM traffic of BankedGreedy's
//!   plan (`import`), of each spillscope policy at that capacity (`whatif`)
//!   and the lower bound.
//!
//! Every figure comes from the library functions the commands call.
//! Usage: cargo run --release --example executorch_table -- DATA [arenas|banked]
//! (one of the two tables; both without).
use spillscope::graph::Liveness;
use spillscope::run::RunSpec;
use spillscope::session::{run, Request, Wants, WhatIfGrid};
use spillscope::sim::EvictionPolicy as P;
use spillscope::units::fmt_bytes;
use std::path::{Path, PathBuf};

const POLICIES: [P; 4] = [P::Lru, P::Belady, P::Lifetime, P::Planned];

/// The model's banked programs, smallest SRAM first: (bytes, path).
fn banked(dir: &Path, m: &str) -> Vec<(u64, PathBuf)> {
    let mut v: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .expect("model directory")
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let k = name
                .strip_prefix(&format!("{m}.banked_"))?
                .strip_suffix("k.pte")?
                .parse::<u64>()
                .ok()?;
            Some((k * 1024, e.path()))
        })
        .collect();
    v.sort();
    v
}

/// `whatif` of `pte` at `capacities` under every policy: rows and knees.
fn sweep(pte: &Path, capacities: Vec<u64>) -> spillscope::session::WhatIf {
    let mut spec = RunSpec::new(pte);
    spec.flags.policies = Some(POLICIES.to_vec());
    let request = Request {
        source: spillscope::session::Source::Model(Box::new(spec)),
        wants: Wants {
            whatif: Some(WhatIfGrid {
                capacities,
                curve: None,
                bandwidths: vec![None],
                cores: Vec::new(),
                shard: None,
                knees: true,
            }),
            ..Default::default()
        },
        budgets: Default::default(),
        cache: None,
    };
    run(&request, &|_| {})
        .expect("whatif")
        .whatif
        .expect("a sweep")
}

fn main() {
    let data = PathBuf::from(std::env::args().nth(1).expect("DATA directory"));
    let mut models: Vec<String> = std::fs::read_dir(&data)
        .expect("DATA")
        .flatten()
        .filter(|e| e.path().is_dir() && e.file_name() != "schema")
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    models.sort();
    let names: Vec<&str> = POLICIES.iter().map(|p| p.as_str()).collect();
    let mut arena = String::from("| model | ExecuTorch greedy arena | liveness peak | ");
    arena += &names
        .iter()
        .map(|n| format!("no traffic from ({n})"))
        .collect::<Vec<_>>()
        .join(" | ");
    arena += " |\n|---|---|---|";
    arena += &"---|".repeat(names.len());
    arena.push('\n');
    let mut banked_t = String::from("| model | SRAM | BankedGreedy | ");
    banked_t += &names.join(" | ");
    banked_t += " | bound |\n|---|---|---|";
    banked_t += &"---|".repeat(names.len() + 1);
    banked_t.push('\n');
    for m in &models {
        let dir = data.join(m);
        let greedy = dir.join(format!("{m}.greedy.pte"));
        let program = spillscope::graph::executorch::Program::load(&greedy).expect("program");
        let g = spillscope::graph::executorch::lower::lower(&program, m)
            .expect("graph")
            .graph;
        let peak = Liveness::compute(&g).peak_bytes;
        let sizes = banked(&dir, m);
        let w = sweep(&greedy, sizes.iter().map(|s| s.0).collect());
        let knee = |p: &str| {
            w.knees
                .iter()
                .find(|k| k.policy == p)
                .and_then(|k| k.zero_spill_capacity)
                .map_or("-".to_string(), fmt_bytes)
        };
        arena += &format!(
            "| {m} | {} | {} | {} |\n",
            fmt_bytes(program.arena_bytes.get(1).copied().unwrap_or(0)),
            fmt_bytes(peak),
            names
                .iter()
                .map(|n| knee(n))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        for (bytes, pte) in &sizes {
            let (plan, _) = spillscope::trace::import::import(pte, None, &Default::default())
                .expect("BankedGreedy plan");
            let at = |p: &str| {
                w.report
                    .runs
                    .iter()
                    .find(|r| r.policy == p && r.capacity_bytes == *bytes)
            };
            let cells: Vec<String> = names
                .iter()
                .map(|n| at(n).map_or("-".into(), |r| fmt_bytes(r.traffic_bytes)))
                .collect();
            let bound = at("lru").map_or("-".into(), |r| {
                format!(
                    "{} ({})",
                    fmt_bytes(r.lower_bound_traffic_bytes),
                    r.lower_bound_method.as_str()
                )
            });
            banked_t += &format!(
                "| {m} | {} | {} | {} | {bound} |\n",
                fmt_bytes(*bytes),
                fmt_bytes(plan.summary.traffic_bytes),
                cells.join(" | ")
            );
        }
    }
    match std::env::args().nth(2).as_deref() {
        Some("arenas") => print!("{arena}"),
        Some("banked") => print!("{banked_t}"),
        _ => print!("{arena}\n{banked_t}"),
    }
}

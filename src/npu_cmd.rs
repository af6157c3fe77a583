//! `spillscope npu ...`: kernel DAGs of the NPU scheduling benchmark.

use clap::{Args, Subcommand, ValueEnum};
use spillscope::npu::check::{evaluate, read_solution, write_solution};
use spillscope::npu::schedule::{l0_violation, peak_residency};
use spillscope::npu::solve::{search, solve, start_plans, Goal, SolveOptions};
use spillscope::npu::{alloc::allocate, Kernel, Metrics, Solution};
use spillscope::{Error, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Subcommand)]
pub enum NpuCommand {
    /// Turn a case (and a solution, or the built-in heuristics) into a
    /// spillscope trace: pools per buffer type, ops per pipe, spills as
    /// evict/reload; open it with `view`, check it with `verify`.
    Import(ImportArgs),
    /// Problem 1: a schedule with low peak L1+UB residency (L0A/L0B/L0C one
    /// buffer at a time).
    Schedule(ScheduleArgs),
    /// Problem 2: offsets and spills under the capacities for a schedule.
    Allocate(AllocateArgs),
    /// Problem 3: pipe timing of a solution directory.
    Time(CheckArgs),
    /// All three, lowering cycles within a traffic budget; writes
    /// schedule.txt, memory.txt and spill.txt.
    Solve(SolveArgs),
    /// Validate a solution directory against every rule and recompute its
    /// metrics (exit 1 naming the rule broken).
    Check(CheckArgs),
    /// Write a larger case of the benchmark's families, to measure the
    /// search at scale: `matmul M N K` (the benchmark's own tiling;
    /// `matmul 8 8 8` is Matmul_Case0) or `replicate CASE COPIES`.
    #[command(subcommand)]
    Gen(GenCommand),
}

#[derive(Debug, Subcommand)]
pub enum GenCommand {
    /// An M x N grid of output tiles, each a chain of K products through
    /// L0A/L0B into L0C (7MNK + 3(MK + KN + MN) nodes).
    Matmul {
        m: usize,
        n: usize,
        k: usize,
        #[arg(short = 'o', long = "output", value_name = "CASE.json")]
        output: PathBuf,
        #[arg(long)]
        force: bool,
    },
    /// COPIES independent copies of CASE side by side.
    Replicate {
        case: PathBuf,
        copies: usize,
        #[arg(short = 'o', long = "output", value_name = "CASE.json")]
        output: PathBuf,
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// `CASE.json` or `CASE_Nodes.csv` (with `CASE_Edges.csv` beside it).
    pub case: PathBuf,
    /// A solution directory (schedule.txt, memory.txt, spill.txt); default:
    /// the heuristics' own solution.
    #[arg(long, value_name = "DIR")]
    pub solution: Option<PathBuf>,
    #[arg(short = 'o', long = "output", value_name = "TRACE.json")]
    pub output: Option<PathBuf>,
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args, Clone)]
pub struct SearchOpts {
    /// Improvement time after the heuristics, e.g. `60s`, `500ms`, `2m` (0: heuristics only).
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_duration)]
    pub time: Duration,
    /// Seed of the local search (same seed, same result).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NpuFormat {
    Table,
    Json,
}

#[derive(Debug, Args)]
pub struct ScheduleArgs {
    pub case: PathBuf,
    #[command(flatten)]
    pub search: SearchOpts,
    /// Write schedule.txt here.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[arg(long)]
    pub force: bool,
    #[arg(long, value_enum, default_value = "table")]
    pub format: NpuFormat,
}

#[derive(Debug, Args)]
pub struct AllocateArgs {
    pub case: PathBuf,
    /// A problem-1 schedule (one node id per line); default: the lowest-peak heuristic.
    #[arg(long, value_name = "FILE")]
    pub schedule: Option<PathBuf>,
    /// Write schedule.txt (with spill ids), memory.txt and spill.txt here.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[arg(long)]
    pub force: bool,
    #[arg(long, value_enum, default_value = "table")]
    pub format: NpuFormat,
}

#[derive(Debug, Args)]
pub struct SolveArgs {
    pub case: PathBuf,
    /// Output directory for schedule.txt, memory.txt, spill.txt.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    #[command(flatten)]
    pub search: SearchOpts,
    /// Cycles are lowered with extra traffic at most this much above the
    /// lowest found, e.g. `5%`.
    #[arg(long, value_name = "PCT", default_value = "5%", value_parser = parse_percent)]
    pub traffic_slack: f64,
    /// An absolute traffic budget for the cycles phase (bytes); overrides --traffic-slack.
    #[arg(long, value_name = "BYTES")]
    pub traffic_budget: Option<u64>,
    /// Which solution to write: the fastest within the budget, or the lowest traffic.
    #[arg(long, value_enum, default_value = "cycles")]
    pub goal: SolveGoal,
    #[arg(long)]
    pub force: bool,
    #[arg(long, value_enum, default_value = "table")]
    pub format: NpuFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SolveGoal {
    Cycles,
    Traffic,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    pub case: PathBuf,
    /// Directory with schedule.txt, memory.txt and spill.txt.
    pub dir: PathBuf,
    #[arg(long, value_enum, default_value = "table")]
    pub format: NpuFormat,
}

fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map(|i| s.split_at(i))
        .unwrap_or((s, "s"));
    let v: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration like 60s, 500ms or 2m"))?;
    let secs = match unit.trim() {
        "" | "s" => v,
        "ms" => v / 1000.0,
        "m" | "min" => v * 60.0,
        u => return Err(format!("unknown time unit {u:?} (use ms, s or m)")),
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("{s:?} is not a duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn parse_percent(s: &str) -> std::result::Result<f64, String> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("{s:?} is not a percentage like 5%"))?;
    if !(0.0..=100.0).contains(&v) {
        return Err(format!("{s:?}: slack must be between 0% and 10000%"));
    }
    Ok(v)
}

fn metrics_text(name: &str, m: &Metrics) -> String {
    format!(
        "{name}: peak residency {} | extra traffic {} ({}) | total cycles {}\n",
        m.peak_residency,
        m.extra_traffic,
        spillscope::units::count(m.spill_count as u64, "spill"),
        m.total_cycles
    )
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
}

fn read_schedule(path: &Path) -> Result<Vec<usize>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            l.trim().parse().map_err(|_| {
                Error::parse(
                    path,
                    "schedule",
                    format!("line {}: expected a node id", i + 1),
                )
            })
        })
        .collect()
}

/// The heuristics' solution (no search): min-peak schedule, allocated.
pub fn heuristic_solution(k: &Kernel) -> Result<Solution> {
    let r = solve(k, SolveOptions::default())?;
    Ok(r.cycles.solution)
}

/// Writes the generated case and says how big it is.
fn run_gen(g: &GenCommand) -> Result<(String, bool)> {
    use spillscope::npu::gen;
    let (case, output, force) = match g {
        GenCommand::Matmul {
            m,
            n,
            k,
            output,
            force,
        } => (gen::matmul(*m, *n, *k)?, output, *force),
        GenCommand::Replicate {
            case,
            copies,
            output,
            force,
        } => {
            // Loaded first so a broken case is named as the loader names it.
            Kernel::load(case)?;
            let text = std::fs::read_to_string(case).map_err(|e| Error::io(case, e))?;
            let v: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| Error::parse(case, "NPU kernel DAG", e))?;
            (gen::replicate(&v, *copies)?, output, *force)
        }
    };
    let nodes = case.nodes.len();
    let text = serde_json::to_string_pretty(&case)
        .map_err(|e| Error::Unsupported(format!("cannot write the case: {e}")))?;
    spillscope::output::write_atomic(output, text, force)?;
    Ok((
        format!("wrote {} ({nodes} nodes)\n", output.display()),
        true,
    ))
}

pub fn run(cmd: &NpuCommand) -> Result<(String, bool)> {
    match cmd {
        NpuCommand::Gen(g) => run_gen(g),
        NpuCommand::Import(a) => {
            let k = Kernel::load(&a.case)?;
            let sol = match &a.solution {
                Some(d) => read_solution(d)?,
                None => heuristic_solution(&k)?,
            };
            let tr = spillscope::npu::to_trace::to_trace(&k, &sol)?;
            let line = format!(
                "{}: {} ops, {} buffers, {} events, {} cycles, {} spills, {} extra traffic\n",
                k.name,
                tr.ops.len(),
                tr.tensors.len(),
                tr.events.len(),
                tr.summary.latency_ns,
                tr.summary.spill_count,
                tr.summary.traffic_bytes
            );
            match &a.output {
                Some(p) => {
                    tr.write(p, a.force)?;
                    Ok((line + &format!("wrote {}\n", p.display()), true))
                }
                // Standard output, through the same checked writer.
                None => {
                    tr.write(std::path::Path::new("-"), a.force)?;
                    Ok((String::new(), true))
                }
            }
        }
        NpuCommand::Schedule(a) => {
            let k = Kernel::load(&a.case)?;
            let starts = start_plans(&k, 0);
            let f = search(&k, Goal::Peak, &starts, a.search.time, a.search.seed, 0).ok_or_else(
                || Error::Config(format!("npu schedule: no valid schedule for {}", k.name)),
            )?;
            let order = f.solution.order;
            if let Some(v) = l0_violation(&k, &order) {
                return Err(Error::Config(format!(
                    "npu schedule: internal error, L0 rule broken: {v}"
                )));
            }
            let peak = peak_residency(&k, &order);
            if let Some(d) = &a.out {
                std::fs::create_dir_all(d).map_err(|e| Error::io(d, e))?;
                let text: String = order.iter().map(|i| format!("{i}\n")).collect();
                super::sim_cmd::write_atomic(&d.join("schedule.txt"), &text, a.force)?;
            }
            Ok(match a.format {
                NpuFormat::Json => (
                    json(
                        &serde_json::json!({"case": k.name, "peak_residency": peak, "nodes": order.len()}),
                    ),
                    true,
                ),
                NpuFormat::Table => (
                    format!(
                        "{}: peak residency {peak} over {} nodes\n",
                        k.name,
                        order.len()
                    ),
                    true,
                ),
            })
        }
        NpuCommand::Allocate(a) => {
            let k = Kernel::load(&a.case)?;
            let order = match &a.schedule {
                Some(p) => read_schedule(p)?,
                None => {
                    let f = search(&k, Goal::Peak, &start_plans(&k, 0), Duration::ZERO, 1, 0)
                        .ok_or_else(|| {
                            Error::Config(format!("npu allocate: no schedule for {}", k.name))
                        })?;
                    f.solution.order
                }
            };
            if let Some(v) = l0_violation(&k, &order) {
                return Err(Error::Config(format!(
                    "npu allocate: the schedule breaks the L0 rule: {v}"
                )));
            }
            let al = allocate(&k, &order)?;
            let m = evaluate(&k, &al.solution)
                .map_err(|v| Error::Config(format!("npu allocate: internal error: {v}")))?;
            if let Some(d) = &a.out {
                write_solution(d, &al.solution, a.force)?;
            }
            Ok(match a.format {
                NpuFormat::Json => (
                    json(&serde_json::json!({"case": k.name, "metrics": m})),
                    true,
                ),
                NpuFormat::Table => (metrics_text(&k.name, &m), true),
            })
        }
        NpuCommand::Time(a) | NpuCommand::Check(a) => {
            let k = Kernel::load(&a.case)?;
            let sol = read_solution(&a.dir)?;
            match evaluate(&k, &sol) {
                Ok(m) => Ok(match a.format {
                    NpuFormat::Json => (
                        json(&serde_json::json!({"case": k.name, "valid": true, "metrics": m})),
                        true,
                    ),
                    NpuFormat::Table => (format!("valid\n{}", metrics_text(&k.name, &m)), true),
                }),
                Err(v) => Ok(match a.format {
                    NpuFormat::Json => (
                        json(
                            &serde_json::json!({"case": k.name, "valid": false, "rule": v.rule, "detail": v.detail}),
                        ),
                        false,
                    ),
                    NpuFormat::Table => (format!("invalid: {v}\n"), false),
                }),
            }
        }
        NpuCommand::Solve(a) => {
            let k = Kernel::load(&a.case)?;
            let r = solve(
                &k,
                SolveOptions {
                    time: a.search.time,
                    seed: a.search.seed,
                    traffic_slack: a.traffic_slack,
                    traffic_budget: a.traffic_budget,
                    ..Default::default()
                },
            )?;
            let chosen = match a.goal {
                SolveGoal::Cycles => &r.cycles,
                SolveGoal::Traffic => &r.traffic,
            };
            write_solution(&a.out, &chosen.solution, a.force)?;
            let peak = r.peak.metrics.peak_residency;
            Ok(match a.format {
                NpuFormat::Json => (
                    json(&serde_json::json!({
                        "case": k.name,
                        "peak_residency": peak,
                        "lowest_traffic": r.traffic.metrics,
                        "traffic_budget": r.traffic_budget,
                        "fastest_within_budget": r.cycles.metrics,
                        "written": chosen.metrics,
                        "elapsed_ms": r.elapsed.as_millis() as u64,
                    })),
                    true,
                ),
                NpuFormat::Table => (
                    format!(
                        "{}: lowest peak residency {peak}\n  lowest traffic: {} extra traffic, {} cycles\n  fastest within {} traffic: {} cycles ({} extra traffic)\n  wrote {} ({:?})\n",
                        k.name,
                        r.traffic.metrics.extra_traffic,
                        r.traffic.metrics.total_cycles,
                        r.traffic_budget,
                        r.cycles.metrics.total_cycles,
                        r.cycles.metrics.extra_traffic,
                        a.out.display(),
                        r.elapsed
                    ),
                    true,
                ),
            })
        }
    }
}

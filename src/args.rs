//! The clap definitions: every flag documented, sizes and bandwidths with units.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// spillscope: make memory SPILL in neural-network graphs measurable.
///
/// Simulates a model (ONNX or graph JSON) against on-chip memory with
/// eviction policies and a DRAM cost model, writes `spillscope.trace/1`
/// traces, and checks them. Run without arguments to see the bundled sample.
#[derive(Debug, Parser)]
#[command(name = "spillscope", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Simulate a model under one or more spill policies and print a summary.
    Sim(SimArgs),
    /// Replay a trace and check every invariant of the trace contract.
    Verify(VerifyArgs),
    /// List or print the built-in hardware profiles.
    Hw(HwArgs),
    /// Print the summary of the bundled sample (what `spillscope` alone does off a terminal).
    Sample(SampleArgs),
    /// Sweep capacity, bandwidth and policy; one row per configuration and the knee called out.
    Whatif(WhatifArgs),
    /// Join the shards of a `whatif --shard K/N` sweep into exactly what the
    /// unsharded sweep prints.
    Merge(MergeArgs),
    /// Re-simulated suggestions (pin, capacity, policy, prefetch, weights, fp16, fuse, recompute, reorder) sorted by ms saved.
    Suggest(SuggestArgs),
    /// Import a runtime trace (ONNX Runtime, PyTorch, Chrome/Perfetto, spillscope JSONL).
    Import(ImportArgs),
    /// Export a trace for Perfetto / chrome://tracing.
    Export(ExportArgs),
    /// Compare two traces: event agreement, per-op and per-tensor deltas.
    Diff(DiffArgs),
    /// Deterministic synthetic graphs and traces for benchmarks and scale tests.
    #[command(subcommand)]
    Gen(super::gen_cmd::GenCommand),
    /// NPU kernel DAGs (the 2025 intra-core scheduling benchmark): import,
    /// schedule, allocate, time, solve, check.
    #[command(subcommand)]
    Npu(super::npu_cmd::NpuCommand),
    /// The instrumentation probe's files: recover the events of a recorder
    /// that was killed before it could write them.
    #[command(subcommand)]
    Probe(super::probe_cmd::ProbeCommand),
    /// A shareable report of a trace (or a model, simulated first): summary,
    /// hotspots, classification, oscillation, worst round trips, suggestions,
    /// what-if curve; markdown, JSON or self-contained HTML with SVG charts.
    Report(ReportArgs),
    /// Open the terminal explorer on a trace, two traces (compare), or a model
    /// that is re-simulated whenever it, the hardware or the schedule config changes.
    View(ViewArgs),
}

#[derive(Debug, Args)]
pub struct SuggestArgs {
    /// Model (ONNX, TFLite, ExecuTorch, graph JSON or an NPU kernel DAG), or a simulator trace (its graph,
    /// hardware and config are taken from it; the flags below are then ignored).
    pub model: PathBuf,
    #[command(flatten)]
    pub hw: HwOpts,
    #[command(flatten)]
    pub model_opts: ModelOpts,
    /// The baseline run (one policy).
    #[command(flatten)]
    pub schedule: ScheduleOpts,
    /// Write the best suggestion a schedule config can express (everything
    /// but capacity) applied to the baseline as a new schedule config
    /// (atomically; an existing file needs --force).
    #[arg(long, value_name = "SCHED.toml")]
    pub write_config: Option<PathBuf>,
    /// Overwrite an existing --write-config file.
    #[arg(long)]
    pub force: bool,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    #[command(flatten)]
    pub session: SessionOpts,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Markdown,
    Json,
    Html,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A trace (any importable format) or a model (ONNX, TFLite, graph JSON),
    /// which is simulated first with the flags below.
    pub input: PathBuf,
    #[command(flatten)]
    pub import: ImportOpts,
    #[command(flatten)]
    pub hw: HwOpts,
    #[command(flatten)]
    pub model_opts: ModelOpts,
    /// How a model is simulated (one policy).
    #[command(flatten)]
    pub schedule: ScheduleOpts,
    /// Skip the sections that re-simulate (suggestions, what-if, optimum).
    #[arg(long)]
    pub no_resimulate: bool,
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: ReportFormat,
    /// Write here (atomically) instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Overwrite an existing output file.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub session: SessionOpts,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SweepFormat {
    Table,
    Json,
    Csv,
}

#[derive(Debug, Args)]
pub struct WhatifArgs {
    /// Model: ONNX (`.onnx`), TFLite (`.tflite`), ExecuTorch (`.pte`), graph JSON or an NPU kernel DAG.
    pub model: PathBuf,
    /// Capacities: `16MiB..64MiB:4MiB` (inclusive, with step) or `8MiB,16MiB`;
    /// default the profile's.
    #[arg(long, value_name = "RANGE", allow_hyphen_values = true)]
    pub capacity: Option<String>,
    /// DRAM bandwidths: `20GB/s..60GB/s:20GB/s` or `30GB/s,60GB/s`; default the profile's.
    #[arg(long, value_name = "RANGE")]
    pub bandwidth: Option<String>,
    /// Core counts sharing the DRAM bus: `1,2,4` or `1..4:1`; default the
    /// profile's. Capacities are per core; `--split` says how the graph
    /// is spread (by batch: the batch must divide by every count).
    #[arg(long, value_name = "LIST")]
    pub cores: Option<String>,
    /// Hardware profile the sweep varies: a TOML file or a preset (`seed-npu`,
    /// `edge-npu-16m`, `ethos-u65-high-end`, `ethos-u55-high-end-embedded`,
    /// `npu-benchmark`).
    #[arg(long, value_name = "FILE|PRESET", default_value = "seed-npu")]
    pub hw: String,
    #[command(flatten)]
    pub model_opts: ModelOpts,
    /// The runs swept (every policy listed, each at every capacity and bandwidth).
    #[command(flatten)]
    pub schedule: ScheduleOpts,
    #[arg(long, value_enum, default_value = "table")]
    pub format: SweepFormat,
    /// Compute only the K-th of N slices of the grid (1-based, with
    /// `--format json`); `spillscope merge` joins the slices into what the
    /// whole sweep prints. Slurm: `--shard $SLURM_ARRAY_TASK_ID/$N` with
    /// `--array=1-N`; Kubernetes Indexed Jobs: `$((JOB_COMPLETION_INDEX+1))/$N`.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<spillscope::analysis::shard::Shard>,
    /// Seconds each capacity's lower bound and plan (the exact program, as
    /// `sim` solves it there) may take; capacities solve in parallel. 0
    /// leaves the rows' bounds per-op and prints no gap against them.
    #[arg(long, value_name = "SECS", default_value_t = spillscope::analysis::optimum::DEFAULT_TIME_LIMIT_S)]
    pub ilp_time: f64,
    /// Neither read nor write the result cache.
    #[arg(long)]
    pub no_cache: bool,
}

/// `spillscope merge`: shards of one `whatif` sweep into its whole output.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' JSON files (any order).
    #[arg(required = true, value_name = "SHARD")]
    pub shards: Vec<PathBuf>,
    /// Write here instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Overwrite the output file if it exists.
    #[arg(long)]
    pub force: bool,
}

/// How a trace file is read (spillscope traces load directly; others are imported).
#[derive(Debug, Args, Clone)]
pub struct ImportOpts {
    /// Input format: ort, torch, chrome, jsonl, vela, pte, etdump (auto-detected when omitted).
    #[arg(long = "from", value_name = "FORMAT")]
    pub from: Option<String>,
    /// ONNX Runtime: which run to take (1 = the first, warm-up run); default the last.
    #[arg(long, value_name = "N")]
    pub run: Option<usize>,
    /// Link ops to this model's tensors (ONNX or graph JSON).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<PathBuf>,
    /// Refuse inputs with more events than this.
    #[arg(long, value_name = "N")]
    pub max_events: Option<usize>,
    /// JSONL streams: hold only about the last N events and ops; older ones
    /// fall out into running totals, so the stream's ledger stays whole
    /// (`view` keeps 131072 by default, `import` everything).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub keep: Option<u64>,
    /// Nested ops (PyTorch's aten::conv2d > aten::convolution > ...): work
    /// on the ops this many calls deep (1 = the top level, the default of
    /// view, report and diff; `import` keeps every level unless given).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub op_depth: Option<u32>,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The trace to import: an ONNX Runtime, PyTorch or Chrome/Perfetto
    /// profile, a spillscope JSONL stream, a Vela output directory, an
    /// ExecuTorch program (its memory plan) or ETDump profile, or a
    /// spillscope trace.
    pub file: PathBuf,
    #[command(flatten)]
    pub import: ImportOpts,
    /// The shapes the `--model` is read at (a profile's batch and dims).
    #[command(flatten)]
    pub model_opts: ModelOpts,
    /// ExecuTorch programs: time the plan's ops by this ETDump profile of
    /// the program (`--run N` picks the run; default the last).
    #[arg(long, value_name = "RUN.etdp")]
    pub etdump: Option<PathBuf>,
    /// ExecuTorch programs: the on-chip pool's size (default: arena 1's,
    /// from the program).
    #[arg(long, value_name = "SIZE", value_parser = parse_size_arg)]
    pub capacity: Option<u64>,
    /// Write the spillscope trace here (atomically).
    #[arg(short = 'o', long = "output", value_name = "TRACE.json")]
    pub output: Option<PathBuf>,
    /// Overwrite an existing output file.
    #[arg(long)]
    pub force: bool,
    /// Summary format on stdout.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// A spillscope trace (or any importable trace).
    pub trace: PathBuf,
    /// Write Chrome trace JSON (loads in Perfetto and chrome://tracing).
    #[arg(long, value_name = "OUT.json", required = true)]
    pub chrome: PathBuf,
    #[command(flatten)]
    pub import: ImportOpts,
    /// Overwrite an existing output file.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// First trace (e.g. simulated).
    pub a: PathBuf,
    /// Second trace (e.g. measured).
    pub b: PathBuf,
    #[command(flatten)]
    pub import: ImportOpts,
    /// Rows of per-op and per-tensor deltas to show.
    #[arg(long, default_value_t = 15)]
    pub limit: usize,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct ViewArgs {
    /// `TRACE [TRACE2]`: spillscope traces, ONNX Runtime, PyTorch or Chrome
    /// profiles, JSONL streams, Vela output directories or ETDump profiles;
    /// or one model: ONNX (`.onnx`), TFLite (`.tflite`), ExecuTorch
    /// (`.pte`), graph JSON or an NPU kernel DAG.
    #[arg(num_args = 1..=2, required = true)]
    pub inputs: Vec<PathBuf>,
    #[command(flatten)]
    pub hw: HwOpts,
    #[command(flatten)]
    pub model_opts: ModelOpts,
    /// How a model is simulated (one policy); the config is watched and
    /// re-applied on every save.
    #[command(flatten)]
    pub schedule: ScheduleOpts,
    /// Reload traces when another process rewrites them.
    #[arg(long)]
    pub watch: bool,
    /// Theme: `dark`, `light`, `high-contrast` or a TOML file (partial files patch `dark`).
    #[arg(long, value_name = "NAME|FILE")]
    pub theme: Option<String>,
    /// ASCII-only glyphs, for terminals without Unicode block and line characters.
    #[arg(long)]
    pub ascii: bool,
    /// Enable the mouse (wheel scrolls lists).
    #[arg(long)]
    pub mouse: bool,
    /// How runtime traces are read (`--model` links a profile to its model).
    #[command(flatten)]
    pub import: ImportOpts,
    #[command(flatten)]
    pub session: SessionOpts,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
    Markdown,
}

/// Hardware selection shared by commands that simulate.
#[derive(Debug, Args, Clone)]
pub struct HwOpts {
    /// Hardware profile: a TOML file (partial files patch the default) or a
    /// preset name (`seed-npu`, `edge-npu-16m`, `ethos-u65-high-end`,
    /// `ethos-u55-high-end-embedded`, `npu-benchmark`; `spillscope hw` lists them).
    #[arg(long, value_name = "FILE|PRESET", default_value = "seed-npu")]
    pub hw: String,
    /// Override the on-chip capacity, e.g. `32MiB`, `16MB`, `4096`.
    #[arg(long, value_name = "SIZE", value_parser = parse_capacity_arg, allow_hyphen_values = true)]
    pub capacity: Option<u64>,
    /// Override DRAM read and write bandwidth, e.g. `60GB/s`.
    #[arg(long, value_name = "RATE", value_parser = parse_bw_arg, allow_hyphen_values = true)]
    pub bandwidth: Option<f64>,
    /// NPU cores sharing the DRAM bus, each running the graph on its share
    /// of the batch with its own on-chip pools (`--capacity` is per core).
    #[arg(long, value_name = "N")]
    pub cores: Option<u32>,
}

/// Graph rewrites the simulator applies before running (also settable in
/// SCHED.toml: `fuse`, `dtype`, `order`, `recompute`).
#[derive(Debug, Args, Clone, Default)]
pub struct RewriteOpts {
    /// Fuse conv/matmul + elementwise chains (conv+bn+relu...): intermediates stay on chip.
    #[arg(long)]
    pub fuse: bool,
    /// Activation dtype: `native` or `fp16` (f32 activation bytes halved).
    #[arg(long, value_name = "DTYPE")]
    pub dtype: Option<String>,
    /// Op order: `file`, `memory` (memory-aware topological order) or
    /// comma-separated op names that must run in that relative order.
    #[arg(long, value_name = "ORDER")]
    pub order: Option<String>,
    /// Recompute evicted tensors from resident producer inputs instead of
    /// reloading them, where that is quicker.
    #[arg(long)]
    pub recompute: bool,
}

impl RewriteOpts {
    /// The rewrite flags the user gave, over `flags`.
    pub fn add_to(&self, flags: &mut spillscope::run::Flags) -> spillscope::Result<()> {
        use spillscope::sim::config::OrderSpec;
        if self.fuse {
            flags.fuse = Some(true);
        }
        if let Some(d) = &self.dtype {
            flags.dtype = Some(d.parse().map_err(spillscope::Error::Config)?);
        }
        if let Some(o) = &self.order {
            flags.order = o.parse::<OrderSpec>().ok();
        }
        if self.recompute {
            flags.recompute = Some(spillscope::sim::RecomputeSpec::All(true));
        }
        Ok(())
    }
}

/// The scheduling choices of every command that simulates a model. Each
/// is optional: what is not given comes from the schedule config, then the
/// hardware profile, then the defaults (docs/commands.md, "Precedence").
#[derive(Debug, Args, Clone, Default)]
pub struct ScheduleOpts {
    /// Policies: comma-separated `ideal,lru,belady,lifetime,planned`, or `all`
    /// (default: the config's `policy`, else all for `sim`, lru elsewhere).
    #[arg(long, value_name = "LIST")]
    pub policy: Option<String>,
    /// Weights: `stream` (loaded per use), `resident` (kept like activations)
    /// or `ignore` (default: the config's, else stream).
    #[arg(long, value_name = "MODE")]
    pub weights: Option<String>,
    /// Keep this tensor resident, never evicted (repeatable; added to the config's pins).
    #[arg(long = "pin", value_name = "TENSOR")]
    pub pins: Vec<String>,
    /// Reload/weight prefetch distance in ops (over the config and the
    /// profile; needs async DMA).
    #[arg(long, value_name = "OPS")]
    pub prefetch: Option<usize>,
    /// How several cores (`--cores`) share the graph: `batch` (each runs
    /// it on its share of the batch) or `graph` (ops placed on cores by a
    /// list schedule; tensors crossing cores go through DRAM).
    #[arg(long, value_name = "HOW")]
    pub split: Option<String>,
    #[command(flatten)]
    pub rewrite: RewriteOpts,
    /// Schedule config (TOML: policy, pins, prefetch_distance, weights,
    /// free_at, fuse, dtype, order, recompute); flags given on the command
    /// line win over it.
    #[arg(long, short = 'c', value_name = "SCHED.toml")]
    pub config: Option<PathBuf>,
    /// Use measured per-op durations from this runtime profile (ONNX Runtime
    /// or any importable trace; ops matched by name) instead of the roofline,
    /// and report how far the roofline was, per op type.
    #[arg(long, value_name = "TRACE")]
    pub calibrate: Option<PathBuf>,
    /// Take tensor free points from this instrumented trace (runtimes that
    /// free late, e.g. at subgraph end); ops and tensors matched by name.
    #[arg(long = "free-at", value_name = "TRACE")]
    pub free_at: Option<PathBuf>,
}

/// How the session runs: the bound's budget and the result cache.
#[derive(Debug, Args, Clone)]
pub struct SessionOpts {
    /// Seconds the lower-bound solver (the exact minimum-traffic program,
    /// cut into windows on long schedules) and the planned policy's plan may
    /// take together; 0 turns the bound off (a planned run then solves its
    /// plan with the default budget).
    #[arg(long, value_name = "SECS", default_value_t = spillscope::analysis::optimum::DEFAULT_TIME_LIMIT_S)]
    pub ilp_time: f64,
    /// Neither read nor write the result cache (bounds, plans, slow runs and
    /// suggestions kept by the content of their inputs in the user's cache
    /// directory, or SPILLSCOPE_CACHE_DIR) nor the binary copies of large
    /// traces kept there.
    #[arg(long)]
    pub no_cache: bool,
}

impl Default for SessionOpts {
    fn default() -> Self {
        SessionOpts {
            ilp_time: spillscope::analysis::optimum::DEFAULT_TIME_LIMIT_S,
            no_cache: false,
        }
    }
}

impl SessionOpts {
    /// The session's budgets with this bound budget.
    pub fn budgets(&self) -> spillscope::Result<spillscope::session::Budgets> {
        if !self.ilp_time.is_finite() || self.ilp_time < 0.0 {
            return Err(spillscope::Error::Config(format!(
                "--ilp-time {}: seconds, 0 or more",
                self.ilp_time
            )));
        }
        Ok(spillscope::session::Budgets {
            bound_s: self.ilp_time,
            ..Default::default()
        })
    }

    /// The binary trace cache (large spillscope traces kept as columns
    /// beside the result cache), unless `--no-cache`.
    pub fn trace_store(&self) -> Option<spillscope::trace::store::TraceStore> {
        self.cache().map(|c| c.trace_store())
    }

    /// The result cache, unless `--no-cache`.
    pub fn cache(&self) -> Option<spillscope::session::cache::Cache> {
        (!self.no_cache)
            .then(spillscope::session::cache::Cache::user)
            .flatten()
    }
}

impl ScheduleOpts {
    /// The flags these options set (capacity and bandwidth come from
    /// [`HwOpts`]).
    pub fn flags(&self) -> spillscope::Result<spillscope::run::Flags> {
        use spillscope::sim::EvictionPolicy;
        let mut f = spillscope::run::Flags {
            policies: self
                .policy
                .as_deref()
                .map(EvictionPolicy::parse_list)
                .transpose()
                .map_err(spillscope::Error::Config)?,
            weights: self
                .weights
                .as_deref()
                .map(str::parse)
                .transpose()
                .map_err(spillscope::Error::Config)?,
            pins: self.pins.clone(),
            prefetch_distance: self.prefetch,
            split: self
                .split
                .as_deref()
                .map(str::parse)
                .transpose()
                .map_err(spillscope::Error::Config)?,
            calibrate: self.calibrate.clone(),
            free_at: self.free_at.clone(),
            ..Default::default()
        };
        self.rewrite.add_to(&mut f)?;
        Ok(f)
    }

    /// The run specification of `model` on `hw`; `default_policies` when
    /// neither the flags nor the config name one.
    pub fn spec(
        &self,
        model: &std::path::Path,
        hw: &HwOpts,
        load: &ModelOpts,
        default_policies: &[spillscope::sim::EvictionPolicy],
    ) -> spillscope::Result<spillscope::run::RunSpec> {
        let mut flags = self.flags()?;
        flags.capacity = hw.capacity;
        flags.bandwidth = hw.bandwidth;
        flags.cores = hw.cores;
        Ok(spillscope::run::RunSpec {
            model: model.to_path_buf(),
            load: load.load_options(),
            hardware: hw.hw.clone(),
            schedule: self.config.clone(),
            flags,
            default_policies: default_policies.to_vec(),
        })
    }
}

/// How a model file is read.
#[derive(Debug, Args, Clone)]
pub struct ModelOpts {
    /// Value for a symbolic dimension, e.g. `--dim N=8` (repeatable).
    #[arg(long = "dim", value_name = "NAME=VALUE", value_parser = parse_dim_arg)]
    pub dims: Vec<(String, u64)>,
    /// Override the batch (leading) dimension of every graph input.
    #[arg(long, value_name = "N")]
    pub batch: Option<u64>,
}

#[derive(Debug, Args)]
pub struct SimArgs {
    /// Model: ONNX (`.onnx`; external weight files need not exist), TFLite
    /// (`.tflite`), ExecuTorch (`.pte`), graph JSON or an NPU kernel DAG.
    pub model: PathBuf,
    #[command(flatten)]
    pub hw: HwOpts,
    #[command(flatten)]
    pub model_opts: ModelOpts,
    #[command(flatten)]
    pub schedule: ScheduleOpts,
    /// Write the trace here; with several policies, one file per policy
    /// (`out.json` becomes `out.lru.json`, ...).
    #[arg(short = 'o', long = "output", value_name = "TRACE.json")]
    pub output: Option<PathBuf>,
    /// Overwrite existing output files.
    #[arg(long)]
    pub force: bool,
    /// With `--split graph`: write where each op ran as a schedule
    /// config (`split = "graph"` and its `[placement]`), to pin or edit
    /// the placement and pass it back with `--config`.
    #[arg(long, value_name = "SCHED.toml")]
    pub write_placement: Option<PathBuf>,
    #[command(flatten)]
    pub session: SessionOpts,
    /// Output format of the summary on stdout.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// A `spillscope.trace/1` JSON file.
    pub trace: PathBuf,
    /// Show at most this many violations.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct HwArgs {
    /// Print this preset (or file, merged over the default) as TOML; omit to list presets.
    pub profile: Option<String>,
}

#[derive(Debug, Args)]
pub struct SampleArgs {
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

fn parse_size_arg(s: &str) -> Result<u64, String> {
    spillscope::units::parse_size(s).map_err(|e| e.to_string())
}
/// A capacity: a size above zero (`-5MiB` reaches here, not clap's flag
/// parser, so the message is about the value).
fn parse_capacity_arg(s: &str) -> Result<u64, String> {
    if s.trim_start().starts_with('-') {
        return Err("a capacity cannot be negative: give a size such as 32MiB".into());
    }
    match parse_size_arg(s)? {
        0 => Err("a capacity must be greater than zero".into()),
        n => Ok(n),
    }
}
fn parse_bw_arg(s: &str) -> Result<f64, String> {
    spillscope::units::parse_bandwidth(s).map_err(|e| e.to_string())
}
fn parse_dim_arg(s: &str) -> Result<(String, u64), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=VALUE, got {s:?}"))?;
    let v: u64 = v
        .trim()
        .parse()
        .map_err(|_| format!("dimension value {v:?} is not a whole number"))?;
    if k.trim().is_empty() {
        return Err("dimension name is empty".into());
    }
    Ok((k.trim().to_string(), v))
}

impl HwOpts {
    pub fn resolve(&self) -> spillscope::Result<spillscope::cost::HardwareProfile> {
        let mut hw = spillscope::cost::HardwareProfile::load(&self.hw)?;
        if let Some(c) = self.capacity {
            hw = hw.with_capacity(c)?;
        }
        if let Some(b) = self.bandwidth {
            hw = hw.with_bandwidth(b);
        }
        if let Some(k) = self.cores {
            hw = hw.with_cores(k)?;
        }
        Ok(hw)
    }
}

impl ImportOpts {
    /// Loads `path`: spillscope traces directly, anything else through an importer.
    pub fn load(
        &self,
        path: &std::path::Path,
    ) -> spillscope::Result<(spillscope::trace::Trace, Vec<String>)> {
        self.load_with(path, &Default::default())
    }

    /// As [`ImportOpts::load`], the `--model` read at `shapes` (`--batch`,
    /// `--dim`: the shapes the profile ran at).
    pub fn load_with(
        &self,
        path: &std::path::Path,
        shapes: &spillscope::graph::LoadOptions,
    ) -> spillscope::Result<(spillscope::trace::Trace, Vec<String>)> {
        self.load_from(path, shapes, None)
    }

    /// As [`ImportOpts::load_with`], a spillscope trace read through the
    /// binary trace cache `store` (see [`SessionOpts::trace_store`]).
    pub fn load_from(
        &self,
        path: &std::path::Path,
        shapes: &spillscope::graph::LoadOptions,
        store: Option<spillscope::trace::store::TraceStore>,
    ) -> spillscope::Result<(spillscope::trace::Trace, Vec<String>)> {
        self.load_as(path, self.options(shapes, store)?)
    }

    /// Imports `path` with `opts` (made by [`ImportOpts::options`], then
    /// adjusted by the command), in the `--from` format or detected.
    pub fn load_as(
        &self,
        path: &std::path::Path,
        opts: spillscope::trace::import::ImportOptions,
    ) -> spillscope::Result<(spillscope::trace::Trace, Vec<String>)> {
        spillscope::trace::import::import(path, self.format()?, &opts)
    }

    /// The `--from` format, if given.
    pub fn format(&self) -> spillscope::Result<Option<spillscope::input::Format>> {
        self.from
            .as_deref()
            .map(|f| f.parse().map_err(spillscope::Error::Config))
            .transpose()
    }

    /// The importers' options these flags give: `--model` read at `shapes`
    /// (an ExecuTorch program is passed by path: its plan, not its graph,
    /// is what a profile of it is linked to).
    pub fn options(
        &self,
        shapes: &spillscope::graph::LoadOptions,
        store: Option<spillscope::trace::store::TraceStore>,
    ) -> spillscope::Result<spillscope::trace::import::ImportOptions> {
        use spillscope::input::{detect, Format as In};
        let (mut model, mut program) = (None, None);
        if let Some(m) = &self.model {
            if detect(m).ok() == Some(In::Pte) {
                program = Some(m.clone());
            } else {
                model = Some(std::sync::Arc::new(spillscope::graph::load(m, shapes)?));
            }
        }
        Ok(spillscope::trace::import::ImportOptions {
            run: self.run,
            model,
            max_events: self.max_events,
            keep: self.keep.map(|k| k as usize),
            store,
            program,
            ..Default::default()
        })
    }

    /// As [`ImportOpts::load`], nested ops folded to `--op-depth` (the top
    /// level by default): what views, reports and diffs work on.
    pub fn load_at_level(
        &self,
        path: &std::path::Path,
        store: Option<spillscope::trace::store::TraceStore>,
    ) -> spillscope::Result<(spillscope::trace::Trace, Vec<String>)> {
        let (tr, w) = self.load_from(path, &Default::default(), store)?;
        Ok((
            spillscope::trace::nesting::collapse(&tr, self.op_depth.unwrap_or(1)),
            w,
        ))
    }
}

impl ModelOpts {
    pub fn load_options(&self) -> spillscope::graph::LoadOptions {
        spillscope::graph::LoadOptions {
            dims: self.dims.clone(),
            batch: self.batch,
        }
    }
}

//! `spillscope gen`: deterministic synthetic graphs and traces, so anyone
//! can rerun the scale benchmarks and tests.

use clap::{Args, Subcommand, ValueEnum};
use spillscope::graph::gen;
use spillscope::{Error, Result};
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum GenCommand {
    /// A graph in the graph-JSON format (docs/graph-json.md).
    Graph(GenGraphArgs),
    /// A simulated trace of a transformer-like graph with about N events.
    Trace(GenTraceArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GenKind {
    /// Encoder-decoder stack (9 ops per block) whose encoder output every block reads.
    Transformer,
    /// A plain chain of elementwise ops.
    Chain,
    /// One tensor read by N branches joined by one op.
    Fanout,
    /// DenseNet-121's layout (dense blocks of 6, 12, 24, 16 layers, each
    /// reading the concat of every earlier feature map; --ops is ignored).
    Densenet,
}

#[derive(Debug, Args)]
pub struct GenGraphArgs {
    #[arg(long, value_enum, default_value = "transformer")]
    pub kind: GenKind,
    /// About this many ops.
    #[arg(long, default_value_t = 1000)]
    pub ops: usize,
    /// Tensor size for chain and fan-out graphs (bytes).
    #[arg(long, default_value_t = 4096)]
    pub bytes: u64,
    #[arg(short = 'o', long = "output", value_name = "GRAPH.json")]
    pub output: PathBuf,
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct GenTraceArgs {
    /// About this many events.
    #[arg(long, default_value_t = 1_000_000)]
    pub events: usize,
    #[arg(short = 'o', long = "output", value_name = "TRACE.json")]
    pub output: PathBuf,
    #[arg(long)]
    pub force: bool,
}

pub use gen::transformer_with_ops;

pub fn run(cmd: &GenCommand) -> Result<String> {
    match cmd {
        GenCommand::Graph(a) => {
            if a.ops == 0 {
                return Err(Error::Config("--ops must be at least 1".into()));
            }
            let g = match a.kind {
                GenKind::Transformer => transformer_with_ops(a.ops),
                GenKind::Chain => gen::chain(a.ops, a.bytes),
                GenKind::Fanout => gen::fanout(a.ops.saturating_sub(2).max(1), a.bytes),
                GenKind::Densenet => gen::densenet_like(&[6, 12, 24, 16]),
            };
            let json = spillscope::graph::json::GraphJsonOf(&g);
            spillscope::output::write_json_atomic(&a.output, &json, a.force)?;
            if a.output.as_os_str() == "-" {
                return Ok(String::new());
            }
            Ok(format!(
                "{}: {} ops, {} tensors -> {}\n",
                g.name,
                g.ops.len(),
                g.tensors.len(),
                a.output.display()
            ))
        }
        GenCommand::Trace(a) => {
            // The stack at 160 KiB makes ~24 events per block.
            let blocks = (a.events / 24).max(1);
            let g = gen::transformer_like(blocks, 64, 128);
            let hw =
                spillscope::cost::HardwareProfile::preset("seed-npu")?.with_capacity(160 * 1024)?;
            let tr = spillscope::sim::simulate(&g, &hw, &spillscope::sim::SimConfig::default())?;
            tr.write(&a.output, a.force)?;
            if a.output.as_os_str() == "-" {
                return Ok(String::new());
            }
            Ok(format!(
                "{} ops, {} events -> {}\n",
                tr.ops.len(),
                tr.events.len(),
                a.output.display()
            ))
        }
    }
}

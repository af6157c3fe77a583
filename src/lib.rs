//! Command-line front end. Each subcommand is a thin shell over library calls;
//! the binary prints one clear line on error and exits non-zero.
//!
//! Owns: flags (clap) and their translation into a [`spillscope::run::RunSpec`],
//! text output, progress bars. A client of the core library (`spillscope`)
//! and of the explorer (`spillscope_explorer`); nothing depends on it.

pub mod args;
pub mod gen_cmd;
pub mod npu_cmd;
pub mod probe_cmd;
pub mod report_cmd;
pub mod sample;
pub mod sim_cmd;
pub mod trace_cmds;
pub mod vela_text;
pub mod verify_cmd;
pub mod view_cmd;
pub mod whatif_cmd;

pub use args::{Cli, Command};

/// Resolves a spec for a command that simulates one run (view, report,
/// suggest): a list of policies is refused with the command's name.
pub fn single_run(
    spec: &spillscope::run::RunSpec,
) -> spillscope::Result<(spillscope::graph::Graph, spillscope::run::Resolved)> {
    let (g, r) = spec.resolve()?;
    if r.policies.len() > 1 {
        return Err(spillscope::Error::Config(format!(
            "this command simulates one policy; --policy names {}",
            r.policies.len()
        )));
    }
    Ok((g, r))
}

//! Command-line front end. Each subcommand is a thin shell over library calls;
//! the binary prints one clear line on error and exits non-zero.
//!
//! Owns: flags (clap) and their translation into a [`crate::run::RunSpec`],
//! text output, progress bars. May import anything in the library and
//! `tui`; behind the `cli` feature (which needs `tui`).

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
    spec: &crate::run::RunSpec,
) -> crate::Result<(crate::graph::Graph, crate::run::Resolved)> {
    let (g, r) = spec.resolve()?;
    if r.policies.len() > 1 {
        return Err(crate::Error::Config(format!(
            "this command simulates one policy; --policy names {}",
            r.policies.len()
        )));
    }
    Ok((g, r))
}

//! Command-line front end. Each subcommand is a thin shell over library calls;
//! the binary prints one clear line on error and exits non-zero.
//!
//! Owns: flags (clap) and their translation into a [`spillscope::run::RunSpec`],
//! text output, progress bars. A client of the core library (`spillscope`)
//! and of the explorer (`spillscope_explorer`); nothing depends on it.

pub mod args;
pub mod gen_cmd;
pub mod npu_cmd;
pub mod out;
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

/// Refuses a list of policies for a command that simulates one run
/// (view, report, suggest), naming how many were given.
pub fn single_policy(spec: &spillscope::run::RunSpec) -> spillscope::Result<()> {
    let n = spec.policies()?.len();
    if n > 1 {
        return Err(spillscope::Error::Config(format!(
            "this command simulates one policy; --policy names {n}"
        )));
    }
    Ok(())
}

//! Command-line front end. Each subcommand is a thin shell over library calls;
//! the binary prints one clear line on error and exits non-zero.

pub mod args;
pub mod gen_cmd;
pub mod npu_cmd;
pub mod report_cmd;
pub mod sample;
pub mod sim_cmd;
pub mod trace_cmds;
pub mod verify_cmd;
pub mod view_cmd;
pub mod whatif_cmd;

pub use args::{Cli, Command};

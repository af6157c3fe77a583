//! The `spillscope` binary: parses arguments, calls the library, prints one
//! clear line on error and exits non-zero.

use clap::Parser;
use spillscope_cli::{args::Format, sim_cmd, verify_cmd, Cli, Command};
use std::process::ExitCode;

use spillscope_cli::out;

fn print(text: &str) -> anyhow::Result<()> {
    Ok(out::print(text)?)
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        None => {
            use std::io::IsTerminal;
            if std::io::stdout().is_terminal() && std::io::stdin().is_terminal() {
                spillscope_cli::view_cmd::run_sample(None, false)?;
            } else {
                print(&spillscope_cli::sample::summary(Format::Table)?)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Suggest(a)) => {
            print(&spillscope_cli::whatif_cmd::run_suggest(&a)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Whatif(a)) => {
            print(&spillscope_cli::whatif_cmd::run_whatif(&a)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Merge(a)) => {
            print(&spillscope_cli::whatif_cmd::run_merge(&a)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Import(a)) => {
            print(&spillscope_cli::trace_cmds::run_import(&a)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Export(a)) => {
            print(&spillscope_cli::trace_cmds::run_export(&a)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Diff(a)) => {
            print(&spillscope_cli::trace_cmds::run_diff(&a)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Gen(c)) => {
            print(&spillscope_cli::gen_cmd::run(&c)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Probe(c)) => {
            print(&spillscope_cli::probe_cmd::run(&c)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Npu(c)) => {
            let (text, ok) = spillscope_cli::npu_cmd::run(&c)?;
            print(&text)?;
            Ok(if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Some(Command::Report(a)) => {
            print(&spillscope_cli::report_cmd::run(&a)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::View(a)) => {
            spillscope_cli::view_cmd::run_view(&a)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Sample(a)) => {
            print(&spillscope_cli::sample::summary(a.format)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Sim(a)) => {
            print(&sim_cmd::run(&a)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Verify(a)) => {
            let (text, ok) = verify_cmd::run(&a)?;
            print(&text)?;
            Ok(if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Some(Command::Hw(a)) => {
            match a.profile {
                None => {
                    for name in spillscope::cost::hardware::PRESETS {
                        let hw = spillscope::cost::HardwareProfile::preset(name)?;
                        print(&format!("{name:<14} {}\n", hw.description))?;
                    }
                }
                Some(p) => print(&spillscope::cost::HardwareProfile::load(&p)?.to_toml())?,
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// clap's message in one line: its first line, and for missing arguments
/// the arguments it lists below it.
fn one_line(e: &clap::Error) -> String {
    let text = e.to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("invalid arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    if e.kind() != clap::error::ErrorKind::MissingRequiredArgument {
        return first.to_string();
    }
    let missing: Vec<&str> = lines.take_while(|l| !l.starts_with("Usage:")).collect();
    format!("{} {}", first.trim_end_matches(':'), missing.join(", "))
}

fn main() -> ExitCode {
    spillscope::limits::return_large_buffers();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                e.exit();
            }
            out::error(&format!("{} (see --help)", one_line(&e)));
            return ExitCode::from(2);
        }
    };
    let interactive = matches!(cli.command, None | Some(Command::View(_)));
    if !interactive {
        out::clean_up_on_signals();
    }
    let result = run(cli);
    out::warn_stale();
    match result {
        Ok(code) => code,
        // The reader of standard output went away: nothing to say.
        Err(e) if out::is_closed_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            out::error(&e.to_string());
            ExitCode::from(2)
        }
    }
}

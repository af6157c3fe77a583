//! `spillscope probe`: the instrumentation probe's files. `recover` puts the
//! events a killed recorder left in its ring file into its stream.

use clap::{Args, Subcommand};
use spill_probe::Recovered;
use spillscope::{Error, Result};
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum ProbeCommand {
    /// Append the events a recorder that died without closing (SIGKILL, the
    /// OOM killer) left in its ring file to its stream. Without RING, list
    /// the ring files in the ring directory (/dev/shm or SPILL_PROBE_RING_DIR).
    Recover(RecoverArgs),
}

#[derive(Debug, Args)]
pub struct RecoverArgs {
    /// Ring files (`spill-probe-*.ring`, or `STREAM.ring` beside a stream).
    pub rings: Vec<PathBuf>,
    /// Write into this stream instead of the one the ring file names.
    #[arg(long, value_name = "STREAM.jsonl")]
    pub to: Option<PathBuf>,
    /// Recover every ring file in the ring directory whose recorder is gone.
    #[arg(long, conflicts_with = "rings")]
    pub all: bool,
}

pub fn run(cmd: &ProbeCommand) -> Result<String> {
    match cmd {
        ProbeCommand::Recover(a) => recover(a),
    }
}

fn recover(a: &RecoverArgs) -> Result<String> {
    let rings: Vec<PathBuf> = if a.all {
        spill_probe::list_rings()
            .into_iter()
            .filter(|r| !r.live)
            .map(|r| r.ring)
            .collect()
    } else {
        a.rings.clone()
    };
    if rings.is_empty() {
        return Ok(list());
    }
    if a.to.is_some() && rings.len() > 1 {
        return Err(Error::Config("--to takes one ring file".into()));
    }
    let mut out = String::new();
    for ring in &rings {
        if !ring.exists() {
            out += &format!(
                "{}: no ring file (recovered already, or closed cleanly)\n",
                ring.display()
            );
            continue;
        }
        let info = spill_probe::peek(ring).map_err(|e| Error::io(ring, e))?;
        let stream = a.to.clone().unwrap_or(info.stream);
        match spill_probe::recover_ring(ring, Some(&stream)).map_err(|e| Error::io(ring, e))? {
            Recovered::Done(r) => {
                out += &format!(
                    "{}: recovered {} of process {} into {}{}\n",
                    ring.display(),
                    spillscope::units::count(r.events, "event"),
                    r.pid,
                    stream.display(),
                    spillscope::trace::import::jsonl::lost_to_full_rings(&r)
                )
            }
            Recovered::InUse { pid } => {
                out += &format!(
                    "{}: process {pid} is still recording into {}; left alone\n",
                    ring.display(),
                    stream.display()
                )
            }
            Recovered::Nothing => out += &format!("{}: no ring file\n", ring.display()),
        }
    }
    Ok(out)
}

/// The ring files in the ring directory, one line each.
fn list() -> String {
    let rings = spill_probe::list_rings();
    if rings.is_empty() {
        return "no ring files: every probe session closed (or none ran here)\n".into();
    }
    let mut out = String::new();
    for r in &rings {
        out += &format!(
            "{}  {}  process {} {}\n",
            r.ring.display(),
            r.stream.display(),
            r.pid,
            if r.live {
                "recording"
            } else {
                "gone: recover it"
            }
        );
    }
    out +=
        "spillscope probe recover RING (or --all) appends a gone recorder's events to its stream\n";
    out
}

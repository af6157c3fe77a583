//! ExecuTorch's ETDump profile (`.etdp`, flatbuffer `ED00`, written
//! size-prefixed by the runtime) read into plain data: per run, the profile
//! events. The runtime records one `OPERATOR_CALL` event per instruction it
//! executes (with the instruction's `instruction_id`) and, inside it, the
//! kernel's own events (`native_call_convolution.out`); those name the
//! kernel when no program is given.

use crate::graph::executorch::schema::etdump as fb;

/// What an ETDump is called in messages.
pub const FORMAT: &str = "ExecuTorch ETDump profile";

/// The event the runtime records around each instruction.
pub const OPERATOR_CALL: &str = "OPERATOR_CALL";

/// One profile event.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileEvent {
    pub name: String,
    pub chain: i32,
    /// The program instruction it ran (-1: none, e.g. `Method::execute`).
    pub instruction: i32,
    /// Runtime ticks (nanoseconds on the portable runtime).
    pub start: u64,
    pub end: u64,
}

/// One run (`forward` called once).
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub name: String,
    pub events: Vec<ProfileEvent>,
}

impl Run {
    /// The instruction-level events (`OPERATOR_CALL`), in recorded order.
    pub fn calls(&self) -> impl Iterator<Item = &ProfileEvent> {
        self.events
            .iter()
            .filter(|e| e.name == OPERATOR_CALL && e.instruction >= 0)
    }

    /// When the run's first instruction started (its times count from here).
    pub fn start(&self) -> u64 {
        self.calls().map(|e| e.start).min().unwrap_or(0)
    }

    /// Per instruction, the kernel's name from its own event
    /// (`native_call_convolution.out` -> `convolution.out`), where recorded
    /// (the first such event of the instruction).
    pub fn kernels(&self) -> std::collections::HashMap<i32, &str> {
        let mut m = std::collections::HashMap::new();
        for e in &self.events {
            if let Some(k) = e.name.strip_prefix("native_call_") {
                m.entry(e.instruction).or_insert(k);
            }
        }
        m
    }
}

/// A whole ETDump.
#[derive(Debug, Clone, PartialEq)]
pub struct Etdump {
    pub version: u32,
    /// Runs with at least one instruction event (ExecuTorch also records
    /// blocks for `Method::init` and `Program::load_method`).
    pub runs: Vec<Run>,
}

impl Etdump {
    pub fn load(path: &std::path::Path) -> crate::Result<Etdump> {
        let bytes = crate::input::read(path)?;
        Etdump::parse(&bytes).map_err(|d| crate::Error::parse(path, FORMAT, d))
    }

    /// Reads an ETDump from its bytes (size-prefixed, or plain); the error
    /// is one line for people.
    pub fn parse(bytes: &[u8]) -> Result<Etdump, String> {
        let opts = flatbuffers::VerifierOptions {
            max_tables: 10_000_000,
            ..Default::default()
        };
        let root = if bytes.len() >= 12 && &bytes[8..12] == b"ED00" {
            fb::size_prefixed_root_as_etdump_with_opts(&opts, bytes)
        } else if bytes.len() >= 8 && &bytes[4..8] == b"ED00" {
            fb::root_as_etdump_with_opts(&opts, bytes)
        } else {
            return Err("no ED00 file identifier (not an ETDump)".into());
        };
        let d = root.map_err(|e| {
            let msg = e.to_string();
            format!(
                "damaged flatbuffer: {}",
                msg.split_whitespace().collect::<Vec<_>>().join(" ")
            )
        })?;
        let mut runs = Vec::new();
        for r in d.run_data().iter().flatten() {
            let events: Vec<ProfileEvent> = r
                .events()
                .iter()
                .flatten()
                .filter_map(|e| e.profile_event())
                .map(|p| ProfileEvent {
                    name: p.name().unwrap_or("").to_string(),
                    chain: p.chain_index(),
                    instruction: p.instruction_id(),
                    start: p.start_time(),
                    end: p.end_time().max(p.start_time()),
                })
                .collect();
            let run = Run {
                name: r.name().unwrap_or("").to_string(),
                events,
            };
            if run.calls().next().is_some() {
                runs.push(run);
            }
        }
        if runs.is_empty() {
            return Err("no run with instruction events (was the event tracer on?)".into());
        }
        Ok(Etdump {
            version: d.version(),
            runs,
        })
    }

    /// Run `n` (1-based), or the last (the steady state).
    pub fn run(&self, n: Option<usize>) -> Result<(usize, &Run), String> {
        let k = n.unwrap_or(self.runs.len());
        match k.checked_sub(1).and_then(|i| self.runs.get(i)) {
            Some(r) => Ok((k, r)),
            None => Err(format!(
                "--run {k}: the profile has {} runs",
                self.runs.len()
            )),
        }
    }
}

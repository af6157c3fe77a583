//! A trace's `meta`: the model, the policy label, and who produced it with
//! what. The producer is typed (a simulator run, an import with its
//! importer, an NPU case with the benchmark's parameters), while the JSON
//! keeps the contract's `hardware` and `config` objects exactly as earlier
//! versions wrote them. The data model does not know its producers' types:
//! a simulator run's hardware profile and config are recorded as the JSON
//! the simulator wrote, and read back by the simulator (`sim::settings`).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// `meta` of a trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "MetaRecord", into = "MetaRecord")]
pub struct Meta {
    pub model: String,
    /// The policy label (`lru`, ...; `runtime`, `onnxruntime`, `npu` for
    /// traces no spillscope policy made).
    pub policy: String,
    pub producer: Producer,
    pub tool_version: String,
}

impl Meta {
    /// What the trace's times count: cycles for an NPU case whose
    /// `time_unit` says so, nanoseconds otherwise.
    pub fn clock(&self) -> crate::units::Clock {
        match &self.producer {
            Producer::NpuCase(n) if n.time_unit == "cycles" => crate::units::Clock::Cycles,
            _ => crate::units::Clock::Nanoseconds,
        }
    }
}

impl Default for Meta {
    fn default() -> Self {
        Meta {
            model: String::new(),
            policy: String::new(),
            producer: Producer::Unknown {
                hardware: Value::Null,
                config: Value::Null,
            },
            tool_version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// Who made a trace, with what.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "producer", rename_all = "kebab-case")]
pub enum Producer {
    /// spillscope's simulator: its hardware profile and config as it
    /// recorded them, enough to re-simulate the run (`sim::settings`).
    Simulator { hardware: Value, config: Value },
    /// A runtime's trace brought in by an importer.
    Instrumented(Instrumented),
    /// An NPU kernel DAG and its solution (`npu import`).
    NpuCase(NpuCaseInfo),
    /// Anything else (another tool, a hand-written trace): kept as written.
    Unknown { hardware: Value, config: Value },
}

/// Which importer read a runtime trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Importer {
    Ort,
    Torch,
    Chrome,
    Jsonl,
    /// Arm Vela's compiled plan (its output directory).
    Vela,
    /// An ExecuTorch program's memory plan (`.pte`), timed by the cost
    /// model or by an ETDump profile.
    Executorch,
    /// An ExecuTorch ETDump profile alone (op times, no memory).
    Etdump,
}

/// An import's record: the importer and what it chose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Instrumented {
    pub importer: Importer,
    /// ONNX Runtime: the run taken (1-based) and how many the profile held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<usize>,
    /// JSONL: the stream's timestamp of the trace's time 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t0_ns: Option<u64>,
    /// The runtime declared its pools' capacities (a probe's
    /// `spill_probe_pool`); otherwise a pool's `capacity_bytes` is only the
    /// high-water mark of what was seen, not a limit.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub capacity_declared: bool,
    /// The model the importer linked ops to (`--model`): tensor lifetimes
    /// (allocation at the producer, free after the last consumer) come
    /// from its graph.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// ONNX Runtime with a model: how the profile's nodes were linked to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linked: Option<crate::trace::import::ort_link::LinkSummary>,
    /// Vela: its configuration and its own summary figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vela: Option<Box<crate::trace::import::vela::VelaInfo>>,
    /// ExecuTorch: the program's plan (arenas, every planned buffer) and
    /// the profile run the times come from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executorch: Option<Box<crate::trace::import::executorch::ExecutorchInfo>>,
    /// JSONL tailed with a bound (`--keep`): the trace holds the recent
    /// part of the stream, and this says what fell out of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Box<crate::trace::window::StreamWindow>>,
}

impl Instrumented {
    pub fn new(importer: Importer) -> Instrumented {
        Instrumented {
            importer,
            run: None,
            runs: None,
            t0_ns: None,
            capacity_declared: false,
            model: None,
            linked: None,
            vela: None,
            executorch: None,
            window: None,
        }
    }
}

/// The benchmark parameters and figures of an NPU case's trace (time is in
/// cycles).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NpuCaseInfo {
    pub time_unit: String,
    /// Capacity per buffer type (L1, UB, L0A, ...), bytes.
    pub capacities: BTreeMap<String, u64>,
    pub total_cycles: u64,
    pub extra_traffic: u64,
    pub peak_residency: u64,
}

/// `meta` as the JSON has it.
#[derive(Clone, Serialize, Deserialize)]
struct MetaRecord {
    model: String,
    policy: String,
    #[serde(default)]
    hardware: Value,
    #[serde(default)]
    config: Value,
    tool_version: String,
}

/// Tells the producer from the records (the contract keeps them untyped).
fn producer_of(hardware: Value, config: Value) -> Producer {
    if hardware.get("kind").and_then(Value::as_str) == Some("npu-kernel") {
        #[derive(Deserialize)]
        struct Hw {
            time_unit: String,
            capacities: BTreeMap<String, u64>,
        }
        #[derive(Deserialize)]
        struct Figures {
            total_cycles: u64,
            extra_traffic: u64,
            peak_residency: u64,
        }
        let hw = Hw::deserialize(&hardware);
        let fig = Figures::deserialize(&config);
        if let (Ok(hw), Ok(fig)) = (hw, fig) {
            return Producer::NpuCase(NpuCaseInfo {
                time_unit: hw.time_unit,
                capacities: hw.capacities,
                total_cycles: fig.total_cycles,
                extra_traffic: fig.extra_traffic,
                peak_residency: fig.peak_residency,
            });
        }
    } else if hardware.is_null() && config.get("importer").is_some() {
        if let Ok(i) = Instrumented::deserialize(&config) {
            return Producer::Instrumented(i);
        }
    } else if hardware.get("memory").is_some_and(Value::is_object)
        && config.get("policy").is_some_and(Value::is_string)
    {
        // The simulator's records: a profile with its memory, a config with
        // its policy (whether this version reads them is the simulator's
        // to say).
        return Producer::Simulator { hardware, config };
    }
    Producer::Unknown { hardware, config }
}

impl From<MetaRecord> for Meta {
    fn from(r: MetaRecord) -> Meta {
        Meta {
            model: r.model,
            policy: r.policy,
            producer: producer_of(r.hardware, r.config),
            tool_version: r.tool_version,
        }
    }
}

impl From<Meta> for MetaRecord {
    fn from(m: Meta) -> MetaRecord {
        let (hardware, config) = match m.producer {
            Producer::Simulator { hardware, config } => (hardware, config),
            Producer::Instrumented(i) => (Value::Null, serde_json::to_value(i).unwrap_or_default()),
            Producer::NpuCase(n) => (
                json!({
                    "kind": "npu-kernel",
                    "time_unit": n.time_unit,
                    "capacities": n.capacities,
                }),
                json!({
                    "total_cycles": n.total_cycles,
                    "extra_traffic": n.extra_traffic,
                    "peak_residency": n.peak_residency,
                }),
            ),
            Producer::Unknown { hardware, config } => (hardware, config),
        };
        MetaRecord {
            model: m.model,
            policy: m.policy,
            hardware,
            config,
            tool_version: m.tool_version,
        }
    }
}

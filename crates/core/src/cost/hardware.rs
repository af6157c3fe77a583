//! Hardware profiles: on-chip memory, DRAM bus, compute and energy numbers,
//! loaded from TOML with built-in presets. Numbers that matter live here, not
//! in code. Partial files patch the `default` preset; unknown keys are errors.

use crate::units::{Bandwidth, FlopRate, Size};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Where the allocator puts a block: first hole that fits, or the tightest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum AllocatorFit {
    #[default]
    FirstFit,
    BestFit,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySpec {
    /// The pool's name in traces (default `sram`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// On-chip pool capacity.
    pub capacity: Size,
    /// Allocation granularity in bytes (offsets and sizes round up to it).
    pub alignment: u64,
    pub allocator: AllocatorFit,
    /// On-chip (SRAM) bandwidth for the roofline's memory side.
    pub sram_bandwidth: Bandwidth,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DramSpec {
    /// DRAM -> chip (reloads, weight loads).
    pub read_bandwidth: Bandwidth,
    /// chip -> DRAM (evictions).
    pub write_bandwidth: Bandwidth,
    /// Fixed cost per DMA transfer (descriptor setup, DRAM page open).
    pub latency_ns: f64,
    /// Transfers move whole bursts; sizes round up to this.
    pub burst_bytes: u64,
    /// At least 1: divides bandwidth for traffic the model does not see
    /// (other masters, refresh).
    pub contention: f64,
    /// Cores sharing the bus; each gets 1/n of it.
    pub cores_sharing_bus: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComputeSpec {
    pub peak_flops: FlopRate,
    /// Fixed launch cost per op.
    pub op_overhead_ns: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DmaSpec {
    /// Async DMA overlaps transfers with compute; sync serialises them.
    #[serde(rename = "async")]
    pub async_dma: bool,
    /// How many ops ahead reloads and weight loads may be issued (0 = on demand).
    pub prefetch_distance: usize,
    /// Added when an op has to wait for a transfer (pipeline drain, sync).
    pub sync_penalty_ns: f64,
    /// Added per eviction forced by fragmentation (free bytes were enough, no hole was).
    pub fragmentation_penalty_ns: f64,
}

/// NPU cores sharing the one DRAM bus (`[cores]`). Each core has its own
/// copy of the profile's on-chip pools and its own DMA queue; the bus
/// divides its time among the cores with a transfer waiting
/// ([`crate::cost::bus`]), so contention follows the simulated parallelism
/// instead of a static divisor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoresSpec {
    /// How many cores run the graph (1: today's single-core simulator).
    pub count: u32,
    /// An on-chip pool every core reads and writes (`shared = "2MiB"`).
    /// Under a graph split a tensor read on another core than its
    /// producer's lives there, where it fits, from when a reader could
    /// first wait for it until its last reader ends, read and written in
    /// place at the on-chip rate, instead of crossing through DRAM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<Size>,
}

impl Default for CoresSpec {
    fn default() -> Self {
        CoresSpec {
            count: 1,
            shared: None,
        }
    }
}

impl CoresSpec {
    fn is_single(&self) -> bool {
        self.count == 1 && self.shared.is_none()
    }
}

/// The trace's name of the pool the cores share (`[cores] shared`): the
/// cores' own pools are named `core{c}/NAME`, so it cannot collide.
pub const SHARED_POOL: &str = "shared";

/// The most cores a profile may declare: a trace holds a copy of every
/// tensor and op per core, so this bounds its size at 64x the graph's.
pub const MAX_CORES: u32 = 64;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnergySpec {
    pub dram_pj_per_byte: f64,
    pub sram_pj_per_byte: f64,
}

/// The kinds of tensor a pool may take (the graph's tensor kinds, named
/// here so the cost model needs nothing from the graph).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TensorClass {
    Input,
    Activation,
    Weight,
    Output,
}

/// A further on-chip pool beside `memory` (whose pool is `sram`): its own
/// address space with its own capacity, alignment and fit. A tensor goes
/// to the first pool whose `kinds` hold its kind or whose `names` patterns
/// (`*` any run of characters, `?` one) match its name; every other tensor
/// to `sram`. So weights can live in a weight buffer and activations in a
/// feature-map SRAM, as on accelerators with several on-chip levels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolSpec {
    pub name: String,
    pub capacity: Size,
    /// Default: `memory.alignment`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alignment: Option<u64>,
    /// Default: `memory.allocator`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocator: Option<AllocatorFit>,
    #[serde(default)]
    pub kinds: Vec<TensorClass>,
    #[serde(default)]
    pub names: Vec<String>,
}

/// The name of the pool `memory` describes.
pub const MAIN_POOL: &str = "sram";

/// A complete hardware description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardwareProfile {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub memory: MemorySpec,
    pub dram: DramSpec,
    pub compute: ComputeSpec,
    pub dma: DmaSpec,
    pub energy: EnergySpec,
    /// Further on-chip pools (`[[pools]]`); none: one pool, `sram`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<PoolSpec>,
    /// Cores on one DRAM bus (`[cores]`); written only when more than one,
    /// so single-core profiles and the traces that record them read as
    /// before.
    #[serde(default, skip_serializing_if = "CoresSpec::is_single")]
    pub cores: CoresSpec,
}

const PRESET_SEED: &str = include_str!("../../../../profiles/seed-npu.toml");
const PRESET_EDGE: &str = include_str!("../../../../profiles/edge-npu-16m.toml");
const PRESET_U65_HIGH_END: &str = include_str!("../../../../profiles/ethos-u65-high-end.toml");
const PRESET_NPU_BENCHMARK: &str = include_str!("../../../../profiles/npu-benchmark.toml");
const PRESET_U55_HIGH_END_EMBEDDED: &str =
    include_str!("../../../../profiles/ethos-u55-high-end-embedded.toml");

/// Names of the built-in presets, for help texts and errors.
pub const PRESETS: &[&str] = &[
    "seed-npu",
    "edge-npu-16m",
    "ethos-u65-high-end",
    "ethos-u55-high-end-embedded",
    "npu-benchmark",
];

impl HardwareProfile {
    /// A built-in profile by name.
    pub fn preset(name: &str) -> Result<HardwareProfile> {
        let text = match name {
            "seed-npu" | "seed" | "default" => PRESET_SEED,
            "edge-npu-16m" | "edge" => PRESET_EDGE,
            // Vela's system configuration names are accepted as written.
            "ethos-u65-high-end" | "Ethos_U65_High_End" => PRESET_U65_HIGH_END,
            "ethos-u55-high-end-embedded" | "Ethos_U55_High_End_Embedded" => {
                PRESET_U55_HIGH_END_EMBEDDED
            }
            "npu-benchmark" => PRESET_NPU_BENCHMARK,
            _ => {
                return Err(Error::Hardware(format!(
                    "unknown preset {name:?} (known: {})",
                    PRESETS.join(", ")
                )))
            }
        };
        Self::from_toml_over(text, None, Path::new(name))
    }

    /// Loads `--hw FILE|PRESET`: an existing file is read, otherwise a preset.
    pub fn load(spec: &str) -> Result<HardwareProfile> {
        let p = Path::new(spec);
        if p.exists() {
            let text = crate::input::read_text(p)?;
            let base: toml::Table =
                toml::from_str(PRESET_SEED).map_err(|e| Error::Hardware(e.to_string()))?;
            Self::from_toml_over(&text, Some(base), p)
        } else if spec.ends_with(".toml") {
            Err(Error::io(
                p,
                std::io::Error::from(std::io::ErrorKind::NotFound),
            ))
        } else {
            Self::preset(spec)
        }
    }

    /// Parses TOML; with a base table, keys in `text` patch it (partial profiles).
    fn from_toml_over(
        text: &str,
        base: Option<toml::Table>,
        origin: &Path,
    ) -> Result<HardwareProfile> {
        let over: toml::Table = toml::from_str(text)
            .map_err(|e| Error::toml(origin, "hardware profile (TOML)", text, &e))?;
        let merged = match base {
            Some(mut b) => {
                merge(&mut b, over);
                b
            }
            None => over,
        };
        let hw: HardwareProfile =
            toml::Value::Table(merged)
                .try_into()
                .map_err(|e: toml::de::Error| {
                    // The merged table has no spans: place an unknown key
                    // by finding it in the file.
                    let msg = e.message().trim().to_string();
                    let pos = msg
                        .split('`')
                        .nth(1)
                        .and_then(|key| crate::error::Pos::of_key(text, key))
                        .or_else(|| span_in_file(text, &msg));
                    Error::parse_at(origin, pos, "hardware profile (TOML)", msg)
                })?;
        hw.validate().map_err(|m| {
            // Placed at its key: the message starts with `table.key`.
            let key = m
                .split_whitespace()
                .next()
                .and_then(|k| k.rsplit('.').next());
            let pos = key.and_then(|k| crate::error::Pos::of_key(text, k));
            Error::parse_at(origin, pos, "hardware profile", m)
        })?;
        Ok(hw)
    }

    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.memory.capacity.0 == 0 {
            return Err("memory.capacity must be greater than zero".into());
        }
        if self.memory.alignment == 0 || !self.memory.alignment.is_power_of_two() {
            return Err(format!(
                "memory.alignment must be a power of two, got {}",
                self.memory.alignment
            ));
        }
        if self.dram.burst_bytes == 0 {
            return Err("dram.burst_bytes must be at least 1".into());
        }
        if self.dram.contention < 1.0 || !self.dram.contention.is_finite() {
            return Err(format!(
                "dram.contention must be >= 1, got {}",
                self.dram.contention
            ));
        }
        if self.dram.cores_sharing_bus == 0 {
            return Err("dram.cores_sharing_bus must be at least 1".into());
        }
        if !(1..=MAX_CORES).contains(&self.cores.count) {
            return Err(format!(
                "cores.count must be from 1 to {MAX_CORES}, got {}",
                self.cores.count
            ));
        }
        if self.cores.shared.is_some_and(|s| s.0 == 0) {
            return Err("cores.shared must be a size above zero (or left out)".into());
        }
        self.check_numbers()?;
        let mut seen = vec![self.main_pool()];
        for p in &self.pools {
            if seen.contains(&p.name.as_str()) {
                return Err(format!(
                    "pool {:?} is declared twice (sram is memory's)",
                    p.name
                ));
            }
            seen.push(&p.name);
            if p.capacity.0 == 0 {
                return Err(format!(
                    "pool {:?}: capacity must be greater than zero",
                    p.name
                ));
            }
            if let Some(a) = p.alignment.filter(|a| *a == 0 || !a.is_power_of_two()) {
                return Err(format!(
                    "pool {:?}: alignment must be a power of two, got {a}",
                    p.name
                ));
            }
            if p.kinds.is_empty() && p.names.is_empty() {
                return Err(format!(
                    "pool {:?} takes no tensors: give it kinds (input, activation, weight, output) or name patterns",
                    p.name
                ));
            }
        }
        Ok(())
    }

    /// Every coefficient finite and in a range whose products stay finite
    /// (a NaN or 1e308 here made traces whose figures were not numbers:
    /// written, then unreadable). The message starts with the key.
    fn check_numbers(&self) -> std::result::Result<(), String> {
        // Times in ns up to 1000 s, energies up to 1 µJ per byte, rates
        // from 1 per second to 10^18 per second, contention up to 10^6.
        let ranges: [(&str, f64, f64, f64); 10] = [
            ("dram.latency_ns", self.dram.latency_ns, 0.0, 1e12),
            (
                "compute.op_overhead_ns",
                self.compute.op_overhead_ns,
                0.0,
                1e12,
            ),
            ("dma.sync_penalty_ns", self.dma.sync_penalty_ns, 0.0, 1e12),
            (
                "dma.fragmentation_penalty_ns",
                self.dma.fragmentation_penalty_ns,
                0.0,
                1e12,
            ),
            (
                "energy.dram_pj_per_byte",
                self.energy.dram_pj_per_byte,
                0.0,
                1e6,
            ),
            (
                "energy.sram_pj_per_byte",
                self.energy.sram_pj_per_byte,
                0.0,
                1e6,
            ),
            ("dram.read_bandwidth", self.dram.read_bandwidth.0, 1.0, 1e18),
            (
                "dram.write_bandwidth",
                self.dram.write_bandwidth.0,
                1.0,
                1e18,
            ),
            (
                "memory.sram_bandwidth",
                self.memory.sram_bandwidth.0,
                1.0,
                1e18,
            ),
            ("compute.peak_flops", self.compute.peak_flops.0, 1.0, 1e21),
        ];
        for (key, v, lo, hi) in ranges {
            if !v.is_finite() || v < lo || v > hi {
                let got = if v.abs() >= 1e6 {
                    format!("{v:e}")
                } else {
                    format!("{v}")
                };
                return Err(format!(
                    "{key} must be a number from {lo} to {hi:e}, got {got}"
                ));
            }
        }
        if self.dram.contention > 1e6 {
            return Err(format!(
                "dram.contention must be from 1 to 1e6, got {}",
                self.dram.contention
            ));
        }
        Ok(())
    }

    /// The name of `memory`'s pool (`sram` unless `memory.pool` says).
    pub fn main_pool(&self) -> &str {
        self.memory.pool.as_deref().unwrap_or(MAIN_POOL)
    }

    /// One on-chip pool (no `[[pools]]`): what the exact program and the
    /// planned policy model.
    pub fn is_single_pool(&self) -> bool {
        self.pools.is_empty()
    }

    /// Overrides the on-chip capacity (`--capacity`, the `sram` pool's).
    pub fn with_capacity(mut self, bytes: u64) -> Result<Self> {
        if bytes == 0 {
            return Err(Error::Hardware("capacity must be greater than zero".into()));
        }
        self.memory.capacity = Size(bytes);
        Ok(self)
    }

    /// Overrides the number of cores on the bus (`--cores`).
    pub fn with_cores(mut self, count: u32) -> Result<Self> {
        self.cores.count = count;
        self.validate().map_err(Error::Hardware)?;
        Ok(self)
    }

    /// Overrides both DRAM bandwidths (`--bandwidth`).
    pub fn with_bandwidth(mut self, bytes_per_s: f64) -> Self {
        self.dram.read_bandwidth = Bandwidth(bytes_per_s);
        self.dram.write_bandwidth = Bandwidth(bytes_per_s);
        self
    }

    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_default()
    }
}

fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Where in the user's file a value error of the merged profile lies: the
/// file alone is read as a whole profile, and its first error, when it is
/// the same one, carries a span (a partial file's missing keys are reported
/// after the values serde met before them).
fn span_in_file(text: &str, msg: &str) -> Option<crate::error::Pos> {
    let e = toml::from_str::<HardwareProfile>(text).err()?;
    (e.message().trim() == msg)
        .then(|| e.span())
        .flatten()
        .map(|s| crate::error::Pos::of_byte(text.as_bytes(), s.start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_load() {
        let s = HardwareProfile::preset("seed-npu").unwrap();
        assert_eq!(s.memory.capacity.0, 32 << 20);
        assert_eq!(s.dram.read_bandwidth.0, 60e9);
        let e = HardwareProfile::preset("edge-npu-16m").unwrap();
        assert_eq!(e.memory.capacity.0, 16 << 20);
        // Vela's figures: U65 at 1 GHz moves 16 B/cycle per port, DRAM at
        // clock scale 0.234375; U55 at 500 MHz, 8 B/cycle, flash at 0.125.
        let u65 = HardwareProfile::preset("ethos-u65-high-end").unwrap();
        assert_eq!(u65.dram.read_bandwidth.0, 1e9 * 0.234375 * 16.0);
        assert_eq!(u65.memory.sram_bandwidth.0, 16e9);
        assert_eq!(u65.dram.burst_bytes, 128);
        assert_eq!(HardwareProfile::preset("Ethos_U65_High_End").unwrap(), u65);
        let u55 = HardwareProfile::preset("ethos-u55-high-end-embedded").unwrap();
        assert_eq!(u55.dram.read_bandwidth.0, 500e6 * 0.125 * 8.0);
        assert_eq!(u55.memory.sram_bandwidth.0, 500e6 * 8.0);
        for p in PRESETS {
            HardwareProfile::preset(p).unwrap();
        }
        assert!(HardwareProfile::preset("nope")
            .unwrap_err()
            .to_string()
            .contains("unknown preset"));
    }

    #[test]
    fn partial_file_patches_default_and_unknown_keys_fail() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("hw.toml");
        std::fs::write(&p, "[memory]\ncapacity = \"8MiB\"\n").unwrap();
        let hw = HardwareProfile::load(p.to_str().unwrap()).unwrap();
        assert_eq!(hw.memory.capacity.0, 8 << 20);
        assert_eq!(hw.dram.read_bandwidth.0, 60e9);
        std::fs::write(&p, "[memory]\ncapacty = \"8MiB\"\n").unwrap();
        let err = HardwareProfile::load(p.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("capacty"), "{err}");
        std::fs::write(&p, "[memory]\ncapacity = 0\n").unwrap();
        let err = HardwareProfile::load(p.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("greater than zero"), "{err}");
    }
}

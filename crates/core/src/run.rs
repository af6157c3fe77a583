//! The run specification: what to simulate (model, hardware, schedule
//! config, rewrites, policies), resolved once with one precedence for every
//! command and for the explorer's live loop:
//!
//! built-in defaults < hardware profile file < schedule config < flags
//!
//! (a flag the user did not give leaves the value below it alone; lists such
//! as pins and free points add up instead). Owns: [`RunSpec`], [`Flags`] and
//! [`Resolved`]. May import `graph`, `cost`, `sim`, `trace` (to read a
//! calibration profile) and `analysis::calibrate`; the session runs what
//! it specifies.

use crate::analysis::calibrate::TypeCalibration;
use crate::analysis::calibrate::{free_points, measured_durations, roofline_vs_measured};
use crate::cost::HardwareProfile;
use crate::graph::{Graph, LoadOptions};
use crate::sim::config::OrderSpec;
use crate::sim::{
    ActivationDtype, EvictionPolicy, RecomputeSpec, ScheduleFile, SimConfig, WeightMode,
};
use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a caller (the command line, an API) set explicitly; `None` (or an
/// empty list) leaves the value from the levels below.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Flags {
    /// On-chip capacity, bytes (over the hardware profile's).
    pub capacity: Option<u64>,
    /// DRAM read and write bandwidth, bytes/s (over the profile's).
    pub bandwidth: Option<f64>,
    /// Cores on the DRAM bus (over the profile's `[cores]`).
    pub cores: Option<u32>,
    /// Policies to run (over the config's `policy`).
    pub policies: Option<Vec<EvictionPolicy>>,
    pub weights: Option<WeightMode>,
    /// Added to the config's pins.
    pub pins: Vec<String>,
    pub prefetch_distance: Option<usize>,
    pub fuse: Option<bool>,
    pub dtype: Option<ActivationDtype>,
    pub order: Option<OrderSpec>,
    pub recompute: Option<RecomputeSpec>,
    /// How several cores share the graph (over the config's `split`).
    pub split: Option<crate::sim::config::Split>,
    /// A runtime profile whose measured op times replace the roofline.
    pub calibrate: Option<PathBuf>,
    /// An instrumented trace whose free points are added to the config's.
    pub free_at: Option<PathBuf>,
}

impl Flags {
    /// Applies the flags over `cfg` (flags win; pins add up).
    pub fn apply(&self, mut cfg: SimConfig) -> SimConfig {
        if let Some(w) = self.weights {
            cfg.weights = w;
        }
        for p in &self.pins {
            if !cfg.pins.contains(p) {
                cfg.pins.push(p.clone());
            }
        }
        if let Some(d) = self.prefetch_distance {
            cfg.prefetch_distance = Some(d);
        }
        if let Some(f) = self.fuse {
            cfg.fuse = f;
        }
        if let Some(d) = self.dtype {
            cfg.dtype = d;
        }
        if let Some(o) = &self.order {
            cfg.order = o.clone();
        }
        if let Some(r) = &self.recompute {
            cfg.recompute = r.clone();
        }
        if let Some(s) = self.split {
            cfg.split = s;
        }
        cfg
    }
}

/// Everything that decides a simulation, before any file is read.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    /// The model (`.onnx` or graph JSON).
    pub model: PathBuf,
    pub load: LoadOptions,
    /// `FILE` or preset name (a partial file patches the default preset).
    pub hardware: String,
    /// The schedule config (SCHED.toml), if any.
    pub schedule: Option<PathBuf>,
    pub flags: Flags,
    /// Policies when neither the flags nor the config name one (`sim` runs
    /// all of them; the other commands LRU).
    pub default_policies: Vec<EvictionPolicy>,
}

/// Measured op times from a runtime profile (`--calibrate`), and how far the
/// roofline was from them per op type.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    pub profile: PathBuf,
    pub measured_ns: Arc<std::collections::HashMap<String, u64>>,
    pub by_type: Vec<TypeCalibration>,
    /// Graph ops with a measurement.
    pub matched_ops: usize,
}

/// A spec with every file read and every level applied.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub hardware: HardwareProfile,
    /// The config every run shares; [`Resolved::config_for`] sets the policy.
    pub config: SimConfig,
    /// In the order they were asked for.
    pub policies: Vec<EvictionPolicy>,
    pub calibration: Option<Calibration>,
    /// `--free-at`: the trace and how many tensors it gave free points for.
    pub free_at_from: Option<(PathBuf, usize)>,
}

impl Resolved {
    /// The config of the run under `policy`.
    pub fn config_for(&self, policy: EvictionPolicy) -> SimConfig {
        SimConfig {
            policy,
            ..self.config.clone()
        }
    }

    /// The config of the first policy (what single-run commands simulate).
    pub fn first_config(&self) -> SimConfig {
        self.config_for(self.policies.first().copied().unwrap_or_default())
    }
}

/// What makes two sweeps the same grid: the graph, hardware, config and
/// every point, as their JSON.
pub(crate) fn grid_fingerprint(
    g: &crate::graph::Graph,
    hw: &crate::cost::HardwareProfile,
    cfg: &crate::sim::SimConfig,
    points: &[crate::analysis::whatif::Point],
) -> String {
    let graph = format!(
        "{} {} ops {} tensors {} bytes",
        g.name,
        g.ops.len(),
        g.tensors.len(),
        g.tensors.iter().map(|t| t.bytes).sum::<u64>()
    );
    let json = |v: serde_json::Result<String>| v.unwrap_or_default();
    crate::analysis::shard::fingerprint(&[
        &graph,
        &json(serde_json::to_string(hw)),
        &json(serde_json::to_string(cfg)),
        &json(serde_json::to_string(points)),
    ])
}

impl RunSpec {
    /// A spec for `model` with the default hardware and no config or flags.
    pub fn new(model: impl Into<PathBuf>) -> RunSpec {
        RunSpec {
            model: model.into(),
            load: LoadOptions::default(),
            hardware: "seed-npu".into(),
            schedule: None,
            flags: Flags::default(),
            default_policies: vec![EvictionPolicy::Lru],
        }
    }

    /// Loads the model.
    pub fn load_graph(&self) -> Result<Graph> {
        crate::graph::load(&self.model, &self.load)
    }

    /// The hardware profile: the file or preset, then `--capacity` and
    /// `--bandwidth`.
    pub fn resolve_hardware(&self) -> Result<HardwareProfile> {
        let mut hw = HardwareProfile::load(&self.hardware)?;
        if let Some(c) = self.flags.capacity {
            hw = hw.with_capacity(c)?;
        }
        if let Some(b) = self.flags.bandwidth {
            hw = hw.with_bandwidth(b);
        }
        if let Some(k) = self.flags.cores {
            hw = hw.with_cores(k)?;
        }
        Ok(hw)
    }

    /// The schedule config file, read (or none).
    pub fn schedule_file(&self) -> Result<Option<ScheduleFile>> {
        self.schedule.as_deref().map(ScheduleFile::load).transpose()
    }

    /// Loads the model and resolves everything else against it.
    pub fn resolve(&self) -> Result<(Graph, Resolved)> {
        let g = self.load_graph()?;
        let r = self.resolve_for(&g)?;
        Ok((g, r))
    }

    /// Resolves hardware, config and policies for an already loaded model
    /// (the live loop keeps the graph while only the config changes).
    pub fn resolve_for(&self, g: &Graph) -> Result<Resolved> {
        self.resolve_with_profile(g, None)
    }

    /// As [`RunSpec::resolve_for`], with the `--calibrate` profile already
    /// imported (linked to `g`) by the caller, so it is not read again.
    pub fn resolve_with_profile(
        &self,
        g: &Graph,
        profile: Option<&crate::trace::Trace>,
    ) -> Result<Resolved> {
        let hardware = self.resolve_hardware()?;
        let file = self.schedule_file()?;
        let mut config = SimConfig::default();
        if let Some(f) = &file {
            config = f.apply(config);
        }
        config = self.flags.apply(config);
        if !config.fuse {
            // Names checked where they were written, so the error names the
            // file or the flag (fusion renames tensors: the simulator
            // checks those runs' names itself).
            if let (Some(f), Some(path)) = (&file, &self.schedule) {
                let recompute = match &f.recompute {
                    Some(RecomputeSpec::Tensors(v)) => v.as_slice(),
                    _ => &[],
                };
                let origin = path.display().to_string();
                known_tensors(g, &origin, "pins", &f.pins)?;
                known_tensors(g, &origin, "free_at", f.free_at.keys())?;
                known_tensors(g, &origin, "recompute", recompute)?;
            }
            known_tensors(g, "--pin", "", &self.flags.pins)?;
            if let Some(RecomputeSpec::Tensors(v)) = &self.flags.recompute {
                known_tensors(g, "--recompute", "", v)?;
            }
        }
        let free_at_from = match &self.flags.free_at {
            Some(p) => {
                let points = free_points(g, &import_linked(p, g)?);
                let n = points.len();
                config.free_at.extend(points);
                Some((p.clone(), n))
            }
            None => None,
        };
        let calibration = match &self.flags.calibrate {
            Some(p) => {
                let m = match profile {
                    Some(t) => measured_durations(t),
                    None => measured_durations(&import_linked(p, g)?),
                };
                let (by_type, matched_ops) = roofline_vs_measured(g, &hardware, &m);
                let measured_ns = Arc::new(m);
                config.measured_ns = Some(measured_ns.clone());
                Some(Calibration {
                    profile: p.clone(),
                    measured_ns,
                    by_type,
                    matched_ops,
                })
            }
            None => None,
        };
        let policies = self.policies_with(file.as_ref())?;
        config.policy = policies[0];
        Ok(Resolved {
            hardware,
            config,
            policies,
            calibration,
            free_at_from,
        })
    }

    /// How several cores share the run: the flag's, else the config's,
    /// else by batch (read before anything runs, to check outputs).
    pub fn split(&self) -> Result<crate::sim::config::Split> {
        let mut config = SimConfig::default();
        if let Some(f) = self.schedule_file()? {
            config = f.apply(config);
        }
        Ok(self.flags.apply(config).split)
    }

    /// The policies this spec runs: the flags', else the config's, else
    /// the default (read before anything runs, to check outputs).
    pub fn policies(&self) -> Result<Vec<EvictionPolicy>> {
        self.policies_with(self.schedule_file()?.as_ref())
    }

    fn policies_with(&self, file: Option<&ScheduleFile>) -> Result<Vec<EvictionPolicy>> {
        let policies = match (&self.flags.policies, file.and_then(|f| f.policy)) {
            (Some(p), _) if !p.is_empty() => p.clone(),
            (_, Some(p)) => vec![p],
            _ => self.default_policies.clone(),
        };
        if policies.is_empty() {
            return Err(Error::Config("no policy to simulate".into()));
        }
        Ok(policies)
    }

    /// Files whose change should re-run this spec (model, hardware file,
    /// schedule config).
    pub fn inputs(&self) -> Vec<PathBuf> {
        let mut v = vec![self.model.clone()];
        if Path::new(&self.hardware).exists() {
            v.push(PathBuf::from(&self.hardware));
        }
        v.extend(self.schedule.iter().cloned());
        // The profiles it reads: a new measurement re-runs it too.
        v.extend(self.flags.calibrate.iter().cloned());
        v.extend(self.flags.free_at.iter().cloned());
        v
    }
}

/// A runtime trace imported with the model, so ORT nodes link to its tensors.
fn import_linked(path: &Path, g: &Graph) -> Result<crate::trace::Trace> {
    let opts = crate::trace::import::ImportOptions {
        model: Some(std::sync::Arc::new(g.clone())),
        ..Default::default()
    };
    crate::trace::import::import(path, None, &opts).map(|x| x.0)
}

/// Writes a suggested `change` into the schedule config at `path` (created
/// if absent), as one edit of the file (its comments and other keys kept),
/// atomically, with the previous contents kept as `PATH.bak` for
/// [`undo_change`]. Returns what was done, in one line. Changes a schedule
/// config cannot make (capacity) are refused with the reason.
pub fn apply_change(path: &Path, change: &crate::analysis::suggest::Change) -> Result<String> {
    use crate::analysis::suggest::Change;
    use toml_edit::{value, Array, DocumentMut};
    let old = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::io(path, e)),
    };
    let mut doc: DocumentMut = old.parse().map_err(|e: toml_edit::TomlError| {
        Error::parse(path, "schedule config (TOML)", e.message())
    })?;
    let strings = |v: &[String]| Array::from_iter(v.iter().map(String::as_str));
    match change {
        Change::Capacity { .. } => {
            return Err(Error::Config(
                "a capacity is hardware, not a schedule choice: rerun with --capacity (or edit the hardware profile)"
                    .into(),
            ))
        }
        Change::Cores { .. } => {
            return Err(Error::Config(
                "a core count is hardware, not a schedule choice: rerun with --cores and --split (or edit the hardware profile's [cores])"
                    .into(),
            ))
        }
        Change::Split { split } => doc["split"] = value(split.as_str()),
        Change::Pin { tensor } => {
            let mut pins: Vec<String> = doc
                .get("pins")
                .and_then(|p| p.as_array())
                .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
                .unwrap_or_default();
            if !pins.contains(tensor) {
                pins.push(tensor.clone());
            }
            doc["pins"] = value(strings(&pins));
        }
        Change::Policy { policy } => doc["policy"] = value(policy.as_str()),
        Change::Prefetch { distance } => doc["prefetch_distance"] = value(*distance as i64),
        Change::Weights { mode } => {
            doc["weights"] = value(match mode {
                WeightMode::Stream => "stream",
                WeightMode::Resident => "resident",
                WeightMode::Ignore => "ignore",
            })
        }
        Change::Fp16 => doc["dtype"] = value("fp16"),
        Change::Fuse => doc["fuse"] = value(true),
        Change::Recompute { tensors } => doc["recompute"] = value(strings(tensors)),
        Change::Reorder { order } => {
            doc["order"] = match order {
                OrderSpec::Named(n) => value(match n {
                    crate::sim::config::NamedOrder::File => "file",
                    crate::sim::config::NamedOrder::Memory => "memory",
                }),
                OrderSpec::Ops(ops) => value(strings(ops)),
            }
        }
    }
    let text = doc.to_string();
    // What is written must read back as a schedule config.
    toml::from_str::<ScheduleFile>(&text)
        .map_err(|e| Error::toml(path, "schedule config (TOML)", &text, &e))?;
    let bak = backup_path(path);
    crate::output::write_exact(&bak, old.as_bytes(), true)?;
    crate::output::write_exact(path, text.as_bytes(), true)?;
    Ok(format!(
        "{}: {} (the previous file is {}; u restores it)",
        path.display(),
        crate::report::change::schedule_line(change).unwrap_or_default(),
        bak.display()
    ))
}

/// Restores the schedule config at `path` from `PATH.bak`, byte for byte.
pub fn undo_change(path: &Path) -> Result<String> {
    let bak = backup_path(path);
    let old = std::fs::read(&bak).map_err(|e| Error::io(&bak, e))?;
    crate::output::write_exact(path, &old, true)?;
    std::fs::remove_file(&bak).map_err(|e| Error::io(&bak, e))?;
    Ok(format!(
        "{}: restored from {}",
        path.display(),
        bak.display()
    ))
}

/// `sched.toml` -> `sched.toml.bak`.
pub fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".bak");
    path.with_file_name(name)
}

/// Fails naming `origin` (a file or a flag) and its `key` on the first of
/// `names` that is no tensor of `g`.
fn known_tensors<'a>(
    g: &Graph,
    origin: &str,
    key: &str,
    names: impl IntoIterator<Item = &'a String>,
) -> Result<()> {
    match names.into_iter().find(|n| g.tensor_by_name(n).is_none()) {
        None => Ok(()),
        Some(n) => {
            let what = if key.is_empty() {
                origin.to_string()
            } else {
                format!("{origin}: {key}")
            };
            Err(Error::Config(format!(
                "{what}: no tensor named {:?} in {}",
                n, g.name
            )))
        }
    }
}

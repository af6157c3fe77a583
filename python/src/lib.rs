//! `spillscope._native`: the library's run specification, simulation,
//! sweeps, suggestions and trace import for Python. Everything crosses the
//! boundary as JSON text that the library already writes (the rows of
//! `sim`/`whatif --format json`, the trace format), so Python sees exactly
//! what the command line prints; `spillscope/__init__.py` wraps it in typed
//! objects. The GIL is released while the library works; long sweeps run in
//! chunks and check for Ctrl-C between them.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use serde_json::Value;
use spillscope::analysis::runs::{RunRow, RunsReport};
use spillscope::analysis::shard::Shard;
use spillscope::run::{Flags, RunSpec};
use spillscope::sim::EvictionPolicy;
use spillscope::trace::ledger::Ledger;
use spillscope::trace::Trace;

create_exception!(
    _native,
    Error,
    PyException,
    "Any spillscope error (the CLI's one-line message)."
);
create_exception!(
    _native,
    InputError,
    Error,
    "A model or trace that cannot be read: missing, of the wrong kind, damaged."
);
create_exception!(
    _native,
    ConfigError,
    Error,
    "A bad setting: capacity, bandwidth, policy, hardware profile, schedule config."
);

/// The library's error as the exception of its kind, with the text the
/// command line prints after `spillscope: error: `.
fn err(e: spillscope::Error) -> PyErr {
    use spillscope::Error as E;
    let msg = e.to_string();
    match e {
        E::Hardware(_) | E::Config(_) | E::Quantity(_) => ConfigError::new_err(msg),
        _ => InputError::new_err(msg),
    }
}

fn config(msg: String) -> PyErr {
    ConfigError::new_err(msg)
}

/// A simulated run or an imported trace: the trace and its summary row.
#[pyclass(frozen, module = "spillscope._native")]
struct NativeRun {
    trace: Trace,
    summary: RunRow,
}

#[pymethods]
impl NativeRun {
    /// The run's row, as `sim --format json` prints it.
    fn summary_json(&self) -> String {
        serde_json::to_string(&self.summary).unwrap_or_default()
    }
    /// The whole trace (docs/trace-format.md).
    fn trace_json(&self, py: Python<'_>) -> String {
        py.detach(|| self.trace.to_json())
    }
    /// Per-op spill cost, the explorer's Hotspots.
    fn hotspots_json(&self, py: Python<'_>) -> String {
        py.detach(|| {
            let l = Ledger::of(&self.trace);
            serde_json::to_string(&spillscope::analysis::hotspots::hotspots(&self.trace, &l))
                .unwrap_or_default()
        })
    }
    /// Per-tensor round trips (evict or stream out, then back in).
    fn round_trips_json(&self, py: Python<'_>) -> String {
        py.detach(|| {
            let l = Ledger::of(&self.trace);
            serde_json::to_string(&spillscope::analysis::roundtrips::round_trips(
                &self.trace,
                &l,
            ))
            .unwrap_or_default()
        })
    }
}

/// The options Python passes (one JSON object, `None`s left out).
fn spec_of(
    model: &str,
    opts: &str,
    default_policies: &[EvictionPolicy],
) -> PyResult<(RunSpec, f64)> {
    let o: Value = serde_json::from_str(opts).map_err(|e| config(format!("options: {e}")))?;
    let s = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
    let mut flags = Flags {
        capacity: o.get("capacity").and_then(Value::as_u64),
        bandwidth: o.get("bandwidth").and_then(Value::as_f64),
        policies: s("policy")
            .map(|p| EvictionPolicy::parse_list(&p))
            .transpose()
            .map_err(config)?,
        weights: s("weights")
            .map(|w| w.parse())
            .transpose()
            .map_err(config)?,
        pins: o
            .get("pins")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
        prefetch_distance: o
            .get("prefetch")
            .and_then(Value::as_u64)
            .map(|d| d as usize),
        fuse: o.get("fuse").and_then(Value::as_bool),
        dtype: s("dtype").map(|d| d.parse()).transpose().map_err(config)?,
        ..Default::default()
    };
    if let Some(order) = s("order") {
        flags.order = order.parse().ok();
    }
    if o.get("recompute").and_then(Value::as_bool) == Some(true) {
        flags.recompute = Some(spillscope::sim::RecomputeSpec::All(true));
    }
    let mut spec = RunSpec::new(model);
    spec.hardware = s("hardware").unwrap_or_else(|| "seed-npu".into());
    spec.schedule = s("config").map(Into::into);
    spec.flags = flags;
    spec.default_policies = default_policies.to_vec();
    let ilp = o
        .get("ilp_time")
        .and_then(Value::as_f64)
        .unwrap_or(spillscope::sim::optimum::DEFAULT_TIME_LIMIT_S);
    Ok((spec, ilp))
}

/// Simulates `model` under each policy the options name (all of them by
/// default, as `sim`), with the exact program's bound and plan as `sim`.
#[pyfunction]
fn simulate(py: Python<'_>, model: String, opts: String) -> PyResult<Vec<NativeRun>> {
    let (spec, ilp) = spec_of(&model, &opts, &EvictionPolicy::ALL)?;
    py.detach(|| {
        let (g, r) = spec.resolve()?;
        let (traces, _) = spillscope::run::simulate_resolved(&g, &r, ilp)?;
        Ok(traces
            .into_iter()
            .map(|t| NativeRun {
                summary: RunRow::from_trace(&t),
                trace: t,
            })
            .collect())
    })
    .map_err(err)
}

/// Any importable trace (spillscope, ONNX Runtime, PyTorch, Chrome, JSONL,
/// a Vela output directory).
#[pyfunction]
fn load_trace(py: Python<'_>, path: String) -> PyResult<NativeRun> {
    py.detach(|| {
        let (t, _) = spillscope::trace::import::import(path.as_ref(), None, &Default::default())?;
        Ok(NativeRun {
            summary: RunRow::from_trace(&t),
            trace: t,
        })
    })
    .map_err(err)
}

/// The `whatif --format json` document of a sweep (its `shard` slice only
/// when given), byte for byte. Runs in chunks so Ctrl-C interrupts it.
#[pyfunction]
#[pyo3(signature = (model, opts, capacities, bandwidths=None, shard=None))]
fn whatif(
    py: Python<'_>,
    model: String,
    opts: String,
    capacities: Vec<u64>,
    bandwidths: Option<Vec<f64>>,
    shard: Option<(usize, usize)>,
) -> PyResult<String> {
    let (spec, _) = spec_of(&model, &opts, &[EvictionPolicy::Lru])?;
    let (g, r) = py.detach(|| spec.resolve()).map_err(err)?;
    let capacities = if capacities.is_empty() {
        vec![r.hardware.memory.capacity.0]
    } else {
        capacities
    };
    let bandwidths: Vec<Option<f64>> = match bandwidths {
        Some(b) if !b.is_empty() => b.into_iter().map(Some).collect(),
        _ => vec![None],
    };
    let shard = shard
        .map(|(index, count)| format!("{index}/{count}").parse::<Shard>().map_err(config))
        .transpose()?;
    let rep = if let Some(s) = shard {
        py.detach(|| spillscope::run::sweep(&g, &r, &capacities, &bandwidths, Some(s), &|| ()))
            .map_err(err)?
    } else {
        // Contiguous chunks of the grid, in order: their rows joined are
        // the whole sweep's.
        if capacities.contains(&0) {
            return Err(config("capacity must be greater than zero".into()));
        }
        let all = spillscope::analysis::whatif::grid(&capacities, &bandwidths, &r.policies);
        let per = 4 * std::thread::available_parallelism().map_or(2, |n| n.get());
        let mut runs = Vec::with_capacity(all.len());
        for chunk in all.chunks(per) {
            let rows = py
                .detach(|| {
                    spillscope::analysis::whatif::run(&g, &r.hardware, &r.config, chunk, &|| ())
                })
                .map_err(err)?;
            runs.extend(rows);
            py.check_signals()?;
        }
        RunsReport {
            model: g.name.clone(),
            runs,
            optimum: None,
            shard: None,
        }
    };
    Ok(spillscope::analysis::runs::render_json(&rep) + "\n")
}

/// `suggest --format json` of a model.
#[pyfunction]
fn suggest(py: Python<'_>, model: String, opts: String) -> PyResult<String> {
    let (spec, _) = spec_of(&model, &opts, &[EvictionPolicy::Lru])?;
    py.detach(|| {
        let (g, r) = spec.resolve()?;
        let s = spillscope::analysis::suggest::suggest(&g, &r.hardware, &r.first_config())?;
        let mut v = serde_json::to_value(&s).unwrap_or_default();
        if let Some(rows) = v.get_mut("suggestions").and_then(|x| x.as_array_mut()) {
            for (row, x) in rows.iter_mut().zip(&s.suggestions) {
                row["config_change"] = spillscope::report::change::how(&x.change).into();
            }
        }
        Ok(serde_json::to_string_pretty(&v).unwrap_or_default() + "\n")
    })
    .map_err(err)
}

/// `spillscope merge` of shard documents (JSON texts).
#[pyfunction]
fn merge(shards: Vec<String>) -> PyResult<String> {
    let mut parsed = Vec::with_capacity(shards.len());
    for (i, text) in shards.iter().enumerate() {
        let r: RunsReport = serde_json::from_str(text)
            .map_err(|e| InputError::new_err(format!("shard {}: not whatif JSON: {e}", i + 1)))?;
        parsed.push((format!("shard {}", i + 1), r));
    }
    let all = spillscope::analysis::shard::merge(parsed).map_err(err)?;
    Ok(spillscope::analysis::runs::render_json(&all) + "\n")
}

/// `"4MiB"` as bytes (the CLI's parser).
#[pyfunction]
fn parse_size(text: &str) -> PyResult<u64> {
    spillscope::units::parse_size(text).map_err(|e| err(e.into()))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Error", m.py().get_type::<Error>())?;
    m.add("InputError", m.py().get_type::<InputError>())?;
    m.add("ConfigError", m.py().get_type::<ConfigError>())?;
    m.add_class::<NativeRun>()?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(load_trace, m)?)?;
    m.add_function(wrap_pyfunction!(whatif, m)?)?;
    m.add_function(wrap_pyfunction!(suggest, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_function(wrap_pyfunction!(parse_size, m)?)?;
    Ok(())
}

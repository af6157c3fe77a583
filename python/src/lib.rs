//! `spillscope._native`: the library's run specification, simulation,
//! sweeps, suggestions and trace import for Python. Everything crosses the
//! boundary as JSON text that the library already writes (the rows of
//! `sim`/`whatif --format json`, the trace format), so Python sees exactly
//! what the command line prints; `spillscope/__init__.py` wraps it in typed
//! objects. Every computation is a job of the library's session (the same
//! the command line and the explorer run); it runs on its own thread with
//! the GIL released while this one checks for Ctrl-C, which cancels it.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use serde_json::Value;
use spillscope::analysis::runs::{RunRow, RunsReport};
use spillscope::analysis::shard::Shard;
use spillscope::run::{Flags, RunSpec};
use spillscope::session::{Budgets, Outcome, Request, Source, Wants, WhatIfGrid};
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

/// Runs a session job on its own thread, checking for Ctrl-C (which
/// cancels it) every 50 ms.
fn run_job(py: Python<'_>, request: Request) -> PyResult<Outcome> {
    let cancel = spillscope::cancel::Cancel::new();
    let token = cancel.clone();
    let handle = std::thread::spawn(move || spillscope::session::run_cancellable(&request, &token, &|_| {}));
    loop {
        if handle.is_finished() {
            return match handle.join() {
                Ok(r) => r.map_err(err),
                Err(_) => Err(Error::new_err("the computation panicked")),
            };
        }
        if let Err(e) = py.check_signals() {
            cancel.cancel();
            let _ = py.detach(|| handle.join());
            return Err(e);
        }
        py.detach(|| std::thread::sleep(std::time::Duration::from_millis(50)));
    }
}

/// Simulates `model` under each policy the options name (all of them by
/// default, as `sim`), with the exact program's bound and plan as `sim`.
#[pyfunction]
fn simulate(py: Python<'_>, model: String, opts: String) -> PyResult<Vec<NativeRun>> {
    let (spec, ilp) = spec_of(&model, &opts, &EvictionPolicy::ALL)?;
    let request = Request {
        source: Source::Model(Box::new(spec)),
        wants: Wants {
            bound: true,
            ..Default::default()
        },
        budgets: Budgets {
            bound_s: ilp,
            ..Default::default()
        },
        cache: spillscope::session::cache::Cache::user(),
    };
    let outcome = run_job(py, request)?;
    Ok(outcome
        .runs
        .iter()
        .map(|r| NativeRun {
            summary: r.row(),
            trace: r.trace_with_bound(),
        })
        .collect())
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
#[pyo3(signature = (model, opts, capacities, bandwidths=None, shard=None, cores=None))]
fn whatif(
    py: Python<'_>,
    model: String,
    opts: String,
    capacities: Vec<u64>,
    bandwidths: Option<Vec<f64>>,
    shard: Option<(usize, usize)>,
    cores: Option<Vec<u32>>,
) -> PyResult<String> {
    let (spec, _) = spec_of(&model, &opts, &[EvictionPolicy::Lru])?;
    let o: Value = serde_json::from_str(&opts).map_err(|e| config(format!("options: {e}")))?;
    let bound_s = o
        .get("ilp_time")
        .and_then(Value::as_f64)
        .unwrap_or(spillscope::sim::optimum::DEFAULT_TIME_LIMIT_S);
    let capacities = if capacities.is_empty() {
        vec![spec.resolve_hardware().map_err(err)?.memory.capacity.0]
    } else {
        capacities
    };
    let bandwidths: Vec<Option<f64>> = match bandwidths {
        Some(b) if !b.is_empty() => b.into_iter().map(Some).collect(),
        _ => vec![None],
    };
    let cores: Vec<Option<u32>> = cores
        .unwrap_or_default()
        .into_iter()
        .map(Some)
        .collect();
    let shard = shard
        .map(|(index, count)| format!("{index}/{count}").parse::<Shard>().map_err(config))
        .transpose()?;
    let request = Request {
        source: Source::Model(Box::new(spec)),
        wants: Wants {
            whatif: Some(WhatIfGrid {
                capacities,
                curve: None,
                bandwidths,
                cores,
                shard,
                knees: false,
            }),
            ..Default::default()
        },
        budgets: Budgets {
            whatif_bound_s: bound_s,
            ..Default::default()
        },
        cache: spillscope::session::cache::Cache::user(),
    };
    let outcome = run_job(py, request)?;
    let Some(w) = outcome.whatif else {
        return Err(config("the sweep did not run".into()));
    };
    Ok(spillscope::analysis::runs::render_json(&w.report) + "\n")
}

/// `suggest --format json` of a model.
#[pyfunction]
fn suggest(py: Python<'_>, model: String, opts: String) -> PyResult<String> {
    let (spec, ilp) = spec_of(&model, &opts, &[EvictionPolicy::Lru])?;
    let request = Request {
        source: Source::Model(Box::new(spec)),
        wants: Wants {
            suggestions: true,
            ..Default::default()
        },
        budgets: Budgets {
            bound_s: ilp,
            ..Default::default()
        },
        cache: spillscope::session::cache::Cache::user(),
    };
    let s = match run_job(py, request)?.suggestions {
        Some(Ok(s)) => s,
        Some(Err(e)) => return Err(config(e)),
        None => return Err(config("no suggestions were computed".into())),
    };
    Ok(spillscope::report::change::suggestions_json(&s))
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

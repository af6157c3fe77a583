//! The bundled sample: the seed's experiment set-up run on a real
//! architecture, embedded in the binary so `spillscope` works from anywhere.

use super::args::Format;
use spillscope::analysis::runs::RunsReport;
use spillscope::trace::Trace;
use spillscope::{Error, Result};

/// What the sample is, as headers name it.
pub const SAMPLE_NAME: &str = "sample: ResNet-50 batch 3, 16 MiB edge NPU";

/// The sample traces (one per policy), embedded at build time. Regenerate
/// with `scripts/regen-samples.sh`; a test checks they match a fresh run.
pub const SAMPLE_TRACES: &[(&str, &str)] = &[
    (
        "edge-resnet50-b3.ideal.json",
        include_str!("../sample-traces/edge-resnet50-b3.ideal.json"),
    ),
    (
        "edge-resnet50-b3.lru.json",
        include_str!("../sample-traces/edge-resnet50-b3.lru.json"),
    ),
    (
        "edge-resnet50-b3.belady.json",
        include_str!("../sample-traces/edge-resnet50-b3.belady.json"),
    ),
    (
        "edge-resnet50-b3.lifetime.json",
        include_str!("../sample-traces/edge-resnet50-b3.lifetime.json"),
    ),
];

pub fn traces() -> Result<Vec<Trace>> {
    SAMPLE_TRACES
        .iter()
        .map(|(name, text)| {
            Trace::from_slice(text.as_bytes()).map_err(|e| Error::Trace {
                path: (*name).into(),
                detail: e.to_string(),
            })
        })
        .collect()
}

/// The sample's summary table: its runs through the session, so their
/// bound is the one the explorer shows for the same sample.
pub fn summary(format: Format) -> Result<String> {
    let named: Vec<(String, std::sync::Arc<Trace>)> = SAMPLE_TRACES
        .iter()
        .map(|(n, _)| n.to_string())
        .zip(traces()?.into_iter().map(std::sync::Arc::new))
        .collect();
    let request = spillscope::session::Request::new(
        spillscope::session::Source::Embedded(named),
        spillscope::session::Wants {
            bound: true,
            ..Default::default()
        },
    );
    let outcome = spillscope::session::run(&request, &|_| {})?;
    // A bound left unrefined says why (the memory budget), once per run.
    let mut notes = outcome.notes.clone();
    notes.dedup();
    for n in &notes {
        super::out::note(&format!("note: {n}\n"));
    }
    let rep = RunsReport {
        model: SAMPLE_NAME.into(),
        runs: outcome.runs.iter().map(|r| r.row()).collect(),
        optimum: None,
        shard: None,
    };
    Ok(super::sim_cmd::render(&rep, format))
}

//! Integration tests, one binary: every test binary links the whole tool
//! (tract included), so one binary per file filled a small CI disk.

#[path = "../common/mod.rs"]
mod common;

mod analysis;
mod calibrate;
mod cli_errors;
mod cores;
mod docs;
mod executorch;
mod graph_liveness;
mod import_export;
mod ledger;
mod multi_pool;
mod npu;
mod onnx_frontend;
mod overflow;
mod parser_mutation;
mod pathological;
mod precedence;
mod probe_crash;
mod probe_examples;
mod real_traces;
mod report;
mod round_three;
mod safe_outputs;
mod samples;
mod session;
mod sim_policies;
mod sim_properties;
mod stream_window;
mod suggest;
mod trace_cache;
mod trace_mutation;
mod tui_deep_names;
mod tui_keys;
mod tui_snapshots;
mod tui_theme;
mod tui_update;
mod vela;
mod whatif;
mod whatif_transforms;

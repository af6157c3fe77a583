//! Analyses over graphs and traces: hotspots, classification, round trips,
//! residency, diff, calibration, what-if sweeps, suggestions, the exact
//! optimum and the report's data. Nothing here knows about terminals; the
//! explorer and the headless reports call the same functions.
//!
//! Owns: every figure derived from a trace (or from re-simulating a graph).
//! May import `graph`, `cost`, `sim` (to re-simulate) and `trace`; never
//! `report`, `run` or a front end.

pub mod calibrate;
pub mod classify;
pub mod cores;
pub mod diff;
pub mod executorch;
pub mod figures;
pub mod hotspot_table;
pub mod hotspots;
pub mod measured;
pub mod memmap;
mod op_figures;
pub use crate::sim::optimum;
pub mod range_max;
pub mod report;
pub mod residency;
pub mod roundtrips;
pub mod runs;
pub mod shard;
pub mod suggest;
pub mod timeline;
pub mod trip_table;
pub mod vela;
pub mod whatif;

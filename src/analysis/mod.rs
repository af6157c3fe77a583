//! Analyses over graphs and traces: bounds, hotspots, classification.
//! Nothing here knows about terminals; the explorer and the headless
//! reports call the same functions.

pub mod calibrate;
pub mod classify;
pub mod diff;
pub mod hotspots;
pub mod memmap;
pub mod optimum;
pub mod report;
pub mod residency;
pub mod roundtrips;
pub mod runs;
pub mod suggest;
pub mod timeline;
pub mod whatif;

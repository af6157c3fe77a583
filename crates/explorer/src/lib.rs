//! The explorer: a terminal client of the library. One message type, one
//! loop: input, file-watch events, finished background work and ticks arrive
//! on one channel; loading and re-simulation run off the UI thread (only the
//! newest queued re-run is kept); the screen is redrawn only when something
//! changed. The terminal is restored on every exit path, panics included.
//!
//! Owns: the explorer's state, views, keys, themes and loop. Depends on the
//! core library (`spillscope`) and never on the command line.

pub mod app;
pub mod data;
pub mod glyphs;
pub mod keys;
pub mod runtime;
pub mod theme;
pub mod ui;
pub mod views;

//! Integration tests, one binary: every test binary links the whole tool
//! (tract included), so one binary per file filled a small CI disk.

#[path = "../common/mod.rs"]
mod common;

mod terminal_safety;
mod tui_e2e;
mod tui_e2e_session;
mod tui_e2e_triage;
mod walkthrough;

//! Renderings of [`crate::analysis::report::Report`] for people who will
//! not open a terminal UI: markdown (paste into a ticket), JSON (tools), and
//! one self-contained HTML file with inline SVG charts; and how a suggested
//! change is written for people (`change`: flags, config line).
//!
//! Owns: renderings to text. May import `analysis`, `trace` and `units`;
//! the front ends import it.

pub mod change;
pub mod html;
pub mod markdown;
mod svg;

pub use html::to_html;
pub use markdown::to_markdown;

/// JSON of the report (pretty).
pub fn to_json(r: &crate::analysis::report::Report) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default() + "\n"
}

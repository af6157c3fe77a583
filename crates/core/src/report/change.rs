//! How a suggested change is written for people: the command-line flags,
//! the schedule-config (SCHED.toml) line, or the hardware line. The
//! analysis carries the typed [`Change`]; the CLI, the reports and the
//! explorer render it from here.

use crate::analysis::suggest::Change;
use crate::units::{fmt_bytes, fmt_size_exact};

/// A TOML value written inline (`["a", "b"]`, `"lru"`, `2`).
fn inline<T: serde::Serialize>(v: T) -> String {
    toml::Value::try_from(v)
        .map(|v| v.to_string())
        .unwrap_or_default()
}

/// The schedule-config line that makes `c` (`None` for a hardware change).
pub fn schedule_line(c: &Change) -> Option<String> {
    Some(match c {
        Change::Pin { tensor } => format!("pins = {}", inline([tensor])),
        Change::Capacity { .. } => return None,
        Change::Policy { policy } => format!("policy = {}", inline(policy)),
        Change::Prefetch { distance } => format!("prefetch_distance = {distance}"),
        Change::Weights { mode } => format!("weights = {}", inline(mode)),
        Change::Fp16 => "dtype = \"fp16\"".into(),
        Change::Fuse => "fuse = true".into(),
        Change::Recompute { tensors } => format!("recompute = {}", inline(tensors)),
        Change::Reorder { order } => format!("order = {}", inline(order)),
        Change::Cores { .. } => return None,
        Change::Split { split } => format!("split = {}", inline(split)),
    })
}

/// The hardware-profile line of a change a schedule config cannot make.
pub fn hardware_line(c: &Change) -> Option<String> {
    match c {
        Change::Capacity { bytes } => {
            Some(format!("memory.capacity = \"{}\"", fmt_size_exact(*bytes)))
        }
        Change::Cores { count, split } => Some(format!(
            "cores.count = {count}; SCHED.toml: split = \"{split}\""
        )),
        _ => None,
    }
}

/// Why a schedule config cannot make `c` and how to make it instead, for
/// a hardware change (`None` for any other): `("a capacity is hardware",
/// "rerun with --capacity")`.
pub fn hardware_rerun(c: &Change) -> Option<(&'static str, &'static str)> {
    match c {
        Change::Capacity { .. } => Some(("a capacity is hardware", "rerun with --capacity")),
        Change::Cores { .. } => {
            Some(("a core count is hardware", "rerun with --cores and --split"))
        }
        _ => None,
    }
}

/// The command-line flags that make `c`.
pub fn flags(c: &Change) -> String {
    match c {
        Change::Pin { tensor } => format!("--pin {tensor:?}"),
        Change::Capacity { bytes } => format!("--capacity {}", fmt_size_exact(*bytes)),
        Change::Policy { policy } => format!("--policy {policy}"),
        Change::Prefetch { distance } => format!("--prefetch {distance}"),
        Change::Weights { mode } => format!("--weights {}", inline(mode).trim_matches('"')),
        Change::Fp16 => "--dtype fp16".into(),
        Change::Fuse => "--fuse".into(),
        Change::Recompute { .. } => "--recompute".into(),
        Change::Reorder { order } => format!("--order {}", inline(order).trim_matches('"')),
        Change::Cores { count, split } => format!("--cores {count} --split {split}"),
        Change::Split { split } => format!("--split {split}"),
    }
}

/// Flags, then the config or hardware line in brackets: how to make the
/// change, in one line.
pub fn how(c: &Change) -> String {
    match (schedule_line(c), hardware_line(c)) {
        (Some(l), _) => format!("{}   (SCHED.toml: {l})", flags(c)),
        (None, Some(h)) => format!("{}   (hardware: {h})", flags(c)),
        (None, None) => flags(c),
    }
}

/// A short human label of the change (for narrow tables).
pub fn label(c: &Change) -> String {
    match c {
        Change::Pin { tensor } => format!("pin {tensor}"),
        Change::Capacity { bytes } => format!("capacity {}", fmt_bytes(*bytes)),
        Change::Policy { policy } => format!("policy {policy}"),
        Change::Prefetch { distance } => format!("prefetch {distance}"),
        Change::Weights { mode } => format!("weights {}", inline(mode).trim_matches('"')),
        Change::Fp16 => "fp16 activations".into(),
        Change::Fuse => "fuse".into(),
        Change::Recompute { tensors } => format!(
            "recompute {}",
            crate::units::count(tensors.len() as u64, "tensor")
        ),
        Change::Reorder { .. } => "memory-aware order".into(),
        Change::Cores { count, split } => format!(
            "{} by {split}",
            crate::units::count(u64::from(*count), "core")
        ),
        Change::Split { split } => format!("split by {split}"),
    }
}

/// `suggest --format json`: the suggestions, each with how to make it (as
/// flags and a config line) in `config_change`.
pub fn suggestions_json(s: &crate::analysis::suggest::Suggestions) -> String {
    let mut v = serde_json::to_value(s).unwrap_or_default();
    if let Some(rows) = v.get_mut("suggestions").and_then(|x| x.as_array_mut()) {
        for (row, x) in rows.iter_mut().zip(&s.suggestions) {
            row["config_change"] = how(&x.change).into();
        }
    }
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

//! Op time by roofline (seed 003): the larger of FLOPs / peak compute and
//! on-chip bytes / SRAM bandwidth, plus a fixed launch overhead. Whichever
//! side wins is the op's bound.

use super::HardwareProfile;
use serde::Serialize;

pub use crate::trace::Bound;

/// The roofline result for one op.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Roofline {
    pub time_ns: f64,
    pub bound: Bound,
    /// FLOPs per byte touched.
    pub intensity: f64,
}

/// Roofline time of an op that touches `bytes` on chip and does `flops`.
pub fn op_time_ns(hw: &HardwareProfile, flops: f64, bytes: u64) -> Roofline {
    let compute = flops / hw.compute.peak_flops.0 * 1e9;
    let memory = bytes as f64 / hw.memory.sram_bandwidth.0 * 1e9;
    let (t, bound) = if compute >= memory {
        (compute, Bound::Compute)
    } else {
        (memory, Bound::Memory)
    };
    Roofline {
        time_ns: t + hw.compute.op_overhead_ns,
        bound,
        intensity: if bytes == 0 {
            0.0
        } else {
            flops / bytes as f64
        },
    }
}

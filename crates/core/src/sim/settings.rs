//! A simulator trace's record of its run — the hardware profile and config
//! it was made with — written and read back as the simulator's own types
//! (the trace keeps them as the JSON it was given).

use super::SimConfig;
use crate::cost::HardwareProfile;
use crate::trace::Producer;
use serde::Deserialize;

/// The producer record of a run of `hw` under `cfg`.
pub fn producer(hw: &HardwareProfile, cfg: &SimConfig) -> Producer {
    Producer::Simulator {
        hardware: serde_json::to_value(hw).unwrap_or_default(),
        config: serde_json::to_value(cfg).unwrap_or_default(),
    }
}

/// The hardware profile and config a simulator trace records, where this
/// version reads them.
pub fn settings(p: &Producer) -> Option<(HardwareProfile, SimConfig)> {
    match p {
        Producer::Simulator { hardware, config } => Some((
            HardwareProfile::deserialize(hardware).ok()?,
            SimConfig::deserialize(config).ok()?,
        )),
        _ => None,
    }
}

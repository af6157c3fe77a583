//! The ledger's traffic figures, declared once: evictions, the four
//! capacity-caused parts of DRAM traffic and their sum
//! (docs/trace-format.md). A trace's summary, the ledger's totals and the
//! rows of `sim --format json` each hold one (flattened, so their JSON is
//! the contract's flat fields) and read as it (`Deref`), so the figures
//! are never copied field by field.

use serde::{Deserialize, Serialize};

/// Spill traffic as the ledger counts it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Traffic {
    /// Evictions of non-weight tensors.
    pub spill_count: u64,
    /// What those evictions wrote back.
    pub spilled_bytes: u64,
    /// Reloads of tensors whose DRAM copy came from a spill.
    pub reloaded_bytes: u64,
    /// Operands streamed in from a spilled DRAM copy.
    #[serde(default)]
    pub streamed_in_bytes: u64,
    /// Outputs streamed out.
    #[serde(default)]
    pub streamed_out_bytes: u64,
    /// spilled + reloaded + streamed in + streamed out.
    pub traffic_bytes: u64,
}

/// Lets a struct that holds its [`Traffic`] in a field of that name read
/// (and write) the traffic figures as its own.
#[macro_export]
macro_rules! holds_traffic {
    ($t:ty) => {
        impl std::ops::Deref for $t {
            type Target = $crate::trace::Traffic;
            fn deref(&self) -> &$crate::trace::Traffic {
                &self.traffic
            }
        }
        impl std::ops::DerefMut for $t {
            fn deref_mut(&mut self) -> &mut $crate::trace::Traffic {
                &mut self.traffic
            }
        }
    };
}

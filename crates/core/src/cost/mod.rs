//! Turning bytes and FLOPs into time and energy. Every number comes from a
//! [`HardwareProfile`]; the formulas are documented in `docs/cost-model.md`.
//!
//! Owns: hardware profiles and presets, the roofline, the DRAM bus model,
//! pipe timing of independent units.
//! May import only `units` and `error`.

pub mod bus;
pub mod hardware;
pub mod pipes;
pub mod roofline;

pub use bus::BusModel;
pub use hardware::{AllocatorFit, HardwareProfile, PoolSpec, TensorClass, MAIN_POOL};
pub use roofline::{op_time_ns, Bound, Roofline};

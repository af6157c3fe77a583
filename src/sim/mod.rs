//! Replays a schedule against a model of on-chip memory: allocation,
//! eviction by policy, reloads (on demand or prefetched), tiled streaming of
//! ops that cannot fit, all timed by the cost model. Output is a [`Trace`].

pub mod allocator;
pub mod config;
pub mod engine;
pub mod policy;
mod room;

pub use allocator::Allocator;
pub use config::{ActivationDtype, RecomputeSpec, ScheduleFile, SimConfig, WeightMode};
pub use engine::{prepare_graph, simulate};
pub use policy::EvictionPolicy;

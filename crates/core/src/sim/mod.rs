//! Replays a schedule against a model of on-chip memory: allocation,
//! eviction by policy, reloads (on demand or prefetched), tiled streaming of
//! ops that cannot fit, all timed by the cost model. Output is a [`Trace`](crate::trace::Trace).
//!
//! Owns: the engine (one method per phase), the allocator, the victim
//! search, policies, and the scheduling config types ([`SimConfig`],
//! [`ScheduleFile`], [`EvictionPolicy`]). May import `graph`, `cost` and the
//! `trace` types it writes; the trace records its settings as data
//! ([`settings`] writes and reads them), so the data model imports nothing
//! of the simulator.

pub mod allocator;
pub mod config;
pub mod cores;
pub mod engine;
pub mod optimum;
pub mod placement;
pub mod plan;
pub mod policy;
pub mod pools;
mod room;
pub mod runner;
pub mod settings;
mod shared;

pub use allocator::Allocator;
pub use config::{ActivationDtype, RecomputeSpec, ScheduleFile, SimConfig, WeightMode};
pub use engine::{plan_for, prepare_graph, simulate, simulate_summary, simulate_with};
pub use policy::EvictionPolicy;
pub use runner::{Planner, Runner, SolveEach};

//! One module per view; each is a function over `&App` that only reads.

pub mod compare;
pub mod hotspots;
pub mod lanes;
pub mod memory;
pub mod overview;
pub mod suggest;
pub mod tensor;
pub mod timeline;

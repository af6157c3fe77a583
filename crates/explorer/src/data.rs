//! The explorer's data: the session's datasets (a trace with every analysis
//! the views read, built once in the core).

pub use spillscope::session::dataset::*;

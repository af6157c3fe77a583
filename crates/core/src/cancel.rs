//! Stopping stale work. A [`Cancel`] token is handed to everything that can
//! run long (the simulator's op loop, the exact program's solver, each
//! suggestion candidate, each what-if point); the session cancels it when
//! its input changes, and the work returns [`Error::Cancelled`] at its next
//! check instead of finishing a result nobody will read.
//!
//! A foundation: imports only `error`.

use crate::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A shared flag: cheap to clone and to check (one relaxed atomic load).
#[derive(Debug, Clone, Default)]
pub struct Cancel(Option<Arc<AtomicBool>>);

impl Cancel {
    /// A token that can be cancelled.
    pub fn new() -> Cancel {
        Cancel(Some(Arc::new(AtomicBool::new(false))))
    }

    /// A token nothing cancels (one-shot commands).
    pub fn never() -> Cancel {
        Cancel(None)
    }

    /// Asks every holder to stop.
    pub fn cancel(&self) {
        if let Some(f) = &self.0 {
            f.store(true, Ordering::Relaxed);
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.as_ref().is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// `Err(Error::Cancelled)` once cancelled: `cancel.check()?` between
    /// steps of a long computation.
    pub fn check(&self) -> Result<()> {
        if self.is_cancelled() {
            Err(Error::Cancelled)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_flag_and_never_stays_clear() {
        let a = Cancel::new();
        let b = a.clone();
        assert!(b.check().is_ok());
        a.cancel();
        assert!(b.is_cancelled());
        assert!(matches!(b.check(), Err(Error::Cancelled)));
        let n = Cancel::never();
        n.cancel();
        assert!(!n.is_cancelled());
    }
}

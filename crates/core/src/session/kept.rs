//! The first frame's analyses of a trace, kept beside it in the binary
//! trace cache: the ledger and the classification of its evictions. A
//! second open of the same file reads them back instead of replaying every
//! event (a 10M-event trace: about half a second of the first frame's
//! wait). They are what this version computed of exactly the trace the
//! entry holds (the entry is versioned and checksummed as a whole), and
//! only a trace shown as read uses them: a trace with nested calls folded
//! to a level is another trace, analysed afresh.

use crate::analysis::classify::Classification;
use crate::trace::columnar::{Reader, Writer};
use crate::trace::ledger::Ledger;
use crate::trace::Trace;
use std::sync::Arc;

/// What a quick dataset computed of its trace that is worth keeping.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct QuickParts {
    pub(crate) ledger: Arc<Ledger>,
    pub(crate) class: Classification,
}

impl QuickParts {
    /// As columns, for [`crate::trace::store::Pending::keep_with`].
    pub(crate) fn encode(&self) -> std::io::Result<Vec<u8>> {
        let mut w = Writer::new(Vec::new());
        self.ledger.encode(&mut w)?;
        self.class.encode(&mut w)?;
        Ok(w.into_inner())
    }

    /// The parts [`QuickParts::encode`] wrote of `tr`; `None` when they do
    /// not read back whole or do not fit it (then they are computed).
    pub(crate) fn decode(b: &[u8], tr: &Trace) -> Option<QuickParts> {
        let mut r = Reader::new(b);
        let ledger = Ledger::decode(&mut r, tr).ok()?;
        let class = Classification::decode(&mut r, tr.events.len()).ok()?;
        r.at_end().then(|| QuickParts {
            ledger: Arc::new(ledger),
            class,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_read_back_as_computed_and_refuse_another_trace() {
        let tr =
            crate::trace::Trace::load(&crate::trace::sample_path("encdec-1mib.lru.json")).unwrap();
        let ledger = Ledger::of(&tr);
        let class = crate::analysis::classify::classify(&tr, &ledger);
        assert!(
            class.capacity_count + class.lifetime_count > 0,
            "a trace that spills"
        );
        let parts = QuickParts {
            ledger: Arc::new(ledger),
            class,
        };
        let b = parts.encode().unwrap();
        assert_eq!(QuickParts::decode(&b, &tr), Some(parts));
        // A trace with fewer events is not theirs.
        let mut fewer = tr.clone();
        fewer.events.truncate(tr.events.len() / 2);
        assert_eq!(QuickParts::decode(&b, &fewer), None);
        // Cut short.
        assert_eq!(QuickParts::decode(&b[..b.len() - 8], &tr), None);
    }
}

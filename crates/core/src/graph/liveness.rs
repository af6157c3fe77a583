//! Tensor lifetimes by def-use, exactly as DESIGN.md defines them: a tensor
//! is live from its producer's step (graph inputs from step 0) through its
//! last consumer's step; graph outputs to the end; an unconsumed output only
//! at its own step. Weights (initializers) are excluded.

use super::{Graph, TensorId, TensorKind};

/// The closed step range `[start, end]` in which a tensor must exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct LiveInterval {
    pub start: usize,
    pub end: usize,
}

/// Lifetimes of every non-weight tensor plus the live-bytes profile.
#[derive(Debug, Clone)]
pub struct Liveness {
    /// Indexed by tensor id; `None` for weights and unused tensors.
    pub intervals: Vec<Option<LiveInterval>>,
    /// Sum of live bytes at each step.
    pub live_bytes: Vec<u64>,
    pub peak_bytes: u64,
    pub peak_step: usize,
}

impl Liveness {
    /// Computes lifetimes; `free_at` optionally extends a tensor's end step
    /// (runtimes that free late, e.g. at subgraph end).
    pub fn compute(g: &Graph) -> Liveness {
        Self::compute_with(g, &[])
    }

    pub fn compute_with(g: &Graph, free_at: &[(TensorId, usize)]) -> Liveness {
        Self::compute_arriving(g, free_at, &[])
    }

    /// [`Liveness::compute_with`] where the inputs in `arriving` (`true`
    /// by tensor id) come in at their first use instead of being there
    /// from step 0: another core produces them (`--split graph`).
    pub fn compute_arriving(
        g: &Graph,
        free_at: &[(TensorId, usize)],
        arriving: &[bool],
    ) -> Liveness {
        let n = g.ops.len();
        let last = n.saturating_sub(1);
        let mut intervals: Vec<Option<LiveInterval>> = vec![None; g.tensors.len()];
        for t in &g.tensors {
            if t.kind == TensorKind::Weight {
                continue;
            }
            let first_use = t.consumers.iter().copied().min();
            let start = match t.producer {
                Some(p) => p,
                None if arriving.get(t.id) == Some(&true) => first_use.unwrap_or(0),
                None => 0,
            };
            let last_use = t.consumers.iter().copied().max();
            let end = if t.kind == TensorKind::Output {
                last
            } else {
                match (last_use, t.producer) {
                    (Some(u), _) => u.max(start),
                    (None, Some(p)) => p,
                    // An input nobody reads: live only at step 0.
                    (None, None) => 0,
                }
            };
            if n > 0 {
                intervals[t.id] = Some(LiveInterval { start, end });
            }
        }
        for &(t, step) in free_at {
            if let Some(iv) = intervals.get_mut(t).and_then(|i| i.as_mut()) {
                iv.end = iv.end.max(step.min(last));
            }
        }
        let mut diff = vec![0i128; n + 1];
        for (t, iv) in intervals.iter().enumerate() {
            if let Some(iv) = iv {
                diff[iv.start] += g.tensors.bytes(t) as i128;
                diff[iv.end + 1] -= g.tensors.bytes(t) as i128;
            }
        }
        let mut live_bytes = Vec::with_capacity(n);
        let mut acc: i128 = 0;
        let (mut peak_bytes, mut peak_step) = (0u64, 0usize);
        for (i, d) in diff.iter().take(n).enumerate() {
            acc += d;
            let v = acc.max(0) as u64;
            if v > peak_bytes {
                peak_bytes = v;
                peak_step = i;
            }
            live_bytes.push(v);
        }
        Liveness {
            intervals,
            live_bytes,
            peak_bytes,
            peak_step,
        }
    }
}

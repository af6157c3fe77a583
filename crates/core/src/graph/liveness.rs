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

/// Every tensor's interval, by tensor id: 8 bytes a tensor while the
/// steps fit in `u32` (any graph a memory budget lets in), 24 past that.
/// A million-tensor trace's bound held 12 MB of them through its solve.
#[derive(Debug, Clone)]
pub struct Intervals(Stored);

#[derive(Debug, Clone)]
enum Stored {
    /// `[start, end]`; `NONE` for a tensor without one.
    Narrow(Vec<[u32; 2]>),
    Wide(Vec<Option<LiveInterval>>),
}

/// No interval (a start past its end, which no interval has).
const NONE: [u32; 2] = [u32::MAX, 0];

impl Intervals {
    /// `tensors` tensors without intervals, on a schedule of `steps`.
    fn new(tensors: usize, steps: usize) -> Intervals {
        match u32::try_from(steps) {
            Ok(s) if s < u32::MAX => Intervals(Stored::Narrow(vec![NONE; tensors])),
            _ => Intervals(Stored::Wide(vec![None; tensors])),
        }
    }

    /// Tensor `t`'s interval (`None` for weights, unused tensors and ids
    /// past the graph).
    #[inline]
    pub fn get(&self, t: TensorId) -> Option<LiveInterval> {
        match &self.0 {
            Stored::Narrow(v) => v
                .get(t)
                .filter(|&&iv| iv != NONE)
                .map(|&[s, e]| LiveInterval {
                    start: s as usize,
                    end: e as usize,
                }),
            Stored::Wide(v) => v.get(t).copied().flatten(),
        }
    }

    /// Sets tensor `t`'s interval (steps below the schedule's length, as
    /// [`Intervals::new`] was told).
    fn set(&mut self, t: TensorId, iv: LiveInterval) {
        match &mut self.0 {
            Stored::Narrow(v) => v[t] = [iv.start as u32, iv.end as u32],
            Stored::Wide(v) => v[t] = Some(iv),
        }
    }

    pub fn len(&self) -> usize {
        match &self.0 {
            Stored::Narrow(v) => v.len(),
            Stored::Wide(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every tensor's interval, by id.
    pub fn iter(&self) -> impl Iterator<Item = Option<LiveInterval>> + '_ {
        (0..self.len()).map(|t| self.get(t))
    }
}

/// Lifetimes of every non-weight tensor plus the live-bytes profile.
#[derive(Debug, Clone)]
pub struct Liveness {
    /// Indexed by tensor id; `None` for weights and unused tensors.
    pub intervals: Intervals,
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
        let mut intervals = Intervals::new(g.tensors.len(), n);
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
                intervals.set(t.id, LiveInterval { start, end });
            }
        }
        for &(t, step) in free_at {
            if let Some(mut iv) = intervals.get(t) {
                iv.end = iv.end.max(step.min(last));
                intervals.set(t, iv);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_and_wide_intervals_read_alike() {
        let mut narrow = Intervals::new(5, 10);
        let mut wide = Intervals::new(5, u32::MAX as usize);
        assert!(matches!(narrow.0, Stored::Narrow(_)));
        assert!(matches!(wide.0, Stored::Wide(_)));
        for (t, iv) in [(0, (0, 0)), (2, (3, 9)), (4, (9, 9))] {
            let iv = LiveInterval {
                start: iv.0,
                end: iv.1,
            };
            narrow.set(t, iv);
            wide.set(t, iv);
        }
        assert_eq!(
            narrow.iter().collect::<Vec<_>>(),
            wide.iter().collect::<Vec<_>>()
        );
        assert_eq!(narrow.get(1), None);
        assert_eq!(narrow.get(0), Some(LiveInterval { start: 0, end: 0 }));
        assert_eq!(narrow.get(2), Some(LiveInterval { start: 3, end: 9 }));
        assert_eq!(narrow.get(7), None, "an id past the graph has none");
        assert_eq!(wide.get(7), None);
    }
}

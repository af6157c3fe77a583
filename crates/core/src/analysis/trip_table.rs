//! The round trips an open trace keeps: per tensor that moved, its totals
//! (40 bytes), and every trip as a 16-byte [`Leg`] (its two ends as event
//! indexes); a tensor's row
//! ([`TensorTrips`], with its name, its trips in full and the ops that
//! pushed it out) is made when a view asks for it. Rows held whole cost
//! 41 MB for a 1M-event trace (a 96-byte trip, a name string and two
//! lists per tensor).

use super::roundtrips::{
    legs, tensor_trips, Implied, Leg, RoundTrip, TensorTrips, OSCILLATION_TRIPS,
};
use crate::trace::ledger::Ledger;
use crate::trace::Trace;

/// A tensor's totals, and where its trips are.
#[derive(Debug, Clone, Copy)]
struct Row {
    bytes_moved: u64,
    stall_ns: u64,
    tensor: u32,
    /// Its first trip in the table's trips, and how many it has.
    first: u32,
    trips: u32,
    /// Trips that came back.
    completed: u32,
    /// The op it went out during most often (`NO_OP`: none), and how often:
    /// the Tensor view's "pushed by", which counting every trip each frame
    /// made a 213 ms frame at 10M events.
    pushed_by: u32,
    pushed_n: u32,
}

const NO_OP: u32 = u32::MAX;

/// A tensor's row without its trips: what a list of tensors shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TripBrief {
    pub tensor: usize,
    pub trips: usize,
    pub completed: usize,
    pub oscillating: bool,
    pub bytes_moved: u64,
    pub stall_ns: u64,
    /// The op it went out during most often and how often (the first of
    /// [`TensorTrips::evicted_by`]).
    pub pushed_by: Option<(usize, usize)>,
}

/// The most frequent of `ops` and its count (the smaller op on a tie), as
/// [`TensorTrips::evicted_by`] ranks them.
fn most_frequent(ops: &mut [usize]) -> Option<(usize, usize)> {
    if !ops.is_sorted() {
        ops.sort_unstable();
    }
    let mut best: Option<(usize, usize)> = None;
    for run in ops.chunk_by(|a, b| a == b) {
        if best.is_none_or(|(_, n)| run.len() > n) {
            best = Some((run[0], run.len()));
        }
    }
    best
}

/// Round trips per tensor, largest spill traffic first (then most trips,
/// then tensor id), as [`super::roundtrips::round_trips`] lists them.
#[derive(Debug, Clone, Default)]
pub struct Trips {
    rows: Vec<Row>,
    legs: Vec<Leg>,
    /// The implied streams the legs' ends may refer to.
    implied: Vec<Implied>,
    /// Row indices by tensor id, to find a tensor's row.
    by_tensor: Vec<u32>,
    oscillating: usize,
}

impl Trips {
    /// The table of `tr`'s round trips (a stall read from the op column,
    /// not a row per trip).
    pub fn of(tr: &Trace, ledger: &Ledger) -> Trips {
        let (legs, moved, implied) = legs(tr, ledger);
        let mut rows: Vec<Row> = Vec::new();
        for (i, l) in legs.iter().enumerate() {
            let back = u32::from(l.is_back());
            let stall = l
                .back_op(tr, &implied)
                .and_then(|o| tr.ops.stall_col().get(o).copied())
                .unwrap_or(0);
            match rows.last_mut() {
                Some(r) if r.tensor == l.tensor => {
                    r.trips += 1;
                    r.completed += back;
                    r.stall_ns += stall;
                }
                _ => rows.push(Row {
                    bytes_moved: moved[l.tensor as usize],
                    stall_ns: stall,
                    tensor: l.tensor,
                    first: i as u32,
                    trips: 1,
                    completed: back,
                    pushed_by: NO_OP,
                    pushed_n: 0,
                }),
            }
        }
        let mut ops = Vec::new();
        for r in &mut rows {
            let mine = &legs[r.first as usize..(r.first + r.trips) as usize];
            ops.clear();
            ops.extend(mine.iter().filter_map(|l| l.out_op(tr, &implied)));
            if let Some((op, n)) = most_frequent(&mut ops) {
                r.pushed_by = u32::try_from(op).unwrap_or(NO_OP);
                r.pushed_n = n as u32;
            }
        }
        rows.sort_by(|a, b| {
            b.bytes_moved
                .cmp(&a.bytes_moved)
                .then(b.trips.cmp(&a.trips))
                .then(a.tensor.cmp(&b.tensor))
        });
        rows.shrink_to_fit();
        let mut by_tensor: Vec<u32> = (0..rows.len() as u32).collect();
        by_tensor.sort_unstable_by_key(|&i| rows[i as usize].tensor);
        let oscillating = rows
            .iter()
            .filter(|r| r.completed as usize >= OSCILLATION_TRIPS)
            .count();
        Trips {
            rows,
            legs,
            implied,
            by_tensor,
            oscillating,
        }
    }

    /// Tensors that moved.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The tensor of row `i`.
    pub fn tensor(&self, i: usize) -> Option<usize> {
        self.rows.get(i).map(|r| r.tensor as usize)
    }

    /// The tensors in row order.
    pub fn tensors(&self) -> impl Iterator<Item = usize> + '_ {
        self.rows.iter().map(|r| r.tensor as usize)
    }

    /// How many tensors oscillate (counted once, not per frame).
    pub fn oscillating(&self) -> usize {
        self.oscillating
    }

    /// The row of `tensor`, if it moved.
    pub fn position(&self, tensor: usize) -> Option<usize> {
        let i = self
            .by_tensor
            .binary_search_by_key(&tensor, |&i| self.rows[i as usize].tensor as usize)
            .ok()?;
        Some(self.by_tensor[i] as usize)
    }

    /// Row `i` in full (`tr` is the trace the table was made from).
    pub fn row(&self, tr: &Trace, i: usize) -> Option<TensorTrips> {
        let r = self.rows.get(i)?;
        let legs = &self.legs[r.first as usize..(r.first + r.trips) as usize];
        let trips = legs.iter().map(|l| l.expand(tr, &self.implied)).collect();
        Some(tensor_trips(
            tr,
            r.tensor as usize,
            trips,
            r.bytes_moved,
            r.stall_ns,
        ))
    }

    /// Row `i` without its trips.
    pub fn brief(&self, i: usize) -> Option<TripBrief> {
        let r = self.rows.get(i)?;
        Some(TripBrief {
            tensor: r.tensor as usize,
            trips: r.trips as usize,
            completed: r.completed as usize,
            oscillating: r.completed as usize >= OSCILLATION_TRIPS,
            bytes_moved: r.bytes_moved,
            stall_ns: r.stall_ns,
            pushed_by: (r.pushed_by != NO_OP)
                .then_some((r.pushed_by as usize, r.pushed_n as usize)),
        })
    }

    /// Trip `k` of row `i` in full (`tr` is the trace the table was made
    /// from): a view draws the trips it has room for, not all of them.
    pub fn trip(&self, tr: &Trace, i: usize, k: usize) -> Option<RoundTrip> {
        let r = self.rows.get(i)?;
        if k >= r.trips as usize {
            return None;
        }
        Some(self.legs[r.first as usize + k].expand(tr, &self.implied))
    }

    /// The row of `tensor` in full, if it moved.
    pub fn of_tensor(&self, tr: &Trace, tensor: usize) -> Option<TensorTrips> {
        self.row(tr, self.position(tensor)?)
    }

    /// Heap bytes held (the figure docs/memory.md quotes).
    pub fn heap_bytes(&self) -> usize {
        self.rows.capacity() * std::mem::size_of::<Row>()
            + self.legs.capacity() * std::mem::size_of::<Leg>()
            + self.implied.capacity() * std::mem::size_of::<Implied>()
            + self.by_tensor.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::ledger::Part;

    fn sample(name: &str) -> Trace {
        Trace::load(&crate::trace::sample_path(name)).unwrap()
    }

    /// A row's brief, and its trips one at a time, say what the row in
    /// full says (the Tensor view draws from them).
    #[test]
    fn briefs_and_single_trips_agree_with_the_full_rows() {
        let mut pushed = 0;
        for name in [
            "encdec-1mib.lru.json",
            "edge-resnet50-b3.belady.json",
            "seed-resnet50-b3.lru.json",
        ] {
            let tr = sample(name);
            let t = Trips::of(&tr, &Ledger::of(&tr));
            for i in 0..t.len() {
                let full = t.row(&tr, i).unwrap();
                let b = t.brief(i).unwrap();
                assert_eq!(b.tensor, full.tensor, "{name} row {i}");
                assert_eq!(b.trips, full.trips.len(), "{name} row {i}");
                assert_eq!(b.oscillating, full.oscillating, "{name} row {i}");
                assert_eq!(b.bytes_moved, full.bytes_moved, "{name} row {i}");
                assert_eq!(b.stall_ns, full.stall_ns, "{name} row {i}");
                assert_eq!(
                    b.pushed_by,
                    full.evicted_by.first().copied(),
                    "{name} row {i}"
                );
                pushed += usize::from(b.pushed_by.is_some());
                for (k, rt) in full.trips.iter().enumerate() {
                    assert_eq!(
                        t.trip(&tr, i, k).as_ref(),
                        Some(rt),
                        "{name} row {i} trip {k}"
                    );
                }
                assert!(t.trip(&tr, i, full.trips.len()).is_none());
            }
            assert!(t.brief(t.len()).is_none());
        }
        assert!(pushed > 10, "{pushed} rows name the op that pushed them");
    }

    /// Ties go to the smaller op, as the full rows rank them.
    #[test]
    fn the_most_frequent_op_breaks_ties_by_id() {
        assert_eq!(most_frequent(&mut [7, 3, 7, 3, 9]), Some((3, 2)));
        assert_eq!(most_frequent(&mut [5, 5, 5, 1]), Some((5, 3)));
        assert_eq!(most_frequent(&mut []), None);
    }

    #[test]
    fn rows_are_found_by_tensor_sorted_and_count_every_trip() {
        for name in ["encdec-1mib.lru.json", "edge-resnet50-b3.belady.json"] {
            let tr = sample(name);
            let ledger = Ledger::of(&tr);
            let t = Trips::of(&tr, &ledger);
            assert!(t.len() >= 10, "{name}: {}", t.len());
            let rows: Vec<TensorTrips> = (0..t.len()).map(|i| t.row(&tr, i).unwrap()).collect();
            assert!(t.row(&tr, t.len()).is_none());
            // Largest spill traffic first, then most trips, then id.
            for w in rows.windows(2) {
                let key = |r: &TensorTrips| {
                    (
                        std::cmp::Reverse(r.bytes_moved),
                        std::cmp::Reverse(r.trips.len()),
                        r.tensor,
                    )
                };
                assert!(key(&w[0]) < key(&w[1]), "{name}");
            }
            for (i, r) in rows.iter().enumerate() {
                assert_eq!(t.tensor(i), Some(r.tensor));
                assert_eq!(t.position(r.tensor), Some(i));
                assert_eq!(t.of_tensor(&tr, r.tensor).as_ref(), Some(r));
                assert_eq!(r.name, tr.tensors.at(r.tensor).name);
                let stall: u64 = r
                    .trips
                    .iter()
                    .filter_map(|x| x.back_op)
                    .map(|o| tr.ops.at(o).stall_ns)
                    .sum();
                assert_eq!(r.stall_ns, stall);
                for x in &r.trips {
                    assert_eq!(x.tensor, r.tensor);
                    assert!(x.back_t_ns.is_none_or(|b| b >= x.out_t_ns));
                    assert_eq!(x.back.is_some(), x.back_t_ns.is_some());
                }
            }
            let moved: std::collections::BTreeSet<usize> = t.tensors().collect();
            let still = (0..tr.tensors.len()).find(|i| !moved.contains(i)).unwrap();
            assert_eq!(t.position(still), None);
            assert_eq!(
                t.oscillating(),
                rows.iter().filter(|r| r.oscillating).count()
            );
            // One trip per time a tensor goes out.
            let outs = (0..tr.events.len())
                .filter(|&i| matches!(ledger.part(i), Some(Part::EvictedOut | Part::StreamedOut)))
                .count()
                + ledger
                    .derived_streams
                    .iter()
                    .filter(|d| d.part == Part::StreamedOut)
                    .count();
            assert_eq!(
                rows.iter().map(|r| r.trips.len()).sum::<usize>(),
                outs,
                "{name}"
            );
        }
    }
}

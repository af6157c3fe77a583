//! The round trips an open trace keeps: per tensor that moved, its totals
//! (32 bytes), and every trip as a 16-byte [`Leg`] (its two ends as event
//! indexes); a tensor's row
//! ([`TensorTrips`], with its name, its trips in full and the ops that
//! pushed it out) is made when a view asks for it. Rows held whole cost
//! 41 MB for a 1M-event trace (a 96-byte trip, a name string and two
//! lists per tensor).

use super::roundtrips::{legs, tensor_trips, Implied, Leg, TensorTrips, OSCILLATION_TRIPS};
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
                }),
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

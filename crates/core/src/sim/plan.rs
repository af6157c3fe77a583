//! The `planned` policy's plan: where the whole-schedule solve (the same
//! integer program as the bound, [`super::optimum`]) keeps each tensor. Plain
//! data, so a run's config may carry it; the engine reads it to pick
//! victims and to stream what the plan leaves off chip.

/// Where a solve keeps each tensor: per tensor the program's key steps
/// (production, uses, steps under pressure), ascending, and whether the
/// tensor is on chip there. Tensors the program leaves out (weights, graph
/// inputs, tensors never under pressure) have none: keep them as usual.
///
/// Held flat: a tensor's keys are one range of a single array, a key is
/// its step and the on-chip bit in 4 bytes. A list per tensor of 16-byte
/// pairs cost 34 MB for a 375k-op trace's plan (951k keys), this 6 MB.
/// Read and written as before (`{"keys": [null, [[step, on], ...]]}`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Residency {
    /// Per tensor, where its keys start (one more entry than tensors).
    starts: Vec<u32>,
    /// Bit `t`: the plan has keys for tensor `t` (an empty list counts).
    planned: Vec<u64>,
    /// Each key: its step times two, plus one when the tensor is on chip.
    keys: Vec<u32>,
}

/// A key as held: a graph's steps are its op ids, which fit in 31 bits
/// (ids are `u32`, and no graph in memory has 2^31 ops).
fn key(step: usize, on: bool) -> u32 {
    debug_assert!(step < 1 << 31);
    ((step as u32) << 1) | u32::from(on)
}

fn unkey(k: u32) -> (usize, bool) {
    ((k >> 1) as usize, k & 1 == 1)
}

impl Residency {
    /// A plan from each tensor's keys (`None`: not in the plan).
    pub fn from_keys(keys: Vec<Option<Vec<(usize, bool)>>>) -> Residency {
        let mut b = ResidencyBuilder::new(keys.len());
        for (t, k) in keys.into_iter().enumerate() {
            if let Some(k) = k {
                b.extend(t, k);
            }
        }
        b.finish()
    }

    /// Tensors the plan covers (planned or not).
    pub fn tensors(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// `t`'s keys in step order, or `None` when the plan leaves `t` out.
    pub fn keys(&self, t: usize) -> Option<impl ExactSizeIterator<Item = (usize, bool)> + '_> {
        Some(self.slice(t)?.iter().map(|&k| unkey(k)))
    }

    fn slice(&self, t: usize) -> Option<&[u32]> {
        let on = self
            .planned
            .get(t / 64)
            .is_some_and(|w| w >> (t % 64) & 1 == 1);
        on.then(|| &self.keys[self.starts[t] as usize..self.starts[t + 1] as usize])
    }

    /// Whether the plan has `t` on chip at the first key step at or after
    /// `step` (the next moment its residency matters); `None` when the plan
    /// says nothing about `t` from there on.
    pub fn wanted(&self, t: usize, step: usize) -> Option<bool> {
        let keys = self.slice(t)?;
        let i = keys.partition_point(|&k| unkey(k).0 < step);
        keys.get(i).map(|&k| unkey(k).1)
    }

    /// Whether the plan has `t` on chip at `step` itself, if that is a key step.
    pub fn at(&self, t: usize, step: usize) -> Option<bool> {
        let keys = self.slice(t)?;
        let i = keys.binary_search_by_key(&step, |&k| unkey(k).0).ok()?;
        Some(unkey(keys[i]).1)
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        (self.starts.capacity() + self.keys.capacity()) * 4 + self.planned.capacity() * 8
    }
}

/// A plan assembled a window at a time: each tensor's keys arrive in step
/// order, the tensors interleaved; [`ResidencyBuilder::finish`] groups
/// them (8 bytes a key while solving, where a growing list per tensor
/// held 16 and its slack).
#[derive(Debug, Clone)]
pub struct ResidencyBuilder {
    tensors: usize,
    planned: Vec<u64>,
    /// (tensor, key) in arrival order.
    pairs: Vec<(u32, u32)>,
}

impl ResidencyBuilder {
    pub fn new(tensors: usize) -> ResidencyBuilder {
        ResidencyBuilder {
            tensors,
            planned: vec![0; tensors.div_ceil(64)],
            pairs: Vec::new(),
        }
    }

    /// Appends keys of tensor `t` (after any it already has).
    pub fn extend(&mut self, t: usize, keys: impl IntoIterator<Item = (usize, bool)>) {
        if t >= self.tensors {
            return;
        }
        self.planned[t / 64] |= 1 << (t % 64);
        self.pairs
            .extend(keys.into_iter().map(|(s, on)| (t as u32, key(s, on))));
    }

    /// The plan: keys grouped by tensor, each tensor's in arrival order.
    pub fn finish(self) -> Residency {
        // The pairs' growth room goes first: they and the keys are held
        // together here, at the top of the bound's solve.
        let mut pairs = self.pairs;
        pairs.shrink_to_fit();
        let mut starts = vec![0u32; self.tensors + 1];
        for &(t, _) in &pairs {
            starts[t as usize + 1] += 1;
        }
        for i in 0..self.tensors {
            starts[i + 1] += starts[i];
        }
        let mut next = starts.clone();
        let mut keys = vec![0u32; pairs.len()];
        for (t, k) in pairs {
            let at = &mut next[t as usize];
            keys[*at as usize] = k;
            *at += 1;
        }
        Residency {
            starts,
            planned: self.planned,
            keys,
        }
    }
}

/// The plan as it is written: `{"keys": [null, [[step, on], ...]]}`, one
/// entry per tensor, streamed from the flat form.
impl serde::Serialize for Residency {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use crate::output::SeqOf;
        use serde::ser::SerializeStruct;
        let keys = SeqOf(|| {
            (0..self.tensors()).map(|t| {
                self.slice(t)
                    .map(|k| SeqOf(move || k.iter().map(|&k| unkey(k))))
            })
        });
        let mut st = s.serialize_struct("Residency", 1)?;
        st.serialize_field("keys", &keys)?;
        st.end()
    }
}

/// Reads `{"keys": [null, [[step, on], ...]]}` straight into the flat
/// form, a tensor at a time: the nested lists read whole first cost a
/// 951,386-key plan 38 MB while the viewer opened a cached bound.
impl<'de> serde::Deserialize<'de> for Residency {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Residency, D::Error> {
        use serde::de::{Error, SeqAccess, Visitor};
        #[derive(serde::Deserialize)]
        struct Wire {
            keys: Keys,
        }
        /// The `keys` list, tensor by tensor onto the flat form.
        struct Keys(Residency);
        impl<'de> serde::Deserialize<'de> for Keys {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Keys, D::Error> {
                d.deserialize_seq(KeysVisitor)
            }
        }
        struct KeysVisitor;
        impl<'de> Visitor<'de> for KeysVisitor {
            type Value = Keys;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of each tensor's keys or null")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Keys, A::Error> {
                let mut r = Residency {
                    starts: vec![0],
                    planned: Vec::new(),
                    keys: Vec::new(),
                };
                let mut t = 0usize;
                while let Some(k) = seq.next_element::<Option<Vec<(usize, bool)>>>()? {
                    if t.is_multiple_of(64) {
                        r.planned.push(0);
                    }
                    if let Some(k) = k {
                        if let Some(s) = k.iter().find(|k| k.0 >= 1 << 31) {
                            return Err(A::Error::custom(format!("plan step {} past 2^31", s.0)));
                        }
                        r.planned[t / 64] |= 1 << (t % 64);
                        r.keys.extend(k.into_iter().map(|(s, on)| key(s, on)));
                    }
                    let end = u32::try_from(r.keys.len())
                        .map_err(|_| A::Error::custom("a plan of more than 2^32 keys"))?;
                    r.starts.push(end);
                    t += 1;
                }
                r.starts.shrink_to_fit();
                r.keys.shrink_to_fit();
                Ok(Keys(r))
            }
        }
        Ok(Wire::deserialize(d)?.keys.0)
    }
}

/// One stretch of steps a tensor spends on chip under the plan, and where.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stay {
    pub start: usize,
    pub end: usize,
    pub size: u64,
    pub offset: Option<u64>,
}

/// Where each tensor's stays on chip go: offsets packed ahead of time over
/// the whole schedule, so the tensors the plan keeps fit together where
/// an allocator working one request at a time would fragment the pool.
/// A stay that does not pack below the capacity has no offset and is
/// placed as it comes.
#[derive(Debug, Clone, Default)]
pub struct Placement {
    /// Per tensor, its stays in step order.
    pub stays: Vec<Vec<Stay>>,
}

impl Placement {
    /// The offset of `t`'s stay that covers `step`, if packed.
    pub fn offset(&self, t: usize, step: usize) -> Option<(u64, u64)> {
        let stays = self.stays.get(t)?;
        let i = stays.partition_point(|s| s.end < step);
        let s = stays.get(i).filter(|s| s.start <= step)?;
        Some((s.offset?, s.size))
    }

    /// Builds the stays of every activation from the plan (whole live
    /// intervals for those it leaves out) and packs them: largest first,
    /// each at the lowest offset clear of the stays it overlaps in time
    /// (greedy by size, as TFLite's arena planner).
    pub fn pack(
        plan: &Residency,
        intervals: &[Option<(usize, usize)>],
        sizes: &[u64],
        uses: &[&[usize]],
        capacity: u64,
    ) -> Placement {
        let mut stays = stays_of(plan, intervals, sizes, uses);
        // Greedy packing depends on the order; a few cheap orders, the one
        // that leaves the fewest bytes unplaced wins.
        let items: Vec<Stay> = stays.iter().flatten().copied().collect();
        let by = |key: &dyn Fn(&Stay) -> (u64, u64)| {
            let mut order: Vec<usize> = (0..items.len()).collect();
            order.sort_by_key(|&i| (key(&items[i]), i));
            order
        };
        let span = |s: &Stay| (s.end - s.start + 1) as u64;
        let orders = [
            by(&|s| (u64::MAX - s.size, s.start as u64)),
            by(&|s| (u64::MAX - s.size.saturating_mul(span(s)), 0)),
            by(&|s| (s.start as u64, u64::MAX - s.size)),
            by(&|s| (u64::MAX - span(s), u64::MAX - s.size)),
        ];
        let mut best: Option<(u64, Vec<Option<u64>>)> = None;
        // Large graphs get fewer passes (each is about linear in the stays).
        let rounds = (PACK_WORK / items.len().max(1)).clamp(1, PACK_ROUNDS);
        'search: for first in orders {
            // Items that found no room go first in the next round.
            let mut order = first;
            for _round in 0..rounds {
                for tight in [false, true] {
                    let offsets = pack_in_order(&items, &order, capacity, tight);
                    let unplaced: u64 = items
                        .iter()
                        .zip(&offsets)
                        .filter(|(_, o)| o.is_none())
                        .map(|(s, _)| s.size)
                        .sum();
                    let failed: Vec<usize> = order
                        .iter()
                        .copied()
                        .filter(|&i| offsets[i].is_none())
                        .collect();
                    if best.as_ref().is_none_or(|b| unplaced < b.0) {
                        best = Some((unplaced, offsets));
                    }
                    if unplaced == 0 {
                        break 'search;
                    }
                    if tight {
                        let rest = order.iter().copied().filter(|i| !failed.contains(i));
                        order = failed.iter().copied().chain(rest).collect();
                    }
                }
            }
        }
        if let Some((_, offsets)) = best {
            for (stay, o) in stays.iter_mut().flatten().zip(offsets) {
                stay.offset = o;
            }
        }
        split_unplaced(&mut stays, uses, capacity);
        Placement { stays }
    }
}

/// Each activation's stays on chip under the plan: on from production
/// until the plan says otherwise (where the tensor met no pressure the plan
/// has no key: it stays), and on through its uses; whole live intervals
/// for tensors the plan leaves out.
fn stays_of(
    plan: &Residency,
    intervals: &[Option<(usize, usize)>],
    sizes: &[u64],
    uses: &[&[usize]],
) -> Vec<Vec<Stay>> {
    let mut stays: Vec<Vec<Stay>> = vec![Vec::new(); sizes.len()];
    for (t, iv) in intervals.iter().enumerate() {
        let Some((start, end)) = *iv else { continue };
        let size = sizes[t];
        let mut push = |a: usize, b: usize| {
            stays[t].push(Stay {
                start: a,
                end: b,
                size,
                offset: None,
            })
        };
        match plan.keys(t) {
            None => push(start, end),
            Some(keys) => {
                let used = uses.get(t).copied().unwrap_or(&[]);
                let last_use_before =
                    |s: usize| used[..used.partition_point(|&u| u < s)].last().copied();
                let mut open: Option<usize> = Some(start);
                let mut last_on = start;
                for (s, on) in keys {
                    match (open, on) {
                        (None, true) => {
                            open = Some(s);
                            last_on = s;
                        }
                        (Some(a), false) => {
                            let until = last_use_before(s).unwrap_or(a).max(last_on);
                            if s > a {
                                push(a, until.max(a));
                            }
                            open = None;
                        }
                        (Some(_), true) => last_on = s,
                        (None, false) => {}
                    }
                }
                if let Some(a) = open {
                    push(a, end);
                }
            }
        }
    }
    stays
}

/// A stay that found no room is cut into pieces that do: the longest
/// stretch from its start that packs, then again from its next use after
/// that (it leaves the chip in between and is read back at that use), and
/// so on. What is left over keeps no offset and is placed as it comes.
fn split_unplaced(stays: &mut [Vec<Stay>], uses: &[&[usize]], capacity: u64) {
    let mut placed: Vec<Stay> = stays
        .iter()
        .flatten()
        .filter(|s| s.offset.is_some())
        .copied()
        .collect();
    let mut failed: Vec<(usize, Stay)> = stays
        .iter()
        .enumerate()
        .flat_map(|(t, v)| {
            v.iter()
                .filter(|s| s.offset.is_none())
                .map(move |&s| (t, s))
        })
        .collect();
    failed.sort_by_key(|&(t, s)| (std::cmp::Reverse(s.size), s.start, t));
    for (t, stay) in failed {
        let mut pieces = Vec::new();
        let mut from = Some(stay.start);
        while let Some(a) = from {
            // The longest [a, x] that packs (shorter stretches pack whenever
            // longer ones do, so bisect).
            let fits = |x: usize| lowest_gap(&placed, a, x, stay.size, capacity);
            let mut x = None;
            let (mut lo, mut hi) = (a, stay.end);
            while lo <= hi {
                let mid = lo + (hi - lo) / 2;
                if fits(mid).is_some() {
                    x = Some(mid);
                    lo = mid + 1;
                } else if mid == 0 {
                    break;
                } else {
                    hi = mid - 1;
                }
            }
            let after = x.unwrap_or(a);
            if let Some(x) = x {
                let piece = Stay {
                    start: a,
                    end: x,
                    size: stay.size,
                    offset: fits(x),
                };
                placed.push(piece);
                pieces.push(piece);
            }
            // Back on chip at the next use after this piece.
            let u = uses.get(t).copied().unwrap_or(&[]);
            from = u
                .get(u.partition_point(|&s| s <= after))
                .copied()
                .filter(|&s| s <= stay.end);
        }
        let v = &mut stays[t];
        v.retain(|s| !(s.start == stay.start && s.offset.is_none()));
        v.extend(pieces);
        v.sort_by_key(|s| s.start);
    }
}

/// The lowest offset where `size` bytes are free over steps `[a, b]`.
fn lowest_gap(placed: &[Stay], a: usize, b: usize, size: u64, capacity: u64) -> Option<u64> {
    let taken: Vec<(u64, u64)> = placed
        .iter()
        .filter(|p| p.start <= b && a <= p.end)
        .filter_map(|p| p.offset.map(|o| (o, o + p.size)))
        .collect();
    gaps(taken, capacity)
        .into_iter()
        .find(|&(_, len)| len >= size)
        .map(|(o, _)| o)
}

/// The free stretches `(offset, length)` of `[0, capacity)` around the
/// `taken` ranges `(start, end)`, in address order.
fn gaps(mut taken: Vec<(u64, u64)>, capacity: u64) -> Vec<(u64, u64)> {
    taken.sort_unstable();
    let mut gaps: Vec<(u64, u64)> = Vec::new();
    let mut at = 0u64;
    for (a, b) in taken {
        if a > at {
            gaps.push((at, a - at));
        }
        at = at.max(b);
    }
    if capacity > at {
        gaps.push((at, capacity - at));
    }
    gaps
}

/// Rounds of moving the stays that found no room to the front, per order.
const PACK_ROUNDS: usize = 8;
/// Stays times rounds above which a graph gets fewer rounds.
const PACK_WORK: usize = 400_000;

/// Packs `items` one at a time in `order`, each clear of the placed items
/// it overlaps in time: at the lowest offset, or (`tight`) in the smallest
/// gap that holds it. `None` for an item that fits nowhere below `capacity`.
fn pack_in_order(items: &[Stay], order: &[usize], capacity: u64, tight: bool) -> Vec<Option<u64>> {
    let mut offsets: Vec<Option<u64>> = vec![None; items.len()];
    // Placed items by the stretches of steps they cover, so an item looks
    // only at items near it in time.
    let mut buckets: Vec<Vec<usize>> = Vec::new();
    let mut seen = vec![usize::MAX; items.len()];
    for &i in order {
        let me = items[i];
        let (b0, b1) = (me.start / BUCKET_STEPS, me.end / BUCKET_STEPS);
        let mut taken: Vec<(u64, u64)> = Vec::new();
        for bucket in buckets.iter().take(b1 + 1).skip(b0) {
            for &p in bucket {
                if seen[p] == i {
                    continue;
                }
                seen[p] = i;
                if items[p].start <= me.end && me.start <= items[p].end {
                    if let Some(o) = offsets[p] {
                        taken.push((o, o + items[p].size));
                    }
                }
            }
        }
        let fits = gaps(taken, capacity)
            .into_iter()
            .filter(|&(_, len)| len >= me.size);
        let chosen = if tight {
            fits.min_by_key(|&(o, len)| (len, o))
        } else {
            fits.min_by_key(|&(o, _)| o)
        };
        if let Some((o, _)) = chosen {
            offsets[i] = Some(o);
            if buckets.len() <= b1 {
                buckets.resize_with(b1 + 1, Vec::new);
            }
            for bucket in &mut buckets[b0..=b1] {
                bucket.push(i);
            }
        }
    }
    offsets
}

/// Steps per bucket of the packing's index.
const BUCKET_STEPS: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    /// What a plan says, read the way the nested lists were.
    fn naive_wanted(keys: &[Option<Vec<(usize, bool)>>], t: usize, step: usize) -> Option<bool> {
        let k = keys.get(t)?.as_ref()?;
        k.iter().find(|&&(s, _)| s >= step).map(|&(_, on)| on)
    }

    #[test]
    fn the_flat_plan_reads_writes_and_builds_as_the_nested_lists() {
        let nested = vec![
            Some(vec![(0, true), (1, true), (2, false), (7, true)]),
            None,
            Some(vec![]),
            Some(vec![(3, false), (5, true)]),
        ];
        let plan = Residency::from_keys(nested.clone());
        assert_eq!(plan.tensors(), 4);
        for (t, k) in nested.iter().enumerate() {
            assert_eq!(plan.keys(t).map(|i| i.collect::<Vec<_>>()), k.clone());
            for step in 0..9 {
                assert_eq!(
                    plan.wanted(t, step),
                    naive_wanted(&nested, t, step),
                    "{t} {step}"
                );
                let at = k
                    .as_ref()
                    .and_then(|k| k.iter().find(|x| x.0 == step).map(|x| x.1));
                assert_eq!(plan.at(t, step), at);
            }
        }
        assert_eq!(plan.keys(4).map(|i| i.count()), None);
        // Windows deliver each tensor's keys in order, tensors interleaved.
        let mut b = ResidencyBuilder::new(4);
        b.extend(3, [(3, false)]);
        b.extend(0, [(0, true), (1, true)]);
        b.extend(2, []);
        b.extend(0, [(2, false)]);
        b.extend(3, [(5, true)]);
        b.extend(0, [(7, true)]);
        assert_eq!(b.finish(), plan);
        // Written as the nested lists always were, and read back.
        let json = serde_json::to_value(&plan).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"keys": [[[0, true], [1, true], [2, false], [7, true]], null, [], [[3, false], [5, true]]]})
        );
        let back: Residency = serde_json::from_value(json).unwrap();
        assert_eq!(back, plan);
        assert!(serde_json::from_value::<Residency>(
            serde_json::json!({"keys": [[[4294967296u64, true]]]})
        )
        .is_err());
    }

    proptest::proptest! {
        /// A plan's JSON read back tensor by tensor is the plan built from
        /// the nested lists (past 64 tensors too: several planned words).
        #[test]
        fn a_plan_read_from_text_is_the_plan_of_its_lists(
            nested in proptest::collection::vec(
                proptest::option::of(proptest::collection::vec((0usize..1000, proptest::bool::ANY), 0..4)),
                0..150,
            ),
        ) {
            let plan = Residency::from_keys(nested.clone());
            let text = serde_json::to_string(&serde_json::json!({ "keys": nested, "other": 1 })).unwrap();
            let back: Residency = serde_json::from_str(&text).unwrap();
            proptest::prop_assert_eq!(back, plan);
        }
    }

    #[test]
    fn a_plan_without_its_keys_or_with_a_step_past_2_31_is_refused() {
        assert!(serde_json::from_str::<Residency>("{}").is_err());
        assert!(serde_json::from_str::<Residency>(r#"{"keys": [], "keys": []}"#).is_err());
        assert!(
            serde_json::from_str::<Residency>(r#"{"keys": [null, [[2147483648, true]]]}"#).is_err()
        );
        assert!(
            serde_json::from_str::<Residency>(r#"{"keys": [null, [[2147483647, true]]]}"#).is_ok()
        );
    }

    #[test]
    fn stays_follow_the_plan_and_pack_without_overlap() {
        // Tensor 0 leaves the chip after step 1 and is back at step 3;
        // tensor 1 is not in the plan (on chip over its whole interval).
        let plan = Residency::from_keys(vec![
            Some(vec![(0, true), (1, true), (2, false), (3, true)]),
            None,
        ]);
        let p = Placement::pack(
            &plan,
            &[Some((0, 3)), Some((1, 2))],
            &[64, 64],
            &[&[1, 3], &[2]],
            128,
        );
        let s0: Vec<(usize, usize)> = p.stays[0].iter().map(|s| (s.start, s.end)).collect();
        assert_eq!(s0, vec![(0, 1), (3, 3)]);
        assert!(p.offset(1, 2).is_some());
        // Overlapping stays get disjoint ranges.
        let (a, _) = p.offset(0, 1).unwrap();
        let (b, _) = p.offset(1, 1).unwrap();
        assert!(a + 64 <= b || b + 64 <= a);
        assert_eq!(p.offset(0, 2), None, "off chip at step 2");
        // Nothing packs past the capacity.
        let q = Placement::pack(
            &plan,
            &[Some((0, 3)), Some((1, 2))],
            &[64, 96],
            &[&[1, 3], &[2]],
            128,
        );
        assert!(q.offset(0, 1).is_none() || q.offset(1, 1).is_none());
    }
}

//! The on-chip pool the cores share (`[cores] shared = SIZE`), under a
//! graph split: a tensor read on another core than its producer's lives
//! there, where it fits, instead of crossing through DRAM. Its producer
//! writes it in place and every op that reads it, on any core, reads it in
//! place (at the on-chip rate, no DRAM traffic); it holds its bytes from
//! when a reader could first wait for it until its last reader ends.
//!
//! The lockstep runs cores in about time order, not exactly: a stay is
//! placed by first fit over the offsets of every stay that overlaps it in
//! time (one still waiting for readers overlaps everything after its
//! start), so two tensors never hold the same bytes at once whatever order
//! the cores reach them in, and the trace's replay finds no overlap.

use crate::cost::hardware::SHARED_POOL;
use crate::cost::HardwareProfile;
use crate::graph::{Graph, TensorKind};
use crate::trace::{Event, EventKind, Events, Pool, Trace};

/// One tensor's stay in the shared pool.
#[derive(Debug, Clone)]
pub(crate) struct Stay {
    /// The core that produced it and its tensor there.
    pub core: usize,
    pub local: usize,
    pub bytes: u64,
    pub offset: u64,
    size: u64,
    pub from: u64,
    /// When its last reader ended (`None` while readers are left).
    pub to: Option<u64>,
    /// Reader ops yet to run.
    pending: usize,
    /// The core of the reader that ended last so far (the producer's
    /// before any), and that end.
    last_core: usize,
    latest: u64,
}

/// The pool's stays as the run places them.
#[derive(Debug, Clone)]
pub(crate) struct SharedPool {
    capacity: u64,
    alignment: u64,
    pub stays: Vec<Stay>,
    /// Global tensor id -> its stay.
    pub of: Vec<Option<usize>>,
    /// Reader ops of each global tensor, over every core.
    readers: Vec<usize>,
}

impl SharedPool {
    /// The pool `hw` declares, for a graph of `tensors` global tensors
    /// whose parts' ops read `inputs` (global ids, one per read); `None`
    /// without one.
    pub fn new(
        hw: &HardwareProfile,
        tensors: usize,
        inputs: impl Iterator<Item = usize>,
    ) -> Option<SharedPool> {
        let capacity = hw.cores.shared?.0;
        let mut readers = vec![0usize; tensors];
        for t in inputs {
            if let Some(n) = readers.get_mut(t) {
                *n += 1;
            }
        }
        Some(SharedPool {
            capacity,
            alignment: hw.memory.alignment.max(1),
            stays: Vec::new(),
            of: vec![None; tensors],
            readers,
        })
    }

    /// Places global tensor `global` (tensor `local` of core `core`'s
    /// graph `g`) from `from` on, if it is an activation with readers and
    /// a hole of its size is free over every stay that overlaps it in
    /// time. Returns whether it was placed.
    pub fn place(
        &mut self,
        g: &Graph,
        global: usize,
        core: usize,
        local: usize,
        from: u64,
    ) -> bool {
        let t = &g.tensors.at(local);
        let pending = self.readers.get(global).copied().unwrap_or(0);
        if t.kind != TensorKind::Activation || pending == 0 || self.of[global].is_some() {
            return false;
        }
        let size = t
            .bytes
            .div_ceil(self.alignment)
            .saturating_mul(self.alignment);
        let Some(offset) = self.first_fit(size, from) else {
            return false;
        };
        self.of[global] = Some(self.stays.len());
        self.stays.push(Stay {
            core,
            local,
            bytes: t.bytes,
            offset,
            size,
            from,
            to: None,
            pending,
            last_core: core,
            latest: from,
        });
        true
    }

    /// The lowest offset with `size` bytes free over every stay that
    /// overlaps `[from, ...)` (one ending at `from` counts).
    fn first_fit(&self, size: u64, from: u64) -> Option<u64> {
        let mut busy: Vec<(u64, u64)> = self
            .stays
            .iter()
            .filter(|s| s.to.is_none_or(|to| to >= from))
            .map(|s| (s.offset, s.offset + s.size))
            .collect();
        busy.sort_unstable();
        let mut at = 0u64;
        for (a, b) in busy {
            if a >= at.saturating_add(size) {
                break;
            }
            at = at.max(b);
        }
        (at.saturating_add(size) <= self.capacity).then_some(at)
    }

    /// An op of core `core` read `global` and ended at `end`: the stay
    /// ends with its last reader.
    pub fn read(&mut self, global: usize, core: usize, end: u64) {
        let Some(i) = self.of.get(global).copied().flatten() else {
            return;
        };
        let s = &mut self.stays[i];
        s.pending = s.pending.saturating_sub(1);
        if end >= s.latest {
            s.latest = end;
            s.last_core = core;
        }
        if s.pending == 0 {
            s.to = Some(s.latest);
        }
    }

    /// The pool in the merged trace, each stay's tensor moved into it
    /// (`t0`: where each core's tensors start in the merged trace).
    pub fn write_pool(&self, out: &mut Trace, t0: &[usize]) {
        out.pools.push(Pool {
            name: SHARED_POOL.into(),
            capacity_bytes: self.capacity,
            alignment: self.alignment,
        });
        for s in &self.stays {
            let t = t0[s.core] + s.local;
            if t < out.tensors.len() {
                out.tensors.set_pool(t, SHARED_POOL);
            }
        }
    }

    /// Each stay's `alloc` when it starts and `free` when its last reader
    /// ends (at `latency` for one whose readers never all ran, which a
    /// finished run does not have); `t0`: where each core's tensors start
    /// in the merged trace. Written before the cores' events and with no
    /// op (the pool's, not an op's doing: the thread says which core), so
    /// where times tie the stay is there before any op reads it; no stay
    /// reuses bytes at the instant another frees them.
    pub fn write_events(&self, events: &mut Events, t0: &[usize], latency: u64) {
        for s in &self.stays {
            let tensor = t0[s.core] + s.local;
            let mut alloc = Event::plain(s.from, EventKind::Alloc, tensor, s.bytes, SHARED_POOL);
            alloc.offset = Some(s.offset);
            alloc.thread = Some(s.core as u64);
            alloc.reason = Some("shared".into());
            events.push(alloc);
            let to = s.to.unwrap_or(latency).max(s.from);
            let mut free = Event::plain(to, EventKind::Free, tensor, s.bytes, SHARED_POOL);
            free.offset = Some(s.offset);
            free.thread = Some(s.last_core as u64);
            events.push(free);
        }
    }
}

//! A single-producer single-consumer ring of records living in the ring
//! file's shared memory (`shm.rs`): the producer (the recording thread)
//! writes slots in place and publishes `head`; the consumer (the writer
//! thread, the crash handler, or a later recovery) reads `[tail, head)` and
//! moves `tail` only once those records' lines are in the stream.

use crate::shm::{Mapping, RingShared, RING_HEADER_BYTES};
use crate::Record;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;

/// How many records ahead of the producer its slots are prefetched.
const PREFETCH_AHEAD: usize = 16;

/// This process's handle on one ring.
pub(crate) struct Ring {
    shared: NonNull<RingShared>,
    records: *mut Record,
    mask: usize,
    _map: Mapping,
}

// The producer only writes slots in [tail + cap, head) it owns, the
// consumer only reads [tail, head) published with Release/Acquire.
unsafe impl Sync for Ring {}
unsafe impl Send for Ring {}

impl Ring {
    /// The ring in `map`, whose header `shared` was initialised.
    pub fn new(map: Mapping, shared: NonNull<RingShared>) -> Ring {
        // SAFETY: the header was initialised by `RingFile::add_ring`.
        let mask = unsafe { shared.as_ref() }.meta.0.mask as usize;
        // SAFETY: records follow the 256-byte header inside the mapping.
        let records = unsafe { map.ptr().add(RING_HEADER_BYTES) } as *mut Record;
        Ring {
            shared,
            records,
            mask,
            _map: map,
        }
    }

    #[inline(always)]
    pub fn shared(&self) -> &RingShared {
        // SAFETY: the mapping lives as long as `self`.
        unsafe { self.shared.as_ref() }
    }

    pub fn shared_ptr(&self) -> *mut RingShared {
        self.shared.as_ptr()
    }

    /// Producer side: the free slot at `head` to write in place, or `None`
    /// (counted as dropped) when the ring is full. Nothing is visible to
    /// the consumer until [`Ring::publish`]. Plain straight-line code: the
    /// hot path must not pass a closure's captures through the stack.
    #[inline(always)]
    pub fn reserve(&self) -> Option<(*mut Record, u64)> {
        let s = self.shared();
        let head = s.head.0.load(Ordering::Relaxed);
        // SAFETY: tail_seen is only touched by the producer (this thread).
        let seen = unsafe { &mut *s.tail_seen.0.get() };
        if head.wrapping_sub(*seen) > self.mask as u64 {
            *seen = s.tail.0.load(Ordering::Acquire);
            if head.wrapping_sub(*seen) > self.mask as u64 {
                s.meta.0.dropped.fetch_add(1, Ordering::Relaxed);
                return None;
            }
        }
        // SAFETY: `head & mask` is in bounds (the region holds mask + 1
        // records); slot `head` is not readable by the consumer until
        // `head` is published, and the ring is not full.
        let slot = unsafe { self.records.add(head as usize & self.mask) };
        self.prefetch_for_write(head as usize + PREFETCH_AHEAD);
        Some((slot, head))
    }

    /// Asks for slot `at`'s cache lines in a writable state ahead of time.
    /// The consumer last read them (shared in its cache); without this each
    /// record's first store waits for that ownership transfer, and x86
    /// commits stores in order, so the caller stalls (measured: ~8 ns of a
    /// ~50 ns event on the 2-core VM). A hint only: no architectural write,
    /// so it is harmless on a slot the consumer is still reading.
    #[inline(always)]
    fn prefetch_for_write(&self, at: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            use core::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0};
            // SAFETY: `at & mask` is in bounds; prefetching is a hint with
            // no effect on memory contents, valid for any address.
            unsafe {
                let p = self.records.add(at & self.mask) as *const i8;
                _mm_prefetch::<_MM_HINT_ET0>(p);
                _mm_prefetch::<_MM_HINT_ET0>(p.add(64));
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = at;
    }

    /// Producer side: makes the slot [`Ring::reserve`] gave out readable.
    #[inline(always)]
    pub fn publish(&self, head: u64) {
        self.shared()
            .head
            .0
            .store(head.wrapping_add(1), Ordering::Release);
    }

    /// Records published but not yet committed to the stream.
    pub fn backlog(&self) -> u64 {
        let s = self.shared();
        s.head
            .0
            .load(Ordering::Acquire)
            .wrapping_sub(s.tail.0.load(Ordering::Acquire))
    }
}

/// A consumer's batch: `[from, to)` of one ring.
pub(crate) struct Pending {
    pub from: u64,
    pub to: u64,
    records: *mut Record,
    mask: u64,
}

impl Pending {
    pub fn record(&self, i: u64) -> *const Record {
        // SAFETY: the index is masked into the ring's records.
        unsafe { self.records.add((i & self.mask) as usize) }
    }
}

/// [`Ring::pending_records`] on a ring known only by its shared header
/// (the crash handler and recovery), whose records follow it.
pub(crate) fn pending_records(s: &RingShared, records: *mut Record, max: u64) -> Pending {
    let tail = s.tail.0.load(Ordering::Relaxed);
    let head = s.head.0.load(Ordering::Acquire);
    let mask = s.meta.0.mask;
    // A ring can never hold more than its capacity: a damaged header after
    // a crash must not send the reader around the ring twice.
    let n = head.wrapping_sub(tail).min(mask + 1).min(max);
    Pending {
        from: tail,
        to: tail.wrapping_add(n),
        records,
        mask,
    }
}

/// The records of the ring whose header is at `s`.
pub(crate) fn records_of(s: *mut RingShared) -> *mut Record {
    // SAFETY: records follow the header in the same region.
    unsafe { (s as *mut u8).add(RING_HEADER_BYTES) as *mut Record }
}

//! The ranges every size and time must stay in, and the checked arithmetic
//! that keeps them there.
//!
//! Why these numbers: a graph's tensors may total at most 2^53 bytes
//! (8 PiB), so every size is exact as an `f64` in the cost model and a
//! per-op sum (at most a few times the graph's bytes) cannot wrap a `u64`.
//! Run totals and clocks may reach at most 2^62 (bytes or ns; 2^62 ns is
//! 146 years): each step adds less than 2^56, so a total that is checked
//! against the limit after every op can never wrap before the check sees it.
//! A value that crosses a limit is an error naming what crossed it, never a
//! figure: nothing saturated is ever printed.

/// Most bytes a graph's tensors may hold together (2^53 = 8 PiB).
pub const MAX_GRAPH_BYTES: u64 = 1 << 53;
/// Most bytes a run's total (traffic, SRAM bytes) or a trace's ledger may
/// reach (2^62).
pub const MAX_TOTAL_BYTES: u64 = 1 << 62;
/// Latest time, in ns, any clock may reach (2^62 ns, about 146 years).
pub const MAX_NS: u64 = 1 << 62;

/// How many events (and ops) a live view of a JSONL stream holds by
/// default (`--keep` changes it); older ones fall out into running totals.
/// Sized to the memory budget a view may take on an edge board
/// ([`LIVE_MEMORY_BUDGET`]) at what one held event costs the view with its
/// analyses ([`VIEW_BYTES_PER_EVENT`], measured: docs/memory.md).
pub const LIVE_WINDOW_EVENTS: usize = (LIVE_MEMORY_BUDGET / VIEW_BYTES_PER_EVENT) as usize;
/// The memory a live view's stream window is sized to (256 MiB).
pub const LIVE_MEMORY_BUDGET: u64 = 256 << 20;
/// What one held event costs a view: the event, its share of ops and
/// tensors, the snapshot taken for each refresh and the analyses of it.
pub const VIEW_BYTES_PER_EVENT: u64 = 2048;

/// Memory a graph JSON takes per byte of its file in its heaviest use, the
/// explorer's view of it under pressure (the graph, the run's trace, its
/// analyses and the bound's solve): measured on `gen graph --ops 1000000`
/// (223 MB of JSON) at 160 KiB, which peaked at 1,066 MB, 4.8x; `sim -o`
/// of it 3.1x, `sim` 1.5x, and 2.8x and 1.4x at 10^7 ops (docs/memory.md).
/// Rounded up.
pub const GRAPH_JSON_BYTES_PER_FILE_BYTE: u64 = 5;

/// Memory the exact bound of a trace's run takes per op and tensor of the
/// trace, on top of the trace and its analyses: the graph rebuilt from the
/// trace and the solve. Measured on `gen trace --events 10000000` (3.75
/// million ops, 5.0 million tensors): 503 MB of graph and a 336 MB solve,
/// 96 bytes per op and tensor (docs/memory.md). Rounded up.
pub const BOUND_BYTES_PER_ELEMENT: u64 = 128;

/// Nanoseconds from a computed `f64`, rounded up; a value that is not
/// finite or lies beyond [`MAX_NS`] becomes [`MAX_NS`], which every clock
/// check then reports (so the conversion never saturates silently).
pub fn ns_ceil(x: f64) -> u64 {
    if x.is_nan() || x >= MAX_NS as f64 {
        return MAX_NS;
    }
    // `x` is finite and below 2^62 here, so the cast is exact after ceil.
    x.ceil().max(0.0) as u64
}

/// [`ns_ceil`], rounded to the nearest ns instead.
pub fn ns_round(x: f64) -> u64 {
    if x.is_nan() || x >= MAX_NS as f64 {
        return MAX_NS;
    }
    x.round().max(0.0) as u64
}

/// Whether a clock or a total has crossed its limit.
pub fn past_ns(t: u64) -> bool {
    t >= MAX_NS
}

/// Bytes of `elems` elements of `bits` bits each, rounded up to whole
/// bytes; `None` when it does not fit 64 bits.
pub fn bytes_of_elems(elems: u64, bits: u64) -> Option<u64> {
    let b = (elems as u128).checked_mul(bits as u128)?.div_ceil(8);
    u64::try_from(b).ok()
}

/// Elements of a shape; `None` when the product does not fit 64 bits.
pub fn elems_of(shape: &[u64]) -> Option<u64> {
    shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))
}

/// Human reading of a shape for error messages (`10000000000000x3x224x224`).
pub fn shape_text(shape: &[u64]) -> String {
    shape
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

/// Returns the allocator's free pages to the system. A session's job
/// builds large transient structures (the graph a trace ran, rebuilt for
/// its bound; suggestions' runs) and glibc keeps what they freed mapped,
/// so a viewer on an edge board would hold its peak for good. Elsewhere
/// it does nothing.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap memory to the system; it
    // takes no pointers and is thread-safe in glibc.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Buffers of this size and larger get pages of their own from the
/// system and give them back when freed (see [`return_large_buffers`]).
const OWN_PAGES_FROM: i32 = 256 << 10;

/// Makes every large buffer (a column, a run being parsed, an analysis's
/// table) its own mapping, returned to the system the moment it is freed.
/// glibc raises that threshold each time such a buffer is freed, after
/// which large buffers come from the heap and what they leave behind
/// stays resident: a viewer of a 1M-event trace peaked at 371 MB and
/// settled at 273 MB without this, 355 and 267 MB with it (no slower).
/// Process-wide, so the binary calls it first thing; elsewhere it does
/// nothing.
pub fn return_large_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt sets an allocator parameter; it takes no pointers.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, OWN_PAGES_FROM);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_never_wrap() {
        assert_eq!(ns_ceil(1.2), 2);
        assert_eq!(ns_ceil(-3.0), 0);
        assert_eq!(ns_ceil(f64::INFINITY), MAX_NS);
        assert_eq!(ns_ceil(f64::NAN), MAX_NS);
        assert_eq!(ns_ceil(1e300), MAX_NS);
        assert!(past_ns(ns_round(1e19)));
        assert!(!past_ns(ns_round(1e18)));
    }

    #[test]
    fn sizes_are_checked() {
        assert_eq!(elems_of(&[2, 3, 4]), Some(24));
        assert_eq!(elems_of(&[]), Some(1));
        assert_eq!(elems_of(&[1 << 40, 1 << 40]), None);
        assert_eq!(bytes_of_elems(3, 4), Some(2)); // three int4 values
        assert_eq!(bytes_of_elems(u64::MAX, 8), Some(u64::MAX));
        assert_eq!(bytes_of_elems(u64::MAX, 32), None);
        assert_eq!(shape_text(&[1, 3, 224, 224]), "1x3x224x224");
    }
}

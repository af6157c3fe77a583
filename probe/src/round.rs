//! A consumer's round: every ring's published records become lines in the
//! stream, then the rings' tails move past them. The ring file's header
//! records where the round stands, so a process killed at any instruction
//! leaves a state recovery can finish exactly (no event lost, none twice):
//!
//! 1. `pending_start` = the stream's length, `state` = WRITING; lines are
//!    formatted and appended (in chunks), each ring's `pending` = the end
//!    of its batch.
//! 2. `stream_len` = the new length, `state` = WRITTEN.
//! 3. each ring's `tail` = `pending` (and its reported drops), then
//!    `state` = IDLE.
//!
//! Killed in 1: the stream is cut back to `pending_start` and the batch is
//! read again from the untouched tails. Killed in 2 or 3: the lines are all
//! in; the tails are taken from `pending`.

use crate::line::{dropped_line, line, ClockParams, Resolve, Sink};
use crate::ring::{pending_records, records_of};
use crate::shm::{FileHeader, RingShared, IDLE, WRITING, WRITTEN};
use std::io;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};

/// Where a round's lines go.
pub(crate) trait Stream {
    /// The stream's current length (0 for a pipe).
    fn len(&mut self) -> io::Result<u64>;
    fn write_all(&mut self, b: &[u8]) -> io::Result<()>;
}

impl Stream for std::fs::File {
    fn len(&mut self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
    fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        io::Write::write_all(self, b)
    }
}

/// A fixed buffer in front of a stream: full, it writes through (so the
/// crash handler needs no allocation); the first error sticks.
pub(crate) struct Out<'a, W: Stream> {
    pub buf: &'a mut [u8],
    pub len: usize,
    pub stream: &'a mut W,
    pub written: u64,
    pub err: Option<io::Error>,
}

impl<'a, W: Stream> Out<'a, W> {
    pub fn new(buf: &'a mut [u8], stream: &'a mut W) -> Self {
        Out {
            buf,
            len: 0,
            stream,
            written: 0,
            err: None,
        }
    }

    /// Writes `b` to the stream unless an error already stuck.
    fn write_through(&mut self, b: &[u8]) {
        if self.err.is_none() {
            match self.stream.write_all(b) {
                Ok(()) => self.written += b.len() as u64,
                Err(e) => self.err = Some(e),
            }
        }
    }

    /// Writes the buffer; the first error of the round, if any.
    pub fn flush(&mut self) -> io::Result<()> {
        let len = std::mem::take(&mut self.len);
        // The buffer is borrowed mutably by `self`: move it out for the write.
        let buf = std::mem::take(&mut self.buf);
        self.write_through(&buf[..len]);
        self.buf = buf;
        match self.err.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl<W: Stream> Sink for Out<'_, W> {
    fn put(&mut self, b: &[u8]) {
        if self.len + b.len() > self.buf.len() {
            let len = std::mem::take(&mut self.len);
            let buf = std::mem::take(&mut self.buf);
            self.write_through(&buf[..len]);
            self.buf = buf;
            if b.len() > self.buf.len() {
                self.write_through(b);
                return;
            }
        }
        self.buf[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }
}

/// What a round wrote.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Wrote {
    pub records: u64,
    pub dropped: u64,
}

/// Whether any ring has records or drops the stream has not seen.
fn anything(rings: &[*mut RingShared]) -> bool {
    rings.iter().any(|&s| {
        // SAFETY: the caller passes initialised ring headers.
        let s = unsafe { &*s };
        s.head.0.load(Acquire) != s.tail.0.load(Relaxed)
            || s.meta.0.dropped.load(Relaxed) != s.meta.0.reported.load(Relaxed)
    })
}

/// One round (see the module's steps) over `rings`, at most `max` records
/// from each; a drop count's line is stamped `now` (or, when `None`, with
/// the ring's last record).
///
/// # Safety
/// `rings` are initialised headers of rings whose records follow them, and
/// no other consumer runs a round on them at the same time.
pub(crate) unsafe fn round<W: Stream>(
    hdr: &FileHeader,
    rings: &[*mut RingShared],
    names: &mut impl Resolve,
    clock: &ClockParams,
    out: &mut Out<'_, W>,
    max: u64,
    now: Option<u64>,
) -> io::Result<Wrote> {
    if !anything(rings) {
        return Ok(Wrote::default());
    }
    let start = out.stream.len()?;
    hdr.pending_start.store(start, SeqCst);
    hdr.state.store(WRITING, SeqCst);
    let mut wrote = Wrote::default();
    let base = out.written;
    for &ring in rings {
        // SAFETY: per the function's contract.
        let s = unsafe { &*ring };
        let thread = s.meta.0.thread;
        let batch = pending_records(s, records_of(ring), max);
        for i in batch.from..batch.to {
            // SAFETY: [tail, head) is published and ours until `tail` moves.
            unsafe { line(out, names, clock, batch.record(i), thread) };
        }
        wrote.records += batch.to.wrapping_sub(batch.from);
        s.meta.0.pending.store(batch.to, SeqCst);
        let (d, seen) = (
            s.meta.0.dropped.load(Relaxed),
            s.meta.0.reported.load(Relaxed),
        );
        if d > seen {
            let head = s.head.0.load(Acquire);
            let t = now.unwrap_or_else(|| {
                if head == 0 {
                    return 0;
                }
                let last = batch.record(head.wrapping_sub(1));
                // SAFETY: a published record's time field.
                clock.to_ns(unsafe { std::ptr::addr_of!((*last).t_ns).read() })
            });
            dropped_line(out, t, d - seen, thread);
            wrote.dropped += d - seen;
        }
        s.meta.0.pending_reported.store(d, SeqCst);
    }
    out.flush()?;
    hdr.stream_len.store(start + (out.written - base), SeqCst);
    hdr.state.store(WRITTEN, SeqCst);
    commit(rings);
    hdr.state.store(IDLE, SeqCst);
    Ok(wrote)
}

/// Step 3: every ring's tail and reported drops take their pending values.
pub(crate) fn commit(rings: &[*mut RingShared]) {
    for &ring in rings {
        // SAFETY: initialised ring headers (callers' contract).
        let s = unsafe { &*ring };
        s.tail.0.store(s.meta.0.pending.load(SeqCst), Release);
        s.meta
            .0
            .reported
            .store(s.meta.0.pending_reported.load(SeqCst), SeqCst);
    }
}

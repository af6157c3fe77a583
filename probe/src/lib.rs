//! spill-probe: record on-chip memory events from inside a runtime with
//! negligible overhead, as the spillscope JSONL stream (`docs/jsonl.md`)
//! that `spillscope view --watch` tails and `spillscope import` reads.
//!
//! The seed's lesson: logging with `fprintf` on the allocator's hot path
//! slowed inference by 30 % and distorted what it measured. Here the caller
//! only copies a fixed-size record into its own thread's lock-free ring
//! (single producer, single consumer; no allocation, no lock, no syscall
//! beyond reading the monotonic clock); a background writer drains every
//! ring to the file in whole lines. When a ring is full the event is
//! counted, never blocking the caller, and the count is written into the
//! stream as a `dropped` line, so nothing is lost silently.
//!
//! Names up to 80 bytes (tensors, ops) and 16 bytes (pools) travel inline
//! in the record; longer ones are interned once in a global table (a lock,
//! on their first sighting per thread only) and travel as an id.
//!
//! Use from Rust:
//! ```no_run
//! let probe = spill_probe::Probe::open("run.jsonl").unwrap();
//! spill_probe::op_begin("conv1");
//! spill_probe::alloc("conv1/out", 4096, "sram", Some(0));
//! spill_probe::op_end();
//! let stats = probe.close().unwrap();
//! assert_eq!(stats.dropped, 0);
//! ```
//! and from C through `include/spill_probe.h` (the same functions, prefixed
//! `spill_probe_`).

mod crash;
mod line;
mod recover;
mod ring;
mod round;
mod shm;

pub use recover::{list_rings, peek, recover, recover_ring, Recovered, Recovery, RingInfo};
pub use shm::ring_path;

use foldhash::fast::FixedState;
use ring::Ring;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, CStr};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const NAME_INLINE: usize = 80;
const POOL_INLINE: usize = 16;
const NO_OFFSET: u64 = u64::MAX;
const FLAG_NAME_ID: u8 = 1;
const FLAG_POOL_ID: u8 = 2;
const FLAG_NO_BYTES: u8 = 4;

/// Default ring capacity per thread (records of 128 bytes: 8 MiB).
pub const DEFAULT_RING_RECORDS: usize = 1 << 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    Alloc,
    Free,
    Evict,
    Reload,
    Recompute,
    OpBegin,
    OpEnd,
    Pool,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Alloc => "alloc",
            Kind::Free => "free",
            Kind::Evict => "evict",
            Kind::Reload => "reload",
            Kind::Recompute => "recompute",
            Kind::OpBegin => "op_begin",
            Kind::OpEnd => "op_end",
            Kind::Pool => "pool",
        }
    }
    fn from_u8(v: u8) -> Kind {
        match v {
            0 => Kind::Alloc,
            1 => Kind::Free,
            2 => Kind::Evict,
            3 => Kind::Reload,
            4 => Kind::Recompute,
            5 => Kind::OpBegin,
            6 => Kind::OpEnd,
            _ => Kind::Pool,
        }
    }
}

/// One event as it sits in a ring: fixed size (two cache lines), no
/// pointers. The name comes first so a name of up to 64 bytes is written
/// within one line, with no store straddling two.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Record {
    name: [u8; NAME_INLINE],
    pool: [u8; POOL_INLINE],
    t_ns: u64,
    bytes: u64,
    offset: u64,
    kind: u8,
    name_len: u8,
    pool_len: u8,
    flags: u8,
    _pad: u32,
}

const _: () = assert!(std::mem::size_of::<Record>() == 128);

/// Totals of a session, returned by [`Probe::close`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub written: u64,
    pub dropped: u64,
    pub threads: u32,
}

struct Session {
    generation: u64,
    /// The rings' shared memory: a file beside the stream, or anonymous.
    file: shm::RingFile,
    /// Regions of `file` handed out (changed under the `rings` lock).
    regions: AtomicUsize,
    rings: Mutex<Vec<Arc<Ring>>>,
    next_thread: AtomicU32,
    stop: AtomicBool,
    writer: Mutex<Option<JoinHandle<io::Result<Stats>>>>,
}

impl Session {
    /// A ring for `thread`: the ring file's next region, or (the disk is
    /// full, the file is at its limit) anonymous memory, which records
    /// as well but is lost if the process is killed. Called under the
    /// `rings` lock.
    fn new_ring(&self, thread: u32) -> Option<Ring> {
        let k = self.regions.load(Ordering::Relaxed);
        let in_file = (k < crash::MAX_RINGS)
            .then(|| self.file.add_ring(k, thread).ok())
            .flatten();
        let (map, shared) = match in_file {
            Some(made) => {
                self.regions.store(k + 1, Ordering::Relaxed);
                self.file
                    .header()
                    .n_rings
                    .store(k as u64 + 1, Ordering::Release);
                made
            }
            None => shm::anonymous_ring(self.file.ring_records, thread).ok()?,
        };
        crash::add_ring(shared.as_ptr());
        Some(Ring::new(map, shared))
    }
}

/// Names too long to travel inline, interned once.
#[derive(Default)]
struct Interner {
    ids: HashMap<Box<[u8]>, u32>,
    names: Vec<Box<[u8]>>,
    /// The open session's names area, where every name is also written
    /// for the crash handler and recovery.
    area: Option<NamesArea>,
}

/// A names area's location (valid while its session is open: set at open
/// and cleared at close, both under the interner's lock).
struct NamesArea {
    base: *mut u8,
    end: *const AtomicU64,
}

// Only used under the interner's lock, while the mapping lives.
unsafe impl Send for NamesArea {}

impl NamesArea {
    fn append(&self, id: u32, name: &[u8]) {
        // SAFETY: per the type's invariant, the mapping is alive.
        let end = unsafe { &*self.end };
        shm::Names {
            base: self.base,
            end,
        }
        .append(id, name);
    }
}

static INTERNER: Mutex<Option<Interner>> = Mutex::new(None);
static SESSION: Mutex<Option<Arc<Session>>> = Mutex::new(None);
/// 0 while closed; the open session's number otherwise.
static GENERATION: AtomicU64 = AtomicU64::new(0);
static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1);
static BASE: OnceLock<Instant> = OnceLock::new();

thread_local! {
    /// The hot path's view of this thread's ring: the session number and a
    /// plain pointer. No destructor, so reaching it is a TLS offset with no
    /// lazy-initialisation check; `OWNED` keeps the ring alive and clears
    /// this before letting it go.
    static FAST: Cell<(u64, *const Ring)> = const { Cell::new((0, std::ptr::null())) };
    /// This thread's ring for the session it last recorded in.
    static OWNED: RefCell<Option<RingOwner>> = const { RefCell::new(None) };
}

/// Holds this thread's ring; on drop (thread exit, or a new session)
/// clears `FAST` first so the pointer never outlives the ring.
struct RingOwner {
    _ring: Arc<Ring>,
}

impl Drop for RingOwner {
    fn drop(&mut self) {
        let _ = FAST.try_with(|f| f.set((0, std::ptr::null())));
    }
}

fn now_ns() -> u64 {
    BASE.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// The hot path's clock. On x86-64 with an invariant TSC (constant and
/// non-stop, checked once) it is the raw time-stamp counter, ~3x cheaper
/// than `Instant` on virtual machines; the writer converts ticks to
/// nanoseconds with a rate calibrated against `Instant` when the session
/// opens. Elsewhere it is `Instant` nanoseconds directly.
struct Clock {
    tsc: bool,
    /// Calibration: TSC ticks at `base_ns` (ns since BASE), ns per tick.
    tsc0: u64,
    base_ns: u64,
    ns_per_tick: f64,
}

static CLOCK: OnceLock<Clock> = OnceLock::new();

#[cfg(target_arch = "x86_64")]
fn rdtsc() -> u64 {
    // SAFETY: RDTSC has no preconditions on x86-64.
    unsafe { core::arch::x86_64::_rdtsc() }
}
#[cfg(not(target_arch = "x86_64"))]
fn rdtsc() -> u64 {
    0
}

fn invariant_tsc() -> bool {
    cfg!(target_arch = "x86_64")
        && std::env::var_os("SPILL_PROBE_NO_TSC").is_none()
        && std::fs::read_to_string("/proc/cpuinfo")
            .map(|c| c.contains(" constant_tsc") && c.contains(" nonstop_tsc"))
            .unwrap_or(false)
}

fn clock() -> &'static Clock {
    CLOCK.get_or_init(|| {
        if !invariant_tsc() {
            return Clock {
                tsc: false,
                tsc0: 0,
                base_ns: 0,
                ns_per_tick: 1.0,
            };
        }
        // Calibrate over ~20 ms (once per process).
        let (n0, c0) = (now_ns(), rdtsc());
        std::thread::sleep(Duration::from_millis(20));
        let (n1, c1) = (now_ns(), rdtsc());
        let rate = (n1 - n0) as f64 / (c1.wrapping_sub(c0)).max(1) as f64;
        Clock {
            tsc: rate.is_finite() && rate > 0.0,
            tsc0: c0,
            base_ns: n0,
            ns_per_tick: rate,
        }
    })
}

#[inline]
fn raw_now() -> u64 {
    match CLOCK.get() {
        Some(c) if c.tsc => rdtsc(),
        _ => now_ns(),
    }
}

/// The clock's calibration, as the formatter and the ring file need it.
pub(crate) fn clock_params() -> line::ClockParams {
    let c = clock();
    line::ClockParams {
        tsc: c.tsc,
        tsc0: c.tsc0,
        base_ns: c.base_ns,
        ns_per_tick: c.ns_per_tick,
    }
}

/// A long name's id: from this thread's cache, or (first sighting on this
/// thread) from the global table under its lock. Ids never change (the
/// table outlives sessions), so the cache never goes stale.
fn intern(bytes: &[u8]) -> u32 {
    thread_local! {
        // foldhash: the std SipHash of a 100-byte name cost ~2/3 of a
        // long-name event.
        static SEEN: RefCell<HashMap<Box<[u8]>, u32, FixedState>> =
            const { RefCell::new(HashMap::with_hasher(FixedState::with_seed(0x5eed))) };
    }
    let cached = SEEN
        .try_with(|s| s.try_borrow().ok().and_then(|s| s.get(bytes).copied()))
        .ok()
        .flatten();
    if let Some(id) = cached {
        return id;
    }
    let id = intern_global(bytes);
    let _ = SEEN.try_with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            s.insert(bytes.into(), id);
        }
    });
    id
}

fn intern_global(bytes: &[u8]) -> u32 {
    let mut g = INTERNER.lock().unwrap_or_else(|e| e.into_inner());
    let t = g.get_or_insert_with(Interner::default);
    if let Some(&id) = t.ids.get(bytes) {
        return id;
    }
    let id = t.names.len() as u32;
    t.names.push(bytes.into());
    t.ids.insert(bytes.into(), id);
    if let Some(a) = &t.area {
        a.append(id, bytes);
    }
    id
}

/// Points the interner at a session's names area (or at none), writing
/// every name known so far into it (ids outlive sessions).
fn set_names_area(area: Option<NamesArea>) {
    let mut g = INTERNER.lock().unwrap_or_else(|e| e.into_inner());
    let t = g.get_or_insert_with(Interner::default);
    if let Some(a) = &area {
        for (id, n) in t.names.iter().enumerate() {
            a.append(id as u32, n);
        }
    }
    t.area = area;
}

fn interned(id: u32) -> Vec<u8> {
    let g = INTERNER.lock().unwrap_or_else(|e| e.into_inner());
    g.as_ref()
        .and_then(|t| t.names.get(id as usize))
        .map(|b| b.to_vec())
        .unwrap_or_default()
}

/// The calling thread's ring for session `generation`, registering one on
/// the thread's first event in that session.
#[inline]
fn ring_for(generation: u64) -> Option<&'static Ring> {
    let (g, ring) = FAST.try_with(Cell::get).ok()?;
    if g == generation && !ring.is_null() {
        // SAFETY: `ring` came from the Arc this thread's `OWNED` holds;
        // `RingOwner::drop` nulls `FAST` before that Arc is released, and
        // only this thread replaces it. The reference does not escape the
        // current probe call.
        return Some(unsafe { &*ring });
    }
    register_ring(generation)
}

#[cold]
fn register_ring(generation: u64) -> Option<&'static Ring> {
    let session = SESSION.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let s = session.filter(|s| s.generation == generation)?;
    let thread = s.next_thread.fetch_add(1, Ordering::Relaxed);
    let ring = {
        let mut rings = s.rings.lock().unwrap_or_else(|e| e.into_inner());
        let ring = Arc::new(s.new_ring(thread)?);
        rings.push(ring.clone());
        ring
    };
    let ptr = Arc::as_ptr(&ring);
    OWNED
        .try_with(|o| {
            let mut o = o.try_borrow_mut().ok()?;
            *o = Some(RingOwner { _ring: ring });
            FAST.try_with(|f| f.set((generation, ptr))).ok()
        })
        .ok()??;
    // SAFETY: as in `ring_for`: `OWNED` now holds the Arc behind `ptr`.
    Some(unsafe { &*ptr })
}

/// Records one event. The common case (names that fit inline) is one
/// straight-line function: session check, clock, ring slot, stores.
#[inline(always)]
fn record(kind: Kind, name: &[u8], bytes: Option<u64>, pool: &[u8], offset: Option<u64>) {
    if let Some((generation, t)) = open_and_now() {
        let event = Event {
            kind,
            name,
            bytes,
            pool,
            offset,
        };
        record_at(generation, t, event);
    }
}

/// The open session's number and the clock, or `None` while closed (the
/// one check a closed probe costs).
#[inline(always)]
fn open_and_now() -> Option<(u64, u64)> {
    let generation = GENERATION.load(Ordering::Acquire);
    (generation != 0).then(|| (generation, raw_now()))
}

/// One event as the caller describes it (lives in registers: every
/// function it passes through is inlined).
#[derive(Clone, Copy)]
struct Event<'a> {
    kind: Kind,
    name: &'a [u8],
    bytes: Option<u64>,
    pool: &'a [u8],
    offset: Option<u64>,
}

/// [`record`] from the C ABI: the clock is read first, so the time-stamp
/// counter's latency overlaps measuring the NUL-terminated names.
#[inline(always)]
fn record_c(
    kind: Kind,
    name: *const c_char,
    bytes: Option<u64>,
    pool: *const c_char,
    offset: Option<u64>,
) {
    if let Some((generation, t)) = open_and_now() {
        let (name, pool) = (cbytes(name), cbytes(pool));
        record_at(
            generation,
            t,
            Event {
                kind,
                name,
                bytes,
                pool,
                offset,
            },
        );
    }
}

#[inline(always)]
fn record_at(generation: u64, t: u64, event: Event) {
    if event.name.len() > NAME_INLINE || event.pool.len() > POOL_INLINE {
        return record_interned(generation, t, event);
    }
    emit(generation, t, event, 0);
}

/// A record whose name or pool is too long to travel inline: sent as its
/// interned id (off the common path).
#[cold]
#[inline(never)]
fn record_interned(generation: u64, t: u64, event: Event) {
    let name_id = (event.name.len() > NAME_INLINE).then(|| intern(event.name).to_le_bytes());
    let pool_id = (event.pool.len() > POOL_INLINE).then(|| intern(event.pool).to_le_bytes());
    let id_flags = if name_id.is_some() { FLAG_NAME_ID } else { 0 }
        | if pool_id.is_some() { FLAG_POOL_ID } else { 0 };
    let by_id = Event {
        name: name_id.as_ref().map_or(event.name, |id| &id[..]),
        pool: pool_id.as_ref().map_or(event.pool, |id| &id[..]),
        ..event
    };
    emit(generation, t, by_id, id_flags);
}

/// Writes one record into this thread's ring; `name` and `pool` fit inline
/// (or are ids, said by `id_flags`).
#[inline(always)]
fn emit(generation: u64, t: u64, event: Event, id_flags: u8) {
    let Event {
        kind,
        name,
        bytes,
        pool,
        offset,
    } = event;
    let Some(ring) = ring_for(generation) else {
        return;
    };
    let Some((p, head)) = ring.reserve() else {
        return;
    };
    use std::ptr::addr_of_mut;
    // SAFETY: `p` is this producer's reserved slot; every field is written,
    // the name/pool arrays up to their lengths (<= their sizes, checked by
    // the callers; the reader reads no further).
    unsafe {
        addr_of_mut!((*p).t_ns).write(t);
        addr_of_mut!((*p).bytes).write(bytes.unwrap_or(0));
        addr_of_mut!((*p).offset).write(offset.unwrap_or(NO_OFFSET));
        addr_of_mut!((*p).kind).write(kind as u8);
        addr_of_mut!((*p).name_len).write(name.len() as u8);
        addr_of_mut!((*p).pool_len).write(pool.len() as u8);
        let no_bytes = if bytes.is_none() { FLAG_NO_BYTES } else { 0 };
        addr_of_mut!((*p).flags).write(id_flags | no_bytes);
        copy_short(name, addr_of_mut!((*p).name) as *mut u8);
        copy_short(pool, addr_of_mut!((*p).pool) as *mut u8);
    }
    ring.publish(head);
}

/// Copies a short name without a call into `memcpy`: two overlapping
/// loads and stores of the widest size that fits (the usual small-copy
/// trick), so typical tensor and pool names cost a few instructions.
///
/// # Safety
/// `dst` must be valid for `src.len()` bytes and not overlap `src`.
#[inline(always)]
unsafe fn copy_short(src: &[u8], dst: *mut u8) {
    use std::ptr::{read_unaligned as rd, write_unaligned as wr};
    let (n, s) = (src.len(), src.as_ptr());
    // SAFETY (every branch): reads stay inside `src` (offsets 0 and n-k
    // with k <= n) and writes inside `dst[..n]`.
    unsafe {
        if n >= 32 {
            std::ptr::copy_nonoverlapping(s, dst, n);
        } else if n >= 16 {
            let (a, b) = (rd(s as *const u128), rd(s.add(n - 16) as *const u128));
            wr(dst as *mut u128, a);
            wr(dst.add(n - 16) as *mut u128, b);
        } else if n >= 8 {
            let (a, b) = (rd(s as *const u64), rd(s.add(n - 8) as *const u64));
            wr(dst as *mut u64, a);
            wr(dst.add(n - 8) as *mut u64, b);
        } else if n >= 4 {
            let (a, b) = (rd(s as *const u32), rd(s.add(n - 4) as *const u32));
            wr(dst as *mut u32, a);
            wr(dst.add(n - 4) as *mut u32, b);
        } else {
            for i in 0..n {
                *dst.add(i) = *s.add(i);
            }
        }
    }
}

/// The writer's copy of the interned names it has met, so a long name
/// costs the global table's lock once per writer, not once per line.
#[derive(Default)]
struct InternCache {
    names: Vec<Option<Box<[u8]>>>,
}

impl line::Resolve for InternCache {
    fn resolve(&mut self, id: u32) -> Option<&[u8]> {
        let id = id as usize;
        if self.names.len() <= id {
            self.names.resize(id + 1, None);
        }
        Some(self.names[id].get_or_insert_with(|| interned(id as u32).into_boxed_slice()))
    }
}

/// Records per ring per round: a round's lines stay around a megabyte
/// (the stream sees whole rounds), and no ring starves the others.
const ROUND_RECORDS: u64 = 8192;

/// The background writer: rounds (`round.rs`) over every ring, each
/// written and then committed, so a reader tailing the file sees complete
/// lines (a partial last line only while a write is under way) and a kill
/// at any point leaves the ring file recoverable. Stops after a last
/// empty round once asked to, or for good when a crash handler has taken
/// the rings over.
fn writer(session: Arc<Session>, mut file: File) -> io::Result<Stats> {
    let mut stats = Stats::default();
    let mut buf = vec![0u8; 1 << 20];
    let mut names = InternCache::default();
    let clock = clock_params();
    let mut idle = 0u32;
    loop {
        let stopping = session.stop.load(Ordering::Acquire);
        let rings: Vec<Arc<Ring>> = session
            .rings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let shared: Vec<*mut shm::RingShared> = rings.iter().map(|r| r.shared_ptr()).collect();
        if !crash::writer_enter() {
            // A crash handler is writing through this file's descriptor:
            // it must stay open. What the rings gain after its flush stays
            // in the ring file (kept: this is an error) for recovery.
            std::mem::forget(file);
            return Err(io::Error::other(
                "a crash handler took over the stream; its ring file is kept for recovery",
            ));
        }
        let mut out = round::Out::new(&mut buf, &mut file);
        // SAFETY: the rings are alive (`rings` holds them) and this thread
        // is their only consumer (it holds the owner flag).
        let wrote = unsafe {
            round::round(
                session.file.header(),
                &shared,
                &mut names,
                &clock,
                &mut out,
                ROUND_RECORDS,
                Some(now_ns()),
            )
        };
        crash::writer_leave();
        let wrote = wrote?;
        stats.written += wrote.records;
        stats.dropped += wrote.dropped;
        let n = wrote.records + wrote.dropped;
        if stopping {
            // One more pass after the stop flag: records pushed while the
            // previous pass ran are drained too.
            if n == 0 {
                stats.threads = session.next_thread.load(Ordering::Relaxed);
                file.sync_data().ok();
                return Ok(stats);
            }
            continue;
        }
        if n == 0 {
            idle = (idle + 1).min(10);
            std::thread::sleep(Duration::from_micros(100 << idle.min(4)));
        } else {
            idle = 0;
        }
    }
}

/// Largest ring a thread may ask for (2 GiB of records).
const MAX_RING_RECORDS: usize = 1 << 24;

fn ring_records_from_env() -> io::Result<usize> {
    const VAR: &str = "SPILL_PROBE_RING_RECORDS";
    let Some(v) = std::env::var_os(VAR) else {
        return Ok(DEFAULT_RING_RECORDS);
    };
    v.to_str()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|n| (2..=MAX_RING_RECORDS).contains(n))
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{VAR}={}: expected a number of records per thread from 2 to {MAX_RING_RECORDS}",
                    v.to_string_lossy()
                ),
            )
        })
}

/// An open probe session; closing it (or dropping it) drains and flushes.
pub struct Probe {
    generation: u64,
}

impl Probe {
    /// Opens `path` for appending (created if absent) and starts the writer.
    /// Only one session is open at a time: opening again closes the first.
    /// The session is also drained and flushed at process exit (`exit`,
    /// `std::process::exit`, returning from `main`) if it is still open.
    ///
    /// Ring size: `SPILL_PROBE_RING_RECORDS` records per thread if set
    /// (rounded up to a power of two, 2 to 2^24), else
    /// [`DEFAULT_RING_RECORDS`]; a value that is not such a number is an
    /// error naming the variable.
    pub fn open(path: impl AsRef<Path>) -> io::Result<Probe> {
        Self::open_with(path, ring_records_from_env()?)
    }

    /// As [`Probe::open`], with `ring_records` slots per thread (rounded up
    /// to a power of two, at most 2^24).
    pub fn open_with(path: impl AsRef<Path>, ring_records: usize) -> io::Result<Probe> {
        let ring_records = ring_records.clamp(2, MAX_RING_RECORDS).next_power_of_two();
        let path = path.as_ref();
        let _ = close_current();
        BASE.get_or_init(Instant::now);
        clock();
        recover_before_open(path);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        let rings = ring_file_for(path, &file, ring_records)?;
        let generation = NEXT_GENERATION.fetch_add(1, Ordering::Relaxed);
        set_names_area(Some(NamesArea {
            base: rings.names().base,
            end: &rings.header().names_end,
        }));
        crash::set_session(
            rings.header() as *const shm::FileHeader as *mut shm::FileHeader,
            file.as_raw_fd(),
        );
        crash::install();
        let session = Arc::new(Session {
            generation,
            file: rings,
            regions: AtomicUsize::new(0),
            rings: Mutex::new(Vec::new()),
            next_thread: AtomicU32::new(0),
            stop: AtomicBool::new(false),
            writer: Mutex::new(None),
        });
        let handle = {
            let s = session.clone();
            std::thread::Builder::new()
                .name("spill-probe-writer".into())
                .spawn(move || writer(s, file))?
        };
        *session.writer.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
        *SESSION.lock().unwrap_or_else(|e| e.into_inner()) = Some(session);
        GENERATION.store(generation, Ordering::Release);
        ATEXIT.call_once(|| {
            // SAFETY: registering a plain extern "C" fn with the C runtime.
            unsafe {
                atexit(close_at_exit);
            }
        });
        Ok(Probe { generation })
    }

    /// Stops recording, drains every ring, flushes; returns the totals.
    pub fn close(self) -> io::Result<Stats> {
        let g = self.generation;
        std::mem::forget(self);
        close_generation(g)
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        let _ = close_generation(self.generation);
    }
}

fn close_generation(generation: u64) -> io::Result<Stats> {
    let current = SESSION.lock().unwrap_or_else(|e| e.into_inner()).clone();
    match current {
        Some(s) if s.generation == generation => close_current(),
        _ => Ok(Stats::default()),
    }
}

fn close_current() -> io::Result<Stats> {
    let session = SESSION.lock().unwrap_or_else(|e| e.into_inner()).take();
    let Some(s) = session else {
        return Ok(Stats::default());
    };
    GENERATION.store(0, Ordering::Release);
    s.stop.store(true, Ordering::Release);
    let handle = s.writer.lock().unwrap_or_else(|e| e.into_inner()).take();
    let result = match handle.map(|h| h.join()) {
        Some(Ok(r)) => r,
        Some(Err(_)) => Err(io::Error::other("spill-probe writer panicked")),
        None => Ok(Stats::default()),
    };
    crash::clear_session();
    set_names_area(None);
    // Everything is in the stream: nothing to recover. After an error the
    // ring file stays for `recover`.
    if result.is_ok() {
        s.file.remove();
    }
    result
}

/// Finishes what a killed earlier session left in `path`'s ring file; says
/// so (or why it could not) in one line on stderr, and never stops the
/// new session from opening.
fn recover_before_open(path: &Path) {
    match recover::recover(path) {
        Ok(recover::Recovered::Done(r)) => eprintln!(
            "spill_probe: {}: recovered {} events of process {} that ended without closing",
            path.display(),
            r.events,
            r.pid
        ),
        Ok(_) => {}
        Err(e) => eprintln!("spill_probe: {e}"),
    }
}

/// The session's ring memory: a ring file beside a regular-file stream,
/// else (a pipe, a read-only directory, a live recorder holding the file)
/// anonymous memory, said in one line on stderr.
fn ring_file_for(path: &Path, stream: &File, records: usize) -> io::Result<shm::RingFile> {
    if !stream.metadata()?.is_file() {
        return shm::RingFile::anonymous(records);
    }
    let ring = shm::ring_path(path);
    match shm::RingFile::create(&ring, path, records) {
        Ok(f) => Ok(f),
        Err(e) => {
            eprintln!(
                "spill_probe: {}: {e}; recording without crash recovery",
                ring.display()
            );
            shm::RingFile::anonymous(records)
        }
    }
}

/// Events recorded but not yet written (all threads of the open session).
pub fn backlog() -> usize {
    let session = SESSION.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let Some(s) = session else { return 0 };
    let rings = s.rings.lock().unwrap_or_else(|e| e.into_inner());
    rings.iter().map(|r| r.backlog() as usize).sum()
}

/// Is a session open?
pub fn is_open() -> bool {
    GENERATION.load(Ordering::Relaxed) != 0
}

/// A tensor was placed on chip (`offset` bytes into `pool`, if known).
#[inline]
pub fn alloc(tensor: &str, bytes: u64, pool: &str, offset: Option<u64>) {
    record(
        Kind::Alloc,
        tensor.as_bytes(),
        Some(bytes),
        pool.as_bytes(),
        offset,
    );
}
/// A tensor left the chip for good.
#[inline]
pub fn free(tensor: &str, pool: &str) {
    record(Kind::Free, tensor.as_bytes(), None, pool.as_bytes(), None);
}
/// A tensor was pushed out to DRAM (it will be needed again).
#[inline]
pub fn evict(tensor: &str, bytes: u64, pool: &str, offset: Option<u64>) {
    record(
        Kind::Evict,
        tensor.as_bytes(),
        Some(bytes),
        pool.as_bytes(),
        offset,
    );
}
/// An evicted tensor came back (possibly at another offset).
#[inline]
pub fn reload(tensor: &str, bytes: u64, pool: &str, offset: Option<u64>) {
    record(
        Kind::Reload,
        tensor.as_bytes(),
        Some(bytes),
        pool.as_bytes(),
        offset,
    );
}
/// An evicted tensor was recomputed instead of reloaded.
#[inline]
pub fn recompute(tensor: &str, bytes: u64, pool: &str, offset: Option<u64>) {
    record(
        Kind::Recompute,
        tensor.as_bytes(),
        Some(bytes),
        pool.as_bytes(),
        offset,
    );
}
/// An operator starts on this thread.
#[inline]
pub fn op_begin(name: &str) {
    record(Kind::OpBegin, name.as_bytes(), None, b"", None);
}
/// The innermost open operator of this thread ends.
#[inline]
pub fn op_end() {
    record(Kind::OpEnd, b"", None, b"", None);
}
/// Declares an on-chip pool's size and placement alignment (once, before
/// or after its first event). Without it, a pool's capacity is taken as
/// the most it ever held, so nothing can look full.
pub fn pool(name: &str, capacity_bytes: u64, alignment: u64) {
    declare_pool(name.as_bytes(), capacity_bytes, alignment);
}

/// A pool line (Rust and C): capacity travels as `bytes`, alignment (at
/// least 1) as `offset`.
fn declare_pool(name: &[u8], capacity_bytes: u64, alignment: u64) {
    record(
        Kind::Pool,
        b"",
        Some(capacity_bytes),
        name,
        Some(alignment.max(1)),
    );
}

// ---- C ABI -----------------------------------------------------------

fn cbytes<'a>(p: *const c_char) -> &'a [u8] {
    if p.is_null() {
        return b"";
    }
    // SAFETY: the caller passes a NUL-terminated string (C API contract).
    unsafe { CStr::from_ptr(p) }.to_bytes()
}

fn coffset(offset: i64) -> Option<u64> {
    (offset >= 0).then_some(offset as u64)
}

extern "C" {
    fn atexit(cb: extern "C" fn()) -> c_int;
}

extern "C" fn close_at_exit() {
    let _ = close_current();
}

static ATEXIT: std::sync::Once = std::sync::Once::new();

/// Opens `path` (appending); 0 on success, -1 on error (one line on
/// stderr says why: a C caller has no other way to learn it). The session
/// is flushed at process exit if not closed before.
#[no_mangle]
pub extern "C" fn spill_probe_open(path: *const c_char) -> c_int {
    let p = String::from_utf8_lossy(cbytes(path)).into_owned();
    match Probe::open(&p) {
        Ok(probe) => {
            // The session lives until spill_probe_close or exit.
            std::mem::forget(probe);
            0
        }
        Err(e) => {
            eprintln!("spill_probe_open: {p}: {e}");
            -1
        }
    }
}

/// `offset` < 0 means unknown.
#[no_mangle]
pub extern "C" fn spill_probe_alloc(
    tensor: *const c_char,
    bytes: u64,
    pool: *const c_char,
    offset: i64,
) {
    record_c(Kind::Alloc, tensor, Some(bytes), pool, coffset(offset));
}

#[no_mangle]
pub extern "C" fn spill_probe_free(tensor: *const c_char, pool: *const c_char) {
    record_c(Kind::Free, tensor, None, pool, None);
}

#[no_mangle]
pub extern "C" fn spill_probe_evict(
    tensor: *const c_char,
    bytes: u64,
    pool: *const c_char,
    offset: i64,
) {
    record_c(Kind::Evict, tensor, Some(bytes), pool, coffset(offset));
}

#[no_mangle]
pub extern "C" fn spill_probe_reload(
    tensor: *const c_char,
    bytes: u64,
    pool: *const c_char,
    offset: i64,
) {
    record_c(Kind::Reload, tensor, Some(bytes), pool, coffset(offset));
}

#[no_mangle]
pub extern "C" fn spill_probe_recompute(
    tensor: *const c_char,
    bytes: u64,
    pool: *const c_char,
    offset: i64,
) {
    record_c(Kind::Recompute, tensor, Some(bytes), pool, coffset(offset));
}

#[no_mangle]
pub extern "C" fn spill_probe_op_begin(name: *const c_char) {
    record_c(Kind::OpBegin, name, None, std::ptr::null(), None);
}

#[no_mangle]
pub extern "C" fn spill_probe_pool(pool: *const c_char, capacity_bytes: u64, alignment: u64) {
    declare_pool(cbytes(pool), capacity_bytes, alignment);
}

#[no_mangle]
pub extern "C" fn spill_probe_op_end() {
    record(Kind::OpEnd, b"", None, b"", None);
}

/// Drains, flushes and closes; returns the number of dropped events (or -1
/// on an I/O error).
#[no_mangle]
pub extern "C" fn spill_probe_close() -> i64 {
    match close_current() {
        Ok(s) => s.dropped as i64,
        Err(_) => -1,
    }
}

/// The C declarations of the functions above, in order: the source of
/// `include/spill_probe.h` (a test keeps the file equal to this).
pub const C_DECLARATIONS: &[(&str, &str)] = &[
    ("int spill_probe_open(const char *path);", "Open PATH for appending; 0 on success, -1 on error (said on stderr).\n * Flushed at exit, and on SIGSEGV/SIGBUS/SIGABRT/SIGILL/SIGFPE (then the\n * handler that was installed before this call runs). Rings live in a ring\n * file (/dev/shm or SPILL_PROBE_RING_DIR): after SIGKILL or the OOM killer,\n * the next open of PATH (or `spillscope import PATH`) recovers their events.\n * Ring per thread: SPILL_PROBE_RING_RECORDS (default 65536)."),
    ("void spill_probe_pool(const char *pool, uint64_t capacity_bytes, uint64_t alignment);", "Declare POOL's on-chip capacity and alignment (else: the most it held)."),
    ("void spill_probe_alloc(const char *tensor, uint64_t bytes, const char *pool, int64_t offset);", "TENSOR placed on chip; OFFSET < 0 if unknown."),
    ("void spill_probe_free(const char *tensor, const char *pool);", "TENSOR left the chip for good."),
    ("void spill_probe_evict(const char *tensor, uint64_t bytes, const char *pool, int64_t offset);", "TENSOR pushed out to DRAM (needed again later)."),
    ("void spill_probe_reload(const char *tensor, uint64_t bytes, const char *pool, int64_t offset);", "An evicted TENSOR came back."),
    ("void spill_probe_recompute(const char *tensor, uint64_t bytes, const char *pool, int64_t offset);", "An evicted TENSOR was recomputed instead of reloaded."),
    ("void spill_probe_op_begin(const char *name);", "An operator starts on this thread."),
    ("void spill_probe_op_end(void);", "The innermost open operator of this thread ends."),
    ("int64_t spill_probe_close(void);", "Drain, flush, close; returns the dropped count (-1 on I/O error)."),
];

/// The generated C header.
pub fn c_header() -> String {
    let mut s = String::from(
        "/* spill_probe.h: generated from probe/src/lib.rs (C_DECLARATIONS); do not edit.\n\
         * Records on-chip memory events as the spillscope JSONL stream, off the\n\
         * hot path: each call copies one record into the calling thread's\n\
         * lock-free ring; a background thread writes whole lines. Thread-safe.\n\
         * Link: libspill_probe.a (or .so) and -lpthread -ldl -lm. */\n\
         #ifndef SPILL_PROBE_H\n#define SPILL_PROBE_H\n\n#include <stdint.h>\n\n\
         #ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
    );
    for (decl, doc) in C_DECLARATIONS {
        s += &format!("/* {doc} */\n{decl}\n\n");
    }
    s += "#ifdef __cplusplus\n}\n#endif\n\n#endif /* SPILL_PROBE_H */\n";
    s
}

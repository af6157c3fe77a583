//! The ring file: the session's rings in shared, file-backed memory, so
//! records a killed process never wrote are still there for
//! [`crate::recover`]. It lives in `/dev/shm` (memory-backed: a store costs
//! what it costs on the heap, where a disk-backed mapping measured 36-47 ns
//! an event instead of 22 because the kernel keeps cleaning its pages), as
//! `spill-probe-HASH.ring` with HASH taken from the stream's absolute path
//! (so `import` of the stream finds it), or in `SPILL_PROBE_RING_DIR`, or
//! beside the stream (`STREAM.ring`) where `/dev/shm` is missing. It
//! survives the process (SIGKILL, the OOM killer), not a reboot.
//!
//! Layout (native endianness; the file is read back on the same machine):
//! - `[0, 4 KiB)`: [`FileHeader`]: magic, geometry, the clock's calibration
//!   (raw ticks to ns), and the writer's commit state (see `round.rs`).
//! - `[4 KiB, 4 KiB + 1 MiB)`: the names area: every name too long to travel
//!   inline, as `[id u32][len u32][bytes]`, appended under the interner's
//!   lock, so a record carrying an id can be named after a crash.
//! - then one region per recording thread, `ring_bytes` each: a 256-byte
//!   [`RingShared`] (indices, drop counts) and the records.
//!
//! The file is created with `O_EXCL`, locked (`flock`) for the session's
//! life (a recoverer that cannot take the lock leaves a live session
//! alone; the kernel drops the lock when the process dies, however it
//! dies), its regions reserved with `posix_fallocate` (a full disk is an
//! error at registration, never a SIGBUS on the hot path), and removed on
//! a clean close. Where no file can be made (the stream is a pipe, the
//! directory is read-only) the same layout lives in anonymous memory:
//! recording and the crash handler work, recovery after SIGKILL does not.

use std::cell::UnsafeCell;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) const MAGIC: [u8; 8] = *b"SPLRING1";
pub(crate) const PAGE: usize = 4096;
pub(crate) const HEADER_BYTES: usize = PAGE;
pub(crate) const NAMES_BYTES: usize = 1 << 20;
pub(crate) const RINGS_START: usize = HEADER_BYTES + NAMES_BYTES;
/// Bytes before a ring's first record.
pub(crate) const RING_HEADER_BYTES: usize = 256;
pub(crate) const RECORD_BYTES: usize = 128;

/// The writer is not in a round.
pub(crate) const IDLE: u64 = 0;
/// Lines are being written from `pending_start`; the rings' tails have
/// not moved.
pub(crate) const WRITING: u64 = 1;
/// The round's lines are all in the stream (`stream_len`); the rings'
/// `pending` tails are the truth even where `tail` has not caught up.
pub(crate) const WRITTEN: u64 = 2;

/// The ring file's first page.
#[repr(C)]
pub(crate) struct FileHeader {
    pub magic: [u8; 8],
    pub record_bytes: u64,
    pub ring_records: u64,
    pub ring_bytes: u64,
    pub pid: u64,
    pub clock_tsc: u64,
    pub tsc0: u64,
    pub base_ns: u64,
    pub ns_per_tick_bits: u64,
    pub state: AtomicU64,
    pub pending_start: AtomicU64,
    pub stream_len: AtomicU64,
    /// Rings whose header is initialised (regions `0..n_rings`).
    pub n_rings: AtomicU64,
    /// Bytes used in the names area.
    pub names_end: AtomicU64,
    /// The stream's absolute path (`stream_path_len` bytes).
    pub stream_path_len: u64,
    pub stream_path: [u8; MAX_STREAM_PATH],
}

/// Longest stream path a ring file records.
pub(crate) const MAX_STREAM_PATH: usize = 3072;

const _: () = assert!(std::mem::size_of::<FileHeader>() <= HEADER_BYTES);

/// A value alone on its cache line.
#[repr(C, align(64))]
pub(crate) struct Padded<T>(pub T);

/// A ring's indices and counts, at the start of its region.
#[repr(C)]
pub(crate) struct RingShared {
    /// Next slot the producer writes (only the producer stores it).
    pub head: Padded<AtomicU64>,
    /// The producer's last view of `tail` (producer-only).
    pub tail_seen: Padded<UnsafeCell<u64>>,
    /// Next slot the consumer reads: every record before it is in the
    /// stream (the consumer stores it after the lines are written).
    pub tail: Padded<AtomicU64>,
    pub meta: Padded<RingMeta>,
}

#[repr(C)]
pub(crate) struct RingMeta {
    /// Where `tail` goes when the round in flight commits.
    pub pending: AtomicU64,
    /// Events lost to a full ring (producer-counted).
    pub dropped: AtomicU64,
    /// Drops already reported in the stream, and as of the round in flight.
    pub reported: AtomicU64,
    pub pending_reported: AtomicU64,
    pub mask: u64,
    pub thread: u64,
}

const _: () = assert!(std::mem::size_of::<RingShared>() == RING_HEADER_BYTES);

/// One `mmap`ed range, unmapped on drop.
pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// The mapping is plain memory shared by the threads of one session; every
// access through it goes through the atomics or the ring protocol.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Mapping {
    /// `len` bytes of `fd` from `offset` (page-aligned), or anonymous
    /// zeroed memory when `fd` is `None`.
    pub fn new(fd: Option<i32>, offset: usize, len: usize) -> io::Result<Mapping> {
        let (flags, fd) = match fd {
            Some(fd) => (libc::MAP_SHARED | libc::MAP_POPULATE, fd),
            None => (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1),
        };
        // SAFETY: a fresh mapping; the kernel checks every argument.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                offset as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(p as *mut u8).ok_or_else(|| io::Error::other("mmap gave null"))?;
        Ok(Mapping { ptr, len })
    }

    pub fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the range this value mapped; nothing refers to it once
        // the last owner lets go (rings hold their mapping).
        unsafe {
            libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.len);
        }
    }
}

/// The ring file (or its anonymous stand-in) of one session.
pub(crate) struct RingFile {
    /// `None` for anonymous memory.
    pub fd: Option<OwnedFd>,
    pub path: Option<PathBuf>,
    pub head: Mapping,
    pub ring_records: usize,
}

/// The directory ring files go in: `SPILL_PROBE_RING_DIR`, else
/// `/dev/shm` when it is a directory; `None` means beside the stream.
pub(crate) fn ring_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("SPILL_PROBE_RING_DIR") {
        return Some(PathBuf::from(d));
    }
    let shm = Path::new("/dev/shm");
    shm.is_dir().then(|| shm.to_path_buf())
}

/// The stream's absolute path, symlinks resolved when it exists.
pub(crate) fn absolute(stream: &Path) -> PathBuf {
    stream
        .canonicalize()
        .or_else(|_| std::path::absolute(stream))
        .unwrap_or_else(|_| stream.to_path_buf())
}

/// The ring file of a stream: in [`ring_dir`] named by a hash of its
/// absolute path, or beside it.
pub fn ring_path(stream: &Path) -> PathBuf {
    match ring_dir() {
        Some(dir) => dir.join(format!(
            "spill-probe-{:016x}.ring",
            fnv1a(absolute(stream).as_os_str().as_encoded_bytes())
        )),
        None => beside(stream),
    }
}

/// `STREAM.ring`.
pub(crate) fn beside(stream: &Path) -> PathBuf {
    let mut s = stream.as_os_str().to_owned();
    s.push(".ring");
    PathBuf::from(s)
}

/// FNV-1a, 64 bits: a stable name for a path (not a security boundary:
/// the file is created with O_EXCL and checked by its magic).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Bytes of one ring's region: header and records, whole pages.
pub(crate) fn ring_bytes(records: usize) -> usize {
    (RING_HEADER_BYTES + records * RECORD_BYTES).div_ceil(PAGE) * PAGE
}

impl RingFile {
    /// Creates `path` (which must not exist), locks it and maps its header
    /// and names area.
    pub fn create(path: &Path, stream: &Path, ring_records: usize) -> io::Result<RingFile> {
        let c = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in path"))?;
        // SAFETY: open(2) with a valid C string; O_EXCL never follows or
        // reuses a planted file.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
                0o600,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor this function just opened and owns.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        let made = (|| {
            lock(fd, false)?;
            reserve(fd, 0, RINGS_START)?;
            Mapping::new(Some(fd), 0, RINGS_START)
        })();
        match made {
            Ok(head) => {
                let f = RingFile {
                    fd: Some(owned),
                    path: Some(path.to_path_buf()),
                    head,
                    ring_records,
                };
                f.init_header();
                f.set_stream(stream);
                Ok(f)
            }
            Err(e) => {
                let _ = std::fs::remove_file(path);
                Err(e)
            }
        }
    }

    /// The same layout in anonymous memory (no recovery after a kill).
    pub fn anonymous(ring_records: usize) -> io::Result<RingFile> {
        let f = RingFile {
            fd: None,
            path: None,
            head: Mapping::new(None, 0, RINGS_START)?,
            ring_records,
        };
        f.init_header();
        Ok(f)
    }

    fn init_header(&self) {
        let c = crate::clock_params();
        // SAFETY: the first page of a mapping this value owns, written only
        // while the session is being set up (no other reference exists).
        let h = unsafe { &mut *(self.head.ptr() as *mut FileHeader) };
        h.magic = MAGIC;
        h.record_bytes = RECORD_BYTES as u64;
        h.ring_records = self.ring_records as u64;
        h.ring_bytes = ring_bytes(self.ring_records) as u64;
        h.pid = std::process::id() as u64;
        h.clock_tsc = c.tsc as u64;
        h.tsc0 = c.tsc0;
        h.base_ns = c.base_ns;
        h.ns_per_tick_bits = c.ns_per_tick.to_bits();
    }

    fn set_stream(&self, stream: &Path) {
        let abs = absolute(stream);
        let b = abs.as_os_str().as_encoded_bytes();
        let n = b.len().min(MAX_STREAM_PATH);
        // SAFETY: as in `init_header`: set-up time, no other reference.
        let h = unsafe { &mut *(self.head.ptr() as *mut FileHeader) };
        h.stream_path[..n].copy_from_slice(&b[..n]);
        h.stream_path_len = n as u64;
    }

    pub fn header(&self) -> &FileHeader {
        // SAFETY: as above; shared use goes through the atomics.
        unsafe { &*(self.head.ptr() as *const FileHeader) }
    }

    pub fn names(&self) -> Names<'_> {
        // SAFETY: the names area follows the header inside this mapping.
        Names {
            base: unsafe { self.head.ptr().add(HEADER_BYTES) },
            end: &self.header().names_end,
        }
    }

    /// A new ring's region (`k` = its index), reserved on disk, mapped,
    /// its header initialised.
    pub fn add_ring(&self, k: usize, thread: u32) -> io::Result<(Mapping, NonNull<RingShared>)> {
        let Some(fd) = self.fd.as_ref().map(|f| f.as_raw_fd()) else {
            return anonymous_ring(self.ring_records, thread);
        };
        let bytes = ring_bytes(self.ring_records);
        let offset = RINGS_START + k * bytes;
        reserve(fd, offset, bytes)?;
        make_ring(
            Mapping::new(Some(fd), offset, bytes)?,
            self.ring_records,
            thread,
        )
    }

    /// Removes the file (a clean close: nothing left to recover).
    pub fn remove(&self) {
        if let Some(p) = &self.path {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// A ring in anonymous memory (no file, no recovery).
pub(crate) fn anonymous_ring(
    records: usize,
    thread: u32,
) -> io::Result<(Mapping, NonNull<RingShared>)> {
    make_ring(Mapping::new(None, 0, ring_bytes(records))?, records, thread)
}

/// Initialises the ring header at the start of `map`.
fn make_ring(
    map: Mapping,
    records: usize,
    thread: u32,
) -> io::Result<(Mapping, NonNull<RingShared>)> {
    let shared = map.ptr() as *mut RingShared;
    // SAFETY: the start of a fresh, zeroed, page-aligned region of at
    // least 256 bytes, not yet visible to anyone else.
    unsafe {
        (*shared).meta.0.mask = (records - 1) as u64;
        (*shared).meta.0.thread = thread as u64;
    }
    let shared = NonNull::new(shared).ok_or_else(|| io::Error::other("null ring"))?;
    Ok((map, shared))
}

/// `flock` the whole file, exclusively; `try_only` fails at once when
/// another process holds it.
pub(crate) fn lock(fd: i32, try_only: bool) -> io::Result<()> {
    let op = libc::LOCK_EX | if try_only { libc::LOCK_NB } else { 0 };
    // SAFETY: flock on a descriptor the caller owns.
    if unsafe { libc::flock(fd, op) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reserves `[offset, offset+len)` on disk (so the mapping never faults
/// for want of space).
fn reserve(fd: i32, offset: usize, len: usize) -> io::Result<()> {
    // SAFETY: posix_fallocate on an owned descriptor.
    let r = unsafe { libc::posix_fallocate(fd, offset as libc::off_t, len as libc::off_t) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(())
}

/// The names area of a mapped ring file.
pub(crate) struct Names<'a> {
    pub base: *mut u8,
    pub end: &'a AtomicU64,
}

impl Names<'_> {
    /// Appends `id = name` (the caller holds the interner's lock, so
    /// appends are serial); a full area keeps the name only in memory.
    pub fn append(&self, id: u32, name: &[u8]) {
        let at = self.end.load(Ordering::Relaxed) as usize;
        let need = 8 + name.len();
        if at + need > NAMES_BYTES {
            return;
        }
        // SAFETY: `[at, at+need)` lies inside the names area, past every
        // entry published so far, and only the lock holder writes here.
        unsafe {
            let p = self.base.add(at);
            std::ptr::write_unaligned(p as *mut u32, id);
            std::ptr::write_unaligned(p.add(4) as *mut u32, name.len() as u32);
            std::ptr::copy_nonoverlapping(name.as_ptr(), p.add(8), name.len());
        }
        self.end.store((at + need) as u64, Ordering::Release);
    }

    /// The name of `id`, scanning the area (crash handler and recovery:
    /// no allocation, no lock).
    pub fn find(&self, id: u32) -> Option<&[u8]> {
        let end = (self.end.load(Ordering::Acquire) as usize).min(NAMES_BYTES);
        let mut at = 0;
        while at + 8 <= end {
            // SAFETY: entries before `end` were fully written (Release).
            let (eid, len) = unsafe {
                let p = self.base.add(at);
                (
                    std::ptr::read_unaligned(p as *const u32),
                    std::ptr::read_unaligned(p.add(4) as *const u32) as usize,
                )
            };
            if at + 8 + len > end {
                return None;
            }
            if eid == id {
                // SAFETY: inside the written entry.
                return Some(unsafe { std::slice::from_raw_parts(self.base.add(at + 8), len) });
            }
            at += 8 + len;
        }
        None
    }
}

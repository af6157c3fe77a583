//! A crashing runtime's last events: on SIGSEGV, SIGBUS, SIGABRT, SIGILL
//! and SIGFPE a handler drains every ring into the stream before the
//! process goes, then passes the signal on to whatever handler was there
//! before (the runtime's own, or the default action, which then kills the
//! process as it would have).
//!
//! Async-signal-safe by construction: the handler reads only atomics and
//! the shared mappings, formats into a static buffer (`line.rs` allocates
//! nothing), resolves long names from the ring file's names area (no lock)
//! and writes with `write(2)`. It takes the consumer's role only when the
//! writer thread is between rounds (one atomic owner flag, waited on for
//! at most 200 ms); if the writer never lets go (it is the thread that
//! crashed), the records stay in the ring file for recovery.

use crate::line::{ClockParams, Resolve};
use crate::round::{round, Out, Stream};
use crate::shm::{FileHeader, Names, RingShared, HEADER_BYTES};
use std::cell::UnsafeCell;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU8, AtomicUsize, Ordering};

/// Rings the handler can reach (threads past this record normally and are
/// drained by the writer, but not by the handler).
pub(crate) const MAX_RINGS: usize = 4096;

const FREE: u8 = 0;
const WRITER: u8 = 1;
const CRASH: u8 = 2;
/// Who is the rings' consumer right now.
static OWNER: AtomicU8 = AtomicU8::new(FREE);
static CRASHING: AtomicBool = AtomicBool::new(false);

static HEADER: AtomicPtr<FileHeader> = AtomicPtr::new(std::ptr::null_mut());
static STREAM_FD: AtomicI32 = AtomicI32::new(-1);
static N_RINGS: AtomicUsize = AtomicUsize::new(0);
static RINGS: [AtomicPtr<RingShared>; MAX_RINGS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_RINGS];

/// The handler's line buffer (used only by the thread that won `OWNER`).
struct Buf(UnsafeCell<[u8; 1 << 16]>);
unsafe impl Sync for Buf {}
static BUF: Buf = Buf(UnsafeCell::new([0; 1 << 16]));

const SIGNALS: [libc::c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGABRT,
    libc::SIGILL,
    libc::SIGFPE,
];
struct Old(UnsafeCell<[std::mem::MaybeUninit<libc::sigaction>; 5]>);
unsafe impl Sync for Old {}
static OLD: Old = Old(UnsafeCell::new([std::mem::MaybeUninit::uninit(); 5]));
static INSTALLED: std::sync::Once = std::sync::Once::new();

/// The writer thread asks to run a round; `false` once a crash handler has
/// taken over (the writer then stops for good).
pub(crate) fn writer_enter() -> bool {
    loop {
        match OWNER.compare_exchange(FREE, WRITER, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(CRASH) => return false,
            Err(_) => std::hint::spin_loop(),
        }
    }
}

pub(crate) fn writer_leave() {
    let _ = OWNER.compare_exchange(WRITER, FREE, Ordering::Release, Ordering::Relaxed);
}

/// The open session's header and stream, for the handler.
pub(crate) fn set_session(header: *mut FileHeader, stream_fd: i32) {
    N_RINGS.store(0, Ordering::Release);
    STREAM_FD.store(stream_fd, Ordering::Release);
    HEADER.store(header, Ordering::Release);
}

/// Forgets the session (it is closing: its mappings are about to go).
pub(crate) fn clear_session() {
    HEADER.store(std::ptr::null_mut(), Ordering::Release);
    STREAM_FD.store(-1, Ordering::Release);
    N_RINGS.store(0, Ordering::Release);
}

/// A new ring the handler must drain; `false` past [`MAX_RINGS`].
/// Called under the session's ring lock (one registration at a time).
pub(crate) fn add_ring(s: *mut RingShared) -> bool {
    let n = N_RINGS.load(Ordering::Acquire);
    if n >= MAX_RINGS {
        return false;
    }
    RINGS[n].store(s, Ordering::Release);
    N_RINGS.store(n + 1, Ordering::Release);
    true
}

/// Installs the handlers once per process (unless
/// `SPILL_PROBE_SIGNALS=0`), keeping the previous ones to chain to.
pub(crate) fn install() {
    INSTALLED.call_once(|| {
        if std::env::var_os("SPILL_PROBE_SIGNALS").is_some_and(|v| v == "0") {
            return;
        }
        for (i, &sig) in SIGNALS.iter().enumerate() {
            // SAFETY: sigaction with a zeroed, then filled, struct; the old
            // action is stored before the new one can run (the kernel
            // writes it during the call, and the handler reads it only
            // after it was installed by this same call).
            unsafe {
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = handler as *const () as usize;
                new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut new.sa_mask);
                let old = (*OLD.0.get())[i].as_mut_ptr();
                libc::sigaction(sig, &new, old);
            }
        }
    });
}

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let errno = io::Error::last_os_error().raw_os_error();
    flush();
    if let Some(e) = errno {
        // SAFETY: restoring errno for the interrupted code, as handlers must.
        unsafe { *libc::__errno_location() = e };
    }
    // SAFETY: chaining to the action saved at install time.
    unsafe { chain(sig, info, ctx) };
}

/// Drains every ring into the stream, once per process.
fn flush() {
    if CRASHING.swap(true, Ordering::AcqRel) {
        return;
    }
    let mut waited = 0;
    while OWNER
        .compare_exchange(FREE, CRASH, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        if waited >= 2000 {
            return; // the writer is stuck (or crashed): recovery will do it
        }
        let ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 100_000,
        };
        // SAFETY: nanosleep is async-signal-safe.
        unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
        waited += 1;
    }
    let hdr = HEADER.load(Ordering::Acquire);
    let fd = STREAM_FD.load(Ordering::Acquire);
    if hdr.is_null() || fd < 0 {
        return;
    }
    let n = N_RINGS.load(Ordering::Acquire);
    let mut rings = [std::ptr::null_mut::<RingShared>(); 64];
    // SAFETY: the header maps for the session's life (cleared before it
    // goes); the buffer belongs to the `OWNER` winner, this thread.
    unsafe {
        let hdr = &*hdr;
        let clock = params_of(hdr);
        let mut names = AreaNames(Names {
            base: (hdr as *const FileHeader as *mut u8).add(HEADER_BYTES),
            end: &hdr.names_end,
        });
        let mut stream = FdStream(fd);
        let buf = &mut *BUF.0.get();
        let now = Some(crate::now_ns());
        // The rings in chunks of 64 (no allocation); each chunk a round.
        let mut at = 0;
        while at < n {
            let k = (n - at).min(rings.len());
            for (j, r) in rings.iter_mut().enumerate().take(k) {
                *r = RINGS[at + j].load(Ordering::Acquire);
            }
            let mut out = Out::new(buf, &mut stream);
            let _ = round(
                hdr,
                &rings[..k],
                &mut names,
                &clock,
                &mut out,
                u64::MAX,
                now,
            );
            at += k;
        }
    }
}

/// Passes the signal to the action that was there before.
unsafe fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let Some(i) = SIGNALS.iter().position(|&s| s == sig) else {
        return;
    };
    // SAFETY: written by `install` before this handler could run.
    let old = unsafe { (*OLD.0.get())[i].assume_init_ref() };
    let h = old.sa_sigaction;
    if h == libc::SIG_IGN {
        return;
    }
    if h == libc::SIG_DFL {
        // The default action: put it back and re-raise; the signal is
        // blocked while this handler runs, so it lands as this returns.
        // SAFETY: async-signal-safe calls with valid arguments.
        unsafe {
            libc::sigaction(sig, old, std::ptr::null_mut());
            libc::raise(sig);
        }
        return;
    }
    // SAFETY: the previous handler, called as it was registered.
    unsafe {
        if old.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                std::mem::transmute(h);
            f(sig, info, ctx);
        } else {
            let f: extern "C" fn(libc::c_int) = std::mem::transmute(h);
            f(sig);
        }
    }
}

/// The clock calibration a ring file recorded.
pub(crate) fn params_of(h: &FileHeader) -> ClockParams {
    ClockParams {
        tsc: h.clock_tsc != 0,
        tsc0: h.tsc0,
        base_ns: h.base_ns,
        ns_per_tick: f64::from_bits(h.ns_per_tick_bits),
    }
}

/// Long names from a ring file's names area.
pub(crate) struct AreaNames<'a>(pub Names<'a>);

impl Resolve for AreaNames<'_> {
    fn resolve(&mut self, id: u32) -> Option<&[u8]> {
        self.0.find(id)
    }
}

/// A raw descriptor as a stream (`fstat` and `write`: signal-safe).
struct FdStream(i32);

impl Stream for FdStream {
    fn len(&mut self) -> io::Result<u64> {
        // SAFETY: fstat into a zeroed struct.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::fstat(self.0, &mut st) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(if (st.st_mode & libc::S_IFMT) == libc::S_IFREG {
                st.st_size as u64
            } else {
                0
            })
        }
    }
    fn write_all(&mut self, mut b: &[u8]) -> io::Result<()> {
        while !b.is_empty() {
            // SAFETY: write(2) from a valid slice.
            let n = unsafe { libc::write(self.0, b.as_ptr() as *const libc::c_void, b.len()) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            b = &b[n as usize..];
        }
        Ok(())
    }
}

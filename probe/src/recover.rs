//! Recovery: the events a killed process recorded but never wrote, from
//! its ring file into its stream, in order per thread, none twice (the
//! commit protocol in `round.rs`), then the ring file is removed. Run by
//! the next `spill_probe_open` of the stream, by `spillscope import` and
//! `view --watch` of it, and by `spillscope probe recover RING`.

use crate::crash::{params_of, AreaNames};
use crate::round::{commit, round, Out};
use crate::shm::{
    beside, lock, ring_bytes, ring_path, FileHeader, Mapping, Names, RingShared, HEADER_BYTES,
    MAGIC, RECORD_BYTES, RINGS_START, WRITING, WRITTEN,
};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

/// What [`recover`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovered {
    /// No ring file: the last session closed cleanly (or never ran).
    Nothing,
    /// A live process still records into this stream (it holds the lock).
    InUse { pid: u64 },
    /// A dead session's records, now in the stream.
    Done(Recovery),
}

/// A finished recovery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovery {
    /// Events written to the stream from the rings.
    pub events: u64,
    /// Events the rings had already dropped (reported in `dropped` lines).
    pub dropped: u64,
    /// Recording threads found.
    pub threads: u64,
    /// The process that recorded them.
    pub pid: u64,
    /// Bytes of a half-written round cut from the stream's end (that
    /// round's events were then written again whole).
    pub cut_bytes: u64,
}

/// Recovers `stream`'s ring file if a dead session left one (looked for
/// where a session would put it, and beside the stream).
pub fn recover(stream: &Path) -> io::Result<Recovered> {
    let mut found = Recovered::Nothing;
    let (shared, near) = (ring_path(stream), beside(stream));
    for ring in [Some(shared.clone()), (near != shared).then_some(near)]
        .into_iter()
        .flatten()
    {
        match recover_ring(&ring, Some(stream))? {
            Recovered::Nothing => {}
            r => found = r,
        }
    }
    Ok(found)
}

/// A ring file as [`list_rings`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RingInfo {
    pub ring: PathBuf,
    /// The stream its events belong to.
    pub stream: PathBuf,
    /// The process that recorded it.
    pub pid: u64,
    /// That process still holds it (recording now).
    pub live: bool,
}

/// Ring files in the ring directory (`/dev/shm` or `SPILL_PROBE_RING_DIR`).
pub fn list_rings() -> Vec<RingInfo> {
    let Some(dir) = crate::shm::ring_dir() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<RingInfo> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().map(|n| n.to_string_lossy().into_owned());
            n.is_some_and(|n| n.starts_with("spill-probe-") && n.ends_with(".ring"))
        })
        .filter_map(|p| peek(&p).ok())
        .collect();
    out.sort_by(|a, b| a.ring.cmp(&b.ring));
    out
}

/// A ring file opened for reading and writing, its header checked, and
/// mapped (the header page, or `whole` the whole file); with its size.
/// `None` when there is no such file.
fn open_ring(ring: &Path, whole: bool) -> io::Result<Option<(File, Mapping, usize)>> {
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(ring)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(named(ring, e)),
    };
    let size = file.metadata().map_err(|e| named(ring, e))?.len() as usize;
    if size < RINGS_START {
        return Err(damaged(ring, "shorter than its header"));
    }
    let len = if whole { size } else { HEADER_BYTES };
    let map = Mapping::new(Some(file.as_raw_fd()), 0, len).map_err(|e| named(ring, e))?;
    // SAFETY: at least the header page is mapped.
    let hdr = unsafe { &*(map.ptr() as *const FileHeader) };
    if hdr.magic != MAGIC || hdr.record_bytes != RECORD_BYTES as u64 {
        return Err(damaged(ring, "not a spill-probe ring file"));
    }
    Ok(Some((file, map, size)))
}

/// A ring file's stream, pid and whether it is in use, without changing it.
pub fn peek(ring: &Path) -> io::Result<RingInfo> {
    let (file, map, _) = open_ring(ring, false)?
        .ok_or_else(|| named(ring, io::Error::from(io::ErrorKind::NotFound)))?;
    // SAFETY: checked and mapped by `open_ring`.
    let hdr = unsafe { &*(map.ptr() as *const FileHeader) };
    // Probing the lock takes it when free: it is released as `file` closes.
    let live = lock(file.as_raw_fd(), true).is_err();
    Ok(RingInfo {
        ring: ring.to_path_buf(),
        stream: stream_path(hdr),
        pid: hdr.pid,
        live,
    })
}

/// The stream path a ring file recorded.
fn stream_path(hdr: &FileHeader) -> PathBuf {
    let n = (hdr.stream_path_len as usize).min(hdr.stream_path.len());
    // SAFETY: bytes of an OsStr this process wrote (same platform).
    PathBuf::from(unsafe { std::ffi::OsStr::from_encoded_bytes_unchecked(&hdr.stream_path[..n]) })
}

/// Recovers the ring file `ring` into `stream` (default: the stream it
/// recorded), then removes it.
pub fn recover_ring(ring: &Path, stream: Option<&Path>) -> io::Result<Recovered> {
    let Some((file, map, size)) = open_ring(ring, true)? else {
        return Ok(Recovered::Nothing);
    };
    let fd = file.as_raw_fd();
    // SAFETY: checked by `open_ring`, and the whole file is mapped.
    let hdr = unsafe { &*(map.ptr() as *const FileHeader) };
    if let Err(e) = lock(fd, true) {
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            return Ok(Recovered::InUse { pid: hdr.pid });
        }
        return Err(named(ring, e));
    }
    let records = hdr.ring_records as usize;
    let per = ring_bytes(records);
    if !records.is_power_of_two() || hdr.ring_bytes != per as u64 {
        return Err(damaged(ring, "its ring geometry is inconsistent"));
    }
    let fit = (size - RINGS_START) / per;
    let rings: Vec<*mut RingShared> = (0..(hdr.n_rings.load(Ordering::Acquire) as usize).min(fit))
        // SAFETY: region k lies inside the mapped file.
        .map(|k| unsafe { map.ptr().add(RINGS_START + k * per) } as *mut RingShared)
        // A region whose header was never finished holds nothing.
        .filter(|&s| unsafe { (*s).meta.0.mask } == (records - 1) as u64)
        .collect();
    let recorded = stream_path(hdr);
    let stream = match stream {
        Some(s) => s,
        None if recorded.as_os_str().is_empty() => {
            return Err(damaged(ring, "names no stream (say which with --to)"))
        }
        None => recorded.as_path(),
    };
    let mut out_file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(stream)
        .map_err(|e| named(stream, e))?;
    let mut cut_bytes = 0;
    match hdr.state.load(Ordering::Acquire) {
        WRITING => {
            let start = hdr.pending_start.load(Ordering::Acquire);
            let len = out_file.metadata().map_err(|e| named(stream, e))?.len();
            if len > start && out_file.metadata().is_ok_and(|m| m.is_file()) {
                out_file.set_len(start).map_err(|e| named(stream, e))?;
                cut_bytes = len - start;
            }
        }
        WRITTEN => commit(&rings),
        _ => {}
    }
    let mut names = AreaNames(Names {
        // SAFETY: the names area follows the header in the mapping.
        base: unsafe { map.ptr().add(HEADER_BYTES) },
        end: &hdr.names_end,
    });
    let clock = params_of(hdr);
    let mut buf = vec![0u8; 1 << 20];
    let mut out = Out::new(&mut buf, &mut out_file);
    // SAFETY: the headers are inside the mapping, and the lock makes this
    // the only consumer.
    let wrote = unsafe { round(hdr, &rings, &mut names, &clock, &mut out, u64::MAX, None) }
        .map_err(|e| named(stream, e))?;
    out_file.sync_data().map_err(|e| named(stream, e))?;
    let done = Recovery {
        events: wrote.records,
        dropped: wrote.dropped,
        threads: rings.len() as u64,
        pid: hdr.pid,
        cut_bytes,
    };
    drop(map);
    std::fs::remove_file(ring).map_err(|e| named(ring, e))?;
    Ok(Recovered::Done(done))
}

fn named(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

fn damaged(path: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{}: {why}", path.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::line::Resolve;
    use crate::ring::Ring;
    use crate::round::Out;
    use crate::shm::{RingFile, IDLE};

    struct NoNames;
    impl Resolve for NoNames {
        fn resolve(&mut self, _: u32) -> Option<&[u8]> {
            None
        }
    }

    /// Publishes an alloc of `a{k}` (k bytes).
    fn push(ring: &Ring, k: u64) {
        let (p, head) = ring.reserve().unwrap();
        let name = format!("a{k}");
        // SAFETY: the reserved slot; every field the reader reads is set.
        unsafe {
            let mut r: crate::Record = std::mem::zeroed();
            r.t_ns = k;
            r.bytes = k;
            r.offset = crate::NO_OFFSET;
            r.kind = 0;
            r.name_len = name.len() as u8;
            r.name[..name.len()].copy_from_slice(name.as_bytes());
            r.pool_len = 4;
            r.pool[..4].copy_from_slice(b"sram");
            p.write(r);
        }
        ring.publish(head);
    }

    fn tensors(stream: &Path) -> Vec<String> {
        std::fs::read_to_string(stream)
            .unwrap()
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["tensor"].as_str().unwrap().to_string()
            })
            .collect()
    }

    /// A kill at each step of a round (before it, while writing, after
    /// writing but before the tails moved) is finished exactly: every
    /// record once, in order.
    #[test]
    fn each_commit_state_recovers_exactly() {
        for state in [IDLE, WRITING, WRITTEN] {
            let dir = std::env::temp_dir().join(format!(
                "spill-probe-recover-{}-{state}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let stream = dir.join("s.jsonl");
            let ring_file = dir.join("s.jsonl.ring");
            let f = RingFile::create(&ring_file, &stream, 8).unwrap();
            let (map, shared) = f.add_ring(0, 7).unwrap();
            f.header().n_rings.store(1, Ordering::Release);
            let ring = Ring::new(map, shared);
            for k in 0..5 {
                push(&ring, k);
            }
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&stream)
                .unwrap();
            let clock = crate::line::ClockParams {
                tsc: false,
                tsc0: 0,
                base_ns: 0,
                ns_per_tick: 1.0,
            };
            let rings = [ring.shared_ptr()];
            let mut buf = vec![0u8; 4096];
            let mut one_round = |file: &mut std::fs::File| {
                let mut out = Out::new(&mut buf, file);
                // SAFETY: one live ring, this thread its only consumer.
                unsafe { round(f.header(), &rings, &mut NoNames, &clock, &mut out, 2, None) }
                    .unwrap();
            };
            one_round(&mut file); // a0, a1 written and committed
            let len = file.metadata().unwrap().len();
            let h = f.header();
            let s = ring.shared();
            match state {
                WRITING => {
                    // Killed mid-write: a2 whole, a3 cut short; tails unmoved.
                    one_round(&mut file);
                    let full = std::fs::read(&stream).unwrap();
                    std::fs::write(&stream, &full[..full.len() - 10]).unwrap();
                    s.tail.0.store(2, Ordering::SeqCst);
                    h.pending_start.store(len, Ordering::SeqCst);
                    h.state.store(WRITING, Ordering::SeqCst);
                }
                WRITTEN => {
                    // Killed after writing a2, a3, before the tail moved.
                    one_round(&mut file);
                    s.tail.0.store(2, Ordering::SeqCst);
                    h.state.store(WRITTEN, Ordering::SeqCst);
                }
                _ => {}
            }
            // The process "dies": its descriptor and mappings go, and with
            // them the lock (a mapping holds the open file, so its lock).
            drop(ring);
            drop(f);
            let done = match recover(&stream).unwrap() {
                Recovered::Done(d) => d,
                other => panic!("{state}: {other:?}"),
            };
            let want: Vec<String> = (0..5).map(|k| format!("a{k}")).collect();
            assert_eq!(tensors(&stream), want, "state {state}");
            assert_eq!(done.cut_bytes > 0, state == WRITING, "state {state}");
            assert!(!ring_file.exists());
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

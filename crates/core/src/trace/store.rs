//! The binary trace cache: a large spillscope trace, once read from its
//! JSON, is kept as columns ([`super::columnar`]) in the user's cache
//! directory, so the next open of the same file maps that instead of
//! parsing it again (a 1M-event trace: seconds of JSON, a fraction of a
//! second from the cache; docs/memory.md has the figures).
//!
//! An entry names its source by the source's canonical path (the file name
//! is a hash of it) and holds the source's stamp as it was read: size,
//! modification and change times (ns), inode, and a hash of its first and
//! last 64 KiB. An entry whose stamp differs from the file's now is never
//! used: it is rewritten from the JSON. (An edit that keeps the size, lands
//! in the same tick of the file system's clock as the write before it and
//! leaves both ends alone is the one change a stamp cannot see; hashing the
//! whole source would cost as much as reading it.) The body carries a
//! checksum (XXH3 by stretches, on all cores, checked before a byte is
//! decoded) and the format and version that wrote it. The columns are then
//! read in place from the mapping, not copied ([`crate::cols::Slab`]): a
//! 10M-event entry opens in about 0.2 s instead of 0.9, its 1.2 GB held as
//! the file's clean pages, which the kernel can take back under pressure
//! where a copy on the heap could only be swapped. The references and
//! ranges a JSON trace is checked for are not checked again: an entry is
//! only written of a trace that passed them, and its checksum says these
//! are the bytes written. The pages are let go as they are summed and read
//! again from the page cache when a view touches them. A mapped entry is
//! never written in place while a run reads it (entries are replaced by
//! rename, and trimming unlinks them, which leaves a mapping whole); a
//! user truncating an entry by hand under a running viewer would stop it
//! with SIGBUS, as with any mapped file. A cache never fails a run: a damaged, foreign or stale entry is a
//! miss and is removed; a failed write is skipped. Entries are written to a
//! temporary file and renamed into place (a reader sees a whole entry or
//! none); past the cap the entries used longest ago go.

use super::{columnar, Trace};
use crate::{Error, Result};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The sub-directory of the user's cache directory the entries live in
/// (the result cache leaves it alone).
pub const DIR: &str = "traces";

/// Bumped whenever the layout of an entry changes.
const FORMAT: u32 = 7;

const MAGIC: &[u8; 8] = b"SPLTRACE";

/// Bytes of the source hashed at each end for its stamp.
const HEAD_BYTES: u64 = 64 << 10;

/// Traces smaller than this parse faster than a cache would pay back.
pub const DEFAULT_MIN_BYTES: u64 = 8 << 20;

/// The cache's size cap by default (an entry is about 60 % of its JSON:
/// 187 MiB for a 1M-event trace).
pub const DEFAULT_CAP_BYTES: u64 = 4 << 30;

/// A directory of binary traces.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceStore {
    dir: PathBuf,
    min_bytes: u64,
    cap_bytes: u64,
}

/// What opening a trace through the store did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opened {
    /// Read from the cache.
    Cached,
    /// Read from its JSON, and cached for the next open.
    Stored,
    /// Read from its JSON and not cached (small, its summary recomputed on
    /// reading, or the write failed).
    Parsed,
}

/// What [`TraceStore::lookup`] found.
pub enum Lookup {
    /// The trace, and what its first reader kept beside it, if anything
    /// ([`Pending::keep_with`]).
    Hit(Box<Trace>, Option<Extra>),
    /// Not cached: read the JSON, then [`Pending::keep`] it.
    Miss(Pending),
    /// Too small to be worth a cache: read the JSON, keep nothing (no stamp
    /// is taken).
    Small,
}

/// Bytes a caller kept beside a cached trace (the session's first-frame
/// analyses of it), read in place from the entry, covered by its checksum.
pub struct Extra {
    map: crate::cols::Backing,
    range: std::ops::Range<usize>,
}

impl Extra {
    pub fn bytes(&self) -> &[u8] {
        &self.map[self.range.clone()]
    }
}

impl std::fmt::Debug for Extra {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Extra({} bytes)", self.range.len())
    }
}

/// A trace to keep once it has been read from its JSON.
#[derive(Debug)]
pub struct Pending {
    store: TraceStore,
    source: PathBuf,
    entry: PathBuf,
    stamp: Stamp,
}

impl Pending {
    /// Writes `tr`, read from the source, as its entry, when it is still
    /// true: its summary not recomputed on reading (its note must be said
    /// at every open), and the file unchanged since the stamp was taken.
    pub fn keep(self, tr: &Trace) -> Opened {
        self.keep_with(tr, &[])
    }

    /// [`Pending::keep`], with `extra` kept beside the trace (given back
    /// by the lookup that hits it; a whole number of 8-byte words, as a
    /// [`columnar::Writer`] writes).
    pub fn keep_with(self, tr: &Trace, extra: &[u8]) -> Opened {
        let unchanged = Stamp::of(&self.source).is_ok_and(|s| s == self.stamp);
        if !tr.recomputed.is_empty() || !unchanged {
            return Opened::Parsed;
        }
        match self.store.put(&self.entry, &self.stamp, tr, extra) {
            Ok(()) => {
                self.store.trim(&self.entry);
                Opened::Stored
            }
            Err(_) => Opened::Parsed,
        }
    }
}

/// What identifies the source's contents as it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    size: u64,
    mtime_ns: u64,
    /// The inode's change time: moved by every write and by setting the
    /// modification time back, which no user can set.
    ctime_ns: u64,
    inode: u64,
    ends: [u8; 32],
}

impl Stamp {
    fn of(path: &Path) -> std::io::Result<Stamp> {
        let mut f = File::open(path)?;
        let m = f.metadata()?;
        let mtime_ns = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(u64::MAX, |d| d.as_nanos().min(u64::MAX as u128 - 1) as u64);
        #[cfg(unix)]
        let (inode, ctime_ns) = {
            use std::os::unix::fs::MetadataExt;
            let ns = (m.ctime() as i128) * 1_000_000_000 + m.ctime_nsec() as i128;
            (m.ino(), ns.clamp(0, u64::MAX as i128) as u64)
        };
        #[cfg(not(unix))]
        let (inode, ctime_ns) = (0, 0);
        let size = m.len();
        let mut h = blake3::Hasher::new();
        let mut buf = Vec::with_capacity(HEAD_BYTES as usize);
        for at in [0, size.saturating_sub(HEAD_BYTES)] {
            buf.clear();
            f.seek(SeekFrom::Start(at))?;
            (&mut f).take(HEAD_BYTES).read_to_end(&mut buf)?;
            h.update(&buf);
        }
        Ok(Stamp {
            size,
            mtime_ns,
            ctime_ns,
            inode,
            ends: *h.finalize().as_bytes(),
        })
    }

    fn bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(STAMP_LEN);
        v.extend_from_slice(&self.size.to_le_bytes());
        v.extend_from_slice(&self.mtime_ns.to_le_bytes());
        v.extend_from_slice(&self.ctime_ns.to_le_bytes());
        v.extend_from_slice(&self.inode.to_le_bytes());
        v.extend_from_slice(&self.ends);
        v
    }
}

/// The fixed part of an entry: magic, format, version, the source's
/// stamp, the body's length and checksum.
const VERSION_BYTES: usize = 32;
const STAMP_LEN: usize = 4 * 8 + 32;
const HEAD_LEN: usize = 8 + 4 + 4 + VERSION_BYTES + STAMP_LEN + 8 + 32;

fn version_bytes() -> [u8; VERSION_BYTES] {
    let mut v = [0u8; VERSION_BYTES];
    let s = env!("CARGO_PKG_VERSION").as_bytes();
    let n = s.len().min(VERSION_BYTES);
    v[..n].copy_from_slice(&s[..n]);
    v
}

fn head(stamp: &Stamp, body_len: u64, sum: &[u8; 32]) -> Vec<u8> {
    let mut v = Vec::with_capacity(HEAD_LEN);
    v.extend_from_slice(MAGIC);
    v.extend_from_slice(&FORMAT.to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    v.extend_from_slice(&version_bytes());
    v.extend_from_slice(&stamp.bytes());
    v.extend_from_slice(&body_len.to_le_bytes());
    v.extend_from_slice(sum);
    v
}

/// The checksum is taken over stretches of this many bytes, on all cores.
const SUM_BYTES: usize = 32 << 20;

/// A body's checksum: the XXH3-128 of each stretch of [`SUM_BYTES`]
/// (summed side by side, each released once summed), then of those sums
/// in order, in the head's 32 bytes (the last 16 zero). The same bytes
/// give the same sum on any number of cores.
fn sum(body: &[u8], release: &columnar::Release<'_>) -> [u8; 32] {
    use rayon::prelude::*;
    let parts: Vec<u8> = body
        .par_chunks(SUM_BYTES)
        .enumerate()
        .flat_map_iter(|(i, part)| {
            let s = xxhash_rust::xxh3::xxh3_128(part);
            release(i * SUM_BYTES..i * SUM_BYTES + part.len());
            s.to_le_bytes()
        })
        .collect();
    let mut out = [0u8; 32];
    out[..16].copy_from_slice(&xxhash_rust::xxh3::xxh3_128(&parts).to_le_bytes());
    out
}

/// A body's trace and what was kept beside it: the body ends with the
/// trace's length.
fn split(body: &[u8]) -> Option<(&[u8], &[u8])> {
    let (rest, len) = body.split_at_checked(body.len().checked_sub(8)?)?;
    let len = usize::try_from(u64::from_le_bytes(len.try_into().ok()?)).ok()?;
    let (trace, extra) = rest.split_at_checked(len)?;
    // What follows the trace starts on a word, as columns need.
    (len % 8 == 0 && extra.len() % 8 == 0).then_some((trace, extra))
}

/// Drops `len` bytes of `map` at `at` from this process's resident pages:
/// once read into columns, a mapped entry's bytes only added to the peak
/// (a 10M-event entry is 1.2 GB beside its 1.1 GB of columns). They stay
/// in the page cache, and a later read of them maps them again.
fn drop_pages(map: &memmap2::Mmap, at: usize, len: usize) {
    #[cfg(unix)]
    {
        let len = len.min(map.len().saturating_sub(at));
        // SAFETY: the map is a read-only shared mapping of a file never
        // written in place (entries are replaced by rename), so a page
        // dropped here reads back as the same bytes if it is touched again;
        // nothing is written through it.
        let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, at, len) };
    }
    #[cfg(not(unix))]
    let _ = (map, at, len);
}

impl TraceStore {
    pub fn at(dir: impl Into<PathBuf>) -> TraceStore {
        TraceStore {
            dir: dir.into(),
            min_bytes: DEFAULT_MIN_BYTES,
            cap_bytes: DEFAULT_CAP_BYTES,
        }
    }

    /// Caches traces from this size up (tests cache small ones).
    pub fn with_min_bytes(mut self, bytes: u64) -> TraceStore {
        self.min_bytes = bytes;
        self
    }

    pub fn with_cap(mut self, bytes: u64) -> TraceStore {
        self.cap_bytes = bytes;
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the entry for `source` lives.
    pub fn entry_path(&self, source: &Path) -> PathBuf {
        let canon = std::fs::canonicalize(source).unwrap_or_else(|_| source.to_path_buf());
        let hash = blake3::hash(canon.as_os_str().as_encoded_bytes());
        self.dir.join(format!("{}.trace", &hash.to_hex()[..32]))
    }

    /// The trace at `path` (a spillscope trace's JSON): from the cache when
    /// it holds the file as it is now, else read from the JSON
    /// ([`Trace::load`]) and cached for the next open.
    pub fn open(&self, path: &Path) -> Result<(Trace, Opened)> {
        match self.lookup(path)? {
            Lookup::Hit(tr, _) => Ok((*tr, Opened::Cached)),
            Lookup::Miss(pending) => {
                let tr = Trace::load(path)?;
                let how = pending.keep(&tr);
                Ok((tr, how))
            }
            Lookup::Small => Ok((Trace::load(path)?, Opened::Parsed)),
        }
    }

    /// The cached trace of `path` as it is now, or what keeping it after
    /// the caller has read it takes (the stamp taken before the read): a
    /// caller that shows the trace first keeps it after.
    pub fn lookup(&self, path: &Path) -> Result<Lookup> {
        if crate::input::check_size(path)? < self.min_bytes {
            return Ok(Lookup::Small);
        }
        let stamp = Stamp::of(path).map_err(|e| Error::io(path, e))?;
        let entry = self.entry_path(path);
        if let Some((tr, extra)) = self.get(&entry, &stamp) {
            return Ok(Lookup::Hit(Box::new(tr), extra));
        }
        Ok(Lookup::Miss(Pending {
            store: self.clone(),
            source: path.to_path_buf(),
            entry,
            stamp,
        }))
    }

    /// The entry at `entry` if it is whole, of this format and version, and
    /// of the source as stamped; anything else is removed.
    fn get(&self, entry: &Path, stamp: &Stamp) -> Option<(Trace, Option<Extra>)> {
        let f = File::open(entry).ok()?;
        // SAFETY: the entry is this cache's own file, written once to a
        // temporary name and renamed into place, never written in place; a
        // reader that another process truncated under it could fault, which
        // is why entries are only ever replaced by rename.
        let map = std::sync::Arc::new(unsafe { memmap2::Mmap::map(&f) }.ok()?);
        let release = |r: std::ops::Range<usize>| drop_pages(&map, HEAD_LEN + r.start, r.len());
        let tr = Self::check(&map, stamp, &release).and_then(|body| {
            let (trace, extra) = split(body)?;
            let tr = columnar::decode_mapped(trace, &map, &release).ok()?;
            let at = HEAD_LEN + trace.len();
            let extra = (!extra.is_empty()).then(|| Extra {
                map: map.clone(),
                range: at..at + extra.len(),
            });
            Some((tr, extra))
        });
        match tr {
            // Touched: trimming removes what was used longest ago.
            Some(_) => drop(f.set_modified(std::time::SystemTime::now())),
            None => drop(std::fs::remove_file(entry)),
        }
        tr
    }

    /// The body of `map` when its head matches this format, this version
    /// and `stamp`, and its checksum holds (summed a stretch at a time,
    /// each released once summed).
    fn check<'a>(
        map: &'a [u8],
        stamp: &Stamp,
        release: &columnar::Release<'_>,
    ) -> Option<&'a [u8]> {
        let (h, body) = (map.get(..HEAD_LEN)?, map.get(HEAD_LEN..)?);
        let expect = head(stamp, body.len() as u64, &[0u8; 32]);
        if h[..HEAD_LEN - 32] != expect[..HEAD_LEN - 32] {
            return None;
        }
        (sum(body, release) == h[HEAD_LEN - 32..]).then_some(body)
    }

    /// Writes `tr` as the entry at `entry` (a temporary file renamed into
    /// place).
    fn put(&self, entry: &Path, stamp: &Stamp, tr: &Trace, extra: &[u8]) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".entry")
            .suffix(".tmp")
            .tempfile_in(&self.dir)?;
        let f = tmp.as_file_mut();
        f.write_all(&head(stamp, 0, &[0u8; 32]))?;
        let mut w = columnar::Writer::new(std::io::BufWriter::with_capacity(1 << 20, &mut *f));
        columnar::encode(tr, &mut w)?;
        let trace_len = w.written();
        let mut bw = w.into_inner();
        bw.write_all(extra)?;
        bw.write_all(&trace_len.to_le_bytes())?;
        bw.flush()?;
        drop(bw);
        // Summed as a reader sums it, from the bytes as written (in the
        // page cache by now).
        // SAFETY: the temporary file is this writer's own, not yet renamed
        // into place, and nothing writes it while it is mapped.
        let map = unsafe { memmap2::Mmap::map(&*f) }?;
        let body_len = map.len().saturating_sub(HEAD_LEN) as u64;
        // Each stretch let go once summed: the file's pages are not the
        // writer's to hold beside the trace (a 10M-event entry is 1.2 GB).
        let release = |r: std::ops::Range<usize>| drop_pages(&map, HEAD_LEN + r.start, r.len());
        let sum = sum(map.get(HEAD_LEN..).unwrap_or_default(), &release);
        drop(map);
        f.seek(SeekFrom::Start(0))?;
        f.write_all(&head(stamp, body_len, &sum))?;
        f.flush()?;
        tmp.persist(entry).map_err(|e| e.error)?;
        Ok(())
    }

    /// Past the cap, removes the entries used longest ago (never `keep`,
    /// the one just written) and temporary files a killed run left.
    fn trim(&self, keep: &Path) {
        let Ok(files) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut entries = Vec::new();
        let hour = std::time::Duration::from_secs(3600);
        for f in files.flatten() {
            let (Ok(m), path) = (f.metadata(), f.path()) else {
                continue;
            };
            let used = m.modified().unwrap_or(std::time::UNIX_EPOCH);
            let is_tmp = path.extension().is_some_and(|e| e == "tmp");
            if is_tmp && used.elapsed().is_ok_and(|a| a > hour) {
                let _ = std::fs::remove_file(&path);
            } else if m.is_file() && !is_tmp && path != keep {
                entries.push((path, m.len(), used));
            }
        }
        let kept = std::fs::metadata(keep).map_or(0, |m| m.len());
        let mut total: u64 = kept + entries.iter().map(|e| e.1).sum::<u64>();
        entries.sort_by_key(|e| e.2);
        for (path, size, _) in entries {
            if total <= self.cap_bytes {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                total -= size;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Bound, Counter, Event, EventKind, Unit};
    use std::time::{Duration, SystemTime};

    use crate::trace::sample_path as sample;

    /// A simulator trace with every optional field some op, tensor or
    /// event can carry.
    fn rich() -> Trace {
        let mut tr = Trace::load(&sample("encdec-1mib.lru.json")).unwrap();
        let n = tr.ops.len();
        tr.ops.update_all(|i, o| {
            o.unit = (i % 3 == 0).then(|| Unit(format!("pipe{}", i % 2).into()));
            o.parent = (i % 5 == 4).then(|| i - 1);
            o.self_ns = (i % 4 == 1).then_some(i as u64 * 7);
            o.bound = [None, Some(Bound::Compute), Some(Bound::Memory)][i % 3];
            if i % 6 == 0 {
                o.flops = None;
            }
            if i % 7 == 0 {
                o.streamed = o.inputs.clone();
            }
        });
        tr.tensors.update(0, |t| {
            t.name = "a name past twenty-four bytes, with ünïcode".into()
        });
        let mut e = Event::plain(5, EventKind::StreamIn, 1, 64, "dram-side pool name");
        e.reason = Some("prefetch".into());
        e.thread = Some(3);
        e.op = Some(n - 1);
        tr.events.push(e);
        tr.counters.push(Counter {
            name: "bus".into(),
            unit: "%".into(),
            pool: Some("sram".into()),
            samples: vec![(0, 0.5), (10, 1.0 / 3.0)],
        });
        // The summary as the events now say (the file must agree with them).
        tr.reconcile();
        tr.recomputed.clear();
        tr
    }

    fn round_trip(tr: &Trace) -> Trace {
        let mut w = columnar::Writer::new(Vec::new());
        columnar::encode(tr, &mut w).unwrap();
        columnar::decode(&w.into_inner()).unwrap()
    }

    #[test]
    fn every_field_reads_back_from_the_columns() {
        let tr = rich();
        assert_eq!(round_trip(&tr), tr);
        let empty = tr.clone_header();
        assert_eq!(round_trip(&empty), empty);
    }

    fn store(dir: &Path) -> TraceStore {
        TraceStore::at(dir.join("cache")).with_min_bytes(0)
    }

    fn write(path: &Path, tr: &Trace) {
        std::fs::write(path, tr.to_json()).unwrap();
    }

    /// [`rich`] written in a fresh directory, and a store there that keeps
    /// traces of any size.
    fn rich_in_store() -> (tempfile::TempDir, PathBuf, TraceStore) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.json");
        write(&p, &rich());
        let s = store(dir.path());
        (dir, p, s)
    }

    #[test]
    fn the_second_open_comes_from_the_cache_and_equals_the_json() {
        let (dir, p, s) = rich_in_store();
        let (a, how) = s.open(&p).unwrap();
        assert_eq!(how, Opened::Stored);
        let (b, how) = s.open(&p).unwrap();
        assert_eq!(how, Opened::Cached);
        assert_eq!(a, b);
        assert_eq!(b, Trace::load(&p).unwrap());
        // Read in place from the entry, not copied.
        assert!(b.events.is_mapped() && !a.events.is_mapped());
        // Changed after the read: copied first, the entry untouched.
        let mut c = b.clone();
        c.events.map_tensors(|t| t);
        c.events.map_ops(Some);
        assert!(!c.events.is_mapped() && b.events.is_mapped());
        assert_eq!(c, b);
        drop(b);
        assert_eq!(s.open(&p).unwrap(), (a, Opened::Cached));
        // Below the size threshold nothing is kept.
        let small = TraceStore::at(dir.path().join("other"));
        assert_eq!(small.open(&p).unwrap().1, Opened::Parsed);
        assert!(!small.dir().exists());
    }

    fn set_mtime(path: &Path, t: SystemTime) {
        File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }

    /// Replaces bytes of `path` in place (same size, same inode).
    fn patch(path: &Path, at: u64, bytes: &[u8]) {
        let mut f = File::options().write(true).open(path).unwrap();
        f.seek(SeekFrom::Start(at)).unwrap();
        f.write_all(bytes).unwrap();
    }

    /// The byte offset of `needle` in the file.
    fn find(path: &Path, needle: &str) -> u64 {
        let text = std::fs::read_to_string(path).unwrap();
        text.find(needle).expect("needle in the file") as u64
    }

    /// A simulated trace of a few hundred kilobytes: room for a middle
    /// far from both hashed ends.
    fn big() -> Trace {
        let g = crate::graph::gen::transformer_like(60, 64, 128);
        let hw = crate::cost::HardwareProfile::preset("seed-npu")
            .unwrap()
            .with_capacity(160 * 1024)
            .unwrap();
        crate::sim::simulate(&g, &hw, &crate::sim::SimConfig::default()).unwrap()
    }

    #[test]
    fn an_edit_in_place_of_the_same_size_is_never_served_from_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.json");
        let tr = big();
        write(&p, &tr);
        let s = store(dir.path());
        s.open(&p).unwrap();
        let before = std::fs::metadata(&p).unwrap().modified().unwrap();
        // Past the file system clock's tick, as a person editing later is.
        std::thread::sleep(Duration::from_millis(30));

        // Its head, with the modification time set back as it was.
        let at = find(&p, "\"model\":\"") + 9;
        patch(&p, at, b"X");
        set_mtime(&p, before);
        assert_eq!(std::fs::metadata(&p).unwrap().modified().unwrap(), before);
        let (t, how) = s.open(&p).unwrap();
        assert_eq!(how, Opened::Stored, "a changed head must not be served");
        assert!(t.meta.model.starts_with('X'));
        assert_eq!(s.open(&p).unwrap().1, Opened::Cached);

        // Its middle (an op's time, far from both ends), mtime set back too:
        // the change time still moves.
        std::thread::sleep(Duration::from_millis(30));
        let before = std::fs::metadata(&p).unwrap().modified().unwrap();
        let len = std::fs::metadata(&p).unwrap().len();
        let name = &tr.ops.at(tr.ops.len() / 2).name;
        let at = find(&p, &format!("\"name\":\"{name}\",\"op_type\""));
        assert!(at > HEAD_BYTES && at < len - HEAD_BYTES, "a middle edit");
        let text = std::fs::read_to_string(&p).unwrap();
        let start = at as usize + text[at as usize..].find("\"start_ns\":").unwrap() + 11;
        let old = text.as_bytes()[start];
        let new = if old == b'1' { b'2' } else { b'1' };
        patch(&p, start as u64, &[new]);
        set_mtime(&p, before);
        let (t, how) = s.open(&p).unwrap();
        assert_eq!(how, Opened::Stored, "a changed middle must not be served");
        assert_eq!(t, Trace::load(&p).unwrap());
        assert_ne!(t.ops, tr.ops);
    }

    #[test]
    fn a_damaged_or_foreign_entry_is_a_miss_and_is_replaced() {
        let (_dir, p, s) = rich_in_store();
        s.open(&p).unwrap();
        let entry = s.entry_path(&p);
        let good = std::fs::read(&entry).unwrap();
        type Damage = Box<dyn Fn(&mut Vec<u8>)>;
        let damages: Vec<Damage> = vec![
            // A flipped bit in the body: the checksum.
            Box::new(|b| {
                let i = b.len() / 2;
                b[i] ^= 1
            }),
            // Cut short.
            Box::new(|b| b.truncate(b.len() - 100)),
            Box::new(|b| b.truncate(10)),
            // Another format.
            Box::new(|b| b[8] = b[8].wrapping_add(1)),
            // Another version.
            Box::new(|b| b[16] = b'9'),
            Box::new(|b| b.clear()),
        ];
        for d in damages {
            let mut bad = good.clone();
            d(&mut bad);
            std::fs::write(&entry, &bad).unwrap();
            let (t, how) = s.open(&p).unwrap();
            assert_eq!(how, Opened::Stored);
            assert_eq!(t, Trace::load(&p).unwrap());
            assert_eq!(std::fs::read(&entry).unwrap().len(), good.len());
        }
    }

    #[test]
    fn what_a_reader_kept_beside_a_trace_comes_back_with_it() {
        let (_dir, p, s) = rich_in_store();
        let tr = Trace::load(&p).unwrap();
        let extra: Vec<u8> = (0..64u8).collect();
        let Lookup::Miss(pending) = s.lookup(&p).unwrap() else {
            panic!("nothing cached yet")
        };
        assert_eq!(pending.keep_with(&tr, &extra), Opened::Stored);
        match s.lookup(&p).unwrap() {
            Lookup::Hit(t, Some(e)) => {
                assert_eq!(*t, tr);
                assert_eq!(e.bytes(), &extra[..]);
            }
            _ => panic!("a hit with what was kept"),
        }
        // Kept without: none comes back.
        std::fs::remove_file(s.entry_path(&p)).unwrap();
        s.open(&p).unwrap();
        assert!(matches!(s.lookup(&p).unwrap(), Lookup::Hit(_, None)));
        // A trace length past the body (checksum made to hold): a miss.
        let entry = s.entry_path(&p);
        let mut b = std::fs::read(&entry).unwrap();
        let n = b.len();
        b[n - 8..].copy_from_slice(&(n as u64).to_le_bytes());
        let sum = sum(&b[HEAD_LEN..], &|_| ());
        b[HEAD_LEN - 32..HEAD_LEN].copy_from_slice(&sum);
        std::fs::write(&entry, &b).unwrap();
        assert!(matches!(s.lookup(&p).unwrap(), Lookup::Miss(_)));
    }

    #[test]
    fn a_trace_whose_summary_was_recomputed_is_not_cached() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.json");
        let mut tr = rich();
        tr.summary.traffic.traffic_bytes += 1;
        std::fs::write(&p, serde_json::to_string(&tr).unwrap()).unwrap();
        let s = store(dir.path());
        let (t, how) = s.open(&p).unwrap();
        assert_eq!(how, Opened::Parsed);
        assert!(t.recomputed_note().is_some());
    }

    #[test]
    fn past_the_cap_the_entries_used_longest_ago_go() {
        let dir = tempfile::tempdir().unwrap();
        let tr = rich();
        let paths: Vec<PathBuf> = (0..3)
            .map(|i| dir.path().join(format!("t{i}.json")))
            .collect();
        let probe = store(dir.path());
        for p in &paths {
            write(p, &tr);
        }
        probe.open(&paths[0]).unwrap();
        let one = std::fs::metadata(probe.entry_path(&paths[0]))
            .unwrap()
            .len();
        let s = probe.with_cap(one * 2 + one / 2);
        let old = SystemTime::now() - Duration::from_secs(60);
        set_mtime(&s.entry_path(&paths[0]), old);
        s.open(&paths[1]).unwrap();
        s.open(&paths[2]).unwrap();
        assert!(!s.entry_path(&paths[0]).exists(), "the oldest went");
        assert!(s.entry_path(&paths[1]).exists() && s.entry_path(&paths[2]).exists());
    }
}

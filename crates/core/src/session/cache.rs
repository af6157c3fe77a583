//! The result cache: bounds with their plans, slow runs and suggestions,
//! on disk in the user's cache directory, keyed by the content of every
//! input that decides them (the graph as it ran, the hardware profile, the
//! resolved config with its calibration and plan, the policy, the budget,
//! this version), so `sim`, then `view`, then `report` of the same spec
//! solve once, and a changed input can never be served a stale entry.
//!
//! Keys are BLAKE3 hashes of the inputs' JSON (blake3: fast, well kept,
//! and stable across platforms, unlike the standard library's hasher). An
//! entry is one JSON file `KIND/HASH.json` that repeats its key; it is
//! written to a temporary file and renamed into place, so a reader sees a
//! whole entry or none and concurrent writers of one key both leave a valid
//! file. The directory is capped ([`DEFAULT_CAP_BYTES`]): past the cap, the
//! entries used longest ago go. A cache never fails a run: an unreadable or
//! mismatched entry is a miss, a failed write is skipped.

use crate::cost::HardwareProfile;
use crate::graph::Graph;
use crate::sim::SimConfig;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The cache's size cap by default.
pub const DEFAULT_CAP_BYTES: u64 = 512 << 20;

/// Bumped whenever what an entry holds changes meaning.
const FORMAT: u32 = 1;

/// A cache directory.
#[derive(Debug, Clone, PartialEq)]
pub struct Cache {
    dir: PathBuf,
    cap_bytes: u64,
}

/// What identifies one entry: its kind and the hash of its inputs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    kind: &'static str,
    hex: String,
}

impl Key {
    pub fn kind(&self) -> &'static str {
        self.kind
    }
    pub fn hex(&self) -> &str {
        &self.hex
    }
}

/// Builds a [`Key`] from the inputs, each under its name.
pub struct KeyBuilder {
    kind: &'static str,
    hasher: blake3::Hasher,
}

impl KeyBuilder {
    pub fn new(kind: &'static str) -> KeyBuilder {
        let mut k = KeyBuilder {
            kind,
            hasher: blake3::Hasher::new(),
        };
        k.part("format", &FORMAT);
        k.part("version", &env!("CARGO_PKG_VERSION"));
        k.part("kind", &kind);
        k
    }

    /// Adds `value` (as its JSON) under `name`.
    pub fn part(&mut self, name: &str, value: &impl Serialize) -> &mut Self {
        self.hasher.update(name.as_bytes());
        self.hasher.update(b"=");
        // Serialised through a 64 KiB buffer into the hasher: nothing
        // held per byte, and the hasher fed whole blocks (fed each small
        // write, hashing was a quarter of simulating a 10^6-op graph). A
        // type that cannot serialise hashes as its name alone.
        {
            let mut w = std::io::BufWriter::with_capacity(1 << 16, &mut self.hasher);
            let _ = serde_json::to_writer(&mut w, value);
            let _ = std::io::Write::flush(&mut w);
        }
        self.hasher.update(b";");
        self
    }

    /// Adds a graph: every tensor and op as the simulator sees them.
    pub fn graph(&mut self, g: &Graph) -> &mut Self {
        self.part("graph", g)
    }

    pub fn hardware(&mut self, hw: &HardwareProfile) -> &mut Self {
        self.part("hardware", hw)
    }

    /// Adds a config with what its JSON leaves out: the measured op times
    /// of a calibrated run (sorted) and the plan a planned run follows.
    pub fn config(&mut self, cfg: &SimConfig) -> &mut Self {
        self.part("config", cfg);
        let measured: Option<std::collections::BTreeMap<&String, &u64>> =
            cfg.measured_ns.as_ref().map(|m| m.iter().collect());
        self.part("measured", &measured);
        self.part("plan", &cfg.plan.as_deref())
    }

    pub fn finish(&self) -> Key {
        Key {
            kind: self.kind,
            hex: self.hasher.finalize().to_hex().to_string(),
        }
    }
}

/// One entry as stored.
#[derive(Serialize, Deserialize)]
struct Entry<T> {
    format: u32,
    key: String,
    value: T,
}

impl Cache {
    /// `SPILLSCOPE_CACHE_DIR` if set, else the user's cache directory
    /// (`~/.cache/spillscope` on Linux); `None` where there is none.
    pub fn user() -> Option<Cache> {
        let dir = match std::env::var_os("SPILLSCOPE_CACHE_DIR") {
            Some(d) if !d.is_empty() => PathBuf::from(d),
            _ => directories::ProjectDirs::from("", "", "spillscope")?
                .cache_dir()
                .to_path_buf(),
        };
        Some(Cache::at(dir))
    }

    pub fn at(dir: impl Into<PathBuf>) -> Cache {
        Cache {
            dir: dir.into(),
            cap_bytes: DEFAULT_CAP_BYTES,
        }
    }

    pub fn with_cap(mut self, bytes: u64) -> Cache {
        self.cap_bytes = bytes;
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The binary trace cache beside the results (its own directory and
    /// cap: an entry can be larger than this cache's whole cap).
    pub fn trace_store(&self) -> crate::trace::store::TraceStore {
        crate::trace::store::TraceStore::at(self.dir.join(crate::trace::store::DIR))
    }

    fn path(&self, key: &Key) -> PathBuf {
        self.dir.join(key.kind).join(format!("{}.json", key.hex))
    }

    /// The entry for `key`, if there is a whole one written for it.
    pub fn get<T: DeserializeOwned>(&self, key: &Key) -> Option<T> {
        let path = self.path(key);
        let bytes = std::fs::read(&path).ok()?;
        match serde_json::from_slice::<Entry<T>>(&bytes) {
            Ok(e) if e.format == FORMAT && e.key == key.hex => {
                // Touch it: trimming removes what was used longest ago.
                let _ = std::fs::File::options()
                    .append(true)
                    .open(&path)
                    .and_then(|f| f.set_modified(std::time::SystemTime::now()));
                Some(e.value)
            }
            // Damaged or from another format: a miss, and gone.
            _ => {
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    /// Stores `value` under `key` (best effort), then trims the cache.
    pub fn put<T: Serialize>(&self, key: &Key, value: &T) {
        let _ = self.write(key, value);
        self.trim();
    }

    fn write<T: Serialize>(&self, key: &Key, value: &T) -> std::io::Result<()> {
        let dir = self.dir.join(key.kind);
        std::fs::create_dir_all(&dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(&dir)?;
        let entry = Entry {
            format: FORMAT,
            key: key.hex.clone(),
            value,
        };
        serde_json::to_writer(std::io::BufWriter::new(tmp.as_file_mut()), &entry)?;
        tmp.as_file_mut().flush()?;
        tmp.persist(self.path(key)).map_err(|e| e.error)?;
        Ok(())
    }

    /// Every entry: path, size and when it was last used.
    fn entries(&self) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
        let mut out = Vec::new();
        let Ok(kinds) = std::fs::read_dir(&self.dir) else {
            return out;
        };
        for kind in kinds.flatten() {
            if kind.file_name() == crate::trace::store::DIR {
                continue;
            }
            let Ok(files) = std::fs::read_dir(kind.path()) else {
                continue;
            };
            for f in files.flatten() {
                if let Ok(m) = f.metadata() {
                    if m.is_file() {
                        let used = m.modified().unwrap_or(std::time::UNIX_EPOCH);
                        out.push((f.path(), m.len(), used));
                    }
                }
            }
        }
        out
    }

    /// Total bytes of the entries.
    pub fn size_bytes(&self) -> u64 {
        self.entries().iter().map(|e| e.1).sum()
    }

    /// Past the cap, removes the entries used longest ago until the cache
    /// is at most three quarters of it.
    fn trim(&self) {
        let mut entries = self.entries();
        let mut total: u64 = entries.iter().map(|e| e.1).sum();
        if total <= self.cap_bytes {
            return;
        }
        entries.sort_by_key(|e| e.2);
        let target = self.cap_bytes / 4 * 3;
        for (path, size, _) in entries {
            if total <= target {
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

    fn key(v: u32) -> Key {
        KeyBuilder::new("test").part("v", &v).finish()
    }

    #[test]
    fn entries_read_back_and_damaged_ones_are_misses() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::at(dir.path());
        assert_eq!(c.get::<u32>(&key(1)), None);
        c.put(&key(1), &41u32);
        assert_eq!(c.get::<u32>(&key(1)), Some(41));
        assert_eq!(c.get::<u32>(&key(2)), None);
        std::fs::write(c.path(&key(1)), b"{\"format\":1,").unwrap();
        assert_eq!(c.get::<u32>(&key(1)), None);
        assert!(!c.path(&key(1)).exists());
    }

    #[test]
    fn the_cap_removes_what_was_used_longest_ago() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::at(dir.path()).with_cap(4000);
        let blob = "x".repeat(1000);
        for i in 0..3 {
            c.put(&key(i), &blob);
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // Used again: the newest.
        assert!(c.get::<String>(&key(0)).is_some());
        std::thread::sleep(std::time::Duration::from_millis(20));
        c.put(&key(3), &blob);
        c.put(&key(4), &blob);
        assert!(c.size_bytes() <= 4000, "{}", c.size_bytes());
        assert!(c.get::<String>(&key(0)).is_some(), "recently used stays");
        assert!(c.get::<String>(&key(1)).is_none(), "oldest goes");
    }
}

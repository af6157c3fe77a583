//! Reading input files under a size cap, so a wrong or hostile file cannot
//! make spillscope eat all the memory of a small edge box. The cap is
//! `SPILLSCOPE_MAX_INPUT_BYTES` (bytes; default 4 GiB); exceeding it is one
//! clear error naming the file, its size and how to raise the cap.

use crate::{Error, Result};
use std::path::Path;

/// Default cap on one input file.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 4 << 30;

/// The cap in force (the environment variable, else the default).
pub fn max_input_bytes() -> u64 {
    std::env::var("SPILLSCOPE_MAX_INPUT_BYTES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DEFAULT_MAX_INPUT_BYTES)
}

/// Fails if `path` is larger than the cap.
pub fn check_size(path: &Path) -> Result<u64> {
    let size = std::fs::metadata(path)
        .map_err(|e| Error::io(path, e))?
        .len();
    let cap = max_input_bytes();
    if size > cap {
        return Err(Error::Config(format!(
            "{}: {size} bytes is over the input cap of {cap} bytes (set SPILLSCOPE_MAX_INPUT_BYTES to raise it)",
            path.display()
        )));
    }
    Ok(size)
}

/// Whether reading a `size`-byte file whole (its bytes plus what is parsed
/// from them, about 2.7x the file for a trace) would crowd the memory
/// available now; false where that cannot be told (no `/proc/meminfo`).
pub fn memory_is_short(size: u64) -> bool {
    available_memory().is_some_and(|avail| size.saturating_mul(3) > avail)
}

/// `MemAvailable` from `/proc/meminfo`, in bytes.
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// Reads a whole file after checking the cap.
pub fn read(path: &Path) -> Result<Vec<u8>> {
    check_size(path)?;
    std::fs::read(path).map_err(|e| Error::io(path, e))
}

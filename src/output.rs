//! Writing output files: atomically (a temporary file beside the target,
//! then a rename), never over an existing file unless asked. Every command
//! and library writer goes through here.
//!
//! A foundation: imports only `error`.

use crate::{Error, Result};
use std::path::Path;

/// Writes `text` to `path` atomically (temp file + rename); refuses to
/// overwrite unless `force`.
pub fn write_atomic(path: &Path, text: impl AsRef<[u8]>, force: bool) -> Result<()> {
    if path.exists() && !force {
        return Err(Error::Config(format!(
            "{} exists; pass --force to overwrite it",
            path.display()
        )));
    }
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.tmp{}",
        path.file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    std::fs::write(&tmp, text).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(path, e)
    })
}

//! Writing output files so that nothing that is not the output's is ever
//! clobbered. Every command and library writer goes through
//! [`write_atomic`]:
//!
//! - `-` is standard output;
//! - a symlink is followed (to its final target, dangling or not) and the
//!   *target* is replaced, atomically, in the target's directory: the link
//!   stays a link;
//! - an existing FIFO, character device or socket (`/dev/null`,
//!   `/dev/stdout`, a pipe someone reads) is written in place, never
//!   renamed over;
//! - anything else that is not a regular file (a directory, a block device)
//!   is refused, naming it;
//! - a regular file is replaced atomically: a temporary file is created
//!   beside it with an unpredictable name and `O_EXCL` (a link planted
//!   there is never followed), given the existing file's permissions, and
//!   renamed over it; on any error the temporary file is removed. An
//!   existing file is only replaced with `force`.
//!
//! A foundation: imports only `error`.

use crate::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// How deep a chain of symlinks is followed.
const MAX_LINKS: usize = 40;

/// Writes `text` to `path` as described in the module docs; refuses to
/// replace an existing regular file unless `force`. What it writes is
/// terminal-safe ([`crate::safe_text::escape`]: a name in a report, a
/// table or a trace cannot drive the terminal of whoever `cat`s it; JSON
/// and TOML stay valid and read back the same values).
pub fn write_atomic(path: &Path, text: impl AsRef<str>, force: bool) -> Result<()> {
    write_exact(
        path,
        crate::safe_text::escape(text.as_ref()).as_bytes(),
        force,
    )
}

/// [`write_atomic`] of bytes as they are: a user's own file put back
/// (a schedule config restored byte for byte).
pub fn write_exact(path: &Path, bytes: &[u8], force: bool) -> Result<()> {
    match plan(path, force)? {
        Plan::Stdout => {
            let mut out = std::io::stdout().lock();
            out.write_all(bytes)
                .and_then(|_| out.flush())
                .map_err(|e| Error::io("standard output", e))
        }
        Plan::InPlace(target) => write_in_place(&target, bytes),
        Plan::Replace(target, perms) => replace(&target, bytes, perms),
    }
}

/// Whether [`write_atomic`] would write `path` (checked before long work,
/// so a refusal comes first, not after it).
pub fn check_writable(path: &Path, force: bool) -> Result<()> {
    plan(path, force).map(|_| ())
}

/// How a path is written.
enum Plan {
    Stdout,
    /// A FIFO, character device or socket: opened and written.
    InPlace(PathBuf),
    /// A regular file (existing: its permissions kept) or a new one.
    Replace(PathBuf, Option<std::fs::Permissions>),
}

fn plan(path: &Path, force: bool) -> Result<Plan> {
    if path == Path::new("-") {
        return Ok(Plan::Stdout);
    }
    let target = follow_links(path)?;
    match std::fs::metadata(&target) {
        Ok(m) if m.is_file() => {
            if !force {
                return Err(Error::Config(format!(
                    "{} exists; pass --force to overwrite it",
                    path.display()
                )));
            }
            Ok(Plan::Replace(target, Some(m.permissions())))
        }
        Ok(m) if is_stream(&m) => Ok(Plan::InPlace(target)),
        Ok(m) => Err(Error::Config(format!(
            "{}: {} is not a regular file; refusing to write over it",
            path.display(),
            kind_of(&m)
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Plan::Replace(target, None)),
        Err(e) => Err(Error::io(&target, e)),
    }
}

/// The final target of `path` through any chain of symlinks (the path
/// itself when it is not a link). A dangling link gives its missing target.
fn follow_links(path: &Path) -> Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p).map_err(|e| Error::io(&p, e))?;
                p = if to.is_absolute() {
                    to
                } else {
                    p.parent().unwrap_or(Path::new(".")).join(to)
                };
            }
            _ => return Ok(p),
        }
    }
    Err(Error::Config(format!(
        "{}: more than {MAX_LINKS} symbolic links to follow",
        path.display()
    )))
}

/// FIFOs, character devices and sockets: written in place.
#[cfg(unix)]
fn is_stream(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    t.is_fifo() || t.is_char_device() || t.is_socket()
}

#[cfg(not(unix))]
fn is_stream(_: &std::fs::Metadata) -> bool {
    false
}

fn kind_of(m: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if m.file_type().is_block_device() {
            return "a block device";
        }
    }
    if m.is_dir() {
        "a directory"
    } else {
        "a special file"
    }
}

fn write_in_place(path: &Path, text: &[u8]) -> Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    f.write_all(text)
        .and_then(|_| f.flush())
        .map_err(|e| Error::io(path, e))
}

/// A temporary file beside `path` (unpredictable name, created with
/// `O_EXCL`), `text` written and synced, `perms` applied, renamed over
/// `path`. The temporary file is removed on every error.
fn replace(path: &Path, text: &[u8], perms: Option<std::fs::Permissions>) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut b = tempfile::Builder::new();
    b.prefix(&prefix).suffix(".tmp");
    // A new file gets the usual 0666 less the umask, not 0600.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        b.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = b.tempfile_in(dir).map_err(|e| Error::io(dir, e))?;
    tmp.write_all(text)
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(|e| Error::io(path, e))?;
    if let Some(p) = perms {
        tmp.as_file()
            .set_permissions(p)
            .map_err(|e| Error::io(path, e))?;
    }
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

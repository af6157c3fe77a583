//! Writing output files so that nothing that is not the output's is ever
//! clobbered. Every command and library writer goes through
//! [`write_atomic`]:
//!
//! - `-` is standard output;
//! - a symlink is followed (to its final target) and the *target* is
//!   replaced, atomically, in the target's directory: the link stays a
//!   link; a dangling link is refused unless `force` (it points somewhere
//!   nobody may have meant to create a file);
//! - an existing FIFO, character device or socket (`/dev/null`,
//!   `/dev/stdout`, a pipe someone reads) is written in place, never
//!   renamed over; a FIFO is opened without blocking, so one nobody reads
//!   is refused at once instead of hanging;
//! - anything else that is not a regular file (a directory, a block device)
//!   is refused, naming it;
//! - a regular file is replaced atomically: a temporary file is created
//!   beside it with an unpredictable name and `O_EXCL` (a link planted
//!   there is never followed), given the existing file's permissions, and
//!   renamed over it; on any error the temporary file is removed. An
//!   existing file is only replaced with `force`; without it the rename
//!   refuses to replace a file that appeared meanwhile (no check-then-
//!   rename race between two writers);
//! - a temporary file is named `.NAME.PID.XXXXXX.tmp` and listed while it
//!   exists, so a signal handler can remove it ([`remove_pending`]) and a
//!   later write can name the ones a killed run left ([`take_stale`]).
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

/// [`write_atomic`] of text made as it is written: `write` writes it in
/// pieces (`serde_json::to_writer`), each escaped on the way out, so a
/// large output is never held whole (a 1M-op run's 715 MB trace was held
/// twice, as a string and its escaped copy).
pub fn write_atomic_with(
    path: &Path,
    force: bool,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    write_bytes_with(path, force, |w| {
        let mut e = crate::safe_text::Escaping::new(w);
        write(&mut e)?;
        e.flush()
    })
}

/// [`write_atomic_with`] of `value` as JSON, serialised as it is written.
pub fn write_json_atomic<T: serde::Serialize + ?Sized>(
    path: &Path,
    value: &T,
    force: bool,
) -> Result<()> {
    write_atomic_with(path, force, |w| {
        serde_json::to_writer(w, value).map_err(std::io::Error::other)
    })
}

/// An array made by `items` each time it is serialised: a large list
/// written straight from the columns that hold it, never collected.
pub struct SeqOf<F>(pub F);

impl<F, I> serde::Serialize for SeqOf<F>
where
    F: Fn() -> I,
    I: IntoIterator,
    I::Item: serde::Serialize,
{
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_seq((self.0)())
    }
}

/// [`write_atomic`] of bytes as they are: a user's own file put back
/// (a schedule config restored byte for byte).
pub fn write_exact(path: &Path, bytes: &[u8], force: bool) -> Result<()> {
    write_bytes_with(path, force, |w| w.write_all(bytes))
}

/// Where [`plan`] says, what `write` writes, through a buffer.
fn write_bytes_with(
    path: &Path,
    force: bool,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    match plan(path, force)? {
        Plan::Stdout => {
            let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
            write(&mut out)
                .and_then(|_| out.flush())
                .map_err(|e| Error::io("standard output", e))
        }
        Plan::InPlace(target) => write_in_place(&target, write),
        Plan::Replace(target, perms) => replace(&target, write, perms, force),
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
    if !force && target != path && std::fs::symlink_metadata(&target).is_err() {
        return Err(Error::Output(format!(
            "{} is a symbolic link to {}, which does not exist; pass --force to create it",
            path.display(),
            target.display()
        )));
    }
    match std::fs::metadata(&target) {
        Ok(m) if m.is_file() => {
            if !force {
                return Err(Error::Output(format!(
                    "{} exists; pass --force to overwrite it",
                    path.display()
                )));
            }
            Ok(Plan::Replace(target, Some(m.permissions())))
        }
        Ok(m) if is_stream(&m) => Ok(Plan::InPlace(target)),
        Ok(m) => Err(Error::Output(format!(
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
    Err(Error::Output(format!(
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

fn write_in_place(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let mut f = std::io::BufWriter::with_capacity(1 << 16, open_in_place(path)?);
    write(&mut f)
        .and_then(|_| f.flush())
        .map_err(|e| Error::io(path, e))
}

/// Opens a stream for writing. A FIFO is opened non-blocking (a FIFO
/// nobody reads fails with ENXIO instead of blocking in `open`; a reader
/// gets two seconds to appear), then set back to blocking so large writes
/// wait for the reader.
#[cfg(unix)]
fn open_in_place(path: &Path) -> Result<std::fs::File> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let fifo = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo());
    let mut o = std::fs::OpenOptions::new();
    o.write(true);
    if fifo {
        o.custom_flags(libc::O_NONBLOCK);
    }
    // A reader starting at the same moment gets two seconds to open its end.
    let mut tries = 0;
    let opened = loop {
        match o.open(path) {
            Err(e) if fifo && e.raw_os_error() == Some(libc::ENXIO) && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            r => break r,
        }
    };
    let f = opened.map_err(|e| {
        if e.raw_os_error() == Some(libc::ENXIO) {
            Error::Output(format!(
                "{} is a FIFO that nobody is reading; start its reader first",
                path.display()
            ))
        } else {
            Error::io(path, e)
        }
    })?;
    if fifo {
        use std::os::fd::AsRawFd;
        let fd = f.as_raw_fd();
        // SAFETY: fcntl on a descriptor this function owns, open above.
        let ok = unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) == 0
        };
        if !ok {
            return Err(Error::io(path, std::io::Error::last_os_error()));
        }
    }
    Ok(f)
}

#[cfg(not(unix))]
fn open_in_place(path: &Path) -> Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| Error::io(path, e))
}

/// A temporary file beside `path` (unpredictable name, created with
/// `O_EXCL`), what `write` writes written and synced, `perms` applied, renamed over
/// `path` (with `force`) or into place only if `path` still does not exist
/// (without). The temporary file is removed on every error.
fn replace(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    perms: Option<std::fs::Permissions>,
    force: bool,
) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    note_stale(dir, &name);
    let prefix = format!(".{name}.{}.", std::process::id());
    let mut b = tempfile::Builder::new();
    b.prefix(&prefix).suffix(".tmp");
    // A new file gets the usual 0666 less the umask, not 0600.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        b.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = b.tempfile_in(dir).map_err(|e| Error::io(dir, e))?;
    let _pending = Pending::new(tmp.path());
    {
        let mut w = std::io::BufWriter::with_capacity(1 << 16, tmp.as_file_mut());
        write(&mut w)
            .and_then(|_| w.flush())
            .map_err(|e| Error::io(path, e))?;
    }
    tmp.as_file().sync_all().map_err(|e| Error::io(path, e))?;
    if let Some(p) = perms {
        tmp.as_file()
            .set_permissions(p)
            .map_err(|e| Error::io(path, e))?;
    }
    if force {
        tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    } else {
        tmp.persist_noclobber(path).map_err(|e| {
            if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                Error::Output(format!(
                    "{} exists (another writer created it meanwhile); pass --force to overwrite it",
                    path.display()
                ))
            } else {
                Error::io(path, e.error)
            }
        })?;
    }
    Ok(())
}

/// Temporary files being written now, for [`remove_pending`].
static PENDING: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
/// Temporary files of killed runs seen beside an output, for [`take_stale`].
static STALE: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// A temporary file listed in [`PENDING`] while it lives.
struct Pending(PathBuf);

impl Pending {
    fn new(p: &Path) -> Pending {
        if let Ok(mut v) = PENDING.lock() {
            v.push(p.to_path_buf());
        }
        Pending(p.to_path_buf())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Ok(mut v) = PENDING.lock() {
            v.retain(|p| p != &self.0);
        }
    }
}

/// Removes the temporary files being written now: called by a front end's
/// SIGINT/SIGTERM handler before it exits, so an interrupted write leaves
/// nothing behind.
pub fn remove_pending() {
    // try_lock: a signal that lands while the list is being edited still
    // exits; the file is then left for `take_stale` to name.
    if let Ok(v) = PENDING.try_lock() {
        for p in v.iter() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// The temporary files of killed runs found beside this process's outputs
/// (a `kill -9` leaves its `.NAME.PID.XXXXXX.tmp`), once each, for the
/// front end to name.
pub fn take_stale() -> Vec<PathBuf> {
    STALE
        .lock()
        .map(|mut v| std::mem::take(&mut *v))
        .unwrap_or_default()
}

/// Lists `.NAME.PID.*.tmp` files in `dir` whose process is gone.
fn note_stale(dir: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!(".{name}.");
    let mine = std::process::id();
    let found: Vec<PathBuf> = entries
        .flatten()
        .filter_map(|e| {
            let f = e.file_name().to_string_lossy().into_owned();
            let rest = f.strip_prefix(&prefix)?.strip_suffix(".tmp")?;
            let pid: u32 = rest.split('.').next()?.parse().ok()?;
            (pid != mine && !process_alive(pid)).then(|| e.path())
        })
        .collect();
    if let Ok(mut v) = STALE.lock() {
        for p in found {
            if !v.contains(&p) {
                v.push(p);
            }
        }
    }
}

/// Whether a process with this id exists (Linux: `/proc/PID`); elsewhere
/// every process is taken to be alive, so nothing is named stale.
fn process_alive(pid: u32) -> bool {
    let proc = Path::new("/proc");
    !proc.join("self").exists() || proc.join(pid.to_string()).exists()
}

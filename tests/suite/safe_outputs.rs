//! `-o PATH` through the real binary never clobbers what is not the
//! output's: a symlink's target is replaced and the link stays; FIFOs and
//! devices are written in place; directories are refused; an existing
//! file's permissions are kept; `-o -` is standard output; errors leave no
//! temporary files behind.
#![cfg(unix)] // drives the binary; FIFOs and modes are Unix

use crate::common::bin;
use assert_cmd::Command;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

fn model() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/encoder_decoder.json")
}

/// `sim MODEL --policy lru -o OUT [extra]`: (exit code, stdout, stderr).
fn sim_to(out: &Path, extra: &[&str]) -> (i32, Vec<u8>, String) {
    let o = Command::cargo_bin("spillscope")
        .unwrap()
        .arg("sim")
        .arg(model())
        .args(["--policy", "lru", "-o"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        o.stdout,
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn is_trace(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(bytes)
        .is_ok_and(|v| v["schema"] == "spillscope.trace/1")
}

/// No `.NAME.*.tmp` left in `dir`.
fn no_temporaries(dir: &Path) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

#[test]
fn a_symlink_keeps_being_a_link_and_its_target_is_replaced() {
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("target.json");
    let link = d.path().join("link.json");
    std::fs::write(&target, "old").unwrap();
    std::os::unix::fs::symlink("target.json", &link).unwrap();
    let (code, _, err) = sim_to(&link, &["--force"]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(is_trace(&std::fs::read(&target).unwrap()));
    // Without --force the existing target is refused, naming the link.
    let (code, _, err) = sim_to(&link, &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("link.json") && err.contains("--force"),
        "{err}"
    );
    no_temporaries(d.path());
}

#[test]
fn a_dangling_symlink_is_refused_unless_forced_then_its_target_created() {
    let d = tempfile::tempdir().unwrap();
    let link = d.path().join("link.json");
    std::os::unix::fs::symlink("made.json", &link).unwrap();
    let (code, _, err) = sim_to(&link, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("symbolic link to") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!d.path().join("made.json").exists());
    let (code, _, err) = sim_to(&link, &["--force"]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(is_trace(
        &std::fs::read(d.path().join("made.json")).unwrap()
    ));
}

#[test]
fn a_fifo_is_written_in_place_for_its_reader() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("pipe");
    let ok = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(ok.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(&fifo).unwrap())
    };
    let (code, _, err) = sim_to(&fifo, &["--force"]);
    assert_eq!(code, 0, "{err}");
    let got = reader.join().unwrap();
    assert!(is_trace(&got), "the reader got {} bytes", got.len());
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
}

#[test]
fn dev_null_is_written_and_stays_a_device() {
    let (code, _, err) = sim_to(Path::new("/dev/null"), &[]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
}

#[test]
fn a_directory_is_refused_in_one_line() {
    let d = tempfile::tempdir().unwrap();
    let (code, _, err) = sim_to(d.path(), &["--force"]);
    assert_eq!(code, 2);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("a directory") && err.contains("refusing"),
        "{err}"
    );
    assert!(std::fs::metadata(d.path()).unwrap().is_dir());
}

#[test]
fn an_existing_files_mode_is_kept() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("t.json");
    std::fs::write(&f, "old").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
    let (code, _, err) = sim_to(&f, &["--force"]);
    assert_eq!(code, 0, "{err}");
    let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    assert!(is_trace(&std::fs::read(&f).unwrap()));
    no_temporaries(d.path());
}

#[test]
fn unwritable_places_fail_cleanly() {
    let d = tempfile::tempdir().unwrap();
    // The parent is a file: no temporary file can be made there.
    let file = d.path().join("plain");
    std::fs::write(&file, "x").unwrap();
    let (code, _, err) = sim_to(&file.join("t.json"), &[]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    no_temporaries(d.path());
    // A read-only directory (root writes anyway: then there is nothing to
    // check).
    let ro = d.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    if std::fs::write(ro.join("probe"), "x").is_ok() {
        eprintln!("SKIP (read-only directory): running as root, which writes there anyway");
        return;
    }
    let (code, _, err) = sim_to(&ro.join("t.json"), &[]);
    assert_eq!(code, 2);
    assert!(err.contains("ro"), "{err}");
    no_temporaries(&ro);
}

#[test]
fn dash_is_standard_output_with_nothing_else_on_it() {
    let (code, out, err) = sim_to(Path::new("-"), &[]);
    assert_eq!(code, 0, "{err}");
    assert!(is_trace(&out), "stdout is not one trace");
    // Several runs cannot all be standard output.
    let o = Command::cargo_bin("spillscope")
        .unwrap()
        .arg("sim")
        .arg(model())
        .args(["-o", "-"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("choose one --policy"));
}

#[test]
fn a_fifo_nobody_reads_is_refused_instead_of_hanging() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("pipe");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let t = std::time::Instant::now();
    let (code, _, err) = sim_to(&fifo, &["--force"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("FIFO that nobody is reading"), "{err}");
    assert!(t.elapsed() < std::time::Duration::from_secs(20));
}

#[test]
fn a_failed_standard_output_is_an_error_and_a_closed_pipe_is_quiet() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full");
    let Ok(full) = full else {
        eprintln!("SKIP: no /dev/full");
        return;
    };
    for args in [vec!["hw"], vec!["sim", "--policy", "lru"]] {
        let mut c = std::process::Command::new(bin());
        c.args(&args);
        if args[0] == "sim" {
            c.arg(model());
        }
        let o = c.stdout(full.try_clone().unwrap()).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("standard output"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    // `| head -c 1`: the reader leaves; nothing is said.
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{} sim {} --format json | head -c 1 >/dev/null",
            bin().display(),
            model().display()
        ))
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stderr), "");
}

#[test]
fn two_writers_of_one_new_file_without_force_never_both_succeed() {
    let d = tempfile::tempdir().unwrap();
    for round in 0..20 {
        let path = d.path().join(format!("race{round}.json"));
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
        let handles: Vec<_> = (0..2)
            .map(|i| {
                let (path, barrier) = (path.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    spillscope::output::write_atomic(&path, format!("writer {i}"), false).is_ok()
                })
            })
            .collect();
        let ok = handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|&ok| ok)
            .count();
        assert_eq!(ok, 1, "round {round}: {ok} writers succeeded");
    }
    no_temporaries(d.path());
}

#[test]
fn sigterm_during_a_write_leaves_no_temporary_file_and_stale_ones_are_named() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("big.json");
    let mut child = std::process::Command::new(bin())
        .args(["gen", "trace", "--events", "400000", "-o"])
        .arg(&out)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the temporary file, then interrupt the write.
    let start = std::time::Instant::now();
    let mut seen = false;
    while start.elapsed() < std::time::Duration::from_secs(120) {
        let tmp = std::fs::read_dir(d.path())
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().ends_with(".tmp"));
        if tmp {
            seen = true;
            send_signal(child.id(), 15);
            break;
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let status = child.wait().unwrap();
    if !seen {
        eprintln!("SKIP: the write finished before it could be interrupted");
        return;
    }
    assert_eq!(status.code(), Some(128 + 15), "{status:?}");
    no_temporaries(d.path());
    assert!(!out.exists());

    // What a kill -9 leaves (a temporary file of a process that is gone)
    // is named by the next write beside it.
    let dead = (100_000..4_000_000)
        .find(|p| !Path::new(&format!("/proc/{p}")).exists())
        .unwrap();
    let stale = d.path().join(format!(".small.json.{dead}.a1b2c3.tmp"));
    std::fs::write(&stale, "half").unwrap();
    let (code, _, err) = sim_to(&d.path().join("small.json"), &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!(
            ".small.json.{dead}.a1b2c3.tmp was left by an interrupted run"
        )),
        "{err}"
    );
}

/// `kill -SIG PID`, by the system's command.
fn send_signal(pid: u32, sig: i32) {
    let _ = std::process::Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status();
}

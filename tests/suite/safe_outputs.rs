//! `-o PATH` through the real binary never clobbers what is not the
//! output's: a symlink's target is replaced and the link stays; FIFOs and
//! devices are written in place; directories are refused; an existing
//! file's permissions are kept; `-o -` is standard output; errors leave no
//! temporary files behind.
#![cfg(unix)] // drives the binary; FIFOs and modes are Unix

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
fn a_dangling_symlink_gets_its_target_created() {
    let d = tempfile::tempdir().unwrap();
    let link = d.path().join("link.json");
    std::os::unix::fs::symlink("made.json", &link).unwrap();
    let (code, _, err) = sim_to(&link, &[]);
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

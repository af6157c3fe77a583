//! Building the probe and C programs linked to it, for tests that drive a
//! real runtime process.

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Builds the probe (library and examples) into its own target dir, so the
/// outer `cargo test` build is not disturbed.
pub fn build_probe() -> Option<PathBuf> {
    let target = root().join("target/probe-examples");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let st = Command::new(cargo)
        .args([
            "build",
            "-q",
            "-p",
            "spill-probe",
            "--lib",
            "--examples",
            "--target-dir",
        ])
        .arg(&target)
        .current_dir(root())
        .status()
        .ok()?;
    assert!(st.success(), "building spill-probe failed");
    Some(target.join("debug"))
}

/// `probe/examples/NAME.c` compiled into `dir` against the probe's static
/// library and header, or `None` (said why) when there is no C compiler.
pub fn compile_c_example(name: &str, dir: &Path) -> Option<PathBuf> {
    if Command::new("cc").arg("--version").output().is_err() {
        eprintln!("SKIP: no system C compiler (cc)");
        return None;
    }
    let Some(lib_dir) = build_probe() else {
        eprintln!("SKIP: cargo not runnable from the test");
        return None;
    };
    let exe = dir.join(name);
    let o = Command::new("cc")
        .arg(root().join(format!("probe/examples/{name}.c")))
        .arg("-I")
        .arg(root().join("probe/include"))
        .arg(lib_dir.join("libspill_probe.a"))
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "cc: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    Some(exe)
}

#![allow(dead_code)]
//! Shared helpers for the integration tests.

pub mod probe;
pub mod replay;
pub mod screen;
pub mod stream;
pub mod tmux;

use spillscope::cost::HardwareProfile;
use spillscope::graph::{Graph, GraphBuilder, OpSpec, TensorKind, TensorSpec};
use std::path::PathBuf;

/// A bundled trace from `sample-traces/`.
pub fn sample_trace(name: &str) -> spillscope::trace::Trace {
    spillscope::trace::Trace::load(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("sample-traces")
            .join(name),
    )
    .unwrap()
}

/// Every bundled trace's path (`sample-traces/*.json`), in name order.
pub fn sample_trace_paths() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sample-traces");
    let mut paths: Vec<PathBuf> = (std::fs::read_dir(dir).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
}

/// `../shared/data/<sub>` if present; otherwise prints why the test is skipped.
pub fn shared_data(sub: &str) -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data")
        .join(sub);
    if p.exists() {
        Some(p)
    } else {
        eprintln!(
            "SKIP: {} is absent (tests that read ../shared/data are skipped)",
            p.display()
        );
        None
    }
}

/// A deterministic profile: sync DMA (no prefetch), no penalties, 32-byte
/// alignment, `capacity` bytes.
pub fn test_hw(capacity: u64) -> HardwareProfile {
    let mut hw = HardwareProfile::preset("seed-npu").unwrap();
    hw.memory.capacity.0 = capacity;
    hw.memory.alignment = 32;
    hw.dma.async_dma = false;
    hw.dma.prefetch_distance = 0;
    hw.dma.sync_penalty_ns = 0.0;
    hw.dma.fragmentation_penalty_ns = 0.0;
    hw
}

/// Builds a graph from `(name, inputs, outputs)` with every tensor `unit` bytes
/// unless listed in `sizes`; tensors with no producer are graph inputs.
pub fn graph(
    ops: &[(&str, &[&str], &[&str])],
    unit: u64,
    sizes: &[(&str, u64)],
    outputs: &[&str],
) -> Graph {
    let mut b = GraphBuilder::new("test");
    let mut seen = std::collections::BTreeSet::new();
    let mut names = Vec::new();
    for (_, ins, outs) in ops {
        for t in ins.iter().chain(outs.iter()) {
            if seen.insert(t.to_string()) {
                names.push(t.to_string());
            }
        }
    }
    for n in names {
        let bytes = sizes
            .iter()
            .find(|(s, _)| *s == n)
            .map(|(_, b)| *b)
            .unwrap_or(unit);
        let kind = if n.starts_with('w') {
            Some(TensorKind::Weight)
        } else {
            None
        };
        b.tensor(TensorSpec {
            name: n.into(),
            bytes,
            kind,
            shape: None,
            dtype: None,
        });
    }
    for (name, ins, outs) in ops {
        b.op(OpSpec {
            name: (*name).into(),
            op_type: "Add".into(),
            inputs: ins.iter().map(|s| (*s).into()).collect(),
            outputs: outs.iter().map(|s| (*s).into()).collect(),
            flops: Some(1000.0),
        });
    }
    for o in outputs {
        b.output(*o);
    }
    b.build().unwrap()
}

/// The `spillscope` binary the tests built.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_spillscope"))
}

/// The checkout's root (sample traces, tests/data, docs).
pub fn root() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs the `spillscope` binary with `args` and fails the test (showing its
/// stderr) unless it succeeds.
pub fn run_ok(args: &[&str]) -> std::process::Output {
    let o = run(args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o
}

/// Runs the `spillscope` binary with `args`, whatever its exit.
pub fn run(args: &[&str]) -> std::process::Output {
    assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .args(args)
        .output()
        .unwrap()
}

/// Writes the benchmark's Matmul family at tiling `m` x `n` x `k` (`npu
/// gen matmul`) into `dir`; its path.
pub fn write_matmul_case(dir: &std::path::Path, m: usize, n: usize, k: usize) -> PathBuf {
    let p = dir.join(format!("Matmul_{m}x{n}x{k}.json"));
    let case = spillscope::npu::gen::matmul(m, n, k).unwrap();
    std::fs::write(&p, serde_json::to_string_pretty(&case).unwrap()).unwrap();
    p
}

/// The trace `npu import` makes of a generated `m` x `n` x `k` Matmul
/// solved by the heuristics (written into `dir`).
pub fn matmul_trace(
    dir: &std::path::Path,
    m: usize,
    n: usize,
    k: usize,
) -> spillscope::trace::Trace {
    use spillscope::npu::solve::{solve, SolveOptions};
    let kernel = spillscope::npu::Kernel::load(&write_matmul_case(dir, m, n, k)).unwrap();
    let sol = solve(&kernel, SolveOptions::default())
        .unwrap()
        .cycles
        .solution;
    spillscope::npu::to_trace::to_trace(&kernel, &sol).unwrap()
}

/// `(name, op_type, inputs, outputs)`; sizes by name (default 64 KiB);
/// tensors nobody produces are graph inputs.
pub fn typed(
    ops: &[(&str, &str, &[&str], &[&str])],
    sizes: &[(&str, u64)],
    outputs: &[&str],
) -> Graph {
    let mut b = GraphBuilder::new("hand");
    let mut seen: Vec<String> = Vec::new();
    for (_, _, ins, outs) in ops {
        for t in ins.iter().chain(outs.iter()) {
            if !seen.iter().any(|s| s == t) {
                seen.push(t.to_string());
            }
        }
    }
    for n in seen {
        let bytes = sizes
            .iter()
            .find(|(s, _)| *s == n)
            .map(|&(_, b)| b)
            .unwrap_or(64 * 1024);
        b.tensor(TensorSpec {
            name: n.into(),
            bytes,
            kind: None,
            shape: None,
            dtype: Some("f32".into()),
        });
    }
    for (name, ty, ins, outs) in ops {
        b.op(OpSpec {
            name: (*name).into(),
            op_type: (*ty).into(),
            inputs: ins.iter().map(|s| (*s).into()).collect(),
            outputs: outs.iter().map(|s| (*s).into()).collect(),
            flops: Some(1000.0),
        });
    }
    for o in outputs {
        b.output(*o);
    }
    b.build().unwrap()
}

/// A xorshift generator from `state` for property tests that build their
/// inputs from one seed: each call gives a number below `m` (0 for `m` 0).
pub fn xorshift(mut state: u64) -> impl FnMut(u64) -> u64 {
    move |m: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % m.max(1)
    }
}

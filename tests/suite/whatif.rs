//! What-if sweeps: ranges, parallel runs equal to single runs, the knee.

use crate::common;
use common::{graph, test_hw};
use spillscope::analysis::whatif::{
    grid, knees, parse_bandwidth_range, parse_size_range, run, search_knees,
};
use spillscope::sim::{simulate, EvictionPolicy, SimConfig, WeightMode};

const K: u64 = 1024;

#[test]
fn ranges_parse_inclusively_and_refuse_nonsense() {
    assert_eq!(
        parse_size_range("16MiB..64MiB:16MiB").unwrap(),
        vec![16 << 20, 32 << 20, 48 << 20, 64 << 20]
    );
    assert_eq!(parse_size_range("1KiB,4KiB").unwrap(), vec![1024, 4096]);
    assert_eq!(
        parse_bandwidth_range("20GB/s..60GB/s:20GB/s").unwrap(),
        vec![20e9, 40e9, 60e9]
    );
    assert!(parse_size_range("64MiB..16MiB:4MiB").is_err());
    assert!(parse_size_range("16MiB..64MiB")
        .unwrap_err()
        .to_string()
        .contains("step"));
    assert!(parse_size_range("1..100000000:1")
        .unwrap_err()
        .to_string()
        .contains("10,000"));
}

#[test]
fn sweep_rows_equal_single_runs_and_the_knee_is_where_spills_stop() {
    // Peak live is 4 units: from 4 KiB on nothing spills.
    let g = graph(
        &[
            ("op0", &["x"], &["a"]),
            ("op1", &["a"], &["b"]),
            ("op2", &["b"], &["c"]),
            ("op3", &["c"], &["d"]),
            ("op4", &["d", "a"], &["e"]),
            ("op5", &["e", "b"], &["f"]),
            ("op6", &["f"], &["g"]),
        ],
        K,
        &[],
        &["g"],
    );
    let hw = test_hw(K);
    let base = SimConfig {
        weights: WeightMode::Ignore,
        ..Default::default()
    };
    let caps = parse_size_range("2KiB..6KiB:1KiB").unwrap();
    let points = grid(
        &caps,
        &[None],
        &[EvictionPolicy::Lru, EvictionPolicy::Belady],
    );
    assert_eq!(points.len(), 10);
    let ticks = std::sync::atomic::AtomicUsize::new(0);
    let rows = run(&g, &hw, &base, &points, &|| {
        ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(ticks.into_inner(), 10);
    for (p, r) in points.iter().zip(&rows) {
        let single = simulate(
            &g,
            &hw.clone().with_capacity(p.capacity_bytes).unwrap(),
            &SimConfig {
                policy: p.policy,
                ..base.clone()
            },
        )
        .unwrap();
        assert_eq!(r.latency_ns, single.summary.latency_ns);
        assert_eq!(r.traffic_bytes, single.summary.traffic_bytes);
        assert_eq!(r.capacity_bytes, p.capacity_bytes);
    }
    let searched = search_knees(
        &g,
        &hw,
        &base,
        &[EvictionPolicy::Lru, EvictionPolicy::Belady],
    )
    .unwrap();
    let ks = knees(&rows, &searched);
    assert_eq!(ks.len(), 2);
    for k in &ks {
        // Searched to within 1 %: no traffic there, some 1 % below.
        let z = k.zero_spill_capacity.unwrap();
        assert!((4 * K..=4 * K + 4 * K / 100).contains(&z), "{}", k.text);
        assert!(k.text.contains("drops to 0 at 4.0 KiB"), "{}", k.text);
    }
}

#[test]
fn whatif_cli_json_and_csv() {
    let model =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/encoder_decoder.json");
    let o = assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .args([
            "whatif",
            model.to_str().unwrap(),
            "--capacity",
            "512KiB..2MiB:512KiB",
            "--policy",
            "lru,belady",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 8);
    assert_eq!(runs[0]["capacity_bytes"], 512 * 1024);
    assert_eq!(runs[3]["capacity_bytes"], 2048 * 1024);
    assert!(runs
        .iter()
        .all(|r| r["read_bandwidth"].as_f64().unwrap() > 0.0 && r["policy"].is_string()));
    let o = assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .args([
            "whatif",
            model.to_str().unwrap(),
            "--capacity",
            "1MiB,2MiB",
            "--bandwidth",
            "30GB/s,60GB/s",
            "--format",
            "csv",
        ])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&o.stdout);
    assert_eq!(csv.lines().count(), 5, "{csv}");
    assert!(
        csv.starts_with("capacity_bytes,policy,read_bandwidth"),
        "{csv}"
    );
    let o = assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .args([
            "whatif",
            model.to_str().unwrap(),
            "--capacity",
            "256KiB..4MiB:256KiB",
        ])
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(
        t.contains("lru: spill traffic drops to 0 at 2.012 MiB (1 % less still moves 6.0 MiB)")
            || t.contains("spill traffic at every capacity"),
        "{t}"
    );
}

/// Rewrite flags apply to every point and each row says so; a point equals
/// `sim` with the same flags.
#[test]
fn whatif_rows_record_the_rewrites_they_ran_with() {
    let model =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/encoder_decoder.json");
    let run = |args: &[&str]| -> serde_json::Value {
        serde_json::from_slice(&common::run_ok(args).stdout).unwrap()
    };
    let m = model.to_str().unwrap();
    let w = run(&[
        "whatif",
        m,
        "--capacity",
        "768KiB,1MiB",
        "--fuse",
        "--dtype",
        "fp16",
        "--format",
        "json",
    ]);
    let rows = w["runs"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for r in rows {
        assert_eq!(r["fuse"], true);
        assert_eq!(r["dtype"], "fp16");
    }
    let s = run(&[
        "sim",
        m,
        "--capacity",
        "1MiB",
        "--policy",
        "lru",
        "--fuse",
        "--dtype",
        "fp16",
        "--format",
        "json",
        "--ilp-time",
        "0",
    ]);
    assert_eq!(s["runs"][0]["latency_ns"], rows[1]["latency_ns"]);
    let plain = run(&[
        "sim",
        m,
        "--capacity",
        "1MiB",
        "--policy",
        "lru",
        "--format",
        "json",
    ]);
    assert_ne!(plain["runs"][0]["latency_ns"], rows[1]["latency_ns"]);
    assert_eq!(plain["runs"][0]["fuse"], false);
}

/// `whatif --shard K/N` slices merged with `spillscope merge` are the
/// unsharded sweep byte for byte, whatever order the shards come in; a
/// shard of another sweep, a missing one or a repeated one is refused in
/// one line.
#[test]
fn shards_merge_into_the_unsharded_sweep_byte_for_byte() {
    let model = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/encoder_decoder.json"
    );
    let tmp = tempfile::tempdir().unwrap();
    let sweep = |extra: &[&str]| -> Vec<u8> {
        let mut args = vec![
            "whatif",
            model,
            "--capacity",
            "256KiB..4MiB:256KiB",
            "--policy",
            "lru,belady,lifetime",
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        let o = assert_cmd::Command::cargo_bin("spillscope")
            .unwrap()
            .args(&args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        o.stdout
    };
    let whole = sweep(&[]);
    let mut files = Vec::new();
    for k in 1..=3 {
        let p = tmp.path().join(format!("s{k}.json"));
        let text = sweep(&["--shard", &format!("{k}/3")]);
        let v: serde_json::Value = serde_json::from_slice(&text).unwrap();
        // 16 capacities x 3 policies = 48 points: 16 per shard.
        assert_eq!(v["runs"].as_array().unwrap().len(), 16);
        assert_eq!(v["shard"]["points"], 48);
        std::fs::write(&p, text).unwrap();
        files.push(p.to_string_lossy().into_owned());
    }
    let merge = |args: &[&str]| {
        assert_cmd::Command::cargo_bin("spillscope")
            .unwrap()
            .arg("merge")
            .args(args)
            .output()
            .unwrap()
    };
    let o = merge(&[&files[2], &files[0], &files[1]]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.stdout, whole, "merged shards equal the unsharded output");
    let out = tmp.path().join("all.json");
    let o = merge(&[&files[0], &files[1], &files[2], "-o", out.to_str().unwrap()]);
    assert!(o.status.success());
    assert_eq!(std::fs::read(&out).unwrap(), whole);
    // Refusals: another grid, a missing shard, a repeated shard.
    let other = tmp.path().join("other.json");
    let o = assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .args([
            "whatif",
            model,
            "--capacity",
            "1MiB..3MiB:1MiB",
            "--policy",
            "lru",
            "--format",
            "json",
            "--shard",
            "2/3",
        ])
        .output()
        .unwrap();
    std::fs::write(&other, o.stdout).unwrap();
    let other = other.to_string_lossy().into_owned();
    for (args, needle) in [
        (
            vec![files[0].as_str(), other.as_str(), files[2].as_str()],
            "different sweep",
        ),
        (
            vec![files[0].as_str(), files[2].as_str()],
            "shard 2/3 is missing",
        ),
        (
            vec![files[0].as_str(), files[0].as_str(), files[2].as_str()],
            "given twice",
        ),
    ] {
        let o = merge(&args);
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{err}");
    }
}

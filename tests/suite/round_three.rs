//! Reliability round three: the inputs that once made spillscope write what
//! it could not read back, wrap a sum, ignore a name or hang
//! (`tests/data/round3/`), each refused through the binary in one line
//! naming the file and exiting 2 with nothing written; and property tests
//! that whatever `sim`, `import` and `npu import` write over extreme (but
//! accepted) inputs loads again and verifies.

use crate::common;
use crate::common::root;
use proptest::prelude::*;
use spillscope::cost::HardwareProfile;
use spillscope::graph::{GraphBuilder, OpSpec, TensorSpec};
use spillscope::sim::{simulate, EvictionPolicy, SimConfig};
use spillscope::trace::{verify::verify, Trace};
use std::path::PathBuf;

fn corpus(name: &str) -> PathBuf {
    root().join("tests/data/round3").join(name)
}

fn model() -> String {
    root()
        .join("tests/data/encoder_decoder.json")
        .display()
        .to_string()
}

/// Runs the binary with `-o OUT` appended where `out` is set: the exit
/// code, standard error, and whether OUT exists afterwards.
fn refused(args: &[&str], out: bool) -> (Option<i32>, String, bool) {
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().join("out.json");
    let mut full: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    if out {
        full.push("-o".into());
        full.push(o.display().to_string());
    }
    let refs: Vec<&str> = full.iter().map(String::as_str).collect();
    let r = common::run(&refs);
    (
        r.status.code(),
        String::from_utf8_lossy(&r.stderr).into_owned(),
        o.exists(),
    )
}

#[test]
fn every_input_of_the_corpus_is_refused_in_one_line_naming_it() {
    let m = model();
    let p = |n: &str| corpus(n).display().to_string();
    let hw = |n: &str| {
        vec![
            "sim".to_string(),
            m.clone(),
            "--policy".into(),
            "lru".into(),
            "--hw".into(),
            p(n),
        ]
    };
    let cases: Vec<(Vec<String>, bool, &str)> = vec![
        (
            hw("hw_nan.toml"),
            true,
            "hw_nan.toml:3:1: not a valid hardware profile: energy.dram_pj_per_byte",
        ),
        (hw("hw_inf.toml"), true, "hw_inf.toml:2:1"),
        (hw("hw_1e308.toml"), true, "got 1e308"),
        (
            hw("hw_negative_energy.toml"),
            true,
            "energy.sram_pj_per_byte must be a number from 0",
        ),
        (
            hw("hw_negative_penalty.toml"),
            true,
            "dma.sync_penalty_ns must be a number from 0",
        ),
        (
            vec![
                "sim".into(),
                m.clone(),
                "--config".into(),
                p("recompute_unknown.toml"),
            ],
            true,
            "recompute: no tensor named \"nope\"",
        ),
        (
            vec!["import".into(), p("torch_nan_total.json")],
            true,
            "Total Allocated \"NaN\" is not a byte count",
        ),
        (
            vec!["import".into(), p("torch_1e308_total.json")],
            true,
            "Total Allocated 1e+308 is not a byte count",
        ),
        (
            vec!["npu".into(), "import".into(), p("npu_cycles_2p62.json")],
            true,
            "past 2^62 cycles",
        ),
        (
            vec![
                "npu".into(),
                "time".into(),
                p("npu_cycles_2p62.json"),
                "/nonexistent".into(),
            ],
            false,
            "past 2^62 cycles",
        ),
        (
            vec![
                "npu".into(),
                "schedule".into(),
                p("npu_alloc_edges_cut.json"),
                "--time".into(),
                "2s".into(),
            ],
            false,
            "no path of edges leads to it from the buffer's ALLOC",
        ),
        (
            vec!["npu".into(), "import".into(), p("npu_alloc_edges_cut.json")],
            true,
            "before the buffer exists",
        ),
        (
            vec![
                "npu".into(),
                "solve".into(),
                p("npu_alloc_edges_cut.json"),
                "--out".into(),
                "/nonexistent/solve".into(),
                "--time".into(),
                "2s".into(),
            ],
            false,
            "before the buffer exists",
        ),
        (
            vec![
                "npu".into(),
                "import".into(),
                p("npu_zero_size_buffers.json"),
            ],
            true,
            "has Size 0",
        ),
        (
            vec![
                "npu".into(),
                "allocate".into(),
                p("npu_alloc_edges_cut.json"),
            ],
            false,
            "before the buffer exists",
        ),
        (
            vec![
                "npu".into(),
                "check".into(),
                p("npu_alloc_edges_cut.json"),
                "/nonexistent".into(),
            ],
            false,
            "before the buffer exists",
        ),
    ];
    for (args, out, want) in cases {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let t = std::time::Instant::now();
        let (code, err, written) = refused(&a, out);
        assert_eq!(code, Some(2), "{a:?}: {err}");
        assert!(err.contains(want), "{a:?}: wanted {want:?} in {err}");
        assert_eq!(err.lines().count(), 1, "{a:?}: {err}");
        assert!(!written, "{a:?} wrote its output");
        assert!(t.elapsed().as_secs() < 30, "{a:?} took {:?}", t.elapsed());
    }
}

/// Twelve messages once quoted a 10 MB value whole (10,485,896 bytes of
/// standard error): every quoted value is cut to its first 80 characters
/// and its length.
#[test]
fn an_error_about_a_ten_megabyte_value_is_one_short_line() {
    let dir = tempfile::tempdir().unwrap();
    let big = "x".repeat(10_000_000);
    let g: serde_json::Value = serde_json::from_slice(&std::fs::read(model()).unwrap()).unwrap();
    let write = |name: &str, text: String| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let mut dtype = g.clone();
    dtype["tensors"][2]["dtype"] = big.clone().into();
    let mut input = g.clone();
    input["ops"][0]["inputs"]
        .as_array_mut()
        .unwrap()
        .push(big.clone().into());
    let cases = [
        vec!["sim".to_string(), write("dtype.json", dtype.to_string())],
        vec!["sim".to_string(), write("input.json", input.to_string())],
        vec![
            "sim".to_string(),
            model(),
            "--config".into(),
            write("pin.toml", format!("pins = [\"{big}\"]\n")),
        ],
        vec![
            "sim".to_string(),
            model(),
            "--hw".into(),
            write("hw.toml", format!("[memory]\ncapacity = \"{big}\"\n")),
        ],
    ];
    for args in cases {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = common::run(&a);
        let err = String::from_utf8_lossy(&r.stderr);
        let head: String = err.chars().take(300).collect();
        assert_eq!(r.status.code(), Some(2), "{head}");
        assert!(err.len() < 600, "{} bytes: {head}", err.len());
        assert_eq!(err.lines().count(), 1, "{head}");
    }
}

#[test]
fn a_dropped_count_that_would_wrap_is_named_not_summed() {
    let p = corpus("jsonl_dropped_overflow.jsonl");
    let r = common::run(&["import", p.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{err}");
    assert!(
        err.contains("line 2: dropped count 18446744073709551615"),
        "{err}"
    );
    assert!(err.contains("dropped 2 events"), "{err}");
}

#[test]
fn an_op_that_is_its_own_parent_or_follows_its_child_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("t.json");
    let r = common::run(&[
        "sim",
        &model(),
        "--policy",
        "lru",
        "-o",
        base.to_str().unwrap(),
    ]);
    assert!(r.status.success());
    let mut t: serde_json::Value = serde_json::from_slice(&std::fs::read(&base).unwrap()).unwrap();
    for (parent, name) in [(3, "self.json"), (5, "after.json")] {
        t["ops"][3]["parent"] = parent.into();
        let p = dir.path().join(name);
        std::fs::write(&p, t.to_string()).unwrap();
        let r = common::run(&["verify", p.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("has parent {parent}, which is not an earlier op")),
            "{err}"
        );
    }
}

/// A hardware profile with every coefficient drawn from its whole accepted
/// range, log-uniformly.
fn arb_hw() -> impl Strategy<Value = HardwareProfile> {
    let log = |lo: f64, hi: f64| (lo.ln()..hi.ln()).prop_map(f64::exp);
    (
        (log(1.0, 1e18), log(1.0, 1e18), log(1.0, 1e21)),
        (0.0..1e12f64, 0.0..1e12f64, 0.0..1e12f64),
        (0.0..1e6f64, 0.0..1e6f64, 1.0..1e6f64),
        (10u32..40, any::<bool>()),
    )
        .prop_map(
            |((rd, wr, flops), (lat, over, pen), (dram_e, sram_e, cont), (cap, asy))| {
                let mut hw = HardwareProfile::preset("seed-npu").unwrap();
                hw.dram.read_bandwidth.0 = rd;
                hw.dram.write_bandwidth.0 = wr;
                hw.compute.peak_flops.0 = flops;
                hw.dram.latency_ns = lat;
                hw.compute.op_overhead_ns = over;
                hw.dma.sync_penalty_ns = pen;
                hw.energy.dram_pj_per_byte = dram_e;
                hw.energy.sram_pj_per_byte = sram_e;
                hw.dram.contention = cont;
                hw.memory.capacity.0 = 1 << cap;
                hw.dma.async_dma = asy;
                hw
            },
        )
}

/// A chain of `n` ops over tensors of up to 2^44 bytes each.
fn extreme_chain(n: usize, sizes: &[u64]) -> spillscope::graph::Graph {
    let mut b = GraphBuilder::new("extreme");
    for (i, &bytes) in sizes.iter().take(n + 1).enumerate() {
        b.tensor(TensorSpec {
            name: format!("t{i}").into(),
            bytes,
            kind: None,
            shape: None,
            dtype: None,
        });
    }
    for (i, &bytes) in sizes.iter().take(n).enumerate() {
        b.op(OpSpec {
            name: format!("op{i}").into(),
            op_type: "Mul".into(),
            inputs: vec![format!("t{i}").into()],
            outputs: vec![format!("t{}", i + 1).into()],
            flops: Some(bytes as f64 * 1e3),
        });
    }
    b.output(format!("t{n}"));
    b.build().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// What `sim -o` would write (it writes only what passes
    /// `check_writable`) parses back and verifies; a run whose clock would
    /// pass the limits is refused by the simulator itself (about half of
    /// these draws, with bandwidths down to 1 B/s).
    #[test]
    fn what_sim_writes_over_extreme_settings_reads_back_and_verifies(
        hw in arb_hw(),
        sizes in prop::collection::vec((0u32..44).prop_map(|e| 1u64 << e), 9),
        n in 1usize..8,
        policy in prop::sample::select(vec![EvictionPolicy::Lru, EvictionPolicy::Belady, EvictionPolicy::Ideal]),
    ) {
        prop_assume!(hw.validate().is_ok());
        let g = extreme_chain(n, &sizes);
        let Ok(tr) = simulate(&g, &hw, &SimConfig { policy, ..Default::default() }) else {
            return Ok(());
        };
        if tr.check_writable().is_ok() {
            let back = Trace::from_slice(tr.to_json().as_bytes());
            prop_assert!(back.is_ok(), "written, then unreadable: {:?}", back.err().map(|e| e.msg));
            let back = back.unwrap();
            prop_assert!(back.check_ranges().is_ok());
            let v = verify(&back, 5);
            prop_assert!(v.ok(), "{:?}", v.violations);
        }
    }

    /// A JSONL stream with extreme times and sizes: what `import -o`
    /// writes reads back.
    #[test]
    fn what_import_writes_of_an_extreme_stream_reads_back(
        events in prop::collection::vec((0u64..u64::MAX, 0u32..64), 1..12),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.jsonl");
        let mut s = String::from("{\"kind\":\"pool\",\"pool\":\"sram\",\"capacity_bytes\":1099511627776}\n");
        for (i, (t, e)) in events.iter().enumerate() {
            s += &format!("{{\"t_ns\":{t},\"kind\":\"op_begin\",\"op\":\"o{i}\"}}\n");
            s += &format!("{{\"t_ns\":{t},\"kind\":\"alloc\",\"tensor\":\"x{i}\",\"bytes\":{},\"pool\":\"sram\"}}\n", 1u64 << e);
            s += &format!("{{\"t_ns\":{},\"kind\":\"op_end\"}}\n", t.saturating_add(1));
        }
        std::fs::write(&p, s).unwrap();
        let Ok((tr, _)) = spillscope::trace::import::import(&p, None, &Default::default()) else {
            return Ok(());
        };
        let out = dir.path().join("out.json");
        if tr.write(&out, false).is_ok() {
            let back = Trace::load(&out);
            prop_assert!(back.is_ok(), "written, then unreadable: {:?}", back.err());
        }
    }
}

#[test]
fn what_npu_import_writes_over_extreme_cycles_reads_back_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let case = common::write_matmul_case(dir.path(), 2, 2, 2);
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&case).unwrap()).unwrap();
    let ops = v["Nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n.get("Cycles").is_some())
        .count() as u64;
    // Each op as long as the total allows, then one more cycle each: the
    // first loads and imports, the second is refused on load.
    for (per, ok) in [
        ((1u64 << 62) / ops - 1, true),
        ((1u64 << 62) / ops + 1, false),
    ] {
        for n in v["Nodes"].as_array_mut().unwrap() {
            if n.get("Cycles").is_some() {
                n["Cycles"] = per.into();
            }
        }
        let p = dir.path().join("case.json");
        std::fs::write(&p, v.to_string()).unwrap();
        let out = dir.path().join(format!("t{ok}.json"));
        let r = common::run(&[
            "npu",
            "import",
            p.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&r.stderr);
        if ok {
            // Written only if it reads back; refused in one line otherwise.
            if r.status.success() {
                let r = common::run(&["verify", out.to_str().unwrap()]);
                assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stdout));
            } else {
                assert_eq!(err.lines().count(), 1, "{err}");
                assert!(!out.exists());
            }
        } else {
            assert_eq!(r.status.code(), Some(2), "{err}");
            assert!(err.contains("past 2^62 cycles"), "{err}");
        }
    }
}

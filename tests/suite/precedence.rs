//! One run specification, one precedence: built-in defaults < hardware
//! profile file < schedule config < command-line flags. The table of cases
//! is `tests/data/precedence.toml`; flags go through the real command-line
//! parser and every command's spec is resolved by the library. Two binary
//! runs check the bugs this replaced: a config's policy that overrode every
//! `--policy all` label, and `--fuse` losing to `fuse = false` for the exact
//! optimum only.

use crate::common;

use clap::Parser;
use common::graph;
use spillscope::run::{Resolved, RunSpec};
use spillscope::sim::config::{NamedOrder, OrderSpec};
use spillscope::sim::RecomputeSpec;
use spillscope_cli::{Cli, Command};
use std::path::Path;

#[derive(serde::Deserialize)]
struct Table {
    case: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    name: String,
    command: String,
    #[serde(default)]
    hw: Option<String>,
    #[serde(default)]
    sched: Option<String>,
    args: Vec<String>,
    expect: toml::Table,
}

/// The spec the command line builds for `argv` (as `main` would).
fn spec_of(argv: &[String]) -> RunSpec {
    let cli = Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    use spillscope::sim::EvictionPolicy::{self, Lru};
    match cli.command.expect("a command") {
        Command::Sim(a) => a
            .schedule
            .spec(&a.model, &a.hw, &a.model_opts, &EvictionPolicy::ALL),
        Command::View(a) => a.schedule.spec(&a.inputs[0], &a.hw, &a.model_opts, &[Lru]),
        Command::Report(a) => a.schedule.spec(&a.input, &a.hw, &a.model_opts, &[Lru]),
        Command::Suggest(a) => a.schedule.spec(&a.model, &a.hw, &a.model_opts, &[Lru]),
        Command::Whatif(a) => {
            let hw = spillscope_cli::args::HwOpts {
                hw: a.hw.clone(),
                capacity: None,
                bandwidth: None,
                cores: None,
            };
            a.schedule.spec(&a.model, &hw, &a.model_opts, &[Lru])
        }
        other => panic!("not a simulating command: {other:?}"),
    }
    .unwrap()
}

fn check(case: &Case, r: &Resolved) {
    let n = &case.name;
    for (key, want) in &case.expect {
        let cfg = &r.config;
        match key.as_str() {
            "policies" => {
                let got: Vec<&str> = r.policies.iter().map(|p| p.as_str()).collect();
                let want: Vec<&str> = want
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap())
                    .collect();
                assert_eq!(got, want, "{n}");
            }
            "weights" => assert_eq!(
                serde_json::to_value(cfg.weights).unwrap(),
                want.as_str().unwrap(),
                "{n}"
            ),
            "capacity" => assert_eq!(
                r.hardware.memory.capacity.0 as i64,
                want.as_integer().unwrap(),
                "{n}"
            ),
            "alignment" => assert_eq!(
                r.hardware.memory.alignment as i64,
                want.as_integer().unwrap(),
                "{n}"
            ),
            "prefetch" => assert_eq!(
                cfg.prefetch_distance
                    .unwrap_or(r.hardware.dma.prefetch_distance) as i64,
                want.as_integer().unwrap(),
                "{n}"
            ),
            "fuse" => assert_eq!(cfg.fuse, want.as_bool().unwrap(), "{n}"),
            "dtype" => assert_eq!(
                serde_json::to_value(cfg.dtype).unwrap(),
                want.as_str().unwrap(),
                "{n}"
            ),
            "order" => {
                let w = match want.as_str().unwrap() {
                    "file" => OrderSpec::Named(NamedOrder::File),
                    "memory" => OrderSpec::Named(NamedOrder::Memory),
                    o => panic!("{n}: order {o}"),
                };
                assert_eq!(cfg.order, w, "{n}");
            }
            "pins" => {
                let want: Vec<String> = want
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_string())
                    .collect();
                assert_eq!(cfg.pins, want, "{n}");
            }
            "recompute" => assert_eq!(
                cfg.recompute,
                RecomputeSpec::All(want.as_bool().unwrap()),
                "{n}"
            ),
            k => panic!("{n}: unknown expectation {k}"),
        }
    }
    // Every run but the policy is the shared config.
    for &p in &r.policies {
        let c = r.config_for(p);
        assert_eq!(c.policy, p, "{n}");
        assert_eq!(c.weights, r.config.weights, "{n}");
    }
}

#[test]
fn every_case_of_the_precedence_table_resolves_as_documented() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/precedence.toml"),
    )
    .unwrap();
    let table: Table = toml::from_str(&text).unwrap();
    assert!(table.case.len() >= 15);
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("g.json");
    let g = graph(
        &[("a_op", &["x"], &["a"]), ("b_op", &["a"], &["b"])],
        1024,
        &[],
        &["b"],
    );
    std::fs::write(
        &model,
        serde_json::to_string(&spillscope::graph::json::graph_to_json(&g)).unwrap(),
    )
    .unwrap();
    for (i, case) in table.case.iter().enumerate() {
        let mut argv: Vec<String> = vec!["spillscope".into(), case.command.clone()];
        argv.push(model.to_str().unwrap().into());
        if let Some(hw) = &case.hw {
            let p = dir.path().join(format!("hw{i}.toml"));
            std::fs::write(&p, hw).unwrap();
            argv.extend(["--hw".into(), p.to_str().unwrap().into()]);
        }
        if let Some(sched) = &case.sched {
            let p = dir.path().join(format!("sched{i}.toml"));
            std::fs::write(&p, sched).unwrap();
            argv.extend(["--config".into(), p.to_str().unwrap().into()]);
        }
        argv.extend(case.args.iter().cloned());
        let spec = spec_of(&argv);
        let r = spec
            .resolve_for(&g)
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        check(case, &r);
    }
}

fn sim_json(args: &[&str]) -> serde_json::Value {
    let o = common::run_ok(&[&["sim"], args, &["--format", "json"]].concat());
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn policy_all_with_a_config_policy_runs_each_policy_under_its_own_label() {
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/encoder_decoder.json");
    let dir = tempfile::tempdir().unwrap();
    let sched = dir.path().join("s.toml");
    std::fs::write(&sched, "policy = \"belady\"\nweights = \"resident\"\n").unwrap();
    let (m, s) = (model.to_str().unwrap(), sched.to_str().unwrap());
    let all = sim_json(&[m, "--capacity", "1MiB", "--policy", "all", "--config", s]);
    let runs = all["runs"].as_array().unwrap();
    let labels: Vec<&str> = runs.iter().map(|r| r["policy"].as_str().unwrap()).collect();
    assert_eq!(labels, ["ideal", "lru", "belady", "lifetime", "planned"]);
    // Each run equals that policy alone with the config's other settings.
    let mut latencies = Vec::new();
    for r in runs {
        let p = r["policy"].as_str().unwrap();
        let alone = sim_json(&[m, "--capacity", "1MiB", "--policy", p, "--config", s]);
        assert_eq!(&alone["runs"][0], r, "{p}");
        latencies.push(r["latency_ns"].as_u64().unwrap());
    }
    // And they are not one policy under four names.
    latencies.dedup();
    assert!(latencies.len() > 1, "{latencies:?}");
    // Without --policy, the config's policy is the one run.
    let file = sim_json(&[m, "--capacity", "1MiB", "--config", s]);
    assert_eq!(file["runs"].as_array().unwrap().len(), 1);
    assert_eq!(file["runs"][0], runs[2]);
}

#[test]
fn fuse_flag_over_a_config_without_fusion_fuses_the_runs_and_the_optimum() {
    let dir = tempfile::tempdir().unwrap();
    let k = 1024;
    let g = common::typed(
        &[
            ("p", "Identity", &["x"], &["L"]),
            ("conv", "Conv", &["x"], &["c"]),
            ("relu", "Relu", &["c"], &["r"]),
            ("cat", "Concat", &["r", "L"], &["out"]),
        ],
        &[("L", 200 * k), ("c", 256 * k), ("r", 256 * k)],
        &["out"],
    );
    let model = dir.path().join("g.json");
    std::fs::write(
        &model,
        serde_json::to_string(&spillscope::graph::json::graph_to_json(&g)).unwrap(),
    )
    .unwrap();
    let sched = dir.path().join("s.toml");
    std::fs::write(&sched, "fuse = false\nweights = \"ignore\"\n").unwrap();
    let (m, s) = (model.to_str().unwrap(), sched.to_str().unwrap());
    let cap = ["--capacity", "560KiB", "--policy", "lru"];
    let flagged = sim_json(&[&[m, "--fuse", "-c", s][..], &cap].concat());
    let fused_alone = sim_json(&[&[m, "--fuse", "--weights", "ignore"][..], &cap].concat());
    let unfused = sim_json(&[&[m, "-c", s][..], &cap].concat());
    assert_eq!(flagged["runs"], fused_alone["runs"]);
    assert_ne!(
        flagged["runs"], unfused["runs"],
        "fusion changes this graph"
    );
    let exact = |v: &serde_json::Value| v["optimum"]["exact_bytes"].as_u64();
    assert!(exact(&unfused).unwrap() > 0, "{}", unfused["optimum"]);
    assert_eq!(exact(&flagged), exact(&fused_alone));
    assert_ne!(exact(&flagged), exact(&unfused));
}

/// A live view re-runs when a profile it reads changes, not only the model,
/// hardware file and config.
#[test]
fn the_profiles_a_spec_reads_are_among_its_inputs() {
    let argv: Vec<String> = [
        "spillscope",
        "view",
        "m.json",
        "--calibrate",
        "prof.json",
        "--free-at",
        "run.json",
        "-c",
        "s.toml",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let inputs = spec_of(&argv).inputs();
    for f in ["m.json", "s.toml", "prof.json", "run.json"] {
        assert!(
            inputs.iter().any(|p| p.ends_with(f)),
            "{f} not watched: {inputs:?}"
        );
    }
}

//! Real runtime traces in (ONNX Runtime, PyTorch), generic Chrome traces
//! with their quirks, the JSONL stream (incremental tailing), the Perfetto
//! export round trip, and diff agreement.

use crate::common;
use common::shared_data;
use serde_json::{json, Value};
use spillscope::analysis::diff::agreement;
use spillscope::trace::import::{self, jsonl::JsonlTail, Format, ImportOptions};
use spillscope::trace::{export::to_chrome, verify::verify, EventKind, Trace};
use std::path::Path;

fn sample(name: &str) -> Trace {
    Trace::load(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("sample-traces")
            .join(name),
    )
    .unwrap()
}

fn raw(path: &Path) -> Vec<Value> {
    let v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    match v {
        Value::Array(a) => a,
        Value::Object(mut m) => m
            .remove("traceEvents")
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default(),
        _ => vec![],
    }
}

#[test]
fn ort_profiles_import_with_counts_and_bytes_from_the_file() {
    let Some(dir) = shared_data("traces") else {
        return;
    };
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        let fname = p.file_name().unwrap().to_string_lossy().into_owned();
        if !fname.starts_with("ort_") {
            continue;
        }
        n += 1;
        assert_eq!(import::detect(&p).unwrap(), Format::Ort, "{fname}");
        let events = raw(&p);
        let mut runs: Vec<(f64, f64)> = events
            .iter()
            .filter(|e| e["name"] == "model_run")
            .map(|e| {
                (
                    e["ts"].as_f64().unwrap(),
                    e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap(),
                )
            })
            .collect();
        runs.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
        assert!(runs.len() >= 2, "{fname}");
        for (r, &(s, e)) in runs.iter().enumerate() {
            let nodes: Vec<&Value> = events
                .iter()
                .filter(|x| {
                    x["cat"] == "Node"
                        && x["name"].as_str().unwrap().ends_with("_kernel_time")
                        && x["ts"].as_f64().unwrap() >= s
                        && x["ts"].as_f64().unwrap() <= e
                })
                .collect();
            let bytes: u64 = nodes
                .iter()
                .map(|x| {
                    x["args"]["output_size"]
                        .as_str()
                        .unwrap()
                        .parse::<u64>()
                        .unwrap()
                })
                .sum();
            let (tr, _) = import::import(
                &p,
                None,
                &ImportOptions {
                    run: Some(r + 1),
                    ..Default::default()
                },
            )
            .unwrap();
            assert_eq!(tr.ops.len(), nodes.len(), "{fname} run {}", r + 1);
            let out_bytes: u64 = tr
                .ops
                .iter()
                .flat_map(|o| o.outputs.iter())
                .map(|&t| tr.tensors.at(t).bytes)
                .sum();
            assert_eq!(out_bytes, bytes, "{fname} run {}", r + 1);
            assert!(verify(&tr, 5).ok(), "{fname}");
            let peak = nodes
                .iter()
                .map(|x| {
                    x["args"]["mem_bytes_in_use"]
                        .as_str()
                        .unwrap()
                        .parse::<u64>()
                        .unwrap()
                })
                .max()
                .unwrap();
            assert_eq!(
                tr.summary.peak_live_bytes, peak,
                "{fname}: without a model, the allocator's figure"
            );
        }
        // Runs are separate: run 1 (warm-up) is not run 2.
        let a = import::import(
            &p,
            None,
            &ImportOptions {
                run: Some(1),
                ..Default::default()
            },
        )
        .unwrap()
        .0;
        let b = import::import(
            &p,
            None,
            &ImportOptions {
                run: Some(2),
                ..Default::default()
            },
        )
        .unwrap()
        .0;
        assert_ne!(a.summary.latency_ns, b.summary.latency_ns, "{fname}");
        assert!(import::import(
            &p,
            None,
            &ImportOptions {
                run: Some(99),
                ..Default::default()
            }
        )
        .unwrap_err()
        .to_string()
        .contains("run"));
    }
    assert!(n >= 6, "expected the ORT samples");
}

#[cfg(feature = "onnx")]
#[test]
fn noopt_ort_traces_match_the_onnx_nodes_one_to_one() {
    let (Some(traces), Some(models)) = (shared_data("traces"), shared_data("models")) else {
        return;
    };
    for m in ["resnet18", "mobilenet_v2", "squeezenet1_1", "resnet50_b8"] {
        let g = spillscope::graph::load(
            &models.join(format!("{m}.shapes.onnx")),
            &Default::default(),
        )
        .unwrap();
        let p = traces.join(format!("ort_{m}.noopt.json"));
        let (tr, warnings) = import::import(
            &p,
            Some(Format::Ort),
            &ImportOptions {
                model: Some(std::sync::Arc::new(g.clone())),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(warnings.is_empty(), "{m}: {warnings:?}");
        let mut want: Vec<&str> = g
            .ops
            .iter()
            .filter(|o| o.op_type != "Constant")
            .map(|o| o.name)
            .collect();
        let mut got: Vec<&str> = tr.ops.iter().map(|o| o.name).collect();
        want.sort();
        got.sort();
        assert_eq!(got, want, "{m}: ORT nodes vs ONNX nodes (minus Constant)");
        let rep = verify(&tr, 5);
        assert!(rep.ok(), "{m}: {:?}", rep.violations);
        // Linked to the graph: ops carry the graph's tensors.
        let conv = tr.ops.iter().find(|o| o.op_type == "Conv").unwrap();
        assert!(conv.inputs.len() >= 2 && !conv.outputs.is_empty());
        assert_eq!(
            tr.summary.peak_live_bytes,
            spillscope::graph::Liveness::compute(&g).peak_bytes
        );
    }
}

#[test]
fn pytorch_memory_trace_imports_with_the_files_peak() {
    let Some(dir) = shared_data("traces") else {
        return;
    };
    for f in ["torch_resnet18.json", "torch_mobilenet_v2.json"] {
        let p = dir.join(f);
        assert_eq!(import::detect(&p).unwrap(), Format::Torch);
        let events = raw(&p);
        let mem: Vec<&Value> = events.iter().filter(|e| e["name"] == "[memory]").collect();
        let peak = mem
            .iter()
            .map(|e| e["args"]["Total Allocated"].as_f64().unwrap() as u64)
            .max()
            .unwrap();
        let allocs = mem
            .iter()
            .filter(|e| e["args"]["Bytes"].as_f64().unwrap() >= 0.0)
            .count();
        let cpu_ops = events
            .iter()
            .filter(|e| e["cat"] == "cpu_op" && e["ph"] == "X")
            .count();
        let (tr, _) = import::import(&p, None, &ImportOptions::default()).unwrap();
        assert_eq!(tr.summary.peak_live_bytes, peak, "{f}");
        assert_eq!(tr.ops.len(), cpu_ops, "{f}");
        assert_eq!(
            tr.events
                .iter()
                .filter(|e| e.kind == EventKind::Alloc)
                .count(),
            allocs,
            "{f}"
        );
        // Every memory event inside a cpu_op (same thread) is attributed to
        // one that encloses it; the others (between ops) to none.
        let spans: Vec<(f64, f64, i64)> = events
            .iter()
            .filter(|e| e["cat"] == "cpu_op" && e["ph"] == "X")
            .map(|e| {
                (
                    e["ts"].as_f64().unwrap(),
                    e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap(),
                    e["tid"].as_i64().unwrap(),
                )
            })
            .collect();
        let enclosed = mem
            .iter()
            .filter(|m| {
                spans.iter().any(|s| {
                    s.0 <= m["ts"].as_f64().unwrap()
                        && m["ts"].as_f64().unwrap() <= s.1
                        && s.2 == m["tid"].as_i64().unwrap()
                })
            })
            .count();
        let attributed = tr.events.iter().filter(|e| e.op.is_some()).count();
        assert_eq!(attributed, enclosed, "{f}");
        assert!(
            tr.events
                .iter()
                .filter_map(|e| e.op.map(|o| (e, tr.ops.at(o))))
                .all(|(e, o)| o.start_ns <= e.t_ns && e.t_ns <= o.end_ns),
            "{f}"
        );
        let rep = verify(&tr, 5);
        assert!(rep.ok(), "{f}: {:?}", rep.violations);
    }
}

#[test]
fn generic_chrome_traces_with_quirks() {
    let dir = tempfile::tempdir().unwrap();
    // Out of order, float and string timestamps, B/E, counters, metadata,
    // flows, an instant memory event, a negative duration, a duplicate flow id,
    // and no closing bracket.
    let text = r#"[
{"ph":"M","name":"thread_name","pid":1,"tid":7,"args":{"name":"npu0"}},
{"ph":"X","name":"late","cat":"k","ts":50.5,"dur":10,"pid":1,"tid":7},
{"ph":"X","name":"early","cat":"k","ts":"1.25","dur":"2","pid":1,"tid":7},
{"ph":"B","name":"span","ts":20,"pid":1,"tid":7},
{"ph":"E","ts":30,"pid":1,"tid":7},
{"ph":"C","name":"bw","ts":5,"pid":1,"args":{"value":"0.5"}},
{"ph":"i","name":"a","ts":3,"pid":1,"tid":7,"args":{"kind":"alloc","tensor":"t0","bytes":64,"pool":"l1"}},
{"ph":"i","name":"f","ts":60,"pid":1,"tid":7,"args":{"kind":"free","tensor":"t0","bytes":64,"pool":"l1"}},
{"ph":"X","name":"neg","ts":70,"dur":-4,"pid":1,"tid":7},
{"ph":"X","name":"bad","ts":"soon","pid":1,"tid":7},
{"ph":"s","name":"flow","id":9,"bind_id":"f1","ts":1,"pid":1,"tid":7},
{"ph":"s","name":"flow","id":9,"bind_id":"f1","ts":2,"pid":1,"tid":7},
"#;
    let p = dir.path().join("vendor.json");
    std::fs::write(&p, text).unwrap();
    assert_eq!(import::detect(&p).unwrap(), Format::Chrome);
    let (tr, warnings) = import::import(&p, None, &ImportOptions::default()).unwrap();
    let names: Vec<&str> = tr.ops.iter().map(|o| o.name).collect();
    assert_eq!(
        names,
        ["early", "span", "late", "neg"],
        "ops sorted by time"
    );
    // Times are relative to the earliest event (the flow at 1 µs).
    assert_eq!(tr.ops.at(0).start_ns, 250);
    assert_eq!(tr.ops.at(0).end_ns, 2250);
    assert_eq!(tr.ops.at(2).start_ns, 49_500);
    assert_eq!(tr.events.len(), 2);
    assert_eq!(tr.pools[0].name, "l1");
    assert_eq!(tr.counters[0].samples, vec![(4000, 0.5)]);
    let w = warnings.join("\n");
    assert!(w.contains("event 8") && w.contains("negative"), "{w}");
    assert!(w.contains("event 9") && w.contains("ts"), "{w}");
    assert!(w.contains("flow id \"f1\""), "{w}");
    assert!(w.contains("closing bracket"), "{w}");
    // Object form, and garbage that is not a trace at all.
    std::fs::write(&p, r#"{"traceEvents":[{"ph":"X","name":"k","ts":1,"dur":1,"pid":0,"tid":0}],"displayTimeUnit":"ns"}"#).unwrap();
    assert_eq!(
        import::import(&p, Some(Format::Chrome), &ImportOptions::default())
            .unwrap()
            .0
            .ops
            .len(),
        1
    );
    std::fs::write(&p, r#"{"traceEvents": 5}"#).unwrap();
    let e = import::import(&p, Some(Format::Chrome), &ImportOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("vendor.json"), "{e}");
    std::fs::write(&p, "[{\"ph\":\"X\",\"name\":\"k\",\"ts\":1,\"du").unwrap();
    let e = import::import(&p, Some(Format::Chrome), &ImportOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("vendor.json"), "{e}");
    // A cap on events read.
    std::fs::write(&p, text).unwrap();
    let e = import::import(
        &p,
        None,
        &ImportOptions {
            max_events: Some(3),
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("more than 3 events"), "{e}");
}

#[test]
fn perfetto_export_round_trips_with_nothing_lost() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "encdec-1mib.lru.json",
        "edge-resnet50-b3.lru.json",
        "seed-resnet50-b3.ideal.json",
    ] {
        let tr = sample(name);
        let v = to_chrome(&tr);
        // Flow ids are unique per round trip: each appears once out, at most once in.
        let evs = v["traceEvents"].as_array().unwrap();
        let mut outs = std::collections::HashMap::new();
        for e in evs.iter().filter(|e| e.get("bind_id").is_some()) {
            if e.get("flow_out").is_some() {
                *outs
                    .entry(e["bind_id"].as_str().unwrap().to_string())
                    .or_insert(0) += 1;
            }
        }
        assert!(outs.values().all(|&n| n == 1), "{name}");
        let out_events = tr
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Evict | EventKind::StreamOut))
            .count();
        assert_eq!(
            outs.len(),
            out_events,
            "{name}: one flow per round trip (each eviction or stream out)"
        );
        for part in [
            "evicted out",
            "reloaded",
            "streamed in",
            "streamed out",
            "weights",
        ] {
            assert!(
                evs.iter().any(|e| e["ph"] == "M"
                    && e["name"] == "thread_name"
                    && e["args"]["name"] == format!("DMA {part}")),
                "{name}: track {part}"
            );
        }
        assert!(evs.iter().any(|e| e["ph"] == "C"));
        let p = dir.path().join(format!("{name}.chrome.json"));
        std::fs::write(&p, v.to_string()).unwrap();
        assert_eq!(import::detect(&p).unwrap(), Format::Chrome);
        let (back, warnings) = import::import(&p, None, &ImportOptions::default()).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(back.ops, tr.ops, "{name}: ops");
        assert_eq!(back.tensors, tr.tensors, "{name}: tensors");
        assert_eq!(back.events, tr.events, "{name}: events");
        assert_eq!(back.counters, tr.counters, "{name}: counters");
        assert_eq!(back, tr, "{name}: whole trace");
    }
}

#[test]
fn jsonl_stream_imports_and_tails_incrementally() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("run.jsonl");
    let first = concat!(
        "{\"kind\":\"pool\",\"pool\":\"sram\",\"capacity_bytes\":4096,\"alignment\":32}\n",
        "{\"t_ns\":0,\"kind\":\"op_begin\",\"op\":\"conv\",\"thread\":1}\n",
        "{\"t_ns\":10,\"kind\":\"alloc\",\"tensor\":\"x\",\"bytes\":1024,\"pool\":\"sram\",\"offset\":0,\"thread\":1}\n",
        "{\"t_ns\":20,\"kind\":\"evict\",\"tensor\":\"x\",\"bytes\":1024,\"pool\":\"sram\",\"offset\":0,\"thread\":1}\n",
        "{\"t_ns\":30,\"kind\":\"op_end\",\"op\":\"conv\",\"thread\":1}\n",
        "{\"t_ns\":40,\"kind\":\"rel"
    );
    std::fs::write(&p, first).unwrap();
    assert_eq!(import::detect(&p).unwrap(), Format::Jsonl);
    let mut tail = JsonlTail::new(&p);
    assert_eq!(tail.poll().unwrap(), 5);
    assert!(tail.pending_partial, "a half-written line waits");
    let tr = tail.state.snapshot();
    assert_eq!((tr.ops.len(), tr.events.len()), (1, 2));
    assert_eq!(
        tr.events.at(0).op,
        Some(0),
        "events attributed to the open op"
    );
    assert_eq!(tr.pools[0].capacity_bytes, 4096);
    let consumed = tail.offset;
    // The writer finishes the line and appends more; only new bytes are read.
    let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    use std::io::Write;
    f.write_all(b"oad\",\"tensor\":\"x\",\"bytes\":1024,\"pool\":\"sram\",\"offset\":2048,\"thread\":1}\n{\"t_ns\":50,\"kind\":\"free\",\"tensor\":\"x\",\"pool\":\"sram\",\"thread\":1}\n{\"kind\":\"dropped\",\"count\":3}\nnot json\n").unwrap();
    drop(f);
    assert_eq!(tail.poll().unwrap(), 4);
    assert!(tail.offset > consumed && !tail.pending_partial);
    let tr = tail.state.snapshot();
    assert_eq!(tr.events.len(), 4);
    assert_eq!(
        tr.events.at(3).bytes,
        1024,
        "a free without bytes takes the tensor's size"
    );
    assert_eq!(tail.state.dropped, 3);
    assert!(
        tail.state.warnings.iter().any(|w| w.contains("line 9")),
        "{:?}",
        tail.state.warnings
    );
    assert!(verify(&tr, 5).ok(), "{:?}", verify(&tr, 5).violations);
    assert_eq!(tail.poll().unwrap(), 0, "nothing new");
    // Truncated and rewritten: read again from the start.
    std::fs::write(
        &p,
        "{\"t_ns\":5,\"kind\":\"alloc\",\"tensor\":\"y\",\"bytes\":64}\n",
    )
    .unwrap();
    assert_eq!(tail.poll().unwrap(), 1);
    assert_eq!(tail.state.snapshot().tensors.at(0).name, "y");
    let (whole, warnings) = import::import(&p, None, &ImportOptions::default()).unwrap();
    assert_eq!(whole.events.len(), 1);
    assert!(warnings.is_empty());
}

#[test]
fn jsonl_times_start_at_the_streams_earliest_timestamp() {
    // CLOCK_MONOTONIC-stamped (hours since boot), two threads written ring
    // by ring, so thread 1's earlier events come after thread 0's later ones.
    let boot = 30_000_000_000_000u64;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("boot.jsonl");
    let line = |t: u64, rest: &str| format!("{{\"t_ns\":{},{rest}}}\n", boot + t);
    // The pool is declared when the session opens, before the run.
    let mut s = line(
        0,
        r#""kind":"pool","pool":"sram","capacity_bytes":4096,"alignment":32"#,
    );
    s += &line(500, r#""kind":"op_begin","op":"late","thread":0"#);
    s += &line(
        600,
        r#""kind":"alloc","tensor":"a","bytes":64,"pool":"sram","thread":0"#,
    );
    s += &line(900, r#""kind":"op_end","thread":0"#);
    s += &line(100, r#""kind":"op_begin","op":"early","thread":1"#);
    s += &line(
        200,
        r#""kind":"alloc","tensor":"b","bytes":64,"pool":"sram","thread":1"#,
    );
    s += &line(300, r#""kind":"op_end","thread":1"#);
    std::fs::write(&p, s).unwrap();
    let (tr, warnings) = import::import(&p, None, &ImportOptions::default()).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let span = |n: &str| {
        let o = tr.ops.iter().find(|o| o.name == n).unwrap();
        (o.start_ns, o.end_ns)
    };
    assert_eq!(span("early"), (0, 200));
    assert_eq!(span("late"), (400, 800));
    let times: Vec<u64> = tr.events.iter().map(|e| e.t_ns).collect();
    assert_eq!(times, [100, 500], "events in time order, rebased");
    assert_eq!(tr.summary.latency_ns, 800);
    let spillscope::trace::Producer::Instrumented(i) = &tr.meta.producer else {
        panic!("{:?}", tr.meta.producer)
    };
    assert_eq!(i.t0_ns, Some(boot + 100));
    assert!(verify(&tr, 5).ok(), "{:?}", verify(&tr, 5).violations);
}

#[test]
fn diff_agreement_is_total_for_a_trace_and_itself() {
    let a = sample("encdec-1mib.lru.json");
    let ag = agreement(&a, &a, 5);
    assert_eq!((ag.spill_pct, ag.alloc_pct), (100.0, 100.0));
    assert!(ag.unmatched.is_empty());
    let b = sample("encdec-1mib.ideal.json");
    let ag = agreement(&a, &b, 5);
    assert_eq!(ag.spill_b, 0);
    assert_eq!(ag.spill_pct, 0.0);
    assert!(
        ag.alloc_pct > 50.0 && ag.alloc_pct < 100.0,
        "{}",
        ag.alloc_pct
    );
    assert!(!ag.unmatched.is_empty());
    let _ = json!(null);
}

#[cfg(feature = "onnx")]
#[test]
fn sim_calibrates_against_an_ort_profile() {
    let (Some(traces), Some(models)) = (shared_data("traces"), shared_data("models")) else {
        return;
    };
    let o = assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .args([
            "sim",
            models.join("resnet18.shapes.onnx").to_str().unwrap(),
            "--policy",
            "ideal",
            "--calibrate",
        ])
        .arg(traces.join("ort_resnet18.noopt.json"))
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        s.contains("49 of 49 ops measured") && s.contains("Conv"),
        "{s}"
    );
    // The simulated latency is now the sum of the measured kernel times.
    let (ort, _) = import::import(
        &traces.join("ort_resnet18.noopt.json"),
        None,
        &ImportOptions::default(),
    )
    .unwrap();
    let measured: u64 = ort.ops.iter().map(|o| o.end_ns - o.start_ns).sum();
    let o = assert_cmd::Command::cargo_bin("spillscope")
        .unwrap()
        .args([
            "sim",
            models.join("resnet18.shapes.onnx").to_str().unwrap(),
            "--policy",
            "ideal",
            "--weights",
            "ignore",
            "--format",
            "json",
            "--calibrate",
        ])
        .arg(traces.join("ort_resnet18.noopt.json"))
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let lat = v["runs"][0]["latency_ns"].as_u64().unwrap();
    assert!(
        lat >= measured && lat < measured + measured / 100,
        "{lat} vs measured {measured}"
    );
}

#[test]
fn a_huge_file_is_streamed_and_garbage_in_it_is_a_clear_error() {
    // 1.5 GiB, sparse (no disk used): past the in-memory limit, so it is
    // streamed; its NUL bytes are not JSON, so reading stops at once.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("huge.json");
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(3 << 29).unwrap();
    drop(f);
    let t = std::time::Instant::now();
    let e = import::import(&p, Some(Format::Chrome), &ImportOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("huge.json") && e.contains("Chrome trace"), "{e}");
    assert!(
        t.elapsed() < std::time::Duration::from_secs(10),
        "streamed, not slurped"
    );
    let e = import::import(&p, None, &ImportOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("huge.json"), "{e}");
}

/// `n` ops of a stream, each allocating and freeing its own tensor.
fn jsonl_ops(tag: &str, n: usize) -> String {
    let mut s = String::from("{\"kind\":\"pool\",\"pool\":\"sram\",\"capacity_bytes\":4096}\n");
    for i in 0..n {
        let t = 10 * i as u64;
        s += &format!(
            "{{\"t_ns\":{t},\"kind\":\"op_begin\",\"op\":\"{tag}{i}\"}}\n{{\"t_ns\":{},\"kind\":\"op_end\"}}\n",
            t + 5
        );
    }
    s
}

#[test]
fn a_followed_stream_replaced_by_a_larger_one_is_read_again_not_mixed() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("run.jsonl");
    std::fs::write(&p, jsonl_ops("old", 1000)).unwrap();
    let mut tail = JsonlTail::new(&p);
    tail.poll().unwrap();
    assert_eq!(tail.state.snapshot().ops.len(), 1000);
    // Rewritten in place, larger: its first op differs from the old one.
    std::fs::write(&p, jsonl_ops("new", 3000)).unwrap();
    tail.poll().unwrap();
    let tr = tail.state.snapshot();
    assert_eq!(
        tr.ops.len(),
        3000,
        "old ops kept, or the new file read from the old offset"
    );
    assert_eq!(tr.ops.at(0).name, "new0");
    assert_eq!(tail.replaced, 1);
    // Replaced by `mv` (another inode) with the same first line.
    let other = dir.path().join("next.jsonl");
    std::fs::write(&other, jsonl_ops("new", 3500)).unwrap();
    std::fs::rename(&other, &p).unwrap();
    tail.poll().unwrap();
    assert_eq!(tail.state.snapshot().ops.len(), 3500);
    assert_eq!(tail.replaced, 2);
    // Appending is not replacing.
    let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    use std::io::Write;
    f.write_all(b"{\"t_ns\":99999,\"kind\":\"op_begin\",\"op\":\"more\"}\n{\"t_ns\":100000,\"kind\":\"op_end\"}\n")
        .unwrap();
    drop(f);
    tail.poll().unwrap();
    assert_eq!((tail.state.snapshot().ops.len(), tail.replaced), (3501, 2));
    let (whole, _) = import::import(&p, None, &ImportOptions::default()).unwrap();
    assert_eq!(whole.ops.len(), 3501);
}

#[test]
fn a_utf8_byte_order_mark_is_accepted_by_every_json_reader() {
    let dir = tempfile::tempdir().unwrap();
    let bom = |name: &str, text: &str| {
        let p = dir.path().join(name);
        let mut b = vec![0xef, 0xbb, 0xbf];
        b.extend_from_slice(text.as_bytes());
        std::fs::write(&p, b).unwrap();
        p
    };
    // A stream: the BOM line is the pool declaration, whose capacity counts.
    let p = bom("run.jsonl", &jsonl_ops("op", 3));
    let (tr, w) = import::import(&p, None, &ImportOptions::default()).unwrap();
    assert_eq!(
        (tr.ops.len(), tr.pools[0].capacity_bytes),
        (3, 4096),
        "{w:?}"
    );
    // A graph JSON and a trace.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let g = std::fs::read_to_string(root.join("tests/data/encoder_decoder.json")).unwrap();
    let gp = bom("g.json", &g);
    let graph = spillscope::graph::load(&gp, &Default::default()).unwrap();
    assert_eq!(graph.ops.len(), 139);
    let t = std::fs::read_to_string(root.join("sample-traces/encdec-1mib.lru.json")).unwrap();
    let tp = bom("t.json", &t);
    assert!(spillscope::trace::Trace::load(&tp).is_ok());
    assert!(spillscope::trace::Trace::load_streamed(&tp).is_ok());
    let (back, _) = import::import(&tp, None, &ImportOptions::default()).unwrap();
    assert_eq!(back.events.len(), Trace::load(&tp).unwrap().events.len());
}

/// An ONNX Runtime node event outside every `model_run` (moved past the
/// last run) is named in a warning, not dropped without a word.
#[test]
fn an_ort_node_outside_every_run_is_named() {
    let Some(dir) = shared_data("traces") else {
        return;
    };
    let src = dir.join("ort_squeezenet1_1.noopt.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&src).unwrap()).unwrap();
    let events = v.as_array_mut().unwrap();
    let last_end = events
        .iter()
        .filter(|e| e["name"] == "model_run")
        .map(|e| e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let i = events
        .iter()
        .rposition(|e| {
            e["name"]
                .as_str()
                .is_some_and(|n| n.ends_with("_kernel_time"))
        })
        .unwrap();
    events[i]["ts"] = json!(last_end + 1000.0);
    let name = events[i]["name"]
        .as_str()
        .unwrap()
        .trim_end_matches("_kernel_time")
        .to_string();
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("ort.json");
    std::fs::write(&p, v.to_string()).unwrap();
    let (_, warnings) = import::import(&p, None, &ImportOptions::default()).unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("1 node event lies outside every model_run") && w.contains(&name)),
        "{warnings:?}"
    );
}

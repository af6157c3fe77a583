//! Analyses with known answers on hand-built graphs: round trips and
//! oscillation, classification, hotspots, the timeline index, diff.

use crate::common;
use common::{graph, test_hw};
use spillscope::analysis::{classify, diff, hotspots, memmap, roundtrips, timeline::TimelineIndex};
use spillscope::sim::{simulate, EvictionPolicy, SimConfig, WeightMode};
use spillscope::trace::ledger::Ledger;
use spillscope::trace::Trace;

const K: u64 = 1024;

fn run(g: &spillscope::graph::Graph, cap: u64, p: EvictionPolicy) -> Trace {
    simulate(
        g,
        &test_hw(cap),
        &SimConfig {
            policy: p,
            weights: WeightMode::Ignore,
            ..Default::default()
        },
    )
    .unwrap()
}

/// `m` is read by the last op of each of `k` blocks; each block's first op
/// needs the whole pool (1 + 2 units of 3), so `m` is pushed out and brought
/// back exactly once per block.
fn oscillating_graph(k: usize) -> spillscope::graph::Graph {
    let mut ops: Vec<(String, Vec<String>, Vec<String>)> = vec![(
        "op0".into(),
        vec!["x".into()],
        vec!["m".into(), "r0".into()],
    )];
    for j in 1..=k {
        ops.push((
            format!("a{j}"),
            vec![format!("r{}", j - 1)],
            vec![format!("p{j}")],
        ));
        ops.push((
            format!("b{j}"),
            vec![format!("p{j}")],
            vec![format!("q{j}")],
        ));
        ops.push((
            format!("c{j}"),
            vec![format!("q{j}"), "m".into()],
            vec![format!("r{j}")],
        ));
    }
    let owned: Vec<(&str, Vec<&str>, Vec<&str>)> = ops
        .iter()
        .map(|(n, i, o)| {
            (
                n.as_str(),
                i.iter().map(|s| s.as_str()).collect(),
                o.iter().map(|s| s.as_str()).collect(),
            )
        })
        .collect();
    let refs: Vec<(&str, &[&str], &[&str])> = owned
        .iter()
        .map(|(n, i, o)| (*n, i.as_slice(), o.as_slice()))
        .collect();
    let sizes: Vec<(String, u64)> = (1..=k).map(|j| (format!("p{j}"), 2 * K)).collect();
    let sizes: Vec<(&str, u64)> = sizes.iter().map(|(n, b)| (n.as_str(), *b)).collect();
    let last = format!("r{k}");
    graph(&refs, K, &sizes, &[last.as_str()])
}

#[test]
fn a_tensor_oscillates_exactly_k_times() {
    for k in [1usize, 2, 5] {
        let g = oscillating_graph(k);
        for p in [
            EvictionPolicy::Lru,
            EvictionPolicy::Belady,
            EvictionPolicy::Lifetime,
        ] {
            let tr = run(&g, 3 * K, p);
            assert!(spillscope::trace::verify::verify(&tr, 5).ok());
            let rts = roundtrips::round_trips(&tr, &Ledger::of(&tr));
            // Only m is evicted; an a_j first-fit leaves no hole for goes out
            // by streaming, and that is a round trip of its own.
            let evicted: Vec<_> = rts
                .iter()
                .filter(|t| t.trips.iter().any(|r| r.out == roundtrips::Out::Evicted))
                .collect();
            assert_eq!(evicted.len(), 1, "{p} k={k}: only m is evicted");
            let m = evicted[0];
            assert_eq!(m.name, "m");
            assert!(
                rts.iter().filter(|t| t.name != "m").all(|t| t
                    .trips
                    .iter()
                    .all(|r| r.out == roundtrips::Out::StreamedOut && r.back.is_some())),
                "{p} k={k}: {:#?}",
                rts
            );
            assert_eq!(m.trips.len(), k, "{p}");
            // Trip j is reloaded by c_j (op 3j), after being pushed out by a_j
            // or b_j (first-fit may leave a_j's 2-unit output no hole beside
            // r_{j-1} and stream it; b_j then evicts m to bring it back).
            for (j, t) in m.trips.iter().enumerate() {
                let j = j + 1;
                assert_eq!(t.back_op, Some(3 * j), "{p} k={k}: {:#?}", m.trips);
                assert!(t.out_op == Some(3 * j - 2) || t.out_op == Some(3 * j - 1));
                assert_eq!(t.ops_skipped, 3 * j - t.out_op.unwrap() - 1);
            }
            assert!(
                m.trips[0].written_bytes > 0 && m.trips[1..].iter().all(|t| t.written_bytes == 0),
                "written once, then DRAM stays valid"
            );
            assert_eq!(m.oscillating, k >= roundtrips::OSCILLATION_TRIPS);
            // Written once (then the DRAM copy stays valid), read back k times.
            assert_eq!(m.bytes_moved, K + k as u64 * K);
            assert_eq!(m.evicted_by.iter().map(|x| x.1).sum::<usize>(), k);
        }
    }
}

#[test]
fn classification_splits_capacity_from_lifetime() {
    // Capacity: the LRU case of sim_policies (live 4 units > 3).
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
    let tr = run(&g, 3 * K, EvictionPolicy::Lru);
    let c = classify::classify(&tr, &Ledger::of(&tr));
    assert_eq!((c.capacity_count, c.lifetime_count), (2, 0));
    assert_eq!(c.capacity_bytes, 2 * K);
    // Lifetime: the fragmentation case (live 4 units = capacity).
    let g = graph(
        &[
            ("op0", &["x"], &["a", "b", "c"]),
            ("op1", &["a"], &["d"]),
            ("op2", &["c"], &["e"]),
            ("op3", &["d"], &["f"]),
            ("op4", &["e"], &["gg"]),
            ("op5", &["f"], &[]),
            ("op6", &["gg"], &["k"]),
            ("op7", &["b", "k"], &["out"]),
        ],
        K,
        &[("k", 2 * K)],
        &["out"],
    );
    let tr = run(&g, 4 * K, EvictionPolicy::Lru);
    let c = classify::classify_with_causes(&tr, &Ledger::of(&tr));
    assert_eq!((c.capacity_count, c.lifetime_count), (0, 1));
    assert!(
        c.spills
            .cause(0)
            .starts_with("fragmentation: largest hole 1.0 KiB < 2.0 KiB needed for k"),
        "{}",
        c.spills.cause(0)
    );
}

#[test]
fn hotspots_add_up_to_the_summary() {
    let g = oscillating_graph(4);
    let tr = run(&g, 3 * K, EvictionPolicy::Lru);
    let hs = hotspots::hotspots(&tr, &Ledger::of(&tr));
    assert_eq!(
        hs.iter().map(|h| h.evicted_bytes).sum::<u64>(),
        tr.summary.spilled_bytes
    );
    assert_eq!(
        hs.iter().map(|h| h.traffic_bytes).sum::<u64>(),
        tr.summary.traffic_bytes
    );
    assert_eq!(
        hs.iter().map(|h| h.reloaded_bytes).sum::<u64>(),
        tr.summary.reloaded_bytes
    );
    assert_eq!(
        hs.iter().map(|h| h.stall_ns).sum::<u64>(),
        tr.summary.stall_ns
    );
    let share: f64 = hs.iter().map(|h| h.latency_share).sum();
    assert!((share - 1.0).abs() < 0.01, "{share}");
    // Every c_j reloads m; reloads per op match the reload events.
    let reload_events = tr
        .events
        .iter()
        .filter(|e| e.kind == spillscope::trace::EventKind::Reload)
        .count() as u64;
    assert_eq!(hs.iter().map(|h| h.reloads).sum::<u64>(), reload_events);
    assert!(hs
        .iter()
        .filter(|h| h.name.starts_with('c'))
        .all(|h| h.reloads >= 1));
    let mut sorted = hs.clone();
    hotspots::sort_hotspots(&mut sorted, hotspots::HotspotKey::Reloaded, false);
    assert!(sorted
        .windows(2)
        .all(|w| w[0].reloaded_bytes >= w[1].reloaded_bytes));
    hotspots::sort_hotspots(&mut sorted, hotspots::HotspotKey::Reloaded, true);
    assert!(sorted
        .windows(2)
        .all(|w| w[0].reloaded_bytes <= w[1].reloaded_bytes));
    hotspots::sort_hotspots(&mut sorted, hotspots::HotspotKey::Stall, false);
    assert!(sorted.windows(2).all(|w| w[0].stall_ns >= w[1].stall_ns));
    let types = hotspots::by_op_type(&hs);
    assert_eq!(types.len(), 1);
    assert_eq!(types[0].ops, tr.ops.len());
}

#[test]
fn timeline_index_agrees_at_every_zoom() {
    let tr = std::sync::Arc::new(run(&oscillating_graph(5), 3 * K, EvictionPolicy::Lru));
    let idx = TimelineIndex::build(&tr, &Ledger::of(&tr));
    let end = idx.end_ns;
    let busy: u64 = tr.ops.iter().map(|o| o.end_ns - o.start_ns).sum();
    for width in [7usize, 80, 300, 5000] {
        let cols = idx.columns(0, end, width);
        assert_eq!(cols.len(), width);
        let dt = end as f64 / width as f64;
        let got: f64 = cols.iter().map(|c| (c.compute + c.stall) * dt).sum();
        assert!(
            (got - busy as f64).abs() / (busy as f64) < 0.05,
            "width {width}: {got} vs {busy}"
        );
        let ev: u32 = cols.iter().map(|c| c.evicts).sum();
        let rl: u32 = cols.iter().map(|c| c.reloads).sum();
        let reloads = tr
            .events
            .iter()
            .filter(|e| e.kind == spillscope::trace::EventKind::Reload)
            .count() as u32;
        assert_eq!((ev, rl), (tr.summary.spill_count as u32, reloads));
    }
    // Deep zoom into one op: that op fills the window.
    let op = &tr.ops.at(4);
    let cols = idx.columns(op.start_ns, op.end_ns, 10);
    assert!(cols
        .iter()
        .all(|c| c.op == Some(4) && c.compute + c.stall > 0.99));
    // Spill navigation.
    let (t1, _) = idx.next_spill(0).unwrap();
    let (t2, _) = idx.next_spill(t1).unwrap();
    assert!(t2 > t1);
    assert_eq!(idx.prev_spill(t2).unwrap().0, t1);
    assert!(idx.prev_spill(t1).is_none());
}

#[test]
fn memory_map_placements_never_overlap_in_time_and_space() {
    let tr = run(&oscillating_graph(3), 3 * K, EvictionPolicy::Lru);
    let ps = memmap::placements(&tr);
    assert!(!ps.is_empty());
    for (i, a) in ps.iter().enumerate() {
        for b in &ps[i + 1..] {
            let time = a.t0 < b.t1 && b.t0 < a.t1;
            let space = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
            assert!(!(time && space), "{a:?} overlaps {b:?}");
        }
    }
    // m is placed once initially plus once per reload.
    let m = tr.tensors.iter().find(|t| t.name == "m").unwrap().id;
    assert_eq!(ps.iter().filter(|p| p.tensor == m).count(), 4);
}

#[test]
fn diff_names_the_tensors_and_ops_that_changed() {
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
    let a = run(&g, 3 * K, EvictionPolicy::Lru);
    let b = run(&g, 3 * K, EvictionPolicy::Belady);
    let d = diff::diff(&a, &b);
    assert!(d.only_in_a.is_empty() && d.only_in_b.is_empty());
    assert_eq!(d.ops.len(), 7);
    assert_eq!(d.traffic_delta_bytes, -(2 * K as i64));
    // a moved under LRU only; it leads the tensor list (or ties with b).
    let ta = d.tensors.iter().find(|t| t.name == "a").unwrap();
    assert_eq!((ta.a_trips, ta.b_trips), (1, 0));
    // Ops by |traffic B-A|, then |duration B-A|: as the tables say.
    let key = |o: &diff::OpDelta| {
        (
            o.traffic_delta().unsigned_abs(),
            o.duration_delta().unsigned_abs(),
        )
    };
    assert!(d.ops.windows(2).all(|w| key(&w[0]) >= key(&w[1])));
}

/// A lifetime spill caused by a tensor freed late: `a`'s last use is op 0,
/// yet it is still resident when op 1 evicts `x` to make room for `y`.
#[test]
fn a_late_free_is_named_as_the_cause() {
    let ev = |t: u64, kind: &str, tensor: usize, offset: u64, op: usize, live: Option<u64>| {
        serde_json::json!({"t_ns": t, "kind": kind, "tensor": tensor, "bytes": 100, "pool": "sram",
            "offset": offset, "op": op, "live_bytes": live})
    };
    let doc = serde_json::json!({
        "schema": "spillscope.trace/1", "source": "instrumented",
        "meta": {"model": "late", "policy": "runtime", "hardware": {}, "config": {}, "tool_version": "t"},
        "pools": [{"name": "sram", "capacity_bytes": 200, "alignment": 1}],
        "tensors": [
            {"id": 0, "name": "a", "bytes": 100, "kind": "activation", "pool": "sram", "producer": null, "consumers": [0]},
            {"id": 1, "name": "x", "bytes": 100, "kind": "activation", "pool": "sram", "producer": null, "consumers": [0, 2]},
            {"id": 2, "name": "y", "bytes": 100, "kind": "activation", "pool": "sram", "producer": 1, "consumers": []}
        ],
        "ops": [
            {"id": 0, "name": "op0", "op_type": "Add", "start_ns": 0, "end_ns": 10, "stall_ns": 0, "inputs": [0, 1], "outputs": [], "streamed": []},
            {"id": 1, "name": "op1", "op_type": "Add", "start_ns": 10, "end_ns": 20, "stall_ns": 0, "inputs": [], "outputs": [2], "streamed": []},
            {"id": 2, "name": "op2", "op_type": "Add", "start_ns": 20, "end_ns": 30, "stall_ns": 0, "inputs": [1], "outputs": [], "streamed": []}
        ],
        "events": [
            ev(0, "alloc", 0, 0, 0, None),
            ev(0, "alloc", 1, 100, 0, None),
            ev(10, "evict", 1, 100, 1, Some(100)),
            ev(10, "alloc", 2, 100, 1, None)
        ],
        "counters": [],
        "summary": {"latency_ns": 30, "spill_count": 1, "spilled_bytes": 100, "reloaded_bytes": 0,
            "traffic_bytes": 100, "stall_ns": 0, "peak_live_bytes": 200, "peak_resident_bytes": 200,
            "lower_bound_traffic_bytes": 0}
    });
    let tr = spillscope::trace::Trace::from_slice(&serde_json::to_vec(&doc).unwrap()).unwrap();
    let l = Ledger::of(&tr);
    let c = classify::classify_with_causes(&tr, &l);
    assert_eq!((c.capacity_count, c.lifetime_count), (0, 1));
    assert_eq!(
        c.spills.cause(0),
        "late free: a (100 B) still resident after its last use at op 0"
    );
    // The cheap split (first frame) keeps the recorded reason only.
    assert_ne!(
        classify::classify(&tr, &l).spills.cause(0),
        c.spills.cause(0)
    );
}

/// An instrumented run (a runtime's JSONL stream: events only, no
/// `live_bytes` counter): what was resident while each op ran.
fn instrumented_trace() -> Trace {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    let lines = [
        r#"{"kind":"pool","pool":"sram","capacity_bytes":65536,"alignment":64}"#,
        // op0: a arrives.
        r#"{"t_ns":100,"kind":"op_begin","op":"op0","thread":0}"#,
        r#"{"t_ns":110,"kind":"alloc","tensor":"a","bytes":4096,"pool":"sram","thread":0}"#,
        r#"{"t_ns":190,"kind":"op_end","thread":0}"#,
        // op1: b arrives, then a leaves: 12 KiB at its height.
        r#"{"t_ns":200,"kind":"op_begin","op":"op1","thread":0}"#,
        r#"{"t_ns":210,"kind":"alloc","tensor":"b","bytes":8192,"pool":"sram","thread":0}"#,
        // A second thread's op spans op1 and op2.
        r#"{"t_ns":250,"kind":"op_begin","op":"side","thread":1}"#,
        r#"{"t_ns":260,"kind":"free","tensor":"a","pool":"sram","thread":0}"#,
        r#"{"t_ns":290,"kind":"op_end","thread":0}"#,
        // op2: b is pushed out; 8 KiB were there when it started.
        r#"{"t_ns":300,"kind":"op_begin","op":"op2","thread":0}"#,
        r#"{"t_ns":310,"kind":"evict","tensor":"b","bytes":8192,"pool":"sram","thread":0}"#,
        r#"{"t_ns":390,"kind":"op_end","thread":0}"#,
        r#"{"t_ns":395,"kind":"op_end","thread":1}"#,
        // op3: nothing on chip.
        r#"{"t_ns":400,"kind":"op_begin","op":"op3","thread":0}"#,
        r#"{"t_ns":490,"kind":"op_end","thread":0}"#,
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let (tr, warnings) = spillscope::trace::import::import(
        &path,
        None,
        &spillscope::trace::import::ImportOptions::default(),
    )
    .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    tr
}

#[test]
fn resident_bytes_per_op_of_an_instrumented_run() {
    use spillscope::analysis::residency::resident_by_step;
    let tr = instrumented_trace();
    assert!(tr.counters.is_empty(), "events only");
    let names: Vec<&str> = tr.ops.iter().map(|o| o.name).collect();
    let per_op = resident_by_step(&tr, "sram");
    let by_name: std::collections::HashMap<&str, u64> =
        names.iter().copied().zip(per_op.iter().copied()).collect();
    assert_eq!(per_op.len(), tr.ops.len());
    assert_eq!(by_name["op0"], 4 * K);
    assert_eq!(by_name["op1"], 12 * K);
    assert_eq!(by_name["op2"], 8 * K);
    assert_eq!(by_name["op3"], 0);
    assert_eq!(
        by_name["side"],
        12 * K,
        "the other thread's op saw the peak"
    );
    assert_eq!(resident_by_step(&tr, "no-such-pool"), vec![0; tr.ops.len()]);
    // The report's series (headless) carries the same profile.
    let r = spillscope::analysis::report::build(&tr);
    let peak = r
        .series
        .resident_bytes
        .iter()
        .map(|s| s.1 as u64)
        .max()
        .unwrap();
    assert_eq!(peak, 12 * K);
    assert!(r.series.resident_bytes.windows(2).all(|w| w[0].0 <= w[1].0));
}

#[test]
fn the_overview_charts_residency_when_a_trace_has_no_live_counter() {
    let tr = instrumented_trace();
    let a = spillscope_explorer::app::App::new(vec![spillscope_explorer::data::Dataset::build(
        "run.jsonl",
        tr,
    )]);
    assert!(a.data[0].live_is_resident);
    assert_eq!(a.data[0].live_by_step.iter().max(), Some(&(12 * K)));
    let theme =
        spillscope_explorer::theme::Theme::load(None, spillscope_explorer::theme::ColorMode::None)
            .unwrap();
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, 30)).unwrap();
    t.draw(|f| spillscope_explorer::ui::draw(f, &a, &theme))
        .unwrap();
    let s = t.backend().to_string();
    assert!(s.contains("resident bytes per op vs capacity"), "{s}");
    assert!(s.contains("cap 64.0"), "{s}");
    // Bars: level glyphs in the chart (not a blank box).
    assert!(s.contains('█'), "{s}");
}

/// The sort keys of rows grouped by op name are their ungrouped twins'
/// with the calls column after them.
#[test]
fn the_by_name_sort_keys_extend_their_twins_with_calls() {
    use spillscope::analysis::hotspots::HotspotKey;
    assert_eq!(HotspotKey::SPILL_BY_NAME[..9], HotspotKey::SPILL);
    assert_eq!(HotspotKey::MEASURED_BY_NAME[..7], HotspotKey::MEASURED);
    assert_eq!(HotspotKey::SPILL_BY_NAME[9], HotspotKey::Calls);
    assert_eq!(HotspotKey::MEASURED_BY_NAME[7], HotspotKey::Calls);
}

/// The table an open trace keeps (64 bytes per op, rows made on demand)
/// gives every row, every order and the grouping by name exactly as the
/// rows computed whole: on a simulated trace with evictions, reloads and
/// frees, and on the same trace with names repeated (types mixed).
#[test]
fn the_hotspot_table_matches_the_rows_computed_whole() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/encdec-1mib.lru.json");
    let tr = Trace::load(&path).unwrap();
    let mut renamed = tr.clone();
    // Every third op takes the name of the op before it.
    let names: Vec<String> = renamed.ops.iter().map(|o| o.name.to_string()).collect();
    renamed.ops.update_all(|i, o| {
        if i % 3 == 2 {
            o.name = names[i - 1].as_str().into();
        }
    });
    for (tr, repeats) in [(tr, false), (renamed, true)] {
        let ledger = Ledger::of(&tr);
        let whole = hotspots::hotspots(&tr, &ledger);
        assert!(whole.iter().any(|h| h.reloads > 0 && h.allocs > 0));
        assert!(whole.iter().any(|h| h.peak_bytes > 0));
        let table = hotspots::Hotspots::of(&std::sync::Arc::new(tr.clone()), &ledger);
        assert_eq!(table.len(), whole.len());
        assert_eq!(table.iter().collect::<Vec<_>>(), whole);
        for key in hotspots::HotspotKey::ALL {
            for asc in [false, true] {
                assert_eq!(
                    table.order(key, asc),
                    hotspots::order_hotspots(&whole, key, asc),
                    "{key:?} ascending {asc}"
                );
            }
        }
        let grouped = table.by_name_if_repeated();
        let expected = hotspots::by_name_if_repeated(&whole);
        assert_eq!(grouped.iter().collect::<Vec<_>>(), expected);
        assert_eq!(grouped.is_empty(), !repeats);
        assert_eq!(
            grouped.order(hotspots::HotspotKey::Calls, false),
            hotspots::order_hotspots(&expected, hotspots::HotspotKey::Calls, false)
        );
    }
}

#[test]
fn hotspots_group_by_name_only_when_a_name_repeats() {
    let g = oscillating_graph(4);
    let tr = run(&g, 3 * K, EvictionPolicy::Lru);
    let hs = hotspots::hotspots(&tr, &Ledger::of(&tr));
    // A simulation's ops have distinct names: grouping would copy every row.
    assert!(hs.len() > 3);
    assert!(hotspots::by_name_if_repeated(&hs).is_empty());
    let d = spillscope::session::dataset::Dataset::build("x", tr);
    assert!(d.hotspots_by_name.is_empty() && !d.hotspots.is_empty());
    // Two rows sharing a name: grouped, every call in one row.
    let mut twice = hs.clone();
    twice[1].name = twice[0].name.clone();
    let grouped = hotspots::by_name_if_repeated(&twice);
    assert_eq!(grouped.len(), hs.len() - 1);
    assert_eq!(grouped[0].calls, 2);
    assert_eq!(grouped, hotspots::by_name(&twice));
}

/// The lifetime spills a view finds by search are exactly the spills
/// classed lifetime, in order, from any event on (every bundled trace; some
/// have both classes).
#[test]
fn the_lifetime_spills_found_by_search_are_the_ones_classed_lifetime() {
    let mut both = 0;
    for p in crate::common::sample_trace_paths() {
        let tr = spillscope::trace::Trace::load(&p).unwrap();
        let c = classify::classify(&tr, &Ledger::of(&tr));
        let sp = &c.spills;
        let classed: Vec<usize> = (0..sp.len())
            .filter(|&k| sp.class(k) == classify::SpillClass::Lifetime)
            .collect();
        both += usize::from(c.capacity_count > 0 && !classed.is_empty());
        let found: Vec<usize> = (0..).map_while(|j| sp.lifetime_spill(j)).collect();
        assert_eq!(found, classed, "{}", p.display());
        let step = (tr.events.len() / 500).max(1);
        for e in (0..=tr.events.len()).step_by(step) {
            let want = (classed.iter())
                .position(|&k| sp.event(k) >= e)
                .unwrap_or(classed.len());
            assert_eq!(
                sp.lifetime_from_event(e),
                want,
                "{} from event {e}",
                p.display()
            );
        }
    }
    assert!(both > 0, "no bundled trace has both classes of spill");
}

//! Mutation tests (issue: hardening): a valid trace with random damage —
//! values changed in place (ids out of range, times reordered, sizes
//! zeroed or huge, events of the wrong kind) — either fails to load with
//! an error, or loads and then survives verify, the explorer's analyses and
//! the report without panicking.

use proptest::prelude::*;
use spillscope::trace::Trace;

fn base() -> serde_json::Value {
    let p =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/encdec-1mib.lru.json");
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

/// Element `i` (modulo the length) of the array `v[key]`, or None when that
/// array is missing or empty (an earlier damage may have truncated it).
fn nth<'a>(v: &'a mut serde_json::Value, key: &str, i: usize) -> Option<&'a mut serde_json::Value> {
    let a = v.get_mut(key)?.as_array_mut()?;
    let n = a.len();
    if n == 0 {
        None
    } else {
        a.get_mut(i % n)
    }
}

/// One in-place damage to the JSON tree, chosen by `pick`.
fn damage(v: &mut serde_json::Value, pick: u64, value: i64) {
    let i = (pick >> 8) as usize;
    let field = match pick % 12 {
        0 => ("events", "tensor", value.into()),
        1 => ("events", "t_ns", value.unsigned_abs().into()),
        2 => ("events", "op", value.into()),
        3 => (
            "events",
            "kind",
            ["alloc", "free", "evict", "reload", "recompute"][i % 5].into(),
        ),
        4 => ("events", "offset", value.into()),
        5 => ("events", "bytes", value.unsigned_abs().into()),
        6 => ("ops", "inputs", serde_json::json!([value])),
        7 => ("ops", "end_ns", value.unsigned_abs().into()),
        8 => ("ops", "start_ns", value.unsigned_abs().into()),
        9 => ("pools", "capacity_bytes", value.unsigned_abs().into()),
        10 => {
            if let Some(a) = v["events"].as_array_mut() {
                let n = a.len().max(1);
                a.truncate(i % n);
            }
            return;
        }
        _ => ("tensors", "consumers", serde_json::json!([value, value])),
    };
    let (array, key, new) = field;
    let i = if array == "pools" { 0 } else { i };
    if let Some(e) = nth(v, array, i) {
        e[key] = new;
    }
}

fn survive(tr: Trace) {
    let _ = spillscope::trace::verify::verify(&tr, 10);
    let d = spillscope_explorer::data::Dataset::build("mutant", tr);
    let _ = d.end_ns();
    let _ = spillscope::analysis::report::build(&d.trace);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]
    #[test]
    fn damaged_traces_load_with_an_error_or_survive(picks in proptest::collection::vec((any::<u64>(), -5i64..200_000), 1..4)) {
        let mut v = base();
        for (p, val) in picks {
            damage(&mut v, p, val);
        }
        let bytes = serde_json::to_vec(&v).unwrap();
        // The streamed parser (used when memory is short) agrees exactly:
        // the same trace, or an error too.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        std::fs::write(&path, &bytes).unwrap();
        let streamed = Trace::load_streamed(&path);
        match Trace::from_slice(&bytes) {
            Ok(tr) => {
                let s = streamed.map_err(|e| e.to_string());
                prop_assert!(s.as_ref() == Ok(&tr), "streamed load differs: {:?}", s.err());
                survive(tr);
            }
            Err(e) => prop_assert!(streamed.is_err(), "only the streamed parser accepted it: {e}"),
        }
    }
}

#[test]
fn streamed_and_whole_loads_agree_on_every_sample() {
    let mut n = 0;
    for p in crate::common::sample_trace_paths() {
        let Ok(whole) = Trace::load(&p) else { continue };
        let streamed = Trace::load_streamed(&p).unwrap();
        assert!(whole == streamed, "{}", p.display());
        n += 1;
    }
    assert!(n >= 3, "only {n} sample traces found");
}

#[test]
fn streamed_load_refuses_dangling_ids_and_wrong_schemas_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.json");
    let mut v = base();
    v["events"][0]["tensor"] = 1_000_000.into();
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    let e = Trace::load_streamed(&path).unwrap_err().to_string();
    assert!(
        e.contains("bad.json") && e.contains("refers to tensor 1000000"),
        "{e}"
    );
    let mut v = base();
    v["schema"] = "other/9".into();
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    let e = Trace::load_streamed(&path).unwrap_err().to_string();
    assert!(e.contains("bad.json") && e.contains("schema"), "{e}");
}

/// The case CI found: the events are truncated to none, then a second damage
/// aims at an event. The damage is skipped, and the emptied trace loads with
/// an error or survives like any other mutant.
#[test]
fn damage_after_truncating_every_event_is_skipped() {
    let mut v = base();
    damage(&mut v, 10, 0);
    assert_eq!(v["events"].as_array().map(Vec::len), Some(0));
    damage(&mut v, 9_091_276_235_259_458_604, 0);
    damage(&mut v, 0, 5);
    assert_eq!(v["events"].as_array().map(Vec::len), Some(0));
    let bytes = serde_json::to_vec(&v).unwrap();
    if let Ok(tr) = Trace::from_slice(&bytes) {
        survive(tr);
    }
}

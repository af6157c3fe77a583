//! Explorer state logic without a terminal: key -> action -> new state.

use crate::common;
use common::sample_trace as trace;

use common::screen::render;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use spillscope_explorer::app::{update, App, Effect, Msg, Target, View};
use spillscope_explorer::data::Dataset;
use spillscope_explorer::keys::{footer_fit, footer_hints, help_rows, BINDINGS};
use std::path::Path;

fn app() -> App {
    App::new(vec![Dataset::build("lru", trace("encdec-1mib.lru.json"))])
}

fn key(app: &mut App, code: KeyCode) -> Option<Effect> {
    update(app, Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn chars(app: &mut App, s: &str) {
    for c in s.chars() {
        key(app, KeyCode::Char(c));
    }
}

#[test]
fn tab_and_digits_move_between_views() {
    let mut a = app();
    assert_eq!(a.view, View::Overview);
    key(&mut a, KeyCode::Tab);
    assert_eq!(a.view, View::Timeline);
    key(&mut a, KeyCode::BackTab);
    key(&mut a, KeyCode::BackTab);
    assert_eq!(a.view, View::Suggest);
    for (i, v) in View::ALL.iter().enumerate() {
        chars(&mut a, &(i + 1).to_string());
        assert_eq!(a.view, *v);
    }
    key(&mut a, KeyCode::Char('q'));
    assert!(a.quit);
}

#[test]
fn pan_zoom_fit_and_spill_navigation() {
    let mut a = app();
    chars(&mut a, "2");
    let end = a.end_ns();
    assert_eq!(a.window, (0, end));
    chars(&mut a, "+");
    let w1 = a.window;
    assert!(w1.1 - w1.0 <= end / 2 + 1, "{w1:?}");
    chars(&mut a, "l");
    assert!(a.window.0 > w1.0);
    key(&mut a, KeyCode::Left);
    key(&mut a, KeyCode::Left);
    assert_eq!(a.window.0, 0, "pan clamps at the start");
    chars(&mut a, "-");
    chars(&mut a, "-");
    assert_eq!(a.window, (0, end), "zoom out clamps to the run");
    chars(&mut a, "+++");
    chars(&mut a, "0");
    assert_eq!(a.window, (0, end));
    // '.' walks forward through spill events in time order.
    a.cursor = 0;
    chars(&mut a, ".");
    let t1 = a.cursor;
    chars(&mut a, ".");
    let t2 = a.cursor;
    assert!(t1 > 0 && t2 > t1, "{t1} {t2}");
    assert!(
        a.status.contains("reload") || a.status.contains("evict"),
        "{}",
        a.status
    );
    chars(&mut a, ",");
    assert_eq!(a.cursor, t1);
}

#[test]
fn hotspot_sorting_and_enter_jumps_to_the_op() {
    let mut a = app();
    chars(&mut a, "3");
    let d = a.primary().unwrap();
    let first = d.hotspots.get(a.hot.order[0]).unwrap();
    assert!(d
        .hotspots
        .iter()
        .all(|h| h.traffic_bytes <= first.traffic_bytes));
    chars(&mut a, "s");
    assert_eq!(a.hot.key.label(), "evicted");
    chars(&mut a, "s");
    assert_eq!(a.hot.key.label(), "reloaded");
    chars(&mut a, "i");
    let d = a.primary().unwrap();
    let rel: Vec<u64> = a
        .hot
        .order
        .iter()
        .map(|&o| d.hotspots.get(o).unwrap().reloaded_bytes)
        .collect();
    assert!(rel.windows(2).all(|w| w[0] <= w[1]), "ascending after i");
    key(&mut a, KeyCode::Down);
    key(&mut a, KeyCode::Down);
    assert_eq!(a.hot.sel, 2);
    let target = a.hot.order[2];
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.view, View::Timeline);
    assert_eq!(a.focus_op, Some(target));
    let op = &a.primary().unwrap().trace.ops.at(target);
    assert!(a.window.0 <= op.start_ns && op.end_ns <= a.window.1);
}

#[test]
fn search_selects_and_jumps_to_a_tensor() {
    let mut a = app();
    chars(&mut a, "/");
    assert!(a.search.is_some());
    chars(&mut a, "dec3attnnorm");
    let s = a.search.as_ref().unwrap();
    assert!(!s.hits.is_empty());
    assert_eq!(
        s.hits[0].name,
        "dec3.attn.norm",
        "best match first: {:?}",
        &s.hits[..3.min(s.hits.len())]
    );
    assert!(matches!(s.hits[0].target, Target::Tensor(_)));
    assert!(!s.hits[0].indices.is_empty());
    key(&mut a, KeyCode::Enter);
    assert!(a.search.is_none());
    assert_eq!(a.view, View::Tensor);
    let t = a.tensors.tensor.unwrap();
    assert_eq!(
        a.primary().unwrap().trace.tensors.at(t).name,
        "dec3.attn.norm"
    );
    // Esc cancels; keys typed in search do not trigger actions.
    chars(&mut a, "/q");
    assert!(!a.quit);
    key(&mut a, KeyCode::Esc);
    assert!(a.search.is_none());
    // An op hit jumps to the timeline.
    chars(&mut a, "/enc4.ffn.fc1");
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.view, View::Timeline);
    assert!(a.focus_op.is_some());
}

#[test]
fn help_overlay_and_footer_come_from_the_key_table() {
    let mut a = app();
    chars(&mut a, "?");
    assert!(a.help);
    key(&mut a, KeyCode::Esc);
    assert!(!a.help);
    // Every binding's help shows in the view (and mode) it works in.
    use spillscope_explorer::keys::Scope;
    let all = [
        Scope::Live,
        Scope::TimeAxis,
        Scope::List,
        Scope::Hotspots,
        Scope::Memory,
        Scope::Compare,
        Scope::Suggest,
        Scope::Nested,
        Scope::Pools,
        Scope::Sides,
        Scope::CompareTensors,
        Scope::Fits,
        Scope::Names,
    ];
    let rows = help_rows(&all);
    for b in BINDINGS.iter().filter(|b| !b.help.is_empty()) {
        assert!(rows.iter().any(|r| r.1 == b.help));
    }
    // And only there: the Overview lists no time-axis key.
    assert!(!help_rows(View::Overview.scopes())
        .iter()
        .any(|r| r.2 == "time views"));
    let hints = footer_hints(View::Timeline.scopes());
    assert!(hints.iter().any(|h| h.1 == "zoom"));
    assert!(!footer_hints(View::Overview.scopes())
        .iter()
        .any(|h| h.1 == "zoom"));
    // At 80 and 60 columns every footer fits, keeps `? help` and the view's
    // own keys come before the global ones.
    for v in View::ALL {
        for w in [40usize, 60, 80] {
            let fit = footer_fit(v.scopes(), w);
            let used: usize = fit.iter().map(|(k, h)| k.len() + h.len() + 3).sum();
            assert!(used <= w, "{v:?} at {w}: {fit:?}");
            assert!(fit.iter().any(|h| h.1 == "help"), "{v:?} at {w}: {fit:?}");
        }
    }
    let narrow = footer_fit(View::Timeline.scopes(), 60);
    assert!(narrow.iter().any(|h| h.1 == "zoom"), "{narrow:?}");
}

#[test]
fn live_updates_keep_the_last_good_view_and_pause_holds_new_data() {
    let mut a = app();
    // `p` is a live key: outside live mode it does nothing.
    chars(&mut a, "p");
    assert!(!a.paused);
    a.live = true;
    let before = a.primary().unwrap().trace.summary.latency_ns;
    assert_eq!(
        update(&mut a, Msg::FileChanged("x.toml".into())),
        Some(Effect::Refresh)
    );
    assert!(a.refreshing);
    update(
        &mut a,
        Msg::Failed("sched.toml: not a valid schedule config: unknown field `polcy`".into()),
    );
    assert!(a.banner.as_ref().unwrap().contains("polcy"));
    assert_eq!(
        a.primary().unwrap().trace.summary.latency_ns,
        before,
        "last good data kept"
    );
    // Pause: new data waits behind a badge.
    chars(&mut a, "p");
    assert!(a.paused);
    let newer = Dataset::build("belady", trace("encdec-1mib.ideal.json"));
    update(
        &mut a,
        Msg::Loaded {
            slot: 0,
            data: Box::new(newer),
        },
    );
    assert!(a.pending.is_some());
    assert!(a.banner.is_none(), "a good load clears the banner");
    assert_eq!(a.primary().unwrap().trace.summary.latency_ns, before);
    chars(&mut a, "p");
    assert!(a.pending.is_none());
    assert_ne!(a.primary().unwrap().trace.summary.latency_ns, before);
}

#[test]
fn a_growing_stream_waits_for_the_running_job_and_a_config_edit_does_not() {
    let mut a = app();
    a.live = true;
    let changed = |a: &mut App| update(a, Msg::FileChanged("run.jsonl".into()));
    // Nothing running: a change refreshes at once.
    assert_eq!(changed(&mut a), Some(Effect::Refresh));
    assert!(a.in_flight);
    // Appends during the job do not cancel it; they wait for its end...
    assert_eq!(changed(&mut a), None);
    assert_eq!(changed(&mut a), None);
    assert!(a.behind);
    // ...and are read once, when it is done (or failed).
    assert_eq!(update(&mut a, Msg::Done), Some(Effect::Refresh));
    assert!(a.in_flight && !a.behind);
    assert_eq!(update(&mut a, Msg::Done), None, "nothing more was appended");
    assert!(!a.in_flight);
    changed(&mut a);
    changed(&mut a);
    assert_eq!(
        update(&mut a, Msg::Failed("x".into())),
        Some(Effect::Refresh)
    );
    // A model's config edit replaces the run: it cancels the job in flight.
    a.resimulates = true;
    assert!(a.in_flight);
    assert_eq!(changed(&mut a), Some(Effect::Refresh));
}

/// A window of a stream, `ops` ops in, holding about `keep` events.
fn stream_window(ops: u64, keep: usize) -> std::sync::Arc<spillscope::trace::Trace> {
    use common::stream::{op_lines, POOL_LINE};
    let mut s = spillscope::trace::import::jsonl::JsonlState::new("run");
    s.keep(keep);
    s.feed(POOL_LINE, 1);
    let (mut t, mut lines) = (1_000u64, Vec::new());
    for n in 0..ops {
        t = op_lines(n, t, &mut lines);
    }
    for (i, l) in lines.iter().enumerate() {
        s.feed(l, i + 2);
    }
    std::sync::Arc::new(s.snapshot())
}

#[test]
fn time_views_follow_a_stream_window_as_it_moves() {
    let first = stream_window(2_000, 500);
    let from = first.window().unwrap().from_ns;
    assert!(from > 0);
    let mut a = App::new(vec![Dataset::complete("run", first)]);
    a.window = a.full_window();
    assert_eq!(a.window.0, from, "time starts where the window does");
    a.view = View::Timeline;
    chars(&mut a, "+++");
    chars(&mut a, "hhhhhhhhhhhh");
    assert!(a.window.0 >= from, "panning stops at the window's start");
    chars(&mut a, "0");
    assert_eq!(a.window, (from, a.end_ns()));
    // The stream moves on: what the view showed fell out, so it shows
    // what the window holds now.
    let later = stream_window(4_000, 500);
    let from2 = later.window().unwrap().from_ns;
    assert!(from2 > a.end_ns());
    update(
        &mut a,
        Msg::Loaded {
            slot: 0,
            data: Box::new(Dataset::complete("run", later)),
        },
    );
    assert_eq!(a.window, (from2, a.end_ns()));
    assert!(a.cursor >= from2);
    let screen = render(&a, 80, 24);
    assert!(
        screen.contains("x1.0"),
        "fit is x1.0 of the window:\n{screen}"
    );
}

#[test]
fn reader_warnings_show_in_the_banner_until_dismissed_and_again_when_new() {
    let mut a = app();
    assert!(a.banner.is_none());
    let load = |a: &mut App, warnings: &[&str]| {
        let d = Dataset::build("run.jsonl", trace("encdec-1mib.lru.json"))
            .with_warnings(warnings.iter().map(|w| w.to_string()).collect());
        update(
            a,
            Msg::Loaded {
                slot: 0,
                data: Box::new(d),
            },
        );
    };
    load(
        &mut a,
        &["line 5: expected value at line 1 column 1; skipped"],
    );
    let b = a.banner.clone().expect("a skipped line is shown");
    assert!(b.starts_with("run.jsonl: line 5:"), "{b}");
    // Dismissed: the same warnings on the next refresh stay hidden.
    key(&mut a, KeyCode::Esc);
    assert!(a.banner.is_none());
    load(
        &mut a,
        &["line 5: expected value at line 1 column 1; skipped"],
    );
    assert!(a.banner.is_none(), "{:?}", a.banner);
    // A new problem brings it back, naming the newest and counting the rest.
    load(
        &mut a,
        &[
            "line 5: expected value at line 1 column 1; skipped",
            "the runtime dropped 12 events (its buffer was full)",
        ],
    );
    let b = a.banner.clone().expect("new warning shown");
    assert!(
        b.contains("dropped 12 events") && b.contains("+1 more"),
        "{b}"
    );
    // A clean reload clears it.
    load(&mut a, &[]);
    assert!(a.banner.is_none());
}

#[test]
fn tensor_list_navigation_follows_round_trips() {
    let mut a = app();
    chars(&mut a, "4");
    let list = a.tensor_list();
    assert!(list.len() >= 2);
    assert_eq!(a.tensors.tensor, Some(list[0]));
    key(&mut a, KeyCode::Down);
    assert_eq!(a.tensors.tensor, Some(list[1]));
    key(&mut a, KeyCode::Up);
    key(&mut a, KeyCode::Up);
    assert_eq!(a.tensors.tensor, Some(list[0]));
}

#[test]
fn a_quick_open_shows_the_overview_then_the_analyses_arrive() {
    use std::sync::Arc;
    let tr = Arc::new(trace("encdec-1mib.lru.json"));
    let quick = Dataset::quick("lru", tr.clone());
    assert!(!quick.complete && quick.trips.is_empty());
    assert_eq!(
        quick.class.capacity_count, 12,
        "classification is ready at once"
    );
    let mut a = App::new(vec![quick]);
    assert!(a.hot.order.is_empty());
    // A stale completion (for other data) is ignored.
    let other = Dataset::complete("x", Arc::new(trace("encdec-1mib.ideal.json")));
    update(
        &mut a,
        Msg::Analysed {
            slot: 0,
            data: Box::new(other),
        },
    );
    assert!(!a.primary().unwrap().complete);
    update(
        &mut a,
        Msg::Analysed {
            slot: 0,
            data: Box::new(Dataset::complete("lru", tr)),
        },
    );
    let d = a.primary().unwrap();
    assert!(d.complete && !d.trips.is_empty());
    assert_eq!(a.hot.order.len(), d.trace.ops.len());
    assert!(a.tensors.tensor.is_some());
}

/// The Suggestions view: results for a stale trace are ignored, a new primary
/// trace resets them to pending, and Enter on a pin opens that tensor.
#[test]
fn suggestions_arrive_for_the_current_trace_only_and_pin_opens_the_tensor() {
    use spillscope::analysis::suggest::suggest;
    use spillscope::cost::HardwareProfile;
    use spillscope::sim::{simulate, EvictionPolicy, SimConfig, WeightMode};
    use spillscope_explorer::app::SuggestState;
    use std::sync::Arc;
    let g = spillscope::graph::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/long_source_encdec.json"),
        &Default::default(),
    )
    .unwrap();
    let hw = HardwareProfile::preset("seed-npu")
        .unwrap()
        .with_capacity(1600 * 1024)
        .unwrap();
    let cfg = SimConfig {
        policy: EvictionPolicy::Lru,
        weights: WeightMode::Ignore,
        ..Default::default()
    };
    let tr = Arc::new(simulate(&g, &hw, &cfg).unwrap());
    let s = suggest(&g, &hw, &cfg).unwrap();
    let mut a = App::new(vec![Dataset::complete("long", tr.clone())]);
    assert_eq!(a.suggest.state, SuggestState::Pending);
    // A result for some other trace is dropped.
    let other = Arc::new(trace("encdec-1mib.lru.json"));
    update(
        &mut a,
        Msg::Suggested {
            trace: other,
            result: Ok(Box::new(s.clone())),
        },
    );
    assert_eq!(a.suggest.state, SuggestState::Pending);
    update(
        &mut a,
        Msg::Suggested {
            trace: tr.clone(),
            result: Ok(Box::new(s.clone())),
        },
    );
    assert!(matches!(a.suggest.state, SuggestState::Ready(_)));
    key(&mut a, KeyCode::Char('7'));
    assert_eq!(a.view, View::Suggest);
    let pin = s
        .suggestions
        .iter()
        .position(|x| x.kind().as_str() == "pin")
        .unwrap();
    for _ in 0..pin {
        key(&mut a, KeyCode::Down);
    }
    assert_eq!(a.suggest.sel, pin);
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.view, View::Tensor);
    let t = a.tensors.tensor.unwrap();
    assert_eq!(a.data[0].trace.tensors.at(t).name, "enc5.ffn.norm");
    // A newly loaded primary trace resets the view to pending.
    update(
        &mut a,
        Msg::Loaded {
            slot: 0,
            data: Box::new(Dataset::build("again", trace("encdec-1mib.lru.json"))),
        },
    );
    assert_eq!(a.suggest.state, SuggestState::Pending);
    // An error is shown as such.
    let cur = a.data[0].trace.clone();
    update(
        &mut a,
        Msg::Suggested {
            trace: cur,
            result: Err("no graph".into()),
        },
    );
    assert_eq!(
        a.suggest.state,
        SuggestState::Unavailable("no graph".into())
    );
    // Nothing listed: the footer offers no selecting or opening, and the
    // keys do nothing; with a list they are back.
    let lists = |a: &App| a.scopes().contains(&spillscope_explorer::keys::Scope::List);
    a.view = View::Suggest;
    assert!(!lists(&a), "unavailable");
    let cur = a.data[0].trace.clone();
    let none = spillscope::analysis::suggest::Suggestions {
        baseline: s.baseline.clone(),
        suggestions: Vec::new(),
    };
    update(
        &mut a,
        Msg::Suggested {
            trace: cur.clone(),
            result: Ok(Box::new(none)),
        },
    );
    assert!(matches!(a.suggest.state, SuggestState::Ready(_)));
    assert!(!lists(&a), "an empty list");
    let footer = footer_fit(&a.scopes(), 200);
    assert!(
        !footer
            .iter()
            .any(|(k, _)| k.contains("j/k") || k.contains("Enter")),
        "{footer:?}"
    );
    assert_eq!(key(&mut a, KeyCode::Enter), None);
    assert_eq!(a.view, View::Suggest);
    update(
        &mut a,
        Msg::Suggested {
            trace: cur,
            result: Ok(Box::new(s.clone())),
        },
    );
    assert!(lists(&a), "a list");
    assert!(footer_fit(&a.scopes(), 200)
        .iter()
        .any(|(k, _)| k.contains("j/k")));
}

/// A trace written before the ledger opens with its summary recomputed, and
/// the banner says which fields changed.
#[test]
fn a_trace_from_before_the_ledger_says_what_was_recomputed() {
    let legacy = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/legacy/edge-resnet50-b3.lru.v0.json");
    let source = spillscope_explorer::runtime::Source::Traces(vec![legacy], Default::default());
    let (data, _) = source.load_quick().unwrap();
    let a = App::new(data);
    let banner = a.banner.clone().expect("a banner");
    assert!(banner.contains("summary recomputed"), "{banner}");
    assert!(banner.contains("spilled_bytes"), "{banner}");
    assert!(banner.contains("reloaded_bytes"), "{banner}");
}

/// The exact program's bound, found in the background, raises the
/// Overview's bound for the trace it was found for, never for another.
#[test]
fn a_background_bound_applies_to_its_own_trace_only() {
    use spillscope::analysis::optimum::Optimum;
    use spillscope::trace::BoundMethod;
    let tr = std::sync::Arc::new(trace("encdec-1mib.lru.json"));
    let mut a = App::new(vec![Dataset::complete("run", tr.clone())]);
    let own = (
        tr.summary.lower_bound_traffic_bytes,
        tr.summary.lower_bound_method,
    );
    assert_eq!(a.bound_of(&a.data[0]), own);
    let found = |bytes| Optimum {
        plan: None,
        window_bound_bytes: None,
        windows: 1,
        plan_bytes: None,
        exact_bytes: None,
        lp_bound_bytes: Some(bytes),
        variables: 1,
        solve_ms: 1,
        note: None,
        cached: false,
    };
    let higher = own.0 + 1000;
    // For some other trace: ignored.
    let other = std::sync::Arc::new(trace("encdec-1mib.lru.json"));
    update(
        &mut a,
        Msg::Bounded {
            trace: other,
            optimum: Box::new(found(higher)),
        },
    );
    assert_eq!(a.bound_of(&a.data[0]), own);
    // For this one: the tighter bound and its method.
    update(
        &mut a,
        Msg::Bounded {
            trace: tr.clone(),
            optimum: Box::new(found(higher)),
        },
    );
    assert_eq!(a.bound_of(&a.data[0]), (higher, BoundMethod::Lp));
    // A looser one leaves the trace's own.
    update(
        &mut a,
        Msg::Bounded {
            trace: tr,
            optimum: Box::new(found(1)),
        },
    );
    assert_eq!(a.bound_of(&a.data[0]), own);
}

/// A bound the session left unrefined for want of memory reads so on its
/// own trace only (no gap against it), and the status line says why.
#[test]
fn an_unrefined_bound_is_marked_on_its_own_trace_and_the_status_says_why() {
    use spillscope::analysis::figures::BoundState;
    let tr = std::sync::Arc::new(trace("encdec-1mib.lru.json"));
    let mut a = App::new(vec![Dataset::complete("run", tr.clone())]);
    assert_eq!(a.bound_figure(&a.data[0]).state, BoundState::Final);
    let other = std::sync::Arc::new(trace("encdec-1mib.lru.json"));
    let why = "bound not refined (its graph and exact program): 1.1 GiB needed, 700 MiB left of the 2.0 GiB budget";
    update(
        &mut a,
        Msg::Unrefined {
            trace: other,
            reason: why.into(),
        },
    );
    assert_eq!(a.bound_figure(&a.data[0]).state, BoundState::Final);
    update(
        &mut a,
        Msg::Unrefined {
            trace: tr,
            reason: format!("{why}\x1b]0;owned\x07"),
        },
    );
    assert_eq!(a.bound_figure(&a.data[0]).state, BoundState::Unrefined);
    assert!(a.status.starts_with(why), "{}", a.status);
    assert!(!a.status.contains('\x1b'), "escaped: {:?}", a.status);
}

/// The memory map of a trace with several pools shows one pool at a time:
/// `o` cycles them (and wraps), the map's title and placements follow, and
/// the key is offered only where it does something (several pools, the
/// memory map), never on a one-pool trace.
#[test]
fn memory_map_cycles_pools_with_o() {
    let dir = tempfile::tempdir().unwrap();
    let tr = common::matmul_trace(dir.path(), 2, 2, 2);
    let names: Vec<String> = tr.pools.iter().map(|p| p.name.clone()).collect();
    assert_eq!(names, ["L1", "UB", "L0A", "L0B", "L0C"]);
    let mut a = App::new(vec![Dataset::build("mm", tr)]);
    key(&mut a, KeyCode::Char('5'));
    assert_eq!(a.view, View::Memory);
    assert!(footer_hints(&a.scopes()).iter().any(|h| h.1 == "pool"));
    let s = common::screen::render(&a, 80, 24);
    assert!(s.contains("pool L1, 4.0 KiB"), "{s}");
    for (i, want) in names.iter().enumerate().skip(1) {
        key(&mut a, KeyCode::Char('o'));
        assert_eq!(a.memory.pool, i);
        let s = common::screen::render(&a, 80, 24);
        assert!(s.contains(&format!("pool {want},")), "{want}:\n{s}");
    }
    key(&mut a, KeyCode::Char('o'));
    assert_eq!(a.memory.pool, 0, "wraps");
    // One pool: no `o` in the footer or the help.
    let mut one = app();
    key(&mut one, KeyCode::Char('5'));
    assert!(!footer_hints(&one.scopes()).iter().any(|h| h.1 == "pool"));
    assert!(!help_rows(&one.scopes()).iter().any(|r| r.0 == "o"));
}

/// While `?` is open it takes the keys: Down and PgDn scroll it, not the
/// list under it; s (a Hotspots key) does nothing; Esc closes it and the
/// keys reach the list again. Every Hotspots key is in its help rows.
#[test]
fn the_help_overlay_takes_the_keys_while_open() {
    let mut a = app();
    chars(&mut a, "3");
    let sort = a.hot.key;
    key(&mut a, KeyCode::Char('?'));
    assert!(a.help);
    key(&mut a, KeyCode::Down);
    key(&mut a, KeyCode::PageDown);
    key(&mut a, KeyCode::Char('s'));
    assert_eq!(
        (a.hot.sel, a.hot.key),
        (0, sort),
        "the list moved under the help"
    );
    assert_eq!(a.help_scroll, 11);
    key(&mut a, KeyCode::Esc);
    assert!(!a.help);
    key(&mut a, KeyCode::Down);
    assert_eq!(a.hot.sel, 1);
    let rows = help_rows(&a.scopes());
    assert!(rows.iter().any(|r| r.0 == "s/i"), "{rows:?}");
}

/// A model that fits its capacity says so on the Overview and names the
/// capacities where it starts to spill (75 % and 50 % of its peak).
#[test]
fn a_model_that_fits_leads_to_the_capacities_where_it_spills() {
    let g = spillscope::graph::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/encoder_decoder.json"),
        &Default::default(),
    )
    .unwrap();
    let hw = common::test_hw(32 << 20);
    let tr = spillscope::sim::simulate(&g, &hw, &Default::default()).unwrap();
    assert_eq!(tr.summary.spill_count, 0);
    let peak = tr.summary.peak_live_bytes;
    let mut a = App::new(vec![Dataset::build("lru", tr)]);
    a.resimulates = true;
    let screen = common::screen::render(&a, 120, 40).replace("│\"\n\"│", " ");
    let flat: String = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    let at = |pct: u64| spillscope::units::fmt_size_exact(peak * pct / 100 / 1024 * 1024);
    assert!(flat.contains("the model fits"), "{screen}");
    assert!(flat.contains(&at(75)) && flat.contains(&at(50)), "{screen}");
    // `c` is offered and re-runs at 75 %, then 50 %, then as it started.
    use spillscope_explorer::app::share_of_peak;
    assert!(footer_hints(&a.scopes()).iter().any(|(k, _)| *k == "c"));
    assert_eq!(
        key(&mut a, KeyCode::Char('c')),
        Some(Effect::Recapacity(Some(share_of_peak(peak, 75))))
    );
    assert!(
        a.status.contains(&at(75)) && a.status.contains("c: 50 %"),
        "{}",
        a.status
    );
    assert_eq!(
        key(&mut a, KeyCode::Char('c')),
        Some(Effect::Recapacity(Some(share_of_peak(peak, 50))))
    );
    assert!(a.status.contains("c: back to 32"), "{}", a.status);
    // The run at 50 % spills: `c` stays offered to go back.
    let hw = common::test_hw(share_of_peak(peak, 50));
    let tr = spillscope::sim::simulate(&g, &hw, &Default::default()).unwrap();
    assert!(tr.summary.spill_count > 0);
    update(
        &mut a,
        Msg::Loaded {
            slot: 0,
            data: Box::new(Dataset::build("lru", tr)),
        },
    );
    assert!(!a.fits());
    assert!(footer_hints(&a.scopes()).iter().any(|(k, _)| *k == "c"));
    assert_eq!(
        key(&mut a, KeyCode::Char('c')),
        Some(Effect::Recapacity(None))
    );
    assert!(a.capacity_try.is_none());
    // Only the Overview offers it.
    key(&mut a, KeyCode::Char('3'));
    assert!(!footer_hints(&a.scopes()).iter().any(|(k, _)| *k == "c"));
}

/// `?` explains every term of the glossary; at 80x24 the overlay scrolls to
/// them and its title says how many rows are out of sight.
#[test]
fn the_help_overlay_explains_the_terms_and_scrolls_to_them() {
    let mut a = app();
    key(&mut a, KeyCode::Char('?'));
    let top = common::screen::render(&a, 80, 24);
    assert!(top.contains("below: j/k scroll"), "{top}");
    for _ in 0..60 {
        key(&mut a, KeyCode::Down);
    }
    let bottom = common::screen::render(&a, 80, 24);
    let flat: String = bottom.split_whitespace().collect::<Vec<_>>().join(" ");
    for (term, _) in spillscope_explorer::keys::GLOSSARY.iter().rev().take(3) {
        assert!(
            flat.contains(&format!("{term}:")),
            "{term} not reachable:\n{bottom}"
        );
    }
    assert!(bottom.contains(" 0 below"), "{bottom}");
    // Scrolled far past the end, one Up moves the overlay at once: the
    // state holds no scroll beyond what the screen can show.
    key(&mut a, KeyCode::Up);
    let back = common::screen::render(&a, 80, 24);
    assert!(back.contains(" 1 below"), "{back}");
    assert_eq!(
        a.help_scroll + 1,
        spillscope_explorer::ui::help_max_scroll(&a),
        "{back}"
    );
}

/// Live state on screen: the running stage with n of m in the tab bar, and
/// the watched schedule config in the Overview's title.
#[test]
fn running_work_and_the_watched_config_are_on_screen() {
    let mut a = app();
    a.live = true;
    a.config = Some(Path::new("/tmp/x/sched.toml").to_path_buf());
    a.progress = Some(spillscope::session::Progress {
        generation: 1,
        stage: spillscope::session::Stage::Suggest,
        done: 3,
        total: 9,
    });
    let s = common::screen::render(&a, 120, 40);
    assert!(s.contains("re-simulating suggestions 3/9"), "{s}");
    assert!(s.contains("config sched.toml"), "{s}");
    assert!(s.contains("[lru]"), "the policy badge is kept: {s}");
    // Each run that arrives is a load of the config: its count and time.
    let d = Dataset::build("lru", trace("encdec-1mib.lru.json"));
    let at = d.built_at;
    update(
        &mut a,
        Msg::Loaded {
            slot: 0,
            data: Box::new(d.clone()),
        },
    );
    update(
        &mut a,
        Msg::Loaded {
            slot: 0,
            data: Box::new(d),
        },
    );
    assert_eq!((a.config_loads, a.config_loaded_at), (2, Some(at)));
    let secs = at.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() % 86_400;
    let hms = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    for (w, h) in [(120u16, 40u16), (80, 24)] {
        let s = common::screen::render(&a, w, h);
        let title = s.lines().nth(1).unwrap();
        assert!(
            title.contains("sched.toml") && title.contains(&hms) && title.contains('2'),
            "{w}x{h}: {title}"
        );
    }
}

#[test]
fn with_two_traces_b_switches_the_side_views_1_to_5_show() {
    let a_tr = trace("edge-resnet50-b3.lru.json");
    let b_tr = trace("edge-resnet50-b3.ideal.json");
    let (a_peak, b_peak) = (a_tr.summary.peak_live_bytes, b_tr.summary.peak_live_bytes);
    let mut app = App::new(vec![
        Dataset::build("a.json", a_tr),
        Dataset::build("b.json", b_tr),
    ]);
    let policy = |app: &App| app.primary().unwrap().trace.meta.policy.to_string();
    let (pa, pb) = (policy(&app), app.data[1].trace.meta.policy.to_string());
    assert_ne!(pa, pb, "the two samples differ in policy");
    // The Overview shows A and says so; `b` is offered in the footer.
    let s = render(&app, 80, 24);
    assert!(s.contains("A: "), "the tab bar names side A:\n{s}");
    assert!(footer_hints(&app.scopes()).iter().any(|(k, _)| *k == "b"));
    key(&mut app, KeyCode::Char('b'));
    assert_eq!(app.side, 1);
    assert_eq!(policy(&app), pb);
    assert_eq!(app.primary().unwrap().trace.summary.peak_live_bytes, b_peak);
    assert!(app.status.contains("views 1-5 show B"), "{}", app.status);
    let s = render(&app, 80, 24);
    assert!(s.contains("B: "), "the tab bar names side B:\n{s}");
    // Hotspots and the tensor list now come from B.
    key(&mut app, KeyCode::Char('3'));
    let order = |i: usize| app.data[i].hotspots.order(app.hot.key, app.hot.ascending);
    assert_ne!(
        order(0),
        order(1),
        "the two runs rank their ops differently"
    );
    assert_eq!(app.hot.order, order(1));
    // Compare shows both, names both policies and does not offer `b`.
    key(&mut app, KeyCode::Char('6'));
    assert!(!app
        .scopes()
        .contains(&spillscope_explorer::keys::Scope::Sides));
    let s = render(&app, 80, 24);
    assert!(s.contains(&format!("[{pa}] vs [{pb}]")), "{s}");
    // Back to A.
    key(&mut app, KeyCode::Char('1'));
    key(&mut app, KeyCode::Char('b'));
    assert_eq!(app.side, 0);
    assert_eq!(app.primary().unwrap().trace.summary.peak_live_bytes, a_peak);
}

#[test]
fn with_one_trace_b_is_not_offered_and_does_nothing() {
    let mut app = app();
    assert!(!footer_hints(&app.scopes()).iter().any(|(k, _)| *k == "b"));
    key(&mut app, KeyCode::Char('b'));
    assert_eq!(app.side, 0);
}

#[test]
fn in_compare_t_gives_the_list_keys_to_the_tensor_table_and_back() {
    let mut app = App::new(vec![
        Dataset::build("a.json", trace("edge-resnet50-b3.lru.json")),
        Dataset::build("b.json", trace("edge-resnet50-b3.ideal.json")),
    ]);
    key(&mut app, KeyCode::Char('6'));
    let changed: Vec<String> = (0..app.changed.len())
        .map(|i| app.changed_tensor(i).unwrap().name.clone())
        .collect();
    assert!(changed.len() >= 2, "the pair has changed tensors");
    assert!(footer_hints(&app.scopes()).iter().any(|(k, _)| *k == "t"));
    key(&mut app, KeyCode::Char('j'));
    assert_eq!((app.compare.sel, app.compare.tensor_sel), (1, 0));
    key(&mut app, KeyCode::Char('t'));
    assert!(app.compare.on_tensors);
    key(&mut app, KeyCode::Char('j'));
    assert_eq!((app.compare.sel, app.compare.tensor_sel), (1, 1));
    assert_eq!(
        app.status, changed[1],
        "the status line carries the row's whole name"
    );
    // The highlighted row is the tensor's (its name on the screen).
    let s = render(&app, 120, 40);
    assert!(s.contains("whose round trips changed"), "{s}");
    // With too little room for both tables, the one the keys move shows.
    let small = render(&app, 80, 16);
    assert!(small.contains("whose round trips changed"), "{small}");
    key(&mut app, KeyCode::Char('t'));
    let small = render(&app, 80, 16);
    assert!(!small.contains("whose round trips changed"), "{small}");
    key(&mut app, KeyCode::Char('t'));
    // Enter opens it in the Tensor view.
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.view, View::Tensor);
    let t = app.tensors.tensor.unwrap();
    assert_eq!(app.primary().unwrap().trace.tensors.at(t).name, changed[1]);
    // Shown B (no round trips there), Enter opens the tensor on A, where
    // it moves.
    key(&mut app, KeyCode::Char('b'));
    assert_eq!(app.side, 1);
    key(&mut app, KeyCode::Char('6'));
    key(&mut app, KeyCode::Enter);
    assert_eq!((app.view, app.side), (View::Tensor, 0));
    let d = app.primary().unwrap();
    assert!(d.trips.tensors().any(|t| Some(t) == app.tensors.tensor));
    key(&mut app, KeyCode::Char('6'));
    key(&mut app, KeyCode::Char('t'));
    assert!(!app.compare.on_tensors);
    key(&mut app, KeyCode::Char('k'));
    assert_eq!(app.compare.sel, 0);
}

#[test]
fn a_capacity_equal_to_the_peak_is_one_label_on_the_chart() {
    use spillscope::sim::{simulate, EvictionPolicy, SimConfig};
    // A chain whose peak live is 3 units: at exactly that capacity the
    // capacity line is the chart's top row, where the peak is labelled.
    let g = common::graph(
        &[
            ("a", &["x"], &["y"]),
            ("b", &["y"], &["z"]),
            ("c", &["z", "y"], &["out"]),
        ],
        1024,
        &[],
        &["out"],
    );
    let cfg = SimConfig {
        policy: EvictionPolicy::Lru,
        ..Default::default()
    };
    let ideal = simulate(&g, &common::test_hw(1 << 30), &cfg).unwrap();
    let peak = ideal.summary.peak_live_bytes;
    let tr = simulate(&g, &common::test_hw(peak), &cfg).unwrap();
    assert_eq!(tr.summary.capacity_bytes, tr.summary.peak_live_bytes);
    let app = App::new(vec![Dataset::build("chain", tr)]);
    let screen = render(&app, 80, 24);
    let row = screen
        .lines()
        .find(|l| l.contains("peak = cap"))
        .unwrap_or_else(|| panic!("{screen}"));
    let label = format!("peak = cap {}", spillscope::units::fmt_bytes_precise(peak));
    assert!(row.contains(&format!("{label} ")), "{row}");
    assert!(!screen.contains("cap 3.0 KiBB"), "{screen}");
}

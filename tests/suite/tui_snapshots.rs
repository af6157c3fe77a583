//! Every view rendered to ratatui's TestBackend at 80x24 and 120x40 (and
//! ASCII mode), for a bundled trace and for the compare view.

use crate::common;
use common::sample_trace as trace;
use common::screen::render;

use spillscope_explorer::app::{App, View};
use spillscope_explorer::data::Dataset;

fn single() -> App {
    let mut a = App::new(vec![Dataset::build(
        "encdec-1mib.lru.json",
        trace("encdec-1mib.lru.json"),
    )]);
    a.tensors.tensor = a.tensor_list().first().copied();
    // The suggestions the background worker would post.
    let t = a.data[0].trace.clone();
    let (g, hw, cfg) = spillscope::analysis::suggest::inputs_of_trace(&t).unwrap();
    let s = spillscope::analysis::suggest::suggest(&g, &hw, &cfg).unwrap();
    assert!(!s.suggestions.is_empty());
    spillscope_explorer::app::update(
        &mut a,
        spillscope_explorer::app::Msg::Suggested {
            trace: t,
            result: Ok(Box::new(s)),
        },
    );
    a
}

fn pair() -> App {
    App::new(vec![
        Dataset::build(
            "edge-resnet50-b3.lru.json",
            trace("edge-resnet50-b3.lru.json"),
        ),
        Dataset::build(
            "edge-resnet50-b3.ideal.json",
            trace("edge-resnet50-b3.ideal.json"),
        ),
    ])
}

#[test]
fn every_view_at_80x24_and_120x40() {
    for (w, h) in [(80u16, 24u16), (120, 40)] {
        let mut a = single();
        for v in View::ALL {
            a.view = v;
            let name = format!("{}_{}x{}", v.title().to_lowercase(), w, h);
            insta::assert_snapshot!(name, render(&a, w, h));
        }
    }
}

#[test]
fn compare_view_with_two_traces() {
    let mut a = pair();
    a.view = View::Compare;
    insta::assert_snapshot!("compare_pair_80x24", render(&a, 80, 24));
    let s = render(&a, 120, 40);
    assert!(
        s.contains("10 tensors whose round trips changed"),
        "per-tensor differences listed:\n{s}"
    );
    insta::assert_snapshot!("compare_pair_120x40", s);
}

#[test]
fn ascii_mode_uses_no_unicode() {
    let mut a = single();
    a.ascii = true;
    for v in View::ALL {
        a.view = v;
        let s = render(&a, 80, 24);
        assert!(s.is_ascii(), "{v:?} in --ascii has non-ASCII:\n{s}");
    }
    a.view = View::Timeline;
    insta::assert_snapshot!("timeline_ascii_80x24", render(&a, 80, 24));
}

#[test]
fn overlays_render() {
    let mut a = single();
    a.help = true;
    insta::assert_snapshot!("help_80x24", render(&a, 80, 24));
    a.help = false;
    a.search = Some(Default::default());
    if let Some(s) = a.search.as_mut() {
        s.query = "kv".into();
    }
    // Populate hits through the real update path.
    let mut b = single();
    for c in "/kvproj".chars() {
        spillscope_explorer::app::update(
            &mut b,
            spillscope_explorer::app::Msg::Key(crossterm::event::KeyEvent::new(
                crossterm::event::KeyCode::Char(c),
                crossterm::event::KeyModifiers::NONE,
            )),
        );
    }
    insta::assert_snapshot!("search_80x24", render(&b, 80, 24));
    b.search = None;
    b.banner = Some("sched.toml: unknown field `polcy`".into());
    let s = render(&b, 80, 24);
    assert!(s.contains("polcy"));
}

#[test]
fn never_panics_when_resized_down_to_20x5() {
    for v in View::ALL {
        let mut a = pair();
        a.view = v;
        for (w, h) in [
            (20u16, 5u16),
            (21, 6),
            (30, 8),
            (40, 10),
            (19, 4),
            (1, 1),
            (200, 3),
        ] {
            let _ = render(&a, w, h);
        }
    }
}

#[test]
fn long_lists_scroll_to_keep_the_selection_visible() {
    let mut a = pair();
    a.view = View::Hotspots;
    a.hot.sel = a.hot.order.len() - 1;
    let last = a
        .primary()
        .unwrap()
        .trace
        .ops
        .at(a.hot.order[a.hot.sel])
        .name
        .to_string();
    let s = render(&a, 120, 24);
    let tail: String = last
        .chars()
        .rev()
        .take(20)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    assert!(
        s.contains(&tail),
        "selected last row {last:?} not on screen:\n{s}"
    );
    a.view = View::Compare;
    a.compare.sel = a.diff.as_ref().unwrap().ops.len() - 1;
    let name = a.diff.as_ref().unwrap().ops[a.compare.sel].name.clone();
    let s = render(&a, 120, 40);
    let tail: String = name
        .chars()
        .rev()
        .take(20)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    assert!(s.contains(&tail), "{name:?} not on screen:\n{s}");
}

/// A kernel trace (a generated 2x2x2 Matmul of the NPU benchmark, solved
/// by the heuristics): one timeline lane per pipe and, where the screen
/// has room, one fill lane per pool; times in cycles, never milliseconds
/// or frames per second; the peak read as the benchmark's L1+UB.
#[test]
fn kernel_trace_lanes_per_pipe_and_pool_in_cycles() {
    let dir = tempfile::tempdir().unwrap();
    let tr = common::matmul_trace(dir.path(), 2, 2, 2);
    let mut a = App::new(vec![Dataset::build("Matmul_2x2x2.json", tr)]);
    for (w, h) in [(80u16, 24u16), (120, 40)] {
        a.view = View::Overview;
        let s = render(&a, w, h);
        assert!(
            s.contains(" cyc") && !s.contains("fps") && !s.contains(" ms"),
            "{s}"
        );
        assert!(s.contains("L1+UB"), "{s}");
        insta::assert_snapshot!(format!("kernel_overview_{w}x{h}"), s);
        a.view = View::Timeline;
        let s = render(&a, w, h);
        for pipe in [" CUBE", " FIXP", " MTE1", " MTE2"] {
            assert!(s.contains(pipe), "pipe lane {pipe}:\n{s}");
        }
        assert!(s.contains("kcyc") || s.contains("cyc"), "{s}");
        if h >= 40 {
            for pool in [" L1 ", " UB ", " L0A", " L0B", " L0C"] {
                assert!(s.contains(pool), "pool lane {pool}:\n{s}");
            }
        }
        insta::assert_snapshot!(format!("kernel_timeline_{w}x{h}"), s);
    }
}

/// The encoder-decoder on 2 and 4 cores sharing one bus, under pressure:
/// the Overview splits the stall into contention, Hotspots has its column,
/// the timeline one lane per core; every figure on screen is the trace's.
#[test]
fn multi_core_views_show_each_core_and_the_bus_contention() {
    use spillscope::sim::{simulate, EvictionPolicy, SimConfig};
    let g = spillscope::graph::load(
        std::path::Path::new("tests/data/encoder_decoder.json"),
        &Default::default(),
    )
    .unwrap();
    for cores in [2u32, 4] {
        let hw = spillscope::cost::HardwareProfile::preset("seed-npu")
            .unwrap()
            .with_capacity(1 << 20)
            .unwrap()
            .with_cores(cores)
            .unwrap();
        let tr = simulate(&g, &hw, &SimConfig::with_policy(EvictionPolicy::Lru)).unwrap();
        let s = &tr.summary;
        assert!(s.contention_ns > 0 && s.contention_ns <= s.stall_ns);
        let clock = spillscope::units::Clock::default();
        let mut a = App::new(vec![Dataset::build(
            format!("encdec.{cores}cores.json"),
            tr.clone(),
        )]);
        for (w, h) in [(80u16, 24u16), (120, 40)] {
            a.view = View::Overview;
            let o = render(&a, w, h);
            assert!(o.contains(&clock.fmt(s.contention_ns)), "{o}");
            assert!(o.contains("contention") || o.contains("other cores"), "{o}");
            insta::assert_snapshot!(format!("cores{cores}_overview_{w}x{h}"), o);
            a.view = View::Timeline;
            let t = render(&a, w, h);
            for c in 0..cores.min(2) {
                assert!(t.contains(&format!(" core{c} ")), "lane core{c}:\n{t}");
            }
            insta::assert_snapshot!(format!("cores{cores}_timeline_{w}x{h}"), t);
            a.view = View::Hotspots;
            let hs = render(&a, w, h);
            assert!(hs.contains("bus wait"), "{hs}");
            insta::assert_snapshot!(format!("cores{cores}_hotspots_{w}x{h}"), hs);
        }
    }
}

//! Explorer speed on a ~1,000,000-event trace: open (parse + analyses +
//! first frame) and single frames at several zoom levels, at 120x40.
//! Run: `cargo bench --bench explorer`. Prints the trace size and the peak
//! RSS (VmHWM) after opening.

use criterion::{criterion_group, criterion_main, Criterion};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use spillscope::cost::HardwareProfile;
use spillscope::sim::{simulate, SimConfig};
use spillscope::trace::Trace;
use spillscope_explorer::app::{App, View};
use spillscope_explorer::data::Dataset;
use spillscope_explorer::theme::{ColorMode, Theme};
use spillscope_explorer::ui;
use std::hint::black_box;

fn vm_hwm_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM")).map(|l| {
                l.split_whitespace()
                    .nth(1)
                    .unwrap_or("0")
                    .parse::<f64>()
                    .unwrap_or(0.0)
            })
        })
        .unwrap_or(0.0)
        / 1024.0
}

fn million_event_trace(dir: &std::path::Path) -> std::path::PathBuf {
    let g = spillscope::graph::gen::transformer_like(41_700, 64, 128);
    let mut hw = HardwareProfile::preset("seed-npu").unwrap();
    hw.memory.capacity.0 = 160 * 1024;
    let tr = simulate(&g, &hw, &SimConfig::default()).unwrap();
    let p = dir.join("million.json");
    std::fs::write(&p, tr.to_json()).unwrap();
    eprintln!(
        "trace: {} ops, {} events, {:.0} MiB of JSON",
        tr.ops.len(),
        tr.events.len(),
        std::fs::metadata(&p).unwrap().len() as f64 / (1 << 20) as f64
    );
    p
}

fn frame(term: &mut Terminal<TestBackend>, app: &App, theme: &Theme) {
    term.draw(|f| ui::draw(f, app, theme)).unwrap();
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = million_event_trace(dir.path());
    let theme = Theme::load(None, ColorMode::TrueColor).unwrap();
    let mut g = c.benchmark_group("explorer_1M_events");
    g.sample_size(10);
    // What `spillscope view TRACE` does before its first frame: parse, the
    // quick analyses, the App, one frame (the rest follows in the background).
    g.bench_function("open_to_first_frame", |b| {
        b.iter(|| {
            let tr = Trace::load(&path).unwrap();
            let app = App::new(vec![Dataset::quick("million", std::sync::Arc::new(tr))]);
            let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
            frame(&mut term, &app, &theme);
            black_box(app.view);
        })
    });
    let tr = std::sync::Arc::new(Trace::load(&path).unwrap());
    g.bench_function("background_analyses", |b| {
        b.iter(|| black_box(Dataset::complete("million", tr.clone())))
    });
    // The overview's profile for a trace with events only (an instrumented
    // run), here computed for the simulated one's events.
    let pool = tr.pools[0].name.clone();
    g.bench_function("resident_by_step", |b| {
        b.iter(|| {
            black_box(spillscope::analysis::residency::resident_by_step(
                &tr, &pool,
            ))
        })
    });
    let mut app = App::new(vec![Dataset::complete("million", tr)]);
    eprintln!("peak RSS after opening: {:.0} MiB", vm_hwm_mib());
    let end = app.end_ns();
    let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
    g.sample_size(50);
    for (name, view, window) in [
        ("timeline_fit", View::Timeline, (0, end)),
        (
            "timeline_zoom_1pct",
            View::Timeline,
            (end / 2, end / 2 + end / 100),
        ),
        (
            "timeline_zoom_deep",
            View::Timeline,
            (end / 2, end / 2 + 20_000),
        ),
        ("overview", View::Overview, (0, end)),
        ("hotspots", View::Hotspots, (0, end)),
        ("tensor", View::Tensor, (0, end)),
        ("memory_fit", View::Memory, (0, end)),
        ("memory_zoom", View::Memory, (end / 2, end / 2 + end / 1000)),
    ] {
        app.view = view;
        app.window = window;
        app.cursor = window.0;
        g.bench_function(name, |b| b.iter(|| frame(&mut term, &app, &theme)));
    }
    // Panning at deep zoom: each frame a new window.
    app.view = View::Timeline;
    let mut t0 = 0u64;
    g.bench_function("timeline_pan_deep", |b| {
        b.iter(|| {
            t0 = (t0 + 7_919_113) % (end - 50_000);
            app.window = (t0, t0 + 50_000);
            frame(&mut term, &app, &theme)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

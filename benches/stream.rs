//! A live JSONL stream held to the explorer's default window: how fast
//! lines are read and trimmed, what one refresh costs (the snapshot, the
//! quick dataset the first frame shows, the complete analyses) and single
//! frames of the windowed trace at 120x40. The stream has the shape of
//! `scripts/jsonl_stream.py` (64 ops per iteration, an eviction and reload
//! every 8 ops, a stream out and in every 16); 2,000,000 ops are read
//! before timing, so the window has long since started to move.
//! Run: `cargo bench --bench stream`. Prints the window's size and the
//! peak RSS (VmHWM).

use criterion::{criterion_group, criterion_main, Criterion};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use spillscope::limits::LIVE_WINDOW_EVENTS;
use spillscope::trace::import::jsonl::JsonlState;
use spillscope_explorer::app::{App, View};
use spillscope_explorer::data::Dataset;
use spillscope_explorer::theme::{ColorMode, Theme};
use spillscope_explorer::ui;
use std::hint::black_box;
use std::sync::Arc;

#[path = "../tests/common/stream.rs"]
mod stream;
use stream::{op_lines, POOL_LINE};

fn vm_hwm_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let l = s.lines().find(|l| l.starts_with("VmHWM"))?;
            l.split_whitespace().nth(1)?.parse::<f64>().ok()
        })
        .unwrap_or(0.0)
        / 1024.0
}

fn bench(c: &mut Criterion) {
    let mut s = JsonlState::new("stream");
    s.keep(LIVE_WINDOW_EVENTS);
    s.feed(POOL_LINE, 1);
    let (mut n, mut t, mut lineno) = (0u64, 1_000_000_000u64, 1usize);
    let mut lines = Vec::new();
    let mut feed = |s: &mut JsonlState, ops: u64| {
        for _ in 0..ops {
            lines.clear();
            t = op_lines(n, t, &mut lines);
            n += 1;
            for l in &lines {
                lineno += 1;
                s.feed(l, lineno);
            }
        }
    };
    feed(&mut s, 2_000_000);
    let tr = Arc::new(s.snapshot());
    let w = tr.window().expect("a kept stream is a window");
    eprintln!(
        "window: {} events, {} ops, {} tensors; {} events and {} ops fell out",
        tr.events.len(),
        tr.ops.len(),
        tr.tensors.len(),
        w.events_before,
        w.ops_before
    );
    let mut g = c.benchmark_group("stream_window");
    g.sample_size(10);
    // 20,000 ops of a stream read and trimmed: one second of the issue's
    // 20,000 ops/s.
    g.bench_function("read_20k_ops", |b| b.iter(|| feed(&mut s, 20_000)));
    g.bench_function("snapshot", |b| b.iter(|| black_box(s.snapshot())));
    g.bench_function("quick_dataset", |b| {
        b.iter(|| black_box(Dataset::quick("stream", tr.clone())))
    });
    g.bench_function("complete_analyses", |b| {
        b.iter(|| black_box(Dataset::complete("stream", tr.clone())))
    });
    let mut app = App::new(vec![Dataset::complete("stream", tr)]);
    let end = app.end_ns();
    let theme = Theme::load(None, ColorMode::TrueColor).unwrap();
    let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
    g.sample_size(50);
    for (name, view) in [
        ("frame_overview", View::Overview),
        ("frame_timeline", View::Timeline),
        ("frame_hotspots", View::Hotspots),
        ("frame_memory", View::Memory),
    ] {
        app.view = view;
        app.window = (0, end);
        g.bench_function(name, |b| {
            b.iter(|| {
                term.draw(|f| ui::draw(f, &app, &theme)).unwrap();
            })
        });
    }
    g.finish();
    eprintln!("peak RSS: {:.0} MiB", vm_hwm_mib());
}

criterion_group!(benches, bench);
criterion_main!(benches);

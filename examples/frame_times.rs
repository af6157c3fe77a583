//! Times single frames of every view on a large trace, the way the explorer
//! draws them once its analyses are complete: each view at the whole run and
//! zoomed, at 120x40 and 80x24, and panning at deep zoom (a new window each
//! frame). Prints the median and the slowest frame of each, in ms.
//! Usage: cargo run --release --example frame_times -- TRACE.json [CACHE_DIR] [FRAMES]
//! (with CACHE_DIR the trace is opened through the binary trace cache; a
//! `.jsonl` stream is opened as the window a live view keeps of it).
use spillscope_explorer::app::{App, View};
use spillscope_explorer::{data::Dataset, theme, ui};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `frames` frames drawn by `frame`, in ms, sorted.
fn time(frames: usize, mut frame: impl FnMut()) -> Vec<f64> {
    let mut t: Vec<f64> = (0..frames)
        .map(|_| {
            let s = Instant::now();
            frame();
            ms(s.elapsed())
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t
}

/// Prints one row (median and slowest) and gives the slowest.
fn report(w: u16, h: u16, name: &str, t: Vec<f64>) -> f64 {
    let max = t[t.len() - 1];
    println!("{w}x{h} {name:<14} {:>7.2} {:>7.2}", t[t.len() / 2], max);
    max
}

fn main() {
    let p = std::env::args().nth(1).expect("trace path");
    let path = std::path::Path::new(&p);
    let tr = match std::env::args().nth(2).filter(|d| d != "-") {
        // A JSONL stream: the window a live view holds of it by default.
        _ if p.ends_with(".jsonl") => {
            let opts = spillscope::trace::import::ImportOptions {
                keep: Some(spillscope::limits::LIVE_WINDOW_EVENTS),
                ..Default::default()
            };
            spillscope::trace::import::import(path, None, &opts)
                .unwrap()
                .0
        }
        Some(dir) => {
            spillscope::trace::store::TraceStore::at(dir)
                .open(path)
                .unwrap()
                .0
        }
        None => spillscope::trace::Trace::load(path).unwrap(),
    };
    let frames: usize = std::env::args().nth(3).map_or(30, |n| n.parse().unwrap());
    let events = tr.events.len();
    let mut app = App::new(vec![Dataset::complete("x", Arc::new(tr))]);
    let th = theme::Theme::load(None, theme::ColorMode::TrueColor).unwrap();
    let end = app.end_ns();
    println!("{events} events; {frames} frames each; median / slowest ms");
    let mut slowest = 0.0f64;
    for (w, h) in [(120u16, 40u16), (80, 24)] {
        let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
        let views = [
            ("overview", View::Overview, (0, end)),
            ("timeline fit", View::Timeline, (0, end)),
            (
                "timeline 1%",
                View::Timeline,
                (end / 2, end / 2 + end / 100),
            ),
            ("timeline deep", View::Timeline, (end / 2, end / 2 + 20_000)),
            ("hotspots", View::Hotspots, (0, end)),
            ("tensor", View::Tensor, (0, end)),
            ("memory fit", View::Memory, (0, end)),
            ("memory zoom", View::Memory, (end / 2, end / 2 + end / 1000)),
            ("suggest", View::Suggest, (0, end)),
        ];
        for (name, view, window) in views {
            app.view = view;
            app.window = window;
            app.cursor = window.0;
            let t = time(frames, || {
                term.draw(|f| ui::draw(f, &app, &th)).unwrap();
            });
            slowest = slowest.max(report(w, h, name, t));
        }
        app.view = View::Timeline;
        let mut t0 = 0u64;
        let span = 50_000.min(end / 2).max(1);
        // Each frame a new window (the move itself is nothing beside a draw).
        let t = time(frames, || {
            t0 = (t0 + 7_919_113) % (end - span).max(1);
            app.window = (t0, t0 + span);
            term.draw(|f| ui::draw(f, &app, &th)).unwrap();
        });
        slowest = slowest.max(report(w, h, "timeline pan", t));
    }
    println!("slowest frame: {slowest:.2} ms");
}

//! Opens a trace the way `spillscope view` does (parse, quick analyses, App,
//! first frame; then the complete analyses and a timeline frame) and prints
//! the times and this process's peak and current RSS.
//! Usage: cargo run --release --example open_rss -- TRACE.json [CACHE_DIR]
//! (with CACHE_DIR, the trace is opened through the binary trace cache
//! there, as `view` does: run twice to time the open from the cache).
//! With OPEN_RSS_FIRST_ONLY set it stops after the first frame (to profile
//! the open alone).
use spillscope_explorer::{app, data::Dataset, theme, ui};
use std::sync::Arc;

fn status(key: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find(|l| l.starts_with(key))
        .unwrap_or("")
        .to_string()
}

fn main() {
    let p = std::env::args().nth(1).expect("trace path");
    let t = std::time::Instant::now();
    let path = std::path::Path::new(&p);
    let tr = match std::env::args().nth(2) {
        Some(dir) => {
            let store = spillscope::trace::store::TraceStore::at(dir);
            let (tr, how) = store.open(path).unwrap();
            println!("opened: {how:?}");
            Arc::new(tr)
        }
        None => Arc::new(spillscope::trace::Trace::load(path).unwrap()),
    };
    let parsed = t.elapsed();
    println!("after parse: {}", status("VmRSS"));
    let mut a = app::App::new(vec![Dataset::quick("x", tr.clone())]);
    let th = theme::Theme::load(None, theme::ColorMode::TrueColor).unwrap();
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 40)).unwrap();
    term.draw(|f| ui::draw(f, &a, &th)).unwrap();
    let first = t.elapsed();
    println!("after first frame: {}", status("VmRSS"));
    if std::env::var_os("OPEN_RSS_FIRST_ONLY").is_some() {
        println!(
            "parsed {parsed:?}, first frame {first:?}; {}",
            status("VmHWM")
        );
        return;
    }
    app::update(
        &mut a,
        app::Msg::Analysed {
            slot: 0,
            data: Box::new(Dataset::complete("x", tr)),
        },
    );
    a.view = app::View::Timeline;
    term.draw(|f| ui::draw(f, &a, &th)).unwrap();
    println!(
        "parsed {parsed:?}, first frame {first:?}, complete + timeline frame {:?}; {}; {}",
        t.elapsed(),
        status("VmHWM"),
        status("VmRSS")
    );
}

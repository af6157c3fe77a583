//! Opens a trace the way `spillscope view` does (load, analyses, App) and
//! prints the wall time and this process's peak and current RSS.
//! Usage: cargo run --release --example open_rss -- TRACE.json
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
    let tr = spillscope::trace::Trace::load(std::path::Path::new(&p)).unwrap();
    let parsed = t.elapsed();
    let app = spillscope::tui::app::App::new(vec![spillscope::tui::data::Dataset::build("x", tr)]);
    let theme =
        spillscope::tui::theme::Theme::load(None, spillscope::tui::theme::ColorMode::TrueColor)
            .unwrap();
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 40)).unwrap();
    term.draw(|f| spillscope::tui::ui::draw(f, &app, &theme))
        .unwrap();
    println!(
        "parsed {:?}, first frame {:?}; {}; {}",
        parsed,
        t.elapsed(),
        status("VmHWM"),
        status("VmRSS")
    );
}

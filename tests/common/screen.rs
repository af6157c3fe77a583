//! The explorer drawn to ratatui's TestBackend, without colour.

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use spillscope_explorer::app::App;
use spillscope_explorer::theme::{ColorMode, Theme};
use spillscope_explorer::ui;

/// The screen `app` draws at `w` x `h`, one quoted line per row.
pub fn render(app: &App, w: u16, h: u16) -> String {
    let theme = Theme::load(None, ColorMode::None).unwrap();
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| ui::draw(f, app, &theme)).unwrap();
    t.backend().to_string()
}

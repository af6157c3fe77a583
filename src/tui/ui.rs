//! The frame: tab bar, optional banner, the active view, footer hints from
//! the key table, and the search/help overlays. Rendering only reads state.

use super::app::{App, Target, View};
use super::glyphs::Glyphs;
use super::keys::{footer_hints, help_rows};
use super::theme::Theme;
use super::views;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

/// Draws everything.
pub fn draw(f: &mut Frame, app: &App, theme: &Theme) {
    let area = f.area();
    if area.width < 20 || area.height < 5 {
        f.render_widget(Paragraph::new("spillscope: terminal too small"), area);
        return;
    }
    let g = Glyphs::get(app.ascii);
    let banner_h = if app.banner.is_some() { 1 } else { 0 };
    let [tabs, banner, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(banner_h),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_tabs(f, app, theme, tabs);
    if let Some(b) = &app.banner {
        let style = theme
            .strong(theme.c.banner)
            .add_modifier(Modifier::REVERSED);
        f.render_widget(
            Paragraph::new(format!(" ! {b}  (Esc hides)")).style(style),
            banner,
        );
    }
    match app.primary() {
        None => {
            let msg = if app.refreshing {
                "loading..."
            } else {
                "no data yet"
            };
            f.render_widget(Paragraph::new(msg).style(theme.fg(theme.c.muted)), body);
        }
        Some(_) if app.view != View::Overview && app.data.iter().any(|d| !d.complete) => {
            let n: usize = app.data.iter().map(|d| d.trace.events.len()).sum();
            let msg = format!(
                "analysing {n} events... (the Overview is ready; this view appears when done)"
            );
            f.render_widget(
                Paragraph::new(msg)
                    .style(theme.fg(theme.c.muted))
                    .block(block(format!(" {} ", app.view.title()), theme, g)),
                body,
            );
        }
        Some(_) => match app.view {
            View::Overview => views::overview::draw(f, app, theme, g, body),
            View::Timeline => views::timeline::draw(f, app, theme, g, body),
            View::Hotspots => views::hotspots::draw(f, app, theme, g, body),
            View::Tensor => views::tensor::draw(f, app, theme, g, body),
            View::Memory => views::memory::draw(f, app, theme, g, body),
            View::Compare => views::compare::draw(f, app, theme, g, body),
            View::Suggest => views::suggest::draw(f, app, theme, g, body),
        },
    }
    draw_footer(f, app, theme, footer);
    if app.help {
        draw_help(f, theme, g, body);
    }
    if app.search.is_some() {
        draw_search(f, app, theme, g, body);
    }
}

fn draw_tabs(f: &mut Frame, app: &App, theme: &Theme, area: Rect) {
    let mut right: Vec<Span> = Vec::new();
    if let Some(d) = app.primary() {
        right.push(Span::styled(
            format!("{} [{}]", d.trace.meta.model, d.trace.meta.policy),
            theme.fg(theme.c.accent),
        ));
    }
    if app.data.len() > 1 {
        right.push(Span::styled(
            format!(" vs [{}]", app.data[1].trace.meta.policy),
            theme.fg(theme.c.accent),
        ));
    }
    if app.live {
        right.push(Span::styled(
            if app.paused { " PAUSED" } else { " LIVE" },
            theme.strong(theme.c.accent),
        ));
    }
    if app.pending.is_some() {
        right.push(Span::styled(
            " new data",
            theme
                .strong(theme.c.highlight)
                .add_modifier(Modifier::REVERSED),
        ));
    }
    if app.refreshing {
        right.push(Span::styled(" ...", theme.fg(theme.c.muted)));
    }
    // Full view names when they fit beside the right-hand label.
    let right_w: usize = right.iter().map(|s| s.content.chars().count()).sum();
    let full_w: usize = View::ALL
        .iter()
        .enumerate()
        .map(|(i, v)| format!("{} {} ", i + 1, v.title()).chars().count())
        .sum();
    let narrow = full_w + right_w + 1 > area.width as usize;
    let mut spans: Vec<Span> = Vec::new();
    for (i, v) in View::ALL.iter().enumerate() {
        let label = if narrow {
            format!("{}:{}", i + 1, &v.title()[..4.min(v.title().len())])
        } else {
            format!("{} {}", i + 1, v.title())
        };
        let style = if *v == app.view {
            theme
                .strong(theme.c.tab_active)
                .add_modifier(Modifier::REVERSED)
        } else {
            theme.fg(theme.c.muted)
        };
        spans.push(Span::styled(label, style));
        spans.push(Span::raw(" "));
    }
    let left_w: usize = spans.iter().map(|s| s.content.chars().count()).sum();
    let right_w: usize = right.iter().map(|s| s.content.chars().count()).sum();
    if left_w + right_w < area.width as usize {
        spans.push(Span::raw(
            " ".repeat(area.width as usize - left_w - right_w),
        ));
        spans.extend(right);
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_footer(f: &mut Frame, app: &App, theme: &Theme, area: Rect) {
    let mut spans: Vec<Span> = Vec::new();
    if app.search.is_some() {
        spans.push(Span::styled(
            "type to search  Up/Down choose  Enter jump  Esc cancel",
            theme.fg(theme.c.muted),
        ));
    } else {
        for (k, h) in footer_hints(app.view.scopes()) {
            spans.push(Span::styled(k, theme.strong(theme.c.accent)));
            spans.push(Span::styled(format!(" {h}  "), theme.fg(theme.c.muted)));
        }
    }
    if !app.status.is_empty() {
        let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
        let room = (area.width as usize).saturating_sub(used);
        if room > 8 {
            spans.push(Span::styled(
                truncate(&app.status, room),
                theme.fg(theme.c.highlight),
            ));
        }
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// A bordered block with the theme's border style and glyphs.
pub fn block<'a>(title: impl Into<Line<'a>>, theme: &Theme, g: &Glyphs) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_set(g.border)
        .border_style(theme.fg(theme.c.border))
        .title(title)
}

/// A rectangle centred in `r`.
pub fn centered(r: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(r.width);
    let h = h.min(r.height);
    Rect {
        x: r.x + (r.width - w) / 2,
        y: r.y + (r.height - h) / 2,
        width: w,
        height: h,
    }
}

/// First row to show so that `sel` stays visible in `rows` rows of `len`
/// (only the visible rows are built: lists can have 100,000s of entries).
pub fn scroll_offset(sel: usize, len: usize, rows: usize) -> usize {
    if rows == 0 || len <= rows {
        return 0;
    }
    sel.saturating_sub(rows / 2).min(len - rows)
}

pub fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else if n <= 2 {
        s.chars().take(n).collect()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(2)).collect();
        t.push_str("..");
        t
    }
}

/// Keeps the end of long names (ONNX names differ at the end).
pub fn truncate_left(s: &str, n: usize) -> String {
    let c = s.chars().count();
    if c <= n {
        s.to_string()
    } else if n <= 2 {
        s.chars().skip(c - n).collect()
    } else {
        let tail: String = s.chars().skip(c - (n - 2)).collect();
        format!("..{tail}")
    }
}

fn draw_help(f: &mut Frame, theme: &Theme, g: &Glyphs, body: Rect) {
    let rows = help_rows();
    let r = centered(body, 76, rows.len() as u16 + 4);
    f.render_widget(Clear, r);
    let mut lines: Vec<Line> = Vec::new();
    for (k, h, scope) in rows {
        lines.push(Line::from(vec![
            Span::styled(format!("{k:>8}  "), theme.strong(theme.c.accent)),
            Span::raw(h.to_string()),
            Span::styled(
                if scope.is_empty() {
                    String::new()
                } else {
                    format!("  ({scope})")
                },
                theme.fg(theme.c.muted),
            ),
        ]));
    }
    let p = Paragraph::new(lines)
        .block(block(" keys (Esc closes) ", theme, g))
        .wrap(Wrap { trim: false });
    f.render_widget(p, r);
}

fn draw_search(f: &mut Frame, app: &App, theme: &Theme, g: &Glyphs, body: Rect) {
    let Some(s) = &app.search else { return };
    let h = body.height.saturating_sub(2).clamp(5, 20);
    let r = centered(body, body.width.saturating_sub(4).min(90), h);
    f.render_widget(Clear, r);
    let inner_w = r.width.saturating_sub(2) as usize;
    let mut lines = vec![Line::from(vec![
        Span::styled("/ ", theme.strong(theme.c.accent)),
        Span::raw(s.query.clone()),
        Span::styled("_", theme.fg(theme.c.muted)),
    ])];
    let room = (r.height as usize).saturating_sub(3);
    let start = s.selected.saturating_sub(room.saturating_sub(1));
    for (i, hit) in s.hits.iter().enumerate().skip(start).take(room) {
        let tag = match hit.target {
            Target::Op(_) => "op     ",
            Target::Tensor(_) => "tensor ",
        };
        let mut spans = vec![Span::styled(tag, theme.fg(theme.c.muted))];
        let name = truncate(&hit.name, inner_w.saturating_sub(8));
        for (ci, ch) in name.chars().enumerate() {
            let st = if hit.indices.contains(&ci) {
                theme
                    .strong(theme.c.highlight)
                    .add_modifier(Modifier::UNDERLINED)
            } else {
                Style::default()
            };
            spans.push(Span::styled(ch.to_string(), st));
        }
        let mut line = Line::from(spans);
        if i == s.selected {
            line = line.style(theme.selected());
        }
        lines.push(line);
    }
    if s.hits.is_empty() && !s.query.is_empty() {
        lines.push(Line::styled("no match", theme.fg(theme.c.muted)));
    }
    let title = format!(" search ops and tensors ({} hits) ", s.hits.len());
    f.render_widget(Paragraph::new(lines).block(block(title, theme, g)), r);
}

//! The frame: tab bar, optional banner (wrapped, up to three lines), the
//! live delta line or a line of guidance, the active view, footer hints from
//! the key table, and the search/help overlays. Rendering only reads state.

use super::app::{App, Target, View};
use super::glyphs::Glyphs;
use super::keys::{footer_fit, help_rows};
use super::theme::Theme;
use super::views;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

/// The first of `alts` (longest first) that fits `width` columns, else the
/// last: a line that says less rather than one cut mid-word.
pub fn first_fit(alts: &[String], width: usize) -> String {
    alts.iter()
        .find(|a| a.chars().count() <= width)
        .or(alts.last())
        .cloned()
        .unwrap_or_default()
}

/// Banner lines shown at most; the rest is counted and readable under `?`.
const BANNER_LINES: usize = 3;

/// `text` wrapped at word boundaries into lines of at most `width` columns;
/// a word longer than a line (a graph path, a fused chain) breaks after a
/// `/` or `+` where it has one, else is cut.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(8);
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ') {
        let mut word = word.to_string();
        loop {
            let need = if cur.is_empty() { 0 } else { 1 } + word.chars().count();
            if cur.chars().count() + need <= width {
                if !cur.is_empty() {
                    cur.push(' ');
                }
                cur.push_str(&word);
                break;
            }
            if cur.is_empty() {
                // A word longer than the line: break it after its last
                // separator that fits, else cut it.
                let chars: Vec<char> = word.chars().collect();
                let at = chars[..width.min(chars.len())]
                    .iter()
                    .rposition(|c| matches!(c, '/' | '+'))
                    .filter(|&i| i > 0)
                    .map_or(width, |i| i + 1);
                let head: String = chars[..at].iter().collect();
                word = chars[at..].iter().collect();
                lines.push(head);
                if word.is_empty() {
                    break;
                }
            } else {
                lines.push(std::mem::take(&mut cur));
            }
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// The banner as shown: wrapped, at most [`BANNER_LINES`], the last saying
/// how many more there are.
fn banner_lines(text: &str, width: usize) -> Vec<String> {
    let body = format!("! {text}");
    let mut lines = wrap(&body, width.saturating_sub(1));
    if lines.len() > BANNER_LINES {
        let more = lines.len() - (BANNER_LINES - 1);
        lines.truncate(BANNER_LINES - 1);
        lines.push(format!("  (+{more} more lines: ? shows all, Esc hides)"));
    } else if let Some(last) = lines.last_mut() {
        if last.chars().count() + 13 <= width {
            last.push_str("  (Esc hides)");
        }
    }
    lines
}

/// The live delta line: what the newest re-simulation changed against the
/// run before it, with arrows; spaced out when `width` allows, compact
/// (units joined to their numbers) when not.
pub fn delta_line(app: &App, ascii: bool, width: usize) -> Option<String> {
    let (before, now) = (app.previous.as_ref()?, app.primary()?);
    let (a, b) = (&before.trace.summary, &now.trace.summary);
    let arrow = |d: i64| match (d.signum(), ascii) {
        (1, false) => "↑",
        (-1, false) => "↓",
        (1, true) => "^",
        (-1, true) => "v",
        _ => "=",
    };
    let d = |x: u64, y: u64| y as i64 - x as i64;
    let (dl, dt, dn, ds) = (
        d(a.latency_ns, b.latency_ns),
        d(a.traffic_bytes, b.traffic_bytes),
        d(a.spill_count, b.spill_count),
        d(a.stall_ns, b.stall_ns),
    );
    let (lat, traffic, stall) = (
        spillscope::units::fmt_ms_delta(dl),
        spillscope::units::fmt_bytes_delta(dt),
        spillscope::units::fmt_ms_delta(ds),
    );
    let full = format!(
        "vs previous run: latency {lat} {}, traffic {traffic} {}, evictions {dn:+} {}, stall {stall} {}",
        arrow(dl),
        arrow(dt),
        arrow(dn),
        arrow(ds)
    );
    if full.chars().count() <= width {
        return Some(full);
    }
    let tight = |s: &str| s.replace(' ', "");
    Some(format!(
        "vs previous: latency {}{} traffic {}{} evictions {dn:+}{} stall {}{}",
        tight(&lat),
        arrow(dl),
        tight(&traffic),
        arrow(dt),
        arrow(dn),
        tight(&stall),
        arrow(ds)
    ))
}

/// Draws everything.
pub fn draw(f: &mut Frame, app: &App, theme: &Theme) {
    let area = f.area();
    if area.width < 20 || area.height < 5 {
        f.render_widget(Paragraph::new("spillscope: terminal too small"), area);
        return;
    }
    let g = Glyphs::get(app.ascii);
    let w = area.width as usize;
    let banner = app
        .banner
        .as_deref()
        .map(|b| banner_lines(b, w))
        .unwrap_or_default();
    let note = delta_line(app, app.ascii, w).or_else(|| app.info.clone());
    let [tabs, banner_area, note_area, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(banner.len() as u16),
        Constraint::Length(u16::from(note.is_some())),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_tabs(f, app, theme, tabs);
    if !banner.is_empty() {
        let style = theme
            .strong(theme.c.banner)
            .add_modifier(Modifier::REVERSED);
        let lines: Vec<Line> = banner.into_iter().map(|l| Line::styled(l, style)).collect();
        f.render_widget(Paragraph::new(lines).style(style), banner_area);
    }
    if let Some(n) = note {
        f.render_widget(
            Paragraph::new(truncate(&n, w)).style(theme.fg(theme.c.accent)),
            note_area,
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
                    .wrap(Wrap { trim: true })
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
        draw_help(f, app, theme, g, body);
    }
    if app.search.is_some() {
        draw_search(f, app, theme, g, body);
    }
}

/// The rows above the view body (tabs, banner, delta or info line), as
/// [`draw`] lays them out: views that size themselves from the terminal
/// (the memory map's cursor steps) use it.
pub fn rows_above_body(app: &App) -> u16 {
    let banner = app
        .banner
        .as_deref()
        .map(|b| banner_lines(b, app.width as usize).len())
        .unwrap_or(0);
    let note = delta_line(app, app.ascii, app.width as usize).is_some() || app.info.is_some();
    1 + banner as u16 + u16::from(note)
}

/// The tab bar. Whatever the width (down to 60 columns), it keeps the
/// active view's name, PAUSED / LIVE and the "new data" badge; the model
/// label is cut first, then the other views shrink to their numbers.
fn draw_tabs(f: &mut Frame, app: &App, theme: &Theme, area: Rect) {
    let width = area.width as usize;
    let mut badges: Vec<Span> = Vec::new();
    if app.live {
        badges.push(Span::styled(
            if app.paused { " PAUSED" } else { " LIVE" },
            theme.strong(theme.c.accent),
        ));
    }
    // A stream held to its last events says so in every view.
    if app
        .primary()
        .and_then(|d| d.trace.window())
        .is_some_and(|w| w.is_trimmed())
    {
        badges.push(Span::styled(" WINDOW", theme.strong(theme.c.accent)));
    }
    if app.pending.is_some() {
        badges.push(Span::styled(
            " new data",
            theme
                .strong(theme.c.highlight)
                .add_modifier(Modifier::REVERSED),
        ));
    }
    // Running work says what it is doing and how far it is.
    match &app.progress {
        Some(p) if p.total > 1 => badges.push(Span::styled(
            format!(" {} {}/{}", p.stage.as_str(), p.done, p.total),
            theme.fg(theme.c.muted),
        )),
        Some(p) => badges.push(Span::styled(
            format!(" {}...", p.stage.as_str()),
            theme.fg(theme.c.muted),
        )),
        None if app.refreshing => badges.push(Span::styled(" ...", theme.fg(theme.c.muted))),
        None => {}
    }
    let badges_w: usize = badges.iter().map(|s| s.content.chars().count()).sum();
    // Two traces: views 1-5 name the side they show, Compare and Suggest
    // both policies.
    let label = match (app.side_name(), app.data.as_slice()) {
        (Some(side), _) if app.view.shows_one_side() => app
            .primary()
            .map(|d| format!("{side}: {} [{}]", d.trace.meta.model, d.trace.meta.policy)),
        (_, [a, b, ..]) => Some(format!(
            "{} [{}] vs [{}]",
            a.trace.meta.model, a.trace.meta.policy, b.trace.meta.policy
        )),
        _ => app
            .primary()
            .map(|d| format!("{} [{}]", d.trace.meta.model, d.trace.meta.policy)),
    };
    // Tab labels at three widths: full, short, number only (the active
    // view always by name).
    let tab = |i: usize, v: View, level: usize| -> String {
        if v == app.view {
            return format!("{} {}", i + 1, v.title());
        }
        match level {
            0 => format!("{} {}", i + 1, v.title()),
            1 => format!("{}:{}", i + 1, &v.title()[..4]),
            _ => format!("{}", i + 1),
        }
    };
    let tabs_w = |level: usize| -> usize {
        View::ALL
            .iter()
            .enumerate()
            .map(|(i, &v)| tab(i, v, level).chars().count() + 1)
            .sum()
    };
    let min_label = label.as_ref().map_or(0, |l| l.chars().count().min(12) + 1);
    let level = (0..3)
        .find(|&l| tabs_w(l) + badges_w + min_label <= width)
        .unwrap_or(2);
    let mut spans: Vec<Span> = Vec::new();
    for (i, v) in View::ALL.iter().enumerate() {
        let style = if *v == app.view {
            theme
                .strong(theme.c.tab_active)
                .add_modifier(Modifier::REVERSED)
        } else {
            theme.fg(theme.c.muted)
        };
        spans.push(Span::styled(tab(i, *v, level), style));
        spans.push(Span::raw(" "));
    }
    let left_w: usize = spans.iter().map(|s| s.content.chars().count()).sum();
    let room = width.saturating_sub(left_w + badges_w);
    if let Some(l) = label {
        if room > 2 {
            let l = spillscope::names::elide(&l, room - 1, app.ascii);
            let pad = room - l.chars().count();
            spans.push(Span::raw(" ".repeat(pad)));
            spans.push(Span::styled(l, theme.fg(theme.c.accent)));
        }
    } else {
        spans.push(Span::raw(" ".repeat(room)));
    }
    spans.extend(badges);
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
        // The status (the selected row's full name) gets up to half the row.
        let status_w = app.status.chars().count().min(area.width as usize / 2);
        let room = (area.width as usize).saturating_sub(status_w);
        for (k, h) in footer_fit(&app.scopes(), room) {
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

/// Which of a table's columns fit beside a name column at least
/// `min_name` wide in `width` columns (borders and one space between
/// columns included). `widths` are in priority order; column `must` stays
/// whatever the room. Returns the kept indices (ascending) and the name's
/// width.
pub fn fit_columns(
    width: usize,
    min_name: usize,
    widths: &[u16],
    must: Option<usize>,
) -> (Vec<usize>, usize) {
    let cost = |i: usize| widths[i] as usize + 1;
    let mut keep: Vec<usize> = Vec::new();
    let mut used = 2; // borders
    if let Some(m) = must.filter(|&m| m < widths.len()) {
        keep.push(m);
        used += cost(m);
    }
    for i in 0..widths.len() {
        if Some(i) != must && used + cost(i) + min_name <= width {
            keep.push(i);
            used += cost(i);
        }
    }
    keep.sort_unstable();
    (keep, width.saturating_sub(used).max(min_name.min(8)))
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

/// How a piece of the help overlay is styled.
#[derive(Clone, Copy)]
enum HelpRole {
    Banner,
    Heading,
    Key,
    Text,
    Muted,
}

/// The help overlay's content at its inner width `inner_w`, as styled
/// pieces per line: what [`draw_help`] shows and what [`help_max_scroll`]
/// measures, from one source.
fn help_content(app: &App, g: &Glyphs, inner_w: usize) -> Vec<Vec<(HelpRole, String)>> {
    use HelpRole::*;
    let mut lines: Vec<Vec<(HelpRole, String)>> = Vec::new();
    // The whole banner, when one is up: it may be cut above.
    if let Some(b) = &app.banner {
        for l in wrap(b, inner_w) {
            lines.push(vec![(Banner, l)]);
        }
        lines.push(Vec::new());
    }
    lines.push(vec![(
        Heading,
        format!("{} keys in this view", app.view.title()),
    )]);
    for (k, h, scope) in help_rows(&app.scopes()) {
        let mut l = vec![(Key, format!("{k:>8}  ")), (Text, h.to_string())];
        if !scope.is_empty() {
            l.push((Muted, format!("  ({scope})")));
        }
        lines.push(l);
    }
    if matches!(
        app.view,
        View::Timeline | View::Tensor | View::Memory | View::Compare
    ) {
        lines.push(Vec::new());
        lines.push(vec![(Muted, format!("legend: {}", super::keys::legend(g)))]);
    }
    lines.push(Vec::new());
    lines.push(vec![(Heading, "terms".to_string())]);
    for (term, what) in super::keys::GLOSSARY {
        lines.push(vec![(Key, format!("{term}: ")), (Text, what.to_string())]);
    }
    lines
}

/// The overlay's rectangle in `body` and its content's wrapped row count.
fn help_extent(body: Rect, content: &[Vec<(HelpRole, String)>]) -> (Rect, u16) {
    let w = help_width(body);
    let inner_w = help_inner_width(body).max(1);
    let total: u16 = content
        .iter()
        .map(|l| {
            let width: usize = l.iter().map(|(_, t)| t.chars().count()).sum();
            width.max(1).div_ceil(inner_w) as u16
        })
        .sum();
    (centered(body, w, total + 2), total)
}

/// The overlay's width in `body` (borders included), and inside them.
fn help_width(body: Rect) -> u16 {
    body.width.saturating_sub(4).min(96)
}

fn help_inner_width(body: Rect) -> usize {
    help_width(body).saturating_sub(2) as usize
}

/// The furthest the help overlay can scroll at the terminal size the state
/// holds (its rows past the overlay's height): `update` clamps to it so
/// that scrolling back up moves at once.
pub fn help_max_scroll(app: &App) -> u16 {
    let g = Glyphs::get(app.ascii);
    let above = rows_above_body(app);
    let body = Rect::new(0, above, app.width, app.height.saturating_sub(above + 1));
    let content = help_content(app, g, help_inner_width(body));
    let (r, total) = help_extent(body, &content);
    total.saturating_sub(r.height.saturating_sub(2))
}

fn draw_help(f: &mut Frame, app: &App, theme: &Theme, g: &Glyphs, body: Rect) {
    let content = help_content(app, g, help_inner_width(body));
    // Rows that do not fit scroll (j/k, Up/Down, PgUp/PgDn), and the title
    // says how many are out of sight, so no key is cut from the list.
    let (r, total) = help_extent(body, &content);
    let shown = r.height.saturating_sub(2);
    let scroll = app.help_scroll.min(total.saturating_sub(shown));
    let below = total.saturating_sub(scroll + shown);
    let title = if scroll > 0 || below > 0 {
        format!(" keys (Esc closes; {scroll} above, {below} below: j/k scroll) ")
    } else {
        " keys (Esc closes) ".to_string()
    };
    let style = |role: HelpRole| match role {
        HelpRole::Banner => theme.strong(theme.c.banner),
        HelpRole::Heading => theme.strong(theme.c.muted),
        HelpRole::Key => theme.strong(theme.c.accent),
        HelpRole::Text => Style::default(),
        HelpRole::Muted => theme.fg(theme.c.muted),
    };
    let lines: Vec<Line> = content
        .into_iter()
        .map(|l| {
            Line::from(
                l.into_iter()
                    .map(|(role, t)| Span::styled(t, style(role)))
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    f.render_widget(Clear, r);
    let p = Paragraph::new(lines)
        .block(block(title, theme, g))
        .wrap(Wrap { trim: false })
        .scroll((scroll, 0));
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

/// A "label NAME figures" line that must fit `w` columns whole: the first
/// of `forms` (label, figures after the name; fullest first) that leaves the
/// name at least `min_name` columns, with the room the name gets (it is
/// elided in the middle to that). When none leaves that much, the last form
/// with whatever room is left, its figures dropped if they alone overflow.
pub fn fit_name_line(
    w: usize,
    forms: &[(&'static str, String)],
    min_name: usize,
) -> (&'static str, usize, String) {
    let len = |t: &str| t.chars().count();
    for (label, tail) in forms {
        if len(label) + len(tail) + min_name <= w {
            return (label, w - len(label) - len(tail), tail.clone());
        }
    }
    match forms.last() {
        Some((label, tail)) if len(label) + len(tail) < w => {
            (label, (w - len(label) - len(tail)).max(1), tail.clone())
        }
        _ => ("", w.max(1), String::new()),
    }
}

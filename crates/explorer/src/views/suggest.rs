//! Suggestions: re-simulated counterfactuals for the primary trace, sorted
//! by milliseconds saved; the selected one shows how to realise it.

use crate::app::App;
use crate::glyphs::Glyphs;
use crate::theme::Theme;
use crate::ui::{block, scroll_offset};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState, Wrap};
use ratatui::Frame;
use spillscope::analysis::runs::RunRow;
use spillscope::analysis::suggest::Suggestions;
use spillscope::units::fmt_bytes;

/// Keeps the start of `s` (descriptions lead with what to do).
fn truncate_right(s: &str, w: usize, ascii: bool) -> String {
    if s.chars().count() <= w {
        return s.to_string();
    }
    let ell = if ascii {
        spillscope::names::ELLIPSIS_ASCII
    } else {
        spillscope::names::ELLIPSIS
    };
    let mut t: String = s
        .chars()
        .take(w.saturating_sub(ell.chars().count()))
        .collect();
    t.push_str(ell);
    t
}

/// Where the suggestions for the primary trace stand (computed off the UI
/// thread).
#[derive(Debug, Clone, PartialEq)]
pub enum SuggestState {
    Pending,
    Ready(Box<Suggestions>),
    Unavailable(String),
}

/// The Suggest view's own state: the suggestions and the selected row.
#[derive(Debug, Clone, PartialEq)]
pub struct SuggestView {
    pub state: SuggestState,
    pub sel: usize,
}

impl Default for SuggestView {
    fn default() -> Self {
        SuggestView {
            state: SuggestState::Pending,
            sel: 0,
        }
    }
}

impl SuggestView {
    /// Rows in the list.
    pub fn len(&self) -> usize {
        match &self.state {
            SuggestState::Ready(s) => s.suggestions.len(),
            _ => 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The selected suggestion, when ready.
    pub fn selected(&self) -> Option<&spillscope::analysis::suggest::Suggestion> {
        match &self.state {
            SuggestState::Ready(s) => s.suggestions.get(self.sel),
            _ => None,
        }
    }
}

pub fn draw(f: &mut Frame, app: &App, theme: &Theme, g: &Glyphs, area: Rect) {
    let s = match &app.suggest.state {
        SuggestState::Pending => {
            // Which stage the session is in, done of total, as it goes.
            let text = match app.progress {
                Some(p) if p.total > 1 => {
                    format!("{} ({} of {})...", p.stage.as_str(), p.done, p.total)
                }
                Some(p) => format!("{}...", p.stage.as_str()),
                None => "re-simulating suggestions...".to_string(),
            };
            f.render_widget(
                Paragraph::new(text)
                    .style(theme.fg(theme.c.muted))
                    .block(block(" Suggestions ", theme, g)),
                area,
            );
            return;
        }
        SuggestState::Unavailable(why) => {
            f.render_widget(
                Paragraph::new(format!("no suggestions: {why}"))
                    .style(theme.fg(theme.c.muted))
                    .wrap(Wrap { trim: true })
                    .block(block(" Suggestions ", theme, g)),
                area,
            );
            return;
        }
        SuggestState::Ready(s) => s,
    };
    // The detail pane grows to show the selected suggestion whole (up to
    // half the view).
    let detail_h = s
        .suggestions
        .get(app.suggest.sel)
        .map(|x| {
            let w = area.width.saturating_sub(2) as usize;
            let rows: usize = detail_texts(app, x, &s.baseline)
                .iter()
                .map(|t| crate::ui::wrap(t, w).len().max(1))
                .sum();
            (rows as u16 + 2).clamp(7, (area.height / 2).max(7))
        })
        .unwrap_or(7);
    let [list, detail] =
        Layout::vertical([Constraint::Min(4), Constraint::Length(detail_h)]).areas(area);
    let b = &s.baseline;
    let floor = spillscope::analysis::suggest::noise_floor_ns(b.latency_ns);
    // Whole at any width: the longest form that fits the border.
    let (n, fl, lat) = (
        spillscope::units::count(s.suggestions.len() as u64, "suggestion"),
        app.clock().fmt(floor),
        app.clock().fmt(b.latency_ns),
    );
    let traffic = fmt_bytes(b.traffic_bytes);
    let forms = [
        format!(
            " {n} saving over {fl}; baseline {lat} [{}], {traffic} traffic ",
            b.policy
        ),
        // "N over X" read as the time they were found in: the floor keeps
        // its verb and sign.
        format!(
            " {n} saving > {fl}; baseline {lat} [{}], {traffic} ",
            b.policy
        ),
        format!(" {n}; baseline {lat}, {traffic} "),
    ];
    let room = area.width.saturating_sub(2) as usize;
    let title = crate::ui::first_fit(&forms, room);
    if s.suggestions.is_empty() {
        f.render_widget(
            Paragraph::new("no change tried saves more than that")
                .style(theme.fg(theme.c.muted))
                .block(block(title, theme, g)),
            area,
        );
        return;
    }
    let header = Row::new(
        vec!["#", "saves", "%", "kind", "suggestion"]
            .into_iter()
            .map(|h| Cell::from(h).style(theme.strong(theme.c.muted))),
    );
    let visible = list.height.saturating_sub(3) as usize;
    let offset = scroll_offset(app.suggest.sel, s.suggestions.len(), visible);
    let desc_w = (list.width as usize)
        .saturating_sub(3 + 10 + 6 + 10 + 6)
        .max(10);
    let rows: Vec<Row> = s
        .suggestions
        .iter()
        .enumerate()
        .skip(offset)
        .take(visible)
        .map(|(i, x)| {
            Row::new(vec![
                Cell::from((i + 1).to_string()),
                Cell::from(app.clock().fmt(x.gain_ns.max(0) as u64))
                    .style(theme.fg(theme.c.compute)),
                Cell::from(format!("{:.1}", x.gain_pct)),
                Cell::from(x.kind().as_str()),
                Cell::from(truncate_right(&x.description, desc_w, app.ascii)),
            ])
            .style(theme.fg(theme.c.text))
        })
        .collect();
    let table = Table::new(
        rows,
        [
            Constraint::Length(3),
            Constraint::Length(10),
            Constraint::Length(6),
            Constraint::Length(10),
            Constraint::Min(10),
        ],
    )
    .header(header)
    .block(block(title, theme, g))
    .row_highlight_style(theme.selected())
    .column_spacing(1);
    let mut state = TableState::default().with_selected(Some(app.suggest.sel - offset));
    f.render_stateful_widget(table, list, &mut state);
    if let Some(x) = s.suggestions.get(app.suggest.sel) {
        let [what, how, apply, then] = detail_texts(app, x, b);
        let how = how.trim_start_matches("how: ").to_string();
        // Wrapped here, at words and at the paths' separators (the
        // widget's own wrap would break a name anywhere).
        let w = detail.width.saturating_sub(2) as usize;
        let wrapped = |t: &str| crate::ui::wrap(t, w);
        let mut lines: Vec<Line> = wrapped(&what).into_iter().map(Line::from).collect();
        for (i, l) in wrapped(&format!("how: {how}")).into_iter().enumerate() {
            lines.push(match l.strip_prefix("how: ").filter(|_| i == 0) {
                Some(rest) => Line::from(vec![
                    Span::styled("how: ", theme.strong(theme.c.muted)),
                    Span::styled(rest.to_string(), theme.fg(theme.c.accent)),
                ]),
                None => Line::styled(l, theme.fg(theme.c.accent)),
            });
        }
        lines.extend(
            wrapped(&apply)
                .into_iter()
                .map(|l| Line::styled(l, theme.fg(theme.c.muted))),
        );
        lines.extend(wrapped(&then).into_iter().map(Line::from));
        f.render_widget(
            Paragraph::new(lines).block(block(" Selected (re-simulated) ", theme, g)),
            detail,
        );
    }
}

/// The detail pane's four texts for suggestion `x`: what it is, how to make
/// it, how to apply it from here, and the re-simulated run.
fn detail_texts(
    app: &App,
    x: &spillscope::analysis::suggest::Suggestion,
    b: &RunRow,
) -> [String; 4] {
    let r = &x.run;
    let hardware = spillscope::report::change::hardware_rerun(&x.change);
    let apply = match (&app.config, hardware) {
        (_, Some((why, how))) => format!("{why}: {how}"),
        (Some(c), None) => format!(
            "a writes it into {} (u restores the file)",
            c.file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default()
        ),
        (None, _) => "to apply from here, open the model with --config SCHED.toml".into(),
    };
    [
        x.description.clone(),
        format!("how: {}", spillscope::report::change::how(&x.change)),
        apply,
        format!(
            "then: {} ({} -> {}), {}, {} traffic, {} stall",
            app.clock().fmt(r.latency_ns),
            app.clock().fmt(b.latency_ns),
            app.clock().fmt(r.latency_ns),
            spillscope::units::count(r.spill_count, "eviction"),
            fmt_bytes(r.traffic_bytes),
            app.clock().fmt(r.stall_ns)
        ),
    ]
}

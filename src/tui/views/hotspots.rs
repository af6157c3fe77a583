//! Hotspots: per-operator ranking, sortable by column.

use crate::analysis::hotspots::{order_hotspots, Hotspot, HotspotKey};
use crate::tui::app::App;
use crate::tui::glyphs::Glyphs;
use crate::tui::theme::Theme;
use crate::tui::ui::{block, scroll_offset, truncate_left};
use crate::units::{count, fmt_bytes, fmt_ms};
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Modifier;
use ratatui::widgets::{Cell, Row, Table, TableState};
use ratatui::Frame;

/// The Hotspots view's own state: sort column and direction, the rows in
/// display order (indices into the primary dataset's hotspots) and the
/// selected row.
#[derive(Debug, Clone, Default)]
pub struct HotspotsView {
    pub key: HotspotKey,
    pub ascending: bool,
    pub order: Vec<usize>,
    pub sel: usize,
}

impl HotspotsView {
    /// Re-sorts for `hs`, keeping the selection in range.
    pub fn resort(&mut self, hs: &[Hotspot]) {
        self.order = order_hotspots(hs, self.key, self.ascending)
            .into_iter()
            .map(|i| hs[i].op)
            .collect();
        self.sel = self.sel.min(self.order.len().saturating_sub(1));
    }

    /// The op of the selected row.
    pub fn selected_op(&self) -> Option<usize> {
        self.order.get(self.sel).copied()
    }
}

/// The table's columns after the op name: sort key, header, width.
const COLUMNS: [(HotspotKey, &str, u16); 7] = [
    (HotspotKey::OpType, "type", 8),
    (HotspotKey::Traffic, "traffic", 9),
    (HotspotKey::Evicted, "evict", 9),
    (HotspotKey::Reloaded, "reload", 9),
    (HotspotKey::Streamed, "stream", 9),
    (HotspotKey::Stall, "stall", 9),
    (HotspotKey::Share, "share", 7),
];

pub fn draw(f: &mut Frame, app: &App, theme: &Theme, g: &Glyphs, area: Rect) {
    let Some(d) = app.primary() else { return };
    let arrow = match (app.ascii, app.hot.ascending) {
        (false, false) => "↓",
        (false, true) => "↑",
        (true, false) => "v",
        (true, true) => "^",
    };
    let head = |k: HotspotKey, text: &str| {
        if k == app.hot.key {
            Cell::from(format!("{text} {arrow}")).style(
                theme
                    .strong(theme.c.accent)
                    .add_modifier(Modifier::UNDERLINED),
            )
        } else {
            Cell::from(text.to_string()).style(theme.strong(theme.c.muted))
        }
    };
    let mut header = vec![Cell::from("op").style(theme.strong(theme.c.muted))];
    header.extend(COLUMNS.iter().map(|&(k, t, _)| head(k, t)));
    let header = Row::new(header);
    let fixed: usize = COLUMNS.iter().map(|c| c.2 as usize + 1).sum();
    let name_w = (area.width as usize).saturating_sub(fixed + 2).max(8);
    let visible = area.height.saturating_sub(3) as usize;
    let offset = scroll_offset(app.hot.sel, app.hot.order.len(), visible);
    let rows: Vec<Row> = app
        .hot
        .order
        .iter()
        .skip(offset)
        .take(visible)
        .filter_map(|&o| d.hotspots.get(o))
        .map(|h| {
            let hot = h.traffic_bytes > 0 || h.stall_ns > 0;
            let style = if hot {
                theme.fg(theme.c.text)
            } else {
                theme.fg(theme.c.muted)
            };
            let bytes = |b: u64| {
                if b == 0 {
                    "-".to_string()
                } else {
                    fmt_bytes(b)
                }
            };
            Row::new(vec![
                Cell::from(truncate_left(&h.name, name_w)),
                Cell::from(h.op_type.clone()),
                Cell::from(bytes(h.traffic_bytes)),
                Cell::from(bytes(h.evicted_bytes)),
                Cell::from(bytes(h.reloaded_bytes)),
                Cell::from(bytes(h.streamed_in_bytes + h.streamed_out_bytes)),
                Cell::from(fmt_ms(h.stall_ns)),
                Cell::from(format!("{:.1}%", h.latency_share * 100.0)),
            ])
            .style(style)
        })
        .collect();
    let mut widths = vec![Constraint::Min(8)];
    widths.extend(COLUMNS.iter().map(|c| Constraint::Length(c.2)));
    let title = format!(
        " Hotspots: {}, sorted by {} ",
        count(app.hot.order.len() as u64, "op"),
        app.hot.key.label()
    );
    let table = Table::new(rows, widths)
        .header(header)
        .block(block(title, theme, g))
        .row_highlight_style(theme.selected())
        .column_spacing(1);
    let mut state = TableState::default().with_selected(Some(app.hot.sel - offset));
    f.render_stateful_widget(table, area, &mut state);
}

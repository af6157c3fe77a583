//! Compare: two traces on a shared time axis, and the differences per op and
//! per tensor, largest change first.

use super::lanes::{self, LABEL_W};
use crate::analysis::timeline::Lane;
use crate::tui::app::App;
use crate::tui::glyphs::Glyphs;
use crate::tui::theme::Theme;
use crate::tui::ui::{block, scroll_offset, truncate_left};
use crate::units::{fmt_bytes, fmt_ms};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState};
use ratatui::Frame;

fn signed_ms(ns: i64) -> String {
    format!(
        "{}{:.3} ms",
        if ns >= 0 { "+" } else { "-" },
        ns.unsigned_abs() as f64 / 1e6
    )
}

fn signed_bytes(b: i64) -> String {
    format!(
        "{}{}",
        if b >= 0 { "+" } else { "-" },
        fmt_bytes(b.unsigned_abs())
    )
}

/// The Compare view's own state: the selected op row.
#[derive(Debug, Clone, Default)]
pub struct CompareView {
    pub sel: usize,
}

pub fn draw(f: &mut Frame, app: &App, theme: &Theme, g: &Glyphs, area: Rect) {
    if app.data.len() < 2 {
        let msg = vec![
            Line::raw("Compare needs two traces:"),
            Line::raw("  spillscope view A.json B.json"),
            Line::styled(
                "(LRU vs planned, simulated vs measured, before vs after)",
                theme.fg(theme.c.muted),
            ),
        ];
        f.render_widget(
            Paragraph::new(msg).block(block(" Compare ", theme, g)),
            area,
        );
        return;
    }
    let (a, b) = (&app.data[0], &app.data[1]);
    let strip_h = 5u16.min(area.height / 3).max(3);
    let [sa, sb, table] = Layout::vertical([
        Constraint::Length(strip_h),
        Constraint::Length(strip_h),
        Constraint::Min(3),
    ])
    .areas(area);
    for (d, r, tag) in [(a, sa, "A"), (b, sb, "B")] {
        let s = &d.trace.summary;
        let title = format!(
            " {tag}: {} [{}] {} traffic {} ",
            d.label,
            d.trace.meta.policy,
            fmt_ms(s.latency_ns),
            fmt_bytes(s.traffic_bytes)
        );
        let outer = block(title, theme, g);
        let inner = outer.inner(r);
        f.render_widget(outer, r);
        if inner.width <= LABEL_W + 4 || inner.height == 0 {
            continue;
        }
        let w = inner.width - LABEL_W;
        let x = inner.x + LABEL_W;
        let cols = d.index.columns(app.window.0, app.window.1, w as usize);
        let buf = f.buffer_mut();
        let muted = theme.fg(theme.c.muted);
        let rows: [(&str, u8); 3] = [("ops", 0), ("dma", 1), ("spill", 2)];
        for (i, (name, kind)) in rows.iter().enumerate() {
            let y = inner.y + i as u16;
            if y >= inner.y + inner.height {
                break;
            }
            lanes::label(buf, inner.x, y, name, muted);
            match kind {
                0 => lanes::ops_lane(buf, x, y, &cols, theme, g, None),
                // The spill lanes share one row here: the busiest wins.
                1 => lanes::busiest_lane(
                    buf,
                    x,
                    y,
                    &cols,
                    &[Lane::Evict, Lane::Reload, Lane::Stream],
                    theme,
                    g,
                ),
                _ => lanes::event_lane(buf, x, y, &cols, theme, g),
            }
        }
    }
    let Some(diff) = &app.diff else { return };
    // Ops on top, tensors whose round trips changed below (when there is room).
    let changed: Vec<_> = diff
        .tensors
        .iter()
        .filter(|t| t.a_trips != t.b_trips || t.a_bytes_moved != t.b_bytes_moved)
        .collect();
    let tensor_h = if changed.is_empty() || table.height < 10 {
        0
    } else {
        (changed.len() as u16 + 3).min(table.height / 2)
    };
    let [table, tensor_area] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(tensor_h)]).areas(table);
    if tensor_h > 0 {
        let name_w = (tensor_area.width as usize)
            .saturating_sub(9 * 4 + 8)
            .max(10);
        let rows: Vec<Row> = changed
            .iter()
            .take(tensor_h.saturating_sub(3) as usize)
            .map(|t| {
                Row::new(vec![
                    Cell::from(truncate_left(&t.name, name_w)),
                    Cell::from(t.a_trips.to_string()),
                    Cell::from(t.b_trips.to_string()),
                    Cell::from(fmt_bytes(t.a_bytes_moved)),
                    Cell::from(fmt_bytes(t.b_bytes_moved)),
                ])
            })
            .collect();
        let header = Row::new(vec![
            "tensor (biggest change first)",
            "trips A",
            "trips B",
            "moved A",
            "moved B",
        ])
        .style(theme.strong(theme.c.muted));
        let widths = [
            Constraint::Min(16),
            Constraint::Length(9),
            Constraint::Length(9),
            Constraint::Length(10),
            Constraint::Length(10),
        ];
        let title = format!(" tensors whose round trips changed: {} ", changed.len());
        f.render_widget(
            Table::new(rows, widths)
                .header(header)
                .block(block(title, theme, g)),
            tensor_area,
        );
    }
    let header = Row::new(vec![
        "op (biggest change first)",
        "traffic A",
        "traffic B",
        "stall A",
        "stall B",
        "dur B-A",
    ])
    .style(theme.strong(theme.c.muted));
    let name_w = (table.width as usize)
        .saturating_sub(9 * 4 + 11 + 8)
        .max(10);
    let visible = table.height.saturating_sub(3) as usize;
    let offset = scroll_offset(app.compare.sel, diff.ops.len(), visible);
    let rows: Vec<Row> = diff
        .ops
        .iter()
        .skip(offset)
        .take(visible)
        .map(|o| {
            Row::new(vec![
                Cell::from(truncate_left(&o.name, name_w)),
                Cell::from(fmt_bytes(o.a_traffic_bytes)),
                Cell::from(fmt_bytes(o.b_traffic_bytes)),
                Cell::from(fmt_ms(o.a_stall_ns)),
                Cell::from(fmt_ms(o.b_stall_ns)),
                Cell::from(signed_ms(o.b_duration_ns as i64 - o.a_duration_ns as i64)),
            ])
        })
        .collect();
    let trips_changed = diff
        .tensors
        .iter()
        .filter(|t| t.a_trips != t.b_trips)
        .count();
    let title = format!(
        " B-A: latency {}, traffic {}; {} tensors changed round trips{} ",
        signed_ms(diff.latency_delta_ns),
        signed_bytes(diff.traffic_delta_bytes),
        trips_changed,
        if diff.only_in_a.len() + diff.only_in_b.len() > 0 {
            format!(
                "; {} ops unmatched",
                diff.only_in_a.len() + diff.only_in_b.len()
            )
        } else {
            String::new()
        }
    );
    let widths = [
        Constraint::Min(16),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(11),
    ];
    let t = Table::new(rows, widths)
        .header(header)
        .block(block(title, theme, g))
        .row_highlight_style(theme.selected());
    let mut st = TableState::default().with_selected(Some(app.compare.sel - offset));
    f.render_stateful_widget(t, table, &mut st);
}

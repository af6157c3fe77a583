//! Tensor: the selected tensor's eviction -> reload round trips drawn as
//! arrows on the timeline, its size, lifetime, trip count and oscillation.

use super::lanes::{self, col_of, LABEL_W};
use crate::app::App;
use crate::glyphs::Glyphs;
use crate::theme::Theme;
use crate::ui::{block, scroll_offset};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{List, ListItem, ListState, Paragraph};
use ratatui::Frame;
use spillscope::analysis::roundtrips::{Back, Out};
use spillscope::units::{count, fmt_bytes};

/// The Tensor view's own state: the tensor shown, its row in the list, and
/// the round trip opened from the Timeline (highlighted).
#[derive(Debug, Clone, Default)]
pub struct TensorView {
    pub tensor: Option<usize>,
    pub sel: usize,
    pub trip: Option<usize>,
}

pub fn draw(f: &mut Frame, app: &App, theme: &Theme, g: &Glyphs, area: Rect) {
    let Some(d) = app.primary() else { return };
    let list_w = (area.width / 3).clamp(20, 40);
    let [left, right] =
        Layout::horizontal([Constraint::Length(list_w), Constraint::Min(10)]).areas(area);
    // The list of tensors that moved.
    let inner_w = list_w.saturating_sub(2) as usize;
    let sel = app.tensors.tensor.and_then(|t| d.trips.position(t));
    let visible = left.height.saturating_sub(2) as usize;
    let offset = scroll_offset(sel.unwrap_or(0), d.trips.len(), visible);
    // Briefs, not rows in full: a row's trips are not drawn in the list (a
    // tensor out and back 100k times cost a frame 200 ms).
    let rows: Vec<_> = (offset..d.trips.len().min(offset + visible))
        .filter_map(|i| d.trips.brief(i))
        .collect();
    let names: Vec<&str> = rows
        .iter()
        .map(|t| d.trace.tensors.get(t.tensor).map_or("?", |x| x.name))
        .collect();
    let name_w = inner_w.saturating_sub(6);
    let names = spillscope::names::elide_all(&names, name_w, app.ascii);
    let items: Vec<ListItem> = rows
        .iter()
        .zip(names)
        .map(|(t, name)| {
            let flag = if t.oscillating { "*" } else { " " };
            let n = format!("{:>3}x", t.trips);
            let style = if t.oscillating {
                theme.fg(theme.c.oscillation)
            } else {
                theme.fg(theme.c.text)
            };
            ListItem::new(Line::from(vec![
                Span::styled(flag, style),
                Span::styled(format!("{name:<name_w$}"), style),
                Span::raw(" "),
                Span::styled(n, theme.fg(theme.c.muted)),
            ]))
        })
        .collect();
    let osc = d.trips.oscillating();
    let moved = count(d.trips.len() as u64, "tensor");
    let title = match osc {
        0 => format!(" {moved} moved "),
        _ if moved.len() + 20 <= list_w as usize => format!(" {moved} moved, {osc}* oscillate "),
        _ => format!(" {} moved, {osc}* osc. ", d.trips.len()),
    };
    let list = List::new(items)
        .block(block(title, theme, g))
        .highlight_style(theme.selected());
    let mut st = ListState::default().with_selected(sel.map(|s| s - offset));
    f.render_stateful_widget(list, left, &mut st);

    let Some(tid) = app.tensors.tensor else {
        f.render_widget(
            Paragraph::new("no tensor moved in this run; / searches all tensors")
                .block(block(" tensor ", theme, g)),
            right,
        );
        return;
    };
    let Some(t) = d.trace.tensors.get(tid) else {
        return;
    };
    let row = d.trips.position(tid);
    let trips = row.and_then(|i| d.trips.brief(i));
    let trips = trips.as_ref();
    let outer = block(
        format!(
            " {} ",
            spillscope::names::elide(t.name, right.width.saturating_sub(4) as usize, app.ascii)
        ),
        theme,
        g,
    );
    let inner = outer.inner(right);
    f.render_widget(outer, right);
    let k = theme.fg(theme.c.muted);
    let life = match (t.producer, t.consumers.last()) {
        // Without frees (or a model) lifetimes are not known.
        _ if !d.caps.frees => "not recorded (the trace has no frees)".to_string(),
        (Some(p), Some(&c)) => format!("steps {p}..{c}"),
        (None, Some(&c)) => format!("steps 0..{c} (graph input)"),
        (Some(p), None) => format!("step {p} (unconsumed)"),
        (None, None) => "-".into(),
    };
    let n = trips.map(|x| x.trips).unwrap_or(0);
    let mut lines = vec![
        Line::from(vec![
            Span::styled("size      ", k),
            Span::raw(format!("{} ({})", fmt_bytes(t.bytes), t.kind.as_str())),
        ]),
        Line::from(vec![Span::styled("lifetime  ", k), Span::raw(life)]),
        Line::from(vec![
            Span::styled("trips     ", k),
            Span::raw({
                let (n, moved) = (
                    count(n as u64, "round trip"),
                    fmt_bytes(trips.map(|x| x.bytes_moved).unwrap_or(0)),
                );
                crate::ui::first_fit(
                    &[
                        format!("{n}, {moved} of spill traffic"),
                        format!("{n}, {moved} moved"),
                        format!("{n}, {moved}"),
                    ],
                    (inner.width as usize).saturating_sub(10),
                )
            }),
        ]),
    ];
    if let Some(x) = trips {
        if x.oscillating {
            lines.push(Line::styled(
                crate::ui::first_fit(
                    &[
                        format!(
                            "OSCILLATING: out and back {}; pinning it may pay",
                            count(x.trips as u64, "time")
                        ),
                        format!(
                            "OSCILLATING: out and back {}",
                            count(x.trips as u64, "time")
                        ),
                        format!("OSCILLATING: {}", count(x.trips as u64, "time")),
                    ],
                    inner.width as usize,
                ),
                theme.strong(theme.c.oscillation),
            ));
        }
        if let Some((op, count)) = x.pushed_by {
            let name = d.trace.ops.get(op).map(|o| o.name).unwrap_or("?");
            lines.push(Line::from(vec![
                Span::styled("pushed by ", k),
                Span::raw(format!(
                    "{} ({count}x)",
                    spillscope::names::elide(
                        name,
                        (inner.width as usize).saturating_sub(10 + 4 + count.to_string().len()),
                        app.ascii
                    )
                )),
            ]));
        }
    }
    let head_h = (lines.len() as u16).min(inner.height);
    f.render_widget(
        Paragraph::new(lines),
        Rect {
            height: head_h,
            ..inner
        },
    );
    let arrows = Rect {
        y: inner.y + head_h,
        height: inner.height - head_h,
        ..inner
    };
    if arrows.height < 3 || arrows.width <= LABEL_W + 4 {
        return;
    }
    let lane_w = arrows.width - LABEL_W;
    let x0 = arrows.x + LABEL_W;
    let buf = f.buffer_mut();
    lanes::axis(
        buf,
        Rect {
            height: 1,
            ..arrows
        },
        app.window,
        app.clock(),
        theme,
    );
    let cols = d.index.columns(app.window.0, app.window.1, lane_w as usize);
    lanes::label(buf, arrows.x, arrows.y + 1, "ops", k);
    lanes::ops_lane(buf, x0, arrows.y + 1, &cols, theme, g, None);
    // One row per trip: evict mark, arrow through the skipped ops, reload head.
    let (Some(x), Some(row)) = (trips, row) else {
        return;
    };
    let mut y = arrows.y + 2;
    // Only the trips there is room for are read in full.
    let room = (arrows.y + arrows.height).saturating_sub(y) as usize;
    for (i, rt) in
        (0..x.trips.min(room)).filter_map(|k| d.trips.trip(&d.trace, row, k).map(|t| (k, t)))
    {
        let mark = if app.tensors.trip == Some(i) {
            theme.selected()
        } else {
            k
        };
        lanes::label(buf, arrows.x, y, &format!("#{}", i + 1), mark);
        let a = rt.out_t_ns;
        let b = rt.back_t_ns.unwrap_or(app.window.1);
        if b < app.window.0 || a >= app.window.1 {
            y += 1;
            continue;
        }
        let ca = col_of(a.max(app.window.0), app.window, lane_w).unwrap_or(0);
        let cb =
            col_of(b.min(app.window.1.saturating_sub(1)), app.window, lane_w).unwrap_or(lane_w - 1);
        let style = theme.strong(if x.oscillating {
            theme.c.oscillation
        } else {
            theme.c.accent
        });
        for c in ca..=cb {
            if let Some(cell) = buf.cell_mut((x0 + c, y)) {
                cell.set_symbol(g.arrow).set_style(style);
            }
        }
        if a >= app.window.0 {
            let (sym, color) = match rt.out {
                Out::Evicted => (g.evict, theme.c.dma_write),
                Out::StreamedOut => (g.stream, theme.c.dma_stream),
            };
            if let Some(cell) = buf.cell_mut((x0 + ca, y)) {
                cell.set_symbol(sym).set_style(theme.strong(color));
            }
        }
        if rt.back_t_ns.is_some() && b < app.window.1 {
            let color = match rt.back {
                Some(Back::StreamedIn) => theme.c.dma_stream,
                _ => theme.c.dma_read,
            };
            if let Some(cell) = buf.cell_mut((x0 + cb, y)) {
                cell.set_symbol(g.arrow_head).set_style(theme.strong(color));
            }
        }
        let note = match rt.back {
            Some(Back::Reloaded) => format!(" {} skipped", count(rt.ops_skipped as u64, "op")),
            Some(Back::StreamedIn) => format!(
                " {} skipped (streamed in)",
                count(rt.ops_skipped as u64, "op")
            ),
            None => " never came back".into(),
        };
        let nx = x0 + cb + 2;
        if nx + note.len() as u16 <= x0 + lane_w {
            buf.set_string(nx, y, note, k);
        }
        y += 1;
    }
}

//! Timeline: ops lane with stalls (and one lane per pipe for kernel
//! traces), one fill lane per pool when there are several, one DMA lane per
//! ledger part (evict write-backs, reloads, streaming, weight and input
//! loads), spill markers, and the bus-occupancy sparkline on the same axis.

use super::lanes::{self, LABEL_W};
use crate::app::App;
use crate::glyphs::Glyphs;
use crate::keys::legend;
use crate::theme::Theme;
use crate::ui::{block, truncate};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use spillscope::analysis::timeline::Lane;
use spillscope::trace::ledger::Ledger;
use spillscope::units::{count, fmt_bytes};

pub fn draw(f: &mut Frame, app: &App, theme: &Theme, g: &Glyphs, area: Rect) {
    let Some(d) = app.primary() else { return };
    let (start, end) = app.full_window();
    let zoom = (end - start) as f64 / (app.window.1 - app.window.0).max(1) as f64;
    let title = format!(" Timeline  x{zoom:.1}  {} ", d.label);
    let outer = block(title, theme, g);
    let inner = outer.inner(area);
    f.render_widget(outer, area);
    if inner.height < 4 || inner.width <= LABEL_W + 4 {
        return;
    }
    let lane_w = inner.width - LABEL_W;
    let x = inner.x + LABEL_W;
    let cols = d.index.columns(app.window.0, app.window.1, lane_w as usize);
    let buf = f.buffer_mut();
    let muted = theme.fg(theme.c.muted);
    let mut y = inner.y;
    let bottom = inner.y + inner.height;
    lanes::axis(
        buf,
        Rect {
            x: inner.x,
            y,
            width: inner.width,
            height: 1,
        },
        app.window,
        app.clock(),
        theme,
    );
    y += 1;
    // The ops lane, one lane per DMA part, then the spill markers.
    let mut rows: Vec<(&str, Option<Lane>)> = vec![("ops", None)];
    rows.extend(Lane::ALL.iter().map(|&l| (l.label(), Some(l))));
    rows.push(("spills", None));
    for (i, (name, lane)) in rows.into_iter().enumerate() {
        if y >= bottom {
            return;
        }
        lanes::label(buf, inner.x, y, name, muted);
        match (i, lane) {
            (0, _) => lanes::ops_lane(buf, x, y, &cols, theme, g, app.focus_op),
            (_, Some(l)) => lanes::dma_lane(buf, x, y, &cols, l, theme, g),
            _ => lanes::event_lane(buf, x, y, &cols, theme, g),
        }
        y += 1;
        // Kernel traces: one lane per pipe under the ops lane.
        if i == 0 {
            for (pipe, index) in &d.pipes {
                if y + 4 >= bottom {
                    break;
                }
                let pcols = index.columns(app.window.0, app.window.1, lane_w as usize);
                lanes::label(buf, inner.x, y, &format!(" {pipe}"), muted);
                lanes::ops_lane(buf, x, y, &pcols, theme, g, None);
                y += 1;
            }
            // Several pools: one fill lane each (resident / capacity), all
            // or none, so no pool goes missing unannounced; they need room
            // beside the DMA lanes, the cursor, the bus and the info lines.
            if !d.pools.is_empty() && y + d.pools.len() as u16 + 11 <= bottom {
                for p in &d.pools {
                    lanes::label(buf, inner.x, y, &format!(" {}", p.name), muted);
                    let lane = Rect {
                        x,
                        y,
                        width: lane_w,
                        height: 1,
                    };
                    lanes::pool_lane(buf, lane, p, app.window, theme, g);
                    y += 1;
                }
            }
        }
    }
    if y < bottom {
        lanes::label(buf, inner.x, y, "cursor", muted);
        lanes::cursor_mark(
            buf,
            Rect {
                x,
                y,
                width: lane_w,
                height: 1,
            },
            app.window,
            app.cursor,
            theme,
            g,
        );
        y += 1;
    }
    // Info lines, the legend and the event list at the bottom; the
    // sparkline takes what is left, up to 6 rows (3 on small screens, so the
    // event list keeps room).
    let info_h: u16 = if bottom - y >= 6 { 3 } else { 0 };
    let spark_max = if area.height <= 24 { 3 } else { 6 };
    let spark_h = (bottom - y).saturating_sub(info_h + 4).clamp(1, spark_max);
    let spark_h = spark_h.min(bottom - y);
    if spark_h > 0 {
        lanes::label(buf, inner.x, y, "bus", muted);
        if spark_h > 1 {
            lanes::label(
                buf,
                inner.x,
                y + spark_h - 1,
                ">80%!",
                theme.fg(theme.c.bus_hot),
            );
        }
        lanes::bus_sparkline(
            buf,
            Rect {
                x,
                y,
                width: lane_w,
                height: spark_h,
            },
            d,
            app.window,
            theme,
            g,
        );
        y += spark_h;
    }
    if info_h == 0 || y >= bottom {
        return;
    }
    // What is under the cursor.
    let op = d.op_at(app.cursor);
    let w = inner.width as usize;
    let line1 = match op.map(|i| d.trace.ops.at(i)) {
        Some(o) => {
            let (label, name_w, tail) = cursor_line_parts(app, o, w);
            Line::from(vec![
                Span::styled(label, muted),
                Span::styled(
                    spillscope::names::elide(o.name, name_w, app.ascii),
                    theme.strong(theme.c.accent),
                ),
                Span::raw(tail),
            ])
        }
        None => Line::styled(format!("cursor {}", app.clock().fmt(app.cursor)), muted),
    };
    let ev: u32 = cols.iter().map(|c| c.evicts).sum();
    let rl: u32 = cols.iter().map(|c| c.reloads).sum();
    let st: u32 = cols.iter().map(|c| c.streams).sum();
    let line2 = if !d.caps.spill_events {
        Line::styled(
            "this trace records no spill events: ops and their times only",
            muted,
        )
    } else {
        let in_view = format!(
            "in view: {}, {}, {}",
            count(ev, "eviction"),
            count(rl, "reload"),
            count(st, "stream"),
        );
        let run = fmt_bytes(d.ledger.total.traffic_bytes());
        Line::styled(
            crate::ui::first_fit(
                &[
                    format!("{in_view} | run: {run} traffic"),
                    format!("{in_view} | run: {run}"),
                    in_view,
                    format!("in view: {ev} evict, {rl} reload, {st} stream"),
                ],
                w,
            ),
            muted,
        )
    };
    let line3 = Line::styled(format!("legend: {}", legend(g)), muted);
    f.render_widget(
        Paragraph::new(vec![line1, line2, line3]),
        Rect {
            x: inner.x,
            y,
            width: inner.width,
            height: (bottom - y).min(3),
        },
    );
    y += 3;
    if bottom.saturating_sub(y) < 2 {
        return;
    }
    draw_events(
        f,
        app,
        theme,
        Rect {
            x: inner.x,
            y,
            width: inner.width,
            height: bottom - y,
        },
    );
}

/// The spill events around the selection (or the cursor), selectable with
/// j/k; Enter opens the selected event's tensor.
fn draw_events(f: &mut Frame, app: &App, theme: &Theme, r: Rect) {
    let Some(d) = app.primary() else { return };
    let muted = theme.fg(theme.c.muted);
    let total = d.index.spill_count();
    let room = r.height.saturating_sub(1) as usize;
    let at = app
        .timeline
        .sel
        .unwrap_or_else(|| d.index.spill_position(app.cursor));
    let from = at.saturating_sub(room / 3).min(total.saturating_sub(room));
    let shown: Vec<(u64, usize)> = d.index.spills_in(from, from + room).collect();
    let w = r.width as usize;
    // Fixed columns: time, event, bytes; the rest is "tensor (op)".
    let fixed = 12 + 2 + 10 + 1 + 10 + 2;
    let name_w = w.saturating_sub(fixed);
    let tensor_names: Vec<&str> = shown
        .iter()
        .map(|&(_, ei)| {
            let e = &d.trace.events.at(ei);
            d.trace.tensors.get(e.tensor).map(|t| t.name).unwrap_or("?")
        })
        .collect();
    let tnames = spillscope::names::elide_all(&tensor_names, (name_w * 3 / 5).max(8), app.ascii);
    let mut lines = vec![Line::styled(
        format!(
            "{:>12}  {:<10} {:>10}  {}",
            "time", "event", "bytes", "tensor  (during op)"
        ),
        theme.strong(theme.c.muted),
    )];
    for (k, &(t, ei)) in shown.iter().enumerate() {
        let e = &d.trace.events.at(ei);
        let oname =
            e.op.and_then(|o| d.trace.ops.get(o))
                .map(|o| o.name)
                .unwrap_or("-");
        let color = d
            .ledger
            .part(ei)
            .map(|p| lanes::lane_color(theme, Lane::of(p)))
            .unwrap_or(theme.c.muted);
        let selected = app.timeline.sel == Some(from + k);
        let style = if selected {
            theme.selected()
        } else {
            theme.fg(color)
        };
        let rest = w.saturating_sub(fixed + tnames[k].chars().count() + 3);
        let text = format!(
            "{:>12}  {:<10} {:>10}  {}  ({})",
            app.clock().fmt(t),
            e.kind.as_str(),
            // An eviction that writes nothing drops a copy DRAM still has.
            match (e.kind, Ledger::bytes(e)) {
                (spillscope::trace::EventKind::Evict, 0) => "clean".to_string(),
                (_, b) => fmt_bytes(b),
            },
            tnames[k],
            spillscope::names::elide(oname, rest.max(4), app.ascii)
        );
        lines.push(Line::styled(truncate(&text, w), style));
    }
    if shown.is_empty() {
        lines.push(Line::styled("no spill events", muted));
    }
    f.render_widget(Paragraph::new(lines), r);
}

/// The Timeline's own state: the selected spill event (a position in the
/// index's spill events), if any.
#[derive(Debug, Clone, Default)]
pub struct TimelineView {
    pub sel: Option<usize>,
}

/// The "at cursor" line in `w` columns, whole: its label, the room left for
/// the op's name (elided in the middle) and the figures after it. Narrow
/// screens drop the label, then the type and stall, before the times.
fn cursor_line_parts(
    app: &App,
    o: spillscope::trace::OpRef<'_>,
    w: usize,
) -> (&'static str, usize, String) {
    let c = app.clock();
    let span = format!("{}..{}", c.fmt(o.start_ns), c.fmt(o.end_ns));
    let full = format!(" {} {span} stall {}", o.op_type, c.fmt(o.stall_ns));
    crate::ui::fit_name_line(
        w,
        &[
            ("at cursor: ", full.clone()),
            ("", full),
            ("", format!(" {span}")),
        ],
        12,
    )
}

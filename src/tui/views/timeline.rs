//! Timeline: ops lane with stalls, one DMA lane per ledger part (evict
//! write-backs, reloads, streaming, weight and input loads), spill markers,
//! and the bus-occupancy sparkline on the same axis.

use super::lanes::{self, LABEL_W};
use crate::analysis::timeline::Lane;
use crate::trace::ledger::Ledger;
use crate::tui::app::App;
use crate::tui::glyphs::Glyphs;
use crate::tui::theme::Theme;
use crate::tui::ui::{block, truncate};
use crate::units::{count, fmt_bytes};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

pub fn draw(f: &mut Frame, app: &App, theme: &Theme, g: &Glyphs, area: Rect) {
    let Some(d) = app.primary() else { return };
    let zoom = app.end_ns() as f64 / (app.window.1 - app.window.0).max(1) as f64;
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
    // Info lines at the bottom, sparkline in between.
    let info_h: u16 = if bottom - y >= 5 { 2 } else { 0 };
    let spark_h = (bottom - y).saturating_sub(info_h).min(6);
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
    let op = d
        .trace
        .ops
        .iter()
        .position(|o| o.start_ns <= app.cursor && app.cursor < o.end_ns.max(o.start_ns + 1));
    let w = inner.width as usize;
    let line1 = match op.map(|i| &d.trace.ops[i]) {
        Some(o) => Line::from(vec![
            Span::styled("at cursor: ", muted),
            Span::styled(truncate(&o.name, w / 2), theme.strong(theme.c.accent)),
            Span::raw(format!(
                " {} {}..{} stall {}",
                o.op_type,
                lanes::ms(o.start_ns),
                lanes::ms(o.end_ns),
                lanes::ms(o.stall_ns)
            )),
        ]),
        None => Line::styled(format!("cursor {}", lanes::ms(app.cursor)), muted),
    };
    let ev: u32 = cols.iter().map(|c| c.evicts).sum();
    let rl: u32 = cols.iter().map(|c| c.reloads).sum();
    let st: u32 = cols.iter().map(|c| c.streams).sum();
    let line2 = Line::from(vec![Span::styled(
        format!(
            "in view: {}, {}, {} | run: {} spill traffic, stall {}",
            count(ev, "eviction"),
            count(rl, "reload"),
            count(st, "stream event"),
            fmt_bytes(d.ledger.total.traffic_bytes()),
            lanes::ms(d.trace.summary.stall_ns)
        ),
        muted,
    )]);
    f.render_widget(
        Paragraph::new(vec![line1, line2]),
        Rect {
            x: inner.x,
            y,
            width: inner.width,
            height: (bottom - y).min(2),
        },
    );
    y += 2;
    // Spill events around the cursor, when there is room.
    if bottom.saturating_sub(y) < 3 {
        return;
    }
    let room = (bottom - y - 1) as usize;
    let evs = d.index.spills_around(app.cursor, room);
    let mut lines = vec![Line::styled(
        format!(
            "{:>12}  {:<10} {:>10}  {}",
            "time", "event", "bytes", "tensor  (during op)"
        ),
        theme.strong(theme.c.muted),
    )];
    for &(t, ei) in evs {
        let e = &d.trace.events[ei];
        let tname = d
            .trace
            .tensors
            .get(e.tensor)
            .map(|t| t.name.as_str())
            .unwrap_or("?");
        let oname =
            e.op.and_then(|o| d.trace.ops.get(o))
                .map(|o| o.name.as_str())
                .unwrap_or("-");
        let why = e
            .reason
            .as_deref()
            .map(|r| format!(" [{r}]"))
            .unwrap_or_default();
        let color = d
            .ledger
            .part(ei)
            .map(|p| lanes::lane_color(theme, Lane::of(p)))
            .unwrap_or(theme.c.muted);
        let mut style = theme.fg(color);
        if t == app.cursor {
            style = theme.selected();
        }
        let text = format!(
            "{:>12}  {:<10} {:>10}  {tname}  ({oname}){why}",
            lanes::ms(t),
            e.kind.as_str(),
            fmt_bytes(Ledger::bytes(e))
        );
        lines.push(Line::styled(truncate(&text, w), style));
    }
    if evs.is_empty() {
        lines.push(Line::styled("no spill events", muted));
    }
    f.render_widget(
        Paragraph::new(lines),
        Rect {
            x: inner.x,
            y,
            width: inner.width,
            height: bottom - y,
        },
    );
}

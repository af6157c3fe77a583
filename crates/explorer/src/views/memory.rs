//! Memory map: pool offset (vertical) x time (horizontal) occupancy, so
//! fragmentation and the holes behind a lifetime spill are visible.
//! Neighbouring tensors are drawn in different shades; a cursor (arrows:
//! time and offset) names the tensor under it, its interval and bytes.

use super::lanes::{col_of, col_start};
use crate::app::App;
use crate::glyphs::Glyphs;
use crate::theme::Theme;
use crate::ui::block;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use spillscope::units::fmt_bytes;

/// The memory map's own state: the cursor's offset (its time is the time
/// views' shared cursor).
#[derive(Debug, Clone, Default)]
pub struct MemoryView {
    pub offset: u64,
    /// Which of the trace's pools the map shows (`o` cycles them).
    pub pool: usize,
}

/// The pool the map shows.
pub fn pool_of<'a>(app: &App, d: &'a crate::data::Dataset) -> Option<&'a spillscope::trace::Pool> {
    d.trace
        .pools
        .get(app.memory.pool)
        .or_else(|| d.trace.pools.first())
}

/// Rows under the map: the fragmentation line and the cursor's two lines.
const BELOW: u16 = 3;

/// Width of the offset labels: the capacity's, whole.
fn label_w(cap: u64) -> u16 {
    (fmt_bytes(cap).chars().count().max(4) + 1) as u16
}

/// The map's grid (time columns, offset rows) for the terminal the app
/// knows, as [`draw`] lays it out; the cursor moves by one of each.
pub fn grid_size(app: &App) -> (u16, u16) {
    let cap = app
        .primary()
        .map(|d| pool_of(app, d).map_or(d.capacity, |p| p.capacity_bytes))
        .unwrap_or(1);
    let body_h = app
        .height
        .saturating_sub(crate::ui::rows_above_body(app) + 1);
    let cols = app.width.saturating_sub(2 + label_w(cap));
    let rows = body_h.saturating_sub(2 + 1 + BELOW);
    (cols.max(1), rows.max(1))
}

pub fn draw(f: &mut Frame, app: &App, theme: &Theme, g: &Glyphs, area: Rect) {
    let Some(d) = app.primary() else { return };
    let pool = pool_of(app, d);
    let pi = d
        .trace
        .pools
        .iter()
        .position(|p| Some(p) == pool)
        .unwrap_or(0);
    let name = pool.map(|p| p.name.clone()).unwrap_or_default();
    // With several pools, only this pool's placements are drawn.
    let in_pool = |p: &spillscope::analysis::memmap::Placement| {
        pool.is_none_or(|x| p.pool(&d.trace) == x.name)
    };
    if !d.caps.offsets {
        // Nothing says where tensors sit: no map to draw.
        let how = d
            .caps
            .missing(&d.trace)
            .into_iter()
            .find(|m| m.what == "offsets")
            .map(|m| m.how)
            .unwrap_or_default();
        f.render_widget(
            ratatui::widgets::Paragraph::new(format!(
                "This trace does not record where tensors sit in memory ({how}), so there is no map to draw."
            ))
            .wrap(ratatui::widgets::Wrap { trim: true })
            .style(theme.fg(theme.c.muted))
            .block(block(format!(" Memory map: pool {name} "), theme, g)),
            area,
        );
        return;
    }
    // The span drawn: the declared capacity, else what the offsets reach.
    let cap = pool.map(|p| p.capacity_bytes).unwrap_or(0).max(1);
    let outer = block(
        if d.caps.capacity {
            format!(
                " Memory map: pool {name}, {} (offset up, time right) ",
                fmt_bytes(cap)
            )
        } else {
            format!(
                " Memory map: pool {name}, offsets to {} (no declared capacity) ",
                fmt_bytes(cap)
            )
        },
        theme,
        g,
    );
    let inner = outer.inner(area);
    f.render_widget(outer, area);
    let lw = label_w(cap);
    if inner.height < 4 + BELOW || inner.width <= lw + 4 {
        return;
    }
    let lane_w = inner.width - lw;
    let x0 = inner.x + lw;
    let grid_h = inner.height - 1 - BELOW;
    let muted = theme.fg(theme.c.muted);
    let buf = f.buffer_mut();
    time_axis(buf, inner, lw, app.window, app.clock(), theme);
    let gy = inner.y + 1;
    buf.set_string(inner.x, gy, fmt_bytes(cap), muted);
    buf.set_string(inner.x, gy + grid_h - 1, "0", muted);
    let span = (app.window.1 - app.window.0).max(1) as f64;
    let band = cap as f64 / grid_h as f64;
    let palette = [
        theme.c.compute,
        theme.c.dma_read,
        theme.c.dma_write,
        theme.c.live,
    ];
    let fills = [g.full, g.levels[7], g.shade, g.levels[5]];
    let under = tensor_at(app, app.cursor, app.memory.offset);
    let look = |tensor: usize| -> (&str, Style) {
        let s = d.shades.get(tensor).copied().unwrap_or(0) as usize % 4;
        let selected = app.tensors.tensor == Some(tensor) || under.map(|p| p.0) == Some(tensor);
        let style = if selected {
            theme
                .strong(theme.c.highlight)
                .add_modifier(Modifier::REVERSED)
        } else {
            theme.fg(palette[s])
        };
        (fills[s], style)
    };
    let occ = &d.occupancy[pi.min(d.occupancy.len().saturating_sub(1))];
    let dt = span / lane_w as f64;
    // Small traces are drawn exactly from their placements; big ones read the
    // grid when zoomed out (bounded work per frame).
    let use_grid = d.placements.len() > 50_000 && dt >= occ.base_ns as f64;
    if use_grid {
        for c in 0..lane_w {
            let cs = app.window.0 as f64 + c as f64 * dt;
            let b0 = (cs / occ.base_ns as f64) as usize;
            let b1 = (((cs + dt) / occ.base_ns as f64).ceil() as usize).max(b0 + 1);
            for r in 0..grid_h as usize {
                let r0 = r * occ.bands / grid_h as usize;
                let r1 = ((r + 1) * occ.bands / grid_h as usize).max(r0 + 1);
                if let Some(t) = occ.any_in(b0, b1, r0, r1) {
                    let y = gy + grid_h - 1 - r as u16;
                    let (sym, style) = look(t);
                    if let Some(cell) = buf.cell_mut((x0 + c, y)) {
                        cell.set_symbol(sym).set_style(style);
                    }
                }
            }
        }
    }
    for p in d
        .placements_in(app.window.0, app.window.1)
        .take_while(|_| !use_grid)
        .filter(|p| in_pool(p))
    {
        let c0 = (((p.t0.max(app.window.0) - app.window.0) as f64 / span) * lane_w as f64) as u16;
        let c1 = ((((p.t1.min(app.window.1) - app.window.0) as f64 / span) * lane_w as f64).ceil()
            as u16)
            .clamp(c0 + 1, lane_w);
        let r0 = (p.offset as f64 / band) as u16;
        let r1 = (((p.offset + p.bytes) as f64 / band).ceil() as u16).clamp(r0 + 1, grid_h);
        let (sym, style) = look(p.tensor);
        for r in r0.min(grid_h - 1)..r1 {
            let y = gy + grid_h - 1 - r;
            for c in c0.min(lane_w - 1)..c1 {
                if let Some(cell) = buf.cell_mut((x0 + c, y)) {
                    cell.set_symbol(sym).set_style(style);
                }
            }
        }
    }
    // The cursor: a cross-hair cell.
    if let Some(c) = col_of(app.cursor, app.window, lane_w) {
        let r = ((app.memory.offset as f64 / band) as u16).min(grid_h - 1);
        if let Some(cell) = buf.cell_mut((x0 + c, gy + grid_h - 1 - r)) {
            cell.set_symbol("+")
                .set_style(theme.strong(theme.c.highlight).bg(Color::Reset));
        }
    }
    let fy = gy + grid_h;
    frag_line(buf, app, theme, g, (inner.x, x0, fy, lane_w));
    // What is under the cursor.
    let line = match under {
        Some((t, p0, p1, off, bytes)) => {
            let tn = d.trace.tensors.get(t).map(|x| x.name).unwrap_or("?");
            // Whole in the width: the name shortens first, then the
            // offsets go, then the label.
            let c = app.clock();
            let size_time = format!(" {} from {} to {}", fmt_bytes(bytes), c.fmt(p0), c.fmt(p1));
            let full = format!(
                " [{}, {}){size_time}",
                fmt_bytes(off),
                fmt_bytes(off + bytes)
            );
            let (label, name_w, tail) = crate::ui::fit_name_line(
                inner.width as usize,
                &[
                    ("cursor: ", full.clone()),
                    ("cursor: ", size_time.clone()),
                    ("", size_time),
                ],
                10,
            );
            Line::from(vec![
                Span::styled(label, muted),
                Span::styled(
                    spillscope::names::elide(tn, name_w, app.ascii),
                    theme.strong(theme.c.accent),
                ),
                Span::raw(tail),
            ])
        }
        None => Line::styled(
            format!(
                "cursor: free at offset {}, {} (arrows move it)",
                fmt_bytes(app.memory.offset),
                app.clock().fmt(app.cursor)
            ),
            muted,
        ),
    };
    f.render_widget(
        Paragraph::new(vec![line]),
        Rect {
            x: inner.x,
            y: fy + 1,
            width: inner.width,
            height: 2,
        },
    );
}

/// The tensor placed at (`t`, `offset`): (tensor, from, to, offset, bytes).
fn tensor_at(app: &App, t: u64, offset: u64) -> Option<(usize, u64, u64, u64, u64)> {
    let d = app.primary()?;
    let pool = pool_of(app, d);
    d.placements_in(t, t + 1)
        .filter(|p| pool.is_none_or(|x| p.pool(&d.trace) == x.name))
        .find(|p| p.offset <= offset && offset < p.offset + p.bytes.max(1))
        .map(|p| (p.tensor, p.t0, p.t1, p.offset, p.bytes))
}

/// The time axis over the map, labels whole.
fn time_axis(
    buf: &mut ratatui::buffer::Buffer,
    inner: Rect,
    lw: u16,
    window: (u64, u64),
    clock: spillscope::units::Clock,
    theme: &Theme,
) {
    let st = theme.fg(theme.c.muted);
    buf.set_string(inner.x, inner.y, "time", st);
    let x0 = inner.x + lw;
    let w = inner.width - lw;
    let span = window.1 - window.0;
    let a = clock.axis(window.0, span);
    let m = clock.axis(window.0 + span / 2, span);
    let b = clock.axis(window.1, span);
    buf.set_string(x0, inner.y, &a, st);
    let mx = x0 + w / 2 - (m.len() as u16 / 2).min(w / 2);
    if mx > x0 + a.len() as u16 + 1 && mx + (m.len() as u16) + 1 < x0 + w - b.len() as u16 {
        buf.set_string(mx, inner.y, &m, st);
    }
    buf.set_string((x0 + w).saturating_sub(b.len() as u16), inner.y, &b, st);
}

/// Lifetime (fragmentation) evictions along the bottom line.
fn frag_line(
    buf: &mut ratatui::buffer::Buffer,
    app: &App,
    theme: &Theme,
    g: &Glyphs,
    (lx, x0, fy, lane_w): (u16, u16, u16, u16),
) {
    let Some(d) = app.primary() else { return };
    let pool = pool_of(app, d);
    buf.set_string(lx, fy, "frag", theme.fg(theme.c.fragmentation));
    let mut n = 0;
    // Lifetime spills are kept in event (time) order: one per column is
    // all a cell shows, so after each mark the next column's first is
    // found by search (bounded work at any zoom).
    let sp = &d.class.spills;
    let ev = &d.trace.events;
    let from_time = |t: u64| sp.lifetime_from_event(ev.partition_time(|x| x < t));
    let mut j = from_time(app.window.0);
    while let Some(k) = sp.lifetime_spill(j) {
        let i = sp.event(k);
        let t = ev.t_ns(i);
        if t >= app.window.1 {
            break;
        }
        j += 1;
        // Only the shown pool's fragmentation.
        if pool.is_some_and(|x| ev.pool(i) != x.name) {
            continue;
        }
        let Some(c) = col_of(t, app.window, lane_w) else {
            continue;
        };
        if let Some(cell) = buf.cell_mut((x0 + c, fy)) {
            cell.set_symbol(g.evict)
                .set_style(theme.strong(theme.c.fragmentation));
        }
        n += 1;
        j = j.max(from_time(col_start(c + 1, app.window, lane_w)));
    }
    if n == 0 {
        // A profile that records no evictions cannot tell that none
        // happened: say what it lacks instead of "none".
        let text = if d.caps.spill_events {
            "no lifetime spills in view"
        } else {
            "spills not recorded by this trace"
        };
        buf.set_stringn(x0, fy, text, lane_w as usize, theme.fg(theme.c.muted));
    }
}

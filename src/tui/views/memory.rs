//! Memory map: pool offset (vertical) x time (horizontal) occupancy, so
//! fragmentation and the holes behind a lifetime spill are visible.

use super::lanes::{self, col_of, LABEL_W};
use crate::tui::app::App;
use crate::tui::glyphs::Glyphs;
use crate::tui::theme::Theme;
use crate::tui::ui::block;
use crate::units::fmt_bytes;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::Frame;

pub fn draw(f: &mut Frame, app: &App, theme: &Theme, g: &Glyphs, area: Rect) {
    let Some(d) = app.primary() else { return };
    let pool = d.trace.pools.first();
    let cap = pool.map(|p| p.capacity_bytes).unwrap_or(0).max(1);
    let name = pool.map(|p| p.name.clone()).unwrap_or_default();
    let outer = block(
        format!(
            " Memory map: pool {name}, {} (offset up, time right) ",
            fmt_bytes(cap)
        ),
        theme,
        g,
    );
    let inner = outer.inner(area);
    f.render_widget(outer, area);
    if inner.height < 4 || inner.width <= LABEL_W + 4 {
        return;
    }
    let lane_w = inner.width - LABEL_W;
    let x0 = inner.x + LABEL_W;
    let grid_h = inner.height - 2;
    let buf = f.buffer_mut();
    lanes::axis(buf, Rect { height: 1, ..inner }, app.window, theme);
    let gy = inner.y + 1;
    let muted = theme.fg(theme.c.muted);
    lanes::label(buf, inner.x, gy, &fmt_bytes(cap), muted);
    lanes::label(buf, inner.x, gy + grid_h - 1, "0", muted);
    let span = (app.window.1 - app.window.0).max(1) as f64;
    let band = cap as f64 / grid_h as f64;
    let palette = [
        theme.c.compute,
        theme.c.dma_read,
        theme.c.dma_write,
        theme.c.live,
        theme.c.accent,
        theme.c.bus,
    ];
    let style_of = |tensor: usize| {
        if app.tensors.tensor == Some(tensor) {
            theme
                .strong(theme.c.highlight)
                .add_modifier(Modifier::REVERSED)
        } else {
            theme.fg(palette[tensor % palette.len()])
        }
    };
    let occ = &d.occupancy;
    let dt = span / lane_w as f64;
    // Small traces are drawn exactly from their placements; big ones read the
    // grid when zoomed out (bounded work per frame).
    let use_grid = d.placements.len() > 50_000 && dt >= occ.base_ns as f64;
    if use_grid {
        // Zoomed out: read the pre-built occupancy grid.
        for c in 0..lane_w {
            let cs = app.window.0 as f64 + c as f64 * dt;
            let b0 = (cs / occ.base_ns as f64) as usize;
            let b1 = (((cs + dt) / occ.base_ns as f64).ceil() as usize).max(b0 + 1);
            for r in 0..grid_h as usize {
                let r0 = r * occ.bands / grid_h as usize;
                let r1 = ((r + 1) * occ.bands / grid_h as usize).max(r0 + 1);
                if let Some(t) = occ.any_in(b0, b1, r0, r1) {
                    let y = gy + grid_h - 1 - r as u16;
                    if let Some(cell) = buf.cell_mut((x0 + c, y)) {
                        cell.set_symbol(g.full).set_style(style_of(t));
                    }
                }
            }
        }
    }
    for p in d
        .placements_in(app.window.0, app.window.1)
        .take_while(|_| !use_grid)
    {
        let c0 = (((p.t0.max(app.window.0) - app.window.0) as f64 / span) * lane_w as f64) as u16;
        let c1 = ((((p.t1.min(app.window.1) - app.window.0) as f64 / span) * lane_w as f64).ceil()
            as u16)
            .clamp(c0 + 1, lane_w);
        let r0 = (p.offset as f64 / band) as u16;
        let r1 = (((p.offset + p.bytes) as f64 / band).ceil() as u16).clamp(r0 + 1, grid_h);
        let style = style_of(p.tensor);
        for r in r0.min(grid_h - 1)..r1 {
            let y = gy + grid_h - 1 - r;
            for c in c0.min(lane_w - 1)..c1 {
                if let Some(cell) = buf.cell_mut((x0 + c, y)) {
                    cell.set_symbol(g.full).set_style(style);
                }
            }
        }
    }
    // Lifetime (fragmentation) evictions along the bottom line.
    let fy = gy + grid_h;
    lanes::label(buf, inner.x, fy, "frag", theme.fg(theme.c.fragmentation));
    let mut n = 0;
    // Spills are in event (time) order: visit only those in the window.
    let ev_t = |s: &crate::analysis::classify::ClassifiedSpill| d.trace.events[s.event].t_ns;
    let from = d.class.spills.partition_point(|s| ev_t(s) < app.window.0);
    for s in d.class.spills[from..]
        .iter()
        .take_while(|s| ev_t(s) < app.window.1)
    {
        if s.class != crate::analysis::classify::SpillClass::Lifetime {
            continue;
        }
        let t = d.trace.events[s.event].t_ns;
        if let Some(c) = col_of(t, app.window, lane_w) {
            if let Some(cell) = buf.cell_mut((x0 + c, fy)) {
                cell.set_symbol(g.evict)
                    .set_style(theme.strong(theme.c.fragmentation));
            }
            n += 1;
        }
    }
    if n == 0 {
        buf.set_stringn(x0, fy, "no lifetime spills in view", lane_w as usize, muted);
    }
}

//! Time-axis building blocks shared by the timeline, tensor, memory and
//! compare views: an axis, the ops lane, DMA lanes, event markers and the
//! bus-occupancy sparkline, all from the pre-aggregated index (O(columns)).

use crate::data::Dataset;
use crate::glyphs::Glyphs;
use crate::theme::Theme;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use spillscope::analysis::timeline::{Column, Lane};

/// Width of the lane labels on the left.
pub const LABEL_W: u16 = 8;

/// Column of time `t` in a lane of `width` columns over `window`, if visible.
pub fn col_of(t: u64, window: (u64, u64), width: u16) -> Option<u16> {
    if t < window.0 || t >= window.1 || width == 0 {
        return None;
    }
    let span = (window.1 - window.0).max(1) as f64;
    Some((((t - window.0) as f64 / span) * width as f64) as u16).map(|c| c.min(width - 1))
}

/// A time at or just before the start of column `c` ([`col_of`]'s first
/// time in it): never after it, so a search from it misses nothing drawn
/// in that column; the window's end past the last column.
pub fn col_start(c: u16, window: (u64, u64), width: u16) -> u64 {
    if c >= width {
        return window.1;
    }
    let span = (window.1 - window.0).max(1) as f64;
    let at = (c as f64 * span / width as f64).floor() as u64;
    (window.0 + at.saturating_sub(1)).min(window.1)
}

pub fn label(buf: &mut Buffer, x: u16, y: u16, text: &str, style: Style) {
    buf.set_stringn(x, y, text, LABEL_W as usize - 1, style);
}

/// Axis: start, middle and end times.
pub fn axis(
    buf: &mut Buffer,
    area: Rect,
    window: (u64, u64),
    clock: spillscope::units::Clock,
    theme: &Theme,
) {
    let span = window.1 - window.0;
    let st = theme.fg(theme.c.muted);
    label(buf, area.x, area.y, "time", st);
    let x0 = area.x + LABEL_W;
    let w = area.width.saturating_sub(LABEL_W);
    if w < 10 {
        return;
    }
    let a = clock.axis(window.0, span);
    let m = clock.axis(window.0 + span / 2, span);
    let b = clock.axis(window.1, span);
    buf.set_string(x0, area.y, &a, st);
    let mx = x0 + w / 2 - (m.len() as u16 / 2).min(w / 2);
    if mx > x0 + a.len() as u16 + 1 && mx + (m.len() as u16) + 1 < x0 + w - b.len() as u16 {
        buf.set_string(mx, area.y, &m, st);
    }
    buf.set_string((x0 + w).saturating_sub(b.len() as u16), area.y, &b, st);
}

/// The ops lane (compute, with stalls marked) for `cols`.
pub fn ops_lane(
    buf: &mut Buffer,
    x: u16,
    y: u16,
    cols: &[Column],
    theme: &Theme,
    g: &Glyphs,
    focus: Option<usize>,
) {
    for (i, c) in cols.iter().enumerate() {
        let (sym, style) = if c.stall > 0.0 && c.stall >= c.compute * 0.25 {
            (g.stall, theme.strong(theme.c.stall))
        } else if c.compute > 0.0 {
            (g.level(c.compute.max(0.13)), theme.fg(theme.c.compute))
        } else {
            (" ", Style::default())
        };
        let mut style = style;
        if focus.is_some() && c.op == focus {
            style = style.add_modifier(Modifier::REVERSED);
        }
        if let Some(cell) = buf.cell_mut((x + i as u16, y)) {
            cell.set_symbol(sym).set_style(style);
        }
    }
}

/// The colour of a DMA lane.
pub fn lane_color(theme: &Theme, lane: Lane) -> ratatui::style::Color {
    match lane {
        Lane::Evict => theme.c.dma_write,
        Lane::Reload => theme.c.dma_read,
        Lane::Stream => theme.c.dma_stream,
        Lane::Weights => theme.c.dma_weights,
    }
}

/// A DMA lane: that lane's busy fraction per column.
pub fn dma_lane(
    buf: &mut Buffer,
    x: u16,
    y: u16,
    cols: &[Column],
    lane: Lane,
    theme: &Theme,
    g: &Glyphs,
) {
    let style = theme.fg(lane_color(theme, lane));
    for (i, c) in cols.iter().enumerate() {
        if let Some(cell) = buf.cell_mut((x + i as u16, y)) {
            cell.set_symbol(g.level(c.lane(lane))).set_style(style);
        }
    }
}

/// Several DMA lanes in one row: per column, the busiest of `which`.
#[allow(clippy::too_many_arguments)]
pub fn busiest_lane(
    buf: &mut Buffer,
    x: u16,
    y: u16,
    cols: &[Column],
    which: &[Lane],
    theme: &Theme,
    g: &Glyphs,
) {
    for (i, c) in cols.iter().enumerate() {
        let best = which
            .iter()
            .copied()
            .max_by(|a, b| c.lane(*a).total_cmp(&c.lane(*b)));
        let Some(l) = best.filter(|&l| c.lane(l) > 0.0) else {
            continue;
        };
        if let Some(cell) = buf.cell_mut((x + i as u16, y)) {
            cell.set_symbol(g.level(c.lane(l)))
                .set_style(theme.fg(lane_color(theme, l)));
        }
    }
}

/// Spill event markers: evict, reload, stream, or several in a column.
pub fn event_lane(buf: &mut Buffer, x: u16, y: u16, cols: &[Column], theme: &Theme, g: &Glyphs) {
    for (i, c) in cols.iter().enumerate() {
        let kinds = [c.evicts > 0, c.reloads > 0, c.streams > 0];
        let (sym, color) = match kinds {
            [false, false, false] => continue,
            [true, false, false] => (g.evict, theme.c.dma_write),
            [false, true, false] => (g.reload, theme.c.dma_read),
            [false, false, true] => (g.stream, theme.c.dma_stream),
            _ => (g.both, theme.c.highlight),
        };
        if let Some(cell) = buf.cell_mut((x + i as u16, y)) {
            cell.set_symbol(sym).set_style(theme.strong(color));
        }
    }
}

/// Bus occupancy sparkline over `rows` rows; columns above 80 % highlighted.
pub fn bus_sparkline(
    buf: &mut Buffer,
    area: Rect,
    d: &Dataset,
    window: (u64, u64),
    theme: &Theme,
    g: &Glyphs,
) {
    let Some(bus) = &d.bus else {
        buf.set_string(
            area.x + LABEL_W,
            area.y,
            "(no bus_occupancy counter)",
            theme.fg(theme.c.muted),
        );
        return;
    };
    let w = area.width;
    let vals = bus.columns(window.0, window.1, w as usize);
    let rows = area.height.max(1);
    for (i, &v) in vals.iter().enumerate() {
        let hot = v > 0.8;
        let style = if hot {
            theme.strong(theme.c.bus_hot)
        } else {
            theme.fg(theme.c.bus)
        };
        let total = v.clamp(0.0, 1.0) * rows as f64;
        for r in 0..rows {
            // r = 0 is the bottom row.
            let fill = (total - r as f64).clamp(0.0, 1.0);
            let sym = if fill <= 0.0 && r == 0 && v > 0.0 {
                g.levels[1]
            } else {
                g.level(fill)
            };
            if let Some(cell) = buf.cell_mut((area.x + i as u16, area.y + rows - 1 - r)) {
                cell.set_symbol(sym).set_style(style);
            }
        }
    }
}

/// A pool's fill (resident / capacity) on a one-row lane: the level glyph
/// per column, hot colour above 80 % of the pool; an empty column stays
/// blank so idle stretches read as idle.
pub fn pool_lane(
    buf: &mut Buffer,
    area: Rect,
    pool: &crate::data::PoolLane,
    window: (u64, u64),
    theme: &Theme,
    g: &Glyphs,
) {
    let vals = pool.fill.columns(window.0, window.1, area.width as usize);
    for (i, &v) in vals.iter().enumerate() {
        if v <= 0.0 {
            continue;
        }
        let style = if v > 0.8 {
            theme.strong(theme.c.bus_hot)
        } else {
            theme.fg(theme.c.bus)
        };
        let sym = g.level(v);
        if let Some(cell) = buf.cell_mut((area.x + i as u16, area.y)) {
            cell.set_symbol(sym).set_style(style);
        }
    }
}

/// A cursor mark at time `t` on the one-row lane `area`.
pub fn cursor_mark(
    buf: &mut Buffer,
    area: Rect,
    window: (u64, u64),
    t: u64,
    theme: &Theme,
    g: &Glyphs,
) {
    if let Some(c) = col_of(t, window, area.width) {
        if let Some(cell) = buf.cell_mut((area.x + c, area.y)) {
            cell.set_symbol(g.cursor)
                .set_style(theme.strong(theme.c.highlight));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every time drawn in a column is at or after that column's start,
    /// and the start is in the column or the one before it.
    #[test]
    fn a_column_starts_at_or_before_every_time_drawn_in_it() {
        for (window, width) in [
            ((0, 100), 7),
            ((5, 6), 80),
            ((1_000, 1_000_003), 80),
            ((0, 1 << 40), 119),
        ] {
            let step = ((window.1 - window.0) / 5_000).max(1);
            for t in (window.0..window.1).step_by(step as usize) {
                let c = col_of(t, window, width).unwrap();
                let s = col_start(c, window, width);
                assert!(
                    s <= t,
                    "{window:?} {width}: column {c} starts at {s}, after {t}"
                );
                let sc = col_of(s, window, width).unwrap_or(0);
                assert!(
                    sc + 1 >= c,
                    "{window:?} {width}: start {s} of column {c} is in {sc}"
                );
            }
            assert_eq!(col_start(width, window, width), window.1);
        }
    }
}

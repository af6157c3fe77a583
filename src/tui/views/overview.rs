//! Overview: the run's figures, peak live bytes over steps against the
//! capacity line, and the split of spills into capacity vs lifetime kind.

use crate::trace::ledger::Part;
use crate::trace::BoundMethod;
use crate::tui::app::App;
use crate::tui::glyphs::Glyphs;
use crate::tui::theme::Theme;
use crate::tui::ui::block;
use crate::units::{count, fmt_bytes, fmt_ms};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

pub fn draw(f: &mut Frame, app: &App, theme: &Theme, g: &Glyphs, area: Rect) {
    let Some(d) = app.primary() else { return };
    let s = &d.trace.summary;
    let fig_h = 10.min(area.height.saturating_sub(4)).max(3);
    let [top, chart] =
        Layout::vertical([Constraint::Length(fig_h), Constraint::Min(3)]).areas(area);
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(top);
    let k = theme.fg(theme.c.muted);
    let v = theme.strong(theme.c.text);
    let row = |name: &str, val: String| {
        Line::from(vec![
            Span::styled(format!("{name:<12}"), k),
            Span::styled(val, v),
        ])
    };
    let cap = d.capacity;
    let t = &d.ledger.total;
    let figs = vec![
        row(
            "latency",
            format!("{}  ({:.1} fps)", fmt_ms(s.latency_ns), s.throughput_fps),
        ),
        row(
            "evicted out",
            format!(
                "{} ({})",
                fmt_bytes(t.get(Part::EvictedOut).bytes),
                count(t.get(Part::EvictedOut).count, "eviction")
            ),
        ),
        row(
            "reloaded",
            format!(
                "{} ({})",
                fmt_bytes(t.get(Part::Reloaded).bytes),
                count(t.get(Part::Reloaded).count, "reload")
            ),
        ),
        row(
            "streamed",
            format!(
                "in {}, out {}",
                fmt_bytes(t.get(Part::StreamedIn).bytes),
                fmt_bytes(t.get(Part::StreamedOut).bytes)
            ),
        ),
        row(
            "traffic",
            format!("{} (sum of the four)", fmt_bytes(t.traffic_bytes())),
        ),
        row(
            "stall",
            format!(
                "{} ({:.1}%)",
                fmt_ms(s.stall_ns),
                s.stall_ns as f64 * 100.0 / s.latency_ns.max(1) as f64
            ),
        ),
        row(
            "peak live",
            format!("{} / {} cap", fmt_bytes(s.peak_live_bytes), fmt_bytes(cap)),
        ),
        row(
            match s.lower_bound_method {
                BoundMethod::Ilp => "minimum",
                _ => "lower bound",
            },
            match s.lower_bound_method {
                BoundMethod::None => "not computed".into(),
                m => format!(
                    "{} {}; gap {}",
                    fmt_bytes(s.lower_bound_traffic_bytes),
                    m.as_str(),
                    fmt_bytes(s.traffic_bytes.saturating_sub(s.lower_bound_traffic_bytes))
                ),
            },
        ),
    ];
    f.render_widget(
        Paragraph::new(figs).block(block(format!(" {} ", d.label), theme, g)),
        left,
    );

    let c = &d.class;
    let total = (c.capacity_count + c.lifetime_count).max(1);
    let inner_w = right.width.saturating_sub(2) as usize;
    let bar_w = inner_w.saturating_sub(2);
    let cap_w = (c.capacity_count * bar_w).div_ceil(total).min(bar_w);
    let split = if c.capacity_count + c.lifetime_count == 0 {
        vec![Line::styled("no evictions to classify", k)]
    } else {
        vec![
            Line::from(vec![
                Span::styled(g.full.repeat(cap_w), theme.fg(theme.c.capacity)),
                Span::styled(
                    g.shade.repeat(bar_w - cap_w),
                    theme.fg(theme.c.fragmentation),
                ),
            ]),
            Line::from(vec![
                Span::styled("capacity ", theme.fg(theme.c.capacity)),
                Span::raw(format!(
                    "{} ({})",
                    c.capacity_count,
                    fmt_bytes(c.capacity_bytes)
                )),
            ]),
            Line::from(vec![
                Span::styled("lifetime ", theme.fg(theme.c.fragmentation)),
                Span::raw(format!(
                    "{} ({})",
                    c.lifetime_count,
                    fmt_bytes(c.lifetime_bytes)
                )),
            ]),
        ]
    };
    let mut lines = split;
    let osc = d.trips.iter().filter(|t| t.oscillating).count();
    if c.capacity_count + c.lifetime_count > 0 {
        lines.push(Line::styled(
            format!(
                "= evicted out {}",
                fmt_bytes(c.capacity_bytes + c.lifetime_bytes)
            ),
            k,
        ));
    }
    lines.push(Line::from(vec![
        Span::styled("weights   ", k),
        Span::raw(format!(
            "{} (not spill)",
            fmt_bytes(t.get(Part::Weights).bytes)
        )),
    ]));
    if !d.complete {
        lines.push(Line::styled("analysing round trips...", k));
    } else if osc > 0 {
        lines.push(Line::styled(
            format!("{}: see view 4", count(osc as u64, "oscillating tensor")),
            theme.strong(theme.c.oscillation),
        ));
    }
    f.render_widget(
        Paragraph::new(lines).block(block(" spill kinds ", theme, g)),
        right,
    );

    draw_live_chart(f, app, theme, g, chart);
}

/// Max live bytes per column of steps, with the capacity as a line.
fn draw_live_chart(f: &mut Frame, app: &App, theme: &Theme, g: &Glyphs, area: Rect) {
    let Some(d) = app.primary() else { return };
    let title = if d.live_is_resident {
        " resident bytes per op vs capacity "
    } else {
        " live bytes per step vs capacity "
    };
    let outer = block(title, theme, g);
    let inner = outer.inner(area);
    f.render_widget(outer, area);
    let live = &d.live_by_step;
    if live.is_empty() || inner.width < 12 || inner.height < 2 {
        return;
    }
    let peak = live.iter().copied().max().unwrap_or(0);
    let cap = d.capacity;
    let top = peak.max(cap).max(1) as f64 * 1.05;
    let n = live.len();
    // Labels whole: as wide as the longest of them.
    let labels = [
        fmt_bytes(top as u64),
        format!("0..{}", n.saturating_sub(1)),
        format!("cap {}", fmt_bytes(cap)),
    ];
    let label_w = (labels.iter().map(|l| l.chars().count()).max().unwrap_or(8) + 1) as u16;
    if inner.width <= label_w + 4 {
        return;
    }
    let w = inner.width - label_w;
    let h = inner.height;
    let buf = f.buffer_mut();
    let muted = theme.fg(theme.c.muted);
    buf.set_stringn(
        inner.x,
        inner.y,
        fmt_bytes(top as u64),
        label_w as usize - 1,
        muted,
    );
    buf.set_stringn(
        inner.x,
        inner.y + h - 1,
        format!("0..{}", n - 1),
        label_w as usize - 1,
        muted,
    );
    let cap_row = ((1.0 - cap as f64 / top) * h as f64).floor() as u16;
    for c in 0..w {
        let a = (c as usize * n) / w as usize;
        let b = (((c as usize + 1) * n) / w as usize).max(a + 1).min(n);
        let m = live[a..b].iter().copied().max().unwrap_or(0);
        let over = m > cap;
        let height = m as f64 / top * h as f64;
        for r in 0..h {
            let fill = (height - r as f64).clamp(0.0, 1.0);
            let y = inner.y + h - 1 - r;
            let x = inner.x + label_w + c;
            let sym = g.level(fill);
            let style = if over && (r as f64) >= (cap as f64 / top * h as f64).floor() {
                theme.fg(theme.c.stall)
            } else {
                theme.fg(theme.c.live)
            };
            if let Some(cell) = buf.cell_mut((x, y)) {
                cell.set_symbol(sym).set_style(style);
            }
        }
        if cap_row < h {
            let y = inner.y + cap_row;
            if let Some(cell) = buf.cell_mut((inner.x + label_w + c, y)) {
                if cell.symbol() == " " {
                    cell.set_symbol(g.hline)
                        .set_style(theme.fg(theme.c.capacity));
                }
            }
        }
    }
    if cap_row < h {
        buf.set_stringn(
            inner.x,
            inner.y + cap_row,
            format!("cap {}", fmt_bytes(cap)),
            label_w as usize - 1,
            theme.fg(theme.c.capacity),
        );
    }
}

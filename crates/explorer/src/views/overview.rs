//! Overview: the run's figures, peak live bytes over steps against the
//! capacity line, and the split of spills into capacity vs lifetime kind.

use crate::app::App;
use crate::glyphs::Glyphs;
use crate::theme::Theme;
use crate::ui::block;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use spillscope::trace::ledger::Part;
use spillscope::units::{count, fmt_bytes};

pub fn draw(f: &mut Frame, app: &App, theme: &Theme, g: &Glyphs, area: Rect) {
    let Some(d) = app.primary() else { return };
    // A profile without spill events: what it measured. (A probe stream
    // that reports spills gets the spill overview, within what it records.)
    if let Some(m) = d.measured.as_ref().filter(|_| !d.caps.spill_events) {
        draw_measured(f, app, theme, g, area, m);
        return;
    }
    let s = &d.trace.summary;
    let fig_h = 11.min(area.height.saturating_sub(4)).max(3);
    let [top, chart] =
        Layout::vertical([Constraint::Length(fig_h), Constraint::Min(3)]).areas(area);
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(top);
    let k = theme.fg(theme.c.muted);
    let v = theme.strong(theme.c.text);
    // Each figure whole: where the box is too narrow for its details (the
    // parenthesis), they go before the figure is cut (they stay in wider
    // boxes and in `sim`).
    let room = (left.width as usize).saturating_sub(2 + 12);
    let row = |name: &str, val: String| {
        Line::from(vec![
            Span::styled(format!("{name:<12}"), k),
            Span::styled(fit_figure(&val, room), v),
        ])
    };
    let t = &d.ledger.total;
    let bound = app.bound_figure(d);
    let figs = vec![
        row(
            "latency",
            match app.clock() {
                // Cycles of an unstated clock have no frame rate.
                spillscope::units::Clock::Cycles => app.clock().fmt(s.latency_ns),
                spillscope::units::Clock::Nanoseconds => {
                    format!(
                        "{}  ({:.1} fps)",
                        app.clock().fmt(s.latency_ns),
                        s.throughput_fps
                    )
                }
            },
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
        row("streamed", {
            let (i, o) = (
                t.get(Part::StreamedIn).bytes,
                t.get(Part::StreamedOut).bytes,
            );
            let mut alts = vec![format!("in {}, out {}", fmt_bytes(i), fmt_bytes(o))];
            match (i, o) {
                (0, o) => alts.push(format!("out {}", fmt_bytes(o))),
                (i, 0) => alts.push(format!("in {}", fmt_bytes(i))),
                _ => alts.push(format!("{} in+out", fmt_bytes(i + o))),
            }
            crate::ui::first_fit(&alts, room)
        }),
        row(
            "traffic",
            format!("{} (sum of the four)", fmt_bytes(t.traffic_bytes())),
        ),
        row("stall", {
            let c = app.clock();
            // A share of the time the cores ran: every core's stall adds
            // up, against the slowest core's latency times the cores.
            let cores = u64::from(s.cores.max(1));
            let stall = format!(
                "{} ({:.1}%)",
                c.fmt(s.stall_ns),
                s.stall_ns as f64 * 100.0 / (s.latency_ns.max(1) * cores) as f64
            );
            if cores > 1 {
                // Several cores: how much of it the shared bus caused.
                let bus = c.fmt(s.contention_ns);
                let alts = [
                    format!(
                        "{stall} of {cores} cores' time, {bus} waiting for other cores' transfers"
                    ),
                    format!("{stall} of {cores} cores' time, {bus} bus contention"),
                    format!("{stall}, {bus} bus contention"),
                    format!("{}, {bus} contention", c.fmt(s.stall_ns)),
                    // Latencies of 10 ms and more at 80 columns.
                    format!("{}, {bus} on bus", c.fmt(s.stall_ns)),
                ];
                crate::ui::first_fit(&alts, room)
            } else {
                stall
            }
        }),
        row(
            "peak live",
            match (d.caps.frees, d.caps.capacity) {
                // An NPU case's peak is the benchmark's: L1 and UB together.
                (true, true) => {
                    let p = spillscope::analysis::figures::PeakLive::of_trace(&d.trace);
                    crate::ui::first_fit(&[p.short(), p.compact()], room)
                }
                (true, false) => format!("{} (no declared capacity)", fmt_bytes(s.peak_live_bytes)),
                (false, _) => "not known (no frees)".into(),
            },
        ),
        row(bound.label(), bound.text()),
        row("gap", bound.gap_text(s.traffic_bytes)),
    ];
    f.render_widget(
        Paragraph::new(figs).block(block(overview_title(app, &d.label, left.width), theme, g)),
        left,
    );

    let c = &d.class;
    let total = (c.capacity_count + c.lifetime_count).max(1);
    let inner_w = right.width.saturating_sub(2) as usize;
    let bar_w = inner_w.saturating_sub(2);
    let cap_w = (c.capacity_count * bar_w).div_ceil(total).min(bar_w);
    let split = if !d.caps.capacity_figures() {
        // Capacity vs lifetime needs a declared capacity and frees.
        let why = d
            .caps
            .missing(&d.trace)
            .into_iter()
            .find(|m| m.what == "declared capacity" || m.what == "frees")
            .map(|m| format!("not split: no {} ({})", m.what, m.how))
            .unwrap_or_default();
        crate::ui::wrap(&why, inner_w)
            .into_iter()
            .map(|l| Line::styled(l, k))
            .collect()
    } else if c.capacity_count + c.lifetime_count == 0 {
        // A model that fits leads on: where it would start to spill.
        let (peak, cap) = (d.trace.summary.peak_live_bytes, d.capacity);
        let mut text = String::from("no evictions to classify");
        if app.fits() {
            let at =
                |pct: u64| spillscope::units::fmt_size_exact(crate::app::share_of_peak(peak, pct));
            let [p1, p2] = crate::app::TRY_PERCENT;
            text = format!(
                "no evictions: the model fits (peak live {} of {}). c re-runs it at {} ({p1} % of peak), again at {} ({p2} %); or --capacity, and whatif sweeps them",
                spillscope::units::fmt_bytes_precise(peak),
                spillscope::units::fmt_bytes_precise(cap),
                at(p1),
                at(p2)
            );
        } else if t.get(Part::Reloaded).count > 0 {
            // Reloads without evictions: what they read back was streamed
            // out by its producer (it had no room to stay), not evicted.
            text = format!(
                "no evictions to classify: the {} read back tensors their producers streamed out (no room to stay on chip); their writes are in streamed",
                count(t.get(Part::Reloaded).count, "reload")
            );
        }
        crate::ui::wrap(&text, inner_w)
            .into_iter()
            .map(|l| Line::styled(l, k))
            .collect()
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
    let mut lines: Vec<Line> = window_lines(d, app, inner_w)
        .into_iter()
        .map(|l| Line::styled(l, k))
        .collect();
    lines.extend(split);
    // The class (was the step's demand over the pool?) and the simulator's
    // reason for the one eviction (no hole big enough) are two questions;
    // a capacity spill found by fragmentation says both.
    let sp = &c.spills;
    let no_hole = (0..sp.len())
        .filter(|&k| sp.class(k) == spillscope::analysis::classify::SpillClass::Capacity)
        .filter(|&k| sp.cause(k) == "fragmentation")
        .count();
    if no_hole > 0 {
        let line = format!(
            "{no_hole} of the capacity spills were chosen when no hole fitted (trace reason \"fragmentation\")"
        );
        lines.extend(
            crate::ui::wrap(&line, inner_w)
                .into_iter()
                .map(|l| Line::styled(l, k)),
        );
    }
    let osc = d.trips.oscillating();
    if d.caps.capacity_figures() && c.capacity_count + c.lifetime_count > 0 {
        // The window's evictions are classified; those that fell out of it
        // are only counted, and complete the total on the left.
        let earlier = d
            .trace
            .window()
            .map(|w| w.total_before().get(Part::EvictedOut))
            .filter(|e| e.count > 0);
        if let Some(e) = earlier {
            lines.push(Line::styled(
                format!("+ earlier {} ({})", e.count, fmt_bytes(e.bytes)),
                k,
            ));
        }
        let earlier_bytes = earlier.map_or(0, |e| e.bytes);
        lines.push(Line::styled(
            format!(
                "= evicted out {}",
                fmt_bytes(c.capacity_bytes + c.lifetime_bytes + earlier_bytes)
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

/// What a window of a longer stream holds and what fell out of it (whose
/// traffic the totals on the left include), wrapped to `width`; nothing
/// for a whole trace.
fn window_lines(d: &crate::data::Dataset, app: &App, width: usize) -> Vec<String> {
    let Some(w) = d.trace.window().filter(|w| w.is_trimmed()) else {
        return Vec::new();
    };
    let text = format!(
        "window: the last {} from {}; {} and {} before it ({} of traffic) are in the totals",
        count(d.trace.events.len() as u64, "event"),
        app.clock().fmt(w.from_ns),
        count(w.events_before, "event"),
        count(w.ops_before, "op"),
        fmt_bytes(w.total_before().traffic_bytes())
    );
    crate::ui::wrap(&text, width)
}

/// A runtime trace: only the figures it can support, what it lacks and how
/// to get it; the live-bytes chart only where frees are recorded.
fn draw_measured(
    f: &mut Frame,
    app: &App,
    theme: &Theme,
    g: &Glyphs,
    area: Rect,
    m: &spillscope::analysis::measured::MeasuredSummary,
) {
    let Some(d) = app.primary() else { return };
    let k = theme.fg(theme.c.muted);
    let v = theme.strong(theme.c.text);
    let rows: Vec<(String, String)> = m
        .rows()
        .into_iter()
        .filter(|(k, _)| !k.starts_with("no ") && k != "model")
        .collect();
    let label_w = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(8) + 1;
    let figs: Vec<Line> = rows
        .into_iter()
        .map(|(name, val)| {
            Line::from(vec![
                Span::styled(format!("{name:<label_w$}"), k),
                Span::styled(val, v),
            ])
        })
        .collect();
    let n_figs = figs.len();
    // What the trace records, and how to get what it does not.
    let c = &m.capabilities;
    let have: Vec<&str> = [
        (c.op_times, "op times"),
        (m.allocations > 0, "allocations"),
        (c.frees, "frees"),
        (c.offsets, "offsets"),
        (c.spill_events, "spill events"),
        (d.levels > 1, "nested calls"),
    ]
    .into_iter()
    .filter(|x| x.0)
    .map(|x| x.1)
    .collect();
    let right_w = area.width - area.width * 60 / 100;
    let w = right_w.saturating_sub(2) as usize;
    let mut lines: Vec<Line> = crate::ui::wrap(&format!("has {}", have.join(", ")), w)
        .into_iter()
        .map(Line::raw)
        .collect();
    if d.levels > 1 {
        lines.push(Line::styled(
            format!("calls: level {} of {} (< > change)", d.level, d.levels),
            k,
        ));
    }
    if let Some(l) = &m.linked {
        let text = format!(
            "model {}: {} of {} nodes linked",
            l.model,
            l.by_name + l.renamed,
            l.profile_nodes - l.inserted
        );
        lines.extend(
            crate::ui::wrap(&text, w)
                .into_iter()
                .map(|x| Line::styled(x, k)),
        );
    }
    for x in &m.missing {
        for (i, part) in crate::ui::wrap(&format!("no {}: {}", x.what, x.how), w)
            .into_iter()
            .enumerate()
        {
            lines.push(if i == 0 {
                Line::styled(part, theme.fg(theme.c.highlight))
            } else {
                Line::styled(part, k)
            });
        }
    }
    // Tall enough for both boxes, leaving the chart at least 5 rows.
    let fig_h = (n_figs.max(lines.len()) as u16 + 2).clamp(5, area.height.saturating_sub(5).max(5));
    let [top, rest] = Layout::vertical([Constraint::Length(fig_h), Constraint::Min(3)]).areas(area);
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(top);
    f.render_widget(
        Paragraph::new(figs).block(block(format!(" {} (measured) ", d.label), theme, g)),
        left,
    );
    f.render_widget(
        Paragraph::new(lines).block(block(" what it records ", theme, g)),
        right,
    );
    if c.frees {
        draw_live_chart(f, app, theme, g, rest);
    } else {
        let text = m
            .missing
            .iter()
            .find(|x| x.what == "frees")
            .map(|x| format!("live bytes over time: not known ({})", x.how))
            .unwrap_or_default();
        f.render_widget(
            Paragraph::new(text)
                .style(k)
                .wrap(ratatui::widgets::Wrap { trim: true })
                .block(block(" live bytes ", theme, g)),
            rest,
        );
    }
}

/// Max live bytes per column of steps, with the capacity as a line (where
/// the trace declares one).
fn draw_live_chart(f: &mut Frame, app: &App, theme: &Theme, g: &Glyphs, area: Rect) {
    let Some(d) = app.primary() else { return };
    let with_cap = d.caps.capacity;
    let title = match (d.live_is_resident, with_cap) {
        (true, true) => " resident bytes per op vs capacity ",
        (false, true) => " live bytes per step vs capacity ",
        (true, false) => " resident bytes per op ",
        (false, false) => " live bytes per op ",
    };
    // Residency from the events is the first pool's: with several pools,
    // say which (an NPU trace's peak above counts L1 and UB together).
    let title = match d.trace.pools.first() {
        // Several cores: the chart is core 0's (each core has its steps).
        _ if d.trace.summary.cores > 1 => {
            format!(" core0{title}").replace(" vs capacity ", " vs its capacity ")
        }
        Some(p) if d.live_is_resident && d.trace.pools.len() > 1 => {
            format!(" {}{title}", p.name).replace(" vs capacity ", " vs its capacity ")
        }
        _ => title.to_string(),
    };
    let outer = block(title, theme, g);
    let inner = outer.inner(area);
    f.render_widget(outer, area);
    let live = &d.live_by_step;
    if live.is_empty() || inner.width < 12 || inner.height < 2 {
        return;
    }
    let peak = d.live_max.peak().unwrap_or(0);
    let cap = if with_cap { d.capacity } else { 0 };
    // The top row is the larger of the peak and the capacity, and its label
    // is that value (a headroom above it printed as a label read as a
    // figure: "8.4 MiB" beside "peak live 8.0 MiB").
    let top = peak.max(cap).max(1) as f64;
    let n = live.len();
    let h = inner.height;
    // No capacity: no line (u16::MAX is below every row).
    let exact_row = if with_cap {
        ((1.0 - cap as f64 / top) * h as f64)
            .floor()
            .min(h as f64 - 1.0) as u16
    } else {
        u16::MAX
    };
    // One label per row (two written over each other read "cap 1.4
    // MiBB"): a capacity equal to the peak shares the top row's label; one
    // just under the peak takes the row below it, where it rounds to.
    let shared_row = with_cap && peak == cap && exact_row == 0;
    let cap_row = if with_cap && peak > cap && exact_row == 0 && h > 2 {
        1
    } else {
        exact_row
    };
    let top_label = match (peak >= cap, shared_row) {
        (true, true) => format!("peak = cap {}", spillscope::units::fmt_bytes_precise(peak)),
        (true, false) => format!("peak {}", spillscope::units::fmt_bytes_precise(peak)),
        (false, _) => String::new(), // the capacity line is the top row, labelled below
    };
    // The top row holds the peak's label whenever the peak is the top.
    let cap_label = if with_cap && !(cap_row == 0 && peak >= cap) {
        format!("cap {}", spillscope::units::fmt_bytes_precise(cap))
    } else {
        String::new()
    };
    // Labels whole: as wide as the longest of them.
    let labels = [
        top_label.clone(),
        format!("0..{}", n.saturating_sub(1)),
        cap_label.clone(),
    ];
    let label_w = (labels.iter().map(|l| l.chars().count()).max().unwrap_or(8) + 1) as u16;
    if inner.width <= label_w + 4 {
        return;
    }
    let w = inner.width - label_w;
    let buf = f.buffer_mut();
    let muted = theme.fg(theme.c.muted);
    buf.set_stringn(inner.x, inner.y, &top_label, label_w as usize - 1, muted);
    buf.set_stringn(
        inner.x,
        inner.y + h - 1,
        format!("0..{}", n - 1),
        label_w as usize - 1,
        muted,
    );
    for c in 0..w {
        let a = (c as usize * n) / w as usize;
        let b = (((c as usize + 1) * n) / w as usize).max(a + 1).min(n);
        let m = d.live_max.max(live, a, b).unwrap_or(0);
        let over = with_cap && m > cap;
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
    if cap_row < h && !cap_label.is_empty() {
        buf.set_stringn(
            inner.x,
            inner.y + cap_row,
            &cap_label,
            label_w as usize - 1,
            theme.fg(theme.c.capacity),
        );
    }
}

/// The figures' title: the run, and the schedule config it watches (whose
/// saves re-run it), so the live state is on screen.
/// The label is shortened (from the middle) before the config's name is.
/// `val` as it fits in `room` columns: whole, or without its trailing
/// parenthesised details (one group at a time).
fn fit_figure(val: &str, room: usize) -> String {
    let mut v = val.trim_end().to_string();
    while v.chars().count() > room {
        let Some(open) = v.rfind(" (").filter(|_| v.ends_with(')')) else {
            break;
        };
        v.truncate(open);
        v = v.trim_end().to_string();
    }
    v
}

/// `t` as a UTC time of day, `08:49:10 UTC` (no time zone database on
/// an edge board is assumed).
fn utc_clock(t: std::time::SystemTime) -> String {
    let s = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
        % 86_400;
    format!("{:02}:{:02}:{:02} UTC", s / 3600, s / 60 % 60, s % 60)
}

fn overview_title(app: &App, label: &str, width: u16) -> String {
    let Some(c) = app.config.as_ref().and_then(|c| c.file_name()) else {
        return format!(" {label} ");
    };
    let name = spillscope::safe_text::escape(&c.to_string_lossy()).into_owned();
    let n = app.config_loads;
    // The longest form that leaves the label 8 columns: the config, which
    // load of it this is and when it came; then shorter.
    let mut forms = Vec::new();
    if let Some(at) = app.config_loaded_at.map(utc_clock) {
        let hms = at.trim_end_matches(" UTC").to_string();
        forms.push(format!(" · config {name}, load {n} at {at} "));
        forms.push(format!(" · config {name}, load {n} at {hms} "));
        forms.push(format!(" · {name} #{n} {hms} "));
    }
    forms.push(format!(" · config {name} "));
    let room = |f: &String| (width as usize).saturating_sub(f.chars().count() + 3);
    let cfg = forms
        .iter()
        .find(|f| room(f) >= 8.min(label.chars().count()))
        .unwrap_or(&forms[forms.len() - 1]);
    let label = spillscope::names::elide(label, room(cfg).max(8), app.ascii);
    format!(" {label}{cfg}")
}

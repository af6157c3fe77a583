//! Compare: two traces (or, live, the previous run and the newest) on one
//! time axis, or each on its own when their lengths differ by more than 2x,
//! and the differences per op and per tensor, each table sorted by the
//! column its title names.

use super::lanes::{self, LABEL_W};
use crate::app::App;
use crate::data::Dataset;
use crate::glyphs::Glyphs;
use crate::theme::Theme;
use crate::ui::{block, fit_columns, scroll_offset};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState};
use ratatui::Frame;
use spillscope::analysis::timeline::Lane;
use spillscope::units::{count, fmt_bytes, fmt_bytes_delta};

/// The Compare view's own state: the selected op row and tensor row, which
/// table the list keys move (`t` switches), and the axis choice (`None`:
/// own axes when the runs' lengths differ by more than 2x).
#[derive(Debug, Clone, Default)]
pub struct CompareView {
    pub sel: usize,
    pub tensor_sel: usize,
    pub on_tensors: bool,
    pub axis: Option<bool>,
}

/// The indices into `diff.tensors` of the tensors whose round trips or
/// moved bytes differ between the two runs (the tensor table's rows), in
/// the diff's order. Derived once, when the diff is built.
pub fn changed_tensors(diff: &spillscope::analysis::diff::TraceDiff) -> Vec<usize> {
    if diff.by_time {
        // Against a profile without spill events, round trips cannot compare.
        return Vec::new();
    }
    diff.tensors
        .iter()
        .enumerate()
        .filter(|(_, t)| t.a_trips != t.b_trips || t.a_bytes_moved != t.b_bytes_moved)
        .map(|(i, _)| i)
        .collect()
}

/// The pair compared, with their labels: two traces, or live the previous
/// run and the newest.
fn pair(app: &App) -> Option<(&Dataset, &Dataset, &'static str, &'static str)> {
    match (app.data.as_slice(), &app.previous) {
        ([a, b, ..], _) => Some((a, b, "A", "B")),
        ([now], Some(before)) => Some((before, now, "A: previous run", "B: now")),
        _ => None,
    }
}

pub fn draw(f: &mut Frame, app: &App, theme: &Theme, g: &Glyphs, area: Rect) {
    let Some((a, b, ta, tb)) = pair(app) else {
        let msg = vec![
            Line::raw("Compare needs two traces:"),
            Line::raw("  spillscope view A.json B.json"),
            Line::styled(
                "(LRU vs planned, simulated vs measured, before vs after; live, an edit of the config compares the run before it with the new one)",
                theme.fg(theme.c.muted),
            ),
        ];
        f.render_widget(
            Paragraph::new(msg)
                .wrap(ratatui::widgets::Wrap { trim: true })
                .block(block(" Compare ", theme, g)),
            area,
        );
        return;
    };
    let strip_h = 5u16.min(area.height / 3).max(3);
    let differs = differences(a, b, ta, tb);
    // Whole, on as many lines as it takes (three at most).
    let head_h = (differs.chars().count() as u16)
        .div_ceil(area.width.max(1))
        .clamp(1, 3);
    let [head, sa, sb, table] = Layout::vertical([
        Constraint::Length(head_h),
        Constraint::Length(strip_h),
        Constraint::Length(strip_h),
        Constraint::Min(3),
    ])
    .areas(area);
    f.render_widget(
        Paragraph::new(Line::styled(differs, theme.fg(theme.c.muted)))
            .wrap(ratatui::widgets::Wrap { trim: true }),
        head,
    );
    let own = app.compare_own_axes();
    let end = a.end_ns().max(b.end_ns()).max(1);
    for (d, r, tag) in [(a, sa, ta), (b, sb, tb)] {
        // Own axis: the same fraction of this run as the window is of the
        // longer one.
        let window = if own {
            let scale = d.end_ns() as f64 / end as f64;
            (
                (app.window.0 as f64 * scale) as u64,
                ((app.window.1 as f64 * scale) as u64).max(1),
            )
        } else {
            app.window
        };
        draw_strip(f, app, theme, g, d, r, tag, window, own);
    }
    // A compiler's plan on one side: its like-for-like figures over the
    // tables (`diff` prints the same, with the lists).
    let plan = match (&app.vela, &app.plan) {
        (Some(v), _) => Some((" Vela vs spillscope, same feature maps ", vela_lines(v))),
        (None, Some(p)) => Some((" ExecuTorch's plan vs spillscope ", p.lines())),
        _ => None,
    };
    let table = match plan {
        Some((title, lines)) if table.height >= 8 => {
            let [plan_area, rest] =
                Layout::vertical([Constraint::Length(4), Constraint::Min(3)]).areas(table);
            let lines: Vec<Line> = lines.into_iter().map(Line::raw).collect();
            f.render_widget(
                Paragraph::new(lines).block(block(title, theme, g)),
                plan_area,
            );
            rest
        }
        _ => table,
    };
    let Some(diff) = &app.diff else { return };
    let changed: Vec<&spillscope::analysis::diff::TensorDelta> = app
        .changed
        .iter()
        .filter_map(|&i| diff.tensors.get(i))
        .collect();
    // Too little room for both tables: the one the list keys move is shown.
    let tensor_h = if changed.is_empty() {
        0
    } else if table.height < 10 {
        if app.compare.on_tensors {
            table.height
        } else {
            0
        }
    } else {
        (changed.len() as u16 + 3).min(table.height / 2)
    };
    if tensor_h == table.height && tensor_h > 0 {
        draw_tensors(f, app, theme, g, &changed, table);
        return;
    }
    let [table, tensor_area] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(tensor_h)]).areas(table);
    if tensor_h > 0 {
        draw_tensors(f, app, theme, g, &changed, tensor_area);
    }
    draw_ops(f, app, theme, g, diff, table);
}

/// Vela's plan against the spillscope run: the spilled-set agreement and
/// the DRAM feature-map bytes of the feature maps both have, with the
/// bound.
fn vela_lines(v: &spillscope::analysis::vela::VelaComparison) -> [String; 2] {
    [
        format!(
            "spilled set: {:.1}% of {} agree ({} both, {} only Vela, {} only spillscope)",
            v.agreement_pct,
            v.matched,
            v.both_spilled.len(),
            v.only_vela_spilled.len(),
            v.only_sim_spilled.len()
        ),
        format!(
            "DRAM bytes: Vela {}, spillscope {}; bound {} ({})",
            fmt_bytes(v.vela_matched_bytes),
            fmt_bytes(v.sim_matched_bytes),
            fmt_bytes(v.bound_bytes),
            v.bound_method
        ),
    ]
}

/// What sets a run apart: its source, policy, capacity, hardware profile
/// and schedule config (the producer's own record where it has one).
fn facts(d: &Dataset) -> [(&'static str, String); 5] {
    use spillscope::trace::Producer;
    let (hw, cfg) = match &d.trace.meta.producer {
        Producer::Simulator { hardware, config } => {
            // The policy is a fact of its own, not a config difference.
            let mut c = config.clone();
            if let Some(o) = c.as_object_mut() {
                o.remove("policy");
            }
            (
                hardware["name"].as_str().unwrap_or("?").to_string(),
                c.to_string(),
            )
        }
        _ => ("-".to_string(), "-".to_string()),
    };
    let cap = match d.trace.summary.capacity_bytes {
        0 => "-".to_string(),
        c => spillscope::units::fmt_bytes_precise(c),
    };
    [
        ("source", d.trace.source.as_str().to_string()),
        ("policy", d.trace.meta.policy.clone()),
        ("capacity", cap),
        ("hardware", hw),
        ("config", cfg),
    ]
}

/// One line over the strips: what differs between the two sides, with
/// each side's value (the config only as "differs": it is a table), or
/// that they share all of it.
fn differences(a: &Dataset, b: &Dataset, ta: &str, tb: &str) -> String {
    let (fa, fb) = (facts(a), facts(b));
    let diff: Vec<String> = fa
        .iter()
        .zip(&fb)
        .filter(|(x, y)| x.1 != y.1)
        .map(|(x, y)| match x.0 {
            "config" => "schedule config".to_string(),
            k => format!("{k} {} | {}", x.1, y.1),
        })
        .collect();
    if diff.is_empty() {
        format!("{ta} and {tb}: same source, policy, capacity, hardware and config")
    } else {
        format!("{ta} | {tb} differ in: {}", diff.join("; "))
    }
}

/// One run's strip: ops, the spill lanes (busiest wins), spill markers.
#[allow(clippy::too_many_arguments)]
fn draw_strip(
    f: &mut Frame,
    app: &App,
    theme: &Theme,
    g: &Glyphs,
    d: &Dataset,
    r: Rect,
    tag: &str,
    window: (u64, u64),
    own: bool,
) {
    let s = &d.trace.summary;
    // Whole at any width: the label shortens (in the middle) to the room
    // the figures leave, then the figures lose their words.
    let (lat, own) = (
        app.clock().fmt(s.latency_ns),
        if own { " (own axis)" } else { "" },
    );
    let policy = &d.trace.meta.policy;
    let tails = if d.caps.spill_events {
        let t = fmt_bytes(s.traffic_bytes);
        [
            format!("[{policy}] {lat} traffic {t}{own}"),
            format!("[{policy}] {lat} {t}{own}"),
            format!("[{policy}] {lat} {t}"),
        ]
    } else {
        let m = format!("[{policy}] {lat} measured");
        [format!("{m}{own}"), m.clone(), m]
    };
    let room = (r.width as usize).saturating_sub(4 + tag.chars().count() + 2);
    let fits = |t: &String| t.chars().count() + 1 + 8.min(d.label.chars().count()) <= room;
    let tail = tails.iter().find(|t| fits(t)).unwrap_or(&tails[2]);
    let label_w = room.saturating_sub(tail.chars().count() + 1);
    let title = format!(
        " {tag}: {} {tail} ",
        spillscope::names::elide(&d.label, label_w, app.ascii)
    );
    let outer = block(title, theme, g);
    let inner = outer.inner(r);
    f.render_widget(outer, r);
    if inner.width <= LABEL_W + 4 || inner.height == 0 {
        return;
    }
    let w = inner.width - LABEL_W;
    let x = inner.x + LABEL_W;
    let cols = d.index.columns(window.0, window.1, w as usize);
    let buf = f.buffer_mut();
    let muted = theme.fg(theme.c.muted);
    for (i, name) in ["ops", "dma", "spills"].iter().enumerate() {
        let y = inner.y + i as u16;
        if y >= inner.y + inner.height {
            break;
        }
        lanes::label(buf, inner.x, y, name, muted);
        match i {
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
    let _ = app;
}

/// Tensors whose round trips changed, by |moved B-A|.
fn draw_tensors(
    f: &mut Frame,
    app: &App,
    theme: &Theme,
    g: &Glyphs,
    changed: &[&spillscope::analysis::diff::TensorDelta],
    area: Rect,
) {
    // Priority order: what changed first.
    const COLS: [(&str, u16); 5] = [
        ("moved B-A", 11),
        ("moved A", 10),
        ("moved B", 10),
        ("trips A", 7),
        ("trips B", 7),
    ];
    let widths: Vec<u16> = COLS.iter().map(|c| c.1).collect();
    let (kept, name_w) = fit_columns(area.width as usize, 16, &widths, Some(0));
    // Shown as trips A, trips B, moved A, moved B, moved B-A.
    let order: Vec<usize> = [3, 4, 1, 2, 0]
        .into_iter()
        .filter(|i| kept.contains(i))
        .collect();
    let visible = area.height.saturating_sub(3) as usize;
    let sel = app.compare.tensor_sel.min(changed.len().saturating_sub(1));
    let offset = scroll_offset(sel, changed.len(), visible);
    let shown: Vec<_> = changed.iter().skip(offset).take(visible).collect();
    let names: Vec<&str> = shown.iter().map(|t| t.name.as_str()).collect();
    let names = spillscope::names::elide_all(&names, name_w, app.ascii);
    let rows: Vec<Row> = shown
        .iter()
        .zip(names)
        .map(|(t, name)| {
            let mut cells = vec![Cell::from(name)];
            cells.extend(order.iter().map(|&i| {
                Cell::from(match i {
                    0 => fmt_bytes_delta(t.moved_delta()),
                    1 => fmt_bytes(t.a_bytes_moved),
                    2 => fmt_bytes(t.b_bytes_moved),
                    3 => t.a_trips.to_string(),
                    _ => t.b_trips.to_string(),
                })
            }));
            Row::new(cells)
        })
        .collect();
    let mut head = vec!["tensor"];
    head.extend(order.iter().map(|&i| COLS[i].0));
    let header = Row::new(head).style(theme.strong(theme.c.muted));
    let mut widths = vec![Constraint::Min(10)];
    widths.extend(order.iter().map(|&i| Constraint::Length(COLS[i].1)));
    let title = format!(
        " {} whose round trips changed, by |moved B-A| ",
        count(changed.len() as u64, "tensor")
    );
    let t = Table::new(rows, widths)
        .header(header)
        .block(block(title, theme, g));
    // The selected row shows while this table has the list keys.
    if app.compare.on_tensors {
        let t = t.row_highlight_style(theme.selected());
        let mut st = TableState::default().with_selected(Some(sel - offset));
        f.render_stateful_widget(t, area, &mut st);
    } else {
        f.render_widget(t, area);
    }
}

/// Columns of an op table: header and width, in the priority they are kept
/// by when the terminal is narrow (the first always).
type OpColumns = [(&'static str, u16)];

/// Ops by |traffic B-A|, then |duration B-A|; against a runtime profile (no
/// spill events), by time alone.
fn draw_ops(
    f: &mut Frame,
    app: &App,
    theme: &Theme,
    g: &Glyphs,
    diff: &spillscope::analysis::diff::TraceDiff,
    table: Rect,
) {
    let unmatched = diff.only_in_a.len() + diff.only_in_b.len();
    let unmatched = if unmatched > 0 {
        format!("; {} unmatched", count(unmatched as u64, "op"))
    } else {
        String::new()
    };
    if diff.by_time {
        // A calibrated simulation against the profile it was calibrated
        // with: where the model still differs, op by op.
        let title = format!(
            " B-A: latency {}; {} matched by name, by |dur B-A|{unmatched} ",
            app.clock().fmt_delta(diff.latency_delta_ns),
            count(diff.ops.len() as u64, "op"),
        );
        let cols: &OpColumns = &[("dur B-A", 11), ("B/A", 7), ("dur A", 10), ("dur B", 10)];
        let cell = |o: &spillscope::analysis::diff::OpDelta, i: usize| match i {
            0 => app.clock().fmt_delta(o.duration_delta()),
            1 if o.a_duration_ns > 0 => {
                format!("{:.2}x", o.b_duration_ns as f64 / o.a_duration_ns as f64)
            }
            1 => "-".into(),
            2 => app.clock().fmt(o.a_duration_ns),
            _ => app.clock().fmt(o.b_duration_ns),
        };
        draw_op_table(
            f,
            app,
            theme,
            g,
            diff,
            table,
            title,
            cols,
            &[2, 3, 1, 0],
            cell,
        );
        return;
    }
    let head = format!(
        " B-A: latency {}, traffic {}",
        app.clock().fmt_delta(diff.latency_delta_ns),
        fmt_bytes_delta(diff.traffic_delta_bytes),
    );
    // The sort order is named in full when it fits, else its first key.
    let full = format!("{head}; ops by |traffic B-A|, then |dur B-A|{unmatched} ");
    let title = if full.chars().count() + 2 <= table.width as usize {
        full
    } else {
        format!("{head}; ops by |traffic B-A|{unmatched} ")
    };
    // Priority: what changed first; shown as traffic B-A, traffic A,
    // traffic B, dur B-A, stall B-A.
    let cols: &OpColumns = &[
        ("traffic B-A", 11),
        ("dur B-A", 11),
        ("stall B-A", 11),
        ("traffic A", 10),
        ("traffic B", 10),
    ];
    let cell = |o: &spillscope::analysis::diff::OpDelta, i: usize| match i {
        0 => fmt_bytes_delta(o.traffic_delta()),
        1 => app.clock().fmt_delta(o.duration_delta()),
        2 => app.clock().fmt_delta(o.stall_delta()),
        3 => fmt_bytes(o.a_traffic_bytes),
        _ => fmt_bytes(o.b_traffic_bytes),
    };
    draw_op_table(
        f,
        app,
        theme,
        g,
        diff,
        table,
        title,
        cols,
        &[0, 3, 4, 1, 2],
        cell,
    );
}

/// The op table: names shortened together, the columns that fit (in
/// `shown` order), the selected row highlighted.
#[allow(clippy::too_many_arguments)]
fn draw_op_table(
    f: &mut Frame,
    app: &App,
    theme: &Theme,
    g: &Glyphs,
    diff: &spillscope::analysis::diff::TraceDiff,
    table: Rect,
    title: String,
    cols: &OpColumns,
    shown_order: &[usize],
    cell: impl Fn(&spillscope::analysis::diff::OpDelta, usize) -> String,
) {
    let widths: Vec<u16> = cols.iter().map(|c| c.1).collect();
    let (kept, name_w) = fit_columns(table.width as usize, 16, &widths, Some(0));
    let order: Vec<usize> = shown_order
        .iter()
        .copied()
        .filter(|i| kept.contains(i))
        .collect();
    let mut head = vec!["op"];
    head.extend(order.iter().map(|&i| cols[i].0));
    let header = Row::new(head).style(theme.strong(theme.c.muted));
    let visible = table.height.saturating_sub(3) as usize;
    let offset = scroll_offset(app.compare.sel, diff.ops.len(), visible);
    let shown: Vec<_> = diff.ops.iter().skip(offset).take(visible).collect();
    let names: Vec<&str> = shown.iter().map(|o| o.name.as_str()).collect();
    let names = spillscope::names::elide_all(&names, name_w, app.ascii);
    let rows: Vec<Row> = shown
        .iter()
        .zip(names)
        .map(|(o, name)| {
            let mut cells = vec![Cell::from(name)];
            cells.extend(order.iter().map(|&i| Cell::from(cell(o, i))));
            Row::new(cells)
        })
        .collect();
    let mut widths = vec![Constraint::Min(10)];
    widths.extend(order.iter().map(|&i| Constraint::Length(cols[i].1)));
    let t = Table::new(rows, widths)
        .header(header)
        .block(block(title, theme, g));
    if app.compare.on_tensors {
        f.render_widget(t, table);
        return;
    }
    let t = t.row_highlight_style(theme.selected());
    let mut st = TableState::default().with_selected(Some(app.compare.sel.saturating_sub(offset)));
    f.render_stateful_widget(t, table, &mut st);
}

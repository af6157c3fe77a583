//! Hotspots: per-operator ranking, sortable by column.

use crate::app::App;
use crate::data::Dataset;
use crate::glyphs::Glyphs;
use crate::theme::Theme;
use crate::ui::{block, scroll_offset};
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Modifier;
use ratatui::widgets::{Cell, Row, Table, TableState};
use ratatui::Frame;
use spillscope::analysis::hotspots::{Hotspot, HotspotKey, Hotspots};
use spillscope::units::{count, fmt_bytes};

/// The Hotspots view's own state: sort column and direction, whether rows
/// are op names (`g`), the rows in display order (indices into the list
/// shown: the dataset's hotspots, or its hotspots by name) and the
/// selected row.
#[derive(Debug, Clone, Default)]
pub struct HotspotsView {
    pub key: HotspotKey,
    pub ascending: bool,
    pub grouped: bool,
    pub order: Vec<usize>,
    pub sel: usize,
}

impl HotspotsView {
    /// Re-sorts for `hs`, keeping the selection in range.
    pub fn resort(&mut self, hs: &Hotspots) {
        self.order = hs.order(self.key, self.ascending);
        self.sel = self.sel.min(self.order.len().saturating_sub(1));
    }

    /// The rows this view lists for `d`.
    pub fn rows<'a>(&self, d: &'a Dataset) -> &'a Hotspots {
        if self.grouped {
            &d.hotspots_by_name
        } else {
            &d.hotspots
        }
    }

    /// The selected row.
    pub fn selected(&self, d: &Dataset) -> Option<Hotspot> {
        self.rows(d).get(*self.order.get(self.sel)?)
    }

    /// The op of the selected row (a name's first call when grouped).
    pub fn selected_op(&self, d: &Dataset) -> Option<usize> {
        self.selected(d).map(|h| h.op)
    }
}

/// A column after the op name: sort key, header, width.
type Column = (HotspotKey, &'static str, u16);

/// The spill columns (traces that record spills), in the order they are
/// dropped from the right when the name would get too narrow (the sort
/// column always stays).
const SPILL_COLUMNS: [Column; 9] = [
    (HotspotKey::Traffic, "traffic", 9),
    (HotspotKey::Stall, "stall", 9),
    (HotspotKey::Contention, "bus wait", 9),
    (HotspotKey::Reloaded, "reload", 9),
    (HotspotKey::Evicted, "evict", 9),
    (HotspotKey::Streamed, "stream", 9),
    (HotspotKey::OpType, "type", 8),
    (HotspotKey::Share, "share", 7),
    (HotspotKey::Bound, "bound", 7),
];

/// Time and memory columns (runtime traces without spill events), in the
/// same drop order.
const MEASURED_COLUMNS: [Column; 8] = [
    (HotspotKey::SelfTime, "self", 10),
    (HotspotKey::TotalTime, "total", 10),
    (HotspotKey::Start, "at", 10),
    (HotspotKey::Allocated, "alloc", 9),
    (HotspotKey::AtPeak, "at peak", 9),
    (HotspotKey::Share, "share", 6),
    (HotspotKey::Allocs, "allocs", 6),
    (HotspotKey::OpType, "type", 8),
];

/// The order the kept columns are shown in.
const SHOWN_ORDER: [HotspotKey; 15] = [
    HotspotKey::Start,
    HotspotKey::OpType,
    HotspotKey::Bound,
    HotspotKey::Traffic,
    HotspotKey::Evicted,
    HotspotKey::Reloaded,
    HotspotKey::Streamed,
    HotspotKey::Stall,
    HotspotKey::Contention,
    HotspotKey::SelfTime,
    HotspotKey::TotalTime,
    HotspotKey::Share,
    HotspotKey::Allocated,
    HotspotKey::Allocs,
    HotspotKey::AtPeak,
];

/// The sort keys `s` cycles through for a trace (spill figures, or time
/// and memory when it records no spills; bus contention only where
/// several cores ran).
pub fn keys_for(spill_events: bool, grouped: bool, cores: u32) -> Vec<HotspotKey> {
    let keys: &[HotspotKey] = match (spill_events, grouped) {
        (true, false) => &HotspotKey::SPILL,
        (false, false) => &HotspotKey::MEASURED,
        (true, true) => &HotspotKey::SPILL_BY_NAME,
        (false, true) => &HotspotKey::MEASURED_BY_NAME,
    };
    HotspotKey::for_cores(keys, cores)
}

/// Names narrower than this lose their layer indices on deep graphs.
const MIN_NAME_W: usize = 18;

/// The columns that fit beside a name at least [`MIN_NAME_W`] wide in
/// `width` (borders included), in display order, the name's width, and
/// how many columns the trace has in all.
fn columns(
    width: usize,
    sort: HotspotKey,
    spill_events: bool,
    cores: u32,
) -> (Vec<Column>, usize, usize) {
    let all: Vec<Column> = if spill_events {
        SPILL_COLUMNS
            .into_iter()
            .filter(|c| cores > 1 || c.0 != HotspotKey::Contention)
            .collect()
    } else {
        MEASURED_COLUMNS.to_vec()
    };
    let widths: Vec<u16> = all.iter().map(|c| c.2).collect();
    let must = all.iter().position(|c| c.0 == sort);
    let (kept, name_w) = crate::ui::fit_columns(width, MIN_NAME_W, &widths, must);
    let mut keep: Vec<Column> = kept.into_iter().map(|i| all[i]).collect();
    keep.sort_by_key(|c| SHOWN_ORDER.iter().position(|k| *k == c.0));
    (keep, name_w, all.len())
}

fn cell(k: HotspotKey, h: &Hotspot, clock: spillscope::units::Clock) -> String {
    let bytes = |b: u64| {
        if b == 0 {
            "-".to_string()
        } else {
            fmt_bytes(b)
        }
    };
    match k {
        HotspotKey::OpType => h.op_type.to_string(),
        HotspotKey::Traffic => bytes(h.traffic_bytes),
        HotspotKey::Evicted => bytes(h.evicted_bytes),
        HotspotKey::Reloaded => bytes(h.reloaded_bytes),
        HotspotKey::Streamed => bytes(h.streamed_in_bytes + h.streamed_out_bytes),
        HotspotKey::Stall => clock.fmt(h.stall_ns),
        HotspotKey::Contention => clock.fmt(h.contention_ns),
        HotspotKey::Share => format!("{:.1}%", h.latency_share * 100.0),
        // Which roof the op sits under (roofline).
        HotspotKey::Bound => h.bound.map(|b| b.as_str()).unwrap_or("-").to_string(),
        HotspotKey::SelfTime => clock.fmt(h.self_ns),
        HotspotKey::TotalTime => clock.fmt(h.duration_ns),
        HotspotKey::Allocated => bytes(h.alloc_bytes),
        HotspotKey::Allocs => match h.allocs {
            0 => "-".into(),
            n => n.to_string(),
        },
        HotspotKey::AtPeak => bytes(h.peak_bytes),
        HotspotKey::Start => clock.fmt(h.start_ns),
        HotspotKey::Calls => h.calls.to_string(),
    }
}

pub fn draw(f: &mut Frame, app: &App, theme: &Theme, g: &Glyphs, area: Rect) {
    let Some(d) = app.primary() else { return };
    let arrow = match (app.ascii, app.hot.ascending) {
        (false, false) => "↓",
        (false, true) => "↑",
        (true, false) => "v",
        (true, true) => "^",
    };
    let head = |k: HotspotKey, text: &str| {
        if k == app.hot.key {
            Cell::from(format!("{text} {arrow}")).style(
                theme
                    .strong(theme.c.accent)
                    .add_modifier(Modifier::UNDERLINED),
            )
        } else {
            Cell::from(text.to_string()).style(theme.strong(theme.c.muted))
        }
    };
    // Grouped, the calls column takes a column's room, not the name's.
    let calls_w: u16 = 6;
    let room = area.width as usize
        - if app.hot.grouped {
            calls_w as usize + 1
        } else {
            0
        };
    let (mut cols, name_w, all) = columns(
        room,
        app.hot.key,
        d.caps.spill_events,
        d.trace.summary.cores,
    );
    if app.hot.grouped {
        cols.insert(0, (HotspotKey::Calls, "calls", calls_w));
    }
    let mut header = vec![Cell::from(if app.hot.grouped { "op name" } else { "op" })
        .style(theme.strong(theme.c.muted))];
    header.extend(cols.iter().map(|&(k, t, _)| {
        // A name's row starts at its first call.
        head(
            k,
            if app.hot.grouped && k == HotspotKey::Start {
                "first"
            } else {
                t
            },
        )
    }));
    let header = Row::new(header);
    let visible = area.height.saturating_sub(3) as usize;
    let offset = scroll_offset(app.hot.sel, app.hot.order.len(), visible);
    let shown: Vec<_> = app
        .hot
        .order
        .iter()
        .skip(offset)
        .take(visible)
        .filter_map(|&i| app.hot.rows(d).get(i))
        .collect();
    let names: Vec<&str> = shown.iter().map(|h| h.name.as_str()).collect();
    let names = spillscope::names::elide_all(&names, name_w, app.ascii);
    let rows: Vec<Row> = shown
        .iter()
        .zip(names)
        .map(|(h, name)| {
            let hot = h.traffic_bytes > 0 || h.stall_ns > 0 || !d.caps.spill_events;
            let style = if hot {
                theme.fg(theme.c.text)
            } else {
                theme.fg(theme.c.muted)
            };
            let mut cells = vec![Cell::from(name)];
            cells.extend(cols.iter().map(|c| Cell::from(cell(c.0, h, d.clock))));
            Row::new(cells).style(style)
        })
        .collect();
    let mut widths = vec![Constraint::Min(8)];
    widths.extend(cols.iter().map(|c| Constraint::Length(c.2)));
    let hidden = (all + usize::from(app.hot.grouped)).saturating_sub(cols.len());
    let rows_text = if app.hot.grouped {
        format!(
            "{} ({})",
            count(app.hot.order.len() as u64, "op name"),
            count(d.hotspots.len() as u64, "call")
        )
    } else {
        count(app.hot.order.len() as u64, "op")
    };
    // A window of a longer stream ranks only what it holds.
    let rows_text = match d.trace.window().filter(|w| w.is_trimmed()) {
        Some(_) => format!("{rows_text} in the window"),
        None => rows_text,
    };
    // The longest title that fits: the hidden columns' note shortens, then goes.
    let room = (area.width as usize).saturating_sub(4);
    let sorted = format!("Hotspots: {rows_text}, sorted by {}", app.hot.key.label());
    let forms = match hidden {
        0 => vec![sorted],
        _ => vec![
            format!(
                "{sorted} ({} when wider)",
                count(hidden as u64, "more column")
            ),
            format!("{sorted} ({hidden} more when wider)"),
            sorted,
        ],
    };
    let title = format!(" {} ", crate::ui::first_fit(&forms, room));
    let table = Table::new(rows, widths)
        .header(header)
        .block(block(title, theme, g))
        .row_highlight_style(theme.selected())
        .column_spacing(1);
    let mut state = TableState::default().with_selected(Some(app.hot.sel - offset));
    f.render_stateful_widget(table, area, &mut state);
}

//! The report as one self-contained HTML file: inline CSS, inline SVG
//! charts (peak live vs capacity, bus occupancy, the what-if curve), no
//! scripts and no external assets, for sharing by mail or ticket.

use super::markdown::{sections, Block};
use super::svg::{esc, render, Chart, Line};
use crate::analysis::report::Report;
use crate::units::{fmt_bytes, fmt_ms};

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222}\
.t{overflow-x:auto;max-width:100%}table{border-collapse:collapse;margin:.5em 0 1em}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right;white-space:nowrap}\
td:first-child,th:first-child,.n{text-align:left;white-space:normal;overflow-wrap:anywhere;min-width:7em}th{background:#f4f4f4}code{background:#f4f4f4;padding:0 3px}\
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #eee}figure{margin:1em 0}";

fn charts(r: &Report) -> String {
    let ms = |x: f64| format!("{:.2} ms", x / 1e6);
    let bytes = |y: f64| fmt_bytes(y.max(0.0) as u64);
    let pts = |v: &[(u64, f64)]| v.iter().map(|&(t, y)| (t as f64, y)).collect::<Vec<_>>();
    let live = pts(&r.series.live_bytes);
    let resident = pts(&r.series.resident_bytes);
    let mut out = String::new();
    if !live.is_empty() || !resident.is_empty() {
        out += &render(&Chart {
            title: "Peak live vs capacity",
            x_label: "time",
            y_label: "bytes",
            lines: vec![
                Line {
                    label: "live (needed)",
                    color: "#1f77b4",
                    points: &live,
                    step: true,
                },
                Line {
                    label: "resident (on chip)",
                    color: "#2ca02c",
                    points: &resident,
                    step: true,
                },
            ],
            // A capacity line only where the trace declares one.
            // When live counts the tensors of several pools, their
            // capacity together is drawn too.
            hlines: if r.capabilities.capacity {
                let mut v = vec![(
                    r.summary.capacity_bytes as f64,
                    format!(
                        "capacity {}",
                        crate::units::fmt_bytes_precise(r.summary.capacity_bytes)
                    ),
                    "#d62728",
                )];
                if let Some(all) = r.summary.live_pools_capacity_bytes {
                    v.push((
                        all as f64,
                        format!("live pools {}", fmt_bytes(all)),
                        "#ff7f0e",
                    ));
                }
                v
            } else {
                Vec::new()
            },
            marks: vec![],
            fmt_x: &ms,
            fmt_y: &bytes,
        });
    }
    let bus = pts(&r.series.bus_occupancy);
    if !bus.is_empty() {
        let pct = |y: f64| format!("{:.0} %", y * 100.0);
        out += &render(&Chart {
            title: "DRAM bus occupancy",
            x_label: "time",
            y_label: "busy",
            lines: vec![Line {
                label: "bus busy fraction",
                color: "#9467bd",
                points: &bus,
                step: true,
            }],
            hlines: vec![(0.8, "80 % busy".into(), "#ff7f0e")],
            marks: vec![],
            fmt_x: &ms,
            fmt_y: &pct,
        });
    }
    if let Some(w) = &r.whatif {
        let lat: Vec<(f64, f64)> = w
            .rows
            .iter()
            .map(|x| (x.capacity_bytes as f64, x.latency_ns as f64))
            .collect();
        let marks = w
            .knees
            .iter()
            .map(|k| {
                (
                    k.knee_capacity as f64,
                    k.knee_latency_ns as f64,
                    format!(
                        "within 1 % of best latency from {}",
                        crate::units::fmt_bytes_precise(k.knee_capacity)
                    ),
                )
            })
            .collect();
        let cap = |x: f64| fmt_bytes(x.max(0.0) as u64);
        out += &render(&Chart {
            title: "What-if: latency vs on-chip capacity",
            x_label: "capacity",
            y_label: "latency",
            lines: vec![Line {
                label: "latency",
                color: "#1f77b4",
                points: &lat,
                step: false,
            }],
            hlines: vec![],
            marks,
            fmt_x: &cap,
            fmt_y: &ms,
        });
    }
    out
}

pub fn to_html(r: &Report) -> String {
    let mut body = String::new();
    for (i, s) in sections(r).iter().enumerate() {
        if !s.title.is_empty() {
            let tag = if i == 0 { "h1" } else { "h2" };
            body += &format!("<{tag}>{}</{tag}>\n", esc(&s.title));
        }
        for b in &s.blocks {
            match b {
                Block::Para(p) => {
                    body += &format!("<p>{}</p>\n", esc(p).replace('\n', "<br>"));
                }
                Block::Table(h, rows) => {
                    // Long names wrap in the first column; a table still
                    // too wide scrolls in its box, not the page.
                    body += "<div class=\"t\"><table><tr>";
                    // A column holding long text (names) wraps; figures do not.
                    let wraps: Vec<bool> = (0..h.len())
                        .map(|i| {
                            rows.iter()
                                .any(|r| r.get(i).is_some_and(|c| c.chars().count() > 24))
                        })
                        .collect();
                    let class = |i: usize| if wraps[i] { " class=\"n\"" } else { "" };
                    for (i, c) in h.iter().enumerate() {
                        body += &format!("<th{}>{}</th>", class(i), esc(c));
                    }
                    body += "</tr>\n";
                    for row in rows {
                        body += "<tr>";
                        for (i, c) in row.iter().enumerate() {
                            body += &format!(
                                "<td{}>{}</td>",
                                class(i.min(h.len().saturating_sub(1))),
                                esc(c)
                            );
                        }
                        body += "</tr>\n";
                    }
                    body += "</table></div>\n";
                }
            }
        }
        if s.title == "Summary" {
            body += &format!("<h2>Charts</h2>\n<figure>{}</figure>\n", charts(r));
        }
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>spillscope report: {}</title><style>{STYLE}</style></head>\n<body>\n{body}<footer><p>spillscope {} · latency {} · generated from {} trace</p></footer>\n</body></html>\n",
        esc(&r.model),
        env!("CARGO_PKG_VERSION"),
        fmt_ms(r.summary.latency_ns),
        esc(&crate::units::with_article(r.source.as_str()))
    )
}

//! The report's text content as sections of paragraphs and tables, built
//! once and rendered by both the markdown and the HTML writers.

use crate::analysis::report::Report;
use crate::analysis::roundtrips::{Back, Out};
use crate::units::{fmt_bytes, fmt_ms};

pub enum Block {
    Para(String),
    Table(Vec<String>, Vec<Vec<String>>),
}

pub struct Section {
    pub title: String,
    pub blocks: Vec<Block>,
}

struct Builder {
    sections: Vec<Section>,
}

impl std::ops::AddAssign<&str> for Builder {
    fn add_assign(&mut self, text: &str) {
        // "## Title\n\n" starts a section; anything else is a paragraph.
        let text = text.trim_matches('\n');
        if let Some(t) = text.strip_prefix("## ").or_else(|| text.strip_prefix("# ")) {
            let (title, rest) = t.split_once("\n").unwrap_or((t, ""));
            self.sections.push(Section {
                title: title.trim().to_string(),
                blocks: Vec::new(),
            });
            if !rest.trim().is_empty() {
                *self += rest;
            }
        } else if !text.trim().is_empty() {
            self.push(Block::Para(text.trim().to_string()));
        }
    }
}

impl std::ops::AddAssign<&String> for Builder {
    fn add_assign(&mut self, text: &String) {
        *self += text.as_str();
    }
}

impl std::ops::AddAssign<Block> for Builder {
    fn add_assign(&mut self, b: Block) {
        self.push(b);
    }
}

impl Builder {
    fn push(&mut self, b: Block) {
        if self.sections.is_empty() {
            self.sections.push(Section {
                title: String::new(),
                blocks: Vec::new(),
            });
        }
        if let Some(s) = self.sections.last_mut() {
            s.blocks.push(b);
        }
    }
}

fn table(headers: &[&str], rows: &[Vec<String>]) -> Block {
    Block::Table(
        headers.iter().map(|h| h.to_string()).collect(),
        rows.to_vec(),
    )
}

/// The report as GitHub-flavoured markdown.
pub fn to_markdown(r: &Report) -> String {
    let mut out = String::new();
    for (i, s) in sections(r).iter().enumerate() {
        if !s.title.is_empty() {
            out += &format!("{} {}\n\n", if i == 0 { "#" } else { "##" }, s.title);
        }
        for b in &s.blocks {
            match b {
                Block::Para(p) => out += &format!("{}\n\n", p.replace('\n', "  \n")),
                Block::Table(h, rows) => {
                    let esc = |s: &str| s.replace('|', "\\|");
                    out += &format!(
                        "| {} |\n|{}\n",
                        h.join(" | "),
                        (0..h.len())
                            .map(|i| if i == 0 { "---|" } else { "---:|" })
                            .collect::<String>()
                    );
                    for r in rows {
                        out += &format!(
                            "| {} |\n",
                            r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
                        );
                    }
                    out += "\n";
                }
            }
        }
    }
    out
}

/// The report's sections, in reading order.
pub fn sections(r: &Report) -> Vec<Section> {
    let s = &r.summary;
    let mut out = Builder {
        sections: Vec::new(),
    };
    out += &format!(
        "# spillscope report: {}\n\n{} trace, policy {}, {}, {}, {}.\n\n",
        r.model,
        r.source,
        r.policy,
        crate::units::count(r.op_count as u64, "op"),
        crate::units::count(r.tensor_count as u64, "tensor"),
        crate::units::count(r.event_count as u64, "event")
    );
    if let Some(m) = &r.measured {
        measured_sections(&mut out, r, m);
        return out.sections;
    }
    out += "## Summary\n\n";
    let mut rows: Vec<Vec<String>> = vec![
        vec!["latency".into(), fmt_ms(s.latency_ns)],
        vec!["throughput".into(), format!("{:.1} fps", s.throughput_fps)],
        vec![
            "evicted out".into(),
            format!(
                "{} ({})",
                fmt_bytes(s.spilled_bytes),
                crate::units::count(s.spill_count, "eviction")
            ),
        ],
        vec!["reloaded".into(), fmt_bytes(s.reloaded_bytes)],
        vec!["streamed in".into(), fmt_bytes(s.streamed_in_bytes)],
        vec!["streamed out".into(), fmt_bytes(s.streamed_out_bytes)],
        vec![
            "spill traffic (the four above)".into(),
            fmt_bytes(s.traffic_bytes),
        ],
        vec![
            "weights (not spill)".into(),
            fmt_bytes(s.weight_traffic_bytes),
        ],
        vec!["stall".into(), fmt_ms(s.stall_ns)],
        vec![
            "peak live / capacity".into(),
            match s.live_pools_capacity_bytes {
                // Peak live counts the tensors of several pools.
                Some(all) => format!(
                    "{} / {} (the pools holding them)",
                    fmt_bytes(s.peak_live_bytes),
                    fmt_bytes(all)
                ),
                None => format!(
                    "{} / {}",
                    fmt_bytes(s.peak_live_bytes),
                    crate::units::fmt_bytes_precise(s.capacity_bytes)
                ),
            },
        ],
        vec![
            crate::analysis::runs::bound_label(s),
            crate::analysis::runs::bound_text(s),
        ],
    ];
    if s.cores > 1 {
        let contention = s.contention_ns.unwrap_or(0);
        rows.insert(
            9,
            vec![
                "of which bus contention".into(),
                format!(
                    "{} ({:.1} % of the stall): waiting because another core held the bus",
                    fmt_ms(contention),
                    contention as f64 * 100.0 / s.stall_ns.max(1) as f64
                ),
            ],
        );
        rows.insert(
            0,
            vec![
                "cores".into(),
                format!(
                    "{} on one DRAM bus{} (capacity and peak live per core)",
                    s.cores,
                    r.split
                        .map(|x| format!(", split by {x}"))
                        .unwrap_or_default()
                ),
            ],
        );
    }
    out += table(&["metric", "value"], &rows);
    out += "\n## Hotspots (by spill traffic)\n\n";
    if r.hotspots.is_empty() {
        out += "No op spills, reloads or stalls.\n";
    } else {
        // Several cores: each op's stall beside the part the bus cost.
        let multi = s.cores > 1;
        let mut heads = vec![
            "op", "type", "traffic", "evicted", "reloaded", "streamed", "stall",
        ];
        if multi {
            heads.push("bus wait");
        }
        heads.extend(["share", "bound", "FLOP/B"]);
        out += table(
            &heads,
            &r.hotspots
                .iter()
                .map(|h| {
                    let mut row = vec![
                        h.name.to_string(),
                        h.op_type.to_string(),
                        fmt_bytes(h.traffic_bytes),
                        fmt_bytes(h.evicted_bytes),
                        fmt_bytes(h.reloaded_bytes),
                        fmt_bytes(h.streamed_in_bytes + h.streamed_out_bytes),
                        fmt_ms(h.stall_ns),
                    ];
                    if multi {
                        row.push(fmt_ms(h.contention_ns));
                    }
                    row.extend([
                        format!("{:.1} %", h.latency_share * 100.0),
                        h.bound.map_or("-", |b| b.as_str()).to_string(),
                        h.intensity.map(|i| format!("{i:.1}")).unwrap_or_default(),
                    ]);
                    row
                })
                .collect::<Vec<_>>(),
        );
        out += "By op type:";
        out += table(
            &[
                "op type", "ops", "traffic", "evicted", "reloaded", "streamed", "stall", "share",
            ],
            &r.op_types
                .iter()
                .map(|t| {
                    vec![
                        t.op_type.clone(),
                        t.ops.to_string(),
                        fmt_bytes(t.traffic_bytes),
                        fmt_bytes(t.evicted_bytes),
                        fmt_bytes(t.reloaded_bytes),
                        fmt_bytes(t.streamed_bytes),
                        fmt_ms(t.stall_ns),
                        format!("{:.1} %", t.latency_share * 100.0),
                    ]
                })
                .collect::<Vec<_>>(),
        );
    }
    cores_section(&mut out, r);
    if let Some(c) = &r.classification {
        classification_section(&mut out, c);
    }
    round_trip_sections(&mut out, r);
    resimulated_sections(&mut out, r);
    out.sections
}

/// A multi-core run: each core's ops, time, stall, contention and
/// traffic; under a graph split, how to pin the placement.
fn cores_section(out: &mut Builder, r: &Report) {
    if r.cores.is_empty() {
        return;
    }
    let latency = r.summary.latency_ns.max(1) as f64;
    *out += "\n## Cores\n\n";
    *out += "Each core's ops (first and last by start), how much of the run they kept it busy, and the part of its stall spent waiting because another core held the bus.";
    *out += table(
        &[
            "core", "ops", "first op", "last op", "busy", "stall", "bus wait", "traffic",
        ],
        &r.cores
            .iter()
            .map(|c| {
                vec![
                    format!("core{}", c.core),
                    c.ops.to_string(),
                    c.first_op.clone(),
                    c.last_op.clone(),
                    format!(
                        "{} ({:.0} %)",
                        fmt_ms(c.busy_ns),
                        c.busy_ns as f64 * 100.0 / latency
                    ),
                    fmt_ms(c.stall_ns),
                    fmt_ms(c.contention_ns),
                    fmt_bytes(c.traffic_bytes),
                ]
            })
            .collect::<Vec<_>>(),
    );
    if let Some(x) = r.summary.shared_pool {
        *out += &format!(
            "{} ({}) crossed cores through the {} pool the cores share, read and written in place instead of through DRAM.",
            crate::units::count(x.tensors, "tensor"),
            fmt_bytes(x.bytes),
            fmt_bytes(x.capacity_bytes)
        );
    }
    if r.split == Some(crate::sim::config::Split::Graph) {
        *out += "The ops were placed by a list schedule; `spillscope sim MODEL --cores N --split graph --write-placement SCHED.toml` writes this placement as a schedule config's `[placement]`, to pin it or edit it.";
    }
}

fn classification_section(out: &mut Builder, c: &crate::analysis::report::ClassificationSummary) {
    *out += &format!(
        "\n## Spill classification\n\n{} capacity spills ({}): live bytes exceeded the pool.\n{} lifetime spills ({}): they would have fit (fragmentation, late free, order).\n",
        c.capacity_count,
        crate::units::fmt_bytes_precise(c.capacity_bytes),
        c.lifetime_count,
        fmt_bytes(c.lifetime_bytes)
    );
    if !c.lifetime_causes.is_empty() {
        *out += table(
            &["lifetime cause", "spills", "example"],
            &c.lifetime_causes
                .iter()
                .map(|x| vec![x.kind.clone(), x.count.to_string(), x.example.clone()])
                .collect::<Vec<_>>(),
        );
    }
}

fn round_trip_sections(out: &mut Builder, r: &Report) {
    *out += "\n## Oscillating tensors\n\n";
    if r.oscillating.is_empty() {
        *out += "None: no tensor makes repeated evict -> reload round trips.\n";
    } else {
        *out += table(
            &["tensor", "size", "round trips", "moved", "stall"],
            &r.oscillating
                .iter()
                .map(|t| {
                    vec![
                        t.name.clone(),
                        fmt_bytes(t.bytes),
                        t.trips.len().to_string(),
                        fmt_bytes(t.bytes_moved),
                        fmt_ms(t.stall_ns),
                    ]
                })
                .collect::<Vec<_>>(),
        );
    }
    *out += "\n## Worst round trips (by stall)\n\n";
    if r.worst_round_trips.is_empty() {
        *out += "No round trips.\n";
    } else {
        *out += table(
            &[
                "tensor",
                "size",
                "out at",
                "during op",
                "back at",
                "for op",
                "ops between",
                "stall",
            ],
            &r.worst_round_trips
                .iter()
                .map(|t| {
                    vec![
                        t.tensor.clone(),
                        fmt_bytes(t.bytes),
                        format!(
                            "{}{}",
                            fmt_ms(t.out_at_ns),
                            if t.out == Out::StreamedOut {
                                " (streamed)"
                            } else {
                                ""
                            }
                        ),
                        t.out_during.clone(),
                        t.back_at_ns.map(fmt_ms).unwrap_or_else(|| "never".into()),
                        match t.back {
                            Some(Back::StreamedIn) => format!("{} (streamed)", t.back_for),
                            _ => t.back_for.clone(),
                        },
                        t.ops_skipped.to_string(),
                        fmt_ms(t.stall_ns),
                    ]
                })
                .collect::<Vec<_>>(),
        );
    }
}

fn resimulated_sections(out: &mut Builder, r: &Report) {
    if let Some(sg) = &r.suggestions {
        *out += "\n## Suggestions (each re-simulated)\n\n";
        if sg.suggestions.is_empty() {
            *out += "No change tried lowers the latency.\n";
        } else {
            *out += table(
                &["#", "saves", "%", "suggestion", "how"],
                &sg.suggestions
                    .iter()
                    .enumerate()
                    .map(|(i, x)| {
                        vec![
                            (i + 1).to_string(),
                            fmt_ms(x.gain_ns.max(0) as u64),
                            format!("{:.1}", x.gain_pct),
                            x.description.clone(),
                            crate::report::change::how(&x.change),
                        ]
                    })
                    .collect::<Vec<_>>(),
            );
        }
    }
    if let Some(w) = &r.whatif {
        *out += "\n## What-if: capacity\n\n";
        *out += table(
            &["capacity", "latency", "spill traffic", "evictions"],
            &w.rows
                .iter()
                .map(|x| {
                    vec![
                        crate::units::fmt_bytes_precise(x.capacity_bytes),
                        fmt_ms(x.latency_ns),
                        fmt_bytes(x.traffic_bytes),
                        x.spill_count.to_string(),
                    ]
                })
                .collect::<Vec<_>>(),
        );
        for k in &w.knees {
            *out += &format!("\n{}\n", k.text);
        }
    }
    for n in &r.notes {
        *out += &format!("Note: {n}");
    }
}

/// A runtime profile: what it measured, what it lacks, where time and
/// memory go; spill sections only when it records spills.
fn measured_sections(
    out: &mut Builder,
    r: &Report,
    m: &crate::analysis::measured::MeasuredSummary,
) {
    *out += "## Summary\n\n";
    let rows: Vec<Vec<String>> = m
        .rows()
        .into_iter()
        .filter(|(k, _)| !k.starts_with("no "))
        .map(|(k, v)| vec![k, v])
        .collect();
    *out += table(&["metric", "value"], &rows);
    if !m.missing.is_empty() {
        *out += "\n## What this trace does not record\n\n";
        *out += table(
            &["missing", "not shown", "how to get it"],
            &m.missing
                .iter()
                .map(|x| vec![x.what.to_string(), x.hides.to_string(), x.how.clone()])
                .collect::<Vec<_>>(),
        );
    }
    *out += &format!("\n## Hotspots (by {})\n\n", r.hotspots_by.label());
    // A trace that records spills (a probe stream, a Vela plan) shows
    // each op's traffic, which it may be ranked by.
    let spills = r.capabilities.spill_events;
    let frees = r.capabilities.frees;
    let time_row = |h: &crate::analysis::hotspots::Hotspot| {
        let mut row = vec![
            h.name.to_string(),
            h.op_type.to_string(),
            fmt_ms(h.start_ns),
            fmt_ms(h.self_ns),
            fmt_ms(h.duration_ns),
            format!("{:.1} %", h.latency_share * 100.0),
            fmt_bytes(h.alloc_bytes),
            h.allocs.to_string(),
            // Without frees a profile has no peak to be at: "-", as the
            // explorer shows, not a 0 B the trace cannot back.
            if frees {
                fmt_bytes(h.peak_bytes)
            } else {
                "-".to_string()
            },
        ];
        if spills {
            row.push(fmt_bytes(h.traffic_bytes));
        }
        row
    };
    let mut head = vec![
        "op",
        "type",
        "at",
        "self",
        "total",
        "share",
        "allocated",
        "allocations",
        "at peak",
    ];
    if spills {
        head.push("traffic");
    }
    *out += table(&head, &r.hotspots.iter().map(time_row).collect::<Vec<_>>());
    if !r.hotspots_by_name.is_empty() {
        *out += "\n## By op name (by total time, each name's calls summed)\n\n";
        let rows: Vec<Vec<String>> = r
            .hotspots_by_name
            .iter()
            .map(|h| {
                let mut row = time_row(h);
                // "at" is the first call's start; the calls say how many.
                row[1] = h.calls.to_string();
                row
            })
            .collect();
        let mut by_head = head.clone();
        by_head[0] = "op name";
        by_head[1] = "calls";
        by_head[2] = "first at";
        *out += table(&by_head, &rows);
    }
    if !r.memory_hotspots.is_empty() {
        *out += &format!(
            "\n## Memory (by {})\n\n",
            if r.capabilities.frees {
                "bytes live at the peak"
            } else {
                "bytes allocated"
            }
        );
        *out += table(
            &head,
            &r.memory_hotspots.iter().map(time_row).collect::<Vec<_>>(),
        );
    }
    if r.capabilities.spill_events {
        round_trip_sections(out, r);
    }
    if let Some(c) = &r.calibrate {
        *out += &format!(
            "\n## Simulate it\n\nTo simulate this model with the op times measured here (and compare the two per op): `{c}`\n\n"
        );
    }
    resimulated_sections(out, r);
}

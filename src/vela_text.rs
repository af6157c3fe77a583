//! The Vela comparison as text for `diff`: configuration, spilled-set
//! agreement, DRAM feature-map bytes with the bound, where the graphs
//! differ, and the per-op table.

use spillscope::analysis::vela::VelaComparison;
use spillscope::units::{count, fmt_bytes};

/// `side` is where Vela's plan is (`A` or `B`).
pub fn render(side: char, c: &VelaComparison, limit: usize) -> String {
    let other = if side == 'A' { 'B' } else { 'A' };
    let v = &c.vela;
    let mut s = format!(
        "\nVela ({side}): {} on {}, {}, SRAM {}{}; spillscope ({other}): {} at {}\n",
        v.accelerator,
        v.system_config,
        v.memory_mode,
        fmt_bytes(v.arena_cache_bytes),
        match (v.cascading, v.cascades) {
            (Some(false), _) => ", cascading off".to_string(),
            (_, 0) => ", no cascades".to_string(),
            (_, n) => format!(", {}", count(n as u64, "cascade")),
        },
        c.sim_policy,
        fmt_bytes(c.sim_capacity_bytes),
    );
    if v.capacity_is_limit && v.arena_cache_bytes != c.sim_capacity_bytes {
        s += "  note: the SRAM sizes differ; simulate with --capacity equal to Vela's --arena-cache-size\n";
    }
    s += &format!(
        "spilled set: {:.1}% agree over {} feature maps ({} both on chip, {} both in DRAM, {} only Vela, {} only spillscope)\n",
        c.agreement_pct,
        c.matched,
        c.both_on_chip,
        c.both_spilled.len(),
        c.only_vela_spilled.len(),
        c.only_sim_spilled.len()
    );
    let list = |label: &str, names: &[String]| -> String {
        if names.is_empty() {
            return String::new();
        }
        let shown: Vec<&str> = names.iter().take(limit).map(|n| first_part(n)).collect();
        let short = spillscope::names::elide_all(&shown, 72, false);
        let mut out = format!("  {label}:\n");
        for n in short {
            out += &format!("    {n}\n");
        }
        if names.len() > shown.len() {
            out += &format!("    ... and {} more\n", names.len() - shown.len());
        }
        out
    };
    s += &list("in DRAM only in Vela's plan", &c.only_vela_spilled);
    s += &list("in DRAM only in spillscope's run", &c.only_sim_spilled);
    s += &format!(
        "DRAM feature-map bytes of those {} (raw): Vela {}, spillscope {}\n",
        c.matched,
        fmt_bytes(c.vela_matched_bytes),
        fmt_bytes(c.sim_matched_bytes),
    );
    s += &format!(
        "DRAM feature-map bytes of all intermediates: Vela {}, spillscope {}, spillscope's lower bound {} ({})\n",
        fmt_bytes(c.vela_dram_bytes),
        fmt_bytes(c.sim_dram_bytes),
        fmt_bytes(c.bound_bytes),
        c.bound_method
    );
    s += &format!(
        "graph input and output in DRAM: Vela {} (always there), spillscope {} (input loads; the output stays on chip)\n",
        fmt_bytes(c.vela_io_bytes),
        fmt_bytes(c.sim_io_bytes)
    );
    s += &format!(
        "Vela's own figures (burst-weighted, halo re-reads counted, input and output included): DRAM feature-map reads {}, writes {}\n",
        fmt_bytes(v.dram_feature_map_read_bytes),
        fmt_bytes(v.dram_feature_map_write_bytes),
    );
    if c.vela_dram_bytes < c.bound_bytes {
        s += &if c.vela.cascades > 0 {
            format!(
                "  Vela is under spillscope's bound: its {} keep feature maps as rolling buffers, never whole; the bound is for whole tensors\n",
                count(c.vela.cascades as u64, "cascade")
            )
        } else {
            format!(
                "  Vela is under spillscope's bound: its graph never stores {} of the .tflite's tensors and writes elementwise outputs in place; the bound is for the .tflite's graph\n",
                fmt_bytes(c.not_stored_bytes)
            )
        };
    }
    if !c.differences.is_empty() {
        s += "where the graphs differ (left out of the agreement; padded and cascaded ones are compared):\n";
        for (why, names) in &c.differences {
            let first: Vec<&str> = names.iter().take(2).map(|n| first_part(n)).collect();
            let short = spillscope::names::elide_all(&first, 40, false).join(", ");
            s += &format!(
                "  {}: {}  e.g. {short}\n",
                why,
                count(names.len() as u64, "tensor")
            );
        }
    }
    if !c.ops.is_empty() {
        s += &format!(
            "\n{:<52} {:>12} {:>12} {:>12}\n",
            "op output (by |Vela - spillscope|)", "Vela", "spillscope", "diff"
        );
        let shown: Vec<_> = c.ops.iter().take(limit).collect();
        let names: Vec<&str> = shown.iter().map(|o| first_part(&o.output)).collect();
        for (o, n) in shown
            .iter()
            .zip(spillscope::names::elide_all(&names, 52, false))
        {
            s += &format!(
                "{:<52} {:>12} {:>12} {:>12}\n",
                n,
                fmt_bytes(o.vela_bytes),
                fmt_bytes(o.sim_bytes),
                spillscope::units::fmt_bytes_delta(o.sim_bytes as i64 - o.vela_bytes as i64)
            );
        }
    }
    s
}

/// TFLite names join the fused ops' names with `;`: the first is the op's
/// own (the rest are in the JSON).
fn first_part(name: &str) -> &str {
    name.split(';').find(|p| !p.is_empty()).unwrap_or(name)
}

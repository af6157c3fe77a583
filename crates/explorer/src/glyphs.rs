//! Glyph sets: Unicode blocks and box drawing, or plain ASCII for terminals
//! without them (`--ascii`).

use ratatui::symbols::border;

#[derive(Debug, Clone, Copy)]
pub struct Glyphs {
    /// Nine levels, empty to full.
    pub levels: [&'static str; 9],
    pub full: &'static str,
    pub shade: &'static str,
    pub evict: &'static str,
    pub reload: &'static str,
    /// A stream event (an op reading or writing DRAM tile by tile).
    pub stream: &'static str,
    /// Several kinds of spill event in one column.
    pub both: &'static str,
    pub stall: &'static str,
    pub hline: &'static str,
    pub vline: &'static str,
    pub arrow: &'static str,
    pub arrow_head: &'static str,
    pub cursor: &'static str,
    pub border: border::Set<'static>,
}

pub const UNICODE: Glyphs = Glyphs {
    levels: [" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"],
    full: "█",
    shade: "▒",
    evict: "▼",
    reload: "▲",
    stream: "≈",
    both: "◆",
    stall: "!",
    hline: "─",
    vline: "│",
    arrow: "─",
    arrow_head: "▶",
    cursor: "┃",
    border: border::PLAIN,
};

pub const ASCII: Glyphs = Glyphs {
    levels: [" ", ".", ".", ":", ":", "=", "=", "#", "#"],
    full: "#",
    shade: "+",
    evict: "v",
    reload: "^",
    stream: "~",
    both: "*",
    stall: "!",
    hline: "-",
    vline: "|",
    arrow: "-",
    arrow_head: ">",
    cursor: "|",
    border: border::Set {
        top_left: "+",
        top_right: "+",
        bottom_left: "+",
        bottom_right: "+",
        vertical_left: "|",
        vertical_right: "|",
        horizontal_top: "-",
        horizontal_bottom: "-",
    },
};

impl Glyphs {
    pub fn get(ascii: bool) -> &'static Glyphs {
        if ascii {
            &ASCII
        } else {
            &UNICODE
        }
    }
    /// The level glyph for a fraction in 0..=1 (anything above 0 shows).
    pub fn level(&self, f: f64) -> &'static str {
        if f <= 0.0 {
            return self.levels[0];
        }
        let i = ((f.min(1.0) * 8.0).ceil() as usize).clamp(1, 8);
        self.levels[i]
    }
}

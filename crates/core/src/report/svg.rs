//! Minimal inline SVG line charts (no scripts, no external assets).

use std::fmt::Write;

pub struct Line<'a> {
    pub label: &'a str,
    pub color: &'a str,
    pub points: &'a [(f64, f64)],
    /// Draw as a step function (counters hold until the next sample).
    pub step: bool,
}

pub struct Chart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub lines: Vec<Line<'a>>,
    /// Horizontal reference lines: `(y, label, color)`.
    pub hlines: Vec<(f64, String, &'a str)>,
    /// Marked points: `(x, y, label)`.
    pub marks: Vec<(f64, f64, String)>,
    pub fmt_x: &'a dyn Fn(f64) -> String,
    pub fmt_y: &'a dyn Fn(f64) -> String,
}

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const W: f64 = 760.0;
const H: f64 = 260.0;
const L: f64 = 80.0;
const R: f64 = 20.0;
const T: f64 = 30.0;
/// The baseline of the legend's first row.
const LEGEND_Y: f64 = 16.0;
const B: f64 = 40.0;

pub fn render(c: &Chart) -> String {
    // The legend sits above the plot, right of the title: the plot starts
    // below its last row, and the picture grows by what it takes.
    let entries = c.lines.len() + c.hlines.len();
    let legend_h = (LEGEND_Y + entries as f64 * 14.0 - T).max(0.0);
    let (t, h) = (T + legend_h, H + legend_h);
    let xs = c.lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
    for x in xs {
        x0 = x0.min(x);
        x1 = x1.max(x);
    }
    let mut y1 = c
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .chain(c.hlines.iter().map(|h| h.0))
        .fold(0.0f64, f64::max);
    if !x0.is_finite() || x1 <= x0 {
        x0 = 0.0;
        x1 = x1.max(1.0);
    }
    if y1 <= 0.0 {
        y1 = 1.0;
    }
    y1 *= 1.08;
    let px = |x: f64| L + (x - x0) / (x1 - x0) * (W - L - R);
    let py = |y: f64| t + (1.0 - y / y1) * (h - t - B);
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {h}" width="{W}" height="{h}" style="max-width:100%;height:auto" role="img" aria-label="{}"><style>text{{font:11px sans-serif;fill:#333}}</style>"#,
        esc(c.title)
    );
    let _ = write!(
        s,
        r#"<text x="{L}" y="18" style="font-weight:bold">{}</text>"#,
        esc(c.title)
    );
    // Axes and ticks.
    let _ = write!(
        s,
        r##"<line x1="{L}" y1="{}" x2="{}" y2="{}" stroke="#999"/><line x1="{L}" y1="{t}" x2="{L}" y2="{}" stroke="#999"/>"##,
        h - B,
        W - R,
        h - B,
        h - B
    );
    for i in 0..=4 {
        let y = y1 / 1.08 * i as f64 / 4.0;
        let _ = write!(
            s,
            r##"<line x1="{L}" y1="{0:.1}" x2="{1}" y2="{0:.1}" stroke="#eee"/><text x="{2}" y="{3:.1}" text-anchor="end">{4}</text>"##,
            py(y),
            W - R,
            L - 4.0,
            py(y) + 4.0,
            esc(&(c.fmt_y)(y))
        );
        let x = x0 + (x1 - x0) * i as f64 / 4.0;
        // The end ticks' labels start and end at the axis's ends, inside
        // the picture.
        let anchor = match i {
            0 => "start",
            4 => "end",
            _ => "middle",
        };
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{}" text-anchor="{anchor}">{}</text>"#,
            px(x),
            h - B + 14.0,
            esc(&(c.fmt_x)(x))
        );
    }
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text><text x="12" y="{}" transform="rotate(-90 12 {})" text-anchor="middle">{}</text>"#,
        (L + W - R) / 2.0,
        h - 6.0,
        esc(c.x_label),
        (t + h - B) / 2.0,
        (t + h - B) / 2.0,
        esc(c.y_label)
    );
    for (y, _, color) in &c.hlines {
        let _ = write!(
            s,
            r#"<line x1="{L}" y1="{0:.1}" x2="{1}" y2="{0:.1}" stroke="{2}" stroke-dasharray="6 4"/>"#,
            py(*y),
            W - R,
            color,
        );
    }
    for l in &c.lines {
        let mut d = String::new();
        let mut prev: Option<(f64, f64)> = None;
        for &(x, y) in l.points {
            match prev {
                None => {
                    let _ = write!(d, "M{:.1},{:.1}", px(x), py(y));
                }
                Some((_, py0)) if l.step => {
                    let _ = write!(d, " L{:.1},{:.1} L{:.1},{:.1}", px(x), py0, px(x), py(y));
                }
                Some(_) => {
                    let _ = write!(d, " L{:.1},{:.1}", px(x), py(y));
                }
            }
            prev = Some((x, py(y)));
        }
        let _ = write!(
            s,
            r#"<path d="{d}" fill="none" stroke="{}" stroke-width="1.5"/>"#,
            l.color,
        );
    }
    // The legend: the lines, then the reference lines (named there, not
    // over the plot).
    let _ = write!(
        s,
        r##"<rect x="{}" y="{}" width="206" height="{}" fill="#fff" fill-opacity="0.85"/>"##,
        W - R - 206.0,
        LEGEND_Y - 10.0,
        entries as f64 * 14.0 + 4.0
    );
    for (k, (_, label, color)) in c.hlines.iter().enumerate() {
        let row = (c.lines.len() + k) as f64;
        let _ = write!(
            s,
            r#"<line x1="{0}" y1="{1:.1}" x2="{2}" y2="{1:.1}" stroke="{3}" stroke-dasharray="4 2" stroke-width="2"/><text x="{4}" y="{5}">{6}</text>"#,
            W - R - 200.0,
            LEGEND_Y - 2.5 + row * 14.0,
            W - R - 190.0,
            color,
            W - R - 186.0,
            LEGEND_Y + row * 14.0,
            esc(label)
        );
    }
    for (k, l) in c.lines.iter().enumerate() {
        let _ = write!(
            s,
            r#"<rect x="{}" y="{}" width="10" height="3" fill="{}"/><text x="{}" y="{}">{}</text>"#,
            W - R - 200.0,
            LEGEND_Y - 4.0 + k as f64 * 14.0,
            l.color,
            W - R - 186.0,
            LEGEND_Y + k as f64 * 14.0,
            esc(l.label)
        );
    }
    for (x, y, label) in &c.marks {
        // A label right of its point in the left half, left of it in the
        // right half: never past the picture's edge.
        let (tx, anchor) = if px(*x) > (L + W - R) / 2.0 {
            (px(*x) - 6.0, "end")
        } else {
            (px(*x) + 6.0, "start")
        };
        let _ = write!(
            s,
            r##"<circle cx="{:.1}" cy="{:.1}" r="4" fill="#d62728"/><text x="{tx:.1}" y="{:.1}" text-anchor="{anchor}">{}</text>"##,
            px(*x),
            py(*y),
            py(*y) - 8.0,
            esc(label)
        );
    }
    s += "</svg>";
    s
}

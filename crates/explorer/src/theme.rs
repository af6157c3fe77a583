//! Themes: TOML files of named colours, layered (built-in default, then a
//! theme file that may be partial, then `NO_COLOR`/16-colour downsampling).
//! Unknown keys are errors that name the key.

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;
use std::path::Path;

/// What the terminal can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorMode {
    TrueColor,
    Ansi16,
    /// `NO_COLOR`: no colours at all; emphasis by modifiers only.
    None,
}

impl ColorMode {
    /// From the environment: `NO_COLOR` wins; `COLORTERM=truecolor|24bit`
    /// means RGB; anything else gets the 16 ANSI colours.
    pub fn detect() -> ColorMode {
        if std::env::var_os("NO_COLOR")
            .map(|v| !v.is_empty())
            .unwrap_or(false)
        {
            return ColorMode::None;
        }
        match std::env::var("COLORTERM").unwrap_or_default().as_str() {
            "truecolor" | "24bit" => ColorMode::TrueColor,
            _ => ColorMode::Ansi16,
        }
    }
}

macro_rules! palette {
    ($($field:ident),* $(,)?) => {
        /// Colour slots a theme can set (all optional in a file).
        #[derive(Debug, Clone, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct PaletteFile { $(pub $field: Option<String>,)* }

        /// A complete palette.
        #[derive(Debug, Clone, PartialEq)]
        pub struct Palette { $(pub $field: Color,)* }

        impl Palette {
            fn patch(&mut self, f: &PaletteFile) -> Result<(), String> {
                $(if let Some(v) = &f.$field {
                    self.$field = parse_color(v).map_err(|e| format!("colors.{}: {e}", stringify!($field)))?;
                })*
                Ok(())
            }
            fn map(&self, mode: ColorMode) -> Palette {
                Palette { $($field: downsample(self.$field, mode),)* }
            }
        }
    };
}

palette!(
    text,
    muted,
    accent,
    border,
    selection,
    compute,
    stall,
    dma_read,
    dma_write,
    dma_stream,
    dma_weights,
    bus,
    bus_hot,
    capacity,
    live,
    banner,
    oscillation,
    fragmentation,
    highlight,
    tab_active,
);

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    colors: PaletteFile,
}

/// The resolved theme the views read.
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub name: String,
    pub mode: ColorMode,
    pub c: Palette,
}

pub const BUILTIN: &[(&str, &str)] = &[
    ("dark", include_str!("../../../themes/dark.toml")),
    ("light", include_str!("../../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../../themes/high-contrast.toml"),
    ),
];

fn parse_color(s: &str) -> Result<Color, String> {
    let t = s.trim().to_ascii_lowercase();
    if let Some(hex) = t.strip_prefix('#') {
        if hex.len() == 6 {
            let v = u32::from_str_radix(hex, 16).map_err(|_| format!("bad hex colour {s:?}"))?;
            return Ok(Color::Rgb((v >> 16) as u8, (v >> 8) as u8, v as u8));
        }
        return Err(format!("bad hex colour {s:?} (use #rrggbb)"));
    }
    if let Ok(n) = t.parse::<u8>() {
        return Ok(Color::Indexed(n));
    }
    Ok(match t.as_str() {
        "reset" | "default" => Color::Reset,
        "black" => Color::Black,
        "red" => Color::Red,
        "green" => Color::Green,
        "yellow" => Color::Yellow,
        "blue" => Color::Blue,
        "magenta" => Color::Magenta,
        "cyan" => Color::Cyan,
        "gray" | "grey" => Color::Gray,
        "darkgray" | "darkgrey" => Color::DarkGray,
        "lightred" => Color::LightRed,
        "lightgreen" => Color::LightGreen,
        "lightyellow" => Color::LightYellow,
        "lightblue" => Color::LightBlue,
        "lightmagenta" => Color::LightMagenta,
        "lightcyan" => Color::LightCyan,
        "white" => Color::White,
        _ => {
            return Err(format!(
                "unknown colour {s:?} (use a name, #rrggbb or 0-255)"
            ))
        }
    })
}

/// Nearest of the 16 ANSI colours for RGB values in 16-colour terminals.
fn downsample(c: Color, mode: ColorMode) -> Color {
    match (mode, c) {
        (ColorMode::None, _) => Color::Reset,
        (ColorMode::Ansi16, Color::Rgb(r, g, b)) => {
            const TABLE: [(Color, (i32, i32, i32)); 16] = [
                (Color::Black, (0, 0, 0)),
                (Color::Red, (170, 0, 0)),
                (Color::Green, (0, 170, 0)),
                (Color::Yellow, (170, 170, 0)),
                (Color::Blue, (0, 0, 170)),
                (Color::Magenta, (170, 0, 170)),
                (Color::Cyan, (0, 170, 170)),
                (Color::Gray, (170, 170, 170)),
                (Color::DarkGray, (85, 85, 85)),
                (Color::LightRed, (255, 85, 85)),
                (Color::LightGreen, (85, 255, 85)),
                (Color::LightYellow, (255, 255, 85)),
                (Color::LightBlue, (85, 85, 255)),
                (Color::LightMagenta, (255, 85, 255)),
                (Color::LightCyan, (85, 255, 255)),
                (Color::White, (255, 255, 255)),
            ];
            let (r, g, b) = (r as i32, g as i32, b as i32);
            TABLE
                .iter()
                .min_by_key(|(_, (tr, tg, tb))| (r - tr).pow(2) + (g - tg).pow(2) + (b - tb).pow(2))
                .map(|(c, _)| *c)
                .unwrap_or(Color::Reset)
        }
        (ColorMode::Ansi16, Color::Indexed(i)) if i >= 16 => Color::Reset,
        (_, c) => c,
    }
}

impl Theme {
    /// Loads `--theme NAME|FILE` over the built-in `dark` default.
    pub fn load(spec: Option<&str>, mode: ColorMode) -> spillscope::Result<Theme> {
        let mut pal = Self::builtin_palette("dark")?;
        let mut name = "dark".to_string();
        if let Some(spec) = spec {
            let (text, origin) = match BUILTIN.iter().find(|(n, _)| *n == spec) {
                Some((_, t)) => (t.to_string(), spec.to_string()),
                None => {
                    let p = Path::new(spec);
                    if !p.exists() {
                        return Err(spillscope::Error::Config(format!(
                            "theme {spec:?}: no such file or built-in theme (built-in: dark, light, high-contrast)"
                        )));
                    }
                    (
                        std::fs::read_to_string(p).map_err(|e| spillscope::Error::io(p, e))?,
                        p.display().to_string(),
                    )
                }
            };
            let f: ThemeFile = toml::from_str(&text)
                .map_err(|e| spillscope::Error::toml(origin.clone(), "theme (TOML)", &text, &e))?;
            pal.patch(&f.colors)
                .map_err(|e| spillscope::Error::parse(origin.clone(), "theme", e))?;
            name = f.name.unwrap_or(origin);
        }
        Ok(Theme {
            name,
            mode,
            c: pal.map(mode),
        })
    }

    fn builtin_palette(name: &str) -> spillscope::Result<Palette> {
        let mut p = Palette {
            text: Color::Reset,
            muted: Color::DarkGray,
            accent: Color::Cyan,
            border: Color::DarkGray,
            selection: Color::Blue,
            compute: Color::Green,
            stall: Color::Red,
            dma_read: Color::Cyan,
            dma_write: Color::Magenta,
            dma_stream: Color::LightBlue,
            dma_weights: Color::DarkGray,
            bus: Color::Blue,
            bus_hot: Color::Red,
            capacity: Color::Yellow,
            live: Color::Green,
            banner: Color::Red,
            oscillation: Color::LightRed,
            fragmentation: Color::Yellow,
            highlight: Color::Yellow,
            tab_active: Color::Cyan,
        };
        let text = BUILTIN
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| *t)
            .unwrap_or("");
        let f: ThemeFile = toml::from_str(text)
            .map_err(|e| spillscope::Error::Config(format!("built-in theme {name}: {e}")))?;
        p.patch(&f.colors).map_err(spillscope::Error::Config)?;
        Ok(p)
    }

    pub fn fg(&self, c: Color) -> Style {
        Style::default().fg(c)
    }
    /// Selected rows: reversed video, so it shows without colour too.
    pub fn selected(&self) -> Style {
        match self.mode {
            ColorMode::None => Style::default().add_modifier(Modifier::REVERSED),
            _ => Style::default()
                .bg(self.c.selection)
                .fg(Color::White)
                .add_modifier(Modifier::BOLD),
        }
    }
    /// Emphasis that survives `NO_COLOR`.
    pub fn strong(&self, c: Color) -> Style {
        Style::default().fg(c).add_modifier(Modifier::BOLD)
    }
}

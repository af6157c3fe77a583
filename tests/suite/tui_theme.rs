//! Themes are layered and strict; NO_COLOR and 16-colour terminals respected.

use ratatui::style::Color;
use spillscope_explorer::theme::{ColorMode, Theme};

#[test]
fn builtin_themes_load_and_differ() {
    let dark = Theme::load(Some("dark"), ColorMode::TrueColor).unwrap();
    let light = Theme::load(Some("light"), ColorMode::TrueColor).unwrap();
    let hc = Theme::load(Some("high-contrast"), ColorMode::TrueColor).unwrap();
    assert_ne!(dark.c, light.c);
    assert_ne!(dark.c, hc.c);
    assert_eq!(hc.c.stall, Color::LightRed);
}

#[test]
fn a_partial_theme_patches_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("mine.toml");
    std::fs::write(&p, "[colors]\nstall = \"#010203\"\n").unwrap();
    let t = Theme::load(Some(p.to_str().unwrap()), ColorMode::TrueColor).unwrap();
    let dark = Theme::load(None, ColorMode::TrueColor).unwrap();
    assert_eq!(t.c.stall, Color::Rgb(1, 2, 3));
    assert_eq!(
        t.c.compute, dark.c.compute,
        "untouched slots keep the default"
    );
}

#[test]
fn unknown_keys_and_bad_colours_are_errors_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.toml");
    std::fs::write(&p, "[colors]\nstal = \"red\"\n").unwrap();
    let e = Theme::load(Some(p.to_str().unwrap()), ColorMode::TrueColor)
        .unwrap_err()
        .to_string();
    assert!(e.contains("stal"), "{e}");
    std::fs::write(&p, "[colors]\nstall = \"reddish\"\n").unwrap();
    let e = Theme::load(Some(p.to_str().unwrap()), ColorMode::TrueColor)
        .unwrap_err()
        .to_string();
    assert!(e.contains("colors.stall") && e.contains("reddish"), "{e}");
    let e = Theme::load(Some("no-such-theme"), ColorMode::TrueColor)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no-such-theme"), "{e}");
}

#[test]
fn no_color_and_16_colour_modes() {
    let none = Theme::load(None, ColorMode::None).unwrap();
    assert_eq!(none.c.stall, Color::Reset);
    assert_eq!(none.c.compute, Color::Reset);
    let ansi = Theme::load(None, ColorMode::Ansi16).unwrap();
    let is16 = |c: Color| !matches!(c, Color::Rgb(..) | Color::Indexed(16..=255));
    for c in [
        ansi.c.stall,
        ansi.c.compute,
        ansi.c.bus,
        ansi.c.capacity,
        ansi.c.accent,
    ] {
        assert!(is16(c), "{c:?} is not one of the 16 colours");
    }
}

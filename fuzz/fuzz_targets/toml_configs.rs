#![no_main]
//! Hardware profiles, schedule configs and themes (TOML).
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("spillscope-fuzz-toml-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let p = dir.join("c.toml");
    if std::fs::write(&p, text).is_err() {
        return;
    }
    let _ = spillscope::cost::HardwareProfile::load(p.to_str().unwrap_or(""));
    let _ = spillscope::sim::ScheduleFile::load(&p);
    let _ = spillscope_explorer::theme::Theme::load(
        p.to_str(),
        spillscope_explorer::theme::ColorMode::TrueColor,
    );
});

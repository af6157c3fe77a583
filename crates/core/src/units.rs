//! Human-friendly quantities: sizes (`32MiB`, `16MB`, `4096`), bandwidths
//! (`60GB/s`) and durations. Users type these on command lines and in TOML
//! profiles, so both accept the same spellings and errors quote the input.
//!
//! A foundation: imports nothing of the crate.

use serde::{Deserialize, Deserializer};
use std::fmt;

/// Why a quantity could not be read; carries the offending text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot read {what} {text:?}: {why}")]
pub struct QuantityError {
    pub what: &'static str,
    pub text: String,
    pub why: String,
}

fn split_number(text: &str) -> (&str, &str) {
    let t = text.trim();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    (t[..end].trim(), t[end..].trim())
}

fn unit_factor(unit: &str) -> Option<f64> {
    let u = unit.trim();
    Some(match u {
        "" | "B" | "b" => 1.0,
        "K" | "k" | "KB" | "kB" | "kb" => 1e3,
        "M" | "MB" | "mb" => 1e6,
        "G" | "GB" | "gb" => 1e9,
        "T" | "TB" | "tb" => 1e12,
        "KiB" | "Ki" | "kib" => 1024.0,
        "MiB" | "Mi" | "mib" => 1024.0 * 1024.0,
        "GiB" | "Gi" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "TiB" | "Ti" | "tib" => 1024.0f64.powi(4),
        _ => return None,
    })
}

/// Parses a byte size such as `32MiB`, `16MB`, `1.5GiB` or `4096`.
pub fn parse_size(text: &str) -> Result<u64, QuantityError> {
    let err = |why: &str| QuantityError {
        what: "size",
        text: text.to_string(),
        why: why.to_string(),
    };
    let (num, unit) = split_number(text);
    if num.is_empty() {
        return Err(err("expected a number such as 32MiB, 16MB or 4096"));
    }
    let value: f64 = num
        .replace('_', "")
        .parse()
        .map_err(|_| err("not a number"))?;
    let factor =
        unit_factor(unit).ok_or_else(|| err("unknown unit (use B, KB, MB, GB, KiB, MiB, GiB)"))?;
    let bytes = value * factor;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(err("out of range"));
    }
    Ok(bytes.round() as u64)
}

/// Parses a bandwidth such as `60GB/s`, `12.5GiB/s` or `1e9` (bytes per second).
pub fn parse_bandwidth(text: &str) -> Result<f64, QuantityError> {
    let err = |why: &str| QuantityError {
        what: "bandwidth",
        text: text.to_string(),
        why: why.to_string(),
    };
    let t = text.trim();
    if let Ok(v) = t.parse::<f64>() {
        return if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(err("must be positive"))
        };
    }
    let body = t
        .strip_suffix("/s")
        .or_else(|| t.strip_suffix("ps"))
        .ok_or_else(|| err("expected a rate such as 60GB/s"))?;
    let (num, unit) = split_number(body);
    let value: f64 = num.parse().map_err(|_| err("not a number"))?;
    let factor = unit_factor(unit).ok_or_else(|| err("unknown unit (use MB/s, GB/s, GiB/s)"))?;
    let bw = value * factor;
    if !bw.is_finite() || bw <= 0.0 {
        return Err(err("must be positive"));
    }
    Ok(bw)
}

/// Parses a compute rate such as `4TFLOP/s`, `500GFLOPS` or a plain number of FLOP/s.
pub fn parse_flops(text: &str) -> Result<f64, QuantityError> {
    let err = |why: &str| QuantityError {
        what: "compute rate",
        text: text.to_string(),
        why: why.to_string(),
    };
    let t = text.trim();
    if let Ok(v) = t.parse::<f64>() {
        return if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(err("must be positive"))
        };
    }
    let body = t
        .strip_suffix("FLOP/s")
        .or_else(|| t.strip_suffix("FLOPS"))
        .or_else(|| t.strip_suffix("OPS"))
        .ok_or_else(|| err("expected a rate such as 4TFLOP/s"))?;
    let (num, unit) = split_number(body);
    let value: f64 = num.parse().map_err(|_| err("not a number"))?;
    let factor = match unit {
        "" => 1.0,
        "K" | "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        _ => return Err(err("unknown prefix (use G, T)")),
    };
    Ok(value * factor)
}

/// Parses a duration such as `200ns`, `1.5us`, `2ms` or `1s` into nanoseconds.
pub fn parse_duration_ns(text: &str) -> Result<f64, QuantityError> {
    let err = |why: &str| QuantityError {
        what: "duration",
        text: text.to_string(),
        why: why.to_string(),
    };
    let (num, unit) = split_number(text);
    let value: f64 = num.parse().map_err(|_| err("not a number"))?;
    let factor = match unit {
        "" | "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return Err(err("unknown unit (use ns, us, ms, s)")),
    };
    if value < 0.0 || !value.is_finite() {
        return Err(err("must not be negative"));
    }
    Ok(value * factor)
}

/// Formats bytes with binary units, e.g. `27.6 MiB`, so tables stay narrow.
pub fn fmt_bytes(bytes: u64) -> String {
    let (v, i) = scaled(bytes);
    if i == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

/// Binary units of a size, smallest first.
const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];

/// `bytes` in the largest binary unit it reaches: (value, index in UNITS).
fn scaled(bytes: u64) -> (f64, usize) {
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    (v, i)
}

/// A size with as many decimals (one to three) as it takes to read true
/// beside the sizes it is compared with: `3.75 MiB` where `fmt_bytes`
/// says `3.8 MiB`, `8.04 MiB` for a knee between the rows `8.0 MiB` and
/// `10.0 MiB`, `1.47 MiB < 1.5 MiB`. Exact sizes keep one decimal.
pub fn fmt_bytes_precise(bytes: u64) -> String {
    let (v, i) = scaled(bytes);
    if i == 0 {
        return format!("{bytes} B");
    }
    let unit = 1024f64.powi(i as i32);
    for d in 1..3 {
        let shown: f64 = format!("{v:.d$}").parse().unwrap_or(v);
        // Within half a part in a thousand: the digits shown are the size.
        if ((shown * unit) - bytes as f64).abs() <= bytes as f64 * 5e-4 {
            return format!("{v:.d$} {}", UNITS[i]);
        }
    }
    format!("{v:.3} {}", UNITS[i])
}

/// A size as a flag or config value that reads back exactly: `16MiB`,
/// `640KiB`, or plain bytes when no binary unit divides it.
pub fn fmt_size_exact(bytes: u64) -> String {
    for (unit, div) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if bytes >= div && bytes.is_multiple_of(div) {
            return format!("{}{unit}", bytes / div);
        }
    }
    bytes.to_string()
}

/// A signed byte difference with binary units: `+1.5 MiB`, `-70.4 MiB`, `0 B`.
pub fn fmt_bytes_delta(delta: i64) -> String {
    let sign = match delta.signum() {
        1 => "+",
        -1 => "-",
        _ => "",
    };
    format!("{sign}{}", fmt_bytes(delta.unsigned_abs()))
}

/// What a trace's times count: nanoseconds (simulations, runtime traces,
/// Vela at its clock) or cycles of an unstated clock (NPU benchmark cases,
/// whose `*_ns` fields hold cycles by the trace format's contract). Views
/// print times through it so a cycle count never reads as milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Clock {
    #[default]
    Nanoseconds,
    Cycles,
}

impl Clock {
    /// A time or duration: `21.800 ms`, or `39,591 cyc`.
    pub fn fmt(self, t: u64) -> String {
        match self {
            Clock::Nanoseconds => fmt_ms(t),
            Clock::Cycles => format!("{} cyc", thousands(t)),
        }
    }
    /// A signed difference: `+6.778 ms`, `-1,200 cyc`.
    pub fn fmt_delta(self, delta: i64) -> String {
        let sign = if delta < 0 { "-" } else { "+" };
        format!("{sign}{}", self.fmt(delta.unsigned_abs()))
    }
    /// An axis label, as precise as the visible `span` needs.
    pub fn axis(self, t: u64, span: u64) -> String {
        match self {
            Clock::Nanoseconds if span >= 10_000_000 => format!("{:.1}ms", t as f64 / 1e6),
            Clock::Nanoseconds if span >= 100_000 => format!("{:.3}ms", t as f64 / 1e6),
            Clock::Nanoseconds => format!("{:.1}us", t as f64 / 1e3),
            Clock::Cycles if span >= 10_000_000 => format!("{:.1}Mcyc", t as f64 / 1e6),
            Clock::Cycles if span >= 10_000 => format!("{:.1}kcyc", t as f64 / 1e3),
            Clock::Cycles => format!("{t}cyc"),
        }
    }
}

/// An integer with thousands separators: `39,591`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A signed time difference in milliseconds: `+6.778 ms`, `-0.120 ms`.
pub fn fmt_ms_delta(delta: i64) -> String {
    let sign = if delta < 0 { "-" } else { "+" };
    format!("{sign}{}", fmt_ms(delta.unsigned_abs()))
}

/// The plural of a noun as these texts use them (`reload` -> `reloads`,
/// `pass` -> `passes`, `entry` -> `entries`, `time` -> `times`).
pub fn plural(noun: &str) -> String {
    if let Some(stem) = noun.strip_suffix('y') {
        if !stem.ends_with(['a', 'e', 'i', 'o', 'u']) {
            return format!("{stem}ies");
        }
    }
    if noun.ends_with(['s', 'x', 'z']) || noun.ends_with("ch") || noun.ends_with("sh") {
        return format!("{noun}es");
    }
    format!("{noun}s")
}

/// `n` and the noun, singular for one: `1 reload`, `2 reloads`, `0 round trips`.
pub fn count(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {}", plural(noun))
    }
}

/// The indefinite article for `word`: `an` before a vowel sound (`an
/// instrumented trace`, `an LRU run`), else `a`.
pub fn article(word: &str) -> &'static str {
    let w = word.trim_start();
    let first = w.chars().next().map(|c| c.to_ascii_lowercase());
    let acronym = w.chars().take(3).all(|c| c.is_ascii_uppercase()) && w.len() >= 2;
    match first {
        Some('a' | 'e' | 'i' | 'o') => "an",
        Some('u') if !w.to_ascii_lowercase().starts_with("us") => "an",
        // Letters read as a vowel sound in acronyms: an LRU, an ONNX, an HTML.
        Some('f' | 'h' | 'l' | 'm' | 'n' | 'r' | 's' | 'x') if acronym => "an",
        _ => "a",
    }
}

/// `a`/`an` and the word.
pub fn with_article(word: &str) -> String {
    format!("{} {word}", article(word))
}

/// A summary field's value for people: a count for `*_count` fields,
/// bytes with units otherwise.
pub fn fmt_bytes_or_count(field: &str, v: u64) -> String {
    if field.ends_with("_count") {
        v.to_string()
    } else {
        fmt_bytes(v)
    }
}

/// Formats nanoseconds as milliseconds with three decimals (`21.800 ms`).
pub fn fmt_ms(ns: u64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

/// A size in a TOML file: either an integer number of bytes or a string with a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size(pub u64);

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(u64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(n) => Ok(Size(n)),
            Raw::S(s) => parse_size(&s).map(Size).map_err(serde::de::Error::custom),
        }
    }
}

impl serde::Serialize for Size {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

/// A bandwidth in a TOML file: bytes/s as a number or a string such as `60GB/s`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bandwidth(pub f64);

impl<'de> Deserialize<'de> for Bandwidth {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(f64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(n) if n > 0.0 && n.is_finite() => Ok(Bandwidth(n)),
            Raw::N(n) => Err(serde::de::Error::custom(format!(
                "bandwidth must be positive, got {n}"
            ))),
            Raw::S(s) => parse_bandwidth(&s)
                .map(Bandwidth)
                .map_err(serde::de::Error::custom),
        }
    }
}

impl serde::Serialize for Bandwidth {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0)
    }
}

/// A compute rate in a TOML file (FLOP/s): number or string such as `4TFLOP/s`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlopRate(pub f64);

impl<'de> Deserialize<'de> for FlopRate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(f64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(n) if n > 0.0 && n.is_finite() => Ok(FlopRate(n)),
            Raw::N(n) => Err(serde::de::Error::custom(format!(
                "compute rate must be positive, got {n}"
            ))),
            Raw::S(s) => parse_flops(&s)
                .map(FlopRate)
                .map_err(serde::de::Error::custom),
        }
    }
}

impl serde::Serialize for FlopRate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0)
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&fmt_bytes(self.0))
    }
}

#[cfg(test)]
mod precise_tests {
    use super::*;

    #[test]
    fn sizes_keep_the_digits_a_comparison_needs() {
        assert_eq!(fmt_bytes_precise(3 * (1 << 20) + 3 * (1 << 18)), "3.75 MiB");
        assert_eq!(fmt_bytes_precise(8 << 20), "8.0 MiB");
        assert_eq!(fmt_bytes_precise((8.04 * 1048576.0) as u64), "8.04 MiB");
        assert_eq!(fmt_bytes_precise(1_540_000), "1.469 MiB");
        assert_eq!(fmt_bytes_precise(1_572_864), "1.5 MiB");
        assert_eq!(fmt_bytes_precise(640), "640 B");
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn clocks_print_their_own_unit() {
        assert_eq!(thousands(39_591), "39,591");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(Clock::Cycles.fmt(39_591), "39,591 cyc");
        assert_eq!(Clock::Nanoseconds.fmt(21_800_000), "21.800 ms");
        assert_eq!(Clock::Cycles.fmt_delta(-1_200), "-1,200 cyc");
        assert_eq!(Clock::Cycles.axis(19_795, 39_591), "19.8kcyc");
        assert_eq!(Clock::Nanoseconds.axis(19_795, 39_591), "19.8us");
    }

    use super::*;

    #[test]
    fn plurals_and_articles() {
        assert_eq!(count(1u64, "reload"), "1 reload");
        assert_eq!(count(2u64, "reload"), "2 reloads");
        assert_eq!(count(0u64, "round trip"), "0 round trips");
        assert_eq!(count(3u64, "time"), "3 times");
        assert_eq!(plural("entry"), "entries");
        assert_eq!(plural("pass"), "passes");
        assert_eq!(plural("day"), "days");
        assert_eq!(with_article("instrumented trace"), "an instrumented trace");
        assert_eq!(with_article("simulator trace"), "a simulator trace");
        assert_eq!(with_article("LRU run"), "an LRU run");
        assert_eq!(with_article("ONNX model"), "an ONNX model");
        assert_eq!(with_article("useful run"), "a useful run");
    }

    #[test]
    fn exact_sizes_and_deltas() {
        assert_eq!(fmt_size_exact(17 << 20), "17MiB");
        assert_eq!(fmt_size_exact(640 << 10), "640KiB");
        assert_eq!(fmt_size_exact(1000), "1000");
        assert_eq!(parse_size(&fmt_size_exact(17825792)).unwrap(), 17825792);
        assert_eq!(fmt_bytes_delta(-73859072), "-70.4 MiB");
        assert_eq!(fmt_bytes_delta(0), "0 B");
        assert_eq!(fmt_ms_delta(6_778_000), "+6.778 ms");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("32MiB").unwrap(), 32 * 1024 * 1024);
        assert_eq!(parse_size("16MB").unwrap(), 16_000_000);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("1.5KiB").unwrap(), 1536);
        assert_eq!(parse_size(" 2 GiB ").unwrap(), 2 << 30);
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("-5MB").is_err());
    }

    #[test]
    fn bandwidths() {
        assert_eq!(parse_bandwidth("60GB/s").unwrap(), 60e9);
        assert_eq!(parse_bandwidth("1GiB/s").unwrap(), 1073741824.0);
        assert_eq!(parse_bandwidth("5e9").unwrap(), 5e9);
        assert!(parse_bandwidth("0GB/s").is_err());
        assert!(parse_bandwidth("60GB").is_err());
    }

    #[test]
    fn rates_and_durations() {
        assert_eq!(parse_flops("4TFLOP/s").unwrap(), 4e12);
        assert_eq!(parse_flops("500GFLOPS").unwrap(), 500e9);
        assert_eq!(parse_duration_ns("1.5us").unwrap(), 1500.0);
        assert_eq!(parse_duration_ns("2ms").unwrap(), 2e6);
        assert_eq!(fmt_bytes(1536), "1.5 KiB");
        assert_eq!(fmt_ms(21_800_000), "21.800 ms");
    }
}

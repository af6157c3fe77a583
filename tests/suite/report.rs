//! `spillscope report`: every section present in markdown, JSON and HTML;
//! HTML self-contained with its three charts; numbers agree with the trace.

use crate::common::root;
use assert_cmd::Command;
use spillscope::analysis::report::build;
use spillscope::trace::Trace;
use std::path::Path;

fn bin() -> Command {
    Command::cargo_bin("spillscope").unwrap()
}

fn long_source_args() -> Vec<String> {
    [
        "report",
        root()
            .join("tests/data/long_source_encdec.json")
            .to_str()
            .unwrap(),
        "--capacity",
        "1600KiB",
        "--weights",
        "ignore",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn report_of_a_model_has_every_section_and_names_the_oscillating_tensor() {
    let o = bin().args(long_source_args()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = String::from_utf8(o.stdout).unwrap();
    for h in [
        "# spillscope report: long_source_encdec_6x6",
        "## Summary",
        "## Hotspots (by spill traffic)",
        "## Spill classification",
        "## Oscillating tensors",
        "## Worst round trips (by stall)",
        "## Suggestions (each re-simulated)",
        "## What-if: capacity",
    ] {
        assert!(md.contains(h), "missing {h}\n{md}");
    }
    assert!(md.contains("| enc5.ffn.norm | 512.0 KiB | 5 |"), "{md}");
    assert!(md.contains("pin enc5.ffn.norm"), "{md}");
}

#[test]
fn json_report_agrees_with_the_trace() {
    let mut args = long_source_args();
    args.extend(["--format".into(), "json".into()]);
    let o = bin().args(&args).output().unwrap();
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // The same run simulated directly.
    let tr_path = tempfile::tempdir().unwrap();
    let t = tr_path.path().join("t.json");
    let s = bin()
        .args([
            "sim",
            args[1].as_str(),
            "--capacity",
            "1600KiB",
            "--weights",
            "ignore",
            "--policy",
            "lru",
            "-o",
            t.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(s.status.success());
    let tr = Trace::load(&t).unwrap();
    assert_eq!(v["summary"]["latency_ns"], tr.summary.latency_ns);
    assert_eq!(v["summary"]["traffic_bytes"], tr.summary.traffic_bytes);
    assert_eq!(v["event_count"], tr.events.len());
    let c = &v["classification"];
    assert_eq!(
        c["capacity_count"].as_u64().unwrap() + c["lifetime_count"].as_u64().unwrap(),
        tr.summary.spill_count
    );
    assert_eq!(v["oscillating"][0]["name"], "enc5.ffn.norm");
    let rows = v["whatif"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 24);
    assert!(rows
        .windows(2)
        .all(|w| w[0]["capacity_bytes"].as_u64() < w[1]["capacity_bytes"].as_u64()));
    assert!(!v["suggestions"]["suggestions"]
        .as_array()
        .unwrap()
        .is_empty());
    // The library call gives the same report.
    let r = build(&tr);
    assert_eq!(r.summary.latency_ns, tr.summary.latency_ns);
    assert!(r.suggestions.is_none() && r.whatif.is_none());
}

/// The long-source sample's HTML report written with `-o`: its directory,
/// path, the arguments that wrote it, and the HTML.
fn html_report() -> (tempfile::TempDir, std::path::PathBuf, Vec<String>, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.html");
    let mut args = long_source_args();
    args.extend([
        "--format".into(),
        "html".into(),
        "-o".into(),
        out.to_str().unwrap().into(),
    ]);
    let o = bin().args(&args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&out).unwrap();
    (dir, out, args, html)
}

#[test]
fn html_report_is_self_contained_with_three_charts_and_atomic_output() {
    let (_dir, out, args, html) = html_report();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_eq!(html.matches("<svg").count(), 3, "live, bus, what-if");
    for t in [
        "Peak live vs capacity",
        "DRAM bus occupancy",
        "What-if: latency vs on-chip capacity",
    ] {
        assert!(html.contains(t), "{t}");
    }
    assert!(!html.contains("<script"), "no scripts");
    assert!(
        !html.contains("http://")
            || html.matches("http://").count()
                == html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count(),
        "no external assets"
    );
    assert!(html.ends_with("</html>\n"));
    // Not overwritten without --force.
    let before = std::fs::read(&out).unwrap();
    let o = bin().args(&args).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--force"));
    assert_eq!(std::fs::read(&out).unwrap(), before);
}

/// The HTML report fits a 1200 px window: every chart text lies inside its
/// picture (estimated at the 11 px font's widest average glyph, 6.5 px,
/// from where its anchor puts it), the legend sits above the plot, charts
/// shrink with the page, and tables holding names wrap them in a box that
/// scrolls rather than pushing the page wider. (Measured in a browser at
/// 1200 px on six reports: no table or page overflows.)
#[test]
fn html_report_fits_1200_px() {
    let (_dir, _out, _args, html) = html_report();
    let attr = |tag: &str, name: &str| -> Option<f64> {
        let (tag, k) = (format!(" {tag}"), format!(" {name}=\""));
        let i = tag.find(&k)? + k.len();
        tag[i..].split('"').next()?.parse().ok()
    };
    let mut texts = 0;
    for svg in html.split("<svg ").skip(1) {
        let svg = svg.split("</svg>").next().unwrap();
        let head = svg.split('>').next().unwrap();
        assert!(head.contains("max-width:100%"), "{head}");
        let width = attr(head, "width").unwrap();
        let height = attr(head, "height").unwrap();
        // The plot's top: the y axis starts there.
        let axis_top = svg
            .split("<line ")
            .filter_map(|l| {
                let (x1, x2) = (attr(l, "x1")?, attr(l, "x2")?);
                (x1 == x2).then(|| attr(l, "y1")).flatten()
            })
            .fold(f64::INFINITY, f64::min);
        for t in svg.split("<text ").skip(1) {
            let (tag, rest) = t.split_once('>').unwrap();
            let text = rest.split("</text>").next().unwrap();
            if tag.contains("rotate(") {
                continue;
            }
            let (x, y) = (attr(tag, "x").unwrap(), attr(tag, "y").unwrap());
            let w = text.chars().count() as f64 * 6.5;
            let (left, right) = if tag.contains("text-anchor=\"end\"") {
                (x - w, x)
            } else if tag.contains("text-anchor=\"middle\"") {
                (x - w / 2.0, x + w / 2.0)
            } else {
                (x, x + w)
            };
            assert!(
                left >= 0.0 && right <= width && y <= height,
                "{text:?} spans {left:.0}..{right:.0} of {width}"
            );
            texts += 1;
        }
        // The legend's rows end above the plot.
        for r in svg.split("<rect ").skip(1) {
            if attr(r, "width") == Some(10.0) {
                assert!(attr(r, "y").unwrap() < axis_top, "legend over the plot");
            }
        }
    }
    assert!(texts > 30, "{texts} texts checked");
    // Tables sit in scroll boxes; long-text columns wrap.
    assert_eq!(
        html.matches("<table>").count(),
        html.matches("<div class=\"t\"><table>").count()
    );
    assert!(html.contains("<td class=\"n\">"), "no name column wraps");
    assert!(html.contains(".t{overflow-x:auto"));
}

#[test]
fn report_of_an_imported_trace_says_why_it_cannot_suggest() {
    let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(|d| Path::new(&d).join("../shared/data/traces"))
        .filter(|d| d.exists())
    else {
        eprintln!("skipped: ../shared/data/traces absent");
        return;
    };
    let Some(f) = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| {
            p.to_string_lossy().contains("ort") || p.to_string_lossy().contains("onnxruntime")
        })
    else {
        eprintln!("skipped: no ONNX Runtime profile in {}", dir.display());
        return;
    };
    let o = bin()
        .args(["report", f.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = String::from_utf8(o.stdout).unwrap();
    assert!(md.contains("## Summary") && md.contains("## Hotspots"));
    assert!(
        md.contains("Note: suggestions, what-if and the exact optimum re-simulate"),
        "{md}"
    );
}

/// A profile that records no frees has no peak to be at: the report's
/// `at peak` column says `-` as the explorer does, never `0 B`.
#[test]
fn a_profile_without_frees_shows_no_at_peak_figure() {
    let p = root().join("../shared/data/traces/ort_squeezenet1_1.noopt.json");
    if !p.exists() {
        eprintln!("SKIP: {} is absent", p.display());
        return;
    }
    let o = bin().arg("report").arg(&p).output().unwrap();
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    let rows: Vec<&str> = text
        .split("## Hotspots")
        .nth(1)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("| /"))
        .collect();
    assert!(!rows.is_empty(), "{text}");
    for r in rows {
        let cells: Vec<&str> = r.split('|').map(str::trim).collect();
        assert_eq!(cells[9], "-", "{r}");
    }
}

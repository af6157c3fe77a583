//! Import speed: a 1,000,000-event Chrome trace, both a generic vendor-style
//! trace (slices + memory instant events) and spillscope's own Perfetto export
//! of a simulated run. Run: `cargo bench --bench import`.

use criterion::{criterion_group, criterion_main, Criterion};
use spillscope::trace::import::{import, Format, ImportOptions};
use std::io::Write;

fn vendor_trace(path: &std::path::Path, n: usize) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    f.write_all(b"{\"traceEvents\":[\n").unwrap();
    for i in 0..n {
        let ts = i as f64 * 1.5;
        let line = match i % 4 {
            0 => format!("{{\"ph\":\"X\",\"name\":\"kernel_{}\",\"cat\":\"npu\",\"ts\":{ts},\"dur\":1.2,\"pid\":1,\"tid\":1}}", i / 4),
            1 => format!("{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"a\",\"ts\":{ts},\"pid\":1,\"tid\":1,\"args\":{{\"kind\":\"alloc\",\"tensor\":\"t{}\",\"bytes\":4096,\"pool\":\"l1\"}}}}", i / 4),
            2 => format!("{{\"ph\":\"C\",\"name\":\"bw\",\"ts\":{ts},\"pid\":1,\"args\":{{\"value\":{}}}}}", (i % 100) as f64 / 100.0),
            _ => format!("{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"f\",\"ts\":{ts},\"pid\":1,\"tid\":1,\"args\":{{\"kind\":\"free\",\"tensor\":\"t{}\",\"bytes\":4096,\"pool\":\"l1\"}}}}", i / 4),
        };
        f.write_all(line.as_bytes()).unwrap();
        f.write_all(if i + 1 < n { b",\n" } else { b"\n" }).unwrap();
    }
    f.write_all(b"]}\n").unwrap();
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let vendor = dir.path().join("vendor.json");
    vendor_trace(&vendor, 1_000_000);
    eprintln!(
        "vendor trace: {:.0} MiB",
        std::fs::metadata(&vendor).unwrap().len() as f64 / (1 << 20) as f64
    );
    let g = spillscope::graph::gen::transformer_like(41_700, 64, 128);
    let mut hw = spillscope::cost::HardwareProfile::preset("seed-npu").unwrap();
    hw.memory.capacity.0 = 160 * 1024;
    let tr = spillscope::sim::simulate(&g, &hw, &spillscope::sim::SimConfig::default()).unwrap();
    let export = dir.path().join("export.json");
    std::fs::write(
        &export,
        spillscope::trace::export::to_chrome(&tr).to_string(),
    )
    .unwrap();
    eprintln!(
        "export of a {}-event trace: {:.0} MiB",
        tr.events.len(),
        std::fs::metadata(&export).unwrap().len() as f64 / (1 << 20) as f64
    );
    drop(tr);
    let mut grp = c.benchmark_group("import_1M_events");
    grp.sample_size(10);
    grp.bench_function("generic_chrome", |b| {
        b.iter(|| import(&vendor, Some(Format::Chrome), &ImportOptions::default()).unwrap())
    });
    grp.bench_function("spillscope_export", |b| {
        b.iter(|| import(&export, Some(Format::Chrome), &ImportOptions::default()).unwrap())
    });
    grp.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

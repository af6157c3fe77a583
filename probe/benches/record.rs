//! Cost per recorded event on the caller's thread: the probe (copy into a
//! per-thread lock-free ring) against the naive baseline, the C library's
//! `fprintf` of a JSON line per event (stdio's lock and buffer; and the same
//! with an `fflush` per event), and the background writer's throughput.
//! The probe is timed in batches that fit its ring, waiting (untimed) for
//! the writer between batches, so no event is dropped and none is measured
//! as a cheap drop.

use criterion::{criterion_group, criterion_main, Criterion};
use std::ffi::{c_char, c_int, c_void, CString};
use std::time::{Duration, Instant};

const BATCH: u64 = 32_768;

fn probe(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("spill-probe-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = spill_probe::Probe::open_with(dir.join("probe.jsonl"), 1 << 16).unwrap();
    let mut g = c.benchmark_group("record_event");
    g.measurement_time(Duration::from_secs(4));
    let rust = |name: &'static str| {
        move |i: u64| {
            spill_probe::alloc(
                std::hint::black_box(name),
                std::hint::black_box(4096 + i),
                "sram",
                Some(i * 64),
            )
        }
    };
    probe_bench(&mut g, "spill_probe::alloc", rust("layer3/conv2/output_0"));
    // Longer than the inline 80 bytes: interned, found in the thread's cache.
    probe_bench(
        &mut g,
        "spill_probe::alloc (100-byte name, interned)",
        rust("/model/decoder/layers.11/encoder_attn/k_proj/MatMul_output_0/with/a/very/long/suffix/to/pass/80/b"),
    );
    // What a C runtime pays: NUL-terminated strings measured per call.
    let (name, pool) = (c"layer3/conv2/output_0", c"sram");
    probe_bench(&mut g, "spill_probe_alloc (C ABI)", |i| {
        spill_probe::spill_probe_alloc(
            std::hint::black_box(name.as_ptr()),
            std::hint::black_box(4096 + i),
            pool.as_ptr(),
            (i * 64) as i64,
        )
    });
    let stats = p.close().unwrap();
    eprintln!(
        "probe: {} written, {} dropped",
        stats.written, stats.dropped
    );
    fprintf_baselines(&mut g, &dir);
    writer_throughput(&mut g, &dir);
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The probe timed in ring-sized batches with the writer drained between
/// them (untimed), so no event is measured as a cheap drop.
fn probe_bench(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    id: &str,
    record: impl Fn(u64),
) {
    g.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let n = left.min(BATCH);
                let t = Instant::now();
                for i in 0..n {
                    record(i);
                }
                timed += t.elapsed();
                left -= n;
                while spill_probe::backlog() > 0 {
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
            timed
        })
    });
}

extern "C" {
    fn fopen(path: *const c_char, mode: *const c_char) -> *mut c_void;
    fn fprintf(stream: *mut c_void, format: *const c_char, ...) -> c_int;
    fn fflush(stream: *mut c_void) -> c_int;
    fn fclose(stream: *mut c_void) -> c_int;
}

/// The seed's naive instrumentation: the C library's `fprintf` of one JSON
/// line per event (stdio's lock and buffer), with and without an `fflush`
/// per event.
fn fprintf_baselines(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    dir: &std::path::Path,
) {
    let path = CString::new(dir.join("fprintf.jsonl").to_str().unwrap()).unwrap();
    // SAFETY: plain C stdio calls on a stream this function opens and closes.
    let file = unsafe { fopen(path.as_ptr(), c"w".as_ptr()) };
    assert!(!file.is_null(), "fopen failed");
    let t0 = Instant::now();
    let format = c"{\"t_ns\":%llu,\"kind\":\"alloc\",\"tensor\":\"%s\",\"bytes\":%llu,\"pool\":\"%s\",\"offset\":%llu,\"thread\":%d}\n";
    for (id, flush) in [("fprintf_buffered", false), ("fprintf_flush_each", true)] {
        g.bench_function(id, |b| {
            let mut i = 0u64;
            b.iter(|| {
                i += 1;
                // SAFETY: the format's conversions match the arguments'
                // C types (unsigned long long, char *, int).
                unsafe {
                    fprintf(
                        file,
                        format.as_ptr(),
                        t0.elapsed().as_nanos() as u64,
                        std::hint::black_box(c"layer3/conv2/output_0".as_ptr()),
                        std::hint::black_box(4096 + i),
                        std::hint::black_box(c"sram".as_ptr()),
                        i * 64,
                        0 as c_int,
                    );
                    if flush {
                        fflush(file);
                    }
                }
            })
        });
    }
    // SAFETY: `file` came from fopen above and is closed once.
    unsafe { fclose(file) };
}

/// The background writer's cost per event (off the caller's thread, but it
/// decides how many events a busy runtime loses to full rings): a session
/// that records 60,000 events into a ring that holds them all, timed from
/// the first record until close returns with every line written.
fn writer_throughput(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    dir: &std::path::Path,
) {
    const EVENTS: u64 = 60_000;
    let path = dir.join("writer.jsonl");
    g.bench_function("writer: record then write, per event", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let n = left.min(EVENTS);
                let _ = std::fs::remove_file(&path);
                let p = spill_probe::Probe::open_with(&path, 1 << 16).unwrap();
                let t = Instant::now();
                for i in 0..n {
                    spill_probe::alloc("layer3/conv2/output_0", 4096 + i, "sram", Some(i * 64));
                }
                let stats = p.close().unwrap();
                timed += t.elapsed();
                assert_eq!((stats.written, stats.dropped), (n, 0));
                left -= n;
            }
            timed
        })
    });
}

criterion_group!(benches, probe);
criterion_main!(benches);

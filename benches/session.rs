//! The session's live figures: how long a stale job takes to stop once its
//! input changes (cancellation latency: a newer request submitted while the
//! bound is being solved, until the newer job's first update), and how long
//! a change takes to reach a final bound (submit until the bound of the new
//! run is posted), fresh and from the result cache. On a 1,000-op
//! transformer at 128 KiB and on DenseNet-121's layout at 4 MiB, both under
//! the default 5 s budget. Prints median and p95 of each.
//!
//! Run: `cargo bench --bench session` (`SPILLSCOPE_BENCH_TRIALS=N`, default
//! 20 cancellations and 5 fresh bounds per model).

use spillscope::graph::Graph;
use spillscope::session::cache::Cache;
use spillscope::session::{Budgets, Posted, Request, Session, Source, Stage, Update, Wants};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

fn write(g: &Graph, dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    let json = serde_json::to_string(&spillscope::graph::json::graph_to_json(g)).unwrap();
    std::fs::write(&p, json).unwrap();
    p
}

fn request(model: &Path, capacity: u64, cache: Option<Cache>) -> Request {
    let mut spec = spillscope::run::RunSpec::new(model);
    spec.flags.capacity = Some(capacity);
    Request {
        source: Source::Model(Box::new(spec)),
        wants: Wants {
            datasets: true,
            bound: true,
            suggestions: true,
            ..Default::default()
        },
        budgets: Budgets::default(),
        cache,
    }
}

fn next(rx: &Receiver<Posted>) -> Posted {
    rx.recv_timeout(Duration::from_secs(120))
        .expect("the session answers")
}

/// Waits for `generation`'s job to finish; the time its bound was posted.
fn until_done(rx: &Receiver<Posted>, generation: u64, since: Instant) -> Option<Duration> {
    let mut bound = None;
    loop {
        let p = next(rx);
        if p.generation != generation {
            continue;
        }
        match p.update {
            Update::Bounded { .. } => bound = Some(since.elapsed()),
            Update::Done | Update::Failed(_) => return bound,
            _ => {}
        }
    }
}

fn percentiles(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    let at = |q: f64| v[((v.len() as f64 - 1.0) * q).round() as usize];
    (at(0.5), at(0.95))
}

fn measure(name: &str, model: &Path, capacity: u64, other: u64, trials: usize) {
    let (tx, rx) = channel();
    let session = Session::spawn(move |p| {
        let _ = tx.send(p);
    });
    // Cancellation: into the bound, a pause, then a newer request.
    let mut latency = Vec::new();
    for i in 0..trials {
        let g = session.submit(request(model, capacity, None));
        loop {
            let p = next(&rx);
            if p.generation == g
                && matches!(p.update, Update::Progress(pr) if pr.stage == Stage::Bound)
            {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(100 + 37 * (i as u64 % 10)));
        let asked = Instant::now();
        let newer = session.submit(request(model, other, None));
        loop {
            let p = next(&rx);
            if p.generation == newer {
                latency.push(asked.elapsed());
                break;
            }
        }
        until_done(&rx, newer, asked);
    }
    let (m, p95) = percentiles(latency);
    println!("{name}: cancellation latency median {m:.1?}, p95 {p95:.1?} ({trials} changes)");
    // Change to final bound: fresh (no cache), then from the cache.
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::at(dir.path());
    let mut fresh = Vec::new();
    for _ in 0..(trials / 4).max(3) {
        let t = Instant::now();
        let g = session.submit(request(model, capacity, None));
        fresh.extend(until_done(&rx, g, t));
    }
    let t = Instant::now();
    let g = session.submit(request(model, capacity, Some(cache.clone())));
    until_done(&rx, g, t);
    let mut cached = Vec::new();
    for _ in 0..(trials / 4).max(3) {
        let t = Instant::now();
        let g = session.submit(request(model, capacity, Some(cache.clone())));
        cached.extend(until_done(&rx, g, t));
    }
    let (fm, fp) = percentiles(fresh);
    let (cm, cp) = percentiles(cached);
    println!(
        "{name}: change -> final bound median {fm:.1?} (p95 {fp:.1?}) fresh, {cm:.1?} (p95 {cp:.1?}) from the cache"
    );
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is read.
    let trials: usize = std::env::var("SPILLSCOPE_BENCH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let dir = tempfile::tempdir().unwrap();
    let tf = write(
        &spillscope::graph::gen::transformer_with_ops(1000),
        dir.path(),
        "transformer_1k.json",
    );
    let dn = write(
        &spillscope::graph::gen::densenet_like(&[6, 12, 24, 16]),
        dir.path(),
        "densenet121.json",
    );
    measure(
        "transformer 1k ops, 128 KiB",
        &tf,
        128 << 10,
        200 << 10,
        trials,
    );
    measure("DenseNet-121 layout, 4 MiB", &dn, 4 << 20, 8 << 20, trials);
}

//! Heap bytes of a loaded trace and of each of the view's analyses of it,
//! or of a graph JSON and its parts, counted by a global allocator (not
//! RSS): where a large trace's or graph's memory goes.
//! Usage: cargo run --release --example heap_parts -- TRACE.json
//!        cargo run --release --example heap_parts -- --graph GRAPH.json
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

struct Counting;
static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let n = NOW.fetch_add(l.size(), Relaxed) + l.size();
        PEAK.fetch_max(n, Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        NOW.fetch_sub(l.size(), Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        let now = NOW.fetch_add(n, Relaxed) + n;
        PEAK.fetch_max(now, Relaxed);
        NOW.fetch_sub(l.size(), Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
}
#[global_allocator]
static A: Counting = Counting;

fn mb(b: usize) -> String {
    format!("{:>8.1} MB", b as f64 / 1e6)
}

fn graph(p: &str) {
    let g = spillscope::graph::json::load_graph_json(std::path::Path::new(p)).unwrap();
    let (now, peak) = (NOW.load(Relaxed), PEAK.load(Relaxed));
    println!("graph {} (peak while loading {})", mb(now), mb(peak));
    println!(
        "  {} ops, {} tensors: {:.0} B per op, {:.0} B per tensor",
        g.ops.len(),
        g.tensors.len(),
        g.ops.heap_bytes() as f64 / g.ops.len().max(1) as f64,
        g.tensors.heap_bytes() as f64 / g.tensors.len().max(1) as f64
    );
    let b = NOW.load(Relaxed);
    let t = g.tensors.clone();
    println!("  tensors (a clone) {}", mb(NOW.load(Relaxed) - b));
    drop(t);
    let b = NOW.load(Relaxed);
    let o = g.ops.clone();
    println!("  ops (a clone) {}", mb(NOW.load(Relaxed) - b));
    drop(o);
    let b = NOW.load(Relaxed);
    let l = spillscope::graph::Liveness::compute(&g);
    println!("liveness {}", mb(NOW.load(Relaxed) - b));
    drop(l);
    // What a run that keeps only its summary needs on top of the graph.
    let b = NOW.load(Relaxed);
    PEAK.store(b, Relaxed);
    let hw = spillscope::cost::HardwareProfile::preset("seed-npu").unwrap();
    let cfg = spillscope::sim::SimConfig::with_policy(spillscope::sim::EvictionPolicy::Lru);
    let s = spillscope::sim::simulate_summary(
        &g,
        &hw,
        &cfg,
        None,
        &spillscope::cancel::Cancel::never(),
    )
    .unwrap();
    println!(
        "summary run: peak {} above the graph, {} kept",
        mb(PEAK.load(Relaxed) - b),
        mb(NOW.load(Relaxed) - b)
    );
    drop(s);
}

fn main() {
    use spillscope::analysis::*;
    let p = std::env::args()
        .nth(1)
        .expect("trace path (or --graph GRAPH.json)");
    if p == "--graph" {
        return graph(&std::env::args().nth(2).expect("graph path"));
    }
    let base = NOW.load(Relaxed);
    let tr = std::sync::Arc::new(spillscope::trace::Trace::load(std::path::Path::new(&p)).unwrap());
    let t_all = NOW.load(Relaxed) - base;
    println!("trace                {}", mb(t_all));
    let ev = tr.events.heap_bytes();
    println!("  events columns     {}", mb(ev));
    let before = NOW.load(Relaxed);
    let ops = tr.ops.clone();
    println!("  ops (a clone)      {}", mb(NOW.load(Relaxed) - before));
    drop(ops);
    let before = NOW.load(Relaxed);
    let ts = tr.tensors.clone();
    println!("  tensors (a clone)  {}", mb(NOW.load(Relaxed) - before));
    drop(ts);
    let m = |what: &str, f: &dyn Fn() -> Box<dyn std::any::Any>| {
        let (before, peak_before) = (NOW.load(Relaxed), PEAK.load(Relaxed));
        PEAK.store(before, Relaxed);
        let x = f();
        println!(
            "{what:<20} {} (peak {})",
            mb(NOW.load(Relaxed) - before),
            mb(PEAK.load(Relaxed) - before)
        );
        PEAK.fetch_max(peak_before, Relaxed);
        x
    };
    // The view's datasets as the session makes them: the quick one, then
    // the complete one beside it (the peak is where both are held).
    let (before, peak_before) = (NOW.load(Relaxed), PEAK.load(Relaxed));
    PEAK.store(before, Relaxed);
    let quick = spillscope::session::dataset::Dataset::quick("t", tr.clone());
    let quick_bytes = NOW.load(Relaxed) - before;
    let full = quick.completed();
    println!(
        "dataset quick {}, complete {} (peak {} above the trace)",
        mb(quick_bytes),
        mb(NOW.load(Relaxed) - before - quick_bytes),
        mb(PEAK.load(Relaxed) - before)
    );
    PEAK.fetch_max(peak_before, Relaxed);
    drop((quick, full));
    let ledger = spillscope::trace::ledger::Ledger::of(&tr);
    let _l = m("ledger (again)", &|| {
        Box::new(spillscope::trace::ledger::Ledger::of(&tr))
    });
    let _a = m("timeline index", &|| {
        Box::new(timeline::TimelineIndex::build(&tr, &ledger))
    });
    let _b = m("hotspots (the table)", &|| {
        Box::new(hotspots::Hotspots::of(&tr, &ledger))
    });
    let _b2 = m("hotspots (every row)", &|| {
        Box::new(hotspots::hotspots(&tr, &ledger))
    });
    drop(_b2);
    let _c = m("round trips (table)", &|| {
        Box::new(trip_table::Trips::of(&tr, &ledger))
    });
    let _c2 = m("round trips (rows)", &|| {
        Box::new(roundtrips::round_trips(&tr, &ledger))
    });
    drop(_c2);
    let _d = m("classification", &|| {
        Box::new(classify::classify_with_causes(&tr, &ledger))
    });
    let _e = m("placements", &|| Box::new(memmap::Placements::of(&tr)));
    let before = NOW.load(Relaxed);
    let (g, hw, _) = spillscope::analysis::suggest::inputs_of_trace(&tr).unwrap();
    println!(
        "{:<20} {}",
        "inputs of trace",
        mb(NOW.load(Relaxed) - before)
    );
    // The bound as the session solves it (5 s): the solver's peak above
    // what is held, and what its result keeps.
    let (before, peak_before) = (NOW.load(Relaxed), PEAK.load(Relaxed));
    PEAK.store(before, Relaxed);
    let pool = spillscope::sim::optimum::PoolSize::of(&hw);
    let limits = spillscope::sim::optimum::OptimumLimits {
        time_limit_s: 5.0,
        ..Default::default()
    };
    let o = spillscope::sim::optimum::optimal_traffic(&g, pool, limits);
    let (after, peak) = (NOW.load(Relaxed), PEAK.load(Relaxed));
    println!(
        "bound's solve        {} above what was held (peak), result {}",
        mb(peak - before),
        mb(after - before)
    );
    PEAK.fetch_max(peak_before, Relaxed);
    if let Some(p) = &o.plan {
        let n = p.tensors();
        let planned = (0..n).filter(|&t| p.keys(t).is_some()).count();
        let keys: usize = (0..n).filter_map(|t| p.keys(t)).map(|k| k.len()).sum();
        println!(
            "  plan: {n} tensors, {planned} planned, {keys} keys, {}",
            mb(p.heap_bytes())
        );
    }
    let before = NOW.load(Relaxed);
    drop(o);
    println!(
        "  of which freed with the result {}",
        mb(before - NOW.load(Relaxed))
    );
}

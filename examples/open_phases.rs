//! Times the parts of opening a large trace through the binary trace cache
//! and of its first frame's analyses, one after another: the open (the
//! cache's checksum and decode, or the JSON parse and the cache write), the
//! reference and range checks, the ledger, the classification and the
//! whole quick dataset, then the session's quick load the explorer's first
//! frame waits for. Prints each part's time.
//! Usage: cargo run --release --example open_phases -- TRACE.json CACHE_DIR
//! (run twice: the second run opens from the cache).
use std::time::Instant;
fn main() {
    let p = std::env::args().nth(1).expect("trace path");
    let dir = std::env::args().nth(2).expect("cache directory");
    let t = Instant::now();
    let store = spillscope::trace::store::TraceStore::at(dir);
    let (tr, how) = store.open(std::path::Path::new(&p)).unwrap();
    println!("open {how:?} {:?}", t.elapsed());
    let t = Instant::now();
    tr.check_refs().unwrap();
    println!("check_refs {:?}", t.elapsed());
    let t = Instant::now();
    tr.check_ranges().unwrap();
    println!("check_ranges {:?}", t.elapsed());
    let t = Instant::now();
    let l = spillscope::trace::ledger::Ledger::of(&tr);
    println!("ledger {:?}", t.elapsed());
    let t = Instant::now();
    let _c = spillscope::analysis::classify::classify(&tr, &l);
    println!("classify {:?}", t.elapsed());
    let tr = std::sync::Arc::new(tr);
    let t = Instant::now();
    let _d = spillscope::session::dataset::Dataset::quick("x", tr.clone());
    println!("quick {:?}", t.elapsed());
    // What the explorer's first frame waits for: the session's quick load.
    let mut opts = spillscope::session::TraceOpts::default();
    opts.import.store = Some(store);
    let src = spillscope::session::Source::Traces(vec![p.into()], opts);
    let t = Instant::now();
    let (d, _) = src.load_quick().unwrap();
    println!("load_quick {:?} ({} datasets)", t.elapsed(), d.len());
}

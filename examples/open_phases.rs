use std::time::Instant;
fn main() {
    let p = std::env::args().nth(1).unwrap();
    let dir = std::env::args().nth(2).unwrap();
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
}

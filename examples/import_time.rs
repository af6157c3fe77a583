//! Times importing a trace file. Usage: cargo run --release --example import_time -- FILE
fn main() {
    let p = std::env::args().nth(1).expect("file");
    if std::env::var_os("PHASES").is_some() {
        phases(&p);
    }
    let t = std::time::Instant::now();
    let (tr, w) =
        spillscope::trace::import::import(std::path::Path::new(&p), None, &Default::default())
            .unwrap();
    println!(
        "{:?}: {} ops, {} events, {} warnings",
        t.elapsed(),
        tr.ops.len(),
        tr.events.len(),
        w.len()
    );
}

#[allow(dead_code)]
fn phases(p: &str) {
    let t = std::time::Instant::now();
    let (evs, _) =
        spillscope::trace::import::chrome::read_file(std::path::Path::new(p), usize::MAX).unwrap();
    println!(
        "read_file (parse + sort): {:?} for {} events",
        t.elapsed(),
        evs.len()
    );
}

//! Several runtime threads recording at once through the safe Rust API.
//! Usage: cargo run -p spill-probe --example threads -- OUT.jsonl [THREADS] [OPS] [exit]
//! With `exit`, the program leaves through `std::process::exit` without
//! closing the probe: the probe flushes the stream at process exit.

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let out = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "threads.jsonl".into());
    let threads: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(4);
    let ops: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let probe = spill_probe::Probe::open(&out)?;
    // Each worker places its tensors in its own 1 MiB window.
    spill_probe::pool("sram", (threads as u64) << 20, 4096);
    std::thread::scope(|s| {
        for w in 0..threads {
            s.spawn(move || {
                for i in 0..ops {
                    let op = format!("w{w}/op{i}");
                    let t = format!("w{w}/t{i}");
                    spill_probe::op_begin(&op);
                    spill_probe::alloc(
                        &t,
                        4096,
                        "sram",
                        Some(((w as u64) << 20) | ((i as u64 % 64) * 4096)),
                    );
                    if i % 7 == 3 {
                        spill_probe::evict(&t, 4096, "sram", None);
                        spill_probe::reload(
                            &t,
                            4096,
                            "sram",
                            Some(((w as u64) << 20) | ((i as u64 % 64) * 4096)),
                        );
                    }
                    spill_probe::free(&t, "sram");
                    spill_probe::op_end();
                }
            });
        }
    });
    if args.get(4).map(String::as_str) == Some("exit") {
        std::mem::forget(probe);
        std::process::exit(0);
    }
    let stats = probe.close()?;
    println!(
        "{out}: {} events written, {} dropped, {} threads",
        stats.written, stats.dropped, stats.threads
    );
    Ok(())
}

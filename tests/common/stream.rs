//! The synthetic runtime stream of `scripts/jsonl_stream.py` (64 ops per
//! iteration, an eviction and reload every 8 ops, a stream out and in every
//! 16, tensors at fixed offsets of a 1 MiB pool), for benches and tests
//! that follow a long live stream.

/// The pool line a stream starts with.
pub const POOL_LINE: &str =
    r#"{"kind":"pool","pool":"sram","capacity_bytes":1048576,"alignment":64}"#;

/// The lines of op `n` of the stream, starting at `t`; returns the next time.
pub fn op_lines(n: u64, mut t: u64, out: &mut Vec<String>) -> u64 {
    let i = n % 64;
    let size = 4096 * (1 + i % 8);
    let skip = 15 * 65536 + 8192 * ((i / 8) % 4);
    let mem = |out: &mut Vec<String>,
               t: u64,
               kind: &str,
               tensor: String,
               bytes: u64,
               extra: &str| {
        out.push(format!(
            r#"{{"t_ns":{t},"kind":"{kind}","tensor":"{tensor}","bytes":{bytes},"pool":"sram","thread":0{extra}}}"#
        ));
    };
    out.push(format!(
        r#"{{"t_ns":{t},"kind":"op_begin","op":"layer{i:02}","thread":0}}"#
    ));
    t += 10;
    if i % 16 == 5 {
        mem(out, t, "stream_out", format!("partial{i:02}"), 262144, "");
        t += 10;
    }
    if i % 16 == 6 {
        mem(
            out,
            t,
            "stream_in",
            format!("partial{:02}", i - 1),
            262144,
            "",
        );
        t += 10;
    }
    if i % 8 == 6 {
        let at = format!(r#","offset":{skip}"#);
        mem(out, t, "reload", format!("skip{:02}", i - 6), 8192, &at);
        t += 10;
    }
    let at = format!(r#","offset":{}"#, (i % 15) * 65536);
    mem(out, t, "alloc", format!("act{i:02}"), size, &at);
    t += 10;
    if i % 8 == 6 {
        mem(out, t, "free", format!("skip{:02}", i - 6), 8192, "");
        t += 10;
    }
    if i.is_multiple_of(8) {
        let at = format!(r#","offset":{skip}"#);
        mem(out, t, "alloc", format!("skip{i:02}"), 8192, &at);
        t += 10;
        mem(
            out,
            t,
            "evict",
            format!("skip{i:02}"),
            8192,
            r#","written_bytes":8192"#,
        );
        t += 10;
    }
    if n > 0 {
        let p = (n - 1) % 64;
        mem(out, t, "free", format!("act{p:02}"), 4096 * (1 + p % 8), "");
        t += 10;
    }
    out.push(format!(r#"{{"t_ns":{t},"kind":"op_end","thread":0}}"#));
    t + 10
}

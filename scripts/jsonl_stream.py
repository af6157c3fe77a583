#!/usr/bin/env python3
"""Appends a synthetic runtime's JSONL stream (docs/jsonl.md) at a steady
rate, for measuring `spillscope view FILE --watch` over a long live run.

    scripts/jsonl_stream.py run.jsonl --ops-per-s 20000 --seconds 600

The runtime loops over a 64-op model: each op allocates its output at a
fixed offset of a 1 MiB SRAM pool and frees its input; every 8th op evicts
a skip connection (written back) that op+6 reloads, every 16th streams a
large partial result out, which the next op streams in. Tensor names repeat each iteration, as a runtime's do.
Lines are written in batches every 10 ms, whole lines only; the script
prints how many ops it wrote and at what rate it kept up.
"""

import argparse
import sys
import time

OPS = 64
SRAM = 1 << 20


def op_lines(t, it, i):
    """The lines of op `i` of iteration `it` starting at time `t`."""
    out = []
    name = f"layer{i:02d}"
    act = f"act{i:02d}"
    prev = f"act{(i - 1) % OPS:02d}"
    size = 4096 * (1 + i % 8)
    off = (i % 15) * 65536

    def mem(kind, tensor, nbytes, extra=""):
        out.append(
            f'{{"t_ns":{t},"kind":"{kind}","tensor":"{tensor}","bytes":{nbytes},'
            f'"pool":"sram","thread":0{extra}}}'
        )

    out.append(f'{{"t_ns":{t},"kind":"op_begin","op":"{name}","thread":0}}')
    t += 10
    # A large partial result written straight to DRAM, read back by the next op.
    if i % 16 == 5:
        mem("stream_out", f"partial{i:02d}", 262144)
        t += 10
    if i % 16 == 6:
        mem("stream_in", f"partial{i - 1:02d}", 262144)
        t += 10
    # The skip connection evicted by op i-6 comes back.
    if i % 8 == 6:
        mem("reload", f"skip{i - 6:02d}", 8192, f',"offset":{15 * 65536 + 8192 * ((i // 8) % 4)}')
        t += 10
    mem("alloc", act, size, f',"offset":{off}')
    t += 10
    if i % 8 == 6:
        mem("free", f"skip{i - 6:02d}", 8192)
        t += 10
    if i % 8 == 0:
        mem("alloc", f"skip{i:02d}", 8192, f',"offset":{15 * 65536 + 8192 * ((i // 8) % 4)}')
        t += 10
        mem("evict", f"skip{i:02d}", 8192, ',"written_bytes":8192')
        t += 10
    if i > 0 or it > 0:
        mem("free", prev, 4096 * (1 + (i - 1) % 8))
        t += 10
    out.append(f'{{"t_ns":{t},"kind":"op_end","thread":0}}')
    return out, t + 10


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path")
    ap.add_argument("--ops-per-s", type=float, default=20000)
    ap.add_argument("--seconds", type=float, default=60)
    a = ap.parse_args()
    t = 1_000_000_000
    ops = 0
    start = time.monotonic()
    with open(a.path, "w") as f:
        f.write(f'{{"kind":"pool","pool":"sram","capacity_bytes":{SRAM},"alignment":64}}\n')
        f.flush()
        while True:
            now = time.monotonic() - start
            if now >= a.seconds:
                break
            due = int(now * a.ops_per_s)
            batch = []
            while ops < due:
                lines, t = op_lines(t, ops // OPS, ops % OPS)
                batch.extend(lines)
                ops += 1
            if batch:
                f.write("\n".join(batch) + "\n")
                f.flush()
            time.sleep(0.01)
    took = time.monotonic() - start
    print(f"{ops} ops in {took:.1f} s ({ops / took:.0f} ops/s)", file=sys.stderr)


if __name__ == "__main__":
    main()

"""Rows per second of a sweep on this machine, and what a Ray task costs.

    python3 python/bench/sweep_bench.py [MODEL ...]

1. `whatif` in-process (rayon on every core): rows/s.
2. `sweep(backend="local")`: a process pool of one worker per core.
3. `sweep(backend="ray")` on a local cluster (`ray.init(num_cpus=cores)`),
   and Ray's overhead per task: one-row tasks submitted and awaited one at
   a time through Ray, minus the same calls in-process, per task.
Medians of 3 runs.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import spillscope

ROOT = Path(__file__).resolve().parents[2]
models = sys.argv[1:] or [
    str(ROOT / "tests/data/encoder_decoder.json"),
    str(ROOT / "tests/data/long_source_encdec.json"),
]
def main() -> None:
    cores = os.cpu_count() or 1
    grid = {"capacities": [f"{k * 16}KiB" for k in range(1, 257)], "policies": ["lru", "belady", "lifetime", "ideal"]}
    rows_per_sweep = len(models) * len(grid["capacities"]) * len(grid["policies"])


    def median_time(f, n=3):
        ts = []
        for _ in range(n):
            t = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t)
        return statistics.median(ts)


    t = median_time(lambda: [spillscope.whatif(m, capacities=grid["capacities"], policies=grid["policies"]) for m in models])
    print(f"whatif in-process: {rows_per_sweep} rows in {t:.2f} s = {rows_per_sweep / t:.0f} rows/s ({cores} cores)")
    t = median_time(lambda: spillscope.sweep(models, grid, backend="local", workers=cores))
    print(f"sweep local ({cores} processes): {rows_per_sweep / t:.0f} rows/s")
    try:
        import ray
    except ImportError:
        print("Ray not installed: skipped")
        return
    ray.init(num_cpus=cores, include_dashboard=False)
    t = median_time(lambda: spillscope.sweep(models, grid, backend="ray", shards=cores))
    print(f"sweep ray ({cores} cpus, {cores} shards per model): {rows_per_sweep / t:.0f} rows/s")
    tiny = {"capacities": ["1MiB"], "policies": ["lru"]}
    tasks = 64
    direct = median_time(lambda: [spillscope.shard_sweep(models[0], tiny, 1, 1) for _ in range(tasks)])


    @ray.remote
    def one(m):
        return spillscope.shard_sweep(m, tiny, 1, 1)


    ray.get([one.remote(models[0]) for _ in range(cores)])  # warm the workers
    # One task at a time, submitted and awaited: the round trip Ray adds to
    # the same work done in-process.
    viaray = median_time(lambda: [ray.get(one.remote(models[0])) for _ in range(tasks)])
    per = (viaray - direct) / tasks
    print(f"Ray overhead per task: {1000 * per:.1f} ms ({1000 * viaray / tasks:.1f} ms per task via Ray vs {1000 * direct / tasks:.1f} ms in-process)")
    ray.shutdown()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Regenerates every measured table in the docs from the command that
measures it, so no table is edited by hand.

A table in a doc sits between two markers naming its generator:

    <!-- table: floor (cargo bench --bench floor) -->
    | ... |
    <!-- /table -->

Usage:
    python3 scripts/tables.py                 # every table (slow: benchmarks)
    python3 scripts/tables.py seed floor      # only these
    python3 scripts/tables.py --list          # the generators and what they run
    python3 scripts/tables.py --check seed    # exit 1 if the docs differ (no write)

Benchmarks run in release mode on this machine; their tables say which
machine in the text around them. The sample tables (`seed`, `edge`,
`encdec`) are the `sim` tables `scripts/regen-samples.sh` writes beside
each sample, and `tests/suite/docs.rs` checks them, the key table
(`keys`) and the walkthrough on every CI run.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = os.environ.get("SPILLSCOPE_BIN", str(ROOT / "target/release/spillscope"))
MARK = re.compile(r"<!-- table: (?P<name>[\w-]+)[^>]*-->\n(?P<body>.*?)<!-- /table -->", re.S)


def run(cmd, **kw):
    """stdout of `cmd` (a list), run from the checkout's root."""
    return subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True, **kw).stdout


def table_lines(text):
    """The first markdown table in `text`, and any line right after it
    that summarises it (starts with a digit and names cases)."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("|"))
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return "\n".join(lines[start:end]) + "\n"


def sample(name):
    return lambda: table_lines((ROOT / f"sample-traces/{name}.md").read_text())


def floor():
    out = run(["cargo", "bench", "-q", "--bench", "floor"])
    t = table_lines(out)
    # The bench's summary line (worst and median ratios) follows the table.
    summary = [l for l in out.splitlines() if re.match(r"^\d+ cases:", l)]
    return t + ("\n" + summary[0] + "\n" if summary else "")


def script(path):
    def gen():
        build_release()
        return table_lines(run(["bash", path, BIN]))

    return gen


def executorch(which):
    """One of the ExecuTorch tables (scripts/executorch_table.sh)."""
    return lambda: table_lines(run(["bash", "scripts/executorch_table.sh",
                                    str(ROOT.parent / "shared/data/executorch"), which]))


def build_release():
    if not Path(BIN).exists():
        run(["cargo", "build", "-q", "--release"])


# (bench, criterion id prefix, ids, what, target): one row per entry, the
# medians of its ids joined with " / ".
SPEED_ROWS = [
    ("sim", "resnet50_b8_32MiB", ["ideal", "lru", "belady", "lifetime", "all_four"],
     "simulate ResNet-50 batch 8 (122 ops): ideal / lru / belady / lifetime / all four", "well under 1 s"),
    ("explorer", "explorer_1M_events", ["open_to_first_frame"],
     "explorer: open a 1,000,000-event trace to the first frame", "< 2 s"),
    ("explorer", "explorer_1M_events", ["background_analyses"],
     "explorer: the background analyses of that trace", ""),
    ("explorer", "explorer_1M_events",
     ["timeline_fit", "timeline_zoom_1pct", "timeline_zoom_deep", "timeline_pan_deep", "overview",
      "hotspots", "tensor", "memory_fit", "memory_zoom"],
     "explorer: one frame at 120x40 (timeline fit / 1 % / deep / panning, overview, hotspots, tensor, memory fit / zoom)",
     "< 16 ms"),
    ("import", "import_1M_events", ["generic_chrome"],
     "import a 1,000,000-event vendor Chrome trace", "< 3 s"),
    ("import", "import_1M_events", ["spillscope_export"],
     "re-import spillscope's own Perfetto export of a 1M-event run", ""),
    ("whatif", "whatif", ["resnet50_b8_64_capacities"],
     "`whatif`: 64-point capacity sweep of ResNet-50 batch 8", "< 5 s"),
    ("scale", "transformer_100k_ops", ["ideal", "lru", "belady", "lifetime"],
     "simulate a generated 100,008-op transformer: ideal / lru / belady / lifetime", "< 1 s"),
    ("onnx_scale", "onnx_100k_nodes", ["load (shapes from value_info)", "load + lru, belady, lifetime"],
     "load a 99,999-node ONNX model (shapes from value_info) / and simulate three policies", "< 3 s"),
    ("stream", "stream_window", ["read_20k_ops"],
     "live JSONL in the default window (131,072 events): read and trim 20,000 ops (one second at 20,000 ops/s)", "< 1 s"),
    ("stream", "stream_window", ["snapshot", "quick_dataset", "complete_analyses"],
     "live JSONL: one refresh of that window (snapshot / quick dataset / complete analyses)", ""),
    ("stream", "stream_window", ["frame_overview", "frame_timeline", "frame_hotspots", "frame_memory"],
     "live JSONL: one frame of that window at 120x40 (overview, timeline, hotspots, memory)", "< 16 ms"),
]


def fmt_ns(ns):
    for unit, div in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= div:
            return f"{ns / div:.3g} {unit}" if ns / div < 100 else f"{ns / div:.0f} {unit}"
    return f"{ns:.0f} ns"


def criterion_median(group, id):
    """Criterion's median for `group/id` from its last run, in ns."""
    d = ROOT / "target/criterion" / group / id.replace("/", "_") / "new/estimates.json"
    if not d.exists():
        # Criterion replaces some characters in directory names.
        d = ROOT / "target/criterion" / group / re.sub(r"[^\w .,+-]", "_", id) / "new/estimates.json"
    return json.loads(d.read_text())["median"]["point_estimate"]


def speed():
    for bench in sorted({r[0] for r in SPEED_ROWS}):
        run(["cargo", "bench", "-q", "--bench", bench])
    rows = ["| what | median | target |", "|---|---|---|"]
    for _, group, ids, what, target in SPEED_ROWS:
        cells = " / ".join(fmt_ns(criterion_median(group, i)) for i in ids)
        rows.append(f"| {what} | {cells} | {target} |")
    return "\n".join(rows) + "\n"


def cores():
    """`whatif --cores` on the bundled ResNet-50 batch 8: each core count
    runs its share of the batch, capacities per core, one DRAM bus."""
    build_release()
    out = run([BIN, "whatif", "sample-traces/resnet50_b8.shapes.onnx", "--capacity", "4MiB,16MiB",
               "--cores", "1,2,4,8", "--policy", "lru", "--ilp-time", "0", "--format", "json", "--no-cache"])
    runs = json.loads(out)["runs"]
    one = {r["capacity_bytes"]: r["latency_ns"] for r in runs if r.get("cores", 1) == 1}
    mib = lambda b: f"{b / 2**20:.1f} MiB"
    ms = lambda ns: f"{ns / 1e6:.3f} ms"
    rows = ["| capacity per core | cores | latency | speed-up | spill traffic | stall | of which bus contention |",
            "|---|---|---|---|---|---|---|"]
    for r in sorted(runs, key=lambda r: (r["capacity_bytes"], r.get("cores", 1))):
        k = r.get("cores", 1)
        rows.append(f"| {mib(r['capacity_bytes'])} | {k} | {ms(r['latency_ns'])} | "
                    f"{one[r['capacity_bytes']] / r['latency_ns']:.2f}x | {mib(r['traffic_bytes'])} | "
                    f"{ms(r['stall_ns'])} | {ms(r['contention_ns']) if k > 1 else '-'} |")
    return "\n".join(rows) + "\n"


def keys():
    """The explorer's key table, printed from the key table itself."""
    return run(["cargo", "run", "-q", "--example", "key_table"])


GENERATORS = {
    "seed": (sample("seed-resnet50-b3"), "sample-traces/seed-resnet50-b3.md (scripts/regen-samples.sh)"),
    "edge": (sample("edge-resnet50-b3"), "sample-traces/edge-resnet50-b3.md (scripts/regen-samples.sh)"),
    "encdec": (sample("encdec-1mib"), "sample-traces/encdec-1mib.md (scripts/regen-samples.sh)"),
    "floor": (floor, "cargo bench --bench floor"),
    "vela": (script("scripts/vela-table.sh"), "scripts/vela-table.sh"),
    "npu": (script("scripts/npu-table.sh"), "scripts/npu-table.sh"),
    "npu-ttq": (script("scripts/npu-time-to-quality.sh"), "scripts/npu-time-to-quality.sh"),
    "speed": (speed, "cargo bench --bench sim/explorer/import/whatif/scale/onnx_scale/stream (criterion medians)"),
    "keys": (keys, "cargo run --example key_table"),
    "cores": (cores, "spillscope whatif resnet50_b8 --capacity 4MiB,16MiB --cores 1,2,4,8 --policy lru"),
    "executorch-arenas": (executorch("arenas"), "scripts/executorch_table.sh DATA arenas"),
    "executorch-banked": (executorch("banked"), "scripts/executorch_table.sh DATA banked"),
}


def docs():
    return [p for p in [*ROOT.glob("*.md"), *ROOT.glob("docs/*.md"), ROOT / "python/README.md",
                        ROOT / "probe/README.md"] if p.exists()]


def main(argv):
    check = "--check" in argv
    names = [a for a in argv if not a.startswith("--")]
    if "--list" in argv:
        for n, (_, what) in GENERATORS.items():
            print(f"{n:8} {what}")
        return 0
    unknown = [n for n in names if n not in GENERATORS]
    if unknown:
        print(f"tables.py: no generator named {', '.join(unknown)} (--list shows them)", file=sys.stderr)
        return 2
    wanted = names or list(GENERATORS)
    made = {}
    stale = []
    for path in docs():
        text = path.read_text()
        def replace(m):
            name = m.group("name")
            if name not in wanted:
                return m.group(0)
            if name not in made:
                print(f"generating {name}: {GENERATORS[name][1]}", file=sys.stderr)
                made[name] = GENERATORS[name][0]()
            if made[name] != m.group("body"):
                stale.append(f"{path.relative_to(ROOT)}: {name}")
            # The markers kept, the body between them replaced.
            head = m.group(0)[: m.start("body") - m.start()]
            return head + made[name] + "<!-- /table -->"
        new = MARK.sub(replace, text)
        if new != text and not check:
            path.write_text(new)
    for s in stale:
        print(("stale " if check else "updated ") + s, file=sys.stderr)
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

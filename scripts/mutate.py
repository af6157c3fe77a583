#!/usr/bin/env python3
"""Outside-in mutation of every input kind against the real binary.

Each round takes a seed input (a graph JSON, an ONNX model, a trace, a
JSONL stream, a PyTorch profile, an NPU case, a hardware profile, a
schedule config), damages it (bytes flipped or cut; in JSON and TOML,
values replaced by extremes: NaN, inf, 1e308, -1, 2^64, control
characters, a 100 kB string; keys dropped) and runs the command that reads
it. A round fails when the binary

  - panics (exit 101, or "panicked" on standard error),
  - runs past its time limit (a hang: `--time` and budgets ignored),
  - exits other than 0, 1 or 2, or fails with other than one error line
    (warnings aside),
  - prints a raw escape or control character (a name driving the terminal),
  - or exits 0 having written a trace that `verify` then cannot load.

Usage: scripts/mutate.py [--bin PATH] [--seconds N] [--seed S] [--keep DIR]
Exits 1 naming each failing input (kept under --keep, default a temporary
directory that is then left in place), 0 when every round held.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXTREMES = [
    float("nan"), float("inf"), -float("inf"), 1e308, -1, -1e308, 2**64, 2**63, 2**62, 0,
    "NaN", "inf", "", "\x1b]52;c;ZXZpbA==\x07", "\x1b[2J", "\u009b2J", "x" * 100_000, None, [], {},
]


def jdump(v) -> str:
    # NaN and inf as JSON has them nowhere: written as the bare words some
    # tools emit.
    return json.dumps(v, allow_nan=True)


def mutate_json(text: str, rng: random.Random) -> str:
    try:
        v = json.loads(text)
    except ValueError:
        return mutate_bytes(text.encode(), rng).decode("utf-8", "replace")
    paths = []

    def walk(x, path):
        paths.append(path)
        if isinstance(x, dict):
            for k, y in x.items():
                walk(y, path + [k])
        elif isinstance(x, list):
            for i, y in enumerate(x[:50]):
                walk(y, path + [i])

    walk(v, [])
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(paths[1:] or [[]])
        if not path:
            break
        parent = v
        try:
            for p in path[:-1]:
                parent = parent[p]
            if rng.random() < 0.15 and isinstance(parent, dict):
                parent.pop(path[-1], None)
            else:
                parent[path[-1]] = rng.choice(EXTREMES)
        except (KeyError, IndexError, TypeError):
            continue
    return jdump(v)


def mutate_lines(text: str, rng: random.Random) -> str:
    lines = text.splitlines()
    for _ in range(rng.randint(1, 3)):
        if not lines:
            break
        i = rng.randrange(len(lines))
        lines[i] = mutate_json(lines[i], rng)
    return "\n".join(lines) + "\n"


def mutate_toml(text: str, rng: random.Random) -> str:
    lines = text.splitlines()
    vals = ["nan", "inf", "-inf", "1e308", "-1", "-1e308", "18446744073709551616", '"x"',
            '"\\u001b]0;t\\u0007"', "[]", "{}", '"' + "y" * 100_000 + '"']
    for _ in range(rng.randint(1, 2)):
        cand = [i for i, l in enumerate(lines) if "=" in l]
        if not cand:
            break
        i = rng.choice(cand)
        key = lines[i].split("=", 1)[0]
        lines[i] = f"{key}= {rng.choice(vals)}"
    return "\n".join(lines) + "\n"


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    if not b:
        return bytes(b)
    r = rng.random()
    if r < 0.3:
        return bytes(b[: rng.randrange(len(b))])
    for _ in range(rng.randint(1, 16)):
        b[rng.randrange(len(b))] = rng.randrange(256)
    return bytes(b)


class Harness:
    def __init__(self, binary: str, keep: Path):
        self.bin = binary
        self.keep = keep
        self.failures: list[str] = []
        self.rounds = 0

    def run(self, args: list[str], timeout: float) -> tuple[int | None, str, bytes]:
        try:
            p = subprocess.run([self.bin, *args], capture_output=True, timeout=timeout,
                               env={**os.environ, "SPILLSCOPE_CACHE_DIR": str(self.keep / "cache")})
            return p.returncode, p.stderr.decode("utf-8", "replace"), p.stdout
        except subprocess.TimeoutExpired:
            return None, "", b""

    def check(self, kind: str, case: Path, args: list[str], out: Path | None, timeout: float):
        self.rounds += 1
        code, err, stdout = self.run(args, timeout)
        why = None
        if code is None:
            why = f"ran past {timeout:.0f} s"
        elif code == 101 or "panicked" in err:
            why = "panicked: " + err.strip().splitlines()[0][:200] if err.strip() else "panicked"
        elif code not in (0, 1, 2):
            why = f"exit {code}"
        elif code == 2 and (
            sum(l.startswith("spillscope: error:") for l in err.splitlines()) != 1
            or any(l.strip() and "error" not in l and "warning" not in l for l in err.splitlines())
        ):
            why = "not one error line: " + err.strip()[:200]
        elif any(c in stdout for c in (b"\x1b", b"\x07", b"\xc2\x9b")) or "\x1b" in err:
            why = "a raw control character reached the terminal"
        elif code == 0 and out is not None and out.exists():
            vcode, verr, _ = self.run(["verify", str(out)], 60)
            if vcode == 2:
                why = "wrote a trace verify cannot load: " + verr.strip()[:200]
        if why:
            kept = self.keep / f"fail-{len(self.failures)}-{case.name}"
            shutil.copy(case, kept)
            self.failures.append(f"{kind}: {' '.join(args)[:160]}: {why} (input kept as {kept})")
        if out is not None and out.exists():
            out.unlink()


def seeds(work: Path, binary: str) -> list[tuple[str, Path]]:
    s = [
        ("graph", ROOT / "tests/data/encoder_decoder.json"),
        ("onnx", ROOT / "sample-traces/resnet18.shapes.onnx"),
        ("trace", ROOT / "sample-traces/encdec-1mib.lru.json"),
        ("hw", ROOT / "profiles/edge-npu-16m.toml"),
        ("sched", ROOT / "tests/data/round3/recompute_unknown.toml"),
        ("npu", ROOT / "tests/data/round3/npu_zero_size_buffers.json"),
    ]
    # A valid NPU case and a valid JSONL stream, made fresh.
    npu = work / "seed_npu.json"
    subprocess.run([binary, "npu", "gen", "matmul", "2", "2", "2", "-o", str(npu), "--force"],
                   capture_output=True)
    s.append(("npu", npu))
    jl = work / "seed.jsonl"
    lines = ['{"kind":"pool","pool":"sram","capacity_bytes":4096}']
    for i in range(20):
        lines.append(f'{{"t_ns":{i*10},"kind":"op_begin","op":"op{i}"}}')
        lines.append(f'{{"t_ns":{i*10+1},"kind":"alloc","tensor":"t{i}","bytes":256,"pool":"sram"}}')
        lines.append(f'{{"t_ns":{i*10+5},"kind":"op_end"}}')
    jl.write_text("\n".join(lines) + "\n")
    s.append(("jsonl", jl))
    sched = work / "seed_sched.toml"
    sched.write_text('policy = "lru"\nprefetch_distance = 2\nweights = "stream"\n')
    s.append(("sched", sched))
    torch = work / "seed_torch.json"
    ev = [{"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "pid": 1, "tid": 1, "ts": 0, "dur": 10, "args": {}},
          {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 2,
           "args": {"Addr": 4096, "Bytes": 1024, "Total Allocated": 1024, "Device Type": 0}}]
    torch.write_text(json.dumps({"traceEvents": ev, "schemaVersion": 1}))
    s.append(("torch", torch))
    return [(k, p) for k, p in s if p.exists()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=str(ROOT / "target/debug/spillscope"))
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", default=None)
    a = ap.parse_args()
    if not Path(a.bin).exists():
        print(f"mutate: no binary at {a.bin} (cargo build first)", file=sys.stderr)
        return 2
    keep = Path(a.keep or tempfile.mkdtemp(prefix="spillscope-mutate-"))
    keep.mkdir(parents=True, exist_ok=True)
    h = Harness(a.bin, keep)
    rng = random.Random(a.seed)
    model = str(ROOT / "tests/data/encoder_decoder.json")
    base = seeds(keep, a.bin)
    start = time.monotonic()
    i = 0
    while time.monotonic() - start < a.seconds:
        kind, seed = base[i % len(base)]
        i += 1
        raw = seed.read_bytes()
        text = raw.decode("utf-8", "replace")
        case = keep / f"case{seed.suffix}"
        if kind == "onnx":
            case.write_bytes(mutate_bytes(raw, rng))
        elif kind in ("hw", "sched"):
            case.write_text(mutate_toml(text, rng))
        elif kind == "jsonl":
            case.write_text(mutate_lines(text, rng))
        else:
            case.write_text(mutate_json(text, rng))
        out = keep / "out.json"
        c = str(case)
        commands = {
            "graph": [["sim", c, "--policy", "lru", "--capacity", "1MiB", "--ilp-time", "0.5", "-o", str(out)]],
            "onnx": [["sim", c, "--policy", "lru", "--capacity", "1MiB", "--ilp-time", "0.5", "-o", str(out)]],
            "trace": [["verify", c], ["import", c, "-o", str(out)], ["diff", c, c]],
            "jsonl": [["import", c, "-o", str(out)]],
            "torch": [["import", c, "-o", str(out)]],
            "npu": [["npu", "import", c, "-o", str(out)], ["npu", "schedule", c, "--time", "1s"]],
            "hw": [["sim", model, "--hw", c, "--policy", "lru", "--ilp-time", "0.5", "-o", str(out)]],
            "sched": [["sim", model, "--config", c, "--policy", "lru", "--ilp-time", "0.5", "-o", str(out)]],
        }[kind]
        for args in commands:
            h.check(kind, case, args, out if "-o" in args else None, timeout=60)
    print(f"mutate: {h.rounds} runs over {len(base)} seed inputs in {time.monotonic() - start:.0f} s "
          f"(seed {a.seed}): {len(h.failures)} failed")
    for f in h.failures[:50]:
        print("  " + f)
    if not h.failures and not a.keep:
        shutil.rmtree(keep, ignore_errors=True)
    return 1 if h.failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""The Python API against the command line: the same figures, the same
rows, the same error text. Tests that read ../shared/data skip with a
printed reason when it is absent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

import spillscope

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"


def cli_bin() -> str:
    env = os.environ.get("SPILLSCOPE_BIN")
    if env:
        return env
    for p in (ROOT / "target" / "release" / "spillscope", ROOT / "target" / "debug" / "spillscope"):
        if p.exists() and p.stat().st_size > 0:
            return str(p)
    pytest.skip("no spillscope binary built (cargo build), set SPILLSCOPE_BIN")


def cli(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run([cli_bin(), *args], capture_output=True, text=True)
    if ok:
        assert r.returncode == 0, r.stderr
    return r


def shared(sub: str) -> Path:
    p = SHARED / sub
    if not p.exists():
        print(f"SKIP: {p} is absent (tests that read ../shared/data are skipped)")
        pytest.skip(f"{p} is absent")
    return p


ENCDEC = ROOT / "tests" / "data" / "encoder_decoder.json"


def test_simulate_equals_sim_json_field_for_field():
    model = shared("models/squeezenet1_1.shapes.onnx")
    want = json.loads(cli("sim", str(model), "--capacity", "1540KiB", "--policy", "lru,belady", "--format", "json").stdout)
    runs = spillscope.simulate(model, capacity="1540KiB", policy=["lru", "belady"])
    assert [r.summary for r in runs] == want["runs"]
    # The same from the file's bytes, and with the capacity as an int.
    one = spillscope.simulate(model.read_bytes(), capacity=1540 * 1024, policy="lru")
    assert one.summary == want["runs"][0]
    # The trace is the one `sim -o` writes.
    t = one.trace
    assert t.summary["traffic_bytes"] == one.summary["traffic_bytes"]
    assert len(t.ops) > 0 and len(t.events) > 0 and len(t.tensors) > 0
    assert json.loads(t.to_json())["schema"] == "spillscope.trace/1"


def test_tflite_and_rewrites_go_through_the_same_spec():
    model = shared("vela/mobilenet_v2/mobilenet_v2_int8.tflite")
    want = json.loads(
        cli("sim", str(model), "--hw", "ethos-u65-high-end", "--capacity", "256KiB", "--policy", "planned", "--format", "json").stdout
    )
    run = spillscope.simulate(model, hardware="ethos-u65-high-end", capacity="256KiB", policy="planned")
    assert run.summary == want["runs"][0]
    fused = spillscope.simulate(ENCDEC, capacity="1MiB", policy="lru", fuse=True, dtype="fp16")
    want = json.loads(cli("sim", str(ENCDEC), "--capacity", "1MiB", "--policy", "lru", "--fuse", "--dtype", "fp16", "--format", "json").stdout)
    assert fused.summary == want["runs"][0]


def test_hotspots_and_round_trips_add_up_to_the_ledger(tmp_path):
    run = spillscope.simulate(ENCDEC, capacity="1MiB", policy="lru")
    hs = run.hotspots()
    assert sum(h["traffic_bytes"] for h in hs) == run.summary["traffic_bytes"]
    trips = run.round_trips()
    assert trips, "the encoder-decoder at 1 MiB has round trips"
    out = tmp_path / "t.json"
    run.trace.save(out)
    assert spillscope.load_trace(out).summary == run.summary


def test_load_trace_equals_cli_import(tmp_path):
    traces = shared("traces")
    files = sorted(p for p in traces.iterdir() if p.suffix in (".json", ".jsonl"))
    assert files
    for f in files:
        out = tmp_path / (f.stem + ".spill.json")
        cli("import", str(f), "-o", str(out))
        want = json.loads(out.read_text())
        got = json.loads(spillscope.load_trace(f).trace.to_json())
        assert got == want, f
    vela = shared("vela/mobilenet_v2/u65_dedicated_perf_256k_nocascade")
    out = tmp_path / "vela.json"
    cli("import", str(vela), "-o", str(out))
    assert json.loads(spillscope.load_trace(vela).trace.to_json()) == json.loads(out.read_text())


def cli_error(*args: str) -> str:
    r = cli(*args, ok=False)
    assert r.returncode == 2, r
    assert r.stderr.startswith("spillscope: error: "), r.stderr
    return r.stderr.strip()[len("spillscope: error: "):]


def test_errors_carry_the_cli_text(tmp_path):
    missing = tmp_path / "missing.onnx"
    with pytest.raises(spillscope.InputError) as e:
        spillscope.simulate(missing, capacity="1MiB")
    assert str(e.value) == cli_error("sim", str(missing), "--capacity", "1MiB")
    # A trace where a model is expected.
    trace = tmp_path / "t.json"
    spillscope.simulate(ENCDEC, capacity="1MiB", policy="lru").trace.save(trace)
    with pytest.raises(spillscope.InputError) as e:
        spillscope.simulate(trace, capacity="1MiB")
    assert str(e.value) == cli_error("sim", str(trace), "--capacity", "1MiB")
    # Not a model at all.
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x00\x01not a model")
    with pytest.raises(spillscope.InputError) as e:
        spillscope.simulate(junk, capacity="1MiB")
    assert str(e.value) == cli_error("sim", str(junk), "--capacity", "1MiB")
    # A bad capacity.
    with pytest.raises(spillscope.ConfigError) as e:
        spillscope.simulate(ENCDEC, capacity="4XB")
    assert str(e.value) in cli_error("sim", str(ENCDEC), "--capacity", "4XB")
    with pytest.raises(spillscope.ConfigError):
        spillscope.simulate(ENCDEC, capacity="1MiB", policy="fifo")
    assert issubclass(spillscope.InputError, spillscope.Error)
    assert issubclass(spillscope.ConfigError, spillscope.Error)


def test_whatif_sweeps_core_counts_as_the_cli_does():
    args = ["--capacity", "512KiB,1MiB", "--cores", "1,2", "--ilp-time", "0", "--format", "json"]
    whole = json.loads(cli("whatif", str(ENCDEC), *args).stdout)["runs"]
    rows = spillscope.whatif(ENCDEC, capacities=["512KiB", "1MiB"], cores=[1, 2], ilp_time=0)
    assert rows == whole
    assert [r.get("cores", 1) for r in rows] == [1, 1, 2, 2]
    assert all("contention_ns" in r for r in rows[2:])


def test_whatif_rows_equal_the_cli_and_shards_merge_byte_for_byte(tmp_path):
    args = ["--capacity", "256KiB..4MiB:256KiB", "--policy", "lru,belady,lifetime", "--format", "json"]
    whole = cli("whatif", str(ENCDEC), *args).stdout
    caps = [f"{k * 256}KiB" for k in range(1, 17)]
    rows = spillscope.whatif(ENCDEC, capacities=caps, policies=["lru", "belady", "lifetime"])
    assert rows == json.loads(whole)["runs"]
    shards = [spillscope.shard_sweep(str(ENCDEC), {"capacities": caps, "policies": ["lru", "belady", "lifetime"]}, k, 3) for k in (1, 2, 3)]
    assert spillscope.merge(reversed(shards)) == whole
    # The CLI's shards merge to the same bytes, and to the Python shards'.
    files = []
    for k in (1, 2, 3):
        p = tmp_path / f"s{k}.json"
        p.write_text(cli("whatif", str(ENCDEC), *args, "--shard", f"{k}/3").stdout)
        assert json.loads(p.read_text()) == json.loads(shards[k - 1])
        files.append(str(p))
    assert cli("merge", *files).stdout == whole
    # Shards of another grid are refused in one line.
    other = spillscope.shard_sweep(str(ENCDEC), {"capacities": ["1MiB"], "policies": ["lru"]}, 2, 3)
    with pytest.raises(spillscope.ConfigError, match="different sweep"):
        spillscope.merge([shards[0], other, shards[2]])


def test_suggest_equals_the_cli():
    want = json.loads(cli("suggest", str(ENCDEC), "--capacity", "1MiB", "--format", "json").stdout)
    assert spillscope.suggest(ENCDEC, capacity="1MiB") == want


def test_ctrl_c_interrupts_a_long_sweep():
    # 40,000 points: several seconds at full speed on two cores; SIGINT
    # after 0.3 s must end it within a chunk.
    caps = [f"{k}KiB" for k in range(64, 64 + 20000)]
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            spillscope.whatif(ENCDEC, capacities=caps, policies=["lru", "belady"])
    finally:
        timer.cancel()
    assert time.perf_counter() - start < 2.0


def test_local_sweep_rows_are_the_per_model_whatif_rows():
    grid = {"capacities": ["512KiB", "1MiB", "2MiB"], "policies": ["lru", "belady"]}
    rows = spillscope.sweep([ENCDEC], grid, backend="local", workers=2)
    want = spillscope.whatif(ENCDEC, capacities=grid["capacities"], policies=grid["policies"])
    assert [{k: v for k, v in r.items() if k != "model"} for r in rows] == want
    assert all(r["model"] == str(ENCDEC) for r in rows)


def test_ray_sweep_equals_the_local_sweep():
    try:
        import ray
    except ImportError:
        print("SKIP: Ray is not installed (pip install './python[ray]')")
        pytest.skip("Ray is not installed")
    models = [str(ENCDEC), str(ROOT / "tests" / "data" / "long_source_encdec.json")]
    grid = {"capacities": [f"{k * 256}KiB" for k in range(1, 17)], "policies": ["lru", "belady"]}
    local = spillscope.sweep(models, grid, backend="local", workers=2)
    assert len(local) == 2 * 16 * 2
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True)
    try:
        assert spillscope.sweep(models, grid, backend="ray", shards=2) == local
    finally:
        ray.shutdown()


def test_rows_convert_without_pandas_logic():
    rows = spillscope.whatif(ENCDEC, capacities=["1MiB"], policies=["lru"])
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError):
            spillscope.rows_to_dataframe(rows)
        return
    df = spillscope.rows_to_dataframe(rows)
    assert list(df["traffic_bytes"]) == [rows[0]["traffic_bytes"]]

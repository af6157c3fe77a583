"""spillscope for Python: memory spill in neural-network graphs, measured.

Mirrors the library, not the command line: ``simulate`` a model (path or
bytes) and read its ``Run`` (summary ledger, trace, hotspots, round
trips); ``load_trace`` any trace spillscope imports; ``whatif`` sweeps
capacities x bandwidths x policies into the rows ``spillscope whatif
--format json`` prints; ``suggest`` re-simulated changes; ``sweep`` fans a
grid over many models out to a process pool or a Ray cluster. Errors are
``spillscope.Error`` subclasses carrying the command line's one-line text.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from . import _native
from ._native import ConfigError, Error, InputError

__all__ = [
    "Error",
    "InputError",
    "ConfigError",
    "Run",
    "Trace",
    "simulate",
    "load_trace",
    "whatif",
    "suggest",
    "merge",
    "sweep",
    "shard_sweep",
    "rows_to_dataframe",
    "parse_size",
]

Model = Union[str, os.PathLike, bytes]
Size = Union[str, int]

_REWRITES = ("fuse", "dtype", "order", "recompute", "weights", "pins", "prefetch")


def parse_size(size: Size) -> int:
    """``"4MiB"`` (or an int of bytes) as bytes; ConfigError when malformed."""
    if isinstance(size, bool):
        raise ConfigError(f"capacity {size!r}: give bytes or a size like \"4MiB\"")
    if isinstance(size, int):
        if size <= 0:
            raise ConfigError(f"capacity {size}: must be greater than zero")
        return size
    if isinstance(size, str):
        return _native.parse_size(size)
    raise ConfigError(f"capacity {size!r}: give bytes or a size like \"4MiB\"")


def _options(
    capacity: Optional[Size] = None,
    policy: Optional[Union[str, Sequence[str]]] = None,
    hardware: Optional[str] = None,
    config: Optional[Union[str, os.PathLike]] = None,
    bandwidth: Optional[float] = None,
    ilp_time: Optional[float] = None,
    **rewrites: Any,
) -> str:
    unknown = sorted(set(rewrites) - set(_REWRITES))
    if unknown:
        raise ConfigError(f"unknown option {unknown[0]!r} (rewrites: {', '.join(_REWRITES)})")
    o: Dict[str, Any] = {k: v for k, v in rewrites.items() if v is not None}
    if capacity is not None:
        o["capacity"] = parse_size(capacity)
    if policy is not None:
        o["policy"] = policy if isinstance(policy, str) else ",".join(policy)
    if hardware is not None:
        o["hardware"] = str(hardware)
    if config is not None:
        o["config"] = os.fspath(config)
    if bandwidth is not None:
        o["bandwidth"] = float(bandwidth)
    if ilp_time is not None:
        o["ilp_time"] = float(ilp_time)
    return json.dumps(o)


class _ModelPath:
    """A model given as a path, or as bytes written to a temporary file
    whose suffix says what it is (TFLite, graph JSON, else ONNX)."""

    def __init__(self, model: Model):
        self._tmp: Optional[str] = None
        if isinstance(model, (bytes, bytearray, memoryview)):
            data = bytes(model)
            if data[4:8] == b"TFL3":
                suffix = ".tflite"
            elif data.lstrip()[:1] == b"{":
                suffix = ".json"
            else:
                suffix = ".onnx"
            fd, self._tmp = tempfile.mkstemp(prefix="spillscope-", suffix=suffix)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            self.path = self._tmp
        else:
            self.path = os.fspath(model)

    def __enter__(self) -> str:
        return self.path

    def __exit__(self, *exc: object) -> None:
        if self._tmp is not None:
            os.unlink(self._tmp)


class Trace:
    """A ``spillscope.trace/1`` trace (docs/trace-format.md) as Python data."""

    def __init__(self, data: Dict[str, Any]):
        self._data = data

    @property
    def events(self) -> List[Dict[str, Any]]:
        return self._data["events"]

    @property
    def ops(self) -> List[Dict[str, Any]]:
        return self._data["ops"]

    @property
    def tensors(self) -> List[Dict[str, Any]]:
        return self._data["tensors"]

    @property
    def summary(self) -> Dict[str, Any]:
        return self._data["summary"]

    @property
    def meta(self) -> Dict[str, Any]:
        return self._data["meta"]

    def to_json(self) -> str:
        return json.dumps(self._data)

    def save(self, path: Union[str, os.PathLike]) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json())

    def __repr__(self) -> str:
        return f"<Trace {self.meta.get('model')!r} [{self.meta.get('policy')}]: {len(self.ops)} ops, {len(self.events)} events>"


class Run:
    """One simulated run, or one imported trace."""

    def __init__(self, native: Any):
        self._native = native
        self._summary: Optional[Dict[str, Any]] = None
        self._trace: Optional[Trace] = None

    @property
    def summary(self) -> Dict[str, Any]:
        """The ledger row, field for field what ``sim --format json`` prints."""
        if self._summary is None:
            self._summary = json.loads(self._native.summary_json())
        return self._summary

    @property
    def policy(self) -> str:
        return self.summary["policy"]

    @property
    def trace(self) -> Trace:
        if self._trace is None:
            self._trace = Trace(json.loads(self._native.trace_json()))
        return self._trace

    def hotspots(self) -> List[Dict[str, Any]]:
        """Per-op spill cost (the explorer's Hotspots), in op order."""
        return json.loads(self._native.hotspots_json())

    def round_trips(self) -> List[Dict[str, Any]]:
        """Per-tensor round trips (evicted or streamed out, then back)."""
        return json.loads(self._native.round_trips_json())

    def __repr__(self) -> str:
        s = self.summary
        return f"<Run {s['policy']} at {s['capacity_bytes']} B: traffic {s['traffic_bytes']} B, latency {s['latency_ns']} ns>"


def simulate(
    model: Model,
    *,
    capacity: Optional[Size] = None,
    policy: Optional[Union[str, Sequence[str]]] = None,
    hardware: Optional[str] = None,
    config: Optional[Union[str, os.PathLike]] = None,
    bandwidth: Optional[float] = None,
    ilp_time: Optional[float] = None,
    **rewrites: Any,
) -> Union[Run, List[Run]]:
    """Simulates ``model`` (a path or the file's bytes). One policy gives a
    ``Run``; several (``"lru,belady"``, ``["lru", "planned"]`` or
    ``"all"``) a list in that order; none named (here or in the config)
    runs them all, as ``sim`` does. Rewrites: ``fuse``, ``dtype``,
    ``order``, ``recompute``, ``weights``, ``pins``, ``prefetch``. The
    precedence is the command line's: defaults < hardware < config <
    arguments."""
    opts = _options(capacity, policy, hardware, config, bandwidth, ilp_time, **rewrites)
    with _ModelPath(model) as path:
        runs = [Run(r) for r in _native.simulate(path, opts)]
    return runs[0] if len(runs) == 1 else runs


def load_trace(path: Union[str, os.PathLike]) -> Run:
    """Any trace spillscope imports: its own, ONNX Runtime, PyTorch, Chrome,
    JSONL, or a Vela output directory."""
    return Run(_native.load_trace(os.fspath(path)))


def whatif(
    model: Model,
    *,
    capacities: Sequence[Size] = (),
    policies: Optional[Sequence[str]] = None,
    bandwidths: Optional[Sequence[float]] = None,
    hardware: Optional[str] = None,
    config: Optional[Union[str, os.PathLike]] = None,
    shard: Optional[Tuple[int, int]] = None,
    ilp_time: Optional[float] = None,
    cores: Optional[Sequence[int]] = None,
    **rewrites: Any,
) -> List[Dict[str, Any]]:
    """One row per configuration (capacity fastest, then bandwidth, then
    core count, then policy): the rows of ``spillscope whatif --format
    json``. ``ilp_time``: seconds each capacity's bound may take (``whatif
    --ilp-time``); ``cores``: core counts sharing the bus (``whatif
    --cores``)."""
    return json.loads(_whatif_text(model, capacities, policies, bandwidths, hardware, config, shard, ilp_time=ilp_time, cores=cores, **rewrites))["runs"]


def _whatif_text(
    model: Model,
    capacities: Sequence[Size],
    policies: Optional[Sequence[str]],
    bandwidths: Optional[Sequence[float]],
    hardware: Optional[str],
    config: Optional[Union[str, os.PathLike]],
    shard: Optional[Tuple[int, int]],
    ilp_time: Optional[float] = None,
    cores: Optional[Sequence[int]] = None,
    **rewrites: Any,
) -> str:
    opts = _options(None, policies, hardware, config, None, ilp_time, **rewrites)
    caps = [parse_size(c) for c in capacities]
    with _ModelPath(model) as path:
        return _native.whatif(path, opts, caps, list(bandwidths) if bandwidths else None, shard, list(cores) if cores else None)


def suggest(
    model: Model,
    *,
    capacity: Optional[Size] = None,
    policy: Optional[str] = None,
    hardware: Optional[str] = None,
    config: Optional[Union[str, os.PathLike]] = None,
    **rewrites: Any,
) -> Dict[str, Any]:
    """Re-simulated changes sorted by time saved (``suggest --format json``)."""
    opts = _options(capacity, policy, hardware, config, None, None, **rewrites)
    with _ModelPath(model) as path:
        return json.loads(_native.suggest(path, opts))


def merge(shards: Iterable[str]) -> str:
    """Shard documents (``whatif --shard K/N --format json`` texts) joined
    into exactly the unsharded document."""
    return _native.merge(list(shards))


def shard_sweep(model: str, grid: Dict[str, Any], index: int, count: int) -> str:
    """Shard ``index``/``count`` (1-based) of ``grid`` on ``model``: the
    document ``whatif --shard K/N --format json`` prints. What every
    backend of ``sweep`` runs, one call per task."""
    g = dict(grid)
    return _whatif_text(
        model,
        g.pop("capacities", ()),
        g.pop("policies", None),
        g.pop("bandwidths", None),
        g.pop("hardware", None),
        g.pop("config", None),
        (index, count),
        **g,
    )


def sweep(
    models: Sequence[Union[str, os.PathLike]],
    grid: Dict[str, Any],
    *,
    backend: str = "local",
    shards: Optional[int] = None,
    workers: Optional[int] = None,
) -> List[Dict[str, Any]]:
    """Every model x every configuration of ``grid`` (keys ``capacities``,
    ``policies``, ``bandwidths``, ``hardware``, ``config`` and rewrites).
    The grid of each model is cut into ``shards`` slices (default: the
    workers available); ``backend="local"`` runs them on a process pool,
    ``backend="ray"`` as one Ray task per (model, shard) on the cluster
    ``ray.init`` connected to (``ray.init(address=...)``; a local one is
    started when none is). Rows come back in the order of the local sweep,
    each with its ``model``."""
    models = [os.fspath(m) for m in models]
    if backend == "ray":
        from ._ray import run_tasks
    elif backend == "local":
        from ._local import run_tasks
    else:
        raise ConfigError(f"backend {backend!r}: use \"local\" or \"ray\"")
    n = shards or workers or os.cpu_count() or 1
    tasks = [(m, grid, k, n) for m in models for k in range(1, n + 1)]
    docs = run_tasks(tasks, workers)
    rows: List[Dict[str, Any]] = []
    for i, m in enumerate(models):
        merged = json.loads(merge(docs[i * n : (i + 1) * n]))
        for r in merged["runs"]:
            rows.append({"model": m, **r})
    return rows


def rows_to_dataframe(rows: List[Dict[str, Any]], library: str = "pandas") -> Any:
    """Rows (from ``whatif`` or ``sweep``) as a pandas or polars DataFrame;
    neither is a dependency of spillscope."""
    if library == "pandas":
        import pandas as pd  # type: ignore

        return pd.DataFrame.from_records(rows)
    if library == "polars":
        import polars as pl  # type: ignore

        return pl.DataFrame(rows)
    raise ConfigError(f"library {library!r}: use \"pandas\" or \"polars\"")

import os
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union, overload

Model = Union[str, os.PathLike[str], bytes]
Size = Union[str, int]

class Error(Exception):
    """Any spillscope error; ``str(e)`` is the command line's one-line message."""

class InputError(Error):
    """A model or trace that cannot be read: missing, of the wrong kind, damaged."""

class ConfigError(Error):
    """A bad setting: capacity, bandwidth, policy, hardware profile, schedule config."""

class Trace:
    """A ``spillscope.trace/1`` trace (docs/trace-format.md)."""
    @property
    def events(self) -> List[Dict[str, Any]]: ...
    @property
    def ops(self) -> List[Dict[str, Any]]: ...
    @property
    def tensors(self) -> List[Dict[str, Any]]: ...
    @property
    def summary(self) -> Dict[str, Any]: ...
    @property
    def meta(self) -> Dict[str, Any]: ...
    def to_json(self) -> str: ...
    def save(self, path: Union[str, os.PathLike[str]]) -> None: ...

class Run:
    """One simulated run, or one imported trace."""
    @property
    def summary(self) -> Dict[str, Any]:
        """The ledger row, field for field what ``sim --format json`` prints."""
    @property
    def policy(self) -> str: ...
    @property
    def trace(self) -> Trace: ...
    def hotspots(self) -> List[Dict[str, Any]]: ...
    def round_trips(self) -> List[Dict[str, Any]]: ...

def parse_size(size: Size) -> int: ...
def simulate(
    model: Model,
    *,
    capacity: Optional[Size] = ...,
    policy: Optional[Union[str, Sequence[str]]] = ...,
    hardware: Optional[str] = ...,
    config: Optional[Union[str, os.PathLike[str]]] = ...,
    bandwidth: Optional[float] = ...,
    ilp_time: Optional[float] = ...,
    fuse: Optional[bool] = ...,
    dtype: Optional[str] = ...,
    order: Optional[str] = ...,
    recompute: Optional[bool] = ...,
    weights: Optional[str] = ...,
    pins: Optional[Sequence[str]] = ...,
    prefetch: Optional[int] = ...,
) -> Union[Run, List[Run]]: ...
def load_trace(path: Union[str, os.PathLike[str]]) -> Run: ...
def whatif(
    model: Model,
    *,
    capacities: Sequence[Size] = ...,
    policies: Optional[Sequence[str]] = ...,
    bandwidths: Optional[Sequence[float]] = ...,
    hardware: Optional[str] = ...,
    config: Optional[Union[str, os.PathLike[str]]] = ...,
    shard: Optional[Tuple[int, int]] = ...,
    ilp_time: Optional[float] = ...,
    fuse: Optional[bool] = ...,
    dtype: Optional[str] = ...,
    order: Optional[str] = ...,
    recompute: Optional[bool] = ...,
    weights: Optional[str] = ...,
    pins: Optional[Sequence[str]] = ...,
    prefetch: Optional[int] = ...,
) -> List[Dict[str, Any]]: ...
def suggest(
    model: Model,
    *,
    capacity: Optional[Size] = ...,
    policy: Optional[str] = ...,
    hardware: Optional[str] = ...,
    config: Optional[Union[str, os.PathLike[str]]] = ...,
    fuse: Optional[bool] = ...,
    dtype: Optional[str] = ...,
    order: Optional[str] = ...,
    recompute: Optional[bool] = ...,
    weights: Optional[str] = ...,
    pins: Optional[Sequence[str]] = ...,
    prefetch: Optional[int] = ...,
) -> Dict[str, Any]: ...
def merge(shards: Iterable[str]) -> str: ...
def shard_sweep(model: str, grid: Dict[str, Any], index: int, count: int) -> str: ...
def sweep(
    models: Sequence[Union[str, os.PathLike[str]]],
    grid: Dict[str, Any],
    *,
    backend: str = ...,
    shards: Optional[int] = ...,
    workers: Optional[int] = ...,
) -> List[Dict[str, Any]]: ...
def rows_to_dataframe(rows: List[Dict[str, Any]], library: str = ...) -> Any: ...

"""The Ray backend of ``spillscope.sweep``: one Ray task per (model, shard)
on the cluster ``ray.init`` connected to (a local one is started when Ray
is not initialised). Needs ``pip install ./python[ray]``."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple


def run_tasks(tasks: Sequence[Tuple[str, Any, int, int]], workers: Optional[int]) -> List[str]:
    """Each task's shard document, in task order."""
    try:
        import ray
    except ImportError as e:  # depends on the optional extra
        from . import ConfigError

        raise ConfigError("backend=\"ray\" needs Ray: pip install './python[ray]'") from e
    if not ray.is_initialized():
        ray.init(num_cpus=workers)

    @ray.remote
    def shard(model: str, grid: Any, index: int, count: int) -> str:
        from spillscope import shard_sweep

        return shard_sweep(model, grid, index, count)

    return ray.get([shard.remote(*t) for t in tasks])

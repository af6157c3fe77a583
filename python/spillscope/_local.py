"""The local backend of ``spillscope.sweep``: a process pool, one task per
(model, shard); each task's simulations use every core of its process."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import Any, List, Optional, Sequence, Tuple


def _task(task: Tuple[str, Any, int, int]) -> str:
    from . import shard_sweep

    return shard_sweep(*task)


def run_tasks(tasks: Sequence[Tuple[str, Any, int, int]], workers: Optional[int]) -> List[str]:
    """Each task's shard document, in task order."""
    # Spawned, not forked: a fork of a process whose native thread pool is
    # running would inherit its locks without its threads.
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        return list(pool.map(_task, tasks))

"""Run one job per item over the controller's cores: forked worker processes that share the caller's data.

The report renders a dossier per host; with thousands of hosts that is minutes on one core (docs/scale.md). The
workers are forked, so each starts with the run and its judgement already in memory (nothing is pickled on the way
in) and sends back only what the job returns. Forking is used only where it is safe and worth it: on a platform that
forks, in a process with no other thread, for enough items; otherwise, and for whatever a broken worker left undone,
the items run here, one after the other, so the answer is the same either way.
"""
from __future__ import annotations

import gc
import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Dict, List, Optional, Sequence

MIN_ITEMS_PER_WORKER = 25  # below this a worker's start (a fork, a pipe) costs more than it saves
CHUNK_ITEMS = 20  # items per job sent to a worker: small enough to balance, large enough to keep the pipes quiet

# What the forked workers run: set just before the pool forks them, so they inherit it instead of unpickling it.
_JOB: List[Optional[Callable[[int], Any]]] = [None]


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def worker_count(items: int, requested: Optional[int] = None) -> int:
    """How many processes run ``items`` jobs: 1 where forking is not safe or not worth it."""
    if "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        return 1
    cores = usable_cores() if requested is None else max(1, requested)
    return max(1, min(cores, items // MIN_ITEMS_PER_WORKER))


def _run_chunk(indices: Sequence[int]) -> Dict[int, Any]:
    job = _JOB[0]
    return {index: job(index) for index in indices}


def run_indexed(count: int, job: Callable[[int], Any], workers: int, chunk_items: int = CHUNK_ITEMS) -> Dict[int, Any]:
    """{index: job(index)} for index in range(count), over ``workers`` forked processes when workers > 1, chunk_items
    jobs sent to a worker at a time."""
    done: Dict[int, Any] = {}
    if workers > 1:
        _JOB[0] = job
        chunks = [list(range(start, min(count, start + chunk_items))) for start in range(0, count, chunk_items)]
        try:
            with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork")) as pool:
                for answer in pool.map(_run_chunk, chunks):
                    done.update(answer)
        except (BrokenProcessPool, OSError):
            pass  # a worker died (killed, out of memory) or could not be forked: what it left undone runs below
        finally:
            _JOB[0] = None
    for index in range(count):
        if index not in done:
            done[index] = job(index)
    return done


def run_over_the_cores(count: int, job: Callable[[int], Any], workers: Optional[int] = None) -> Dict[int, Any]:
    """run_large_jobs_over_the_cores over worker_count(count, workers) processes, CHUNK_ITEMS jobs at a time: many
    small jobs (a dossier, a host's judging)."""
    return run_large_jobs_over_the_cores(count, job, worker_count(count, workers), CHUNK_ITEMS)


def run_large_jobs_over_the_cores(count: int, job: Callable[[int], Any], processes: int,
                                  chunk_items: int = 1) -> Dict[int, Any]:
    """run_indexed over ``processes`` (the caller decided that forking is worth it), chunk_items jobs at a time
    (default one: a few jobs that each take seconds, the fleet outputs of a large run), with the heap frozen meanwhile.

    What the caller has loaded (a run, its judgement) is most of the heap; frozen, the collector stops walking it again
    and again while each job allocates its own short-lived objects, and forked workers stop touching (so copying) its
    pages: judging 1,000 hosts over two workers took as long as in one process without it (docs/scale.md)."""
    gc.freeze()
    try:
        return run_indexed(count, job, min(processes, count), chunk_items)
    finally:
        gc.unfreeze()

"""Run one job per item over the controller's cores: forked worker processes that share the caller's data.

The report renders a dossier per host; with thousands of hosts that is minutes on one core (docs/scale.md). The
workers are forked, so each starts with the run and its judgement already in memory (nothing is pickled on the way
in) and sends back only what the job returns. Where the jobs read what the caller holds (the dossiers), a worker is
replaced by a fresh fork after FRESH_FORK_ITEMS items, since every item it runs copies the caller's pages that item
touches. Forking is used only where it is safe and worth it: on a platform that forks, in a process with no other
thread, for enough items; otherwise, and for whatever a broken worker left undone, the items run here, one after the
other, so the answer is the same either way.

The workers never outlive the run that started them (docs/scale.md, "An interrupted report ends its workers"). SIGINT
or SIGTERM to this process while they run ends every worker (SIGTERM, then SIGKILL after STOP_GRACE_S), waits for
them, and then does what the signal would have done here (Ansible's own handler, KeyboardInterrupt, or the default);
nothing left undone runs here after a stop. A worker ignores SIGINT (a Ctrl-C reaches the whole process group: this
process decides), ends on SIGTERM, is sent SIGTERM by the kernel when this process dies however it dies (Linux's
parent-death signal: Ansible's worker kills itself on a signal without unwinding), and checks before each job that its
parent is the one that forked it. A worker that ends mid-job leaves no temporary file: the atomic writer removes its
own on the way out.
"""
from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Dict, List, Optional, Sequence

from ansible_collections.gpufleet.validation.plugins.module_utils.process_tree import set_parent_death_signal

MIN_ITEMS_PER_WORKER = 25  # below this a worker's start (a fork, a pipe) costs more than it saves
CHUNK_ITEMS = 20  # items per job sent to a worker: small enough to balance, large enough to keep the pipes quiet
# A forked worker's private memory grows with every item that reads the caller's objects: reference counts written
# into them copy the pages that hold them (docs/scale.md). A fresh fork after this many items bounds that copy. Not for
# jobs whose answers the caller collects as they come (judging the hosts): a fork of that heap, full of the answers and
# of the free blocks between them, has each worker's allocations fill and so copy those pages instead.
FRESH_FORK_ITEMS = 500

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
STOP_GRACE_S = 5.0  # a worker sent SIGTERM has this long to remove its temporary file before SIGKILL
WORKER_STOPPED_EXIT = 143

# What the forked workers run: set just before the pool forks them, so they inherit it instead of unpickling it.
_JOB: List[Optional[Callable[[int], Any]]] = [None]
_PARENT_PID = [0]  # in a worker: the pid of the process that forked it


class _WorkerStopped(BaseException):
    """In a worker: SIGTERM arrived, or its parent is gone. A BaseException, so a job's `except Exception` keeps
    nothing going, and the atomic writer's cleanup runs on the way out."""


class Interrupted(BaseException):
    """In the process that runs the workers: a stop signal arrived while they ran."""

    def __init__(self, signum: int, frame: Any) -> None:
        super().__init__(signum)
        self.signum = signum
        self.frame = frame


def _stop_worker(unused_signum: int, unused_frame: Any) -> None:
    raise _WorkerStopped()


def _start_worker(parent_pid: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop_worker)
    set_parent_death_signal(signal.SIGTERM)
    _PARENT_PID[0] = parent_pid
    if os.getppid() != parent_pid:  # the parent died before the death signal was set
        os._exit(WORKER_STOPPED_EXIT)  # pylint: disable=protected-access


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
    done = {}
    try:
        for index in indices:
            if os.getppid() != _PARENT_PID[0]:
                raise _WorkerStopped()
            done[index] = job(index)
    except _WorkerStopped:
        # Not back to the pool's loop, which would report the exception to a parent that is gone and take the next job.
        os._exit(WORKER_STOPPED_EXIT)  # pylint: disable=protected-access
    return done


def _raise_interrupted(signum: int, frame: Any) -> None:
    raise Interrupted(signum, frame)


def _stop_handlers() -> Dict[int, Any]:
    """Make SIGINT and SIGTERM raise Interrupted here (only the main thread can); the handlers they had."""
    previous = {}
    if threading.current_thread() is not threading.main_thread():
        return previous
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, _raise_interrupted)
    return previous


def _end_workers(pool: Optional[ProcessPoolExecutor]) -> None:
    """SIGTERM to every worker of the pool, SIGKILL to any still alive STOP_GRACE_S later; returns when all are gone.
    A second Ctrl-C meanwhile is ignored: the run is already stopping, and it would leave the workers half ended."""
    if pool is None:
        return
    held = {}
    if threading.current_thread() is threading.main_thread():
        held = {signum: signal.signal(signum, signal.SIG_IGN) for signum in STOP_SIGNALS}
    try:
        _terminate(pool)
    finally:
        _restore(held)


def _terminate(pool: ProcessPoolExecutor) -> None:
    processes = list((getattr(pool, "_processes", None) or {}).values())  # the executor has no public list of them
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(STOP_GRACE_S)
        if process.is_alive():
            process.kill()
            process.join()


def _signal_again(interrupted: Interrupted, previous: Any) -> None:
    """Do what the stop signal would have done had the workers not been running."""
    if callable(previous):
        previous(interrupted.signum, interrupted.frame)  # Ansible's handler, or Python's KeyboardInterrupt
    elif previous == signal.SIG_DFL:
        os.kill(os.getpid(), interrupted.signum)
    raise KeyboardInterrupt()


def run_indexed(count: int, job: Callable[[int], Any], workers: int, chunk_items: int = CHUNK_ITEMS,
                worker_items: Optional[int] = None) -> Dict[int, Any]:
    """{index: job(index)} for index in range(count), over ``workers`` forked processes when workers > 1, chunk_items
    jobs sent to a worker at a time; with worker_items, each worker is replaced by a fresh fork after about that many."""
    done: Dict[int, Any] = {}
    if workers > 1:
        _JOB[0] = job
        chunks = [list(range(start, min(count, start + chunk_items))) for start in range(0, count, chunk_items)]
        per_pool = max(1, workers * worker_items // max(1, chunk_items)) if worker_items else len(chunks)
        previous = _stop_handlers()
        try:
            for first in range(0, len(chunks), per_pool):
                if not _run_pool(chunks[first:first + per_pool], workers, done, previous):
                    break
        finally:
            _restore(previous)
            _JOB[0] = None
    for index in range(count):
        if index not in done:
            done[index] = job(index)
    return done


def _run_pool(chunks: List[List[int]], workers: int, done: Dict[int, Any], previous: Dict[int, Any]) -> bool:
    """Run the chunks over a pool of freshly forked workers into done; False where the pool broke (a worker died or
    could not be forked): what it left undone then runs in this process."""
    pool = None
    try:
        pool = ProcessPoolExecutor(max_workers=min(workers, len(chunks)), mp_context=multiprocessing.get_context("fork"),
                                   initializer=_start_worker, initargs=(os.getpid(),))
        for answer in pool.map(_run_chunk, chunks):
            done.update(answer)
        pool.shutdown(wait=True)
        return True
    except (BrokenProcessPool, OSError):
        _end_workers(pool)
        return False
    except Interrupted as interrupted:
        _end_workers(pool)
        handler = previous.get(interrupted.signum)
        _restore(previous)
        _signal_again(interrupted, handler)
        raise  # _signal_again always raises; this keeps the linters from reading a fall-through
    except BaseException:
        _end_workers(pool)
        raise


def _restore(previous: Dict[int, Any]) -> None:
    while previous:
        signum, handler = previous.popitem()
        signal.signal(signum, handler)


def run_over_the_cores(count: int, job: Callable[[int], Any], workers: Optional[int] = None,
                       worker_items: Optional[int] = None) -> Dict[int, Any]:
    """run_large_jobs_over_the_cores over worker_count(count, workers) processes, CHUNK_ITEMS jobs at a time: many
    small jobs (a dossier, a host's judging); worker_items: a fresh fork after that many (FRESH_FORK_ITEMS)."""
    return run_large_jobs_over_the_cores(count, job, worker_count(count, workers), CHUNK_ITEMS, worker_items)


def run_large_jobs_over_the_cores(count: int, job: Callable[[int], Any], processes: int,
                                  chunk_items: int = 1, worker_items: Optional[int] = None) -> Dict[int, Any]:
    """run_indexed over ``processes`` (the caller decided that forking is worth it), chunk_items jobs at a time
    (default one: a few jobs that each take seconds, the fleet outputs of a large run), with the heap frozen meanwhile.

    What the caller has loaded (a run, its judgement) is most of the heap; frozen, the collector stops walking it again
    and again while each job allocates its own short-lived objects, and forked workers stop touching (so copying) its
    pages: judging 1,000 hosts over two workers took as long as in one process without it (docs/scale.md)."""
    gc.freeze()
    try:
        return run_indexed(count, job, min(processes, count), chunk_items, worker_items)
    finally:
        gc.unfreeze()

"""One rank of the all-reduce sweep, run by the collective probes as its own process:

    python worker.py --library-dir DIR --spec SPEC.json --out RESULT.json

DIR holds probelib and probe_packages (the probe's own directory). RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT
come from the environment. The ranks meet at a TCPStore on MASTER_ADDR:MASTER_PORT (rank 0 serves it),
each registers itself and its plan, and they start only when every rank has joined with the same plan.
Per message size: warm-up, calibration, the timed all-reduces (CUDA events on the current stream on a GPU,
perf_counter on the CPU), the slowest rank's time (all_reduce MAX), then a data check with a known pattern
agreed by all_reduce MIN. RESULT.json is rewritten after every size, so a killed run keeps what it measured.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import socket
import sys
import time
import traceback
from typing import Any, Dict, List, Optional

KEY_PREFIX = "gpufleet/"
POLL_S = 0.2
CONNECT_ATTEMPT_S = 1.0
DONE_WAIT_S = 30.0
TEARDOWN_LIMIT_S = 60


class WorkerFailure(Exception):
    """A failure the worker can explain; ``details`` go into its result."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details = details


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="one rank of the gpufleet all-reduce sweep")
    parser.add_argument("--library-dir", required=True, help="the directory that holds probelib and probe_packages")
    parser.add_argument("--spec", required=True, help="JSON plan shared by every rank")
    parser.add_argument("--out", required=True, help="where this rank writes its JSON result")
    parser.add_argument("--parent-pid", type=int, default=0, help="die when this process (the probe) is gone")
    args = parser.parse_args(argv)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]  # no sibling shadows a module
    sys.path.insert(0, os.path.abspath(args.library_dir))
    if args.parent_pid:
        from probelib.measure.parent_death import die_with_parent  # pylint: disable=import-outside-toplevel
        die_with_parent(args.parent_pid)
    with open(args.spec, encoding="utf-8") as handle:
        spec = json.load(handle)
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    result: Dict[str, Any] = {"rank": rank, "world_size": world_size, "local_rank": int(os.environ["LOCAL_RANK"]),
                              "host": socket.gethostname(), "pid": os.getpid(), "phase": "starting", "points": [], "dropped_sizes_bytes": []}
    writer = ResultWriter(args.out, result)
    writer.write()
    try:
        run(spec, rank, world_size, writer)
    except WorkerFailure as exc:
        result.update(exc.details)
        result["error"] = str(exc)
        writer.write()
        _leave(1)
    except BaseException as exc:  # anything else: the probe reads the reason from here
        result["error"] = "%s: %s" % (type(exc).__name__, str(exc).strip() or type(exc).__name__)
        result["traceback"] = traceback.format_exc(limit=12)[-3000:]
        writer.write()
        _leave(1)
    return 0


def _leave(code: int) -> None:
    """Exit at once: after a failed collective, NCCL's and gloo's teardown can block."""
    sys.stdout.flush()
    sys.stderr.flush()
    _flush_c_streams()
    os._exit(code)  # pylint: disable=protected-access


def _flush_c_streams() -> None:
    """fflush(NULL): NCCL writes its INFO lines with fwrite to stdout, buffered when stdout is a file."""
    try:
        import ctypes  # pylint: disable=import-outside-toplevel

        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass


class ResultWriter:
    """Rewrites the result file atomically (temporary file, then rename)."""

    def __init__(self, path: str, result: Dict[str, Any]) -> None:
        self.path = path
        self.result = result

    def write(self) -> None:
        temporary = "%s.tmp" % self.path
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(self.result, handle, allow_nan=False, default=str)
        os.replace(temporary, self.path)

    def phase(self, name: str) -> None:
        self.result["phase"] = name
        self.write()


def run(spec: Dict[str, Any], rank: int, world_size: int, writer: ResultWriter) -> None:
    import torch  # pylint: disable=import-outside-toplevel
    import torch.distributed as dist  # pylint: disable=import-outside-toplevel

    result = writer.result
    local_rank = result["local_rank"]
    plan = spec["plan"]
    cuda = plan["kind"] == "cuda"
    if cuda:
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        properties = torch.cuda.get_device_properties(local_rank)
        uuid = getattr(properties, "uuid", None)
        result["device"] = {"index": local_rank, "name": properties.name,
                            "uuid": ("GPU-%s" % uuid) if uuid is not None else None}
    else:
        device = torch.device("cpu")
    writer.phase("rendezvous")
    store = rendezvous(dist, spec, rank, world_size, result)
    writer.phase("init")
    timeout = datetime.timedelta(seconds=float(spec["collective_timeout_s"]))
    options: Dict[str, Any] = {"backend": plan["backend"], "store": store, "rank": rank, "world_size": world_size,
                               "timeout": timeout}
    if cuda:
        options["device_id"] = device
    try:
        dist.init_process_group(**options)
    except TypeError:  # a torch without device_id
        options.pop("device_id", None)
        dist.init_process_group(**options)
    writer.phase("sweep")
    Sweep(torch, dist, device, plan, rank, world_size, writer).run(float(spec["collective_timeout_s"]))
    writer.phase("done")
    _flush_c_streams()
    signal.alarm(TEARDOWN_LIMIT_S)  # a teardown that hangs must not hold the probe until its deadline
    dist.destroy_process_group()
    store.set(KEY_PREFIX + "done/%d" % rank, "1")
    if rank == 0:  # serve the store until every rank has finished with it
        _wait_for_keys(store, [KEY_PREFIX + "done/%d" % peer for peer in range(world_size)], time.monotonic() + DONE_WAIT_S)


def rendezvous(dist: Any, spec: Dict[str, Any], rank: int, world_size: int, result: Dict[str, Any]) -> Any:
    """Meet every rank at the TCPStore within rendezvous_timeout_s; refuse peers with a different plan."""
    address, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    limit_s = float(spec["rendezvous_timeout_s"])
    deadline = time.monotonic() + limit_s
    timeout = datetime.timedelta(seconds=limit_s)
    if rank == 0:
        try:
            store = dist.TCPStore(address, port, None, True, timeout, wait_for_workers=False)
        except Exception as exc:
            raise WorkerFailure("rank 0 could not serve the rendezvous on port %d: %s%s" % (
                port, _first_line(exc), "; another program (or another run) holds that port, choose another master_port"
                if "in use" in str(exc) else ""), joined=0) from exc
    else:
        _wait_for_listener(address, port, deadline, limit_s, world_size)
        remaining = max(1.0, deadline - time.monotonic())
        store = dist.TCPStore(address, port, None, False, datetime.timedelta(seconds=remaining))
    me = {"rank": rank, "host": socket.gethostname(), "node_rank": spec.get("node_rank", 0), "plan": spec["plan"]}
    abort_key = KEY_PREFIX + "abort"
    first = json.loads(_text(store.compare_set(KEY_PREFIX + "plan", "", json.dumps(me, sort_keys=True))))
    if first["plan"] != spec["plan"]:
        differing = sorted(name for name in set(first["plan"]) | set(spec["plan"])
                           if first["plan"].get(name) != spec["plan"].get(name))
        message = ("rank %d (host %s, node_rank %s) has another plan than rank %d (host %s, node_rank %s), the first to join: "
                   "%s differ; give every host the same parameters" % (
                       rank, me["host"], me["node_rank"], first["rank"], first["host"], first["node_rank"], ", ".join(differing)))
        store.set(abort_key, message)  # the ranks already waiting stop too
        raise WorkerFailure(message, joined=None)
    store.set(KEY_PREFIX + "joined/%d" % rank, json.dumps(me, sort_keys=True))
    claims = store.add(KEY_PREFIX + "claims/%d" % rank, 1)
    keys = [KEY_PREFIX + "joined/%d" % peer for peer in range(world_size)]
    joined = _wait_for_keys(store, keys, deadline, abort_key)
    result["joined"] = len(joined)
    if len(joined) < world_size:
        missing = [peer for peer in range(world_size) if keys[peer] not in joined]
        raise WorkerFailure("only %d of %d ranks joined within %g s: missing rank(s) %s"
                            % (len(joined), world_size, limit_s, _ranges(missing)),
                            joined=len(joined), missing_ranks=missing)
    if claims > 1 or store.add(KEY_PREFIX + "claims/%d" % rank, 0) > 1:
        raise WorkerFailure("rank %d was claimed by more than one process: give every host its own node_rank" % rank,
                            joined=len(joined))
    return store


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _wait_for_listener(address: str, port: int, deadline: float, limit_s: float, world_size: int) -> None:
    """Connect attempts until rank 0's store listens (TCPStore's own client retries for about twice its timeout)."""
    last_error = "no attempt"
    while True:
        try:
            connection = socket.create_connection((address, port), timeout=CONNECT_ATTEMPT_S)
            connection.close()
            return
        except OSError as exc:
            last_error = "%s: %s" % (type(exc).__name__, exc)
        if time.monotonic() >= deadline:
            raise WorkerFailure("only 0 of %d ranks joined within %g s: nothing answered at %s:%d, where rank 0 (on the "
                                "node_rank 0 host) serves the rendezvous (last attempt: %s)"
                                % (world_size, limit_s, address, port, last_error), joined=0, unreachable=True)
        time.sleep(POLL_S)


def _wait_for_keys(store: Any, keys: List[str], deadline: float, abort_key: str = "") -> List[str]:
    """Poll until every key exists or the deadline passes; returns the keys present. A rank's abort message stops the wait."""
    while True:
        if abort_key and store.check([abort_key]):
            raise WorkerFailure(_text(store.get(abort_key)), joined=None)
        present = [key for key in keys if store.check([key])]
        if len(present) == len(keys) or time.monotonic() >= deadline:
            return present
        time.sleep(POLL_S)


def _ranges(numbers: List[int]) -> str:
    """[1, 2, 3, 7] -> '1-3, 7'."""
    runs: List[List[int]] = []
    for number in sorted(numbers):
        if runs and number == runs[-1][1] + 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return ", ".join(str(first) if first == last else "%d-%d" % (first, last) for first, last in runs)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return "%s: %s" % (type(exc).__name__, text[0] if text else "")


class Sweep:
    """The timed all-reduces of every message size, on one rank."""

    def __init__(self, torch: Any, dist: Any, device: Any, plan: Dict[str, Any], rank: int, world_size: int,
                 writer: ResultWriter) -> None:
        from probe_packages.collective import plan as rules  # pylint: disable=import-outside-toplevel

        self.torch, self.dist, self.device, self.plan = torch, dist, device, plan
        self.rules = rules
        self.rank, self.world_size, self.writer = rank, world_size, writer
        self.cuda = device.type == "cuda"
        self.scratch = torch.zeros(1, dtype=torch.float64, device=device)

    def run(self, limit_s: float) -> None:
        """Every size in turn; stops (all ranks together) before a size that would start after ``limit_s``."""
        torch = self.torch
        started = time.monotonic()
        sizes = self._fitting_sizes(self.plan["sizes_bytes"])
        elements = max(sizes) // self.rules.FLOAT32_BYTES
        buffer = torch.zeros(elements, dtype=torch.float32, device=self.device)
        period = self.rules.PATTERN_PERIOD  # pattern[i] = i mod 7 + 1, one float32 buffer whatever the size
        pattern = torch.arange(1, period + 1, dtype=torch.float32, device=self.device).repeat(-(-elements // period))[:elements]
        factor = float(self.rules.expected_sum_factor(self.world_size))
        for position, size in enumerate(sizes):
            elapsed = self._slowest(time.monotonic() - started)
            if elapsed > limit_s:
                raise WorkerFailure("the sweep passed curve_timeout_s (%g s) after %d of %d sizes; raise curve_timeout_s or "
                                    "lower the largest message" % (limit_s, position, len(sizes)), what="timeout")
            count = size // self.rules.FLOAT32_BYTES
            view = buffer[:count]
            for unused_call in range(int(self.plan["warmup"])):
                self.dist.all_reduce(view)
            estimate = self._slowest(self._time_own(view, self.rules.CALIBRATION_CALLS))
            iterations = self.rules.iterations_for(estimate, float(self.plan["target_time_per_size_s"]),
                                                   int(self.plan["min_iterations"]), int(self.plan["max_iterations"]))
            own = self._time_own(view, iterations)
            slowest = self._slowest(own)
            own_ok, verified = self._check(view, pattern[:count], factor)
            self.writer.result["points"].append({"size_bytes": size, "time_s": slowest, "own_time_s": own,
                                                 "iterations": iterations, "verified": verified, "own_ok": own_ok})
            self.writer.write()

    def _fitting_sizes(self, sizes: List[int]) -> List[int]:
        """The sizes whose buffers fit on every rank (agreed by all_reduce MIN)."""
        torch = self.torch
        if self.cuda:
            free_bytes, unused_total = torch.cuda.mem_get_info(self.device)
        else:
            free_bytes = _available_host_bytes() // max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
        allowed = torch.tensor([self.rules.fit_max_bytes(sizes, int(free_bytes))], dtype=torch.int64, device=self.device)
        self.dist.all_reduce(allowed, op=self.dist.ReduceOp.MIN)
        limit = int(allowed.item())
        fitting = [size for size in sizes if size <= limit]
        self.writer.result["dropped_sizes_bytes"] = [size for size in sizes if size > limit]
        self.writer.result["free_memory_bytes"] = int(free_bytes)
        if not fitting:
            raise WorkerFailure("no message size fits: %d bytes free on rank %d, %d buffers of %d bytes needed"
                                % (free_bytes, self.rank, self.rules.BUFFERS_AT_LARGEST, min(sizes)))
        return fitting

    def _synchronize(self) -> None:
        """Line the ranks up before a timed loop: a one-element all-reduce, then wait for it."""
        self.dist.all_reduce(self.scratch)
        if self.cuda:
            self.torch.cuda.synchronize(self.device)

    def _time_own(self, view: Any, iterations: int) -> float:
        """This rank's seconds per all-reduce over ``iterations`` back-to-back calls."""
        torch = self.torch
        self._synchronize()
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for unused_call in range(iterations):
                self.dist.all_reduce(view)
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1000.0 / iterations
        started = time.perf_counter()
        for unused_call in range(iterations):
            self.dist.all_reduce(view)
        return (time.perf_counter() - started) / iterations

    def _slowest(self, seconds: float) -> float:
        value = self.torch.tensor([seconds], dtype=self.torch.float64, device=self.device)
        self.dist.all_reduce(value, op=self.dist.ReduceOp.MAX)
        return float(value.item())

    def _check(self, view: Any, pattern: Any, factor: float) -> Any:
        """Fill with (rank + 1) x pattern, all-reduce once, compare exactly with pattern x n(n+1)/2 on every rank."""
        torch = self.torch
        view.copy_(pattern).mul_(float(self.rank + 1))
        self.dist.all_reduce(view)
        own_ok = bool(torch.equal(view, pattern * factor))
        flag = torch.tensor([1 if own_ok else 0], dtype=torch.int32, device=self.device)
        self.dist.all_reduce(flag, op=self.dist.ReduceOp.MIN)
        view.zero_()
        return own_ok, int(flag.item()) == 1


def _available_host_bytes() -> int:
    try:
        with open("/proc/meminfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 1 << 62


if __name__ == "__main__":
    sys.exit(main())

"""Plain, independent interconnect measurements to hold the p2p and collective probes against (run on the GPU machine).

    python3 benchmarks/independent_interconnect.py --out independent_interconnect.json

Shares no code with the probes. P2P: for every ordered pair, dst.copy_(src) of 1 GiB timed with CUDA events on the source
GPU around 10 copies after a warm-up, median of 5 repeats (no spin kernel: the enqueue of 10 large copies is far shorter
than the copies); bidirectional: both directions enqueued at once, each on its own pair of streams, and timed by the host
clock from the first enqueue to the end of both, bytes of both directions summed. All-reduce: torch.multiprocessing, one process per GPU,
NCCL, float32 sum in place at 1 MiB, 64 MiB and 1 GiB, CUDA events on each rank around 20 calls after 5 warm-up calls,
the slowest rank's time; busbw = algbw x 2(n-1)/n (nccl-tests); again with NCCL_P2P_DISABLE=1 in fresh processes.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

SIZE_BYTES = 2 ** 30
ALLREDUCE_SIZES = (2 ** 20, 64 * 2 ** 20, 2 ** 30)


def pair_unidirectional_gbps(torch, src, dst, size_bytes=SIZE_BYTES, copies=10, repeats=5):
    source = torch.rand(size_bytes // 4, device="cuda:%d" % src)
    target = torch.empty(size_bytes // 4, device="cuda:%d" % dst)
    timings = []
    with torch.cuda.device(src):
        for repeat in range(repeats + 1):
            torch.cuda.synchronize(src)
            torch.cuda.synchronize(dst)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for unused_copy in range(copies):
                target.copy_(source, non_blocking=True)
            end.record()
            end.synchronize()
            if repeat:
                timings.append(start.elapsed_time(end) / 1000.0 / copies)
    assert torch.equal(target.cpu(), source.cpu())
    return size_bytes / statistics.median(timings) / 1e9


def pair_bidirectional_gbps(torch, a, b, size_bytes=SIZE_BYTES, copies=10, repeats=5):
    """Both directions at once. torch runs a cross-device copy on the source GPU's current stream after making it wait
    for the destination's current stream, so each direction gets its own pair of streams (one per GPU) or the two
    directions would take turns."""
    a_data, b_data = torch.rand(size_bytes // 4, device="cuda:%d" % a), torch.rand(size_bytes // 4, device="cuda:%d" % b)
    a_target = torch.empty(size_bytes // 4, device="cuda:%d" % a)
    b_target = torch.empty(size_bytes // 4, device="cuda:%d" % b)
    a_to_b = (torch.cuda.Stream(device=a), torch.cuda.Stream(device=b))
    b_to_a = (torch.cuda.Stream(device=b), torch.cuda.Stream(device=a))
    rates = []
    for repeat in range(repeats + 1):
        torch.cuda.synchronize(a)
        torch.cuda.synchronize(b)
        started = time.perf_counter()
        for unused_copy in range(copies):
            with torch.cuda.stream(a_to_b[1]), torch.cuda.stream(a_to_b[0]):
                b_target.copy_(a_data, non_blocking=True)
            with torch.cuda.stream(b_to_a[1]), torch.cuda.stream(b_to_a[0]):
                a_target.copy_(b_data, non_blocking=True)
        torch.cuda.synchronize(a)
        torch.cuda.synchronize(b)
        if repeat:
            rates.append(2 * copies * size_bytes / (time.perf_counter() - started) / 1e9)
    assert torch.equal(b_target.cpu(), a_data.cpu()) and torch.equal(a_target.cpu(), b_data.cpu())
    return statistics.median(rates)


def allreduce_worker(rank, world, port, queue):
    import torch  # pylint: disable=import-outside-toplevel
    import torch.distributed as dist  # pylint: disable=import-outside-toplevel

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    results = {}
    for size in ALLREDUCE_SIZES:
        tensor = torch.ones(size // 4, device="cuda:%d" % rank)
        for unused_call in range(5):
            dist.all_reduce(tensor)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for unused_call in range(20):
            dist.all_reduce(tensor)
        end.record()
        end.synchronize()
        seconds = torch.tensor([start.elapsed_time(end) / 1000.0 / 20], device="cuda:%d" % rank)
        dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
        tensor.fill_(rank + 1)
        dist.all_reduce(tensor)
        correct = bool((tensor == world * (world + 1) / 2).all().item())
        algbw = size / seconds.item() / 1e9
        results[size] = {"time_us": seconds.item() * 1e6, "algbw_gbps": algbw, "busbw_gbps": algbw * 2 * (world - 1) / world,
                         "verified": correct}
    if rank == 0:
        queue.put(results)
    dist.destroy_process_group()


def allreduce(torch, world, p2p_disabled, port):
    import torch.multiprocessing as mp  # pylint: disable=import-outside-toplevel

    previous = os.environ.get("NCCL_P2P_DISABLE")
    if p2p_disabled:
        os.environ["NCCL_P2P_DISABLE"] = "1"
    try:
        context = mp.get_context("spawn")
        queue = context.SimpleQueue()
        mp.start_processes(allreduce_worker, args=(world, port, queue), nprocs=world, start_method="spawn")
        return queue.get()
    finally:
        if previous is None:
            os.environ.pop("NCCL_P2P_DISABLE", None)
        else:
            os.environ["NCCL_P2P_DISABLE"] = previous


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="also write the JSON here")
    args = parser.parse_args()
    import torch  # pylint: disable=import-outside-toplevel

    count = torch.cuda.device_count()
    report = {"torch": torch.__version__, "gpus": count, "nccl": ".".join(map(str, torch.cuda.nccl.version())) if count else None,
              "environment": {key: value for key, value in os.environ.items() if key.startswith("NCCL_")},
              "p2p": [], "allreduce": {}}
    for src in range(count):
        for dst in range(count):
            if src != dst:
                report["p2p"].append({"src": src, "dst": dst, "peer_access": torch.cuda.can_device_access_peer(src, dst),
                                      "unidirectional_gbps": pair_unidirectional_gbps(torch, src, dst),
                                      "bidirectional_gbps": pair_bidirectional_gbps(torch, src, dst)})
    if count >= 2:
        for name, disabled, port in (("default", False, 29611), ("p2p_disabled", True, 29612)):
            report["allreduce"][name] = {str(size): value for size, value in allreduce(torch, count, disabled, port).items()}
    print("%-6s %-6s %14s %14s" % ("src", "dst", "uni GB/s", "bidir GB/s"))
    for entry in report["p2p"]:
        print("%-6s %-6s %14.1f %14.1f" % (entry["src"], entry["dst"], entry["unidirectional_gbps"], entry["bidirectional_gbps"]))
    print("%-14s %14s %12s %12s %9s" % ("all-reduce", "bytes", "time us", "busbw GB/s", "verified"))
    for name, sizes in report["allreduce"].items():
        for size, value in sizes.items():
            print("%-14s %14s %12.1f %12.1f %9s" % (name, size, value["time_us"], value["busbw_gbps"], value["verified"]))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Write one synthetic host of N H200s (default 8) that ran every probe of the acceptance profile, derived from real runs.

Used by benchmarks/fleet_reports.py --acceptance-host (the size of a host's dossier per GPU) and by the report tests.
Each per-GPU part of a recorded 1 x H200 acceptance run (docs/examples/h200x1/peer-tools: gemm, membw, hostbw, fusion,
load, tuning) is repeated for every GPU with that GPU's own UUID and index; the health result is
synthetic_fleet.health_envelope's (N GPUs and their NVLink pairs); p2p and all-reduce come from the recorded 2 x H200 run
(docs/examples/h200x2), repeated for every ordered pair and with N ranks; precision from the 1 x H200 run that measured
it (docs/examples/h200x1/house). Values are the recorded ones: this host is for sizes and costs, not for verdicts.
"""
from __future__ import annotations

import copy
import json
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from synthetic_fleet import FIXTURE, health_envelope  # noqa: E402

EXAMPLES = os.path.join(ROOT, "docs", "examples")
ACCEPTANCE_RUN = os.path.join(EXAMPLES, "h200x1", "peer-tools", "20261203T040540Z-591300", "localhost")
TWO_GPU_RUN = os.path.join(EXAMPLES, "h200x2", "20261130T054132Z-520925", "localhost")
PRECISION_RUN = os.path.join(EXAMPLES, "h200x1", "house", "20261201T163115Z-092745", "localhost")
PER_GPU_LISTS = {"gemm": "devices", "membw": "devices", "hostbw": "devices", "fusion": "devices", "load": "gpus",
                 "tuning": "gpus"}
AS_RECORDED = ("toolchain", "collective_hosts")


def _read(folder: str, probe: str) -> dict:
    with open(os.path.join(folder, probe + ".json"), encoding="utf-8") as handle:
        return json.load(handle)


def _uuid(host_number: int, index: int) -> str:
    return "GPU-%08x-%04x-0000-0000-%012x" % (host_number, index, index)


def _as_gpu(item: object, old_uuid: str, index: int, new_uuid: str) -> object:
    """A copy of one GPU's part with its UUID and index those of GPU index."""
    item = json.loads(json.dumps(item).replace(old_uuid, new_uuid))
    for part in (item, item.get("device") if isinstance(item, dict) else None):
        if isinstance(part, dict):
            for key in ("index", "nvml_index"):
                if isinstance(part.get(key), int):
                    part[key] = index
    return item


def _per_gpu(envelope: dict, probe: str, uuids: list) -> dict:
    data = envelope["data"]
    old_uuid = _recorded_uuid()
    items = data[PER_GPU_LISTS[probe]]
    data[PER_GPU_LISTS[probe]] = [_as_gpu(items[0], old_uuid, index, uuid) for index, uuid in enumerate(uuids)]
    rows = data.get("samples", {}).get("rows_per_gpu") if probe == "load" else None
    if isinstance(rows, dict) and old_uuid in rows:
        data["samples"]["rows_per_gpu"] = {uuid: copy.deepcopy(rows[old_uuid]) for uuid in uuids}
    return envelope


def _recorded_uuid() -> str:
    return _read(ACCEPTANCE_RUN, "load")["data"]["gpus"][0]["uuid"]


def _p2p(uuids: list) -> dict:
    envelope = _read(TWO_GPU_RUN, "p2p")
    data = envelope["data"]
    template = data["pairs"][0]
    count = len(uuids)
    data["devices"] = [dict(copy.deepcopy(data["devices"][0]), index=index, nvml_index=index, uuid=uuid)
                       for index, uuid in enumerate(uuids)]
    data["pairs"] = [dict(copy.deepcopy(template), src=src, dst=dst, src_uuid=uuids[src], dst_uuid=uuids[dst])
                     for src in range(count) for dst in range(count) if src != dst]
    matrix = data["matrix"]
    for key, value in matrix.items():
        if isinstance(value, list) and value and isinstance(value[0], list):
            off_diagonal = value[0][1] if len(value[0]) > 1 else value[0][0]
            matrix[key] = [[value[0][0] if row == column else off_diagonal for column in range(count)] for row in range(count)]
        elif isinstance(value, list):
            matrix[key] = list(range(count))
    data["topology"]["gpu_count"] = count
    return envelope


def _collective(uuids: list) -> dict:
    envelope = _read(TWO_GPU_RUN, "collective")
    data = envelope["data"]
    data["devices"] = [dict(copy.deepcopy(data["devices"][0]), index=index, uuid=uuid) for index, uuid in enumerate(uuids)]
    return envelope


def acceptance_host_results(host: str, gpus: int = 8, host_number: int = 0, run_id: str = "") -> dict:
    """{probe: envelope} of one host of gpus H200s after the acceptance profile."""
    uuids = [_uuid(host_number, index) for index in range(gpus)]
    with open(FIXTURE, encoding="utf-8") as handle:
        health = health_envelope(json.load(handle), host, host_number, gpus, run_id, random.Random(host_number))
    for index, gpu in enumerate(health["data"]["gpus"]):
        gpu["uuid"] = uuids[index]
    results = {"health": health, "p2p": _p2p(uuids), "collective": _collective(uuids),
               "precision": _read(PRECISION_RUN, "precision")}
    for probe in PER_GPU_LISTS:
        results[probe] = _per_gpu(_read(ACCEPTANCE_RUN, probe), probe, uuids)
    for probe in AS_RECORDED:
        if os.path.exists(os.path.join(ACCEPTANCE_RUN, probe + ".json")):
            results[probe] = _read(ACCEPTANCE_RUN, probe)
    for envelope in results.values():
        envelope["host"] = host
        if run_id:
            envelope["run_id"] = run_id
    return results


def write_acceptance_host(results_dir: str, run_id: str, host: str = "gpu-r00-n000", gpus: int = 8) -> str:
    """Write the host's results under results_dir/run_id/host; the host's directory."""
    path = os.path.join(results_dir, run_id, host)
    os.makedirs(path, exist_ok=True)
    for probe, envelope in acceptance_host_results(host, gpus, run_id=run_id).items():
        with open(os.path.join(path, probe + ".json"), "w", encoding="utf-8") as handle:
            json.dump(envelope, handle)
    with open(os.path.join(path, "inputs.json"), "w", encoding="utf-8") as handle:
        json.dump(dict(_read(ACCEPTANCE_RUN, "inputs"), host=host, dir_name=host), handle)  # its profile, its Python
    return path

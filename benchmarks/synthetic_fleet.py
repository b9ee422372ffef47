"""Write a synthetic run of N hosts with G GPUs each, derived from the real H200 health result.

Used by the report benchmark; every host is a real health envelope with its own UUIDs, serials,
bus ids and small variations, and a few hosts carry faults so that the judge has work to do.
"""
from __future__ import annotations

import copy
import json
import os
import random
import sys

# fleet_reports.py --against: the collection under test, not necessarily this checkout's
sys.path.insert(0, os.environ.get("GPUFLEET_BENCH_COLLECTIONS") or
                os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "collections"))
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schemas_digest  # noqa: E402

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "tests", "fixtures", "health_h200x2_ok_by_the_action.json")


def _gpu(template: dict, index: int, host_number: int, rng: random.Random) -> dict:
    gpu = copy.deepcopy(template)
    gpu["index"] = index
    gpu["minor_number"] = index
    gpu["uuid"] = "GPU-%08x-%04x-%04x-0000-%012x" % (host_number, index, rng.getrandbits(16), rng.getrandbits(48))
    gpu["serial"] = "%013d" % (1653724000000 + host_number * 16 + index)
    gpu["pci"]["bus_id"] = "0000:%02x:00.0" % (0x18 + index * 0x10)
    gpu["power"]["draw_w"] = round(rng.gauss(80.0, 3.0), 3)
    gpu["temperature"]["gpu_c"] = int(round(rng.gauss(36.0, 1.5)))
    return gpu


def _pairs(template_pair: dict, count: int) -> list:
    pairs = []
    for first in range(count):
        for second in range(first + 1, count):
            pair = copy.deepcopy(template_pair)
            pair["gpu_a"], pair["gpu_b"] = first, second
            pairs.append(pair)
    return pairs


def health_envelope(template: dict, host: str, host_number: int, gpus: int, run_id: str, rng: random.Random) -> dict:
    envelope = copy.deepcopy(template)
    # As the probe action stores it: validated against this collection's schemas, and saying so.
    envelope.update(host=host, run_id=run_id, collection_version="0.1.0", probe_sha256="0" * 64,
                    schemas_sha256=schemas_digest())
    data = envelope["data"]
    data["platform"]["hostname"] = host
    data["gpus"] = [_gpu(template["data"]["gpus"][0], index, host_number, rng) for index in range(gpus)]
    data["topology"]["pairs"] = _pairs(template["data"]["topology"]["pairs"][0], gpus)
    data["topology"]["gpu_count"] = gpus
    if host_number % 97 == 5:
        data["gpus"][3]["ecc"]["volatile_uncorrected_count"] = 2
    if host_number % 89 == 7:
        data["gpus"][1]["power"]["draw_w"] = 310.0
    return envelope


def synthetic_host_name(number: int) -> str:
    """The inventory name of host number, in racks of 32."""
    return "gpu-r%02d-n%03d" % (number // 32, number % 32)


def write_synthetic_run(results_dir: str, run_id: str, hosts: int, gpus: int = 8, seed: int = 1) -> list:
    """Write the run; return the inventory names, in racks of 32 (``rack-NN``)."""
    with open(FIXTURE, encoding="utf-8") as handle:
        template = json.load(handle)
    rng = random.Random(seed)
    names = []
    for number in range(hosts):
        host = synthetic_host_name(number)
        names.append(host)
        path = os.path.join(results_dir, run_id, host)
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "health.json"), "w", encoding="utf-8") as handle:
            json.dump(health_envelope(template, host, number, gpus, run_id, rng), handle)
    return names


def rack_of(host: str) -> str:
    return "rack_" + host.split("-")[1][1:]

"""Stored runs for the calibration tests: the 1-GPU H200 rig's recorded acceptance results replayed as several hosts,
each with GPUs of its own (UUID and serial), its rates scaled where a test asks."""
from __future__ import annotations

import json
import os
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
H200X1_RUN = os.path.join(ROOT, "docs", "examples", "h200x1", "final", "20261201T090639Z-551803", "localhost")
RUN_ID = "20261201T090639Z-551803"
PROBES = ("health", "membw", "gemm", "hostbw")


def _scaled_membw(data, factor):
    for entry in data["devices"]:
        entry["headline"]["bandwidth_gbps"] *= factor
        entry["repeats"]["bandwidths_gbps"] = [value * factor for value in entry["repeats"]["bandwidths_gbps"]]


def _scaled_gemm(data, factor):
    for entry in data["devices"]:
        for rate in entry["dtypes"].values():
            states = rate.get("power_states") if isinstance(rate, dict) else None
            for method in ("burst", "sustained"):
                state = states.get(method) if isinstance(states, dict) else None
                if isinstance(state, dict) and "tflops" in state:
                    state["tflops"] *= factor
                    state["repeats_tflops"] = [value * factor for value in state.get("repeats_tflops") or []]


SCALE = {"membw": _scaled_membw, "gemm": _scaled_gemm}


def host_envelopes(host, scale=None, probes=PROBES, gpu=None):
    """{probe: envelope} of the recording as host's own; scale: {probe: factor} of its rates; gpu: health's GPU fields
    to set (name, pci.device_id, memory ...) as {field: value}, a dotted field for a nested one."""
    with open(os.path.join(H200X1_RUN, "health.json"), encoding="utf-8") as handle:
        recorded_uuid = json.load(handle)["data"]["gpus"][0]["uuid"]
    machine = zlib.crc32(host.encode("utf-8"))
    uuid = "GPU-%08x-%s" % (machine, recorded_uuid[13:])
    found = {}
    for probe in probes:
        with open(os.path.join(H200X1_RUN, probe + ".json"), encoding="utf-8") as handle:
            envelope = json.loads(handle.read().replace(recorded_uuid, uuid))
        envelope["host"] = host
        if probe == "health":
            for entry in envelope["data"]["gpus"]:
                entry["serial"] = "%010d%03d" % (machine, entry["index"])
                for name, value in (gpu or {}).items():
                    target = entry
                    *parents, last = name.split(".")
                    for parent in parents:
                        target = target[parent]
                    target[last] = value
        factor = (scale or {}).get(probe)
        if factor is not None:
            SCALE[probe](envelope["data"], factor)
        found[probe] = envelope
    return found


def store_run(results, hosts, run_id=RUN_ID, scale=None, gpu=None, probes=PROBES):
    """results/<run_id>/<host>/<probe>.json for each host (a run written the old way: every directory is a host).
    scale: {host: {probe: factor}}; gpu: {host: health GPU fields} (host_envelopes)."""
    for host in hosts:
        directory = os.path.join(str(results), run_id, host)
        os.makedirs(directory, exist_ok=True)
        for probe, envelope in host_envelopes(host, (scale or {}).get(host), probes, (gpu or {}).get(host)).items():
            with open(os.path.join(directory, probe + ".json"), "w", encoding="utf-8") as handle:
                json.dump(envelope, handle)
    return os.path.join(str(results), run_id)

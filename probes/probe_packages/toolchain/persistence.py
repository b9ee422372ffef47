"""Contract persistence_mode: NVML reports persistence mode enabled on every GPU (DCGM's software test
persistence_mode; DCGM_FR_PERSISTENCE_MODE). Without it the driver tears the GPUs down whenever no process holds
them, so every probe pays the initialisation again and the first measurements start from a cold GPU. The probe only
reads the mode; it never changes it."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from probe_packages.toolchain.contract import FAIL, PASS, make_contract, undecided
from probelib.fields import is_unavailable

CONTRACT_ID = "persistence_mode"
EXPECTED = "persistence mode enabled (NVML nvmlDeviceGetPersistenceMode = 1) on every GPU NVML lists"


def _name(device: Dict[str, Any]) -> str:
    return "GPU %s (%s)" % (device.get("index"), device.get("uuid") or "UUID unread")


def decide(devices: Optional[List[Dict[str, Any]]], problem: Optional[str]) -> Dict[str, Any]:
    """devices: NVML's GPUs, each {index, uuid, persistence_mode: 1, 0 or unavailable}; None when NVML is unusable."""
    details: Dict[str, Any] = {"gpus": [], "disabled": [], "unread": []}
    if devices is None:
        why = "NVML: %s" % (problem or "not usable")
        return undecided(CONTRACT_ID, why, EXPECTED, "Install the NVIDIA driver and nvidia-ml-py for this Python, then "
                         "re-run.", [why], details)
    if not devices:
        return undecided(CONTRACT_ID, "NVML lists no GPU", EXPECTED, "Find why the driver sees no GPU (run the health "
                         "probe).", ["NVML: 0 GPUs"], details)
    evidence = []
    for device in devices:
        mode = device.get("persistence_mode")
        entry = {"index": device.get("index"), "uuid": device.get("uuid"),
                 "enabled": (mode == 1) if isinstance(mode, int) else None}
        details["gpus"].append(entry)
        if isinstance(mode, int) and not isinstance(mode, bool):
            evidence.append("%s: nvmlDeviceGetPersistenceMode = %d" % (_name(device), mode))
            if mode != 1:
                details["disabled"].append(device.get("index"))
        else:
            reason = mode["unavailable"] if is_unavailable(mode) else repr(mode)
            evidence.append("%s: nvmlDeviceGetPersistenceMode: %s" % (_name(device), reason))
            details["unread"].append(device.get("index"))
    if details["disabled"]:
        names = ", ".join(str(index) for index in details["disabled"])
        indices = ",".join(str(index) for index in details["disabled"])
        observed = "persistence mode is disabled on %d of %d GPU(s): %s" % (len(details["disabled"]), len(devices), names)
        if details["unread"]:
            observed += "; unread on %s" % ", ".join(str(index) for index in details["unread"])
        remedy = ("Enable it as root with nvidia-smi -i %s -pm 1, or run the nvidia-persistenced daemon (this probe never "
                  "changes it)." % indices)
        return make_contract(CONTRACT_ID, FAIL, observed, EXPECTED, remedy, evidence, details)
    if details["unread"]:
        why = "persistence mode could not be read on GPU(s) %s" % ", ".join(str(index) for index in details["unread"])
        return undecided(CONTRACT_ID, why, EXPECTED, "Run the health probe to see why NVML cannot read these GPUs.",
                         evidence, details)
    return make_contract(CONTRACT_ID, PASS, "persistence mode is enabled on all %d GPU(s)" % len(devices), EXPECTED, "",
                         evidence, details)

"""Contract nvml_cuda_agree: CUDA, in a fresh Python, shows exactly the GPUs NVML lists that CUDA_VISIBLE_DEVICES
lets through, compared by UUID; a CUDA_VISIBLE_DEVICES that lets none of them through is no agreement."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from probe_packages.toolchain.contract import FAIL, PASS, error_text, make_contract, undecided
from probe_packages.toolchain.visible_devices import expected_uuids

CONTRACT_ID = "nvml_cuda_agree"
EXPECTED = "CUDA shows the GPUs NVML lists, restricted by CUDA_VISIBLE_DEVICES where it is set, with the same UUIDs"
MAPPING_REMEDY = ("Name the GPUs in CUDA_VISIBLE_DEVICES by UUID (indices follow nvidia-smi's order only with "
                  "CUDA_DEVICE_ORDER=PCI_BUS_ID or GPUs of one model), and run the health probe for any GPU CUDA cannot "
                  "open.")
HIDDEN_REMEDY = ("Unset CUDA_VISIBLE_DEVICES, or list in it (by UUID) the GPUs to validate: a host whose GPUs are all "
                 "hidden from CUDA has nothing the GPU probes can measure.")
CUDA_REMEDY = ("Run the health probe and fix what its CUDA init, /dev/nvidia* and cgroup device checks report (CUDA fails "
               "while NVML works when the device nodes or their cgroup rules are wrong).")


def _visible_text(visible: Optional[str]) -> str:
    return "unset" if visible is None else repr(visible)


def decide(nvml: Dict[str, Any], visible: Optional[str], cuda: Dict[str, Any]) -> Dict[str, Any]:
    """nvml: {uuids: one per NVML index (None where unread) or None, problem, mig_enabled: NVML indices in MIG mode};
    visible: CUDA_VISIBLE_DEVICES or None when unset; cuda: {problem (not decidable), error (CUDA raised), stage,
    device_count, uuids}."""
    evidence = ["CUDA_VISIBLE_DEVICES: %s" % _visible_text(visible)]
    details: Dict[str, Any] = {"cuda_visible_devices": visible, "nvml_uuids": None, "expected_uuids": None,
                               "cuda_device_count": None, "cuda_uuids": None, "missing_in_cuda": [],
                               "missing_in_nvml": [], "unexpected_in_cuda": [], "notes": []}
    nvml_uuids = nvml.get("uuids")
    if nvml_uuids is None:
        why = "NVML: %s" % (nvml.get("problem") or "no GPU list")
        evidence.append(why)
        return undecided(CONTRACT_ID, why, EXPECTED, "Install the NVIDIA driver and nvidia-ml-py for this Python, then "
                         "re-run.", evidence, details)
    details["nvml_uuids"] = list(nvml_uuids)
    evidence.append("NVML: %d GPU(s): %s" % (len(nvml_uuids), ", ".join(str(uuid) for uuid in nvml_uuids) or "none"))
    if nvml.get("mig_enabled"):
        why = "MIG mode is enabled on GPU(s) %s: CUDA lists MIG instances there, which this probe does not compare" % (
            ", ".join(str(index) for index in nvml["mig_enabled"]))
        return undecided(CONTRACT_ID, why, EXPECTED, "Compare MIG instances with nvidia-smi -L by hand; this probe "
                         "compares whole GPUs.", evidence, details)
    if cuda.get("problem"):
        evidence.append("CUDA side: %s" % cuda["problem"])
        return undecided(CONTRACT_ID, cuda["problem"], EXPECTED, _cuda_remedy(cuda["problem"]), evidence, details)
    plan = expected_uuids(visible, nvml_uuids)
    details["notes"] = plan["notes"]
    if plan["undecidable"]:
        return undecided(CONTRACT_ID, plan["undecidable"], EXPECTED, "Compare MIG instances with nvidia-smi -L by hand; "
                         "this probe compares whole GPUs.", evidence, details)
    if any(uuid is None for uuid in plan["uuids"]):
        why = "NVML could not read the UUID of every GPU CUDA should show"
        return undecided(CONTRACT_ID, why, EXPECTED, "Run the health probe to see which GPU NVML cannot read.", evidence,
                         details)
    expected: List[str] = list(plan["uuids"])
    details["expected_uuids"] = expected
    details["cuda_device_count"] = cuda.get("device_count")
    if nvml_uuids and not expected:
        seen = ("CUDA raised %s" % error_text(cuda["error"]) if cuda.get("error")
                else "CUDA sees %s" % cuda.get("device_count"))
        evidence.append("CUDA in a fresh Python: %s" % seen)
        observed = "CUDA_VISIBLE_DEVICES %s hides all %d GPU(s) NVML lists (%s)" % (
            _visible_text(visible), len(nvml_uuids), seen)
        return make_contract(CONTRACT_ID, FAIL, observed, EXPECTED, HIDDEN_REMEDY, evidence, details)
    if cuda.get("error"):
        evidence.append("CUDA in a fresh Python raised at stage %s: %s" % (cuda.get("stage"), error_text(cuda["error"])))
        if not expected:
            return undecided(CONTRACT_ID, "CUDA raised while no GPU is expected: %s" % error_text(cuda["error"]),
                             EXPECTED, CUDA_REMEDY, evidence, details)
        details["missing_in_cuda"] = expected
        observed = "NVML shows %d GPU(s) CUDA should see, but CUDA failed: %s" % (len(expected), error_text(cuda["error"]))
        return make_contract(CONTRACT_ID, FAIL, observed, EXPECTED, CUDA_REMEDY, evidence, details)
    cuda_uuids = cuda.get("uuids") or []
    count = cuda.get("device_count")
    evidence.append("CUDA in a fresh Python: torch.cuda.device_count() = %s; UUIDs: %s" % (
        count, ", ".join(str(uuid) for uuid in cuda_uuids) or "none"))
    if not isinstance(count, int):
        return undecided(CONTRACT_ID, "CUDA reported no device count", EXPECTED, CUDA_REMEDY, evidence, details)
    if any(uuid is None for uuid in cuda_uuids) or len(cuda_uuids) != count:
        if count != len(expected):
            details["notes"].append("this torch reports no device UUIDs; only the counts were compared")
            observed = "CUDA shows %d GPU(s), %d expected" % (count, len(expected))
            return make_contract(CONTRACT_ID, FAIL, observed, EXPECTED, CUDA_REMEDY, evidence, details)
        return undecided(CONTRACT_ID, "this torch reports no device UUIDs; the counts agree (%d)" % count, EXPECTED,
                         "Use a torch that reports device UUIDs (torch.cuda.get_device_properties(i).uuid).", evidence,
                         details)
    details["cuda_uuids"] = list(cuda_uuids)
    details["missing_in_cuda"] = [uuid for uuid in expected if uuid not in cuda_uuids]
    details["missing_in_nvml"] = [uuid for uuid in cuda_uuids if uuid not in nvml_uuids]
    details["unexpected_in_cuda"] = [uuid for uuid in cuda_uuids if uuid in nvml_uuids and uuid not in expected]
    if not (details["missing_in_cuda"] or details["missing_in_nvml"] or details["unexpected_in_cuda"]) and count == len(expected):
        observed = "CUDA shows the %d expected GPU(s) (CUDA_VISIBLE_DEVICES %s; NVML lists %d)" % (
            count, _visible_text(visible), len(nvml_uuids))
        return make_contract(CONTRACT_ID, PASS, observed, EXPECTED, "", evidence, details)
    parts = ["CUDA shows %d GPU(s), %d expected" % (count, len(expected))]
    for key, words in (("missing_in_cuda", "expected but not shown by CUDA"), ("missing_in_nvml", "shown by CUDA but "
                       "unknown to NVML"), ("unexpected_in_cuda", "shown by CUDA though CUDA_VISIBLE_DEVICES excludes it")):
        if details[key]:
            parts.append("%s: %s" % (words, ", ".join(details[key])))
    mapping = details["unexpected_in_cuda"] or (visible is not None and bool(visible.strip()) and details["missing_in_cuda"])
    return make_contract(CONTRACT_ID, FAIL, "; ".join(parts), EXPECTED, MAPPING_REMEDY if mapping else CUDA_REMEDY,
                         evidence, details)


def _cuda_remedy(problem: str) -> str:
    if "without CUDA" in problem:
        return "Install a CUDA build of torch in the Python the probes run with (gpufleet_python) to decide this."
    if "not importable" in problem:
        return "Make torch importable by the Python the probes run with (gpufleet_python), then re-run."
    return ("Find why CUDA hangs or crashes in a fresh Python (run the health probe, read dmesg for Xid errors), "
            "then re-run.")

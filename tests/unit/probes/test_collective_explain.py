"""probe_packages.collective: the explanation sentence, the link classes of the GPUs used, the interface towards the master."""
import pytest

from probe_packages.collective.explain import explain_hosts, explain_local, headline_words
from probe_packages.collective.interface import choose_interface, interface_towards, pick_interface
from probe_packages.collective.links import describe_link_class, nvml_indices_by_uuid, select_pairs

GIB = 1 << 30
MIB = 1 << 20
NVSWITCH = {"source": "nvml", "link_classes": ["NV18"],
            "pairs": [{"gpu_a": 0, "gpu_b": 1, "link_class": "NV18", "nvlink_via": "nvswitch"}]}


def curve(name, busbw, transports, plateau=True):
    return {"name": name, "env": {}, "sweep": [{"size_bytes": GIB}], "busbw_at_largest_gbps": busbw, "largest_bytes": GIB,
            "plateau": ({"found": True, "sizes_bytes": [256 * MIB, 512 * MIB, GIB], "busbw_gbps": busbw, "reason": "3 sizes"}
                        if plateau else {"found": False, "sizes_bytes": [], "busbw_gbps": None, "reason": "rising"}),
            "transports": transports}


def test_headline_words():
    assert headline_words(curve("default", 366.14, [])) == "366.1 GB/s busbw (plateau at 256 MiB-1 GiB)"
    assert headline_words(curve("default", 0.5, [], plateau=False)) == "0.5 GB/s busbw at the largest message, 1 GiB (no plateau)"


def test_nvlink_against_shm_fallback():
    sentence = explain_local("cuda", 2, [curve("default", 360.0, ["P2P/CUMEM"]), curve("p2p_disabled", 20.0, ["SHM"])],
                             NVSWITCH, {"NCCL_NVLS_ENABLE": "0"}, True)
    assert sentence == ("with P2P NCCL moves data over NV18: NVLink through NVSwitch (P2P/CUMEM) at 360.0 GB/s busbw "
                        "(plateau at 256 MiB-1 GiB); with NCCL_P2P_DISABLE=1 it falls back to shared host memory (SHM) at "
                        "20.0 GB/s busbw (plateau at 256 MiB-1 GiB), bounded by the GPUs' PCIe links: 18.0 x slower")


def test_no_gain_and_network_fallback_and_missing_comparisons():
    same = explain_local("cuda", 2, [curve("default", 21.0, ["SHM"]), curve("p2p_disabled", 20.0, ["NET/Socket"])],
                         {"source": "nvml", "link_classes": ["SYS"], "pairs": []}, {"NCCL_P2P_DISABLE": "1"}, True)
    assert "over SYS: PCIe across NUMA nodes" in same
    assert "NCCL_P2P_DISABLE=1 was set by the user" in same
    assert "falls back to the network (NET/Socket)" in same and "about the same" in same
    faster = explain_local("cuda", 2, [curve("default", 10.0, ["P2P/CUMEM"]), curve("p2p_disabled", 20.0, ["SHM"])],
                           {"unavailable": "NVML is not usable"}, {}, True)
    assert "links of unknown class" in faster and "2.0 x faster than with P2P" in faster
    off = explain_local("cuda", 2, [curve("default", 360.0, ["P2P/CUMEM"])], NVSWITCH, {}, False)
    assert off.endswith("the NCCL_P2P_DISABLE=1 comparison was not made (p2p_disabled_sweep is false)")
    failed = explain_local("cuda", 2, [curve("default", 360.0, {"unavailable": "x"}),
                                       {"name": "p2p_disabled", "env": {}, "sweep": [], "error": "rank 1 failed"}], NVSWITCH, {}, True)
    assert "(transport not reported)" in failed and failed.endswith("comparison failed: rank 1 failed")


def test_cpu_and_failed_default():
    cpu = explain_local("cpu", 2, [curve("default", 1.5, {"unavailable": "gloo"}, plateau=False)], {"unavailable": "no GPU"}, {}, True)
    assert cpu.startswith("gloo over loopback with 2 CPU ranks reaches 1.5 GB/s busbw") and "not a GPU interconnect" in cpu
    failed = explain_local("cuda", 2, [{"name": "default", "env": {}, "sweep": [], "error": "timeout"}], NVSWITCH, {}, True)
    assert failed == {"unavailable": "the default curve has no measurement: timeout"}


def test_hosts_sentence():
    hosts = {"nnodes": 2, "ranks_per_host": 8, "interface": "eth0"}
    sentence = explain_hosts("cuda", hosts, 16, [curve("default", 180.0, ["NET/IB"])])
    assert sentence == ("NCCL across 2 host(s), 8 rank(s) each, 16 in all (NET/IB; sockets over interface eth0) reaches "
                        "180.0 GB/s busbw (plateau at 256 MiB-1 GiB)")
    cpu = explain_hosts("cpu", dict(hosts, ranks_per_host=1, interface={"unavailable": "x"}), 2, [curve("default", 1.0, [], False)])
    assert "gloo across 2 host(s)" in cpu and "an interface the library chose" in cpu
    assert "unavailable" in explain_hosts("cpu", hosts, 2, [{"name": "default", "env": {}, "sweep": [], "error": "only 1 of 2"}])


def test_link_class_words():
    assert describe_link_class("NV18", "nvswitch") == "NV18: NVLink through NVSwitch"
    assert describe_link_class("NV4", "direct") == "NV4: 4 direct NVLink(s)"
    assert describe_link_class("NV12") == "NV12: NVLink"
    assert describe_link_class("PIX") == "PIX: PCIe through one PCIe switch"
    assert describe_link_class("weird") == "weird"


def test_pairs_of_the_gpus_used_are_mapped_by_uuid_to_torch_indices():
    # NVML orders the GPUs differently from torch (CUDA_VISIBLE_DEVICES=2,0): torch 0 is NVML 2, torch 1 is NVML 0
    mapping = nvml_indices_by_uuid({0: "GPU-c", 1: "GPU-a"}, ["GPU-a", "GPU-b", "GPU-c"])
    assert mapping == {0: 2, 1: 0}
    topology = {"method": "nvml", "pairs": [
        {"gpu_a": 0, "gpu_b": 1, "link_class": "NV18", "nvlink_via": "nvswitch"},
        {"gpu_a": 0, "gpu_b": 2, "link_class": "SYS", "nvlink_via": "none"},
        {"gpu_a": 1, "gpu_b": 2, "link_class": "NV18", "nvlink_via": "nvswitch"}]}
    assert select_pairs(topology, mapping) == {"source": "nvml", "link_classes": ["SYS"],
                                               "pairs": [{"gpu_a": 0, "gpu_b": 1, "link_class": "SYS", "nvlink_via": "none"}]}


def test_interface_choice():
    assert pick_interface("10.0.0.5", {"lo": "127.0.0.1", "eth0": "10.0.0.5"}) == "eth0"
    assert pick_interface("127.0.1.1", {"lo": "127.0.0.1", "eth0": "10.0.0.5"}) == "lo"
    assert pick_interface("192.168.1.1", {"lo": "127.0.0.1"}) is None
    assert interface_towards("127.0.0.1", 29571)[0] == pick_interface("127.0.0.1", {"lo": "127.0.0.1"})
    env = {"GLOO_SOCKET_IFNAME": "bond0"}
    assert choose_interface(env, "gloo", "eth1", "10.0.0.1", 1) == ("bond0", "the user's GLOO_SOCKET_IFNAME")
    assert choose_interface({}, "gloo", "eth1", "10.0.0.1", 1) == ("eth1", "the socket_ifname parameter")
    assert choose_interface({}, "nccl", "", "10.0.0.1", 1, detect=lambda address, port: ("ib0", "10.0.0.7")) == (
        "ib0", "detected: it holds 10.0.0.7, the address that routes to 10.0.0.1")

    def no_route(address, port):
        raise OSError("Network is unreachable")
    name, source = choose_interface({}, "gloo", "", "10.9.9.9", 1, detect=no_route)
    assert name == {"unavailable": "no interface found that routes to 10.9.9.9: Network is unreachable"}
    assert source == "detection failed"


def test_unresolvable_master_is_an_os_error():
    with pytest.raises(OSError):
        interface_towards("no-such-host.invalid", 1)

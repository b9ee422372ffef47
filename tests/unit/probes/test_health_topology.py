import pytest

from probelib.nvml.clock_event_reasons import decode_clock_event_reasons, describe_clock_event_reasons
from probelib.nvml.smi_topology import parse_topo_matrix
from probelib.nvml.topology import count_nvlinks_between, link_class, p2p_status_name, topology_level_name

# Captured from `nvidia-smi topo -m` on an H200 host with 2 GPUs (driver 580): it underlines the header with ANSI.
TOPO_H200_X2 = (
    "\t\x1b[4mGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
    "GPU0\t X \tNV18\t0-31\t0\t\tN/A\n"
    "GPU1\tNV18\t X \t0-31\t0\t\tN/A\n"
    "\n"
    "Legend:\n\n"
    "  X    = Self\n"
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
    "  NV#  = Connection traversing a bonded set of # NVLinks\n"
)


def _hgx8_matrix():
    gpus = ["GPU%d" % i for i in range(8)]
    nics = ["NIC%d" % i for i in range(2)]
    header = "\t" + "\t".join(gpus + nics) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"
    rows = [header]
    for i in range(8):
        cells = [" X " if i == j else "NV18" for j in range(8)]
        cells += ["PXB" if i < 4 else "SYS", "SYS" if i < 4 else "PXB"]
        cells += ["0-55,112-167" if i < 4 else "56-111,168-223", "0" if i < 4 else "1", "", "N/A"]
        rows.append("GPU%d\t" % i + "\t".join(cells))
    for n in range(2):
        cells = [("PXB" if (i < 4) == (n == 0) else "SYS") for i in range(8)]
        cells += [" X " if n == m else "SYS" for m in range(2)]
        rows.append("NIC%d\t" % n + "\t".join(cells))
    rows += ["", "Legend:", "", "  X    = Self", "", "NIC Legend:", "", "  NIC0: mlx5_0", "  NIC1: mlx5_1", ""]
    return "\n".join(rows)


def test_parse_two_gpu_matrix_with_ansi_header():
    parsed = parse_topo_matrix(TOPO_H200_X2)
    assert parsed["pairs"] == {(0, 1): "NV18"}
    assert parsed["gpus"] == [
        {"index": 0, "cpu_affinity": "0-31", "numa_affinity": "0", "gpu_numa_id": ""},
        {"index": 1, "cpu_affinity": "0-31", "numa_affinity": "0", "gpu_numa_id": ""},
    ]


def test_parse_eight_gpu_matrix_with_nics():
    parsed = parse_topo_matrix(_hgx8_matrix())
    assert len(parsed["gpus"]) == 8
    assert len(parsed["pairs"]) == 28
    assert set(parsed["pairs"].values()) == {"NV18"}
    assert parsed["gpus"][5]["cpu_affinity"] == "56-111,168-223"
    assert parsed["gpus"][5]["numa_affinity"] == "1"


def test_parse_pcie_only_matrix():
    text = ("\tGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\n"
            "GPU0\t X \tPIX\tSYS\t0-15\t0\n"
            "GPU1\tPIX\t X \tSYS\t0-15\t0\n"
            "GPU2\tSYS\tSYS\t X \t16-31\t1\n")
    assert parse_topo_matrix(text)["pairs"] == {(0, 1): "PIX", (0, 2): "SYS", (1, 2): "SYS"}


def test_parse_rejects_output_without_matrix():
    with pytest.raises(ValueError):
        parse_topo_matrix("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")


@pytest.mark.parametrize("level,name", [(0, "internal"), (10, "PIX"), (20, "PXB"), (30, "PHB"), (40, "NODE"),
                                        (50, "SYS"), (60, "unknown(60)")])
def test_topology_levels(level, name):
    assert topology_level_name(level) == name


def test_p2p_status_names():
    assert p2p_status_name(0) == "ok"
    assert p2p_status_name(4) == "disabled_by_regkey"
    assert p2p_status_name(42) == "unknown(42)"


def test_link_class_prefers_nvlink():
    assert link_class(18, "PHB") == "NV18"
    assert link_class(0, "SYS") == "SYS"
    assert link_class({"unavailable": "x"}, "NODE") == "NODE"


def _links(*entries):
    links = [{"link": i, "state": state, "remote_pci_bus_id": bus, "remote_device_type": kind}
             for i, (state, bus, kind) in enumerate(entries)]
    return {"links": links, "supported_count": len(links),
            "active_count": sum(1 for entry in links if entry["state"] == "active")}


def test_direct_nvlinks_are_counted_by_remote_bus_id():
    a = _links(("active", "0000:1b:00.0", "gpu"), ("active", "0000:1b:00.0", "gpu"),
               ("active", "0000:2c:00.0", "gpu"), ("inactive", "0000:1b:00.0", "gpu"))
    b = _links(("active", "0000:0a:00.0", "gpu"), ("active", "0000:0a:00.0", "gpu"))
    assert count_nvlinks_between(a, b, "0000:0a:00.0", "0000:1b:00.0") == {"count": 2, "via": "direct"}
    c = _links(("active", "0000:77:00.0", "gpu"))
    assert count_nvlinks_between(a, c, "0000:0a:00.0", "0000:99:00.0") == {"count": 0, "via": "none"}
    assert count_nvlinks_between(a, {"unavailable": "no"}, "0000:0a:00.0", "0000:1b:00.0")["count"] == {
        "unavailable": "no"}


def test_nvswitch_links_count_like_nvidia_smi():
    switch = ("active", "ffffffff:ff:ff.0", "switch")
    a = _links(*([switch] * 18))
    b = _links(*([switch] * 17 + [("inactive", None, "switch")]))
    assert count_nvlinks_between(a, b, "0000:00:06.0", "0000:00:07.0") == {"count": 17, "via": "nvswitch"}


def test_throttle_reason_decoding():
    assert decode_clock_event_reasons(0) == []
    assert decode_clock_event_reasons(0x1) == ["gpu_idle"]
    assert decode_clock_event_reasons(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]
    assert decode_clock_event_reasons(0x1000) == ["unknown_bit_0x1000"]
    described = describe_clock_event_reasons(0x88, "nvmlDeviceGetCurrentClocksEventReasons")
    assert described["names"] == ["hw_slowdown", "hw_power_brake_slowdown"]
    assert described["mask_hex"] == "0x0000000000000088"
    assert described["slowdown_active"] is True
    assert describe_clock_event_reasons(0x5, "x")["slowdown_active"] is False

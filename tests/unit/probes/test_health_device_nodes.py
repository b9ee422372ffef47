import os
import stat
from types import SimpleNamespace

from probe_packages.health.device_nodes import (collect_device_nodes, expected_drivers, majors_by_driver,
                                                parse_proc_devices)
from probelib.nvml.access import NvmlSession
from probelib.nvml.context import ReadContext
from probelib.system.roots import SystemRoots

# /proc/devices of an H200 host with driver 580 (major 195 has two names).
PROC_DEVICES_R580 = """Character devices:
  1 mem
  4 /dev/vc/0
  4 tty
195 nvidia
195 nvidiactl
203 cpu/cpuid
238 nvidia-uvm
239 nvidia-nvswitch
240 nvidia-nvlink
241 nvidia-caps
242 nvidia-caps-imex-channels
254 ndctl

Block devices:
  7 loop
195 notachardevice
254 virtblk
"""

# After the 6.8 -> 6.14 kernel upgrade of the incident: uvm moved 504 -> 509, caps 507 -> 237.
PROC_DEVICES_AFTER_UPGRADE = """Character devices:
195 nvidia-frontend
237 nvidia-caps
509 nvidia-uvm

Block devices:
  8 sd
"""


def test_parse_proc_devices_keeps_every_name_of_a_major_and_skips_block_devices():
    majors = parse_proc_devices(PROC_DEVICES_R580)
    assert majors[195] == ["nvidia", "nvidiactl"]
    assert majors[4] == ["/dev/vc/0", "tty"]
    assert majors[238] == ["nvidia-uvm"]
    assert majors[254] == ["ndctl"]  # the block device 254 virtblk is not a character device
    assert 7 not in majors
    by_driver = majors_by_driver(majors)
    assert by_driver["nvidia-caps"] == [241]
    assert by_driver["nvidiactl"] == [195]


def test_expected_drivers_by_node_name():
    assert "nvidia-frontend" in expected_drivers("nvidia0")
    assert "nvidia" in expected_drivers("nvidia17")
    assert "nvidiactl" in expected_drivers("nvidiactl")
    assert expected_drivers("nvidia-uvm") == ("nvidia-uvm",)
    assert expected_drivers("nvidia-uvm-tools") == ("nvidia-uvm",)
    assert expected_drivers("nvidia-caps/nvidia-cap1") == ("nvidia-caps",)
    assert expected_drivers("nvidia-nvswitch3") == ("nvidia-nvswitch",)
    assert expected_drivers("nvidia-something-new") is None


class FakeNvml(NvmlSession):
    def __init__(self, count):
        super().__init__()
        self.device_count = count


def _fake_tree(tmp_path, proc_devices, nodes):
    """nodes: {relative path: (major, minor)}; returns (roots, stat_fn)."""
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "devices").write_text(proc_devices)
    dev = tmp_path / "dev"
    dev.mkdir()
    numbers = {}
    for relative, (major, minor) in nodes.items():
        path = dev / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
        numbers[str(path)] = (major, minor)

    def stat_fn(path):
        if path in numbers:
            major, minor = numbers[path]
            return SimpleNamespace(st_mode=stat.S_IFCHR | 0o666, st_rdev=os.makedev(major, minor))
        return os.stat(path)

    return SystemRoots(proc=str(tmp_path / "proc"), dev=str(dev)), stat_fn


def test_stale_uvm_and_caps_nodes_after_kernel_upgrade_are_named(tmp_path):
    roots, stat_fn = _fake_tree(tmp_path, PROC_DEVICES_AFTER_UPGRADE, {
        "nvidia0": (195, 0), "nvidia1": (195, 1), "nvidiactl": (195, 255),
        "nvidia-uvm": (504, 0), "nvidia-uvm-tools": (504, 1), "nvidia-caps/nvidia-cap1": (507, 1),
    })
    context = ReadContext(params={"device_open_test": False}, nvml=FakeNvml(2), roots=roots)
    result = collect_device_nodes(context, stat_fn=stat_fn)
    by_path = {os.path.relpath(node["path"], roots.dev): node for node in result["nodes"]}
    assert by_path["nvidia0"]["major_matches"] is True
    assert by_path["nvidia-uvm"]["major"] == 504
    assert by_path["nvidia-uvm"]["major_matches"] is False
    assert by_path["nvidia-uvm"]["expected_majors"] == [509]
    assert by_path["nvidia-caps/nvidia-cap1"]["expected_majors"] == [237]
    assert "open_rw" not in by_path["nvidia0"]
    mismatched = sorted(os.path.relpath(m["path"], roots.dev) for m in result["mismatches"])
    assert mismatched == ["nvidia-caps/nvidia-cap1", "nvidia-uvm", "nvidia-uvm-tools"]
    sentence = next(m["sentence"] for m in result["mismatches"] if m["path"].endswith("/nvidia-uvm"))
    assert "504" in sentence and "509" in sentence and "stale" in sentence
    assert result["gpu_node_count"] == 2
    assert result["gpu_node_minors"] == [0, 1]
    assert result["gpu_node_count_matches_nvml"] is True
    assert result["proc_devices_nvidia_majors"] == {"195": ["nvidia-frontend"], "237": ["nvidia-caps"],
                                                    "509": ["nvidia-uvm"]}


def test_matching_nodes_on_r580_have_no_mismatch_and_missing_uvm_is_reported(tmp_path):
    roots, stat_fn = _fake_tree(tmp_path, PROC_DEVICES_R580, {
        "nvidia0": (195, 0), "nvidiactl": (195, 255), "nvidia-caps/nvidia-cap1": (241, 1),
    })
    context = ReadContext(params={"device_open_test": True}, nvml=FakeNvml(3), roots=roots)
    result = collect_device_nodes(context, stat_fn=stat_fn)
    assert result["mismatches"] == []
    assert [m["path"] for m in result["missing_nodes"]] == ["/dev/nvidia-uvm"]
    assert "238" in result["missing_nodes"][0]["sentence"]
    assert result["gpu_node_count"] == 1
    assert result["gpu_node_count_matches_nvml"] is False
    node = next(n for n in result["nodes"] if n["path"].endswith("nvidia0"))
    assert node["drivers_for_major"] == ["nvidia", "nvidiactl"]
    assert node["readable_writable"] is True
    assert node["open_rw"] == "ok"  # the fake node is a plain file we own


def test_unloaded_driver_is_a_mismatch_with_its_own_sentence(tmp_path):
    roots, stat_fn = _fake_tree(tmp_path, "Character devices:\n  1 mem\n", {"nvidia-uvm": (509, 0)})
    context = ReadContext(params={"device_open_test": False}, nvml=FakeNvml(0), roots=roots)
    result = collect_device_nodes(context, stat_fn=stat_fn)
    assert len(result["mismatches"]) == 1
    assert "not loaded" in result["mismatches"][0]["sentence"]

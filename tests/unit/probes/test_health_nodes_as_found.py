"""The health probe reads /dev/nvidia* and the cgroup rules before NVML opens (issue 11, part 6): as root, NVML and CUDA
initialisation re-create a stale node, and a reading made after them no longer shows the incident."""
import os
import stat
from types import SimpleNamespace

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
import fake_pynvml
import health
from probe_packages.health.device_nodes import node_changes
from probelib.nvml.access import NvmlSession
from probelib.system.roots import SystemRoots

PROC_DEVICES = """Character devices:
  1 mem
195 nvidia
195 nvidiactl
238 nvidia-uvm
241 nvidia-caps

Block devices:
  8 sd
"""
UVM_SENTENCE = ("/dev/nvidia-uvm was major 504 when the probe started and 238 after NVML/CUDA initialised: re-created by "
                "the driver while the probe ran as root: a container or a non-root user gets no such repair; its device "
                "rules must allow major 238")
PARAMS = {"cuda_init": False, "cuda_init_timeout_s": 1, "kernel_log_lines": 10, "device_open_test": True}


class FakeHost:
    """A fake root: /proc/devices, a cgroup v1 devices.list, and a /dev of plain files whose device numbers a fake stat
    gives (only root can make real character devices)."""

    def __init__(self, tmp_path, nodes):
        self.roots = SystemRoots(**{name: str(tmp_path / name) for name in ("proc", "sys", "dev", "etc", "root", "var_log")})
        for name in ("proc", "sys", "dev", "etc", "root", "var_log"):
            (tmp_path / name).mkdir()
        (tmp_path / "proc" / "devices").write_text(PROC_DEVICES)
        (tmp_path / "proc" / "driver" / "nvidia").mkdir(parents=True)
        (tmp_path / "proc" / "self").mkdir()
        (tmp_path / "proc" / "self" / "cgroup").write_text("5:devices:/lxc/gpu01\n")
        self.devices_list = tmp_path / "sys" / "fs" / "cgroup" / "devices" / "lxc" / "gpu01" / "devices.list"
        self.devices_list.parent.mkdir(parents=True)
        self.devices_list.write_text("c 195:* rwm\nc 504:* rwm\n")
        self.numbers = {}
        for relative, (major, minor) in nodes.items():
            self.set_node(relative, major, minor)

    def set_node(self, relative, major, minor):
        path = os.path.join(self.roots.dev, relative)
        if not os.path.exists(path):
            with open(path, "w", encoding="utf-8"):
                pass
        self.numbers[path] = (major, minor)

    def stat(self, path):
        if path in self.numbers:
            major, minor = self.numbers[path]
            return SimpleNamespace(st_mode=stat.S_IFCHR | 0o666, st_rdev=os.makedev(major, minor))
        return os.stat(path)


class RepairingNvml(fake_pynvml.FakeModule):
    """nvmlInit as root on a host with a stale /dev/nvidia-uvm: the driver re-creates it with today's major."""

    def __init__(self, host):
        super().__init__(count=2)
        self.host = host

    def nvmlInit(self):
        self.host.set_node("nvidia-uvm", 238, 0)
        # Stands in for anything else that would differ after NVML opened: the rules must be the ones read before.
        self.host.devices_list.write_text("a *:* rwm\n")


def run_probe_on(host, monkeypatch, euid=0, params=None):
    monkeypatch.setattr("os.geteuid", lambda: euid)
    module = RepairingNvml(host)
    result = health.collect(dict(params or PARAMS), roots=host.roots, stat_fn=host.stat,
                            open_nvml=lambda roots: NvmlSession().open(importer=lambda: module, proc_root=roots.proc))
    schema_validator("health.schema.json").validate(result.data)
    return result


@pytest.fixture
def stale_uvm_host(tmp_path):
    return FakeHost(tmp_path, {"nvidia0": (195, 0), "nvidia1": (195, 1), "nvidiactl": (195, 255), "nvidia-uvm": (504, 0)})


def node(section, name):
    return next(entry for entry in section["nodes"] if os.path.basename(entry["path"]) == name)


def test_nodes_are_kept_as_found_when_nvml_repairs_a_stale_node(stale_uvm_host, monkeypatch):
    result = run_probe_on(stale_uvm_host, monkeypatch)
    assert result.status == "ok", result.reason
    nodes = result.data["device_nodes"]
    uvm = node(nodes, "nvidia-uvm")
    assert (uvm["major"], uvm["major_matches"], uvm["expected_majors"]) == (504, False, [238])
    assert [os.path.basename(entry["path"]) for entry in nodes["mismatches"]] == ["nvidia-uvm"]
    assert "504" in nodes["mismatches"][0]["sentence"] and "stale" in nodes["mismatches"][0]["sentence"]
    assert nodes["probe_ran_as_root"] is True
    # what needs NVML is still filled in, after NVML opened; the open test ran as it always did
    assert (nodes["gpu_node_count"], nodes["nvml_gpu_count"], nodes["gpu_node_count_matches_nvml"]) == (2, 2, True)
    assert uvm["open_rw"] == "ok"
    # the second reading, after NVML (and CUDA) initialised, has the repaired node and says what changed
    after = nodes["after_init"]
    assert node(after, "nvidia-uvm")["major"] == 238 and node(after, "nvidia-uvm")["major_matches"] is True
    assert "open_rw" not in node(after, "nvidia-uvm")
    assert after["proc_devices_nvidia_majors"]["238"] == ["nvidia-uvm"]
    path = os.path.join(stale_uvm_host.roots.dev, "nvidia-uvm")
    assert after["changes"] == [{
        "path": path, "change": "changed", "changed_fields": ["major"],
        "before": {"kind": "char", "major": 504, "minor": 0, "mode": "0666"},
        "after": {"kind": "char", "major": 238, "minor": 0, "mode": "0666"},
        "sentence": UVM_SENTENCE.replace("/dev/nvidia-uvm", path),
    }]


def test_cgroup_rules_are_read_before_nvml_opens(stale_uvm_host, monkeypatch):
    cgroup = run_probe_on(stale_uvm_host, monkeypatch).data["cgroup_devices"]
    assert cgroup["rules"] == [{"type": "c", "major": 195, "minor": "*", "access": "rwm"},
                               {"type": "c", "major": 504, "minor": "*", "access": "rwm"}]
    allowed = {entry["driver"]: entry["allowed"] for entry in cgroup["nvidia_majors_allowed"]}
    assert allowed["nvidia-uvm"] is False


def test_a_non_root_run_says_someone_else_recreated_the_node(stale_uvm_host, monkeypatch):
    nodes = run_probe_on(stale_uvm_host, monkeypatch, euid=1000).data["device_nodes"]
    assert nodes["probe_ran_as_root"] is False
    sentence = nodes["after_init"]["changes"][0]["sentence"]
    assert "re-created while the probe ran as a non-root user" in sentence and "must allow major 238" in sentence


def test_nothing_changed_gives_no_change(tmp_path, monkeypatch):
    host = FakeHost(tmp_path, {"nvidia0": (195, 0), "nvidia1": (195, 1), "nvidiactl": (195, 255), "nvidia-uvm": (238, 0)})
    nodes = run_probe_on(host, monkeypatch).data["device_nodes"]
    assert nodes["mismatches"] == [] and nodes["after_init"]["changes"] == []


def test_appeared_vanished_and_several_fields_each_have_a_sentence():
    def char(path, major, minor, mode="0666"):
        return {"path": path, "kind": "char", "major": major, "minor": minor, "mode": mode}

    before = [char("/dev/nvidia0", 195, 0, "0600"), char("/dev/nvidia1", 195, 1), char("/dev/nvidia-caps/nvidia-cap1", 507, 1)]
    after = [char("/dev/nvidia0", 195, 0), char("/dev/nvidia-uvm", 238, 0), char("/dev/nvidia-caps/nvidia-cap1", 241, 2)]
    changes = {change["path"]: change for change in node_changes(before, after, as_root=True)}
    assert changes["/dev/nvidia0"]["sentence"].startswith(
        "/dev/nvidia0 was mode 0600 when the probe started and 0666 after NVML/CUDA initialised: re-created by the driver")
    assert "must allow" not in changes["/dev/nvidia0"]["sentence"]
    assert changes["/dev/nvidia1"]["change"] == "vanished"
    assert changes["/dev/nvidia1"]["sentence"].startswith("/dev/nvidia1 existed (major 195, minor 1, mode 0666) when the "
                                                          "probe started and was gone after NVML/CUDA initialised")
    assert changes["/dev/nvidia-uvm"]["change"] == "appeared" and changes["/dev/nvidia-uvm"]["before"] is None
    assert changes["/dev/nvidia-uvm"]["sentence"] == (
        "/dev/nvidia-uvm was missing when the probe started and appeared (major 238, minor 0, mode 0666) after "
        "NVML/CUDA initialised: created by the driver while the probe ran as root: a container or a non-root user gets "
        "no such repair; its device rules must allow major 238")
    assert changes["/dev/nvidia-caps/nvidia-cap1"]["changed_fields"] == ["major", "minor"]
    assert changes["/dev/nvidia-caps/nvidia-cap1"]["sentence"].startswith(
        "/dev/nvidia-caps/nvidia-cap1 was major 507, minor 1 when the probe started and major 241, minor 2 after")

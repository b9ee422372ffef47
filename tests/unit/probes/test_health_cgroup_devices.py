from probe_packages.health.cgroup_devices import (collect_cgroup_devices, device_allowed, parse_devices_list,
                                                  parse_proc_self_cgroup)
from probelib.nvml.access import NvmlSession
from probelib.nvml.context import ReadContext
from probelib.system.roots import SystemRoots

LXC_DEVICES_LIST = """c 1:3 rwm
c 1:5 rwm
c 195:* rwm
c 504:* rwm
c 507:* rwm
c 136:* rwm
b 238:* rwm
c 241:1 r
"""


def test_parse_devices_list():
    rules = parse_devices_list("a *:* rwm\nc 195:* rwm\nc 509:0 rw\ngarbage\n")
    assert rules == [
        {"type": "a", "major": "*", "minor": "*", "access": "rwm"},
        {"type": "c", "major": 195, "minor": "*", "access": "rwm"},
        {"type": "c", "major": 509, "minor": 0, "access": "rw"},
    ]


def test_allow_decision_for_the_incident():
    rules = parse_devices_list(LXC_DEVICES_LIST)
    assert device_allowed(rules, 195) == {"all_minors": True, "minors": [], "allowed": True}
    # After the upgrade nvidia-uvm is 509: the container still allows only the old 504.
    assert device_allowed(rules, 509)["allowed"] is False
    assert device_allowed(rules, 504)["allowed"] is True
    # A block-device rule does not allow a character device of the same major.
    assert device_allowed(rules, 238)["allowed"] is False
    # Read-only is not enough for CUDA.
    assert device_allowed(rules, 241)["allowed"] is False
    assert device_allowed(rules, 241, access="r") == {"all_minors": False, "minors": [1], "allowed": True}
    assert device_allowed(parse_devices_list("a *:* rwm"), 509)["all_minors"] is True


def test_parse_proc_self_cgroup_v1_and_v2():
    entries = parse_proc_self_cgroup("12:devices:/lxc/gpu01\n11:cpu,cpuacct:/lxc/gpu01\n0::/init.scope\n")
    assert entries[0] == {"hierarchy": "12", "controllers": ["devices"], "path": "/lxc/gpu01"}
    assert entries[1]["controllers"] == ["cpu", "cpuacct"]
    assert entries[2] == {"hierarchy": "0", "controllers": [], "path": "/init.scope"}


def _context(roots):
    return ReadContext(params={}, nvml=NvmlSession(), roots=roots)


def test_cgroup_v1_reads_own_devices_list(tmp_path):
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "cgroup").write_text("5:devices:/lxc/gpu01\n4:memory:/lxc/gpu01\n")
    (tmp_path / "proc" / "devices").write_text(
        "Character devices:\n195 nvidia-frontend\n509 nvidia-uvm\n237 nvidia-caps\n\nBlock devices:\n")
    listing = tmp_path / "sys" / "fs" / "cgroup" / "devices" / "lxc" / "gpu01"
    listing.mkdir(parents=True)
    (listing / "devices.list").write_text(LXC_DEVICES_LIST)
    result = collect_cgroup_devices(_context(SystemRoots(proc=str(tmp_path / "proc"), sys=str(tmp_path / "sys"))))
    assert result["cgroup_version"] == 1
    assert result["devices_list_path"] == str(listing / "devices.list")
    allowed = {entry["driver"]: entry["allowed"] for entry in result["nvidia_majors_allowed"]}
    assert allowed == {"nvidia-frontend": True, "nvidia-caps": False, "nvidia-uvm": False}


def test_cgroup_v2_says_there_is_no_list(tmp_path):
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "cgroup").write_text("0::/user.slice\n")
    (tmp_path / "proc" / "devices").write_text("Character devices:\n195 nvidia\n")
    (tmp_path / "sys" / "fs" / "cgroup").mkdir(parents=True)
    (tmp_path / "sys" / "fs" / "cgroup" / "cgroup.controllers").write_text("cpu memory\n")
    result = collect_cgroup_devices(_context(SystemRoots(proc=str(tmp_path / "proc"), sys=str(tmp_path / "sys"))))
    assert result["cgroup_version"] == 2
    assert "eBPF" in result["rules"]["unavailable"]
    assert "eBPF" in result["nvidia_majors_allowed"]["unavailable"]

import pytest

from probe_packages.health.kernel_log import HARDWARE_XIDS, collect_kernel_log, parse_xid_line
from probe_packages.health.kernel_log_reader import SourceUnreadable, kmsg_record_to_line
from probelib.nvml.access import NvmlSession
from probelib.nvml.context import ReadContext
from probelib.system.roots import SystemRoots

H200_FELL_OFF = ("2025-03-02T10:11:12+0000 gpu07 kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=2814, name=python3, "
                 "GPU has fallen off the bus.")
H100_ROW_REMAP = ("Mar  2 10:11:12 gpu07 kernel: [81234.567890] NVRM: Xid (PCI:0000:9b:00): 63, pid='<unknown>', "
                  "name=<unknown>, Row Remapper: New row marked for remapping, reboot the GPU to activate.")
H100_CONTAINED = ("[ 5123.000001] NVRM: Xid (PCI:0000:4c:00): 94, pid=55102, name=pt_main_thread, "
                  "Contained ECC error.")
H200_GSP_TIMEOUT = ("2025-03-02T10:11:12+0000 gpu07 kernel: NVRM: Xid (PCI:0000:bb:00): 119, pid=1022, "
                    "name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU1 GSP! Expected function "
                    "76 (GSP_RM_CONTROL) (0x20801348 0x4).")
OLD_STYLE_SW = "NVRM: Xid (PCI:0000:00:1e): 13, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Misaligned PC"


def test_parse_xid_79_with_pid_and_name():
    event = parse_xid_line(H200_FELL_OFF)
    assert event["xid"] == 79
    assert event["pci_bus_id"] == "0000:1b:00.0"
    assert event["pid"] == 2814
    assert event["process_name"] == "python3"
    assert event["message"] == "GPU has fallen off the bus."
    assert event["hardware"] is True
    assert event["time"] == "2025-03-02T10:11:12+0000"


def test_parse_xid_63_with_unknown_pid_and_syslog_time():
    event = parse_xid_line(H100_ROW_REMAP)
    assert event["xid"] == 63
    assert event["pid"] is None
    assert event["process_name"] is None
    assert event["message"].startswith("Row Remapper: New row marked")
    assert event["time"] == "Mar  2 10:11:12"
    assert event["hardware"] is True


def test_parse_xid_94_uptime_stamp_and_119():
    event = parse_xid_line(H100_CONTAINED)
    assert (event["xid"], event["pid"], event["process_name"]) == (94, 55102, "pt_main_thread")
    assert event["time"] == "uptime 5123.000001 s"
    gsp = parse_xid_line(H200_GSP_TIMEOUT)
    assert gsp["xid"] == 119 and gsp["hardware"] is True
    assert "GSP_RM_CONTROL" in gsp["message"]


def test_old_style_software_xid_and_non_xid_lines():
    event = parse_xid_line(OLD_STYLE_SW)
    assert event["xid"] == 13
    assert event["hardware"] is False
    assert event["pid"] is None
    assert event["message"].startswith("Graphics SM Warp Exception")
    assert parse_xid_line("NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.159.04") is None
    assert parse_xid_line("nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal") is None


def test_hardware_list_matches_reference():
    assert {48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 94, 95, 119, 120} == HARDWARE_XIDS
    assert 13 not in HARDWARE_XIDS and 31 not in HARDWARE_XIDS and 43 not in HARDWARE_XIDS


def test_kmsg_record_becomes_a_timed_line():
    record = "4,1234,5000000,-;NVRM: Xid (PCI:0000:1b:00): 79, pid=1, name=x, GPU has fallen off the bus.\n SUBSYSTEM=pci\n"
    line = kmsg_record_to_line(record, boot_time=0.0)
    assert line == "1970-01-01T00:00:05+00:00 NVRM: Xid (PCI:0000:1b:00): 79, pid=1, name=x, GPU has fallen off the bus."
    assert kmsg_record_to_line(record, boot_time=None).startswith("[5.000000] NVRM: Xid")


def test_falls_back_to_kern_log_and_maps_events_to_gpus(tmp_path):
    (tmp_path / "log").mkdir()
    (tmp_path / "log" / "kern.log").write_text("\n".join(
        ["Mar  2 10:00:00 gpu07 kernel: something else"] * 5 + [H100_ROW_REMAP, H200_FELL_OFF, OLD_STYLE_SW]) + "\n")
    (tmp_path / "proc" / "sys" / "kernel").mkdir(parents=True)
    (tmp_path / "proc" / "sys" / "kernel" / "dmesg_restrict").write_text("1\n")
    roots = SystemRoots(proc=str(tmp_path / "proc"), dev=str(tmp_path / "dev"), var_log=str(tmp_path / "log"))
    context = ReadContext(params={"kernel_log_lines": 3}, nvml=NvmlSession(), roots=roots)

    def no_journal(max_lines):
        raise SourceUnreadable("journalctl is not installed")

    result = collect_kernel_log(context, bus_ids=["0000:1b:00.0", {"unavailable": "x"}, "0000:9b:00.0"],
                                journal_reader=no_journal)
    assert result["source"] == str(tmp_path / "log" / "kern.log")
    assert result["lines_read"] == 3
    assert [attempt["source"] for attempt in result["attempts"]] == [str(tmp_path / "dev" / "kmsg"), "journalctl -k"]
    assert [event["xid"] for event in result["xid_events"]] == [63, 79, 13]
    assert [event["gpu_index"] for event in result["xid_events"]] == [2, 0, None]
    assert result["xid_counts"] == {"13": 1, "63": 1, "79": 1}
    assert result["hardware_xid_count"] == 2


def test_nothing_readable_gives_a_reason(tmp_path):
    roots = SystemRoots(proc=str(tmp_path), dev=str(tmp_path), var_log=str(tmp_path))
    context = ReadContext(params={}, nvml=NvmlSession(), roots=roots)

    def no_journal(max_lines):
        raise SourceUnreadable("journalctl -k exited with 1: permission denied")

    result = collect_kernel_log(context, journal_reader=no_journal)
    assert set(result) == {"unavailable"}
    assert "no kernel log is readable" in result["unavailable"]
    assert "permission denied" in result["unavailable"]


@pytest.mark.parametrize("restrict", ["1"])
def test_reason_names_dmesg_restrict_for_non_root(tmp_path, monkeypatch, restrict):
    (tmp_path / "sys" / "kernel").mkdir(parents=True)
    (tmp_path / "sys" / "kernel" / "dmesg_restrict").write_text(restrict)
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    from probe_packages.health.kernel_log_reader import restriction_hint
    assert restriction_hint(str(tmp_path)) == "dmesg_restrict=1 and not root"

"""probe_packages.collective.transports: the transports NCCL chose, parsed from realistic NCCL INFO lines."""
from probe_packages.collective.transports import kept_lines, transport_of, transports, via_lines

NVLINK_LOG = """\
h200-a:2211:2290 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.5<0>
h200-a:2211:2290 [0] NCCL INFO NCCL version 2.28.9+cuda13.0
h200-a:2211:2290 [0] NCCL INFO Channel 00/24 :    0   1
h200-a:2211:2290 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
h200-a:2211:2290 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM/read
h200-a:2211:2291 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
h200-a:2211:2290 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 1
"""
SHM_LOG = """\
h200-a:2400:2450 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1
h200-a:2400:2450 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct
h200-a:2400:2450 [0] NCCL INFO Channel 01 : 0[0] -> 1[1] via SHM/direct/direct
"""
MIXED_LOG = """\
n1:10:20 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read
n1:10:20 [0] NCCL INFO Channel 00/0 : 1[1] -> 2[0] [send] via NET/IB/0/GDRDMA
n1:10:20 [0] NCCL INFO Channel 00/0 : 3[1] -> 0[0] [receive] via NET/Socket/1
n1:10:20 [0] NCCL INFO Channel 02/0 : 0[0] -> 1[1] via P2P/direct pointer/read
n1:10:20 [0] NCCL INFO Channel 03/0 : 0[0] -> 1[1] via P2P/CUMEM/CE
torch says: the rendezvous was reached via TCP
"""


def test_nvlink_lines_are_deduplicated_without_host_prefixes():
    lines = via_lines(NVLINK_LOG)
    assert lines == ["NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
                     "NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM/read"]
    assert transports(lines) == ["P2P/CUMEM"]


def test_shm_keeps_only_its_name():
    assert transport_of("NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct") == "SHM"
    assert transports(via_lines(SHM_LOG)) == ["SHM"]


def test_p2p_and_net_keep_their_mechanism():
    lines = via_lines(MIXED_LOG)
    assert len(lines) == 5  # the torch line is not an NCCL INFO line
    assert transports(lines) == ["P2P/IPC", "NET/IB", "NET/Socket", "P2P/direct pointer", "P2P/CUMEM"]


def test_at_most_20_lines_are_kept_and_every_transport_keeps_one():
    many = "".join("x:1:2 [0] NCCL INFO Channel %02d/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n" % channel for channel in range(40))
    many += "x:1:2 [0] NCCL INFO Channel 00 : 1[1] -> 0[0] via SHM/direct/direct\n"
    lines = via_lines(many)
    assert len(lines) == 41
    kept = kept_lines(lines)
    assert len(kept) == 20
    assert kept[-1].endswith("via SHM/direct/direct") and kept[0].startswith("NCCL INFO Channel 00/0")
    assert transports(lines) == ["P2P/CUMEM", "SHM"]
    assert kept_lines(lines[:3]) == lines[:3]


def test_no_lines_no_transports():
    assert via_lines("") == [] and transports([]) == []
    assert via_lines("NCCL INFO Connected all rings\n") == []

"""hostbw NUMA locality: cpulist parsing, which CPUs to pin to, sysfs reading, pinning that is always undone."""
import os

import pytest

from probe_packages.hostbw.numa import (NO_NUMA_NOTE, bus_id_from_torch, choose_cpus, cpus_of, format_cpulist, pinned_thread,
                                        read_locality)


def test_cpulist_parsing():
    assert cpus_of("0-15,32-47") == list(range(16)) + list(range(32, 48))
    assert cpus_of("3,1-2,2\n") == [1, 2, 3]
    assert cpus_of("") == []
    with pytest.raises(ValueError):
        cpus_of("a-b")


def test_cpulist_formatting_round_trips():
    assert format_cpulist([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"
    assert format_cpulist([5]) == "5"
    assert format_cpulist([]) == ""
    assert cpus_of(format_cpulist(list(range(16)) + list(range(32, 48)))) == list(range(16)) + list(range(32, 48))


def test_bus_id_from_torch_properties():
    assert bus_id_from_torch(0, 0x18, 0) == "0000:18:00.0"
    assert bus_id_from_torch(1, 0xAB, 0x1F) == "0001:ab:1f.0"


def test_choose_cpus():
    allowed = set(range(64))
    cpus, note = choose_cpus(1, "16-31,48-63", allowed)
    assert cpus == list(range(16, 32)) + list(range(48, 64))
    assert note == "pinned to NUMA node 1's 32 CPUs (16-31,48-63)"
    cpus, note = choose_cpus(1, "16-31", set(range(20)))
    assert cpus == [16, 17, 18, 19] and note.startswith("pinned to 4 of NUMA node 1's 16 CPUs (16-19")
    assert choose_cpus(-1, "0-63", allowed) == (None, NO_NUMA_NOTE)
    assert "VM?" in NO_NUMA_NOTE
    cpus, note = choose_cpus(0, "0-7", {8, 9})
    assert cpus is None and "none of NUMA node 0's CPUs (0-7) is allowed" in note
    cpus, note = choose_cpus({"unavailable": "no such file"}, {"unavailable": "no such file"}, allowed)
    assert cpus is None and "no such file" in note
    assert choose_cpus(0, "x", allowed)[0] is None


def test_read_locality_from_sysfs(tmp_path):
    directory = tmp_path / "bus" / "pci" / "devices" / "0000:18:00.0"
    directory.mkdir(parents=True)
    (directory / "numa_node").write_text("1\n")
    (directory / "local_cpulist").write_text("16-31,48-63\n")
    assert read_locality("00000000:18:00.0", str(tmp_path)) == {"numa_node": 1, "local_cpulist": "16-31,48-63"}
    missing = read_locality("0000:19:00.0", str(tmp_path))
    assert set(missing["numa_node"]) == {"unavailable"} and set(missing["local_cpulist"]) == {"unavailable"}
    reason = {"unavailable": "no bus id"}
    assert read_locality(reason, str(tmp_path)) == {"numa_node": reason, "local_cpulist": reason}


def test_pinning_is_restored_even_when_the_body_fails():
    original = os.sched_getaffinity(0)
    one = [min(original)]
    with pytest.raises(RuntimeError):
        with pinned_thread(one) as outcome:
            assert outcome == {"pinned": True, "error": None}
            assert os.sched_getaffinity(0) == set(one)
            raise RuntimeError("copy failed")
    assert os.sched_getaffinity(0) == original
    with pinned_thread(None) as outcome:
        assert outcome == {"pinned": False, "error": None} and os.sched_getaffinity(0) == original


def test_pinning_to_a_cpu_that_does_not_exist_is_reported():
    original = os.sched_getaffinity(0)
    with pinned_thread([100000]) as outcome:
        assert not outcome["pinned"] and "sched_setaffinity(100000) failed" in outcome["error"]
    assert os.sched_getaffinity(0) == original

"""Runs collective_hosts for real on this machine: two "hosts" (two probe processes) meeting at 127.0.0.1 over gloo."""
import json
import os
import socket
import subprocess
import time

from probe_runs import PYTHON, probe_path, validate_envelope

PROBE = probe_path("collective_hosts")
KIB = 1024
HINT = "(is every host of the group running? forks in ansible.cfg must be >= the group size)"


def free_port():
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    port = holder.getsockname()[1]
    holder.close()
    return port


def params(node_rank, port, **extra):
    values = {"node_rank": node_rank, "nnodes": 2, "master_addr": "127.0.0.1", "master_port": port, "backend": "gloo",
              "cpu_max_bytes": 256 * KIB, "target_time_per_size_s": 0.01, "warmup": 2, "min_iterations": 3,
              "rendezvous_timeout_s": 60}
    values.update(extra)
    return values


def start(tmp_path, name, given):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "params.json").write_text(json.dumps(given))
    env = dict(os.environ, TMPDIR=str(folder))
    env.pop("GLOO_SOCKET_IFNAME", None)
    process = subprocess.Popen([PYTHON, PROBE, "--params", str(folder / "params.json"), "--out", str(folder / "out.json")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    return process, folder


def finish(started, timeout=180):
    envelopes = []
    for process, folder in started:
        unused_out, err = process.communicate(timeout=timeout)
        assert process.returncode == 0, err.decode()
        envelope = json.loads((folder / "out.json").read_text())
        validate_envelope(envelope, "collective_hosts", empty_data_ok=envelope["status"] == "error")  # bad parameters: no data
        envelopes.append(envelope)
    return envelopes


def shared(envelope):
    (curve,) = envelope["data"]["curves"]
    return [(p["size_bytes"], p["time_us"], p["algbw_gbps"], p["busbw_gbps"], p["iterations"], p["verified"]) for p in curve["sweep"]]


def test_two_hosts_at_once_agree_on_one_curve(tmp_path):
    port = free_port()
    first, second = finish([start(tmp_path, "node0", params(0, port)), start(tmp_path, "node1", params(1, port))])
    for node_rank, envelope in enumerate((first, second)):
        assert envelope["probe"] == "collective_hosts" and envelope["status"] == "ok", envelope["reason"]
        data = envelope["data"]
        assert data["hosts"] == {"node_rank": node_rank, "nnodes": 2, "master_addr": "127.0.0.1", "master_port": port,
                                 "interface": "lo", "interface_source": data["hosts"]["interface_source"], "ranks_per_host": 1}
        assert data["hosts"]["interface_source"].startswith("detected: it holds 127.0.0.1")
        assert data["plan"]["worker_env_set"] == {"GLOO_SOCKET_IFNAME": "lo"}
        assert (data["plan"]["backend"], data["plan"]["kind"], data["plan"]["world_size"]) == ("gloo", "cpu", 2)
        (curve,) = data["curves"]
        assert curve["name"] == "default" and "error" not in curve and data["errors"] == []
        assert [point[0] for point in shared(envelope)] == [8 << shift for shift in range(16)]
        assert all(point[5] for point in shared(envelope))
        assert "gloo across 2 host(s), 1 rank(s) each, 2 in all over interface lo" in data["explanation"]
    assert shared(first) == shared(second)


def test_two_ranks_per_host_make_four_global_ranks(tmp_path):
    port = free_port()
    extra = {"ranks_per_host": 2, "cpu_max_bytes": 16 * KIB}
    first, second = finish([start(tmp_path, "node0", params(0, port, **extra)), start(tmp_path, "node1", params(1, port, **extra))])
    for envelope in (first, second):
        assert envelope["status"] == "ok", envelope["reason"]
        assert envelope["data"]["plan"]["world_size"] == 4 and envelope["data"]["hosts"]["ranks_per_host"] == 2
        for point in envelope["data"]["curves"][0]["sweep"]:
            assert point["verified"] and abs(point["busbw_gbps"] - point["algbw_gbps"] * 1.5) <= point["busbw_gbps"] * 1e-5
    assert shared(first) == shared(second)


def test_a_host_that_never_joins_is_an_actionable_error(tmp_path):
    started = time.monotonic()
    (alone,) = finish([start(tmp_path, "node0", params(0, free_port(), rendezvous_timeout_s=3))])
    assert time.monotonic() - started < 60
    assert alone["status"] == "error"
    assert alone["reason"] == ("failed: curve default, rendezvous: only 1 of 2 ranks joined within 3 s: missing rank(s) 1 "
                               "on node_rank(s) 1 " + HINT)
    assert alone["data"]["curves"][0]["sweep"] == [] and alone["data"]["curves"][0]["error"] in alone["reason"]
    assert "unavailable" in alone["data"]["explanation"]


def test_without_node_rank_0_nothing_answers(tmp_path):
    port = free_port()
    (orphan,) = finish([start(tmp_path, "node1", params(1, port, rendezvous_timeout_s=2))])
    assert orphan["status"] == "error"
    assert "only 0 of 2 ranks joined within 2 s: nothing answered at 127.0.0.1:%d" % port in orphan["reason"]
    assert orphan["reason"].endswith(HINT)


def test_hosts_with_different_parameters_refuse_to_start(tmp_path):
    port = free_port()
    first, second = finish([start(tmp_path, "node0", params(0, port)),
                            start(tmp_path, "node1", params(1, port, cpu_max_bytes=128 * KIB))])
    for envelope in (first, second):
        assert envelope["status"] == "error"
        assert "has another plan than rank" in envelope["reason"] and "sizes_bytes differ" in envelope["reason"]
        assert "give every host the same parameters" in envelope["reason"]


def test_missing_placement_parameters_are_an_error(tmp_path):
    process, folder = start(tmp_path, "bad", {"node_rank": 2, "nnodes": 2})
    (envelope,) = finish([(process, folder)])
    assert envelope["status"] == "error"
    assert "node_rank must be a whole number from 0 to nnodes - 1 = 1" in envelope["reason"]
    assert "master_addr is required" in envelope["reason"]
    process, folder = start(tmp_path, "none", {})
    (envelope,) = finish([(process, folder)])
    assert "nnodes is required" in envelope["reason"]


def test_one_rank_in_all_is_unavailable(tmp_path):
    (envelope,) = finish([start(tmp_path, "one", {"nnodes": 1, "master_addr": "127.0.0.1", "backend": "gloo"})])
    assert envelope["status"] == "unavailable"
    assert envelope["reason"] == "nnodes x ranks_per_host = 1: an all-reduce needs at least 2 ranks"

"""probe_packages.collective.environment: only allow-listed variables reach a result; what the workers get."""
import json

from probe_packages.collective.environment import (allowed_environment, debug_settings, nccl_version_text, no_transport_lines_reason,
                                                   socket_settings, worker_environment)
from probe_packages.collective.outcome import outcome_of

ENVIRON = {
    "NCCL_NVLS_ENABLE": "0", "NCCL_DEBUG_FILE": "/tmp/nccl.%h", "TORCH_NCCL_BLOCKING_WAIT": "1", "GLOO_SOCKET_IFNAME": "eth0",
    "CUDA_VISIBLE_DEVICES": "0,1", "CUDA_DEVICE_MAX_CONNECTIONS": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    "AWS_SECRET_ACCESS_KEY": "hunter2", "HOME": "/root", "PATH": "/usr/bin", "MY_NCCL_TOKEN": "s3cret", "nccl_debug": "lower",
    "CUDA_HOME": "/usr/local/cuda", "CUDA_VISIBLE_DEVICES_EXTRA": "x", "TORCH_DISTRIBUTED_DEBUG": "DETAIL", "GLOOX": "no",
}


def test_only_allow_listed_variables_and_their_values():
    allowed = allowed_environment(ENVIRON)
    assert allowed == {
        "CUDA_DEVICE_MAX_CONNECTIONS": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "0,1",
        "GLOO_SOCKET_IFNAME": "eth0", "NCCL_DEBUG_FILE": "/tmp/nccl.%h", "NCCL_NVLS_ENABLE": "0", "TORCH_NCCL_BLOCKING_WAIT": "1",
    }
    text = json.dumps(allowed)
    for secret in ("hunter2", "s3cret", "/root", "/usr/bin", "lower", "DETAIL", "/usr/local/cuda"):
        assert secret not in text
    assert list(allowed) == sorted(allowed)
    assert allowed_environment({}) == {}


def test_nccl_debug_is_set_for_the_workers_only_when_the_user_did_not():
    assert debug_settings({}, "nccl") == {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT"}
    assert debug_settings({"NCCL_DEBUG": "WARN"}, "nccl") == {}
    assert debug_settings({}, "gloo") == {}


def test_socket_interface_is_set_unless_the_user_set_it():
    assert socket_settings({}, "gloo", "eth0") == {"GLOO_SOCKET_IFNAME": "eth0"}
    assert socket_settings({}, "nccl", "ib0") == {"NCCL_SOCKET_IFNAME": "ib0"}
    assert socket_settings({"GLOO_SOCKET_IFNAME": "lo"}, "gloo", "eth0") == {}
    assert socket_settings({}, "gloo", None) == {}


def test_worker_environment_layers_settings_and_rank_variables():
    env = worker_environment({"PATH": "/usr/bin", "NCCL_DEBUG_SUBSYS": "NET"}, {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT"},
                             {"RANK": 1, "WORLD_SIZE": 2, "LOCAL_RANK": 1, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": 29571})
    assert env == {"PATH": "/usr/bin", "NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT", "RANK": "1", "WORLD_SIZE": "2",
                   "LOCAL_RANK": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29571"}


def test_why_no_transport_lines():
    assert "NCCL_DEBUG=WARN was set by the user" in no_transport_lines_reason({"NCCL_DEBUG": "WARN"}, {})
    assert "without INIT" in no_transport_lines_reason({"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "NET"}, {})
    assert "NCCL_DEBUG_FILE" in no_transport_lines_reason({"NCCL_DEBUG_FILE": "/tmp/x"}, {"NCCL_DEBUG": "INFO"})
    assert "no NCCL 'Channel ... via ...' line" in no_transport_lines_reason({}, {"NCCL_DEBUG": "INFO"})


def test_nccl_version_text():
    assert nccl_version_text((2, 28, 9)) == "2.28.9"
    assert nccl_version_text(22809) == "2.28.9"
    assert nccl_version_text(2708) == "2.7.8"


def test_status_and_reason():
    measured = {"name": "default", "sweep": [{"size_bytes": 8}]}
    assert outcome_of([measured], []) == ("ok", "")
    error = {"curve": "p2p_disabled", "what": "sweep", "error": "rank 1 failed"}
    assert outcome_of([measured, {"name": "p2p_disabled", "sweep": []}], [error])[0] == "partial"
    assert outcome_of([{"name": "default", "sweep": []}], [error])[0] == "error"
    assert outcome_of([], [])[0] == "error"
    assert outcome_of([measured], [error]) == ("partial", "failed: curve p2p_disabled, sweep: rank 1 failed")

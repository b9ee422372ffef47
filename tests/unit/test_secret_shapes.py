"""Secrets by shape (issue 32): a credential-shaped value is redacted whatever variable carries it, at the source (the
probe records the variable as set), on the host (the module) and on the controller before it is stored; ordinary values
(InfiniBand devices, PCI bus ids, GPU UUIDs, digests, versions, paths) are left alone."""
import json
import os
import random
import string

import pytest

from ansible_collections.gpufleet.validation.plugins.module_utils import secret_redaction
from ansible_collections.gpufleet.validation.plugins.module_utils.secret_redaction import (
    CREDENTIAL_MARKER,
    SecretRedactor,
    is_high_entropy,
    looks_like_credential,
    redact_credentials,
)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.results import store_result
from probe_packages.collective.environment import allowed_environment
from probe_packages.health.platform_info import relevant_environment
from probelib import secret_shapes

HERE = os.path.dirname(os.path.abspath(__file__))
HEALTH_OK = os.path.join(os.path.dirname(HERE), "fixtures", "health_h200x2_ok_by_the_action.json")
ALNUM = string.ascii_letters + string.digits

# Made-up tokens of each documented shape (none is a real credential).
TOKENS = (
    "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "gho_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2",
    "ghs_" + "q" * 10 + "W" * 10 + "3" * 16,
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ",
    "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567",
    "AKIAIOSFODNN7EXAMPLE",
    "ASIAY34FZKBOKMUTVV7A",
    "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "xoxp-1234567890-abcdefghij",
    "sk-proj-" + "Ab3" * 16,
    "sk-" + "Ab3" * 16,
    "sk-ant-api03-" + "Ab3" * 30 + "-AA",
    "glpat-" + "x1Y2z3" * 4,
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
)
HIGH_ENTROPY = (
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",  # the AWS documentation's example secret key
    "8xnLlzBbhIruflpc8atT3B7HI380EHpy",
    "Qm9vZ2llV29vZ2llQm9vZ2llV29vZ2ll9Xq3+Lk2/aZ7=",
)
ORDINARY = (
    "mlx5_0,mlx5_1", "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1", "=mlx5_0", "00000000:17:00.0", "0000:CA:00.0",
    "GPU-8a7b6c5d-1234-5678-9abc-def012345678", "MIG-8a7b6c5d-1234-5678-9abc-def012345678",
    "GPU-8A7B6C5D-1234-5678-9ABC-DEF012345678", "0,1,2,3,4,5,6,7", "eth0", "^docker0,lo", "INFO", "INIT,NET",
    "ab" * 32, "0x" + "DeadBeef" * 5, "2.11.0+cu130.post1.dev20261130gitabcdef",
    "/opt/NVIDIA/cuda-12.4/lib64/libcudart.so.12", "./Bench/Results2026/H200xNodeA01Run17Final",
    "NVIDIA_H200_SXM_141GB_HBM3e_v2_x", "HPC-X_v2.18-CUDA12-gcc-ubuntu22.04", "TORCH_NCCL_ASYNC_ERROR_HANDLING1",
    "nvidia-h200-sxm-141gb-node-a01-rack3", "task-runner-sk-1", "disk-AKIA", "the ghp_ prefix",
    "sk-seoul-gpu-h200-node-0017", "sk-hynix-hbm3e-12hi-141gb-rack-07-node",
)


@pytest.mark.parametrize("token", TOKENS)
def test_a_token_shaped_value_is_redacted_anywhere_in_any_text(token):
    text = "NCCL_IB_HCA=%s; also in '%s' and \"x\":\"%s\"" % (token, token, token)
    assert token not in redact_credentials(text) and redact_credentials(text).count(CREDENTIAL_MARKER) == 3
    assert looks_like_credential(token) and secret_shapes.looks_like_credential(token)


@pytest.mark.parametrize("value", HIGH_ENTROPY)
def test_a_high_entropy_value_is_a_credential(value):
    assert is_high_entropy(value) and secret_shapes.is_high_entropy(value)


def test_generated_keys_are_high_entropy():
    generator = random.Random(32)
    keys = ["".join(generator.choice(ALNUM) for unused_char in range(length)) for length in (32, 40, 64)
            for unused_key in range(500)]
    missed = [key for key in keys if not is_high_entropy(key)]
    assert len(missed) <= len(keys) // 200, missed[:5]  # a key with no digit or no capital is missed: 0.4 % at 32


@pytest.mark.parametrize("value", ORDINARY)
def test_an_ordinary_value_is_not_a_credential(value):
    assert not looks_like_credential(value) and not secret_shapes.looks_like_credential(value)
    assert redact_credentials({"NCCL_IB_HCA": value, "text": "x %s y" % value}) == {"NCCL_IB_HCA": value, "text": "x %s y" % value}


URLS_WITH_PASSWORDS = (
    ("postgresql://svc:S3cr3t!pw@db.internal:5432/app", "postgresql://svc:%s@db.internal:5432/app"),
    ("redis://:pw123@cache:6379/0", "redis://:%s@cache:6379/0"),
    ("amqps://guest:gu%40est@mq/vhost", "amqps://guest:%s@mq/vhost"),
)
URLS_WITHOUT = ("https://huggingface.co/meta-llama/Llama-3.1-8B", "http://user@host:8080/x", "git@github.com:org/repo.git",
                "https://host/path?next=a:b@c", "file:///opt/torch/.venv/bin/python3", "tcp://10.0.0.1:29500")


@pytest.mark.parametrize("url, redacted", URLS_WITH_PASSWORDS)
def test_a_url_s_password_is_redacted_whatever_carries_it(url, redacted):
    """Issue 45: DATABASE_URL=postgresql://svc:<password>@db... (no secret-looking name) reached health.json, the
    dossiers, the index, fleet.json, junit.xml and the console."""
    text = "connect failed: %s (from $DATABASE_URL=%s)" % (url, url)
    shown = redact_credentials({"reason": text, "errors": [url]})
    assert shown == {"reason": "connect failed: %s (from $DATABASE_URL=%s)" % (redacted % CREDENTIAL_MARKER, redacted % CREDENTIAL_MARKER),
                     "errors": [redacted % CREDENTIAL_MARKER]}
    assert redact_credentials(shown) == shown  # the marker itself is no password
    assert looks_like_credential(url) and secret_shapes.looks_like_credential(url)
    assert SecretRedactor({"DATABASE_URL": url}).text("echo %s" % url) == "echo <redacted: $DATABASE_URL>"


@pytest.mark.parametrize("url", URLS_WITHOUT)
def test_a_url_without_a_password_is_left_alone(url):
    assert redact_credentials(url) == url and not looks_like_credential(url)


def test_the_probes_copy_is_the_same_definition():
    for name in ("CREDENTIAL_MARKER", "TOKEN_SHAPES", "URL_PASSWORD_SHAPE", "HIGH_ENTROPY_MIN_CHARS", "HIGH_ENTROPY_MIN_RUN",
                 "HIGH_ENTROPY_MIN_BITS"):
        assert getattr(secret_shapes, name) == getattr(secret_redaction, name), name
    for name in ("_HIGH_ENTROPY_CHARS", "_NEVER_HIGH_ENTROPY", "_ALNUM_RUN"):
        assert getattr(secret_shapes, name).pattern == getattr(secret_redaction, name).pattern, name


def test_an_allow_listed_variable_is_shown_as_set_not_its_value():
    environ = {"NCCL_IB_HCA": TOKENS[0], "NCCL_SOCKET_IFNAME": HIGH_ENTROPY[1], "NCCL_IB_GID_INDEX": "3",
               "CUDA_VISIBLE_DEVICES": "GPU-8a7b6c5d-1234-5678-9abc-def012345678", "NCCL_NET": "mlx5_0,mlx5_1", "HOME": "/root"}
    expected = {"NCCL_IB_HCA": CREDENTIAL_MARKER, "NCCL_SOCKET_IFNAME": CREDENTIAL_MARKER, "NCCL_IB_GID_INDEX": "3",
                "CUDA_VISIBLE_DEVICES": "GPU-8a7b6c5d-1234-5678-9abc-def012345678", "NCCL_NET": "mlx5_0,mlx5_1"}
    assert relevant_environment(environ) == expected
    assert allowed_environment(environ) == expected


def test_the_module_redacts_a_credential_shaped_value_of_any_variable_everywhere():
    redactor = SecretRedactor({"NCCL_IB_HCA": TOKENS[0], "NCCL_DEBUG_FILE": HIGH_ENTROPY[1], "NCCL_NET": "mlx5_0"})
    envelope = {"reason": "NCCL said %s" % TOKENS[0], "command": ["x", HIGH_ENTROPY[1]],
                "data": {"env": {"NCCL_IB_HCA": TOKENS[0], "NCCL_NET": "mlx5_0"}, "log": "key %s" % TOKENS[4]}}
    shown = json.dumps(redactor.deep(envelope))
    assert all(secret not in shown for secret in (TOKENS[0], TOKENS[4], HIGH_ENTROPY[1])), shown
    assert '"NCCL_NET": "mlx5_0"' in shown and redactor.tokens_redacted and "NCCL_DEBUG_FILE" in redactor.redacted


def test_the_controller_redacts_again_before_it_stores(tmp_path):
    with open(HEALTH_OK, encoding="utf-8") as handle:
        envelope = json.load(handle)
    environment = {"NCCL_IB_HCA": TOKENS[0], "NCCL_SOCKET_IFNAME": HIGH_ENTROPY[1], "NCCL_NET": "mlx5_0,mlx5_1"}
    envelope["data"]["platform"]["relevant_environment"] = environment
    envelope["data"]["platform"]["cmdline"] = "BOOT_IMAGE=/vmlinuz ro aws_key=%s" % TOKENS[5]
    stored = store_result(str(tmp_path / "gpu-a01" / "health.json"), envelope)
    text = (tmp_path / "gpu-a01" / "health.json").read_text()
    assert all(secret not in text for secret in (TOKENS[0], TOKENS[5], HIGH_ENTROPY[1])), text
    assert stored["data"]["platform"]["relevant_environment"] == {
        "NCCL_IB_HCA": CREDENTIAL_MARKER, "NCCL_SOCKET_IFNAME": CREDENTIAL_MARKER, "NCCL_NET": "mlx5_0,mlx5_1"}
    assert stored["status"] == envelope["status"] and not (tmp_path / "gpu-a01" / "health.raw").exists()

"""persistence_mode on hand-made NVML readings."""
from probe_packages.toolchain.persistence import decide


def gpu(index, mode):
    return {"index": index, "uuid": "GPU-%d" % index, "persistence_mode": mode}


def test_all_enabled_passes():
    contract = decide([gpu(0, 1), gpu(1, 1)], None)
    assert contract["status"] == "pass" and contract["observed"] == "persistence mode is enabled on all 2 GPU(s)"
    assert contract["details"]["gpus"] == [{"index": 0, "uuid": "GPU-0", "enabled": True},
                                           {"index": 1, "uuid": "GPU-1", "enabled": True}]


def test_one_disabled_fails_even_when_another_is_unread():
    contract = decide([gpu(0, 1), gpu(1, 0), gpu(2, {"unavailable": "not supported by this GPU"})], None)
    assert contract["status"] == "fail" and contract["details"]["disabled"] == [1] and contract["details"]["unread"] == [2]
    assert contract["remedy"].startswith("Enable it as root with nvidia-smi -i 1 -pm 1")
    assert "never changes it" in contract["remedy"]


def test_the_remedy_names_every_disabled_gpu_as_nvidia_smi_takes_them():
    contract = decide([gpu(0, 0), gpu(1, 1), gpu(2, 0)], None)
    assert contract["observed"] == "persistence mode is disabled on 2 of 3 GPU(s): 0, 2"
    assert contract["remedy"].startswith("Enable it as root with nvidia-smi -i 0,2 -pm 1,")


def test_undecidable():
    assert decide([gpu(0, 1), gpu(1, {"unavailable": "x"})], None)["status"] == "unavailable"
    assert decide([], None)["observed"] == "not decided: NVML lists no GPU"
    contract = decide(None, "NVML library not found")
    assert contract["status"] == "unavailable" and "NVML library not found" in contract["observed"]

"""gemm verifies each case: the product before timing against the product after, bit for bit; the injected bit flip
(the test aid inject_bit_flip) is caught on the CPU path by the real probe run, with the case, dtype and magnitude."""
import math

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from probe_runs import run_probe

SHAPES = [{"name": "tiny-square", "m": 64, "n": 64, "k": 64}, {"name": "tiny-decode", "m": 4, "n": 512, "k": 256}]


def _run(tmp_path, **given):
    pytest.importorskip("torch")
    params = {"quick": True, "memory_bandwidth_gbps": 20, "repeats": 1, "device": "cpu", "shapes": SHAPES}
    params.update(given)
    envelope = run_probe(tmp_path, "gemm", params)
    assert envelope["status"] == "ok", envelope["reason"]
    schema_validator("gemm.schema.json").validate(envelope["data"])
    return {result["name"]: result for result in envelope["data"]["devices"][0]["results"]}


def test_every_timed_case_is_verified_bit_for_bit(tmp_path):
    results = _run(tmp_path)
    assert set(results) == {"square-512", "tiny-square", "tiny-decode"}
    for result in results.values():
        verification = result["verification"]
        assert verification["mode"] == "bitwise" and verification["deterministic"] is True, result["name"]
        assert verification["equal"] is True and verification["differing_elements"] == 0 and verification["max_abs_diff"] == 0.0
        assert "injected" not in verification


@pytest.mark.parametrize("bit", [0, 15])
def test_an_injected_bit_flip_is_caught_with_the_case_and_its_magnitude(tmp_path, bit):
    injection = {"case": "tiny-decode", "dtype": "bf16", "element": 513, "bit": bit}
    results = _run(tmp_path, inject_bit_flip=injection)
    hit = results["tiny-decode"]["verification"]
    assert hit["injected"] == injection
    assert hit["equal"] is False and hit["differing_elements"] == 1 and hit["first_index"] == [1, 1]
    if bit == 15:  # the sign: |diff| = 2 |value|
        assert hit["first_got"] == -hit["first_expected"] and hit["max_abs_diff"] == pytest.approx(2 * abs(hit["first_expected"]), rel=1e-3)
    else:  # the lowest mantissa bit: one unit in the last place of a bf16 (7 stored mantissa bits) at that value
        assert hit["max_abs_diff"] == pytest.approx(2.0 ** (math.floor(math.log2(abs(hit["first_expected"]))) - 7), rel=1e-5)
    for name in ("square-512", "tiny-square"):
        assert results[name]["verification"]["equal"] is True, name

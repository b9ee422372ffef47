"""The comparison of a product with its reference (probelib.measure.bit_compare) and gemm's per-case verifier, on CPU
torch: a single flipped bit anywhere is found with its index and magnitude; a product that is not deterministic at rest
is compared within the stated tolerance (a low bit passes, a sign flip does not); the digest follows every bit."""
import pytest

from probe_packages.gemm.verify import CaseVerifier
from probelib.measure import bit_compare

torch = pytest.importorskip("torch")


def _product(dtype=None):
    generator = torch.Generator().manual_seed(7)
    a = torch.randn(32, 48, generator=generator)
    b = torch.randn(48, 40, generator=generator)
    product = a @ b
    return product.to(dtype) if dtype is not None else product


@pytest.mark.parametrize("dtype, bits", [(torch.bfloat16, 16), (torch.float16, 16), (torch.float32, 32)])
def test_every_single_bit_flip_is_found_with_its_index_and_magnitude(dtype, bits):
    reference = _product(dtype)
    for bit in range(bits):
        result = reference.clone()
        bit_compare.flip_bit(torch, result, 77, bit)
        outcome = bit_compare.compare(torch, result, reference)
        assert outcome["equal"] is False and outcome["differing_elements"] == 1, bit
        assert outcome["first_index"] == [1, 37], bit  # 77 = 1 x 40 + 37
        assert outcome["first_expected"] == pytest.approx(float(reference[1, 37]), rel=1e-5)
        got = outcome["first_got"]
        if isinstance(got, str):
            assert got in ("nan", "inf", "-inf") and outcome["max_abs_diff"] in ("nan", "inf"), (bit, outcome)
        else:
            assert outcome["max_abs_diff"] == pytest.approx(abs(got - outcome["first_expected"]), rel=1e-2, abs=1e-30), bit
    assert bit_compare.compare(torch, reference.clone(), reference) == {"equal": True, "differing_elements": 0, "max_abs_diff": 0.0}


def test_a_flipped_bit_is_one_element_and_the_zero_signs_differ_bit_for_bit():
    zero = torch.zeros(4, 4)
    negative = zero.clone()
    negative[2, 3] = -0.0
    assert bit_compare.compare(torch, negative, zero)["differing_elements"] == 1  # -0 and +0: different bits


def test_the_digest_follows_every_bit():
    reference = _product(torch.bfloat16)
    flipped = reference.clone()
    bit_compare.flip_bit(torch, flipped, 0, 0)
    assert bit_compare.sha256_of(torch, reference) == bit_compare.sha256_of(torch, reference.clone())
    assert bit_compare.sha256_of(torch, reference) != bit_compare.sha256_of(torch, flipped)


def test_a_bit_beyond_the_element_is_refused():
    with pytest.raises(ValueError, match="cannot flip bit 16"):
        bit_compare.flip_bit(torch, _product(torch.bfloat16), 0, 16)


class Noisy:
    """A product that is not deterministic: every call flips the lowest mantissa bit of a different element."""

    def __init__(self):
        self.calls = 0
        self.reference = _product(torch.float32)

    def __call__(self):
        self.calls += 1
        result = self.reference.clone()
        bit_compare.flip_bit(torch, result, self.calls, 0)
        return result


def test_the_verifier_finds_a_flip_bit_for_bit_where_the_product_is_deterministic():
    product = _product(torch.float32)
    verifier = CaseVerifier(torch, {"case": "c", "element": 5, "bit": 3}, 0, "fp32", "c")
    verifier.before(product.clone)
    unused_result, record = verifier.after(product.clone)
    assert record["mode"] == "bitwise" and record["deterministic"] is True  # the two at rest agreed
    assert record["equal"] is False and record["differing_elements"] == 1 and record["first_index"] == [0, 5]
    assert record["injected"] == {"case": "c", "element": 5, "bit": 3}


def test_the_verifier_leaves_other_cases_devices_and_dtypes_alone():
    product = _product(torch.float32)
    for device, dtype, case in ((1, "fp32", "c"), (0, "bf16", "c"), (0, "fp32", "other")):
        verifier = CaseVerifier(torch, {"case": "c", "dtype": "fp32", "device_index": 0}, device, dtype, case)
        verifier.before(product.clone)
        assert verifier.after(product.clone)[1]["equal"] is True


def test_a_product_that_is_not_deterministic_is_compared_within_the_stated_tolerance():
    noisy = Noisy()
    verifier = CaseVerifier(torch, None, 0, "fp32", "c")
    verifier.before(noisy)
    unused_result, record = verifier.after(noisy)
    assert record["mode"] == "tolerance" and record["deterministic"] is False
    assert record["at_rest_difference"]["differing_elements"] == 2
    largest = float(noisy.reference.abs().max())
    assert record["tolerance"] == pytest.approx(8 * torch.finfo(torch.float32).eps * largest, rel=1e-5)
    assert record["equal"] is True and record["differing_elements"] == 0  # a last-bit difference is within it


def test_a_sign_flip_is_caught_even_within_the_tolerance():
    noisy = Noisy()
    verifier = CaseVerifier(torch, {"case": "c", "element": 500, "bit": 31}, 0, "fp32", "c")
    verifier.before(noisy)
    unused_result, record = verifier.after(noisy)
    assert record["mode"] == "tolerance" and record["equal"] is False and record["differing_elements"] == 1
    assert record["first_index"] == [12, 20] and record["first_got"] == -record["first_expected"]


def test_a_failing_product_before_timing_leaves_the_verification_unavailable():
    def broken():
        raise RuntimeError("CUDA out of memory")

    verifier = CaseVerifier(torch, None, 0, "fp32", "c")
    verifier.before(broken)
    unused_result, record = verifier.after(_product(torch.float32).clone)
    assert record == {"unavailable": "the product before timing failed: RuntimeError: CUDA out of memory"}

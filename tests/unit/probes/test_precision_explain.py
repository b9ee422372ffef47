"""Rankings, reversals and the explaining sentences, on hand-made format entries."""
import math

from probe_packages.precision import explain

LABELS = {"fp16": "fp16", "bf16": "bf16", "fp8_e4m3": "fp8 e4m3", "fp8_e5m2": "fp8 e5m2", "int8_per_tensor": "int8 per-tensor",
          "int8_per_channel": "int8 per-channel", "int4_per_tensor": "int4 per-tensor", "int4_per_channel": "int4 per-channel"}
BITS = {"fp16": (16, "none", 0.0), "bf16": (16, "none", 0.0), "fp8_e4m3": (8, "tensor", 1e-6), "fp8_e5m2": (8, "tensor", 1e-6),
        "int8_per_tensor": (8, "tensor", 1e-6), "int8_per_channel": (8, "channel", 0.125),
        "int4_per_tensor": (4, "tensor", 1e-6), "int4_per_channel": (4, "channel", 0.125)}
STATS = {"kurtosis_pearson": 4.75, "outlier_fraction": 6.1e-05,
         "channel_absmax": {"axis": 0, "channels": 4, "min": 0.1, "median": 0.2, "max": 1.5, "max_over_median": 7.5}}
IN_RANGE = {"above_max_count": 0, "below_smallest_subnormal_count": 0}


def entry(name, sqnr, outcome="finite", overflow=0, flushed=0):
    bits, granularity, scale_bits = BITS[name]
    return {"format": name, "label": LABELS[name], "bits_per_element": bits, "granularity": granularity,
            "effective_bits_per_element": bits + scale_bits, "sqnr_db": sqnr if outcome == "finite" else None,
            "exact": outcome == "exact", "outcome": outcome, "overflow_count": overflow, "flushed_to_zero_count": flushed}


def minilm_mlp():
    """The numbers of all-MiniLM-L6-v2's encoder.layer.0.intermediate.dense.weight, rounded."""
    return [entry("fp16", 73.7), entry("bf16", 55.6), entry("fp8_e4m3", 31.5, flushed=24), entry("fp8_e5m2", 25.6),
            entry("int8_per_tensor", 25.5), entry("int8_per_channel", 42.4), entry("int4_per_tensor", 1.7),
            entry("int4_per_channel", 17.2)]


def kinds(items):
    return [item["kind"] for item in items]


def test_rankings_by_width_and_by_sqnr():
    formats = minilm_mlp()
    assert explain.ranking_by_bits(formats) == ["fp16", "bf16", "int8_per_channel", "fp8_e4m3", "fp8_e5m2", "int8_per_tensor",
                                                "int4_per_channel", "int4_per_tensor"]
    assert explain.ranking_by_sqnr(formats) == ["fp16", "bf16", "int8_per_channel", "fp8_e4m3", "fp8_e5m2", "int8_per_tensor",
                                                "int4_per_channel", "int4_per_tensor"]
    formats[1] = entry("bf16", None, outcome="exact")
    formats[0] = entry("fp16", None, outcome="infinite", overflow=3)
    assert explain.ranking_by_sqnr(formats)[0] == "bf16" and explain.ranking_by_sqnr(formats)[-1] == "fp16"
    assert explain.rank_value(formats[1]) == math.inf and explain.rank_value(formats[0]) == -math.inf


def test_no_reversal_on_minilm_but_a_scaling_reversal_and_the_outlier_effect():
    items = explain.findings(minilm_mlp(), STATS, IN_RANGE)
    assert kinds(items) == ["scaling_reversal", "outlier", "outlier", "range", "fp8", "same_width", "no_reversal"]
    text = {item["kind"]: item["text"] for item in items}
    assert text["scaling_reversal"] == (
        "Scaling reversal at 8 bits: with one scale per tensor fp8 e4m3 (31.5 dB) beats int8 (25.5 dB), since its exponent "
        "spaces levels finely near zero where a uniform grid sized to the absmax is coarse; with one scale per row int8 "
        "(42.4 dB) beats fp8 e4m3 by 10.9 dB, the rows' absmaxima spanning 7.5 x (max / median).")
    assert items[1]["text"].startswith("Outlier effect: int8 per-tensor is 16.9 dB below per-channel (25.5 dB against 42.4 dB): "
                                       "the largest row absmax is 7.5 x the median row's (kurtosis 4.8")
    assert "(absmax / 7)" in items[2]["text"] and "15.5 dB below" in items[2]["text"]
    assert text["range"] == "fp16 beats bf16 by 18.1 dB at the same 16 bits: no element lies outside fp16's range, so its 10 " \
                            "mantissa bits beat bf16's 7."
    assert text["fp8"].startswith("fp8 e4m3 beats e5m2 by 5.9 dB") and "(24 against 0 elements flushed to zero)" in text["fp8"]
    assert text["same_width"] == "Among the 8-bit formats int8 per-channel leads at 42.4 dB and int8 per-tensor trails at 25.5 dB."
    assert explain.explanation(items).startswith("Scaling reversal at 8 bits:")
    assert explain.reversals(minilm_mlp()) == []


def test_a_format_with_fewer_bits_beating_one_with_more_is_a_reversal():
    formats = minilm_mlp()
    formats[3] = entry("fp8_e5m2", 15.0)  # below int4 per-channel's 17.2 dB
    found = explain.reversals(formats)
    assert found == [{"fewer_bits": "int4_per_channel", "fewer_bits_per_element": 4, "fewer_bits_sqnr_db": 17.2,
                      "more_bits": "fp8_e5m2", "more_bits_per_element": 8, "more_bits_sqnr_db": 15.0,
                      "margin_db": pytest_approx(2.2)}]
    items = explain.findings(formats, STATS, IN_RANGE)
    assert items[0]["kind"] == "reversal" and "no_reversal" not in kinds(items)
    assert items[0]["text"] == ("Reversal: int4 per-channel (4 bits) reaches 17.2 dB, above fp8 e5m2 (8 bits) at 15.0 dB, "
                                "because fp8 e5m2 spends its bits on exponent range (2 mantissa bits) that a scaled tensor does "
                                "not need, while the integer grid spends them all on uniform steps.")


def test_per_channel_int4_beating_per_tensor_int8_names_the_row_spread():
    formats = minilm_mlp()
    formats[4] = entry("int8_per_tensor", 12.0)
    items = explain.findings(formats, STATS, IN_RANGE)
    assert items[0]["text"].startswith("Reversal: int4 per-channel (4 bits) reaches 17.2 dB, above int8 per-tensor (8 bits) at "
                                       "12.0 dB, because a scale per row follows each row's range, and the row absmaxima span "
                                       "7.5 x (max / median)")


def test_fp16_overflow_is_a_range_reversal():
    formats = minilm_mlp()
    formats[0] = entry("fp16", None, outcome="infinite", overflow=2)
    items = explain.findings(formats, STATS, {"above_max_count": 2, "below_smallest_subnormal_count": 0})
    assert items[0]["text"].startswith("Reversal: int8 per-channel (8 bits) reaches 42.4 dB, above fp16 (16 bits) at an "
                                       "infinite error, because fp16 overflows 2 element(s) to inf")
    assert "; 5 more pair(s) with fewer bits and a higher SQNR" in items[0]["text"]
    text = {item["kind"]: item["text"] for item in items}
    assert text["range"] == ("Range reversal: bf16 (55.6 dB) beats fp16 (an infinite error) at the same 16 bits because of 2 "
                             "element(s) above fp16's largest value 65504 (inf in fp16); bf16's 8-bit exponent keeps them.")


def test_fp16_underflow_is_named_when_it_does_not_decide():
    formats = minilm_mlp()
    formats[0] = entry("fp16", 73.7, flushed=2)
    text = explain.fp16_sentence({item["format"]: item for item in formats},
                                 {"above_max_count": 0, "below_smallest_subnormal_count": 13})
    assert text == ("fp16 beats bf16 by 18.1 dB at the same 16 bits; 13 nonzero element(s) below fp16's smallest subnormal "
                    "5.96e-08, 2 flushed to zero in fp16, too few to outweigh fp16's precision.")


def test_close_rows_and_e5m2_winning():
    stats = dict(STATS, channel_absmax={"max_over_median": 1.3})
    formats = minilm_mlp()
    formats[4] = entry("int8_per_tensor", 41.0)
    formats[6] = entry("int4_per_tensor", 16.0)
    items = explain.findings(formats, stats, IN_RANGE)
    assert "outlier" in kinds(items) and items[kinds(items).index("outlier")]["text"].startswith(
        "Per-channel scaling gains 1.4 dB over per-tensor for int8: the row absmaxima lie within 1.3 x of the median row's")
    formats[3] = entry("fp8_e5m2", 33.0, flushed=0)
    formats[2] = entry("fp8_e4m3", 30.0, flushed=500)
    assert explain.fp8_sentence({item["format"]: item for item in formats}) == (
        "fp8 e5m2 beats e4m3 by 3.0 dB: the tensor's dynamic range exceeds e4m3's, which flushes 500 nonzero element(s) to "
        "zero against e5m2's 0.")


def test_missing_formats_and_spreads_are_skipped():
    formats = [entry("fp16", 70.0), entry("int8_per_tensor", 30.0)]
    items = explain.findings(formats, {"channel_absmax": {"unavailable": "a 1-D tensor has no channel axis"}}, IN_RANGE)
    assert kinds(items) == ["no_reversal"]
    assert explain.outlier_sentence({}, STATS, "int8") is None


def pytest_approx(value):
    import pytest  # pylint: disable=import-outside-toplevel
    return pytest.approx(value)

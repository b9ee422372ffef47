"""The precision probe's dossier section: statistics, every format's error, both rankings, the explanation."""
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.precision.view import precision_view


def texts(table):
    return [[cell.text for cell in row] for row in table["rows"]]


def test_precision_section_lists_statistics_formats_rankings_and_the_explanation():
    data = {"checkpoint": {"path": "/m/model.safetensors", "source": "package", "sha256": "ab" * 32},
            "device": {"kind": "cuda", "name": "NVIDIA H200"},
            "tensors": [{"name": "emb.weight", "picked_by": "rule: largest embedding", "shape": [4, 2], "dtype": "F32",
                         "stats": {"min": -1.0, "max": 2.0, "absmax": 2.0, "std": 0.5, "kurtosis_pearson": 3.5,
                                   "outlier_fraction": 0.0, "channel_absmax": {"min": 0.5, "max": 2.0, "max_over_median": 2.5}},
                         "formats": [{"format": "fp16", "label": "fp16", "bits_per_element": 16, "effective_bits_per_element": 16.0,
                                      "relative_error": 0.0002, "sqnr_db": 73.7, "exact": False, "flushed_to_zero_count": 0,
                                      "overflow_count": 3, "scale_note": "no scale"},
                                     {"format": "int8_per_channel", "label": "int8 per-channel", "bits_per_element": 8,
                                      "effective_bits_per_element": 8.5, "relative_error": 0.0, "sqnr_db": None, "exact": True,
                                      "flushed_to_zero_count": 0, "overflow_count": 0, "scale_note": "row absmax / 127"}],
                         "ranking_by_bits": ["fp16", "int8_per_channel"], "ranking_by_sqnr": ["int8_per_channel", "fp16"],
                         "explanation": "int8 per-channel <b>beats</b> fp16 here."},
                        {"name": "bad.weight", "error": "dtype I64 is not a float format"}]}
    view = precision_view(data)
    tensors, formats, rankings = view["tables"]
    assert texts(tensors)[0][:3] == ["emb.weight", "4 × 2 F32", "-1"]
    assert texts(tensors)[0][8] == "0.5 … 2 (max / median 2.5)"
    assert texts(tensors)[1][1] == "failed" and tensors["rows"][1][1].note == "dtype I64 is not a float format"
    assert texts(formats) == [["emb.weight", "fp16", "16", "0.0002", "73.7", "0", "3"],
                              ["emb.weight", "int8 per-channel", "8.5", "0", "exact", "0", "0"]]
    assert formats["rows"][0][6].flag == "bad"
    assert texts(rankings) == [["emb.weight", "fp16 > int8_per_channel", "int8_per_channel > fp16"]]
    assert "emb.weight: int8 per-channel <b>beats</b> fp16 here." in view["note"]  # escaped by the template, not here
    assert "Computed on NVIDIA H200" in view["note"] and "no claim about model quality" in view["note"]


def test_the_checkpoint_is_named_by_its_description_when_the_result_has_one():
    described = {"path": "/root/.ansible_async/j.work/probe_packages/precision/data/minilm_l6_v2_slice.safetensors", "source": "shipped",
                 "sha256": "cd" * 32, "description": "the collection's shipped slice probe_packages/precision/data/x (Apache-2.0)"}
    note = precision_view({"checkpoint": described, "tensors": []})["note"]
    assert note.startswith("Checkpoint: the collection's shipped slice probe_packages/precision/data/x (Apache-2.0).")
    assert ".ansible_async" not in note  # the job's work directory is gone after the run
    older = precision_view({"checkpoint": {"path": "/m/model.safetensors", "source": "package", "sha256": "ab" * 32}})["note"]
    assert older.startswith("Checkpoint /m/model.safetensors (package, sha256 abababababababab).")

"""hostbw with one repeat: no spread can be computed, so cv_pct is unavailable (as membw writes it), never a made-up 0 %;
the envelope and its data still match their schemas, and the judge's hostbw metrics still read the medians."""
from probe_runs import run_probe, validate_envelope

CV_NEEDS_TWO = {"unavailable": "a coefficient of variation needs at least 2 repeats"}


def test_one_repeat_writes_an_unavailable_cv(tmp_path):
    envelope = run_probe(tmp_path, "hostbw", {"repeats": 1, "cpu_buffer_mib": 4, "buffer_mib": 64, "pageable": False,
                                              "bidirectional": False}, timeout=120)
    validate_envelope(envelope, "hostbw")
    assert envelope["status"] == "ok", envelope["reason"]
    results = [result for device in envelope["data"]["devices"] for result in device["results"]]
    assert results and all(result["cv_pct"] == CV_NEEDS_TWO and len(result["repeats_gbps"]) == 1 for result in results)
    assert all(result["median_gbps"] == result["repeats_gbps"][0] for result in results)


def test_two_repeats_write_a_number(tmp_path):
    envelope = run_probe(tmp_path, "hostbw", {"repeats": 2, "cpu_buffer_mib": 4, "buffer_mib": 64, "pageable": False,
                                              "bidirectional": False}, timeout=120)
    validate_envelope(envelope, "hostbw")
    results = [result for device in envelope["data"]["devices"] for result in device["results"]]
    assert results and all(isinstance(result["cv_pct"], float) and result["cv_pct"] >= 0 for result in results)


def test_the_judge_and_the_report_read_a_single_repeat():
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.hostbw.judging import hostbw_measurements
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.hostbw.view import hostbw_view

    result = {"direction": "h2d", "host_memory": "pinned", "bytes_per_copy": 1 << 30, "copies_per_repeat": 20,
              "repeats_gbps": [55.1], "median_gbps": 55.1, "cv_pct": CV_NEEDS_TWO,
              "data_check": {"checked_elements": 4096, "mismatched_elements": 0, "ok": True}, "pct_of_link_raw": 87.4}
    data = {"devices": [{"kind": "cuda", "index": 0, "name": "NVIDIA H200", "uuid": "GPU-0", "results": [result]}]}
    [measurement] = hostbw_measurements(data)
    assert measurement.value == 55.1 and measurement.missing is None
    [row] = hostbw_view(data)["tables"][0]["rows"]
    assert (row[3].text, row[3].note, row[3].flag) == ("n/a", CV_NEEDS_TWO["unavailable"], "na")

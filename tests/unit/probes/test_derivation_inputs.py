"""A derivation is handed what it declares it needs (issue 47): the core reads the same run's result of each probe named
in needs= and hands over what that probe gives; a package reads neither the store nor another probe's package."""
import json
import os
import shutil

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.declaration import DeclarationError, ProbeRun
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.derivation import handed_to
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import declaration, with_derived_params

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
RIG_MEMBW = os.path.join(ROOT, "docs", "examples", "h200x2", "20261130T035514Z-509823", "localhost", "membw.json")


def test_a_derivation_is_handed_only_the_results_its_declaration_needs(tmp_path):
    shutil.copy(RIG_MEMBW, tmp_path / "membw.json")
    handed = handed_to(declaration("gemm"), str(tmp_path), list)
    assert sorted(handed.given("membw")["bandwidth_gbps"].values()) == [4244.4, 4246.29]
    with pytest.raises(DeclarationError, match="probe toy reads the result of membw, which its declaration does not name"):
        handed_to(ProbeRun(name="toy", run_order=50, timeout_s=60, profiles={}), str(tmp_path), list).given("membw")
    assert handed_to(declaration("gemm"), str(tmp_path / "nothing"), list).given("membw") is None


def test_gemm_is_handed_membw_s_headlines_by_the_core(tmp_path):
    shutil.copy(RIG_MEMBW, tmp_path / "membw.json")
    with open(RIG_MEMBW, encoding="utf-8") as handle:
        membw = json.load(handle)["data"]

    def unread():
        raise AssertionError("gemm read the baselines although the peaks were given")
    params, notes = with_derived_params("gemm", str(tmp_path), {"peak_tflops": {"bf16": 1.0}}, unread)
    assert params["memory_bandwidth_gbps"] == declaration("membw").gives(membw)["bandwidth_gbps"] != {}
    assert notes == ["memory_bandwidth_gbps from this run's membw result"]

"""gemm's dossier section shows how many cases' products were verified and each case that differed; a result from
before the verification shows no such table."""
import json
import os

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.gemm.view import gemm_view

RIG_RUN = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                       "docs", "examples", "h200x2", "20261130T054132Z-520925", "localhost")


def _data():
    with open(os.path.join(RIG_RUN, "gemm.json")) as handle:
        return json.load(handle)["data"]


def _verification_tables(data):
    return [table for table in gemm_view(data)["tables"] if table["title"].startswith("Products verified")]


def test_the_table_counts_the_verified_cases_and_names_the_one_that_differed():
    data = _data()
    device = data["devices"][0]
    timed = [result for result in device["results"] if isinstance(result["measurement"], dict) and "tflops" in result["measurement"]]
    for result in timed:
        result["verification"] = {"mode": "bitwise", "deterministic": True, "tolerance": None, "equal": True,
                                  "differing_elements": 0, "max_abs_diff": 0.0}
    timed[0]["verification"] = dict(timed[0]["verification"], equal=False, differing_elements=2, first_index=[3, 4],
                                    first_got=0.5, first_expected=0.25, max_abs_diff=0.25)
    (table,) = _verification_tables(data)
    first = [cell.text for cell in table["rows"][0]]
    assert first[1] == "%d of %d" % (len(timed), len(timed)) and first[2] == "0"
    assert first[3] == "%s %s: 2 elements differ, the first at [3, 4] (got 0.5, expected 0.25), max |diff| 0.25" % (
        timed[0]["name"], timed[0]["dtype"])
    assert table["rows"][0][3].flag == "bad"


def test_a_result_from_before_the_verification_has_no_table():
    assert _verification_tables(_data()) == []

"""A probe's output that Python's json would misread is refused in one line, and kept in .raw (issue 32): the last
of two "status" keys won (an error stored as ok), a result nested 200,000 deep became a raw RecursionError traceback,
NaN and 1e400 passed as numbers no schema bounds. The store reads results back through the same parse."""
from __future__ import annotations

import json
import os

import pytest

from ansible_collections.gpufleet.validation.plugins.module_utils import strict_json
from ansible_collections.gpufleet.validation.plugins.module_utils.probe_envelope import interpret
from ansible_collections.gpufleet.validation.plugins.module_utils.probe_process import ProcessOutcome
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.read import read_envelope
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.results import store_result

ENVELOPE_HEAD = ('{"schema_version": "1", "probe": "health", "host": "h", "started": "2026-12-01T00:00:00+00:00", '
                 '"duration_s": 1.0, "command": [], "environment": {}, "reason": "", ')
DUPLICATE_STATUS = ENVELOPE_HEAD + '"status": "error", "data": {}, "status": "ok"}'
DEEP = ENVELOPE_HEAD + '"status": "ok", "data": {"x": ' + "[" * 200000 + "]" * 200000 + "}}"
CASES = [
    (DUPLICATE_STATUS, 'the key "status" appears twice in one object'),
    (DEEP, "nested deeper than %d levels" % strict_json.MAX_DEPTH),
    (ENVELOPE_HEAD + '"status": "ok", "data": {"power_w": NaN}}', "it holds NaN, which is not a JSON number"),
    (ENVELOPE_HEAD + '"status": "ok", "data": {"power_w": Infinity}}', "it holds Infinity"),
    (ENVELOPE_HEAD + '"status": "ok", "data": {"power_w": 1e400}}', "the number 1e400 is beyond the range of a float"),
    (ENVELOPE_HEAD + '"status": "ok", "data": {"count": 1' + "0" * 40 + '}}', "is beyond 64 bits"),
]


def _interpret(text):
    outcome = ProcessOutcome(["python3", "health.py"], 0, False, 1.0)
    return interpret("health", "node-01", outcome, text.encode("utf-8"), "", "2026-12-01T00:00:00+00:00", "python3")


@pytest.mark.parametrize("text, words", CASES)
def test_the_probe_module_refuses_it_in_one_line_and_keeps_the_output(text, words):
    envelope, raw = _interpret(text)
    assert envelope["status"] == "error"
    assert words in envelope["reason"], envelope["reason"]
    assert "\n" not in envelope["reason"] and "Traceback" not in envelope["reason"]
    assert "kept beside the result" in envelope["reason"]
    assert raw is not None and raw[:200] == text[:200]


@pytest.mark.parametrize("text, words", CASES)
def test_the_store_refuses_it_when_read_back(tmp_path, text, words):
    (tmp_path / "health.json").write_text(text)
    with pytest.raises(ValueError) as raised:
        read_envelope(str(tmp_path), "health")
    assert words in str(raised.value) and "\n" not in str(raised.value)


def test_the_refused_output_is_stored_as_an_error_beside_its_raw_text(tmp_path):
    """What the action plugin does with the module's answer: the error envelope as the result, the output as .raw."""
    envelope, raw = _interpret(DUPLICATE_STATUS)
    stored = store_result(str(tmp_path / "health.json"), envelope, raw)
    assert stored["status"] == "error"
    assert json.loads((tmp_path / "health.json").read_text())["status"] == "error"
    assert (tmp_path / "health.raw").read_text() == DUPLICATE_STATUS


def test_sound_results_parse_as_json_does():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for name in sorted(os.listdir(os.path.join(root, "fixtures"))):
        if name.endswith(".json"):
            with open(os.path.join(root, "fixtures", name), encoding="utf-8") as handle:
                text = handle.read()
            assert strict_json.loads(text) == json.loads(text), name


@pytest.mark.parametrize("text, depth", [("1", 0), ("[]", 1), ('{"a": [[1], {"b": "]]]]}"}]}', 3),
                                         ('["[[[[\\"[[[", [[]]]', 3), ("[" * 100 + "]" * 100, strict_json.MAX_DEPTH + 1)])
def test_nesting_is_counted_outside_strings(text, depth):
    assert strict_json.nesting_depth(text) == depth


@pytest.mark.parametrize("text", ['{"a": "[[", "b": [["]"]]}', '["\\\\", "[{"]', '["a\\\\\\"[", [[1]]]', '["[[', '"]]" [[[',
                                  '{"x": ' + "[" * 70 + '"]"' + "]" * 70 + "}", '[1, "{{{{", {"k": "}"}]'])
def test_strings_cut_at_quotes_count_as_the_matched_strings_do(text):
    """The quick cut (no escaped quote, quotes in pairs) and the match of each string leave the same brackets."""
    assert strict_json._outside_strings(text) == strict_json._JSON_STRING.sub("", text)  # pylint: disable=protected-access


@pytest.mark.parametrize("number, words", [("18446744073709551616", "beyond 64 bits"), ("-18446744073709551616", "beyond 64 bits"),
                                           ("1e400", "beyond the range of a float"), ("1E+309", "beyond the range of a float"),
                                           ("-2.5e0400", "beyond the range of a float"),
                                           ("1" + "0" * 400 + ".5", "beyond the range of a float")])
def test_a_number_too_large_is_refused_among_many_sound_ones(number, words):
    text = '{"rows": [%s], "last": %s, "name": "e99 and 12345678901234567890"}' % (", ".join(["1.5e10", "18446744073709551615"] * 50), number)
    with pytest.raises(strict_json.StrictJSONError, match=words):
        strict_json.loads(text)


def test_numbers_read_the_same_with_or_without_the_bound_checks():
    text = '[18446744073709551615, -9223372036854775808, 1.7976931348623157e+308, 5e-324, 0.1, 1e99, -0.0, 12, "1e400"]'
    assert strict_json.loads(text) == json.loads(text)
    assert [type(value) for value in strict_json.loads(text)] == [type(value) for value in json.loads(text)]

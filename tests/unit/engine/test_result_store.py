"""Validation and storage on the controller: a result that breaks its schema is rejected, never lost."""
import copy
import json
import os

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store import schemas as schemas_module
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.results import store_result
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import (
    envelope_problems, schemas_digest, stored_envelope_problems)

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "fixtures",
                       "health_h200x2_ok_by_hand_anonymised.json")
PROVENANCE = {"run_id": "20261130T000000Z-000001", "collection_version": "0.1.0", "probe_sha256": "a" * 64,
              "params": {"cuda_init": False}}


@pytest.fixture
def h200_envelope():
    with open(FIXTURE) as handle:
        envelope = json.load(handle)
    envelope.update(PROVENANCE)
    return envelope


def stored_files(tmp_path):
    return sorted(path.name for path in tmp_path.iterdir())


def test_a_sound_h200_result_is_stored_as_it_came(tmp_path, h200_envelope):
    path = str(tmp_path / "health.json")
    stored = store_result(path, copy.deepcopy(h200_envelope))
    # as it came, and saying which schemas it was validated against
    assert stored == dict(h200_envelope, schemas_sha256=schemas_digest())
    with open(path) as handle:
        assert json.load(handle) == stored
    assert stored_files(tmp_path) == ["health.json"]


def test_a_result_that_breaks_its_schema_becomes_an_error_and_is_kept_raw(tmp_path, h200_envelope):
    h200_envelope["data"]["gpus"][1]["power"]["draw_w"] = "81 W"
    path = str(tmp_path / "health.json")
    stored = store_result(path, copy.deepcopy(h200_envelope))
    assert stored["status"] == "error"
    assert "breaks its schema" in stored["reason"]
    assert "data.gpus[1].power.draw_w" in stored["reason"]
    assert stored["run_id"] == PROVENANCE["run_id"] and stored["probe_sha256"] == PROVENANCE["probe_sha256"]
    assert stored["params"] == PROVENANCE["params"]  # what it ran with, for the dossier's command to run it again
    assert stored["schemas_sha256"] == schemas_digest() and envelope_problems(stored) == []
    assert stored_files(tmp_path) == ["health.json", "health.raw"]
    with open(str(tmp_path / "health.raw")) as handle:
        assert json.load(handle) == h200_envelope


@pytest.mark.parametrize("mutate, expected", [
    (lambda envelope: envelope.update(status="fine"), "envelope.status"),
    (lambda envelope: envelope.update(reason="something"), "envelope.reason"),
    (lambda envelope: envelope.pop("data"), "'data' is a required property"),
    (lambda envelope: envelope.update(token="s3cr3t"), "Additional properties are not allowed"),
    (lambda envelope: envelope["data"].pop("gpus"), "'gpus' is a required property"),
])
def test_each_kind_of_violation_is_named(tmp_path, h200_envelope, mutate, expected):
    mutate(h200_envelope)
    stored = store_result(str(tmp_path / "health.json"), h200_envelope)
    assert stored["status"] == "error"
    assert expected in stored["reason"]


def test_an_unavailable_result_without_data_is_accepted(tmp_path):
    envelope = {"schema_version": "1", "probe": "health", "host": "node-01", "status": "unavailable",
                "started": "2026-11-30T00:00:00+00:00", "duration_s": 0.4, "command": ["python3", "health.py"],
                "environment": {}, "reason": "torch is not importable", "data": {}}
    stored = store_result(str(tmp_path / "health.json"), dict(envelope, **PROVENANCE))
    assert stored["status"] == "unavailable"


def test_a_raw_output_passed_in_is_kept_beside_the_error(tmp_path):
    envelope = {"schema_version": "1", "probe": "health", "host": "node-01", "status": "error",
                "started": "2026-11-30T00:00:00+00:00", "duration_s": 0.4, "command": ["python3", "health.py"],
                "environment": {}, "reason": "the probe's result file is not valid JSON", "data": {}}
    store_result(str(tmp_path / "health.json"), envelope, raw_output="{not json")
    assert (tmp_path / "health.raw").read_text() == "{not json"


def test_an_unwritable_results_directory_raises_and_leaves_no_partial_file(tmp_path, h200_envelope):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the host directory should be")
    with pytest.raises(OSError):
        store_result(str(blocked / "health.json"), h200_envelope)
    assert blocked.read_text() == "a file where the host directory should be"


def test_a_stored_result_is_not_validated_again_by_the_same_schemas_and_is_by_others(tmp_path, h200_envelope):
    stored = store_result(str(tmp_path / "health.json"), copy.deepcopy(h200_envelope))
    assert stored_envelope_problems(stored) == []
    # The digest is the proof that these schemas validated it: a result that claims it is trusted as the run's own
    # results are (so an edit that breaks it after storing is not caught here, as it is not for them) ...
    edited = copy.deepcopy(stored)
    edited["data"]["gpus"][0]["power"]["draw_w"] = "81 W"
    assert stored_envelope_problems(edited) == []
    # ... and one stored under other schemas (an older collection, or none recorded) is validated again.
    for claim in ("0" * 64, None):
        older = dict(edited, schemas_sha256=claim) if claim else {k: v for k, v in edited.items() if k != "schemas_sha256"}
        problems = stored_envelope_problems(older)
        assert any("data.gpus[0].power.draw_w" in problem for problem in problems), problems


def test_the_schemas_digest_changes_with_any_schema_file(tmp_path):
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    (schemas / "a.schema.json").write_text("{}")
    (schemas / "notes.txt").write_text("not a schema")
    digests = []
    for change in (lambda: None, lambda: (schemas / "b.schema.json").write_text("{}"),
                   lambda: (schemas / "b.schema.json").write_text("{ }"), lambda: (schemas / "notes.txt").write_text("")):
        change()
        schemas_module._schemas_digest.cache_clear()  # pylint: disable=protected-access
        digests.append(schemas_digest(str(tmp_path)))
    schemas_module._schemas_digest.cache_clear()  # pylint: disable=protected-access
    assert len(set(digests[:3])) == 3 and digests[3] == digests[2]

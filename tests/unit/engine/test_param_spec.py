"""Issue 33: a probe's parameters are one spec (plugins/plugin_utils/probes/<name>/params.json) that the host's runner,
check_inputs and the docs read. A typo (cuda_inti) or a value out of range in probe_params is refused by check_inputs
before anything runs (it used to go ahead and end the probe in error); the host refuses the same values."""
from __future__ import annotations

import io
import json
import os
import shutil
import zipfile

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils import probe_archive
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit import param_spec
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_variables_check import declared_params_problems, host_problems
from probelib import params as host_params
from probelib.runner import ParameterError, read_params

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PROBES = probe_archive.available_probes(ROOT)
OTHER_VALUES = [None, True, False, 0, 1, -1, 2.5, -0.5, 1e300, "", "x", "auto", [], [1], [0], [1, 1], [2.5], ["bf16"], ["x"],
                [""], {}, {"cpu": 1.0}, {"cpu": 0}, {"bf16": 100}, {"nope": 1}, {"cpu": "fast"}]


def _corpus(schema):
    """Values around what the schema allows: its default, its bounds and just beyond, its enum and one more, other types."""
    values = [schema["default"]] + list(schema.get("enum", [])) + ["not-an-option"]
    for keyword in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        if keyword in schema:
            bound = schema[keyword]
            values += [bound, bound - 1, bound + 1, bound + 0.5, float(bound)]
    if "multipleOf" in schema:
        values += [schema["multipleOf"] * 3, schema["multipleOf"] * 3 + 1]
    return values + OTHER_VALUES


def test_every_probe_script_has_a_sound_spec_whose_defaults_it_allows():
    assert len(PROBES) >= 12 and "collective_hosts" in PROBES
    for probe in PROBES:
        assert param_spec.spec_problems(probe, ROOT) == [], probe


def test_a_malformed_spec_is_caught(tmp_path):
    root = tmp_path / "collection"
    folder = root / "plugins" / "plugin_utils" / "probes" / "fake"
    folder.mkdir(parents=True)
    spec = {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "fake parameters", "type": "object",
            "additionalProperties": False, "properties": {"n": {"type": "int", "default": 1, "description": "n", "max": 3}}}
    (folder / "params.json").write_text(json.dumps(spec))
    problems = param_spec.spec_problems("fake", str(root))
    assert problems and all(problem.startswith("fake params.json: ") for problem in problems)
    spec["properties"]["n"] = {"type": "integer", "default": 0, "minimum": 1, "description": "n"}
    (folder / "params.json").write_text(json.dumps(spec))
    param_spec._load.cache_clear()  # pylint: disable=protected-access
    assert param_spec.spec_problems("fake", str(root)) == ["fake params.json: the default of n: 0 is less than the minimum of 1"]


def test_a_typo_in_probe_params_is_refused_by_check_inputs_naming_the_known_parameters():
    problems = host_problems({"probe_params": {"health": {"cuda_inti": False}}}, PROBES, None)
    assert problems == ["probe_params.health.cuda_inti: no such parameter of the health probe "
                        "(known: cuda_init, cuda_init_timeout_s, device_open_test, kernel_log_lines)"]


@pytest.mark.parametrize("probe, given, words", [
    ("membw", {"repeats": 0}, "probe_params.membw.repeats: 0 is less than the minimum of 1"),
    ("health", {"kernel_log_lines": "many"}, "probe_params.health.kernel_log_lines: 'many' is not of type 'integer'"),
    ("load", {"dtype": "fp8"}, "probe_params.load.dtype: 'fp8' is not one of ['bf16', 'fp16']"),
    ("toolchain", {"cuda_timeout_s": 7200}, "probe_params.toolchain.cuda_timeout_s: 7200 is greater than the maximum of 3600"),
])
def test_a_value_out_of_range_is_refused_on_both_sides_with_what_it_allows(probe, given, words):
    problems = host_problems({"probe_params": {probe: given}}, PROBES, None)
    assert len(problems) == 1 and problems[0].startswith(words) and "(allowed: " in problems[0], problems
    with pytest.raises(ParameterError):
        read_params(None, host_params.load_spec(probe), json.dumps(given))


def test_sound_probe_params_pass_and_fill_the_defaults_on_the_host():
    assert host_problems({"probe_params": {"membw": {"repeats": 5, "quick": True}, "tuning": {}}}, PROBES, None) == []
    merged = read_params(None, host_params.load_spec("membw"), '{"repeats": 5}')
    assert merged["repeats"] == 5 and merged["target_point_ms"] == 100.0 and merged["sizes_mib"] == []


def test_the_profiles_declared_parameters_fit_the_specs():
    assert declared_params_problems() == []


@pytest.mark.parametrize("probe", PROBES)
def test_the_host_validator_and_jsonschema_agree_on_every_parameter(probe):
    spec = host_params.load_spec(probe)
    assert spec == param_spec.load_spec(probe, ROOT)
    for name, schema in host_params.parameters(spec).items():
        for value in _corpus(schema):
            host = host_params.problems(spec, {name: value})
            controller = param_spec.params_problems(probe, {name: value}, "p", ROOT)
            assert bool(host) == bool(controller), (probe, name, value, host, controller)


def test_the_host_refuses_an_unknown_parameter_as_the_controller_does():
    spec = host_params.load_spec("health")
    assert host_params.problems(spec, {"cuda_inti": False}) == [
        "unknown parameter 'cuda_inti' (known: cuda_init, cuda_init_timeout_s, device_open_test, kernel_log_lines)"]


def test_the_zip_carries_the_spec_where_the_runner_reads_it():
    # the runner's first place, relative to the probes' directory (the zip's top): probe_packages/<name>/params.json
    first_place = os.path.relpath(host_params.SPEC_PLACES[0], probe_archive.probes_dir(ROOT)).replace(os.sep, "/")
    assert first_place == "probe_packages/{name}/params.json"
    for probe in PROBES:
        payload, unused_sha = probe_archive.build_probe_archive(probe, ROOT)
        with zipfile.ZipFile(io.BytesIO(payload)) as bundle:
            packed = bundle.read(first_place.format(name=probe))
        with open(probe_archive.params_spec_path(probe, ROOT), "rb") as handle:
            assert packed == handle.read()


def test_a_probe_without_a_spec_is_not_packed(tmp_path):
    root = tmp_path / "collection"
    shutil.copytree(os.path.join(ROOT, "probes"), str(root / "probes"), ignore=shutil.ignore_patterns("__pycache__"))
    with pytest.raises(FileNotFoundError, match="the probe health has no parameter spec"):
        probe_archive.build_probe_archive("health", str(root))


def test_the_runner_finds_the_spec_in_the_zip_layout_first(tmp_path):
    (tmp_path / "fake").mkdir()
    (tmp_path / "fake" / "params.json").write_text(json.dumps({"properties": {"n": {"type": "integer", "default": 2}}}))
    places = [str(tmp_path / "{name}" / "params.json"), str(tmp_path / "nowhere" / "{name}.json")]
    assert host_params.defaults(host_params.load_spec("fake", places)) == {"n": 2}
    with pytest.raises(ParameterError, match="the probe other has no parameter spec"):
        host_params.load_spec("other", places)

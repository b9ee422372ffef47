"""What the tests that run a probe for real share: the Python that runs it, its schemas, one run by argv (no shell),
the envelope check the engine makes, and the header every probe schema carries."""
import copy
import json
import os
import subprocess
import sys

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import load_schema, schema_validator

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
VENV_PYTHON = os.path.join(ROOT, ".venv-test", "bin", "python")
PYTHON = VENV_PYTHON if os.path.exists(VENV_PYTHON) else sys.executable
UNAVAILABLE = {"type": "object", "required": ["unavailable"],
               "properties": {"unavailable": {"type": "string", "minLength": 1}}, "additionalProperties": False}
UNAVAILABLE_REF = "common.schema.json#/$defs/unavailable"


def probe_path(probe):
    """probes/<probe>.py in this checkout."""
    return os.path.join(ROOT, "probes", probe + ".py")


def schema(name):
    """A copy of schemas/<name>, checked to be a valid draft 2020-12 schema first: to read; validate with
    schema_validator(name), which resolves its $refs as the product does."""
    schema_validator(name)
    return copy.deepcopy(load_schema(name))


def validate_envelope(envelope, probe, empty_data_ok=False):
    """As the engine does: the envelope, then its data against schemas/<probe>.schema.json (unavailable data included).

    With empty_data_ok an empty data member (a probe stopped before it collected anything) is not checked."""
    schema_validator("envelope.schema.json").validate(envelope)
    if envelope["data"] or not empty_data_ok:
        schema_validator(probe + ".schema.json").validate(envelope["data"])


def run_probe(tmp_path, probe, params=None, env=None, timeout=300, out_name=None, python=None):
    """Run probes/<probe>.py --out F [--params P] with python (default PYTHON) and env (default: this environment);
    assert it exits 0 (its stderr is the message) and return the envelope it wrote."""
    out = tmp_path / (out_name or probe + ".json")
    command = [python or PYTHON, probe_path(probe), "--out", str(out)]
    if params is not None:
        params_file = tmp_path / "params.json"
        params_file.write_text(json.dumps(params))
        command += ["--params", str(params_file)]
    completed = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, check=False, env=env)
    assert completed.returncode == 0, completed.stderr.decode()
    return json.loads(out.read_text())


def probe_help(probe, env=None, python=None):
    """The completed `probes/<probe>.py --help` (stdout and stderr captured, not checked)."""
    return subprocess.run([python or PYTHON, probe_path(probe), "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=60, check=False, env=env)


def shadow_module(tmp_path, module="torch", message=None):
    """A folder, for the front of PYTHONPATH, in which importing `module` raises ImportError(message)."""
    shadow = tmp_path / "shadow" / module
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError(%r)\n" % (message or "no %s in this test" % module))
    return str(tmp_path / "shadow")


def _refs(node):
    """Every $ref anywhere in ``node``."""
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    if not isinstance(node, dict):
        return []
    found = [node["$ref"]] if "$ref" in node else []
    return found + [ref for value in node.values() for ref in _refs(value)]


def assert_schema_header(probe):
    """schemas/<probe>.schema.json names itself, has a title and references the shared `unavailable` definition of
    common.schema.json (no copy of its own); returns it."""
    loaded = schema(probe + ".schema.json")
    assert loaded["$id"] == probe + ".schema.json" and loaded["title"]
    unavailable = dict(schema("common.schema.json")["$defs"]["unavailable"])
    unavailable.pop("description")
    assert unavailable == UNAVAILABLE
    assert "unavailable" not in loaded.get("$defs", {})
    assert UNAVAILABLE_REF in _refs(loaded)
    return loaded


def assert_foreign_processes_recorded(data):
    """A measuring probe's data records the GPUs' other compute processes (probelib/measure/foreign_processes.py): on a
    machine without NVML, why not; with it, each GPU's listings before and during the measurement."""
    record = data["foreign_gpu_processes"]
    if set(record) == {"unavailable"}:
        assert record["unavailable"]
        return
    assert record["listings"] >= 2 and all(set(gpu) >= {"before", "during", "unattributed"} for gpu in record["gpus"])

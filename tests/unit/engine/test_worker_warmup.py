"""The warm_workers callback's work: what a probe worker needs, built once in the process Ansible forks workers from."""
import configparser
import copy
import json
import multiprocessing
import os
import sys

from ansible_collections.gpufleet.validation.plugins.plugin_utils import worker_warmup
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes import registry
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.declaration import DeclarationError
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store import schemas
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.results import trusted_envelope
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import SchemaToolMissing

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "health_h200x2_ok_by_hand_anonymised.json")
PROVENANCE = {"run_id": "20261130T000000Z-000001", "collection_version": "0.1.0", "probe_sha256": "a" * 64}


def h200_envelope():
    with open(FIXTURE) as handle:
        return dict(json.load(handle), **PROVENANCE)


def cold_caches():
    schemas._schema_validator.cache_clear()  # pylint: disable=protected-access
    schemas._schemas_digest.cache_clear()  # pylint: disable=protected-access
    registry._declarations.cache_clear()  # pylint: disable=protected-access


def validators_built():
    return schemas._schema_validator.cache_info().misses  # pylint: disable=protected-access


def test_a_workers_store_check_uses_the_validators_already_built():
    cold_caches()
    assert worker_warmup.warm_worker_caches() == []
    built = validators_built()
    assert built >= 2  # the envelope's schema and at least the health probe's
    envelope, raw = trusted_envelope(copy.deepcopy(h200_envelope()))
    assert raw is None and envelope["status"] == "ok"
    # lru_cache keys schema_validator(name) and schema_validator(name, None) apart: a worker built its own before
    assert validators_built() == built
    assert registry._declarations.cache_info().misses == 1  # pylint: disable=protected-access


def _worker(pipe):
    before = validators_built()
    envelope, unused_raw = trusted_envelope(h200_envelope())
    pipe.send((before, validators_built(), envelope["status"]))
    pipe.close()


def test_a_forked_worker_inherits_them():
    cold_caches()
    worker_warmup.warm_worker_caches()
    parent_end, child_end = multiprocessing.get_context("fork").Pipe()
    worker = multiprocessing.get_context("fork").Process(target=_worker, args=(child_end,))
    worker.start()
    before, after, status = parent_end.recv()
    worker.join(30)
    assert worker.exitcode == 0 and status == "ok"
    assert after == before, "the forked worker built a validator of its own"


def test_what_cannot_be_built_is_named_and_nothing_raises(monkeypatch):
    def no_jsonschema(*unused):
        raise SchemaToolMissing("the controller's Python lacks jsonschema")

    def broken(*unused):
        raise DeclarationError("plugin_utils/probes/bad.py must define DECLARATION")

    monkeypatch.setattr(worker_warmup, "schema_validator", no_jsonschema)
    monkeypatch.setattr(worker_warmup, "declarations", broken)
    skipped = worker_warmup.warm_worker_caches()
    assert skipped == ["probe declarations: plugin_utils/probes/bad.py must define DECLARATION",
                       "envelope schema: the controller's Python lacks jsonschema",
                       "probe schemas: the controller's Python lacks jsonschema"]
    assert "ansible_collections.gpufleet.validation.plugins.action.probe" in sys.modules


def test_the_repository_config_enables_it():
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "ansible.cfg"))
    enabled = [name.strip() for name in config.get("defaults", "callbacks_enabled").split(",")]
    assert "gpufleet.validation.warm_workers" in enabled
    assert os.path.isfile(os.path.join(ROOT, "plugins", "callback", "warm_workers.py"))

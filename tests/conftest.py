"""Make the collection importable as ansible_collections.gpufleet.validation, and the probe library too; fixtures
that tests of several folders share."""
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for path in (os.path.join(ROOT, "collections"), os.path.join(ROOT, "probes"), os.path.join(ROOT, "tests")):
    if path not in sys.path:
        sys.path.insert(0, path)


# The rig's recorded 1-GPU H200 health result and its inputs (docs/examples/h200x1/issue35).
RECORDED_H200_HOST = os.path.join(ROOT, "docs", "examples", "h200x1", "issue35", "cuts", "20261204T121144Z-595230", "localhost")


@pytest.fixture
def store_recorded_health():
    """store(results, run_id, host, groups=(), uuid=None): the recorded H200 health result stored as ``host``'s in
    ``run_id`` of the results directory, with the health profile, the inventory groups given, and its GPU's UUID
    replaced where ``uuid`` is given (a swapped GPU)."""
    def store(results, run_id, host, groups=(), uuid=None):
        folder = results / run_id / host
        folder.mkdir(parents=True)
        for name in ("health.json", "inputs.json"):
            with open(os.path.join(RECORDED_H200_HOST, name), encoding="utf-8") as handle:
                document = json.load(handle)
            if name == "health.json":
                document["host"], document["run_id"] = host, run_id
                if uuid:
                    document["data"]["gpus"][0]["uuid"] = uuid
            else:
                document["groups"] = list(groups)
                document["probes"], document["profile"] = ["health"], "health"
            (folder / name).write_text(json.dumps(document))
    return store

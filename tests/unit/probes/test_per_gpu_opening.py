"""membw, memtest and fusion open alike (probelib/measure/opening.py): asked for GPUs only (device: cuda) on a host that
has none, each returns at once an unavailable result holding its CUDA method and plan, no device and no error (fusion
adds its traffic accounting), with torch's versions in the environment; the data valid against the probe's schema."""
import os

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from host_roots import host_reader
from probelib.measure import devices, opening
from probe_sources import PROBES, python_files
from probelib.params import probe_defaults

import fusion
import membw
import memtest

torch = pytest.importorskip("torch")
# what only the opening says: the environment block and the no-GPU reason
OPENING_WORDS = ('torch.version.cuda or "none (CPU build)"', "and device is 'cuda'")


@pytest.mark.parametrize("probe", [membw, memtest, fusion], ids=["membw", "memtest", "fusion"])
def test_no_gpu_where_only_gpus_are_asked_for_is_unavailable_with_the_cuda_plan(probe, tmp_path, monkeypatch):
    monkeypatch.setattr(devices, "read_host_gpus", host_reader(tmp_path, gpus=0))
    name = probe.__name__
    params = dict(probe_defaults(name), device="cuda")
    result = probe.collect(params)
    assert result.status == "unavailable"
    assert result.reason == "no CUDA GPU is visible to torch %s and device is 'cuda'" % torch.__version__
    expected = {"method": probe.method_of("cuda"), "plan": probe.resolve_plan(params, "cuda"), "devices": [], "errors": []}
    if probe is fusion:
        expected["traffic"] = fusion.traffic.accounting()
    assert result.data == expected
    assert result.environment == {"torch_version": torch.__version__,
                                  "torch_cuda_version": torch.version.cuda or "none (CPU build)"}
    schema_validator("%s.schema.json" % name).validate(result.data)


def test_the_opening_is_written_once():
    """No probe words torch's environment or the no-GPU result itself (issue 47: fusion and five environments were
    copies of the opening's): every file under probes/ but opening.py is read for the two."""
    copies = []
    for path in python_files(leave_out=(os.path.abspath(opening.__file__),)):
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        copies += [(os.path.relpath(path, PROBES), words) for words in OPENING_WORDS if words in text]
    assert copies == []

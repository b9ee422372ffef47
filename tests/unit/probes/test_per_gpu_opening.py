"""membw and memtest open alike (probelib/measure/opening.py): asked for GPUs only (device: cuda) on a host that has
none, each returns at once an unavailable result holding its CUDA method and plan, no device and no error, with torch's
versions in the environment; the data valid against the probe's schema."""
import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from host_roots import host_reader
from probelib.measure import devices
from probelib.params import probe_defaults

import membw
import memtest

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("probe", [membw, memtest], ids=["membw", "memtest"])
def test_no_gpu_where_only_gpus_are_asked_for_is_unavailable_with_the_cuda_plan(probe, tmp_path, monkeypatch):
    monkeypatch.setattr(devices, "read_host_gpus", host_reader(tmp_path, gpus=0))
    name = probe.__name__
    params = dict(probe_defaults(name), device="cuda")
    result = probe.collect(params)
    assert result.status == "unavailable"
    assert result.reason == "no CUDA GPU is visible to torch %s and device is 'cuda'" % torch.__version__
    assert result.data == {"method": probe.method_of("cuda"), "plan": probe.resolve_plan(params, "cuda"), "devices": [],
                           "errors": []}
    assert result.environment == {"torch_version": torch.__version__,
                                  "torch_cuda_version": torch.version.cuda or "none (CPU build)"}
    schema_validator("%s.schema.json" % name).validate(result.data)

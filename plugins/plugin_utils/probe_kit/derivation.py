"""What the core hands a probe's derivation (declaration.Handed): the results of the probes it declares it needs, as
those probes give them, the baselines, and the host's SKU. Imported only when a derivation runs: it reads the run's
stored results."""
from __future__ import annotations

from .declaration import Baselines, DeclarationError, Handed, HostSku, ProbeRun
from .registry import declaration, machine
from ..store.read import measured_data


def handed_to(probe: ProbeRun, host_dir: str, baselines: Baselines) -> Handed:
    """What probe's derived_params is handed on the host whose results are in host_dir."""
    def given(name: str) -> object:
        if name not in probe.needs:
            raise DeclarationError("probe %s reads the result of %s, which its declaration does not name in needs=" % (probe.name, name))
        data = measured_data(host_dir, name)
        return declaration(name).gives(data) if data is not None else None

    def host_sku() -> HostSku:
        described = machine()
        if described is None:
            return HostSku("", None, "")
        data = measured_data(host_dir, described.probe)
        if data is None:
            return HostSku("", None, described.probe)
        from ..judge.sku import identify_host  # the judge's modules load only when a derivation asks for the SKU
        found = baselines()
        sku, unused_reason, unused_per_gpu = identify_host(described.declaration.facts(data).gpus, found)
        baseline = next((candidate for candidate in found if candidate.get("id") == sku), None)
        return HostSku(sku if baseline is not None else "", baseline, described.probe)

    return Handed(given=given, baselines=baselines, host_sku=host_sku)

"""What every forked Ansible worker of a run would otherwise build for itself, built once in the main process.

Ansible forks a fresh worker per task and host from its main process, so a worker inherits what the main process has
imported and cached, and nothing one worker builds reaches the next. Each probe worker used to import every probe
declaration (the collection loader compiles them from source: it keeps no bytecode), import jsonschema, check the
envelope's and the probe's schemas against the draft 2020-12 metaschema and build the schema registry: about 0.35
CPU-s per host on a 2-vCPU controller (docs/scale.md). ``warm_worker_caches`` does that once, before the first fork.

It changes no result: each piece is the same cached function the worker calls, and a piece that fails here (a
broken declaration, no jsonschema) is left for the worker to fail on with its own message."""
from __future__ import annotations

import importlib
import os
from typing import Callable, List, Tuple

from .probe_archive import available_probes
from .probes.declaration import DeclarationError
from .probes.registry import declarations
from .store.schemas import SCHEMA_SUFFIX, SchemaToolMissing, schema_validator, schemas_digest, schemas_dir

# The collection's action plugins a probe run forks a worker for, per host or per run.
ACTION_PLUGINS = ("check_inputs", "open_run", "probe")
PLUGIN_PACKAGE = "ansible_collections.gpufleet.validation.plugins"
WARM_FAILURES = (DeclarationError, SchemaToolMissing, ImportError, OSError, ValueError)


def _probe_schema_files() -> List[str]:
    present = set(os.listdir(schemas_dir()))
    return [name + SCHEMA_SUFFIX for name in available_probes() if name + SCHEMA_SUFFIX in present]


def _steps() -> List[Tuple[str, Callable[[], object]]]:
    steps = [("probe declarations", declarations), ("schemas digest", schemas_digest)]
    steps.append(("envelope schema", lambda: schema_validator("envelope" + SCHEMA_SUFFIX)))
    steps.append(("probe schemas", lambda: [schema_validator(name) for name in _probe_schema_files()]))
    steps.extend(("action plugin %s" % name, lambda name=name: importlib.import_module("%s.action.%s" % (PLUGIN_PACKAGE, name)))
                 for name in ACTION_PLUGINS)
    return steps


def warm_worker_caches() -> List[str]:
    """Build the workers' shared caches here; returns what could not be built and why (the workers will say it too)."""
    skipped = []
    for label, step in _steps():
        try:
            step()
        except WARM_FAILURES as exc:
            skipped.append("%s: %s" % (label, exc))
    return skipped

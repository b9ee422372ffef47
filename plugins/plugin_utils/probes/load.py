"""load: a sustained matmul load per GPU, with clocks, power, temperature and processes sampled."""
from __future__ import annotations

from ..judge.load_checks import LOAD_CHECKS
from ..judge.metrics import load_metrics
from ..report_load import load_view
from .declaration import ProbeDeclaration, ProbeSection

DECLARATION = ProbeDeclaration(
    name="load",
    # last: no bandwidth probe may follow sustained load without a cool-down
    run_order=90,
    timeout_s=600,
    # full holds the load three minutes instead of one: slow thermal faults show within it
    profiles={"acceptance": {}, "full": {"duration_s": 180}},
    checks=LOAD_CHECKS,
    metrics=load_metrics,
    section=ProbeSection(load_view),
    summary="a sustained bf16 matmul load per GPU with clocks, power, temperature and processes sampled",
)

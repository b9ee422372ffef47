"""precision: what a checkpoint loses in each number format, to explain a format choice."""
from __future__ import annotations

from ..report_precision import precision_view
from .declaration import ProbeDeclaration, ProbeSection

DECLARATION = ProbeDeclaration(
    name="precision",
    run_order=80,
    timeout_s=600,
    profiles={"acceptance": {}, "full": {}},
    section=ProbeSection(precision_view),
    judges_nothing="quantisation error of a checkpoint explains a format choice; it is no GPU fault",
    needs_gpu=False,
    summary="the quantisation error of a checkpoint's tensors in each number format",
)

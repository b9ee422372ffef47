"""The acceptance time model as data: one row per phase of `ansible-playbook validate.yml -e gpufleet_profile=acceptance`,
how each phase scales with the host's GPU count n, and the rules that turn its terms into seconds.

Two models share the rows: `new` (issue 35: each per-GPU probe measures in detail alone on the first GPU, then its
headline on every GPU at once; memtest and the correctness checks added) and `old` (before issue 35: every per-GPU
probe measures one GPU after another). Pure: no file, no torch; benchmarks/acceptance_time_inputs.py reads the terms
(seconds, each with its source) from recorded rig results.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

# How a phase scales with n (the words printed in the table's second column).
CONSTANT = "constant"
PER_PROBE = "per probe of the profile (the gaps between probes)"
FIXED_PLUS_PER_GPU = "fixed + per GPU x n"
ALONE = "first GPU (x n with alone_devices all)"
ONE_AFTER_ANOTHER = "per GPU x n (one after another)"
TOGETHER = "every GPU at once: worker + spawn x workers (none below 2 workers)"
PER_ORDERED_PAIR = "fixed + per ordered pair x n(n-1)"
PER_RANK_COUNT = "fixed; from n = 2 sweeps at n ranks (+ rings of 2, 4 below n)"

# The collective probe's extra rings (probes/probe_packages/collective/ring_prediction.py: WORLD_SIZES, RING_SIZES).
RING_WORLD_SIZES = (2, 4, 8)
RING_SIZES = 3
CALIBRATION_CALLS = 2  # probes/probe_packages/collective/plan.py


@dataclass(frozen=True)
class Term:
    """A number of seconds (or, for the collective's rates, of GB/s) and where it comes from, in words."""
    value: float
    source: str


@dataclass(frozen=True)
class Phase:
    name: str
    probe: str                    # the probe whose result holds its numbers ("" for the playbook's own phases)
    new: Optional[str]            # its scaling in the new model; None: not run
    old: Optional[str]            # its scaling in the old model; None: not run
    what: str = ""


@dataclass
class PhaseInputs:
    """A phase's terms (name -> Term), the plan its rule reads (the collective's sweep), or why they are missing."""
    terms: Dict[str, Term] = field(default_factory=dict)
    plan: Dict[str, Any] = field(default_factory=dict)
    missing: str = ""


@dataclass(frozen=True)
class Options:
    alone_devices: str = "first"      # "first" or "all": the benchmark's flag, the probes' parameter
    workers_per_gpu: int = 1
    probes_new: int = 13              # probes the acceptance profile runs (the engine's gap is paid per probe)
    probes_old: int = 12


# The model, in run order (plugins/plugin_utils/probes/<probe>/run.py run_order). One row per phase.
PHASES: Tuple[Phase, ...] = (
    Phase("playbook: start, prepare, report, end", "", CONSTANT, CONSTANT),
    Phase("probe engine between probes", "", PER_PROBE, PER_PROBE),
    Phase("health", "health", FIXED_PLUS_PER_GPU, FIXED_PLUS_PER_GPU),
    Phase("tuning", "tuning", CONSTANT, CONSTANT),
    Phase("fabric", "fabric", CONSTANT, CONSTANT),
    Phase("toolchain", "toolchain", CONSTANT, CONSTANT),
    Phase("membw start", "membw", CONSTANT, CONSTANT),
    Phase("membw alone", "membw", ALONE, ONE_AFTER_ANOTHER),
    Phase("membw together", "membw", TOGETHER, None),
    Phase("fusion start", "fusion", CONSTANT, CONSTANT),
    Phase("fusion alone", "fusion", ALONE, ONE_AFTER_ANOTHER),
    Phase("fusion together", "fusion", TOGETHER, None),
    Phase("gemm start", "gemm", CONSTANT, CONSTANT),
    Phase("gemm alone", "gemm", ALONE, ONE_AFTER_ANOTHER),
    Phase("gemm correctness check", "gemm", ALONE, None),
    Phase("gemm together", "gemm", TOGETHER, None),
    Phase("hostbw start", "hostbw", CONSTANT, CONSTANT),
    Phase("hostbw alone", "hostbw", ALONE, ONE_AFTER_ANOTHER),
    Phase("hostbw together", "hostbw", TOGETHER, None),
    Phase("p2p", "p2p", PER_ORDERED_PAIR, PER_ORDERED_PAIR),
    Phase("collective", "collective", PER_RANK_COUNT, PER_RANK_COUNT),
    Phase("precision", "precision", CONSTANT, CONSTANT),
    Phase("memtest", "memtest", CONSTANT, None),
    Phase("load", "load", CONSTANT, CONSTANT),
)

# What each scaling rule reads.
TERMS_OF = {
    CONSTANT: ("fixed",),
    PER_PROBE: ("per_probe",),
    FIXED_PLUS_PER_GPU: ("fixed", "per_gpu"),
    ALONE: ("per_gpu",),
    ONE_AFTER_ANOTHER: ("per_gpu",),
    TOGETHER: ("worker", "spawn", "worker_start"),
    PER_ORDERED_PAIR: ("fixed", "per_pair"),
    PER_RANK_COUNT: ("fixed", "sweep_start", "latency", "busbw_default", "busbw_p2p_disabled"),
}


def ordered_pairs(n: int) -> int:
    return n * (n - 1)


def workers(n: int, options: Options) -> int:
    return n * options.workers_per_gpu


def probes(options: Options, model: str) -> int:
    return options.probes_new if model == "new" else options.probes_old


def alone_gpus(n: int, options: Options) -> int:
    if options.alone_devices not in ("first", "all"):
        raise ValueError("alone_devices is 'first' or 'all', not %r" % (options.alone_devices,))
    return n if options.alone_devices == "all" else min(n, 1)


def allreduce_seconds(size_bytes: int, ranks: int, busbw_gbps: float, latency_s: float) -> float:
    """One all-reduce of size_bytes over ranks: latency + the bytes each rank's links carry in a ring, 2(n-1)/n x S,
    at the bus bandwidth (nccl-tests' busbw: the per-link rate a ring sees)."""
    return latency_s + size_bytes * 2.0 * (ranks - 1) / ranks / (busbw_gbps * 1e9)


def sweep_seconds(sizes_bytes: Sequence[int], ranks: int, busbw_gbps: float, latency_s: float, plan: Mapping[str, Any]) -> float:
    """The timed part of one all-reduce sweep as the collective probe runs it (probes/probe_packages/collective/plan.py):
    per size warmup + 2 calibration calls + ceil(target / t) iterations clamped to [min, max]."""
    total = 0.0
    for size in sizes_bytes:
        per_call = allreduce_seconds(size, ranks, busbw_gbps, latency_s)
        iterations = min(plan["max_iterations"], max(plan["min_iterations"], math.ceil(plan["target_time_per_size_s"] / per_call)))
        total += (plan["warmup"] + CALIBRATION_CALLS + iterations) * per_call
    return total


def collective_sweeps(n: int, plan: Mapping[str, Any]) -> List[Tuple[str, int, List[int]]]:
    """(curve, ranks, sizes) of every sweep the collective probe runs on an n-GPU host: none below 2 GPUs; the
    default curve and the NCCL_P2P_DISABLE=1 curve at n ranks; a ring of 2, 4, 8 ranks below n at the last sizes."""
    if n < 2:
        return []
    sizes = list(plan["sizes_bytes"])
    sweeps = [("default", n, sizes)]
    if plan.get("p2p_disabled_sweep", True):
        sweeps.append(("p2p_disabled", n, sizes))
    sweeps.extend(("default", ranks, sizes[-RING_SIZES:]) for ranks in RING_WORLD_SIZES if ranks < n)
    return sweeps


def _collective(terms: Mapping[str, float], plan: Mapping[str, Any], n: int) -> float:
    total = terms["fixed"]
    for curve, ranks, sizes in collective_sweeps(n, plan):
        busbw = terms["busbw_default"] if curve == "default" else terms["busbw_p2p_disabled"]
        total += terms["sweep_start"] + sweep_seconds(sizes, ranks, busbw, terms["latency"], plan)
    return total


def _together(terms: Mapping[str, float], n: int, options: Options) -> float:
    count = workers(n, options)
    if count < 2:  # probelib.measure.together.not_needed: one worker is the alone phase again
        return 0.0
    return terms["worker_start"] + terms["worker"] + terms["spawn"] * count


RULES: Dict[str, Callable[[Mapping[str, float], Mapping[str, Any], int, Options, str], float]] = {
    CONSTANT: lambda t, plan, n, o, model: t["fixed"],
    PER_PROBE: lambda t, plan, n, o, model: t["per_probe"] * (probes(o, model) - 1),
    FIXED_PLUS_PER_GPU: lambda t, plan, n, o, model: t["fixed"] + t["per_gpu"] * n,
    ALONE: lambda t, plan, n, o, model: t["per_gpu"] * alone_gpus(n, o),
    ONE_AFTER_ANOTHER: lambda t, plan, n, o, model: t["per_gpu"] * n,
    TOGETHER: lambda t, plan, n, o, model: _together(t, n, o),
    PER_ORDERED_PAIR: lambda t, plan, n, o, model: t["fixed"] + t["per_pair"] * ordered_pairs(n),
    PER_RANK_COUNT: lambda t, plan, n, o, model: _collective(t, plan, n),
}


def scaling_of(phase: Phase, model: str) -> Optional[str]:
    if model not in ("new", "old"):
        raise ValueError("model is 'new' or 'old', not %r" % (model,))
    return phase.new if model == "new" else phase.old


def phase_seconds(phase: Phase, inputs: PhaseInputs, n: int, options: Options, model: str) -> Optional[float]:
    """Seconds of one phase at n GPUs; 0 where the model does not run it, None where its inputs are missing."""
    if n < 1:
        raise ValueError("a host has at least 1 GPU, not %r" % (n,))
    scaling = scaling_of(phase, model)
    if scaling is None:
        return 0.0
    if inputs.missing:
        return None
    values = {name: term.value for name, term in inputs.terms.items()}
    lacking = [name for name in TERMS_OF[scaling] if name not in values]
    if lacking:
        raise KeyError("phase %r (%s) lacks the term(s) %s" % (phase.name, scaling, ", ".join(lacking)))
    return RULES[scaling](values, inputs.plan, n, options, model)


@dataclass
class Prediction:
    model: str
    ns: Tuple[int, ...]
    rows: List[Tuple[Phase, Dict[int, Optional[float]]]]

    def total(self, n: int) -> float:
        return sum(seconds[n] or 0.0 for unused_phase, seconds in self.rows)

    def complete(self) -> bool:
        return all(value is not None for unused_phase, seconds in self.rows for value in seconds.values())


def predict(inputs: Mapping[str, PhaseInputs], ns: Sequence[int], options: Options, model: str,
            phases: Sequence[Phase] = PHASES) -> Prediction:
    """Every phase's seconds at each n of ns; a phase without inputs counts None (named by the caller)."""
    rows = []
    for phase in phases:
        given = inputs.get(phase.name) or PhaseInputs(missing="no inputs for phase %r" % phase.name)
        rows.append((phase, {n: phase_seconds(phase, given, n, options, model) for n in ns}))
    return Prediction(model, tuple(ns), rows)

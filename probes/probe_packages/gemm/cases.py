"""The registry of test cases (one entry per shape, named with its dims) and the plan that picks them (no torch).

C (M x N) = A (M x K) @ B (K x N). Production shapes are a model's projections, K = the layer's input width and
N = its output width, with M = the tokens in flight: prefill-like (thousands) and decode-like (a batch of 1 to 32).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from probe_packages.gemm.dtypes import DTYPE_NAMES


class ShapeError(ValueError):
    """A ``shapes`` parameter that is not a list of {name, m, n, k} with positive integer dims and unique names."""


@dataclass(frozen=True)
class GemmCase:
    name: str
    group: str  # square | prefill | decode | awkward | given | model_prefill | model_decode
    m: int
    n: int
    k: int
    note: str = ""

    def as_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "group": self.group, "m": self.m, "n": self.n, "k": self.k, "note": self.note}


# (projection, K = input width, N = output width)
LLAMA_70B_PROJECTIONS: Tuple[Tuple[str, int, int], ...] = (
    ("qkv", 8192, 10240), ("o", 8192, 8192), ("mlp-up", 8192, 28672), ("mlp-down", 28672, 8192))
# The same proportions at hidden 1024, so that the CPU plan stays small.
SMALL_MODEL_PROJECTIONS: Tuple[Tuple[str, int, int], ...] = (
    ("qkv", 1024, 1280), ("o", 1024, 1024), ("mlp-up", 1024, 3584), ("mlp-down", 3584, 1024))


@dataclass(frozen=True)
class PlanSpec:
    name: str
    squares: Tuple[int, ...]
    projections: Tuple[Tuple[str, int, int], ...]
    projections_source: str
    prefill_tokens: Tuple[int, ...]
    decode_tokens: Tuple[int, ...]
    awkward: Tuple[Tuple[int, int, int, str], ...]
    quick_square: int
    quick_decode: str
    repeat_time_s: float
    warmup_time_s: float
    min_iterations: int
    max_iterations: int
    copy_buffer_max_bytes: int


GPU_PLAN = PlanSpec(
    name="gpu", squares=(1024, 2048, 4096, 8192), projections=LLAMA_70B_PROJECTIONS,
    projections_source="Llama-70B projections (hidden 8192: QKV 8192->10240, O 8192->8192, MLP up/gate 8192->28672, "
                       "down 28672->8192)",
    prefill_tokens=(4096, 8192), decode_tokens=(1, 8, 32),
    awkward=((8191, 8193, 8191, "odd dims: not a multiple of 8, 16 or 128"),
             (8208, 8208, 8208, "a multiple of 16 but not of 128: the last row and column of 128-wide tiles are 1/8 full")),
    quick_square=8192, quick_decode="decode-mlp-up-m1-n28672-k8192",
    repeat_time_s=0.1, warmup_time_s=0.05, min_iterations=3, max_iterations=20000, copy_buffer_max_bytes=2 ** 30)
CPU_PLAN = PlanSpec(
    name="cpu", squares=(256, 512, 1024), projections=SMALL_MODEL_PROJECTIONS,
    projections_source="Llama-70B proportions scaled to hidden 1024 for the CPU (QKV 1024->1280, O 1024->1024, "
                       "MLP up/gate 1024->3584, down 3584->1024)",
    prefill_tokens=(256,), decode_tokens=(1, 8),
    awkward=((511, 513, 511, "odd dims: not a multiple of 8, 16 or 128"),),
    quick_square=512, quick_decode="decode-mlp-up-m1-n3584-k1024",
    repeat_time_s=0.02, warmup_time_s=0.005, min_iterations=1, max_iterations=2000, copy_buffer_max_bytes=64 * 2 ** 20)


def square_case(size: int) -> GemmCase:
    return GemmCase("square-%d" % size, "square", size, size, size)


def projection_case(group: str, projection: str, tokens: int, k: int, n: int) -> GemmCase:
    return GemmCase("%s-%s-m%d-n%d-k%d" % (group, projection, tokens, n, k), group, tokens, n, k,
                    "%s projection, %d token%s" % (projection, tokens, "" if tokens == 1 else "s"))


def awkward_case(m: int, n: int, k: int, note: str) -> GemmCase:
    return GemmCase("awkward-m%d-n%d-k%d" % (m, n, k), "awkward", m, n, k, note)


def production_cases(spec: PlanSpec) -> List[GemmCase]:
    cases = []
    for group, token_counts in (("prefill", spec.prefill_tokens), ("decode", spec.decode_tokens)):
        for tokens in token_counts:
            for projection, k, n in spec.projections:
                cases.append(projection_case(group, projection, tokens, k, n))
    return cases


def parse_shapes(given: Any) -> List[GemmCase]:
    """The ``shapes`` parameter: [{name, m, n, k}, ...] -> cases of group 'given'."""
    if not isinstance(given, list) or not given:
        raise ShapeError("shapes must be a non-empty list of {name, m, n, k}")
    cases, names = [], set()
    for position, entry in enumerate(given):
        if not isinstance(entry, dict) or set(entry) != {"name", "m", "n", "k"}:
            raise ShapeError("shapes[%d] must be an object with exactly name, m, n, k (got %r)" % (position, entry))
        name = entry["name"]
        if not isinstance(name, str) or not name.strip():
            raise ShapeError("shapes[%d].name must be a non-empty string" % position)
        for dim in ("m", "n", "k"):
            value = entry[dim]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ShapeError("shapes[%d].%s must be a positive integer (got %r)" % (position, dim, value))
        if name in names:
            raise ShapeError("shapes: the name %r appears twice" % name)
        names.add(name)
        cases.append(GemmCase(name, "given", entry["m"], entry["n"], entry["k"], "from the shapes parameter"))
    return cases


def given_cases(shapes: Any, model: Any) -> Tuple[Optional[List[GemmCase]], str]:
    """(the cases that replace the production shapes, or None, and where they come from)."""
    if shapes is not None:
        return parse_shapes(shapes), "parameter shapes"
    if model is not None:
        return list(model.cases), model.source
    return None, ""


def build_plan(kind: str, quick: bool, dtypes: Optional[Sequence[str]], shapes: Any = None, model: Any = None) -> Dict[str, Any]:
    """Which cases and dtypes run on a device of ``kind`` (cuda or cpu), and the timing budget.

    quick: bf16 only, the plan's big square (GPU 8192, CPU 512) and one decode shape (or, with ``shapes`` or ``model``,
    all of those).
    shapes: replaces the production (prefill and decode) shapes; the squares and the awkward shapes stay.
    model: the ModelShapes of the model_config parameter (probe_packages.gemm.model_shapes): its cases replace the production
    shapes as ``shapes`` does, and the plan records where they came from under "model".
    """
    spec = CPU_PLAN if kind == "cpu" else GPU_PLAN
    given, given_source = given_cases(shapes, model)
    production = given if given is not None else production_cases(spec)
    if quick:
        chosen = given if given is not None else [case for case in production if case.name == spec.quick_decode]
        cases = [square_case(spec.quick_square)] + chosen
        dtype_names = ["bf16"]
    else:
        cases = [square_case(size) for size in spec.squares] + production + [awkward_case(*entry) for entry in spec.awkward]
        dtype_names = list(dtypes) if dtypes is not None else list(DTYPE_NAMES)
    names = [case.name for case in cases]
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if duplicated:
        raise ShapeError("case names must be unique; repeated: %s" % ", ".join(duplicated))
    calibration = max((case for case in cases if case.group == "square"), key=lambda case: case.m)
    plan = {
        "name": "%s-%s" % (spec.name, "quick" if quick else "full"),
        "quick": quick,
        "dtypes": dtype_names,
        "cases": cases,
        "production_shapes_source": given_source or spec.projections_source,
        "calibration_case": calibration,
        "repeat_time_s": spec.repeat_time_s,
        "warmup_time_s": spec.warmup_time_s,
        "min_iterations": spec.min_iterations,
        "max_iterations": spec.max_iterations,
        "copy_buffer_max_bytes": spec.copy_buffer_max_bytes,
    }
    if model is not None:
        plan["model"] = model.record()
    return plan


def iterations_for(target_s: float, single_s: float, minimum: int, maximum: int) -> int:
    """How many back-to-back calls fill ``target_s`` when one takes ``single_s`` (clamped to [minimum, maximum])."""
    if single_s <= 0:
        return maximum
    wanted = int(-(-target_s // single_s))  # ceiling
    return max(minimum, min(maximum, wanted))

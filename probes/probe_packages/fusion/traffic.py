"""The bytes each version of y = gelu(x * a + b) * c must move through device memory. Pure Python.

Every tensor holds N elements of one dtype. A kernel reads each of its inputs once from memory and writes its output
once; nothing stays in registers or cache between two kernels. The unfused chain is four kernels, each writing an
intermediate that the next one reads back; the fused kernel reads the four inputs and writes y, nothing else.
"""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

# (kernel, tensors read, tensor written), in the order torch eager runs them.
UNFUSED_KERNELS: Tuple[Tuple[str, Tuple[str, ...], str], ...] = (
    ("mul", ("x", "a"), "t1"),
    ("add", ("t1", "b"), "t2"),
    ("gelu", ("t2",), "t3"),
    ("mul", ("t3", "c"), "y"),
)
FUSED_KERNEL: Tuple[str, Tuple[str, ...], str] = ("gelu(x * a + b) * c", ("x", "a", "b", "c"), "y")
INPUTS = ("x", "a", "b", "c")


def tensor_passes(kernels: Tuple[Tuple[str, Tuple[str, ...], str], ...]) -> int:
    """How many whole tensors the kernels move: every input read plus every output written."""
    return sum(len(reads) + 1 for unused_name, reads, unused_written in kernels)


UNFUSED_PASSES = tensor_passes(UNFUSED_KERNELS)  # (2+1) + (2+1) + (1+1) + (2+1) = 11
FUSED_PASSES = tensor_passes((FUSED_KERNEL,))  # 4 + 1 = 5


def traffic_bytes(version: str, elements: int, element_bytes: int) -> int:
    """Bytes through device memory for one evaluation of the chain: tensor passes x N x element size."""
    passes = {"unfused": UNFUSED_PASSES, "fused": FUSED_PASSES}[version]
    return passes * elements * element_bytes


def working_set_bytes(version: str, elements: int, element_bytes: int) -> int:
    """Distinct tensors a version touches (the unfused chain's three intermediates included), in bytes."""
    tensors = set(INPUTS) | {"y"}
    if version == "unfused":
        tensors |= {written for unused_name, unused_reads, written in UNFUSED_KERNELS}
    return len(tensors) * elements * element_bytes


def predicted_speedup() -> float:
    """unfused time / fused time when both move their bytes at the same rate: the traffic ratio (11 / 5 = 2.2)."""
    return UNFUSED_PASSES / FUSED_PASSES


def _kernel_words(name: str, reads: Tuple[str, ...], written: str) -> str:
    return "%s (read %s; write %s: %d + 1)" % (name, ", ".join(reads), written, len(reads))


def derivation() -> str:
    """The accounting in words, as the result records it."""
    unfused = " + ".join(_kernel_words(*kernel) for kernel in UNFUSED_KERNELS)
    sums = " + ".join("(%d+1)" % len(reads) for unused_name, reads, unused_written in UNFUSED_KERNELS)
    return ("every tensor has N elements of element_bytes each; a kernel reads each input once from device memory and "
            "writes its output once, and nothing is kept between kernels. Unfused (torch eager, 4 kernels): %s = %s = "
            "%d x N x element_bytes. Fused (one kernel): read %s once, write y once = %d + 1 = %d x N x element_bytes. "
            "If both versions are bandwidth-bound the fused one is faster by the traffic ratio %d / %d = %.2fx."
            % (unfused, sums, UNFUSED_PASSES, ", ".join(INPUTS), len(INPUTS), FUSED_PASSES, UNFUSED_PASSES,
               FUSED_PASSES, predicted_speedup()))


def accounting() -> Dict[str, Any]:
    """The data's traffic object: the kernels each version runs, the passes, the predicted speed-up, the words."""
    def kernels(listed: Tuple[Tuple[str, Tuple[str, ...], str], ...]) -> List[Dict[str, Any]]:
        return [{"kernel": name, "reads": list(reads), "writes": written} for name, reads, written in listed]

    return {
        "unfused_kernels": kernels(UNFUSED_KERNELS),
        "fused_kernels": kernels((FUSED_KERNEL,)),
        "unfused_tensor_passes": UNFUSED_PASSES,
        "fused_tensor_passes": FUSED_PASSES,
        "predicted_speedup": round(predicted_speedup(), 6),
        "derivation": derivation(),
    }

"""The fallback: `nvidia-smi topo -m`, run as a constant argv list and parsed into GPU-pair labels."""
from __future__ import annotations

import re
import subprocess
from typing import Any, Dict, List

NVIDIA_SMI_TOPO_ARGV = ("nvidia-smi", "topo", "-m")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_GPU_LABEL = re.compile(r"^GPU(\d+)$")


def run_nvidia_smi_topo(timeout_s: float = 30.0) -> str:
    completed = subprocess.run(list(NVIDIA_SMI_TOPO_ARGV), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               shell=False, timeout=timeout_s, check=False)
    stdout = completed.stdout.decode("utf-8", "replace")
    if completed.returncode != 0:
        stderr = completed.stderr.decode("utf-8", "replace").strip()
        raise RuntimeError("nvidia-smi topo -m exited with %d: %s" % (
            completed.returncode, (stderr or stdout.strip())[-500:]))
    return stdout


def parse_topo_matrix(text: str) -> Dict[str, Any]:
    """Parse the matrix part of `nvidia-smi topo -m`.

    Returns {"gpus": [{"index", "cpu_affinity", "numa_affinity"}], "pairs": {(a, b): label}} for a < b,
    with labels as printed (NV18, SYS, NODE, PHB, PXB, PIX, ...).
    """
    lines = [_ANSI.sub("", line).rstrip("\n") for line in text.splitlines()]
    header_index = next((i for i, line in enumerate(lines) if "GPU0" in line.split()), None)
    if header_index is None:
        raise ValueError("no GPU0 column in nvidia-smi topo -m output")
    columns = [cell.strip() for cell in lines[header_index].split("\t")]
    if columns and columns[0] == "":
        columns = columns[1:]
    gpus: List[Dict[str, Any]] = []
    labels: Dict[tuple, str] = {}
    for line in lines[header_index + 1:]:
        if not line.strip():
            break
        cells = [cell.strip() for cell in line.split("\t")]
        row = _GPU_LABEL.match(cells[0])
        if not row:
            continue
        row_index = int(row.group(1))
        values = cells[1:]
        entry: Dict[str, Any] = {"index": row_index}
        for column, value in zip(columns, values):
            column_gpu = _GPU_LABEL.match(column)
            if column_gpu:
                other = int(column_gpu.group(1))
                if other != row_index and value and value != "X":
                    labels[(min(row_index, other), max(row_index, other))] = value
            elif column == "CPU Affinity":
                entry["cpu_affinity"] = value
            elif column == "NUMA Affinity":
                entry["numa_affinity"] = value
            elif column == "GPU NUMA ID":
                entry["gpu_numa_id"] = value
        gpus.append(entry)
    if not gpus:
        raise ValueError("no GPU rows in nvidia-smi topo -m output")
    return {"gpus": gpus, "pairs": labels}

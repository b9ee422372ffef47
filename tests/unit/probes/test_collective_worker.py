"""probe_packages.collective.worker's sweep on one process with a stand-in for torch.distributed: the loop, the iteration rule,
the data check catching a wrong sum, the stop at curve_timeout_s."""
import json
from types import SimpleNamespace

import pytest

from probe_packages.collective.worker import ResultWriter, Sweep, WorkerFailure

torch = pytest.importorskip("torch")


class FakeDist:
    """One process playing rank 0 of ``world`` ranks that all hold the same data: SUM multiplies by the expected factor."""

    ReduceOp = SimpleNamespace(SUM="sum", MIN="min", MAX="max")

    def __init__(self, world, corrupt_at=None):
        self.world = world
        self.corrupt_at = corrupt_at  # element count whose sums come back wrong
        self.calls = 0

    def all_reduce(self, tensor, op="sum"):
        self.calls += 1
        if op != "sum" or tensor.dtype != torch.float32:
            return
        # rank r holds (r + 1) x pattern and every rank's data is rank 0's times (r + 1): the sum is n(n+1)/2 x rank 0's
        tensor.mul_(self.world * (self.world + 1) / 2.0)
        if self.corrupt_at is not None and tensor.numel() == self.corrupt_at:
            tensor[-1] += 1.0


def plan(sizes, **extra):
    values = {"backend": "gloo", "kind": "cpu", "world_size": 2, "sizes_bytes": sizes, "warmup": 1, "min_iterations": 2,
              "max_iterations": 50, "target_time_per_size_s": 0.001}
    values.update(extra)
    return values


def sweep(tmp_path, dist, sizes, **extra):
    writer = ResultWriter(str(tmp_path / "rank0.json"), {"points": []})
    return Sweep(torch, dist, torch.device("cpu"), plan(sizes, **extra), 0, dist.world, writer), writer


def test_every_size_is_timed_and_checked(tmp_path):
    dist = FakeDist(2)
    runner, writer = sweep(tmp_path, dist, [8, 16, 1024, 4096])
    runner.run(limit_s=60)
    points = writer.result["points"]
    assert [point["size_bytes"] for point in points] == [8, 16, 1024, 4096]
    assert all(point["verified"] and point["own_ok"] for point in points)
    assert all(2 <= point["iterations"] <= 50 and point["time_s"] > 0 for point in points)
    assert writer.result["dropped_sizes_bytes"] == []
    assert json.loads((tmp_path / "rank0.json").read_text())["points"] == points  # rewritten after every size


def test_a_wrong_sum_is_not_verified(tmp_path):
    runner, writer = sweep(tmp_path, FakeDist(4, corrupt_at=256), [8, 1024, 4096])  # 1024 B = 256 float32
    runner.run(limit_s=60)
    assert [(point["size_bytes"], point["verified"]) for point in writer.result["points"]] == [(8, True), (1024, False), (4096, True)]


def test_check_compares_with_n_n_plus_1_over_2_times_the_pattern(tmp_path):
    runner, unused_writer = sweep(tmp_path, FakeDist(8), [64])
    view = torch.zeros(16)
    pattern = torch.tensor([float(i % 7 + 1) for i in range(16)])
    assert runner._check(view, pattern, 36.0) == (True, True)  # pylint: disable=protected-access
    assert torch.count_nonzero(view) == 0  # zeroed again so the next size's timing sums zeros
    assert runner._check(view, pattern, 35.0) == (False, False)  # pylint: disable=protected-access


def test_the_sweep_stops_between_sizes_at_the_limit(tmp_path):
    runner, writer = sweep(tmp_path, FakeDist(2), [8, 16, 32])
    with pytest.raises(WorkerFailure) as failure:
        runner.run(limit_s=-1.0)
    assert "passed curve_timeout_s" in str(failure.value) and failure.value.details == {"what": "timeout"}
    assert writer.result["points"] == []

"""A node where a job runs (issue 44): each probe declares, as data, whether it can disturb a job (ProbeRun.disturbs_job)
and the parameters that keep it quiet; on a node Slurm shows allocated or mixed only the others run, and the host's
check host.not_run names the probes that did not (judge/not_run.py)."""
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.model import Check, HostVerdict, blocks_gate
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.not_run import NOT_RUN_CHECK, not_run_check
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.param_spec import params_problems
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import (
    JOB_RUNNING, beside_a_job, declarations, profile_probes)


def test_only_probes_without_gpu_load_or_traffic_run_beside_a_job():
    quiet = sorted(name for name, probe in declarations().items() if not probe.disturbs_job)
    assert quiet == ["fabric", "health", "tuning"]
    assert declarations()["fabric"].quiet_params == {"rdma_bandwidth": False}
    assert declarations()["health"].quiet_params == {"cuda_init": False}


def test_every_quiet_parameter_is_one_the_probe_takes():
    for name, probe in declarations().items():
        assert params_problems(name, dict(probe.quiet_params), "quiet_params of %s" % name) == [], name


def test_the_acceptance_profile_beside_a_job():
    probes = profile_probes("acceptance")
    kept, skipped = beside_a_job(probes)
    assert [name for name, unused in kept] == [name for name in probes if name in ("health", "tuning", "fabric")]
    assert {name for name, unused in skipped} == set(probes) - {"health", "tuning", "fabric"}
    assert {"membw", "gemm", "hostbw", "memtest"} <= {name for name, unused in skipped}
    assert all(why == JOB_RUNNING for unused, why in skipped)
    assert dict(kept)["fabric"] == {"rdma_bandwidth": False}


def test_the_probes_not_run_are_one_check_that_keeps_the_host_from_the_gate():
    check = not_run_check("gpu-1", {"probes": ["membw", "gemm"], "why": "Slurm showed the node allocated or mixed"})
    assert check.id == NOT_RUN_CHECK and check.status == "warn" and check.action == "rerun_when_idle"
    assert check.reason.startswith("not run here: membw, gemm (Slurm showed the node allocated or mixed)")
    assert not_run_check("gpu-1", {"probes": [], "why": "x"}) is None and not_run_check("gpu-1", None) is None
    verdict = HostVerdict("gpu-1", "warn", [], [check, Check("health.ecc", "gpu-1", "health", "pass", "fine")])
    assert blocks_gate(verdict)

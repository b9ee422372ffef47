"""benchmarks/acceptance_time.py: the acceptance time model's scaling rules, its reading of the recorded rig results
(docs/examples/h200x1/issue34, docs/examples/h200x2), the inputs it names when they are missing, and the table it prints."""
import json
import os
import shutil
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
RUN = os.path.join(ROOT, "docs", "examples", "h200x1", "issue34", "20261203T201152Z-325421")
PAIRS = os.path.join(ROOT, "docs", "examples", "h200x2", "20261130T054132Z-520925")
# issue 35's runs after its cuts: acceptance with the bytecode cache filled, the two-worker run before it, and the wall
# the rig timed from outside (docs/examples/h200x1/issue35/cuts/summary-warm.txt: 246830 ms)
CUTS = os.path.join(ROOT, "docs", "examples", "h200x1", "issue35", "cuts")
CUTS_RUN, TWO_WORKERS = os.path.join(CUTS, "20261204T122536Z-086335"), os.path.join(CUTS, "20261204T122259Z-007410")
PAGE_ARGS = ["--run", CUTS_RUN, "--together", TWO_WORKERS, "--wall-s", "246.8"]

import acceptance_time  # noqa: E402  pylint: disable=wrong-import-position,import-error
import acceptance_time_inputs as inputs_module  # noqa: E402  pylint: disable=wrong-import-position,import-error
import acceptance_time_model as model  # noqa: E402  pylint: disable=wrong-import-position,import-error

Term, PhaseInputs, Options = model.Term, model.PhaseInputs, model.Options


def _phase(new, old=None, name="x"):
    return model.Phase(name, "", new, old)


def _inputs(**terms):
    return PhaseInputs({name: Term(value, "test") for name, value in terms.items()})


def _seconds(scaling, given, ns=(1, 2, 4, 8), options=Options(), plan_model="new"):
    phase = _phase(scaling, scaling)
    return [model.phase_seconds(phase, given, n, options, plan_model) for n in ns]


# --- the scaling rules ---------------------------------------------------------------------------------------------

def test_constant_and_fixed_plus_per_gpu():
    assert _seconds(model.CONSTANT, _inputs(fixed=7.0)) == [7.0, 7.0, 7.0, 7.0]
    assert _seconds(model.FIXED_PLUS_PER_GPU, _inputs(fixed=4.0, per_gpu=0.5)) == [4.5, 5.0, 6.0, 8.0]


def test_the_alone_phase_is_the_first_gpu_unless_alone_devices_is_all():
    given = _inputs(per_gpu=87.0)
    assert _seconds(model.ALONE, given) == [87.0, 87.0, 87.0, 87.0]
    assert _seconds(model.ALONE, given, options=Options(alone_devices="all")) == [87.0, 174.0, 348.0, 696.0]
    assert _seconds(model.ONE_AFTER_ANOTHER, given) == [87.0, 174.0, 348.0, 696.0]
    with pytest.raises(ValueError, match="alone_devices"):
        _seconds(model.ALONE, given, options=Options(alone_devices="some"))


def test_the_together_phase_needs_two_workers_and_pays_a_spawn_per_worker():
    given = _inputs(worker=12.0, worker_start=4.0, spawn=0.5)
    assert _seconds(model.TOGETHER, given) == [0.0, 17.0, 18.0, 20.0]
    assert _seconds(model.TOGETHER, given, ns=(1,), options=Options(workers_per_gpu=2)) == [17.0]


def test_p2p_scales_with_the_ordered_pairs():
    assert _seconds(model.PER_ORDERED_PAIR, _inputs(fixed=3.0, per_pair=1.0)) == [3.0, 5.0, 15.0, 59.0]


def test_the_engine_gap_is_paid_between_probes():
    given = _inputs(per_probe=0.5)
    options = Options(probes_new=13, probes_old=12)
    assert _seconds(model.PER_PROBE, given, ns=(1,), options=options) == [6.0]
    assert _seconds(model.PER_PROBE, given, ns=(1,), options=options, plan_model="old") == [5.5]


PLAN = {"sizes_bytes": [8, 1 << 20, 1 << 30], "warmup": 5, "min_iterations": 5, "max_iterations": 1000,
        "target_time_per_size_s": 0.2, "p2p_disabled_sweep": True}


def test_collective_sweeps_by_rank_count():
    assert model.collective_sweeps(1, PLAN) == []
    assert model.collective_sweeps(2, PLAN) == [("default", 2, PLAN["sizes_bytes"]), ("p2p_disabled", 2, PLAN["sizes_bytes"])]
    eight = model.collective_sweeps(8, PLAN)
    assert [(curve, ranks) for curve, ranks, unused_sizes in eight] == [("default", 8), ("p2p_disabled", 8), ("default", 2), ("default", 4)]
    assert eight[2][2] == PLAN["sizes_bytes"][-model.RING_SIZES:]
    assert model.collective_sweeps(2, dict(PLAN, p2p_disabled_sweep=False)) == [("default", 2, PLAN["sizes_bytes"])]


def test_a_sweep_takes_its_iteration_rule():
    # 8 B at 40 us: 1000 iterations (clamped) + 7; 1 GiB at 2 ranks and 10 GB/s: 0.107 s a call, 5 iterations (clamped)
    call = model.allreduce_seconds(1 << 30, 2, 10.0, 0.0)
    assert call == pytest.approx((1 << 30) / 10e9)
    assert model.sweep_seconds([8], 2, 10.0, 40e-6, PLAN) == pytest.approx(1007 * (40e-6 + 8 / 10e9))
    assert model.sweep_seconds([1 << 30], 2, 10.0, 0.0, PLAN) == pytest.approx(12 * call)
    # more ranks carry more bytes per rank: 2(n-1)/n
    assert model.allreduce_seconds(1 << 30, 8, 10.0, 0.0) == pytest.approx(1.75 * call)


def test_collective_rule_adds_a_start_per_sweep():
    given = PhaseInputs({name: Term(value, "t") for name, value in dict(
        fixed=3.0, sweep_start=7.0, latency=40e-6, busbw_default=300.0, busbw_p2p_disabled=25.0).items()}, PLAN)
    one, two, eight = _seconds(model.PER_RANK_COUNT, given, ns=(1, 2, 8))
    assert one == 3.0
    sweeps_2 = model.sweep_seconds(PLAN["sizes_bytes"], 2, 300.0, 40e-6, PLAN) + model.sweep_seconds(PLAN["sizes_bytes"], 2, 25.0, 40e-6, PLAN)
    assert two == pytest.approx(3.0 + 2 * 7.0 + sweeps_2)
    assert eight > two + 2 * 7.0


def test_a_phase_with_missing_inputs_counts_none_and_a_phase_not_run_counts_zero():
    missing = PhaseInputs(missing="gemm.json is not in run")
    assert model.phase_seconds(_phase(model.CONSTANT), missing, 1, Options(), "new") is None
    assert model.phase_seconds(_phase(None, model.CONSTANT), missing, 1, Options(), "new") == 0.0
    with pytest.raises(KeyError, match="lacks the term"):
        model.phase_seconds(_phase(model.FIXED_PLUS_PER_GPU), _inputs(fixed=1.0), 1, Options(), "new")
    prediction = model.predict({"x": missing}, (1, 8), Options(), "new", phases=(_phase(model.CONSTANT),))
    assert not prediction.complete() and prediction.total(8) == 0.0


# --- reading the recorded results ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def recorded():
    run = inputs_module.load_run(RUN)
    pairs = inputs_module.load_run(PAIRS)
    return run, pairs, inputs_module.phase_inputs(run, None, pairs)


def _term(found, phase, term):
    assert not found[phase].missing, found[phase].missing
    return found[phase].terms[term].value


def test_the_recorded_run_gives_the_measured_terms(recorded):
    run, unused_pairs, found = recorded
    assert run.wall_s == 248.0 and run.wall_source == "the rig's summary.txt"
    # health started 20:11:54, load started 20:14:49 and took 69.064 s
    assert _term(found, "playbook: start, prepare, report, end", "fixed") == pytest.approx(248.0 - 244.064)
    assert _term(found, "gemm alone", "per_gpu") == pytest.approx(1796328848.192 - 1796328760.973)
    assert _term(found, "gemm start", "fixed") == pytest.approx(92.226 - 87.219, abs=1e-3)
    assert _term(found, "hostbw alone", "per_gpu") == pytest.approx(1796328849 + 24.999 - 1796328853.64)
    assert _term(found, "load", "fixed") == 69.064
    assert _term(found, "health", "per_gpu") == pytest.approx(0.15 + (4.382 - 4.065), abs=0.01)
    # the together phase without a two-worker run: the alone headline, assumed, after a start like the probe's own
    together = found["gemm together"].terms
    assert together["worker"].value == pytest.approx(3.0 + 3.017 + 3.0 + 3.063)
    assert together["worker"].source.startswith("assumed, no two-worker run given")
    assert together["worker_start"].value == pytest.approx(92.226 - 87.219, abs=1e-3)
    # fusion's worker repeats the whole probe: its start and its device run, however the two split
    fusion = found["fusion together"].terms
    assert fusion["worker_start"].value + fusion["worker"].value == pytest.approx(21.181)
    assert found["memtest"].terms["fixed"].value == pytest.approx(30.0 + 4.065)
    assert "estimated (no memtest" in found["memtest"].terms["fixed"].source


def test_pairs_and_sweeps_from_the_two_gpu_run(recorded):
    unused_run, unused_pairs, found = recorded
    assert _term(found, "p2p", "fixed") == 3.478
    assert _term(found, "p2p", "per_pair") == pytest.approx((6.436 - 3.478) / 2)
    assert found["p2p"].terms["per_pair"].source.startswith("measured (h200x2/20261130T054132Z-520925)")
    assert _term(found, "collective", "busbw_default") == 325.835
    assert _term(found, "collective", "busbw_p2p_disabled") == 27.4574
    assert found["collective"].plan["max_iterations"] == 1000 and len(found["collective"].plan["sizes_bytes"]) == 28


def test_without_a_pairs_run_p2p_and_collective_are_estimated_from_their_plans():
    found = inputs_module.phase_inputs(inputs_module.load_run(RUN))
    per_pair = found["p2p"].terms["per_pair"]
    # (1 + 4 + ... + 1024) MiB x (2 warm-up + 3 x 10 + 1 check) one way at 396.4 GB/s, and both ways at 783.7 / 2 each
    one_way = 1365 * (1 << 20) * 33
    assert per_pair.value == pytest.approx(one_way / 396.4e9 + one_way / 391.85e9)
    assert per_pair.source.startswith("estimated (no pairs run given)") and "REFERENCE.md" in per_pair.source
    assert found["collective"].terms["busbw_default"].value == 367.0
    assert found["collective"].terms["busbw_p2p_disabled"].value == pytest.approx(55.318 / 2)


def test_the_old_model_gives_the_recorded_wall_and_the_issues_figures(recorded):
    run, unused_pairs, found = recorded
    options = Options(probes_new=13, probes_old=12)
    old = model.predict(found, (1, 8), options, "old")
    assert old.complete() and old.total(1) == pytest.approx(248.0, abs=0.01)
    lines = "\n".join(acceptance_time.recorded_lines(run, found, options))
    assert "from the run id's second to the last probe's end: 246 s" in lines
    assert "= 22.9 min (the issue: ~22 min)" in lines


def test_the_new_model_keeps_the_alone_phases_constant(recorded):
    unused_run, unused_pairs, found = recorded
    new = model.predict(found, (1, 8), Options(), "new")
    rows = {phase.name: seconds for phase, seconds in new.rows}
    assert rows["gemm alone"][1] == rows["gemm alone"][8]
    assert rows["gemm together"][1] == 0.0 and rows["gemm together"][8] > 0
    assert rows["p2p"][8] == pytest.approx(3.478 + 56 * (6.436 - 3.478) / 2)
    every = model.predict(found, (8,), Options(alone_devices="all"), "new")
    assert {phase.name: seconds for phase, seconds in every.rows}["gemm alone"][8] == pytest.approx(8 * rows["gemm alone"][1])


# --- missing inputs are named ----------------------------------------------------------------------------------------

def _copy_run(tmp_path, drop=(), summary=True):
    run_dir = tmp_path / "issue" / "20261203T201152Z-325421"
    shutil.copytree(RUN, str(run_dir))
    for probe in drop:
        os.remove(str(run_dir / "localhost" / (probe + ".json")))
    if summary:
        (tmp_path / "issue" / "summary.txt").write_text("bash scripts/validate rc=0 in 24 s\nacceptance run 1 rc=0 in 248 s\n")
    return str(run_dir)


def test_a_missing_probe_result_makes_its_phases_missing(tmp_path):
    found = inputs_module.phase_inputs(inputs_module.load_run(_copy_run(tmp_path, drop=("gemm",))))
    for name in ("gemm start", "gemm alone", "gemm together", "gemm correctness check"):
        assert found[name].missing == "gemm.json is not in issue/20261203T201152Z-325421"
    assert not found["load"].missing


def test_no_wall_time_is_named(tmp_path):
    run = inputs_module.load_run(_copy_run(tmp_path, summary=False))
    assert run.wall_s is None
    found = inputs_module.phase_inputs(run)
    assert "no wall time" in found["playbook: start, prepare, report, end"].missing and "--wall-s" in found["playbook: start, prepare, report, end"].missing
    given = inputs_module.load_run(_copy_run(tmp_path / "again", summary=False), wall_s=250.0)
    assert given.wall_s == 250.0 and given.wall_source == "given (--wall-s)"


def test_a_missing_field_is_named(tmp_path):
    run_dir = _copy_run(tmp_path)
    path = os.path.join(run_dir, "localhost", "health.json")
    with open(path, encoding="utf-8") as handle:
        envelope = json.load(handle)
    del envelope["data"]["cuda_init"]["wall_s"]
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(envelope, handle)
    found = inputs_module.phase_inputs(inputs_module.load_run(run_dir))
    assert found["health"].missing == "health.json data.cuda_init has no wall_s"


def test_a_two_worker_run_replaces_the_assumption(tmp_path):
    together_dir = tmp_path / "two" / "localhost"
    together_dir.mkdir(parents=True)
    with open(os.path.join(RUN, "localhost", "gemm.json"), encoding="utf-8") as handle:
        envelope = json.load(handle)
    envelope["data"]["together"] = {"wall_s": 20.0, "released_together": True, "start_spread_ms": 0.5, "workers": [
        {"worker": 0, "status": "ok", "duration_s": 17.0}, {"worker": 1, "status": "ok", "duration_s": 18.0}]}
    (together_dir / "gemm.json").write_text(json.dumps(envelope))
    hostbw = json.load(open(os.path.join(RUN, "localhost", "hostbw.json"), encoding="utf-8"))
    hostbw["data"]["together"] = {"unavailable": "one GPU and workers_per_gpu 1"}
    (together_dir / "hostbw.json").write_text(json.dumps(hostbw))
    run = inputs_module.load_run(RUN)
    found = inputs_module.phase_inputs(run, inputs_module.load_run(str(tmp_path / "two"), label="two-worker run"))
    gemm = found["gemm together"].terms
    assert gemm["worker"].value == 18.0 and gemm["spawn"].value == 1.0 and gemm["worker_start"].value == 0.0
    assert gemm["worker"].source.startswith("measured (two-worker run)")
    phase = next(phase for phase in model.PHASES if phase.name == "gemm together")
    assert model.phase_seconds(phase, found["gemm together"], 8, Options(), "new") == 18.0 + 8 * 1.0
    assert found["hostbw together"].terms["worker"].source.startswith("assumed, two-worker run holds no together record of hostbw")
    assert found["membw together"].terms["worker"].source.startswith("assumed, two-worker run holds no together record of membw")


# --- the benchmark on the committed results --------------------------------------------------------------------------

def test_the_benchmark_prints_the_table_from_the_committed_results(capsys):
    assert acceptance_time.main(["--run", RUN, "--pairs-run", PAIRS]) == 0
    out = capsys.readouterr().out
    assert "| phase | scales with n | n=1 s | n=2 s | n=4 s | n=8 s | source |" in out
    assert "| gemm alone | first GPU (x n with alone_devices all) | 87.2 | 87.2 | 87.2 | 87.2 |" in out
    assert "| gemm alone | per GPU x n (one after another) | 87.2 | 174.4 | 348.9 | 697.8 |" in out
    assert "| 1 | 248 | 283 | -35 | no slower than today's 246 s (248 s wall): MISSED by 35 s |" in out
    assert "Missing inputs" not in out and "INCOMPLETE" not in out
    assert "Where the time goes at n = 8 (new model" in out


def test_the_runs_after_the_cuts_measure_memtest_and_hold_the_gemm_check_inside_gemm(capsys):
    found = inputs_module.phase_inputs(inputs_module.load_run(CUTS_RUN, wall_s=246.8))
    assert _term(found, "memtest", "fixed") == 32.563
    assert found["memtest"].terms["fixed"].source.startswith("measured")
    assert _term(found, "gemm correctness check", "per_gpu") == 0.0
    assert "inside gemm alone" in found["gemm correctness check"].terms["per_gpu"].source
    assert acceptance_time.main(PAGE_ARGS + ["--pairs-run", PAIRS]) == 0
    out = capsys.readouterr().out
    assert "| 1 | 214 | 247 | -33 | no slower than today's 246 s (248 s wall): met, 1 s to spare |" in out
    assert "| 8 | 1062 | 450 | 612 | <= 8 min: met, 30 s to spare |" in out
    assert "- from the run id's second to the last probe's end: 244 s (the issue's 246 s)" in out


def test_the_docs_show_what_the_benchmark_prints(capsys):
    acceptance_time.main(PAGE_ARGS + ["--pairs-run", PAIRS])
    out = capsys.readouterr().out
    with open(os.path.join(ROOT, "docs", "time-model.md"), encoding="utf-8") as handle:
        page = handle.read()
    printed = out[out.index("| n | old model s"):out.index("\n\n## The recorded run")]
    assert printed in page
    for model_name in ("New model", "Old model"):
        section = out[out.index("## " + model_name):]
        total = next(line for line in section.splitlines() if line.startswith("| **total**"))
        assert total in page


def test_the_benchmark_takes_a_host_directory_and_other_gpu_counts(capsys):
    assert acceptance_time.main(["--run", os.path.join(RUN, "localhost"), "--ns", "1", "3", "--workers-per-gpu", "2"]) == 0
    out = capsys.readouterr().out
    assert "| n=1 s | n=3 s |" in out and "wall 248 s (the rig's summary.txt)" in out
    # two workers on the one GPU run the together phase there too
    assert "| gemm together | every GPU at once: worker + spawn x workers (none below 2 workers) | 17.1 | 17.1 |" in out
    assert "the issue's arithmetic: 8 x" in out


def test_the_docs_show_the_totals_without_a_pairs_run(capsys):
    acceptance_time.main(PAGE_ARGS)
    out = capsys.readouterr().out
    with open(os.path.join(ROOT, "docs", "time-model.md"), encoding="utf-8") as handle:
        page = handle.read()
    section = out[out.index("## New model"):]
    assert next(line for line in section.splitlines() if line.startswith("| **total**")) in page


def test_the_benchmark_names_a_run_it_cannot_read(tmp_path, capsys):
    with pytest.raises(SystemExit):
        acceptance_time.main(["--run", str(tmp_path / "nowhere")])
    assert "is not a directory" in capsys.readouterr().err

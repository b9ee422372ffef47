"""The report pages the layout test opens in a browser: four runs rendered with today's code into a scratch folder.

- ``cpu``: a localhost run of the quick profile on a machine without a GPU (the CPU path), recorded on the 2-core CI
  machine on 2026-12-01 and kept in docs/examples/cpu/localhost_quick/;
- ``h200x1``: the 1 x H200 acceptance run docs/examples/h200x1/house/20261201T163115Z-092745;
- ``h200x2``: the 2 x H200 run of every probe docs/examples/h200x2/20261130T054132Z-520925;
- ``fleet100``: 100 synthetic hosts of 8 H200s (benchmarks/synthetic_fleet.py: one with an uncorrectable ECC error, two
  idling at 310 W), one whose health probe failed, and 3 expected hosts that never answered, in racks of 32.

Each recorded run is copied (the earlier runs of its folder stay where they are and are read as its previous runs, as
tools/rerender_examples.py does), judged and rendered as the report action does. Used by
tests/unit/report/test_report_layout_in_browser.py and tools/report_screenshots.py.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import sys
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
for _path in (os.path.join(ROOT, "collections"), os.path.join(ROOT, "benchmarks")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.host_pages import render_host_dossier_html  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_fleet_outputs  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import write_text_atomically  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run  # noqa: E402
from synthetic_fleet import health_envelope, rack_of  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(ROOT, "docs", "examples")
RECORDED = {
    "cpu": (os.path.join(ROOT, "docs", "examples", "cpu", "localhost_quick"), "20261201T214315Z-756521", "localhost"),
    "h200x1": (os.path.join(EXAMPLES, "h200x1", "house"), "20261201T163115Z-092745", "localhost"),
    "h200x2": (os.path.join(EXAMPLES, "h200x2"), "20261130T054132Z-520925", "localhost"),
}
FLEET_RUN_ID = "20261201T000000Z-000100"
FLEET_HOSTS = 100
FLEET_UNREACHABLE = ["gpu-r03-n004", "gpu-r03-n005", "gpu-r03-n006"]
FLEET_DOSSIER_HOST = "gpu-r00-n005"  # the host with an uncorrectable ECC error: a failing host's dossier
FLEET_ERROR_HOST = "gpu-r02-n011"
# The template synthetic_fleet.py means (its FIXTURE names a file that is no longer there).
FLEET_TEMPLATE = os.path.join(ROOT, "tests", "fixtures", "health_h200x2_ok_by_the_action.json")
NAMES = ("cpu", "h200x1", "h200x2", "fleet100")


@dataclass
class Pages:
    name: str
    index: str
    dossier: str


def write_fleet(results_dir: str, run_id: str, hosts: int, gpus: int = 8, seed: int = 1) -> list:
    """synthetic_fleet.write_synthetic_run's fleet (racks of 32, one host in 97 with an uncorrectable ECC error, one in
    89 idling at 310 W) and one host whose health probe failed with a long reason; the host names."""
    with open(FLEET_TEMPLATE, encoding="utf-8") as handle:
        template = json.load(handle)
    rng = random.Random(seed)
    names = []
    for number in range(hosts):
        host = "gpu-r%02d-n%03d" % (number // 32, number % 32)
        names.append(host)
        envelope = health_envelope(template, host, number, gpus, run_id, rng)
        if host == FLEET_ERROR_HOST:
            envelope.update(status="error", data={}, reason=(
                "probe exited 1: Traceback (most recent call last): pynvml.NVMLError_Unknown: Unknown Error while "
                "reading nvmlDeviceGetMemoryInfo_v2 of GPU 6 (00000000:78:00.0); the kernel log says "
                "NVRM: Xid (PCI:0000:78:00): 79, pid=2211, GPU has fallen off the bus."))
        path = os.path.join(results_dir, run_id, host)
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "health.json"), "w", encoding="utf-8") as handle:
            json.dump(envelope, handle)
    return names


def _render(run_path: str, results_dir: str, expected, groups, dossier_host: str) -> Pages:
    run = load_run(run_path, expected, groups)
    judgement = judge_run(run, results_dir, {})
    render_fleet_outputs(run, write_text_atomically, judgement)
    host = {host.name: host for host in run.hosts}[dossier_host]
    dossier = os.path.join(run.run_dir, host.dir_name, "dossier.html")
    write_text_atomically(dossier, render_host_dossier_html(host, run, judgement))
    return run, dossier


def build(name: str, workdir: str) -> Pages:
    """Render run `name` (one of NAMES) under workdir; the paths of its index and of one host's dossier."""
    target = os.path.join(workdir, name)
    if name == "fleet100":
        names = write_fleet(target, FLEET_RUN_ID, FLEET_HOSTS)
        expected = names + FLEET_UNREACHABLE
        groups = {host: [rack_of(host)] for host in expected}
        run, dossier = _render(os.path.join(target, FLEET_RUN_ID), target, expected, groups, FLEET_DOSSIER_HOST)
    else:
        folder, run_id, host = RECORDED[name]
        run_path = os.path.join(target, run_id)
        shutil.copytree(os.path.join(folder, run_id), run_path, symlinks=True)
        # The earlier runs of the recorded folder are its previous runs: judged against the original folder.
        run, dossier = _render(run_path, folder, [host], {}, host)
    return Pages(name, os.path.join(run.run_dir, "index.html"), dossier)

"""The real playbook finds the host's Python when gpufleet_python is not set: once per host and playbook run, the
choice recorded in inputs.json and the dossier, every probe run with it."""
import json
import os
import stat
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def counting_python(folder, log):
    """The controller's Python behind a wrapper that logs how it is run: "-B scan" and "-B import" by discovery, a
    probe's path by the probe."""
    folder.mkdir(parents=True)
    wrapper = folder / "python3"
    wrapper.write_text('#!/bin/sh\nif [ "$1" = -B ]; then printf "%%s %%s\\n" "$1" "$5"; else printf "%%s\\n" "$1"; fi'
                       ' >> %s\nexec %s "$@"\n' % (log, sys.executable))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper)


def test_the_python_is_found_once_per_host_recorded_and_used_by_every_probe(tmp_path):
    log = tmp_path / "runs.log"
    wrapper = counting_python(tmp_path / "env" / "bin", log)
    profiles = json.dumps({"gpufleet_profiles": {"pair": ["health", "tuning"]}, "gpufleet_profile": "pair",
                           "gpufleet_python_candidates": [wrapper], "probe_params": {"health": {"cuda_init": False}},
                           "gpufleet_gate": False})  # report only: the gate refuses a CPU host (issue 44)
    completed = subprocess.run([ANSIBLE_PLAYBOOK, "validate.yml", "-e", "gpufleet_results_dir=%s" % (tmp_path / "r"),
                                "-e", profiles], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    runs = log.read_text().splitlines()
    assert [run for run in runs if run.startswith("-B")] == ["-B scan", "-B import"], runs
    assert sorted(os.path.basename(run) for run in runs if not run.startswith("-B")) == ["health.py", "tuning.py"], runs

    host = tmp_path / "r" / "latest" / "localhost"
    inputs = json.loads((host / "inputs.json").read_text())
    assert inputs["python"] == wrapper
    assert inputs["python_choice"]["source"] == "gpufleet_python_candidates"
    assert inputs["python_choice"]["candidates"][0]["chosen"] is True
    for probe in ("health", "tuning"):
        assert json.loads((host / ("%s.json" % probe)).read_text())["command"][0] == wrapper
    dossier = (host / "dossier.html").read_text()
    assert '<h2 id="python">Python that ran the probes</h2>' in dossier
    assert "<td><code>%s</code></td><td>gpufleet_python_candidates</td>" % wrapper in dossier


def test_the_next_run_reuses_the_torch_import_its_previous_run_proved_until_the_environment_changes(tmp_path):
    log = tmp_path / "runs.log"
    wrapper = counting_python(tmp_path / "env" / "bin", log)
    extra = json.dumps({"gpufleet_profile": "health", "gpufleet_python_candidates": [wrapper],
                        "probe_params": {"health": {"cuda_init": False}}, "gpufleet_gate": False})  # report only (issue 44)

    def nightly():
        log.write_text("")
        completed = subprocess.run([ANSIBLE_PLAYBOOK, "validate.yml", "-e", "gpufleet_results_dir=%s" % (tmp_path / "r"),
                                    "-e", extra], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
        assert completed.returncode == 0, completed.stdout + completed.stderr
        host = os.path.realpath(str(tmp_path / "r" / "latest" / "localhost"))
        with open(os.path.join(host, "inputs.json")) as handle:
            chosen = [entry for entry in json.load(handle)["python_choice"]["candidates"] if entry["chosen"]][0]
        return [run for run in log.read_text().splitlines() if run.startswith("-B")], chosen, host

    runs, chosen, first = nightly()
    assert runs == ["-B scan", "-B import"] and "import_proven_in" not in chosen
    first_run = os.path.basename(os.path.dirname(first))
    runs, chosen, second = nightly()
    assert runs == ["-B scan"], runs  # torch not imported again
    assert chosen["torch_imported"] is True and chosen["import_proven_in"] == first_run
    with open(os.path.join(second, "dossier.html")) as handle:
        assert "chosen (torch&#39;s import proven in run %s, unchanged since)" % first_run in handle.read()
    # Something installed beside torch: the next run imports it again.
    torch_dir = os.path.dirname(chosen["fingerprint"]["torch_version_file"][0])
    marker = os.path.join(os.path.dirname(torch_dir), "gpufleet-test-installed-%d" % os.getpid())
    with open(marker, "w"):
        pass
    try:
        runs, chosen, unused_third = nightly()
    finally:
        os.unlink(marker)
    assert runs == ["-B scan", "-B import"] and "import_proven_in" not in chosen

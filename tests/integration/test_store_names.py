"""Names the store itself uses, with the real `ansible-playbook validate.yml` (issue 32, docs/store.md): hosts named
like the run's own files each get their own directory and the fleet outputs are written; a real `latest` directory is
left alone, said in a warning, and the verdicts are still printed."""
import json
import os

from test_bad_input import NO_CUDA_INIT, write_inventory  # pylint: disable=import-error
from test_validate_playbook import run_playbook  # pylint: disable=import-error

# Report only (gpufleet_gate: false): the gate refuses every host of a CPU machine (issue 44), and this test is about names.
HEALTH = ("-e", json.dumps({"gpufleet_profile": "health", "probe_params": NO_CUDA_INIT, "gpufleet_gate": False}))
HOSTS = ("run.json", "index.html", "fleet.json", "junit.xml", "gpu-a01")


def test_hosts_named_like_the_runs_files_and_a_real_latest_directory(tmp_path):
    results = tmp_path / "results"
    (results / "latest").mkdir(parents=True)
    (results / "latest" / "notes.txt").write_text("kept by the user\n")
    inventory = write_inventory(tmp_path / "inventory.yml", {host: {} for host in HOSTS})
    code, output = run_playbook(results, "-i", inventory, *HEALTH, "-e", "gpufleet_run_id=names")
    assert code == 0, output
    run_dir = results / "names"
    fleet = json.loads((run_dir / "fleet.json").read_text())
    assert sorted(fleet["hosts"]) == sorted(HOSTS), fleet["hosts"].keys()
    for host in HOSTS:
        entry = fleet["hosts"][host]
        assert entry["verdict"] == "not_validated" and entry["not_proven"], (host, entry)  # a CPU host, judged like any other
        assert (run_dir / entry["dossier"]["html"]).is_file() and (run_dir / os.path.dirname(entry["dossier"]["html"]) / "health.json").is_file()
        assert '"%s: %s' % (host, entry["verdict"]) in output, host  # the verdict line the role prints
    assert json.loads((run_dir / "run.json").read_text())["run_id"] == "names"
    for name in ("index.html", "index.md", "junit.xml", "gpufleet.prom"):
        assert (run_dir / name).is_file(), name
    assert "could not judge or render" not in output
    assert "latest is a directory, not a link: it was left as it is" in output.replace("\n", " "), output
    assert (results / "latest" / "notes.txt").read_text() == "kept by the user\n" and os.listdir(results / "latest") == ["notes.txt"]

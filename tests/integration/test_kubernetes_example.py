"""The Kubernetes example (playbooks/examples/kubernetes_taints.yml, shown in docs/acting.md) through the real
ansible-playbook, as far as it runs without a cluster: its own tasks that merge the taints and say why, taken from the
file, on nodes as kubernetes.core.k8s_info returns them (its ``resources``), with the filter
gpufleet.validation.kubernetes_taints loaded as a user's playbook loads it. The kubernetes.core tasks themselves are not
run: no API server, and kubernetes.core is not installed here (docs/acting.md says what was and was not verified)."""
import json
import os
import subprocess
import sys

import yaml

from ansible_collections.gpufleet.validation.plugins.plugin_utils.act.kubernetes_taints import (
    RUN_ID_ANNOTATION, RUN_STARTED_ANNOTATION, TAINT_KEY, node_taints)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.act.outcome import host_outcome

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
EXAMPLE = os.path.join(ROOT, "playbooks", "examples", "kubernetes_taints.yml")

GPU_DEDICATED = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
CORDONED = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": "2026-12-01T00:00:00Z"}


def a_node(name, taints, annotations=None):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "resourceVersion": "4711", "annotations": annotations or {}},
            "spec": {"taints": taints}}


def outcome(host, verdict, run_id="nightly run " + "7" * 80):
    return host_outcome(run_id, "2026-12-04T02:00:00Z", host, verdict, [] if verdict == "pass" else ["health.gpu_count: 0 GPUs"],
                        verdict != "pass", host + "/dossier.html", () if verdict == "pass" else ("fix_config",))


def example_tasks():
    """The example's taint play: its tasks, less the two that call kubernetes.core."""
    with open(EXAMPLE, encoding="utf-8") as handle:
        plays = yaml.safe_load(handle)
    (play,) = [play for play in plays if "tasks" in play]
    kept = [task for task in play["tasks"] if not any(key.startswith("kubernetes.core.") for key in task)]
    assert [next(key for key in task if key.startswith("ansible.builtin.")) for task in kept] == \
        ["ansible.builtin.set_fact", "ansible.builtin.debug"]
    return kept


def test_the_example_s_own_tasks_merge_the_taints_through_ansible(tmp_path):
    hosts = {
        "gpu-fail": (outcome("gpu-fail", "fail"), [a_node("gpu-fail", [GPU_DEDICATED, CORDONED])]),
        "gpu-pass": (outcome("gpu-pass", "pass"), [a_node("gpu-pass", [GPU_DEDICATED, {"key": TAINT_KEY, "value": "R0", "effect": "NoSchedule"}],
                                                          {RUN_ID_ANNOTATION: "R0", RUN_STARTED_ANNOTATION: "2026-12-03T02:00:00Z"})]),
        "gpu-none": (outcome("gpu-none", "fail"), []),
    }
    inventory = {"all": {"hosts": {host: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                                          "gpufleet_outcome": document, "kubernetes_node": {"resources": resources}}
                                   for host, (document, resources) in hosts.items()}}}
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory), encoding="utf-8")
    keep = {"name": "keep the plan",
            "ansible.builtin.copy": {"content": "{{ taint_plan | to_json }}", "dest": str(tmp_path / "plan-{{ inventory_hostname }}.json")},
            "delegate_to": "localhost"}
    playbook = [{"name": "the example's taint play, less kubernetes.core", "hosts": "all", "gather_facts": False,
                 "tasks": example_tasks() + [keep]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(playbook, sort_keys=False), encoding="utf-8")
    # The user's playbook lives elsewhere: the collection is found as if installed.
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"), ANSIBLE_FORCE_COLOR="0")
    completed = subprocess.run([ANSIBLE_PLAYBOOK, "-i", str(tmp_path / "inventory.yml"), str(tmp_path / "play.yml")], cwd=str(tmp_path),
                               capture_output=True, text=True, timeout=300, check=False, env=env)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    for host, (document, resources) in hosts.items():
        with open(tmp_path / ("plan-%s.json" % host), encoding="utf-8") as handle:
            assert json.load(handle) == node_taints(resources[0] if resources else None, document), host
    with open(tmp_path / "plan-gpu-fail.json", encoding="utf-8") as handle:
        tainted = json.load(handle)
    assert tainted["patch"]["spec"]["taints"][:2] == [GPU_DEDICATED, CORDONED]
    assert tainted["patch"]["metadata"]["resourceVersion"] == "4711"
    assert "taint: fail in run nightly run 777" in output
    assert "untaint: pass in run" in output
    with open(tmp_path / "plan-gpu-pass.json", encoding="utf-8") as handle:
        assert json.load(handle)["patch"]["spec"]["taints"] == [GPU_DEDICATED]
    assert "leave, nothing to change: Kubernetes has no node of this name" in output


def test_a_variable_that_is_no_outcome_stops_the_host_with_the_filter_s_words(tmp_path):
    inventory = {"all": {"hosts": {"gpu-x": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                                             "gpufleet_outcome": {"verdict": "fail"},
                                             "kubernetes_node": {"resources": [a_node("gpu-x", [])]}}}}}
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory), encoding="utf-8")
    playbook = [{"name": "the example's taint play, less kubernetes.core", "hosts": "all", "gather_facts": False,
                 "tasks": example_tasks()}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(playbook, sort_keys=False), encoding="utf-8")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"), ANSIBLE_FORCE_COLOR="0")
    completed = subprocess.run([ANSIBLE_PLAYBOOK, "-i", str(tmp_path / "inventory.yml"), str(tmp_path / "play.yml")], cwd=str(tmp_path),
                               capture_output=True, text=True, timeout=300, check=False, env=env)
    output = completed.stdout + completed.stderr
    assert completed.returncode != 0, output
    assert "kubernetes_taints: not a host's outcome (gpufleet_outcome): missing schema_version" in output

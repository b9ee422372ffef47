"""The Kubernetes example's patches applied by Kubernetes' own patch code: ``kubectl patch --local`` (Debian's
kubernetes-client, installed by scripts/install-system-packages) applies a JSON merge patch and a strategic merge patch
to a node read from a file, with the same apimachinery code the API server runs for a PATCH of that type. No API server
runs here: what the server adds (the resourceVersion precondition, admission) is not tested (docs/acting.md).

The defect of issue 46: the example docs/acting.md had shown sent ``{"spec": {"taints": [...]}}`` through
kubernetes.core.k8s's default strategic merge; ``NodeSpec.taints`` has no patch strategy, so the list was replaced and
every other taint of the node was lost. Skipped only where kubectl is absent; GPUFLEET_REQUIRE_KUBECTL=1 (scripts/test,
so CI) makes that a failure instead."""
import json
import os
import shutil
import subprocess

import jinja2.nativetypes
import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.act.kubernetes_taints import (
    RUN_ID_ANNOTATION, RUN_STARTED_ANNOTATION, TAINT_KEY, node_taints, taint_value)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.act.outcome import host_outcome
from required_parts import required_program  # pylint: disable=import-error

KUBECTL = shutil.which("kubectl")
ABSENT = "kubectl is not installed here: apt install kubernetes-client (scripts/install-system-packages installs it)"

GPU_DEDICATED = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
CORDONED = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": "2026-12-01T00:00:00Z"}
EVICTING = {"key": "example.com/maintenance", "value": "rack7", "effect": "NoExecute", "timeAdded": "2026-12-02T00:00:00Z"}
OTHERS = [GPU_DEDICATED, CORDONED, EVICTING]

# The taint list of the example docs/acting.md showed before issue 46 (commit d5d2ab3), as it was written there.
OLD_EXAMPLE_TAINTS = ("{{ [{'key': 'gpufleet.validation/failed', 'value': gpufleet_outcome.run_id, 'effect': 'NoSchedule'}]\n"
                      "                        if gpufleet_outcome.verdict in ['fail', 'error'] else [] }}")


@pytest.fixture
def kubectl():
    return required_program(KUBECTL, ABSENT, "GPUFLEET_REQUIRE_KUBECTL")


def patched(kubectl, tmp_path, node, patch, patch_type):
    """The node after kubectl applies the patch locally (no server, no kubeconfig read)."""
    path = tmp_path / "node.json"
    path.write_text(json.dumps(node), encoding="utf-8")
    done = subprocess.run([kubectl, "patch", "--local", "-f", str(path), "--type", patch_type, "-p", json.dumps(patch), "-o", "json"],
                          capture_output=True, text=True, timeout=60, check=False,
                          env=dict(os.environ, KUBECONFIG=str(tmp_path / "no-kubeconfig")))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def a_node(taints, annotations=None):
    metadata = {"name": "gpu-017", "resourceVersion": "4711", "annotations": dict(annotations or {"other.example/keep": "yes"})}
    return {"apiVersion": "v1", "kind": "Node", "metadata": metadata, "spec": {"podCIDR": "10.244.3.0/24", "taints": taints}}


def outcome(verdict, run_id="20261204T020000Z-000042", started="2026-12-04T02:00:00Z"):
    reasons = [] if verdict == "pass" else ["health.ecc_volatile_uncorrected: 3 uncorrectable ECC errors on GPU 5"]
    return host_outcome(run_id, started, "gpu-017", verdict, reasons, verdict != "pass", "gpu-017/dossier.html",
                        () if verdict == "pass" else ("drain",))


@pytest.mark.parametrize("verdict, left", [("warn", []), ("pass", []),
                                           ("fail", [{"key": TAINT_KEY, "value": "20261204T020000Z-000042", "effect": "NoSchedule"}])])
def test_the_old_example_s_patch_dropped_every_other_taint_of_the_node(kubectl, tmp_path, verdict, left):
    taints = jinja2.nativetypes.NativeEnvironment().from_string(OLD_EXAMPLE_TAINTS).render(gpufleet_outcome=outcome(verdict))
    # kubernetes.core.k8s with state: patched and no merge_type sends a strategic merge patch first
    after = patched(kubectl, tmp_path, a_node(OTHERS), {"spec": {"taints": taints}}, "strategic")
    assert after["spec"]["taints"] == left, "the defect this test records is gone from kubectl: read the docstring again"


@pytest.mark.parametrize("patch_type", ["merge", "strategic"])
def test_the_example_s_patch_adds_and_removes_only_this_collection_s_taint(kubectl, tmp_path, patch_type):
    node = a_node(OTHERS)
    plan = node_taints(node, outcome("fail"))
    tainted = patched(kubectl, tmp_path, node, plan["patch"], patch_type)
    assert tainted["spec"]["taints"] == OTHERS + [{"key": TAINT_KEY, "value": "20261204T020000Z-000042", "effect": "NoSchedule"}]
    assert tainted["metadata"]["annotations"] == {"other.example/keep": "yes", RUN_ID_ANNOTATION: "20261204T020000Z-000042",
                                                  RUN_STARTED_ANNOTATION: "2026-12-04T02:00:00Z"}
    assert tainted["spec"]["podCIDR"] == "10.244.3.0/24"
    again = node_taints(tainted, outcome("fail"))
    assert again["changed"] is False and again["patch"] is None, "the patched node is what the plan wanted"

    passed = node_taints(tainted, outcome("pass", run_id="20261205T020000Z-000001", started="2026-12-05T02:00:00Z"))
    untainted = patched(kubectl, tmp_path, tainted, passed["patch"], patch_type)
    assert untainted["spec"]["taints"] == OTHERS
    assert untainted["metadata"]["annotations"] == {"other.example/keep": "yes"}


def test_every_value_passes_kubernetes_own_label_value_check_where_the_run_id_does_not(kubectl, tmp_path):
    """A taint's value is checked as a label value (apimachinery IsValidLabelValue); ``kubectl label --local`` runs that
    check on the client. The shortened value of each run id that fails it passes it."""
    node_file = tmp_path / "node.json"
    node_file.write_text(json.dumps(a_node([])), encoding="utf-8")

    def label(value):
        return subprocess.run([kubectl, "label", "--local", "-f", str(node_file), "%s=%s" % (TAINT_KEY, value), "-o", "json"],
                              capture_output=True, text=True, timeout=60, check=False,
                              env=dict(os.environ, KUBECONFIG=str(tmp_path / "no-kubeconfig")))

    for run_id in ("n" * 200, "n" * 64, "-leading-dash", "trailing.", "nightly run 7", "Nacht-Übung"):
        refused = label(run_id)
        assert refused.returncode != 0 and "invalid label value" in refused.stderr, (run_id, refused.stderr)
        accepted = label(taint_value(run_id))
        assert accepted.returncode == 0, accepted.stderr
        assert json.loads(accepted.stdout)["metadata"]["labels"][TAINT_KEY] == taint_value(run_id)
    assert label("20261204T020000Z-000042").returncode == 0 and taint_value("20261204T020000Z-000042") == "20261204T020000Z-000042"

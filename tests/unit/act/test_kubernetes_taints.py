"""A Kubernetes node's taints after a run (plugins/plugin_utils/act/kubernetes_taints.py, issue 46): only this
collection's taint is added, replaced or removed, every other taint is kept as it is and where it is, the value is
always a valid label value, and the patch carries the node's resourceVersion."""
import copy
import os
import re

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.act.kubernetes_taints import (
    LEAVE, RUN_ID_ANNOTATION, RUN_STARTED_ANNOTATION, TAINT, TAINT_KEY, UNTAINT, node_taints, taint_value)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.act.outcome import host_outcome

# Kubernetes' own rule for a label value (apimachinery validation.IsValidLabelValue), which a taint's value must meet:
# written out here, not imported from the code under test.
K8S_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

GPU_DEDICATED = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
CORDONED = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": "2026-12-01T00:00:00Z"}
EVICTING = {"key": "example.com/maintenance", "value": "rack7", "effect": "NoExecute", "timeAdded": "2026-12-02T00:00:00Z"}


def valid_label_value(text):
    return len(text) <= 63 and K8S_LABEL_VALUE.match(text) is not None and "\n" not in text


def outcome(verdict, run_id="20261204T020000Z-000042", started="2026-12-04T02:00:00Z", actions=("drain",)):
    reasons = [] if verdict == "pass" else ["health.ecc_volatile_uncorrected: 3 uncorrectable ECC errors on GPU 5"]
    return host_outcome(run_id, started, "gpu-017", verdict, reasons, verdict != "pass", "gpu-017/dossier.html",
                        () if verdict == "pass" else actions)


def node(taints, annotations=None):
    metadata = {"name": "gpu-017", "resourceVersion": "4711", "labels": {"kubernetes.io/hostname": "gpu-017"}}
    if annotations is not None:
        metadata["annotations"] = annotations
    spec = {"podCIDR": "10.244.3.0/24"}
    if taints is not None:
        spec["taints"] = taints
    return {"apiVersion": "v1", "kind": "Node", "metadata": metadata, "spec": spec}


def ours(run_id="20261204T020000Z-000042"):
    return {"key": TAINT_KEY, "value": run_id, "effect": "NoSchedule"}


def held(run_id="20261204T020000Z-000042", started="2026-12-04T02:00:00Z"):
    return {RUN_ID_ANNOTATION: run_id, RUN_STARTED_ANNOTATION: started, "other.example/keep": "yes"}


def test_a_failing_host_s_node_gets_the_taint_and_keeps_every_other_taint_in_order():
    before = node([GPU_DEDICATED, CORDONED, EVICTING])
    plan = node_taints(before, outcome("fail"))
    assert plan["action"] == TAINT and plan["changed"] is True
    assert plan["taints"] == [GPU_DEDICATED, CORDONED, EVICTING, ours()]
    assert plan["patch"] == {"apiVersion": "v1", "kind": "Node",
                             "metadata": {"name": "gpu-017", "resourceVersion": "4711",
                                          "annotations": {RUN_ID_ANNOTATION: "20261204T020000Z-000042",
                                                          RUN_STARTED_ANNOTATION: "2026-12-04T02:00:00Z"}},
                             "spec": {"taints": [GPU_DEDICATED, CORDONED, EVICTING, ours()]}}
    assert plan["why"] == "fail in run 20261204T020000Z-000042: health.ecc_volatile_uncorrected: 3 uncorrectable ECC errors on GPU 5"
    assert before == node([GPU_DEDICATED, CORDONED, EVICTING]), "the node read is not changed in place"


def test_error_taints_too_and_the_verdicts_that_do_are_the_user_s_to_choose():
    assert node_taints(node([]), outcome("error"))["action"] == TAINT
    assert node_taints(node([]), outcome("error"), taint_on=["fail"])["action"] == LEAVE
    plan = node_taints(node([]), outcome("unreachable"), taint_on=["fail", "unreachable"])
    assert plan["action"] == TAINT and plan["taints"] == [ours()]


def test_a_newer_run_replaces_the_taint_in_its_place_and_its_annotations():
    before = node([GPU_DEDICATED, ours("20261203T020000Z-000001"), CORDONED], held("20261203T020000Z-000001", "2026-12-03T02:00:00Z"))
    plan = node_taints(before, outcome("fail"))
    assert plan["action"] == TAINT
    assert plan["taints"] == [GPU_DEDICATED, ours(), CORDONED]
    assert plan["patch"]["metadata"]["annotations"] == {RUN_ID_ANNOTATION: "20261204T020000Z-000042",
                                                        RUN_STARTED_ANNOTATION: "2026-12-04T02:00:00Z"}


def test_the_same_outcome_again_changes_nothing():
    plan = node_taints(node([GPU_DEDICATED, ours(), CORDONED], held()), outcome("fail"))
    assert plan["action"] == TAINT and plan["changed"] is False and plan["patch"] is None
    assert plan["taints"] == [GPU_DEDICATED, ours(), CORDONED]


def test_two_taints_of_this_collection_s_key_become_one():
    before = node([dict(ours("x"), effect="NoExecute"), GPU_DEDICATED, ours("y")], held("y", "2026-12-01T00:00:00Z"))
    assert node_taints(before, outcome("fail"))["taints"] == [ours(), GPU_DEDICATED]


@pytest.mark.parametrize("verdict", ["pass", "warn"])
def test_a_passing_or_warning_host_s_node_loses_only_this_collection_s_taint_and_annotations(verdict):
    before = node([GPU_DEDICATED, ours(), CORDONED], held())
    plan = node_taints(before, outcome(verdict))
    assert plan["action"] == UNTAINT and plan["changed"] is True
    assert plan["taints"] == [GPU_DEDICATED, CORDONED]
    assert plan["patch"]["spec"] == {"taints": [GPU_DEDICATED, CORDONED]}
    # a JSON merge patch removes a key with null; the annotation of someone else is not named
    assert plan["patch"]["metadata"] == {"name": "gpu-017", "resourceVersion": "4711",
                                         "annotations": {RUN_ID_ANNOTATION: None, RUN_STARTED_ANNOTATION: None}}


def test_a_passing_host_s_node_without_the_taint_is_not_patched():
    plan = node_taints(node([GPU_DEDICATED, CORDONED]), outcome("pass"))
    assert plan["action"] == UNTAINT and plan["changed"] is False and plan["patch"] is None
    assert plan["taints"] == [GPU_DEDICATED, CORDONED]
    assert plan["why"] == "pass in run 20261204T020000Z-000042: holds no taint gpufleet.validation/failed"


def test_untainting_the_last_taint_sends_an_empty_list():
    plan = node_taints(node([ours()], held()), outcome("pass"))
    assert plan["patch"]["spec"] == {"taints": []}


@pytest.mark.parametrize("verdict", ["not_validated", "unreachable"])
def test_a_host_neither_broken_nor_proven_healthy_is_left_as_it_is(verdict):
    before = node([GPU_DEDICATED, ours("20261203T020000Z-000001")], held("20261203T020000Z-000001", "2026-12-03T02:00:00Z"))
    plan = node_taints(before, outcome(verdict))
    assert plan["action"] == LEAVE and plan["changed"] is False and plan["patch"] is None
    assert plan["taints"] == [GPU_DEDICATED, ours("20261203T020000Z-000001")]
    assert plan["why"].startswith("%s in run 20261204T020000Z-000042: neither tainted nor untainted" % verdict)


@pytest.mark.parametrize("taints", [None, []])
def test_a_node_without_taints(taints):
    assert node_taints(node(taints), outcome("fail"))["taints"] == [ours()]
    plan = node_taints(node(taints), outcome("pass"))
    assert plan["changed"] is False and plan["patch"] is None and plan["taints"] == []
    with_null = node([])
    with_null["spec"]["taints"] = None
    with_null["metadata"]["annotations"] = None
    assert node_taints(with_null, outcome("fail"))["taints"] == [ours()]


def test_no_node_is_left_alone():
    plan = node_taints(None, outcome("fail"))
    assert plan == {"action": LEAVE, "why": "Kubernetes has no node of this name", "changed": False, "taints": [], "patch": None}


def test_a_busy_gpu_is_never_tainted_for():
    plan = node_taints(node([GPU_DEDICATED]), outcome("fail", actions=("rerun_when_idle",)))
    assert plan["action"] == LEAVE and plan["patch"] is None and "a busy GPU is not a broken one" in plan["why"]
    assert node_taints(node([GPU_DEDICATED]), outcome("fail", actions=("rerun_when_idle", "drain")))["action"] == TAINT


def test_a_pass_in_an_older_run_does_not_untaint_what_a_newer_run_tainted():
    newer = node([GPU_DEDICATED, ours("20261205T020000Z-000007")], held("20261205T020000Z-000007", "2026-12-05T02:00:00Z"))
    for verdict in ("pass", "fail"):
        plan = node_taints(newer, outcome(verdict))
        assert plan["action"] == LEAVE and plan["patch"] is None
        assert "put by run 20261205T020000Z-000007, which started 2026-12-05T02:00:00Z" in plan["why"]
    assert node_taints(newer, outcome("pass", run_id="20261206T020000Z-000001", started="2026-12-06T02:00:00Z"))["action"] == UNTAINT
    same_run = node_taints(newer, outcome("pass", run_id="20261205T020000Z-000007", started=""))
    assert same_run["action"] == UNTAINT and same_run["changed"] is True


def test_a_taint_of_this_key_without_a_record_of_its_run_is_left_for_a_person():
    """As in Slurm: a node this collection holds no record of tainting (a taint set by hand, or by the example this
    replaces) is not untainted."""
    plan = node_taints(node([ours("by-hand")]), outcome("pass"))
    assert plan["action"] == LEAVE and "put by run (none recorded), which started at an unknown time" in plan["why"]
    not_text = node([ours("R0")], {RUN_ID_ANNOTATION: "R0", RUN_STARTED_ANNOTATION: 20261203})
    assert node_taints(not_text, outcome("pass"))["action"] == LEAVE


@pytest.mark.parametrize("run_id", [
    "20261204T020000Z-000042", "a", "A.b_c-9", "x" * 63,
    "x" * 64, "n" * 200, "-leading-dash", "trailing-", "trailing.", "trailing_", "...", "---", "_",
    "nightly run 7", "Nacht-Übung-ß", "夜间验证", "🙂", "run/with/slashes:and:colons", "abc\n", "\udcff-lone-surrogate",
    "a" * 52 + "-" + "b" * 20, "é" * 200,
])
def test_every_run_id_gives_a_valid_taint_value(run_id):
    value = taint_value(run_id)
    assert valid_label_value(value), value
    assert taint_value(run_id) == value, "deterministic"
    if valid_label_value(run_id):
        assert value == run_id, "a run id that is a valid value is kept as it is"
    else:
        assert re.fullmatch(r"([A-Za-z0-9][-A-Za-z0-9_.]*-)?[0-9a-f]{10}", value), value


def test_shortened_values_keep_what_is_readable_and_differ_for_different_ids():
    first, second = taint_value("n" * 100 + "1"), taint_value("n" * 100 + "2")
    assert first != second and first.startswith("n" * 52 + "-") and len(first) == 63
    assert taint_value("nightly run 7").startswith("nightly-run-7-")
    assert taint_value("-x") != taint_value("x-") and len(taint_value("🙂")) == 10


def test_the_full_run_id_is_in_the_annotation_where_the_value_is_shortened():
    run_id = "acceptance-" + "rack7-" * 20
    plan = node_taints(node([GPU_DEDICATED]), outcome("fail", run_id=run_id))
    assert plan["taints"][1]["value"] == taint_value(run_id) != run_id
    assert plan["patch"]["metadata"]["annotations"][RUN_ID_ANNOTATION] == run_id


@pytest.mark.parametrize("change, words", [
    (lambda n: n["metadata"].pop("resourceVersion"), "metadata.resourceVersion"),
    (lambda n: n["metadata"].pop("name"), "metadata.name"),
    (lambda n: n["spec"].update(taints={"key": "x"}), "spec.taints must be a list"),
])
def test_a_node_not_as_k8s_info_returns_it_is_refused(change, words):
    broken = node([GPU_DEDICATED])
    change(broken)
    with pytest.raises(ValueError, match=re.escape(words)):
        node_taints(broken, outcome("fail"))


def test_what_is_not_an_outcome_or_a_verdict_list_is_refused():
    with pytest.raises(ValueError, match="not a host's outcome .gpufleet_outcome.: missing"):
        node_taints(node([]), {})
    with pytest.raises(ValueError, match="no run_id"):
        node_taints(node([]), dict(outcome("fail"), run_id=""))
    with pytest.raises(ValueError, match="taint_on must be a list of verdicts"):
        node_taints(node([]), outcome("fail"), taint_on="fail")
    with pytest.raises(ValueError, match="a verdict cannot both taint and untaint: warn"):
        node_taints(node([]), outcome("fail"), taint_on=["fail", "warn"])


def test_the_plan_does_not_share_the_node_s_taints():
    before = node([GPU_DEDICATED, CORDONED])
    kept = copy.deepcopy(before)
    plan = node_taints(before, outcome("fail"))
    plan["taints"].append({"key": "z"})
    assert before == kept


def test_docs_acting_shows_the_example_file_as_it_is():
    """The example people copy from docs/acting.md is the file the tests run and lint: its one YAML block under the
    heading "Kubernetes", character for character."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    with open(os.path.join(root, "docs", "acting.md"), encoding="utf-8") as handle:
        page = handle.read()
    with open(os.path.join(root, "playbooks", "examples", "kubernetes_taints.yml"), encoding="utf-8") as handle:
        example = handle.read()
    section = page.split("\n### Kubernetes", 1)[1].split("\n## ", 1)[0]
    assert re.findall(r"\n```yaml\n(.*?)```\n", section, re.S) == [example]
    assert "gpufleet.validation.kubernetes_taints(gpufleet_outcome)" in example

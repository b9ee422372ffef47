"""The interconnect probes' dossier sections: the P2P heat map and tables, the all-reduce curves with their knees."""
import os
import sys

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.collective.view import collective_view
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.p2p.view import p2p_view

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "judge"))
from test_interconnect_checks import collective, curve, p2p, pair  # noqa: E402  pylint: disable=wrong-import-position


def texts(table):
    return [[cell.text for cell in row] for row in table["rows"]]


def test_p2p_section_has_heat_maps_every_pair_and_marks_a_failed_pair():
    failed = pair(1, 0, 389.0, error="no peer access <b>", peer_access=False)
    del failed["unidirectional"], failed["bidirectional"]
    data = p2p([pair(0, 1, 391.25, bidir=780.5), failed])["data"]
    data["pairs"][0]["unidirectional"]["sweep"] = [{"size_bytes": 2 ** 20, "gbps": 200.0, "time_per_copy_s": 5e-6, "verified": True},
                                                   {"size_bytes": 2 ** 30, "gbps": 391.25, "time_per_copy_s": 2.7e-3, "verified": True}]
    view = p2p_view(data)
    pairs, sweep = view["tables"]
    rows = texts(pairs)
    assert rows[0][:2] == ["0 → 1", "NV18"] and rows[0][4] == "391 GB/s" and rows[0][5] == "781 GB/s"
    assert rows[1][3] == "no" and pairs["rows"][1][3].flag == "bad"
    assert rows[1][4] == "failed" and pairs["rows"][1][4].note == "no peer access <b>"
    heat = view["plots"][0]
    assert "P2P unidirectional" in heat and ">391</text>" in heat and "NV18" in heat and "failed" in heat
    assert "<b>" not in heat and "&lt;b&gt;" not in heat  # the error is in the table (escaped by the template), not the map
    assert len(sweep["rows"]) == 2 and any("Unidirectional P2P bandwidth by copy size" in plot for plot in view["plots"])


def test_p2p_section_of_a_single_gpu_host_says_why_it_is_empty():
    view = p2p_view({"devices": [{"index": 0}], "pairs": [], "errors": []})
    assert view["plots"] == [] and view["tables"][0]["rows"] == []
    assert "fewer than two GPUs" in view["tables"][0]["empty"]


def test_collective_section_plots_both_curves_with_their_knees_and_lists_nccl_settings():
    data = collective([curve("default", 360.0), curve("p2p_disabled", 20.0)])["data"]
    data["curves"][1]["knee"]["knee_bytes"] = 1.5e5
    view = collective_view(data)
    curves, environment, sweep = view["tables"]
    assert [row[0] for row in texts(curves)] == ["default", "p2p_disabled"]
    assert texts(curves)[0][1] == "360 GB/s"
    plot = view["plots"][0]
    assert "knee default" in plot and "knee p2p_disabled" in plot and plot.count("<polyline") == 2
    assert ["NCCL_NVLS_ENABLE", "0"] in texts(environment) and ["NCCL version", "2.28.9"] in texts(environment)
    assert len(sweep["rows"]) == 6 and view["note"].startswith("x")


def _host(name, rank, status="ok", reason="", data=None):
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import HostModel, ProbeEntry
    if data is None:
        data = collective([curve("default", 1.2)], kind="cpu", link_classes=())["data"]
        data["hosts"] = {"node_rank": rank, "nnodes": 3, "master_addr": "10.213.0.10", "master_port": 29571, "interface": "eth0",
                         "ranks_per_host": 1}
    entry = ProbeEntry("collective_hosts", status, reason, {"status": status, "reason": reason, "data": data}, "x.json", None)
    return HostModel(name, name, True, [], {"collective_hosts": entry}, status, [])


def test_the_fleet_index_shows_one_cross_host_all_reduce_per_rendezvous_from_its_lowest_rank():
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.collective_hosts.view import cross_host_runs
    failed = _host("h3", None, "error", "only 2 of 3 ranks joined within 120 s", data={})
    runs = cross_host_runs([_host("h2", 1), _host("h1", 0), failed])
    assert len(runs) == 2  # the failed host wrote no rendezvous: listed apart, with its reason
    joined = [run for run in runs if run["rendezvous"] == "10.213.0.10:29571"][0]
    assert [member["host"] for member in joined["members"]] == ["h1", "h2"] and joined["backend"] == "gloo"
    assert joined["view"]["plots"] and texts(joined["view"]["tables"][0])[0][:2] == ["default", "1.2 GB/s"]
    alone = [run for run in runs if run is not joined][0]
    assert alone["members"][0]["reason"] == "only 2 of 3 ranks joined within 120 s" and alone["view"]["plots"] == []

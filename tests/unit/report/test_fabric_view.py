"""The fabric probe's dossier section: ports, network interfaces, each GPU's nearest NIC, GPUDirect and the RDMA
bandwidth runs, rendered for every hand-written result (tests/unit/judge/fabric_results.py), names escaped."""
import os
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.declaration import TABLES_HTML, TABLES_MARKDOWN
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.fabric.view import fabric_view
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.markup import HTML, MARKDOWN
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import envelope_problems

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "judge"))
import fabric_results as results  # noqa: E402  pylint: disable=wrong-import-position

BUILT = {"healthy": results.hgx_h200_healthy, "port_down": results.port_down, "half_rate": results.half_rate,
         "symbol_errors_rising": lambda: results.symbol_errors_rising()[1], "vm_without_rdma": results.vm_without_rdma,
         "roce_without_gids": results.roce_without_gids, "peermem_missing": results.peermem_missing,
         "firmware_differs": results.firmware_differs}
EVIL = "<script>alert(1)</script>|x"


def texts(table):
    return [[cell.text for cell in row] for row in table["rows"]]


@pytest.mark.parametrize("name", sorted(BUILT))
def test_every_result_is_one_the_store_keeps_and_renders(name):
    result = BUILT[name]()
    assert envelope_problems(result) == []
    view = fabric_view(result["data"])
    assert [table["title"] for table in view["tables"]] == ["RDMA ports (InfiniBand and RoCE)", "Network interfaces",
                                                            "Each GPU's nearest NIC", "RDMA write bandwidth (ib_write_bw)"]
    assert HTML.get_template(TABLES_HTML).render(view=view) and MARKDOWN.get_template(TABLES_MARKDOWN).render(view=view)


def test_the_healthy_node_shows_each_port_gpu_and_run_in_gbit_s():
    ports, interfaces, gpus, runs = fabric_view(results.hgx_h200_healthy()["data"])["tables"]
    assert texts(ports)[0][:7] == ["mlx5_0 port 1", "ACTIVE / LinkUp", "400 Gb/sec (4X NDR)", "InfiniBand", "1", "MT4129", "28.39.1002"]
    assert len(texts(ports)) == 8 and len(texts(gpus)) == 8 and len(texts(runs)) == 16
    assert texts(gpus)[0] == ["0000:18:00.0", "0", "mlx5_0", "0000:1a:00.0", "on the GPU's PCIe switch"]
    assert texts(runs)[1][:3] == ["mlx5_0 port 1, cuda memory (GPU 0), loopback", "387.5 Gb/s", "395 Gb/s"]
    assert texts(interfaces)[0][:5] == ["eno1", "physical", "up", "10 Gb/s", "1500"]
    assert fabric_view(results.hgx_h200_healthy()["data"])["note"].startswith("GPUDirect RDMA: nvidia_peermem loaded; dma-buf available")


def test_a_port_down_is_flagged_and_the_vm_says_why_its_tables_are_empty():
    ports = fabric_view(results.port_down()["data"])["tables"][0]
    assert ports["rows"][3][1].text == "DOWN / Polling" and ports["rows"][3][1].flag == "bad"
    view = fabric_view(results.vm_without_rdma()["data"])
    ports, interfaces, gpus, runs = view["tables"]
    assert ports["rows"] == [] and ports["empty"] == "no RDMA device on this host (/sys/class/infiniband is empty or absent)"
    assert runs["empty"] == "RDMA bandwidth was not measured: no RDMA device"
    assert texts(gpus)[0][2] == "n/a" and gpus["rows"][0][2].note == "no RDMA device on this host"
    assert "nvidia_peermem not loaded (not in /proc/modules)" in view["note"]


def test_names_from_the_host_are_escaped_in_html_and_markdown():
    result = results.hgx_h200_healthy()
    result["data"]["rdma_devices"][0]["name"] = EVIL
    result["data"]["ethernet"][0]["name"] = EVIL
    result["data"]["gpudirect"]["nvidia_peermem_loaded"] = False
    result["data"]["gpudirect"]["nvidia_peermem_reason"] = EVIL
    view = fabric_view(result["data"])
    html = HTML.get_template(TABLES_HTML).render(view=view)
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    markdown = MARKDOWN.get_template(TABLES_MARKDOWN).render(view=view)
    assert "<script>" not in markdown and "|x" not in markdown.replace("\\|x", "")

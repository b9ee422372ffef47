"""Run the peer tools built by tools/build_peer_tools.sh and put them beside the probes' results of one run (GPU machine).

    python3 benchmarks/peer_tools.py --build /tmp/peer_tools --host-dir RESULTS/RUN/HOST --out DIR

nccl-tests: `all_reduce_perf -b 8 -e 1G -f 2 -c 1 -g <GPUs>`, once as it is and once with NCCL_P2P_DISABLE=1 (the
collective probe's two curves), NCCL_NVLS_ENABLE=0 in both, against the libnccl torch loads. nvbandwidth: the
device-to-device copy-engine tests (read, write, and both bidirectional) and host<->device copy-engine tests, with
`--json`, at each buffer size the p2p probe swept (1 MiB to 1 GiB). Each tool's raw output is kept in DIR; DIR/peer_tools.json
holds what was parsed, DIR/peer_tools.md the tables beside the probe (collective.json and p2p.json in --host-dir) with
the differences in percent. A tool that was not built, or whose run fails, is named with why; the rest still runs.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any, Callable, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_tool_output import (all_reduce_beside, format_table, matrix_cell, parse_all_reduce_perf,  # noqa: E402
                              parse_nvbandwidth_json, percent_difference)

NVBANDWIDTH_TESTS = ("device_to_device_memcpy_write_ce", "device_to_device_memcpy_read_ce",
                     "device_to_device_bidirectional_memcpy_write_ce", "device_to_device_bidirectional_memcpy_read_ce",
                     "host_to_device_memcpy_ce", "device_to_host_memcpy_ce")
BUFFER_SIZES_MIB = (1, 4, 16, 64, 256, 1024)
ALL_REDUCE_ARGS = ("-b", "8", "-e", "1G", "-f", "2", "-c", "1")
TOOL_TIMEOUT_S = 300


def built_tools(build: str) -> Dict[str, Dict[str, str]]:
    """{tool: {"dir": binary dir, "library_path": ...} or {"not_built": why}} from build/built.txt."""
    tools: Dict[str, Dict[str, str]] = {}
    try:
        with open(os.path.join(build, "built.txt"), encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError as exc:
        return {"nccl-tests": {"not_built": str(exc)}, "nvbandwidth": {"not_built": str(exc)}}
    for line in lines:
        tool, unused_space, rest = line.partition(" ")
        if rest.startswith("built "):
            where = rest[len("built "):].split()
            entry = {"dir": where[0]}
            if len(where) > 1 and where[1].startswith("(LD_LIBRARY_PATH="):
                entry["library_path"] = where[1][len("(LD_LIBRARY_PATH="):].rstrip(")")
            tools[tool] = entry
        else:
            tools[tool] = {"not_built": rest.partition(": ")[2] or rest}
    return tools


def run_tool(command: List[str], env: Dict[str, str], raw_path: str) -> Dict[str, Any]:
    """Run command (an argument list), keep its output in raw_path; {"rc", "text"} or {"error"}."""
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": "%s: %s" % (type(exc).__name__, exc)}
    with open(raw_path, "w", encoding="utf-8") as handle:
        handle.write(done.stdout)
        if done.stderr:
            handle.write("\n# stderr\n" + done.stderr)
    return {"rc": done.returncode, "text": done.stdout}


def run_and_parse(command: List[str], env: Dict[str, str], raw_path: str,
                  parse: Callable[[str], Dict[str, Any]]) -> Dict[str, Any]:
    """{"command", "rc", and what parse(stdout) returns} for one run of a tool, or {"command", "error"} when it could
    not run or its output could not be read."""
    record: Dict[str, Any] = {"command": command}
    answer = run_tool(command, env, raw_path)
    if "error" in answer:
        record["error"] = answer["error"]
        return record
    record["rc"] = answer["rc"]
    try:
        record.update(parse(answer["text"]))
    except ValueError as exc:
        record["error"] = str(exc)
    return record


def tool_env(extra: Dict[str, str], library_path: Optional[str] = None) -> Dict[str, str]:
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", **extra)
    if library_path:
        env["LD_LIBRARY_PATH"] = ":".join(part for part in (library_path, env.get("LD_LIBRARY_PATH", "")) if part)
    return env


def run_nccl_tests(entry: Dict[str, str], gpus: int, out: str) -> Dict[str, Any]:
    results: Dict[str, Any] = {}
    for name, extra in (("default", {}), ("p2p_disabled", {"NCCL_P2P_DISABLE": "1"})):
        command = [os.path.join(entry["dir"], "all_reduce_perf"), *ALL_REDUCE_ARGS, "-g", str(gpus)]
        results[name] = dict(run_and_parse(command, tool_env(extra, entry.get("library_path")),
                                           os.path.join(out, "all_reduce_perf-%s.txt" % name), parse_all_reduce_perf),
                             env=extra)
    return results


def run_nvbandwidth(entry: Dict[str, str], out: str) -> Dict[str, Any]:
    results: Dict[str, Any] = {}
    for size_mib in BUFFER_SIZES_MIB:
        command = [os.path.join(entry["dir"], "nvbandwidth"), "--json", "-b", str(size_mib), "-t", *NVBANDWIDTH_TESTS]
        results[str(size_mib)] = run_and_parse(command, tool_env({}), os.path.join(out, "nvbandwidth-%dMiB.json" % size_mib),
                                               lambda text: {"testcases": parse_nvbandwidth_json(text)})
    return results


def _probe_data(host_dir: str, probe: str) -> Optional[Dict[str, Any]]:
    try:
        with open(os.path.join(host_dir, probe + ".json"), encoding="utf-8") as handle:
            return json.load(handle).get("data")
    except (OSError, ValueError):
        return None


def all_reduce_tables(collective: Optional[Dict[str, Any]], nccl_tests: Dict[str, Any]) -> List[str]:
    lines = []
    curves = {curve.get("name"): curve for curve in (collective or {}).get("curves", [])}
    for name, tool in nccl_tests.items():
        curve = curves.get(name)
        lines.append("\n### all-reduce, %s: probe busbw beside nccl-tests (GB/s)\n" % name)
        if curve is None or "rows" not in tool:
            lines.append("not compared: %s" % ("the probe has no %s curve" % name if curve is None
                                               else tool.get("error", "nccl-tests gave no rows")))
            continue
        probe_ranks = len(collective.get("devices", []))
        if tool.get("ranks") != probe_ranks:
            lines.append("not compared: nccl-tests ran %s rank(s), the probe %d" % (tool.get("ranks"), probe_ranks))
            continue
        rows = all_reduce_beside(curve.get("sweep", []), tool)
        lines.append(format_table(rows, ["size_bytes", "probe_busbw_gbps", "nccl_tests_in_place_busbw_gbps",
                                         "nccl_tests_out_of_place_busbw_gbps", "difference_pct"]))
    return lines


def p2p_rows(p2p: Optional[Dict[str, Any]], nvbandwidth: Dict[str, Any]) -> List[Dict[str, Any]]:
    """One row per ordered pair and size: the probe's one-way and per-direction two-way GB/s beside nvbandwidth's."""
    rows = []
    for pair in (p2p or {}).get("pairs", []):
        src, dst = pair.get("src"), pair.get("dst")
        one_way = {point["size_bytes"]: point for point in (pair.get("unidirectional") or {}).get("sweep", [])}
        two_way = {point["size_bytes"]: point for point in (pair.get("bidirectional") or {}).get("sweep", [])}
        for size_mib in BUFFER_SIZES_MIB:
            cases = nvbandwidth.get(str(size_mib), {}).get("testcases", {})
            size = size_mib * 2 ** 20
            write = matrix_cell(cases.get("device_to_device_memcpy_write_ce"), src, dst)
            read = matrix_cell(cases.get("device_to_device_memcpy_read_ce"), dst, src)
            bidir = matrix_cell(cases.get("device_to_device_bidirectional_memcpy_write_ce"), src, dst)
            probe_one = (one_way.get(size) or {}).get("gbps")
            probe_two = (two_way.get(size) or {}).get("src_to_dst_gbps")
            rows.append({"pair": "%s->%s" % (src, dst), "size_mib": size_mib, "probe_one_way_gbps": probe_one,
                         "nvbandwidth_write_ce_gbps": write, "nvbandwidth_read_ce_gbps": read,
                         "one_way_difference_pct": percent_difference(probe_one, write),
                         "probe_two_way_this_direction_gbps": probe_two, "nvbandwidth_bidir_write_ce_gbps": bidir,
                         "two_way_difference_pct": percent_difference(probe_two, bidir)})
    return rows


def hostbw_rows(hostbw: Optional[Dict[str, Any]], nvbandwidth: Dict[str, Any]) -> List[Dict[str, Any]]:
    """One row per GPU and direction: the hostbw probe's pinned copies beside nvbandwidth's copy-engine tests at the
    probe's buffer size (nvbandwidth's matrix: one row, the CPU; a column per GPU)."""
    rows = []
    tests = {"h2d": "host_to_device_memcpy_ce", "d2h": "device_to_host_memcpy_ce"}
    for device in (hostbw or {}).get("devices", []):
        for result in device.get("results", []):
            if result.get("host_memory") != "pinned" or result.get("direction") not in tests:
                continue
            size_mib = result.get("bytes_per_copy", 0) // 2 ** 20
            cases = nvbandwidth.get(str(size_mib), {}).get("testcases", {})
            theirs = matrix_cell(cases.get(tests[result["direction"]]), 0, device.get("index", 0))
            rows.append({"gpu": device.get("index"), "direction": result["direction"], "size_mib": size_mib,
                         "probe_pinned_gbps": result.get("median_gbps"), "nvbandwidth_ce_gbps": theirs,
                         "difference_pct": percent_difference(result.get("median_gbps"), theirs)})
    return rows


def _table_or(rows: List[Dict[str, Any]], why_none: str) -> str:
    return format_table(rows, list(rows[0])) if rows else "not compared: %s" % why_none


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="/tmp/peer_tools", help="what tools/build_peer_tools.sh built")
    parser.add_argument("--host-dir", help="a host's results folder of a run with the collective and p2p probes")
    parser.add_argument("--gpus", type=int, help="GPUs for all_reduce_perf -g (default: as nvidia-smi lists)")
    parser.add_argument("--out", required=True, help="folder for the raw outputs, peer_tools.json and peer_tools.md")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    gpus = args.gpus
    if gpus is None:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False).stdout
        gpus = sum(1 for line in listed.splitlines() if line.startswith("GPU "))
    tools = built_tools(args.build)
    summary: Dict[str, Any] = {"gpus": gpus, "tools": tools}
    for tool, runner in (("nccl-tests", lambda entry: run_nccl_tests(entry, gpus, args.out)),
                         ("nvbandwidth", lambda entry: run_nvbandwidth(entry, args.out))):
        entry = tools.get(tool, {"not_built": "not in built.txt"})
        summary[tool] = runner(entry) if "dir" in entry else {"not_run": entry.get("not_built")}
    with open(os.path.join(args.out, "peer_tools.json"), "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=2, sort_keys=True)
    lines = ["# The probes beside nccl-tests and nvbandwidth (%d GPU(s))" % gpus]
    for tool in ("nccl-tests", "nvbandwidth"):
        if "not_run" in summary[tool]:
            lines.append("\n%s not run: %s" % (tool, summary[tool]["not_run"]))
    if args.host_dir:
        if "not_run" not in summary["nccl-tests"]:
            lines += all_reduce_tables(_probe_data(args.host_dir, "collective"), summary["nccl-tests"])
        if "not_run" not in summary["nvbandwidth"]:
            lines.append("\n### P2P: probe beside nvbandwidth (GB/s; two-way: this direction while the other runs)\n")
            lines.append(_table_or(p2p_rows(_probe_data(args.host_dir, "p2p"), summary["nvbandwidth"]),
                                   "the run has no p2p pairs"))
            lines.append("\n### Host <-> GPU: the hostbw probe's pinned copies beside nvbandwidth (GB/s)\n")
            lines.append(_table_or(hostbw_rows(_probe_data(args.host_dir, "hostbw"), summary["nvbandwidth"]),
                                   "the run has no hostbw results"))
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "peer_tools.md"), "w", encoding="utf-8") as handle:
        handle.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Dossier section of the toolchain probe: every contract with what was seen, what was expected and the remedy."""
from __future__ import annotations

from typing import Any, Dict

from ...probe_kit.kit import Cell, cell, table, dig, ProbeSection

CONTRACT_FLAG = {"pass": "", "fail": "bad", "unavailable": "na"}


def toolchain_view(data: Any) -> Dict[str, Any]:
    rows = []
    contracts = dig(data, "contracts")
    for entry in contracts if isinstance(contracts, list) else []:
        if not isinstance(entry, dict):
            continue
        status = str(entry.get("status", "?"))
        evidence = entry.get("evidence") if isinstance(entry.get("evidence"), list) else []
        rows.append([Cell(str(entry.get("title") or entry.get("id", "?")), str(entry.get("id", ""))),
                     Cell(status, "", CONTRACT_FLAG.get(status, "bad")), Cell(str(entry.get("observed", "—"))),
                     Cell(str(entry.get("expected", "—"))), Cell(str(entry.get("remedy") or "—")),
                     Cell("; ".join(str(item) for item in evidence) or "—")])
    software = dig(data, "software")
    software_rows = [[Cell(str(key)), cell(str(key), value)] for key, value in sorted(software.items())] \
        if isinstance(software, dict) else []
    return {"note": "Each contract is decided from what a fresh Python on the host loads; a contract that could not be "
                    "decided says why (never a pass).", "plots": [], "tables": [
                        table("Contracts", ["contract", "status", "observed", "expected", "remedy", "evidence"], rows,
                              "no contract was decided"),
                        table("Software the contracts read", ["what", "value"], software_rows, "not recorded")]}


SECTION = ProbeSection(toolchain_view)

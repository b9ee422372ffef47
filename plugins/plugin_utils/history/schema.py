# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run index's one schema (docs/history.md, "Tables"): its tables and columns, the indexes the history's queries
read by, and the version kept in the database. An index of another version is emptied and rebuilt, never read."""
from __future__ import annotations

from typing import Dict, List, Tuple

SCHEMA_VERSION = "2"

# {table: ((column, SQL type), ...)}, in insert order. Every table but meta and runs is keyed by (run_id, host, ...),
# and a run's rows are written and dropped together (index.py).
TABLES: Dict[str, Tuple[Tuple[str, str], ...]] = {
    "meta": (("key", "TEXT PRIMARY KEY"), ("value", "TEXT NOT NULL")),
    # One row per judged run. source: the identity of the stored files its rows were read from (rows.source_of).
    "runs": (("run_id", "TEXT PRIMARY KEY"), ("started", "TEXT"), ("previous_run_id", "TEXT"), ("collection_versions", "TEXT"),
             ("gate_enforced", "INTEGER"), ("gate_passed", "INTEGER"), ("host_count", "INTEGER"), ("source", "TEXT NOT NULL")),
    # One row per host of a run: its verdict, root cause and what was done about it (the outcome's action part).
    "hosts": (("run_id", "TEXT NOT NULL"), ("host", "TEXT NOT NULL"), ("started", "TEXT"), ("verdict", "TEXT NOT NULL"),
              ("root_cause", "TEXT"), ("root_check", "TEXT"), ("root_action", "TEXT"), ("sku", "TEXT"), ("groups", "TEXT"),
              ("refused_by_gate", "INTEGER"), ("reasons", "TEXT"), ("dossier", "TEXT"), ("action_scheduler", "TEXT"),
              ("action_node", "TEXT"), ("action_planned", "TEXT"), ("action_done", "INTEGER"), ("action_why", "TEXT"),
              # the verdict before its trend checks (what history.flapping counts) and the headline metric ids it was
              # its group's lowest on (history.slowest_of_group), both from fleet.json (JSON list for lowest)
              ("measured_verdict", "TEXT"), ("lowest", "TEXT")),
    # Each root cause of a host's verdict (a check that does not pass and follows from none), worst first, with its action.
    "causes": (("run_id", "TEXT NOT NULL"), ("host", "TEXT NOT NULL"), ("position", "INTEGER NOT NULL"),
               ("check_id", "TEXT NOT NULL"), ("status", "TEXT NOT NULL"), ("probe", "TEXT"), ("gpu_uuid", "TEXT"),
               ("gpu_index", "INTEGER"), ("device", "TEXT"), ("action", "TEXT"), ("reason", "TEXT")),
    # Each GPU a host's checks or metrics name, with the worst status of its checks (its verdict as a GPU).
    "gpus": (("run_id", "TEXT NOT NULL"), ("host", "TEXT NOT NULL"), ("gpu_uuid", "TEXT NOT NULL"), ("gpu_index", "INTEGER"),
             ("status", "TEXT")),
    # Every metric value the judge compared: of a GPU (gpu_uuid), a named device (device) or the host (neither).
    # value is NULL where it was not finite.
    "metrics": (("run_id", "TEXT NOT NULL"), ("host", "TEXT NOT NULL"), ("metric_id", "TEXT NOT NULL"), ("probe", "TEXT"),
                ("gpu_uuid", "TEXT"), ("gpu_index", "INTEGER"), ("device", "TEXT"), ("value", "REAL"), ("unit", "TEXT")),
    # Every setting the judge compared; value as JSON text (a scalar, or an unavailable field).
    "settings": (("run_id", "TEXT NOT NULL"), ("host", "TEXT NOT NULL"), ("setting_id", "TEXT NOT NULL"),
                 ("place", "TEXT NOT NULL"), ("value", "TEXT"), ("unit", "TEXT")),
    # The run's fleet statistics per comparison group and metric (fleet.json fleet_statistics): the fleet median the
    # dossier's history plots draw.
    "statistics": (("run_id", "TEXT NOT NULL"), ("sku_group", "TEXT NOT NULL"), ("metric_id", "TEXT NOT NULL"), ("median", "REAL"),
                   ("mad", "REAL"), ("count", "INTEGER"), ("hosts", "INTEGER"), ("unit", "TEXT")),
    # What acting in Slurm did in the run (<run>/slurm-actions.json): each drain listed and each resume made.
    "slurm_actions": (("run_id", "TEXT NOT NULL"), ("position", "INTEGER NOT NULL"), ("action", "TEXT NOT NULL"),
                      ("host", "TEXT"), ("node", "TEXT"), ("reason", "TEXT"), ("at", "TEXT"), ("confirmed", "INTEGER"),
                      ("intake", "INTEGER")),
}
# Tables that hold a run's rows (all but meta), written in this order and dropped with the run.
RUN_TABLES = tuple(name for name in TABLES if name != "meta")
PRIMARY_KEYS = {
    "hosts": ("run_id", "host"),
    "causes": ("run_id", "host", "position"),
    "gpus": ("run_id", "host", "gpu_uuid"),
    "slurm_actions": ("run_id", "position"),
    "statistics": ("run_id", "sku_group", "metric_id"),
}
# What the history's queries read by (issue 48): a host's metric over runs, every run a GPU was in, verdicts by date,
# a host's runs, and each run's rows (dropped and rewritten together).
INDEXES: Tuple[Tuple[str, str, Tuple[str, ...]], ...] = (
    ("runs_by_started", "runs", ("started",)),
    ("hosts_by_host", "hosts", ("host", "started")),
    ("hosts_by_verdict", "hosts", ("verdict", "started")),
    ("causes_by_host", "causes", ("host", "check_id")),
    ("gpus_by_uuid", "gpus", ("gpu_uuid", "run_id")),
    ("gpus_by_host", "gpus", ("host", "run_id")),
    ("metrics_by_host", "metrics", ("host", "metric_id", "run_id")),
    ("metrics_by_gpu", "metrics", ("gpu_uuid", "metric_id", "run_id")),
    ("metrics_by_run", "metrics", ("run_id",)),
    ("settings_by_host", "settings", ("host", "setting_id", "run_id")),
    ("settings_by_run", "settings", ("run_id",)),
    ("slurm_actions_by_host", "slurm_actions", ("host", "action")),
    ("statistics_by_metric", "statistics", ("metric_id", "sku_group")),
)


def create_statements() -> List[str]:
    """The statements that make the schema in an empty database (every table, then every index)."""
    statements = []
    for table, columns in TABLES.items():
        parts = ["%s %s" % column for column in columns]
        if table in PRIMARY_KEYS:
            parts.append("PRIMARY KEY (%s)" % ", ".join(PRIMARY_KEYS[table]))
        statements.append("CREATE TABLE %s (%s)" % (table, ", ".join(parts)))
    statements += ["CREATE INDEX %s ON %s (%s)" % (name, table, ", ".join(columns)) for name, table, columns in INDEXES]
    return statements


def insert_statement(table: str) -> str:
    columns = [name for name, unused_type in TABLES[table]]
    return "INSERT INTO %s (%s) VALUES (%s)" % (table, ", ".join(columns), ", ".join("?" * len(columns)))

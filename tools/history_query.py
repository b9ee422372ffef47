"""Ask the run index of a results directory how hosts and GPUs fared over many runs, at a shell (docs/history.md,
"Queries"); the same queries as playbooks/history_query.yml (gpufleet.validation.history_query), printed to stdout.

    python tools/history_query.py metric --host gpu-r01-n007 --metric membw.bandwidth_gbps [--gpu-uuid GPU-...]
    python tools/history_query.py failures [--more-than 2] [--verdicts fail error]
    python tools/history_query.py gpu --gpu-uuid GPU-...
    any of them: [--results-dir results] [--since 2026-12-01] [--until 2026-12-31] [--format csv|json]

Exits 0 with the rows (CSV: a header line first), 2 with the reason on stderr when the query cannot be answered (a bad
argument, no index: make it with playbooks/history.yml).
"""
from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from typing import List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "collections"))

# pylint: disable=wrong-import-position
from ansible_collections.gpufleet.validation.plugins.module_utils.results_dir import DEFAULT_RESULTS_DIR  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.queries import QUERIES, QueryError, run_query  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.query_output import FORMATS, query_text  # noqa: E402

# Each query argument's option (QUERIES names the arguments each query takes).
OPTIONS = {"host": dict(), "metric": dict(), "gpu_uuid": dict(), "since": dict(), "until": dict(),
           "verdicts": dict(nargs="+", help="the verdicts counted (default fail)"),
           "more_than": dict(type=int, help="only hosts with more than this many such runs (default 0)")}


def parser() -> argparse.ArgumentParser:
    made = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = made.add_subparsers(dest="query", required=True)
    for name, query in QUERIES.items():
        command = commands.add_parser(name)
        command.add_argument("--results-dir", default=DEFAULT_RESULTS_DIR)
        command.add_argument("--format", choices=FORMATS, default="csv")
        for argument in query.required + query.optional:
            command.add_argument("--" + argument.replace("_", "-"), dest=argument, required=argument in query.required,
                                 **OPTIONS[argument])
    return made


def main(argv: Optional[List[str]] = None) -> int:
    args = vars(parser().parse_args(argv))
    name, results_dir, output_format = args.pop("query"), args.pop("results_dir"), args.pop("format")
    try:
        rows = run_query(results_dir, name, args)
    except (OSError, QueryError, sqlite3.Error) as exc:
        print("history_query: %s" % exc, file=sys.stderr)
        return 2
    sys.stdout.write(query_text(output_format, QUERIES[name].columns, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

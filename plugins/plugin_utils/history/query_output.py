# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A history query's rows as CSV or JSON text, columns in the order its definition gives (queries.QUERIES). Pure."""
from __future__ import annotations

import csv
import io
import json
from typing import Any, List, Sequence

from .queries import QueryError, Row

FORMATS = ("csv", "json")
# How a list value (failures' root_checks) is written in one CSV cell.
CSV_LIST_SEPARATOR = " "


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return CSV_LIST_SEPARATOR.join(str(item) for item in value)
    return value


def csv_text(columns: Sequence[str], rows: List[Row]) -> str:
    """A header of the columns, then one line per row (an empty cell for NULL, a list's items joined by a space)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row[column]) for column in columns])
    return buffer.getvalue()


def json_text(columns: Sequence[str], rows: List[Row]) -> str:
    """A JSON list of objects, one per row, keys in the columns' order."""
    return json.dumps([{column: row[column] for column in columns} for row in rows], indent=1, ensure_ascii=False) + "\n"


def query_text(output_format: str, columns: Sequence[str], rows: List[Row]) -> str:
    if output_format not in FORMATS:
        raise QueryError("unknown output format %r: one of %s" % (output_format, ", ".join(FORMATS)))
    return csv_text(columns, rows) if output_format == "csv" else json_text(columns, rows)

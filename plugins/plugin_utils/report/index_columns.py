"""What the fleet index's hosts table shows in a row that must fit a 1280 px window: at most INDEX_METRIC_COLUMNS
metric columns (the rest folded into one cell), and a host's reasons with all but the first folded.

A run of every probe compares about fifteen metrics; one column each made the table 23 columns wide for one host, and
a long reason scrolled inside its cell.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence, Tuple

# Metric columns the hosts table shows; the others are one click away in the row's "other metrics" cell.
INDEX_METRIC_COLUMNS = 5
# A reason longer than this shows its first words, the rest folded (cut at a space).
REASON_SHOWN_CHARACTERS = 160


def shown_metric_positions(metrics: Sequence[Mapping[str, str]], flags_by_row: Sequence[Sequence[str]],
                           limit: int = INDEX_METRIC_COLUMNS) -> List[int]:
    """The positions (in metrics) of the metric columns to show, in their order in metrics.

    A metric on which more hosts are flagged (an outlier, drift, a failure) comes first; between equals, one metric of
    each probe before a second of any (metric ids are "<probe>.<name>"), then the catalogue's order."""
    if len(metrics) <= limit:
        return list(range(len(metrics)))
    flagged = [sum(1 for flags in flags_by_row if flags[position] in ("bad", "warn")) for position in range(len(metrics))]
    seen_of_probe: Dict[str, int] = {}
    rank_in_probe = []
    for column in metrics:
        probe = column["metric"].split(".", 1)[0]
        rank_in_probe.append(seen_of_probe.get(probe, 0))
        seen_of_probe[probe] = rank_in_probe[-1] + 1
    order = sorted(range(len(metrics)), key=lambda position: (-flagged[position], rank_in_probe[position], position))
    return sorted(order[:limit])


def fold_reasons(reasons: Sequence[str], shown_characters: int = REASON_SHOWN_CHARACTERS) -> Dict[str, Any]:
    """A host's reasons as its index cell shows them: the first one's head (all of it when short), the rest of it and
    the other reasons folded behind "+N more".

    {"head": first reason or its first words, "tail": the rest of the first reason ("" when shown whole),
     "more": the other reasons}; head "" when there is no reason."""
    if not reasons:
        return {"head": "", "tail": "", "more": []}
    first = str(reasons[0])
    head, tail = first, ""
    if len(first) > shown_characters:
        cut = first.rfind(" ", 0, shown_characters)
        cut = cut if cut > shown_characters // 2 else shown_characters
        head, tail = first[:cut], first[cut:]
    return {"head": head, "tail": tail, "more": [str(reason) for reason in reasons[1:]]}


def split_metrics(cells: Sequence[Any], metrics: Sequence[Mapping[str, str]],
                  shown: Sequence[int]) -> Tuple[List[Any], List[Tuple[Mapping[str, str], Any]]]:
    """A row's metric cells: (those of the shown columns, (column, cell) of the others)."""
    shown_set = set(shown)
    return [cells[position] for position in shown], \
        [(metrics[position], cells[position]) for position in range(len(metrics)) if position not in shown_set]

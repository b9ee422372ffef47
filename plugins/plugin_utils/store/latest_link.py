"""Point <results>/latest at a run, replacing an older link in one step; anything else there is left alone."""
from __future__ import annotations

import os

from .paths import check_run_id
from .run_order import run_order_key


class LatestLeftAlone(OSError):
    """<results>/latest is not a link (a directory or file of the user's): it is kept as it is, and not pointed."""


class LatestKeptNewer(OSError):
    """<results>/latest points at a run that sorts after the one given: it is kept, never moved backwards."""


def point_latest_at(results_dir: str, run_id: str, link_name: str = "latest") -> str:
    """The link, now pointing at run_id. LatestLeftAlone when something that is not a link has the name: it may hold
    the user's data, so it is neither replaced nor written into. LatestKeptNewer when the link points at a run that
    sorts after run_id (an older run re-judged, or a run whose id a controller clock running behind made): the link
    never moves backwards."""
    results_dir = os.path.abspath(results_dir)
    link = os.path.join(results_dir, link_name)
    if os.path.lexists(link) and not os.path.islink(link):
        kind = "a directory" if os.path.isdir(link) else "a file"
        raise LatestLeftAlone("%s is %s, not a link: it was left as it is (nothing in it was changed) and does not point "
                              "at run %s; move it away so that %s can point at the newest run"
                              % (link, kind, run_id, link_name))
    newer = _newer_target(results_dir, link, run_id)
    if newer:
        raise LatestKeptNewer("%s still points at run %s: run %s sorts before it (an earlier run re-judged, or a run "
                              "whose id says an earlier time than the runs already stored: is the controller's clock "
                              "behind?), and the link never moves backwards" % (link, newer, run_id))
    temporary = os.path.join(results_dir, ".%s.%d.tmp" % (link_name, os.getpid()))
    if os.path.lexists(temporary):
        os.unlink(temporary)
    os.symlink(check_run_id(run_id), temporary)
    os.replace(temporary, link)
    return link


def _newer_target(results_dir: str, link: str, run_id: str) -> str:
    """The run the link points at when it sorts after run_id, else ""."""
    if not os.path.islink(link):
        return ""
    target = os.readlink(link)
    try:
        check_run_id(target)
        if target == run_id or not os.path.isdir(os.path.join(results_dir, target)):
            return ""
        return target if run_order_key(results_dir, target) > run_order_key(results_dir, run_id) else ""
    except (OSError, ValueError):
        return ""


def latest_run_id(results_dir: str, link_name: str = "latest") -> str:
    """The run id <results>/latest points at (point_latest_at wrote it: a bare run id); ValueError says why there is none."""
    link = os.path.join(os.path.abspath(results_dir), link_name)
    if not os.path.islink(link):
        raise ValueError("%s is %s, so there is no newest run to name; give the run id" % (
            link, "not a link" if os.path.lexists(link) else "missing"))
    target = os.readlink(link)
    try:
        return check_run_id(target)
    except ValueError as exc:
        raise ValueError("%s points at %r, not at a run of %s (%s); give the run id" % (link, target, results_dir, exc)) from exc

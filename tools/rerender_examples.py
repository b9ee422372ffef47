"""Re-render every stored example run (docs/examples) with a collection's report, into a folder of copies.

    python tools/rerender_examples.py OUT [--collection DIR]

Each folder of runs under docs/examples is copied under OUT (the earlier runs beside each run, so drift is compared as
it was), and playbooks/report.yml of the collection at DIR (default: this one) re-judges and re-renders each run in
the copy. Render the same examples with two revisions (a `git worktree` of the older one) and `diff -r` the two OUT
folders: a refactoring that changes no behaviour leaves no difference.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "docs", "examples")
RUN_ID = re.compile(r"^\d{8}T\d{6}Z-\d{6}$")


def run_folders(top: str):
    """Folders holding at least one run directory, relative to top."""
    for folder, subfolders, _files in os.walk(top):
        runs = sorted(name for name in subfolders if RUN_ID.match(name))
        if runs:
            yield os.path.relpath(folder, top), runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--collection", default=ROOT, help="the collection whose report renders (default: this one)")
    args = parser.parse_args()
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    failures = 0
    for relative, runs in run_folders(EXAMPLES):
        target = os.path.join(args.out, relative)
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        if not os.path.isdir(target):
            shutil.copytree(os.path.join(EXAMPLES, relative), target, symlinks=True)
        for run_id in runs:
            argv = [playbook, "playbooks/report.yml", "-i", "localhost,", "-e", "gpufleet_run_id=%s" % run_id,
                    "-e", "gpufleet_results_dir=%s" % os.path.abspath(target)]
            completed = subprocess.run(argv, cwd=args.collection, capture_output=True, text=True, timeout=600, check=False)
            print("%s/%s: rc %d" % (relative, run_id, completed.returncode))
            if completed.returncode not in (0, 2):
                failures += 1
                print(completed.stdout[-2000:] + completed.stderr[-2000:])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# Issue 44's proof on one GPU machine, as a new user runs it (no override, no extra package): acceptance with every
# promised headline judged, a leftover job (tools/rig_busy_gpu.sh), the seed's post_upgrade story
# (tools/rig_post_upgrade_stale.sh); INDEPENDENT scripts beside acceptance (tools/rig_run.sh). Everything comes back as
# $OUT/issue44.tgz and $OUT/summary.txt (a call returns few files). GPU-marked tests: a second call, `pytest -m gpu`.
set -uo pipefail
final=${OUT:-/tmp/out}
export OUT=/tmp/issue44
mkdir -p "$OUT"
bash tools/rig_run.sh acceptance
bash tools/rig_busy_gpu.sh
bash tools/rig_post_upgrade_stale.sh
nvidia-smi -q >"$OUT/smi.txt" 2>&1
mkdir -p "$final"
cp "$OUT/summary.txt" "$final/summary.txt"
tar -C /tmp -czf "$final/issue44.tgz" issue44

#!/usr/bin/env bash
# Issue 35 on the 1-GPU rig in one call: a fresh .venv from the wheels in .whl/, then one playbook run
# (tools/rig_whole_node.json) of the per-GPU probes with two workers on the one GPU (their together phases), memtest
# with two workers and a flipped bit, gemm (quick) and load with an injected bit flip each. The run is meant to fail
# on the three injected faults and on nothing else. Logs and results land in $OUT.
#   run: bash tools/rig_whole_node.sh   (carry: [".whl"])
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 LC_ALL=C.UTF-8 LANG=C.UTF-8 PIP_NO_INDEX=1 PIP_FIND_LINKS=$PWD/.whl
nvidia-smi -L >"$out/env.txt" 2>&1
started=$(date +%s)
rm -rf .venv
if ! bash scripts/setup >"$out/setup.log" 2>&1; then
  echo "scripts/setup failed" | tee -a "$out/summary.txt"
fi
echo "setup in $(( $(date +%s) - started )) s" | tee -a "$out/summary.txt"
started=$(date +%s)
timeout "${RUN_LIMIT_S:-240}" .venv/bin/ansible-playbook validate.yml -e @tools/rig_whole_node.json \
  -e gpufleet_results_dir="$out/results" >"$out/whole_node.log" 2>&1
echo "whole_node run rc=$? in $(( $(date +%s) - started )) s" | tee -a "$out/summary.txt"
tail -n 25 "$out/whole_node.log"
rm -f "$out/results/latest"
# one archive: a call brings back only so many files from $OUT, and the run writes more than that
tar -czf "$out/results.tgz" -C "$out" results && rm -rf "$out/results"

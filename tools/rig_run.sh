#!/usr/bin/env bash
# One call on the GPU rig (the device machine): install the controller wheels brought in .whl/, run the playbook with
# connection local, then the given independent scripts and GPU-marked tests, and pack the results into $OUT.
#   bash tools/rig_run.sh PROFILE[,PROFILE...] [pytest test paths ...]   (profiles run in order, into one results folder)
# Environment: GPUS (expected GPU count for the rig's health.gpu_count override, default: as nvidia-smi lists),
# INDEPENDENT (space-separated benchmark scripts run after the playbook, default none), EXTRA_VARS (one more -e, JSON).
set -uo pipefail
profile=${1:?profile}
shift
out=${OUT:-/tmp/out}
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
export LC_ALL=C.UTF-8 LANG=C.UTF-8 NCCL_NVLS_ENABLE=0 ANSIBLE_CONFIG=$PWD/ansible.cfg
gpus=${GPUS:-$(nvidia-smi -L | wc -l)}
overrides="{\"gpufleet_rule_overrides\": {\"health.gpu_count\": {\"params\": {\"expected\": $gpus}}}}"
nvidia-smi topo -m >"$out/topo.txt" 2>&1
for one in ${profile//,/ }; do
  started=$(date +%s)
  ansible-playbook validate.yml -e gpufleet_profile="$one" -e gpufleet_results_dir=/tmp/results -e "$overrides" \
    -e "${EXTRA_VARS:-{\}}" >"$out/playbook-$one.log" 2>&1
  echo "playbook $one rc=$? in $(( $(date +%s) - started )) s" | tee -a "$out/summary.txt"
  grep -E "WARNING|still running|msg|fleet index" "$out/playbook-$one.log" | tail -n 25
done
for script in ${INDEPENDENT:-}; do
  name=$(basename "$script" .py)
  python3 "$script" --out "$out/$name.json" >"$out/$name.txt" 2>&1
  echo "$script rc=$?" | tee -a "$out/summary.txt"
  cat "$out/$name.txt"
done
if [ $# -gt 0 ]; then
  python3 -m pytest -q -p no:cacheprovider -m gpu "$@" >"$out/pytest_gpu.txt" 2>&1
  echo "pytest -m gpu rc=$?" | tee -a "$out/summary.txt"
  tail -n 15 "$out/pytest_gpu.txt"
fi
rm -f /tmp/results/latest
tar -C /tmp -czf "$out/results.tgz" results

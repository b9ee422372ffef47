#!/usr/bin/env bash
# One call on the GPU rig (the device machine): install the controller wheels brought in .whl/, run the playbook with
# connection local, then the given independent scripts and GPU-marked tests, and pack the results into $OUT.
#   bash tools/rig_run.sh PROFILE[,PROFILE...] [pytest test paths ...]   (profiles run in order, into one results folder)
# No rule override: the rig is judged as a new user's machine is, by its own evidence (issue 31).
# Environment: INDEPENDENT (space-separated benchmark scripts run after the playbook, default none), EXTRA_VARS (one more -e, JSON),
# PEER_TOOLS=1 (build nccl-tests and nvbandwidth from .peer_src/, carried with the call, and run them beside the last
# run's probes: tools/build_peer_tools.sh, benchmarks/peer_tools.py; results in $OUT/peer_tools).
set -uo pipefail
profile=${1:?profile}
shift
out=${OUT:-/tmp/out}
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
export LC_ALL=C.UTF-8 LANG=C.UTF-8 NCCL_NVLS_ENABLE=0 ANSIBLE_CONFIG=$PWD/ansible.cfg
nvidia-smi topo -m >"$out/topo.txt" 2>&1
for one in ${profile//,/ }; do
  started=$(date +%s)
  ansible-playbook validate.yml -e gpufleet_profile="$one" -e gpufleet_results_dir=/tmp/results \
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
if [ "${PEER_TOOLS:-0}" = 1 ]; then
  started=$(date +%s)
  bash tools/build_peer_tools.sh /tmp/peer_tools
  mkdir -p "$out/peer_tools"
  cp /tmp/peer_tools/*.txt /tmp/peer_tools/*.log "$out/peer_tools/" 2>/dev/null
  last_run=$(find /tmp/results -mindepth 1 -maxdepth 1 -type d -name '2*' | sort | tail -n 1)
  python3 benchmarks/peer_tools.py --build /tmp/peer_tools --host-dir "$last_run/localhost" --out "$out/peer_tools" \
    >"$out/peer_tools/stdout.txt" 2>&1
  echo "peer tools rc=$? in $(( $(date +%s) - started )) s" | tee -a "$out/summary.txt"
  tail -n 40 "$out/peer_tools/stdout.txt"
  tar -C "$out" -czf "$out/peer_tools.tgz" peer_tools && rm -rf "$out/peer_tools"  # few files come back from a call
fi
if [ $# -gt 0 ]; then
  python3 -m pytest -q -p no:cacheprovider -m gpu "$@" >"$out/pytest_gpu.txt" 2>&1
  echo "pytest -m gpu rc=$?" | tee -a "$out/summary.txt"
  tail -n 15 "$out/pytest_gpu.txt"
fi
rm -f /tmp/results/latest
tar -C /tmp -czf "$out/results.tgz" results

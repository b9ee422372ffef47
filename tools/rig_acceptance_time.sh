#!/usr/bin/env bash
# The 1-GPU acceptance's wall time after issue 35's cuts, and its numbers beside independent ones, in one call:
#   1. a fresh .venv from the wheels in .whl/;
#   2. with WHOLE_NODE=1: tools/rig_whole_node.json's run (two workers on the one GPU, three injected faults);
#   3. `ansible-playbook validate.yml -e gpufleet_profile=acceptance` as a new user runs it (no override, no extra
#      package), timed from outside; then benchmarks/independent_measurements.py (the 3 % comparison of
#      docs/performance.md); then torch, CUDA init and inductor import times without bytecode (-B) and from the probes'
#      bytecode cache (plugins/module_utils/bytecode_cache.py), which the runs before filled. ACCEPTANCE=0 skips 3;
#   4. with HOLDS="2 5": benchmarks/burst_idle_hold.py, gemm's burst after each idle hold;
#   5. with GPU_TESTS="paths": pytest -m gpu on them.
#   run: [WHOLE_NODE=1] [ACCEPTANCE=0] [HOLDS="2 5"] [GPU_TESTS="tests/gpu/..."] bash tools/rig_acceptance_time.sh
#   (carry: [".whl"]). Everything lands in $OUT: summary.txt, and the rest in results.tgz (a call brings back only so
#   many files).
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 LC_ALL=C.UTF-8 LANG=C.UTF-8 PIP_NO_INDEX=1 PIP_FIND_LINKS=$PWD/.whl
nvidia-smi -L >"$out/env.txt" 2>&1
step() {  # step NAME SECONDS COMMAND...: run bounded, log to $out/NAME.txt, say its rc and time
  local name=$1 limit=$2 started
  shift 2
  started=$(date +%s%N)
  timeout "$limit" "$@" >"$out/$name.txt" 2>&1
  echo "$name rc=$? in $(( ($(date +%s%N) - started) / 1000000 )) ms" | tee -a "$out/summary.txt"
}
imports='import time; t = time.monotonic(); import torch; a = time.monotonic() - t; torch.zeros(1, device="cuda"); b = time.monotonic() - t; import torch._inductor.compile_fx; c = time.monotonic() - t; print("torch %.2f s, + CUDA init %.2f s, + inductor %.2f s" % (a, b, c))'
rm -rf .venv results
step setup 120 bash scripts/setup
if [ "${WHOLE_NODE:-}" = 1 ]; then
  step whole_node "${WHOLE_NODE_LIMIT_S:-240}" .venv/bin/ansible-playbook validate.yml -e @tools/rig_whole_node.json \
    -e gpufleet_results_dir="$out/whole_node_results"
  tail -n 8 "$out/whole_node.txt"
  rm -f "$out/whole_node_results/latest"
fi
if [ "${ACCEPTANCE:-1}" = 1 ]; then
  step acceptance "${ACCEPTANCE_LIMIT_S:-330}" .venv/bin/ansible-playbook validate.yml -e gpufleet_profile=acceptance
  tail -n 5 "$out/acceptance.txt"
  step independent 120 python3 benchmarks/independent_measurements.py --out "$out/independent.json"
  step import_without_bytecode 60 python3 -B -c "$imports"
  step import_from_the_cache 60 env PYTHONPYCACHEPREFIX="${XDG_CACHE_HOME:-$HOME/.cache}/gpufleet/bytecode" python3 -c "$imports"
  du -sh "${XDG_CACHE_HOME:-$HOME/.cache}/gpufleet/bytecode" >"$out/cache_size.txt" 2>&1
  cat "$out/independent.txt" "$out/import_without_bytecode.txt" "$out/import_from_the_cache.txt" "$out/cache_size.txt"
  rm -f results/latest
  mv results "$out/acceptance_results"
fi
if [ -n "${HOLDS:-}" ]; then
  # shellcheck disable=SC2086  # HOLDS is a list of numbers
  step burst_idle_hold 150 python3 benchmarks/burst_idle_hold.py --holds $HOLDS --out "$out/burst_idle_hold.json"
  cat "$out/burst_idle_hold.txt"
fi
if [ -n "${GPU_TESTS:-}" ]; then
  wheels=()
  for wheel in .whl/*.whl; do
    case "$(basename "$wheel")" in pip-*|setuptools-*) ;; *) wheels+=("$wheel") ;; esac
  done
  step pip 120 python3 -m pip install -q --no-deps --no-compile --no-cache-dir --target /tmp/site "${wheels[@]}"
  # shellcheck disable=SC2086  # GPU_TESTS is a list of paths
  PYTHONPATH=/tmp/site step pytest_gpu "${GPU_TESTS_LIMIT_S:-300}" python3 -m pytest -q -p no:cacheprovider -m gpu $GPU_TESTS
  tail -n 15 "$out/pytest_gpu.txt"
fi
cd "$out" && tar -czf results.tgz --exclude=results.tgz --exclude=summary.txt ./* \
  && find . -mindepth 1 -maxdepth 1 ! -name results.tgz ! -name summary.txt -exec rm -rf {} +

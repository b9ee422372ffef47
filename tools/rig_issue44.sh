#!/usr/bin/env bash
# Issue 44's proof on one GPU machine, as a new user runs it (no override, no extra package): acceptance with every
# promised headline judged and the INDEPENDENT scripts beside it (tools/rig_run.sh), a leftover job
# (tools/rig_busy_gpu.sh), the seed's post_upgrade story (tools/rig_post_upgrade_stale.sh) and the GPU-marked tests.
# One call runs for at most 10 minutes, so STEPS picks the steps of this call (in order; default all four):
#   STEPS="post_upgrade busy" bash tools/rig_issue44.sh
# INDEPENDENT="" leaves out the independent scripts beside acceptance (default: both, about 85 s).
# Everything comes back as $OUT/issue44.tgz and $OUT/summary.txt (a call returns few files), saved after every step so a
# call cut short (its limit, the session's device time) still brings back the steps it finished.
set -uo pipefail
final=${OUT:-/tmp/out}
export OUT=/tmp/issue44
mkdir -p "$OUT" "$final"
save() { cp "$OUT/summary.txt" "$final/summary.txt" 2>/dev/null; tar -C /tmp -czf "$final/issue44.tgz.part" issue44 && mv "$final/issue44.tgz.part" "$final/issue44.tgz"; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
for step in ${STEPS:-acceptance busy post_upgrade pytest}; do
  started=$(date +%s)
  case $step in
    acceptance) INDEPENDENT="${INDEPENDENT-benchmarks/independent_measurements.py benchmarks/independent_gemm_states.py}" \
      bash tools/rig_run.sh acceptance ;;
    busy) bash tools/rig_busy_gpu.sh ;;
    post_upgrade) bash tools/rig_post_upgrade_stale.sh ;;
    pytest) PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH NCCL_NVLS_ENABLE=0 \
      python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu >"$OUT/pytest_gpu.txt" 2>&1
      echo "pytest -m gpu tests/gpu rc=$?" | tee -a "$OUT/summary.txt"
      tail -n 15 "$OUT/pytest_gpu.txt" ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
  esac
  echo "step $step took $(( $(date +%s) - started )) s" | tee -a "$OUT/summary.txt"
  save
done
nvidia-smi -q >"$OUT/smi.txt" 2>&1
save

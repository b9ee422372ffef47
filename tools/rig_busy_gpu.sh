#!/usr/bin/env bash
# The leftover-job run of issue 44 on the GPU rig, after tools/rig_run.sh installed the controller wheels:
# another process holds most of GPU 0's memory and runs a bf16 matmul loop for the whole run, while the playbook runs
# PROFILE (default: a profile of health, membw and gemm). A healthy GPU that is merely busy must come out
# "not validated: busy" with the other process as the root cause, never a fail or a drain.
#   bash tools/rig_busy_gpu.sh [PROFILE]
# Results go to $OUT/busy.tgz; the job is stopped after the run; nothing on the machine is changed.
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH LC_ALL=C.UTF-8 LANG=C.UTF-8 NCCL_NVLS_ENABLE=0 ANSIBLE_CONFIG=$PWD/ansible.cfg
profile=${1:-busy}
python3 - >"$out/busy-job.log" 2>&1 <<'PY' &
import time, torch
free, total = torch.cuda.mem_get_info(0)
hold = torch.empty(int(free * 0.75) // 2, dtype=torch.bfloat16, device="cuda:0")
a = torch.randn(8192, 8192, device="cuda:0", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda:0", dtype=torch.bfloat16)
print("holding %.1f GiB of %.1f GiB" % (hold.numel() * 2 / 2**30, total / 2**30), flush=True)
end = time.monotonic() + 900
while time.monotonic() < end:
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()
PY
job=$!
# the job must not outlive the script, a timeout's SIGTERM included: a later run would find the GPU busy
trap 'kill $job 2>/dev/null; wait $job 2>/dev/null' EXIT
trap 'exit 143' INT TERM
sleep 15
started=$(date +%s)
ansible-playbook validate.yml -e gpufleet_profile="$profile" -e '{"gpufleet_profiles": {"busy": ["health", "membw", "gemm"]}}' \
  -e gpufleet_results_dir=/tmp/busy >"$out/playbook-busy.log" 2>&1
echo "busy GPU ($profile) rc=$? in $(( $(date +%s) - started )) s" | tee -a "$out/summary.txt"
kill $job 2>/dev/null; wait $job 2>/dev/null
trap - EXIT
grep -E "msg|fail -|WARNING\]: localhost" "$out/playbook-busy.log" | tail -n 6
rm -f /tmp/busy/latest
tar -C /tmp -czf "$out/busy.tgz" busy

#!/usr/bin/env bash
# The fault runs of the verdict issue on the GPU rig, after tools/rig_run.sh installed the controller wheels:
#   1. the GPUs hidden from CUDA (CUDA_VISIBLE_DEVICES= for the playbook), acceptance profile: must fail on the mismatch
#   2. a stale /dev/nvidia-uvm (re-made with major 504, the incident's old number; put back after): the health
#      profile as root and as the non-root user nobody: both must fail health.device_majors naming the node
# Results go to $OUT/faults.tgz; nothing else on the machine is changed (the node is restored, clocks untouched).
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH LC_ALL=C.UTF-8 LANG=C.UTF-8 NCCL_NVLS_ENABLE=0 ANSIBLE_CONFIG=$PWD/ansible.cfg
python=$(command -v python3)

CUDA_VISIBLE_DEVICES='' ansible-playbook validate.yml -e gpufleet_profile=acceptance -e gpufleet_results_dir=/tmp/faults/hidden \
  >"$out/playbook-hidden.log" 2>&1
echo "hidden GPU (CUDA_VISIBLE_DEVICES=) acceptance rc=$?" | tee -a "$out/summary.txt"

node=/dev/nvidia-uvm
read -r major_hex minor_hex mode < <(stat -c '%t %T %a' "$node")
plant() { rm -f "$node" && mknod -m "$mode" "$node" c 504 "$((16#$minor_hex))"; }
restore() { rm -f "$node" && mknod -m "$mode" "$node" c "$((16#$major_hex))" "$((16#$minor_hex))"; }
trap restore EXIT
plant
ansible-playbook validate.yml -e gpufleet_profile=health -e gpufleet_results_dir=/tmp/faults/stale-root \
  >"$out/playbook-stale-root.log" 2>&1
echo "stale $node as root: rc=$? (node after the run: $(stat -c '%t:%T' "$node"))" | tee -a "$out/summary.txt"
plant
mkdir -p /tmp/faults/nobody && chown nobody /tmp/faults/nobody
setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/tmp/faults/nobody PYTHONPATH=/tmp/site PATH="$PATH" \
  LC_ALL=C.UTF-8 ANSIBLE_CONFIG="$PWD/ansible.cfg" ANSIBLE_LOCAL_TEMP=/tmp/faults/nobody/.ansible/tmp \
  ANSIBLE_REMOTE_TMP=/tmp/faults/nobody/.ansible/tmp \
  ansible-playbook validate.yml -e gpufleet_profile=health -e gpufleet_results_dir=/tmp/faults/nobody/results \
  -e gpufleet_python="$python" >"$out/playbook-stale-nobody.log" 2>&1
echo "stale $node as nobody: rc=$? (node after the run: $(stat -c '%t:%T' "$node"))" | tee -a "$out/summary.txt"
restore
trap - EXIT
echo "restored $node: $(stat -c '%t:%T' "$node")" | tee -a "$out/summary.txt"
for log in hidden stale-root stale-nobody; do grep -E "msg|fail -|WARNING\]: localhost" "$out/playbook-$log.log" | tail -n 4; done
rm -f /tmp/faults/*/latest /tmp/faults/nobody/results/latest
tar -C /tmp --exclude=.ansible -czf "$out/faults.tgz" faults

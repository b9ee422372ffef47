#!/usr/bin/env bash
# The seed's story on the GPU rig, end to end (issue 44), after tools/rig_run.sh installed the controller wheels:
# post_upgrade on the healthy host, then the "upgrade" (a stale /dev/nvidia-uvm, re-made with major 504 over the real
# one, put back after) and post_upgrade again. The first must pass (rc 0), the second must fail on
# health.device_majors and exit 2: an upgrade pipeline that looks at the exit code stops there.
# Results go to $OUT/post_upgrade.tgz; nothing else on the machine is changed (the node is restored).
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH LC_ALL=C.UTF-8 LANG=C.UTF-8 NCCL_NVLS_ENABLE=0 ANSIBLE_CONFIG=$PWD/ansible.cfg
results=/tmp/post_upgrade
# BEFORE=0 skips the run before the upgrade (its exit code is not the point of the story; the stale node's is)
if [ "${BEFORE:-1}" = 1 ]; then
  ansible-playbook validate.yml -e gpufleet_profile=post_upgrade -e gpufleet_results_dir=$results >"$out/playbook-post_upgrade-before.log" 2>&1
  echo "post_upgrade before the upgrade: rc=$?" | tee -a "$out/summary.txt"
fi
# Any CUDA initialisation as root (nvidia-modprobe) re-makes a stale node with the right major: plant it only once no
# process of the first run (or anyone's) is left on the GPU, and say what the node is just before the run.
for _ in $(seq 60); do
  [ -z "$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null)" ] && break
  sleep 1
done
# nothing that opens the driver (nvidia-smi included) runs between the planting and the playbook
echo "compute processes before planting: $(nvidia-smi --query-compute-apps=pid,name --format=csv,noheader 2>&1 | tr '\n' ' ')" | tee -a "$out/summary.txt"
node=/dev/nvidia-uvm
read -r major_hex minor_hex mode < <(stat -c '%t %T %a' "$node")
restore() { rm -f "$node" && mknod -m "$mode" "$node" c "$((16#$major_hex))" "$((16#$minor_hex))"; }
trap restore EXIT
rm -f "$node" && mknod -m "$mode" "$node" c 504 "$((16#$minor_hex))"
echo "planted $node: $(stat -c '%t:%T' "$node") (hex major:minor)" | tee -a "$out/summary.txt"
ansible-playbook validate.yml -e gpufleet_profile=post_upgrade -e gpufleet_results_dir=$results >"$out/playbook-post_upgrade-after.log" 2>&1
echo "post_upgrade after a stale $node (major 504): rc=$? (node after the run: $(stat -c '%t:%T' "$node"))" | tee -a "$out/summary.txt"
restore
trap - EXIT
echo "restored $node: $(stat -c '%t:%T' "$node")" | tee -a "$out/summary.txt"
grep -E "msg|refused|WARNING\]: localhost" "$out/playbook-post_upgrade-after.log" | tail -n 6
rm -f $results/latest
tar -C /tmp -czf "$out/post_upgrade.tgz" post_upgrade

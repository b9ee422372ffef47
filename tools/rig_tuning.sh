#!/usr/bin/env bash
# The tuning probe on the GPU rig (issue 14), in one device call: the probe alone as root and as an unprivileged user,
# then post_upgrade three times through validate.yml with vm.swappiness changed before the second run and put back
# before the third, so that the dossiers show the change and its undoing as drift. Results packed into $OUT.
#   bash tools/rig_tuning.sh
# vm.swappiness is the one setting changed (the issue names it as safe there); it is restored on every exit path.
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
export LC_ALL=C.UTF-8 LANG=C.UTF-8 NCCL_NVLS_ENABLE=0 ANSIBLE_CONFIG=$PWD/ansible.cfg
original=$(cat /proc/sys/vm/swappiness)
restore() { echo "$original" >/proc/sys/vm/swappiness; }
trap restore EXIT
echo "vm.swappiness at start: $original" | tee "$out/summary.txt"
(cd probes && python3 tuning.py >"$out/tuning-root.json" 2>"$out/tuning-root.err"; echo "probe as root rc=$?" | tee -a "$out/summary.txt")
if id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
  cp -r probes /tmp/probes-nobody && chmod -R a+rX /tmp/probes-nobody
  (cd /tmp/probes-nobody && setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --clear-groups python3 tuning.py \
    >"$out/tuning-nobody.json" 2>"$out/tuning-nobody.err"; echo "probe as nobody rc=$?" | tee -a "$out/summary.txt")
else
  echo "no nobody user or setpriv: the unprivileged run was not made" | tee -a "$out/summary.txt"
fi
for step in before changed restored; do
  case $step in
    changed) echo $(( original == 10 ? 30 : 10 )) >/proc/sys/vm/swappiness ;;
    restored) restore ;;
  esac
  echo "$step: vm.swappiness $(cat /proc/sys/vm/swappiness)" | tee -a "$out/summary.txt"
  started=$(date +%s)
  ansible-playbook validate.yml -e gpufleet_profile=post_upgrade -e gpufleet_results_dir=/tmp/results \
    -e '{"gpufleet_become_probes": ["tuning"]}' >"$out/playbook-$step.log" 2>&1
  echo "playbook post_upgrade ($step) rc=$? in $(( $(date +%s) - started )) s" | tee -a "$out/summary.txt"
  grep -E "fleet index|localhost: " "$out/playbook-$step.log" | tail -n 3
done
rm -f /tmp/results/latest
tar -C /tmp -czf "$out/results.tgz" results

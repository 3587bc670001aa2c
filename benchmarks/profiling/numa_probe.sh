#!/usr/bin/env bash
# Does the host's NUMA placement explain graph_ms's spread between processes? Prints the GPU's
# topology (nvidia-smi topo -m, lscpu, the GPU's local CPUs from sysfs), then runs
# graph_update_scale.py pinned to the GPU's local CPUs and, where there are any, to the others,
# for the working tree ("new") and a base build in .ab-base, two rounds, then once unpinned.
# Usage (repository root, GPU machine, sx-mathoverflow in .device-data):
#   bash benchmarks/profiling/numa_probe.sh
# (On a machine with one NUMA node only the local runs happen.)
set -u
nvidia-smi topo -m 2>&1 | head -8
lscpu | grep -iE "numa|^CPU\(s\)|model name|socket"
bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader | head -1)
sys="/sys/bus/pci/devices/$(echo ${bus:4} | tr A-F a-f)"
echo "bus $bus numa_node $(cat $sys/numa_node 2>/dev/null) local_cpulist $(cat $sys/local_cpulist 2>/dev/null)"
echo "affinity now: $(taskset -pc $$)"
local=$(cat $sys/local_cpulist 2>/dev/null)
all=$(python3 -c "import os; print(','.join(map(str,sorted(os.sched_getaffinity(0)))))")
remote=$(python3 - "$local" "$all" <<'PY'
import sys
def parse(s):
    out=set()
    for p in s.split(','):
        if not p: continue
        if '-' in p: a,b=p.split('-'); out|=set(range(int(a),int(b)+1))
        else: out.add(int(p))
    return out
r=sorted(parse(sys.argv[2])-parse(sys.argv[1]))
print(','.join(map(str,r)))
PY
)
echo "local=$local remote=$remote"
export SXMO=$PWD/.device-data/sx-mathoverflow.txt.gz SIZES=5,50,506,1000 BATCHES=60 GRAPHS=both
S=$PWD/benchmarks/profiling/graph_update_scale.py
run() { name=$1; dir=$2; cpus=$3; echo "== $name cpus=${cpus:-any}"; if [ -n "$cpus" ]; then (cd $dir && PYTHONPATH=. taskset -c $cpus python3 $S 2>&1 | grep -E "^(sx|R-MAT)"); else (cd $dir && PYTHONPATH=. python3 $S 2>&1 | grep -E "^(sx|R-MAT)"); fi; }
for r in 1 2; do
  run new . "$local"
  [ -n "$remote" ] && run new . "$remote"
  run base .ab-base "$local"
  [ -n "$remote" ] && run base .ab-base "$remote"
done
run new . ""

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_iopddl.sh DTOPT: `dtopt solve` on the IOPDDL contest's example (its
# optimum, 445), on public instance G (816 nodes, a few rounds: a plan
# within the limit) and on A (34932 nodes, 4 rounds on the two threads,
# belief propagation's and TRW-S's: within 0.95 of the best submitted
# cost, 6548641531; belief propagation on both threads reaches 0.908),
# each plan checked by tools/iopddl_eval.py, not by dtopt. Rounds, not
# seconds, bound the search: no wall-clock assertion.
# Skips (77) where the instances are not found ($IOPDDL_DIR, or
# ../shared/iopddl or ../../shared/iopddl from the source root).
set -euo pipefail
dtopt=$(realpath "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${IOPDDL_DIR:-}
for d in "$root/../shared/iopddl" "$root/../../shared/iopddl"; do
  [ -n "$dir" ] || { [ -d "$d" ] && dir=$d; } || true
done
[ -n "$dir" ] || { echo "no IOPDDL instances: skipped"; exit 77; }
eval_plan() { python3 "$root/tools/iopddl_eval.py" "$@"; }

out=$("$dtopt" solve -q --stats "$dir/example.json" 60)
echo "$out"
echo "$out" | grep -qx '# cost 445'
echo "$out" | grep -qx '# lower bound 445'
echo "$out" | eval_plan "$dir/example.json" | tee /dev/stderr | grep -q '^cost 445 '

"$dtopt" solve -q -j1 --rounds 3 "$dir/asplos-2025-iopddl-G.json.gz" 600 > plan_G.txt
eval_plan "$dir/asplos-2025-iopddl-G.json.gz" plan_G.txt
rm -f plan_G.txt

"$dtopt" solve -q -j2 --rounds 4 "$dir/asplos-2025-iopddl-A.json.gz" 600 > plan_A.txt
cost_A=$(eval_plan "$dir/asplos-2025-iopddl-A.json.gz" plan_A.txt | tee /dev/stderr | sed -n 's/^cost \([0-9]*\) .*/\1/p')
rm -f plan_A.txt
python3 -c "import sys; sys.exit(not 6548641531 / $cost_A >= 0.95)"

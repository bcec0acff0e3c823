#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_solver.sh DTOPT [SECONDS|contest] [INSTANCE...]: run `dtopt solve` on
# the IOPDDL public instances (A G M S by default) and print a table: nodes,
# the plan's cost and the best cost any contest team submitted, score =
# best / cost (0 when over the limit), CPU and wall time. Each plan is
# checked by tools/iopddl_eval.py, not by dtopt. SECONDS is the budget of
# each instance; `contest` (default) gives each its contest timeout (A 60 s,
# G 120 s, M 180 s, S 240 s). The instances are looked for in $IOPDDL_DIR,
# then ../shared/iopddl and ../../shared/iopddl from the source root. With
# BENCH_CPU_TIME=1 the budget is each search thread's CPU time (`dtopt solve
# --cpu-time`), for a machine busy with other work.
set -euo pipefail
dtopt=$(realpath "$1")
budget=${2:-contest}
shift $(( $# < 2 ? $# : 2 ))
instances=("${@:-A G M S}")
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${IOPDDL_DIR:-}
for d in "$root/../shared/iopddl" "$root/../../shared/iopddl"; do
  [ -n "$dir" ] || { [ -d "$d" ] && dir=$d; } || true
done
[ -n "$dir" ] || { echo "bench_solver.sh: no IOPDDL instances (set IOPDDL_DIR)" >&2; exit 77; }
declare -A best=([A]=6548641531 [G]=217039 [M]=49928460991 [S]=1534613444)
declare -A contest=([A]=60 [G]=120 [M]=180 [S]=240)
cpu=
[ "${BENCH_CPU_TIME:-0}" = 1 ] && cpu=--cpu-time
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '| instance | nodes | timeout s | cost | best | score | feasible | CPU s | wall s |\n'
printf '| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n'
for i in ${instances[*]}; do
  f="$dir/asplos-2025-iopddl-$i.json.gz"
  t=$budget
  [ "$t" = contest ] && t=${contest[$i]}
  /usr/bin/time -f '%U %S %e' -o "$tmp/time" nice "$dtopt" solve -q $cpu "$f" "$t" \
    > "$tmp/out" 2> "$tmp/err" || sed "s/^/$i: /" "$tmp/err" >&2
  read -r user sys wall < <(tail -n 1 "$tmp/time")
  nodes=$(python3 -c 'import gzip,json,sys; print(len(json.load(gzip.open(sys.argv[1]))["problem"]["nodes"]["costs"]))' "$f")
  if python3 "$root/tools/iopddl_eval.py" "$f" "$tmp/out" > "$tmp/eval"; then
    feasible=yes
  else
    feasible=no
  fi
  cost=$(awk '$1 == "cost" { print $2 }' "$tmp/eval")
  score=$(python3 -c 'import sys; c, b, ok = sys.argv[1:]; print("%.3f" % (int(b) / int(c) if ok == "yes" and c else 0))' "${cost:-0}" "${best[$i]}" "$feasible")
  cpu_s=$(python3 -c 'import sys; print("%.1f" % (float(sys.argv[1]) + float(sys.argv[2])))' "$user" "$sys")
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$i" "$nodes" "$t" \
    "${cost:-none}" "${best[$i]}" "$score" "$feasible" "$cpu_s" "$wall"
done

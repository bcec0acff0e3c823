#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_reduce_problem.sh DTOPT: tools/reduce_problem.py cuts the bad
# corpus's infeasible problem (5 nodes, 5 edges: its limit is below the
# smallest footprint) down while `dtopt solve` still refuses it so; the
# result must still be refused and hold fewer nodes and edges.
set -euo pipefail
dtopt=$(realpath "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$root/tools/reduce_problem.py" "$root/tests/bad/solver/limit_infeasible.json" \
  "$work/small.json" -- sh -c "'$dtopt' solve {} 1 2>&1 | grep -q 'no plan meets usage_limit'"
out=$("$dtopt" solve "$work/small.json" 1 2>&1 || true)
echo "$out"
echo "$out" | grep -q 'no plan meets usage_limit'
python3 - "$work/small.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["problem"]
nodes, edges = len(p["nodes"]["costs"]), len(p["edges"]["nodes"])
print("reduced to %d nodes, %d edges: %s" % (nodes, edges, p["nodes"]))
assert nodes < 5 and edges < 5, "nothing was reduced"
PY

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run_cli.sh: `dtopt run --backend nccl` end to end on one GPU: a plain run
# with timing and a summary, --compare of a graph with itself, a global-view
# example, a failing node's message and exit code. Exit 77 (skip) without a
# visible GPU. Usage: run_cli.sh DTOPT TESTS_GPU_DIR
set -uo pipefail
dtopt=$1
dir=$2
root=$dir/../..
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$dtopt" run --backend nccl "$dir/collectives.xml" >"$tmp/out" 2>"$tmp/err"
rc=$?
if grep -q "cudaGetDeviceCount failed" "$tmp/err"; then
  echo "no GPU visible: skipped"
  exit 77
fi
[ $rc -eq 0 ] || fail "plain run: exit $rc: $(cat "$tmp/err")"
grep -q "43 outputs on rank 0 of 1" "$tmp/out" || fail "plain run output: $(head -3 "$tmp/out")"

"$dtopt" run --backend nccl --iters 3 --warmup 1 --summary \
  "$root/tools/examples/transformer_fwdbwd.xml" >"$tmp/out" 2>&1 ||
  fail "global-view example: $(cat "$tmp/out")"
grep -q "^time: " "$tmp/out" || fail "no timing line"
grep -q "aten.mm.default" "$tmp/out" || fail "no summary table"

"$dtopt" run --backend nccl --compare "$dir/collectives.xml" "$dir/collectives.xml" \
  >"$tmp/out" 2>&1 || fail "--compare: $(cat "$tmp/out")"
grep -q "compare: ok" "$tmp/out" || fail "--compare verdict: $(tail -1 "$tmp/out")"

# An embedding index out of range: a deferred kernel error, reported at
# its node with exit code 3.
cat >"$tmp/bad.xml" <<'XML'
<dtopt-graph version="1" name="bad" view="local">
  <node name="w" op="placeholder"><tensor dtype="float32" shape="4 2"/></node>
  <node name="i" op="placeholder"><tensor dtype="int64" shape="3"/>
    <meta key="dtopt.input_max" value="9"/></node>
  <node name="e" op="call_function" target="aten.embedding.default">
    <arg node="w"/> <arg node="i"/>
  </node>
  <node name="output" op="output"><arg nodes="e"/></node>
</dtopt-graph>
XML
"$dtopt" run --backend nccl "$tmp/bad.xml" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 3 ] || fail "out-of-range index: exit $rc, expected 3"
grep -q "bad.xml:5: error: node 'e' (aten.embedding.default): an index is out of bounds for size 4" \
  "$tmp/err" || fail "out-of-range message: $(cat "$tmp/err")"
echo "ok"

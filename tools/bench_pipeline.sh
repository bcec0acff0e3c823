#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_pipeline.sh DTOPT [NODES]: the pipeline benchmark: generate a
# NODES-node (default 1,000,000) graph with `dtopt gen`, then time `dtopt
# opt` with the local-view default pipeline (or $PIPELINE) split into load /
# per pass / write, with nodes per second and peak RSS (GNU time -v). Use a
# release build.
set -euo pipefail
dtopt=$1
nodes=${2:-1000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$dtopt" gen --nodes "$nodes" -o "$tmp/g.xml"
count=$(grep -c '<node ' "$tmp/g.xml")
bytes=$(stat -c %s "$tmp/g.xml")
/usr/bin/time -v "$dtopt" opt -p "${PIPELINE:-verify,shape-infer,fuse-collectives,cancel-views,dce}" --no-verify-each \
  --time-passes "$tmp/g.xml" -o "$tmp/out.xml" 2> "$tmp/log"
grep -E '^ +[0-9.]+ +[0-9.]+% |load ' "$tmp/log"
rss_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tmp/log")
total=$(awk '/load/ {print $(NF-1)}' "$tmp/log")
awk -v n="$count" -v b="$bytes" -v rss="$rss_kb" -v t="$total" 'BEGIN {
  printf "nodes %d, file %.1f MB, total %.3f s, %.0f nodes/s, peak RSS %.1f MB = %.0f bytes/node\n",
    n, b / 1e6, t, n / t, rss / 1024, rss * 1024 / n }'

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_pipeline.sh [-r RUNS] [-b BASE] DTOPT [NODES...]: the load-path
# benchmark. For each size (default 10000 100000 1000000 nodes) it generates
# a graph with `dtopt gen`, then runs on that same file, RUNS times each
# (default 3), interleaved:
#   xmllint --stream --noout FILE        (libxml2's streaming parse: the floor)
#   DTOPT opt -p $PIPELINE FILE -o OUT   (default verify,shape-infer,dce, with
#                                         the build's default flags; OUT a file)
#   DTOPT opt ... -o /dev/null           (the same work without the kernel's
#                                         cost of storing a 200 MB file, which
#                                         xmllint --noout does not pay either)
#   BASE opt ... -o OUT                  (with -b: another dtopt, e.g. main's)
# and prints per size the median CPU time (user+sys) of each, the ratios to
# xmllint, and peak RSS per node (GNU time's maximum resident set size /
# nodes), then dtopt's --time-passes split of one run.
# The machine should be quiet; the script runs everything under nice.
set -euo pipefail
runs=3 base=
while getopts r:b: o; do
	case $o in
	r) runs=$OPTARG ;;
	b) base=$OPTARG ;;
	*) echo "usage: $0 [-r RUNS] [-b BASE_DTOPT] DTOPT [NODES...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
dtopt=${1:?usage: $0 [-r RUNS] [-b BASE_DTOPT] DTOPT [NODES...]}
shift
sizes=("${@:-10000 100000 1000000}")
read -r -a sizes <<< "${sizes[*]}"
pipeline=${PIPELINE:-verify,shape-infer,dce}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# measure NAME CMD...: run CMD $reps times in a row (GNU time counts in
# 10 ms steps, so small graphs repeat up to about a million nodes' worth)
# and append "cpu_seconds_per_run max_rss_kb" to $tmp/NAME.times.
measure() {
	local name=$1
	shift
	nice /usr/bin/time -f '%U %S %M' -o "$tmp/t" \
		bash -c 'for _ in $(seq "$0"); do "$@" > /dev/null || exit; done' \
		"$reps" "$@" 2> "$tmp/err" ||
		{ cat "$tmp/err" >&2; echo "$0: failed: $*" >&2; exit 1; }
	awk -v r="$reps" '{ printf "%.4f %d\n", ($1 + $2) / r, $3 }' "$tmp/t" \
		>> "$tmp/$name.times"
}

# median NAME COLUMN: the median of a column of $tmp/NAME.times.
median() {
	sort -g -k"$2" "$tmp/$1.times" | awk -v c="$2" '{ v[NR] = $c }
		END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

printf '%9s %8s %9s %9s %6s %9s %6s %10s' nodes 'file MB' 'xmllint s' \
	'dtopt s' ratio 'to null' ratio 'dtopt B/n'
[ -n "$base" ] && printf ' %9s %6s %10s' 'base s' ratio 'base B/n'
printf '\n'
for n in "${sizes[@]}"; do
	rm -f "$tmp"/*.times
	"$dtopt" gen --nodes "$n" -o "$tmp/g.xml"
	count=$(grep -c '<node ' "$tmp/g.xml")
	mb=$(stat -c %s "$tmp/g.xml" | awk '{ printf "%.1f", $1 / 1e6 }')
	reps=$(( n < 1000000 ? 1000000 / n : 1 ))
	for _ in $(seq "$runs"); do
		measure xmllint xmllint --stream --noout "$tmp/g.xml"
		measure dtopt "$dtopt" opt -p "$pipeline" "$tmp/g.xml" -o "$tmp/out.xml"
		measure null "$dtopt" opt -p "$pipeline" "$tmp/g.xml" -o /dev/null
		[ -n "$base" ] && measure base "$base" opt -p "$pipeline" "$tmp/g.xml" -o "$tmp/out.xml"
	done
	x=$(median xmllint 1)
	d=$(median dtopt 1)
	dr=$(median dtopt 2)
	z=$(median null 1)
	printf '%9d %8s %9.4f %9.4f %6.2f %9.4f %6.2f %10.0f' "$count" "$mb" "$x" \
		"$d" "$(awk -v a="$d" -v b="$x" 'BEGIN { print a / b }')" \
		"$z" "$(awk -v a="$z" -v b="$x" 'BEGIN { print a / b }')" \
		"$(awk -v k="$dr" -v n="$count" 'BEGIN { print k * 1024 / n }')"
	if [ -n "$base" ]; then
		b=$(median base 1)
		br=$(median base 2)
		printf ' %9.4f %6.2f %10.0f' "$b" \
			"$(awk -v a="$b" -v c="$x" 'BEGIN { print a / c }')" \
			"$(awk -v k="$br" -v n="$count" 'BEGIN { print k * 1024 / n }')"
	fi
	printf '\n'
	"$dtopt" opt -p "$pipeline" --time-passes "$tmp/g.xml" -o "$tmp/out.xml" 2> "$tmp/split"
	sed 's/^/    /' "$tmp/split"
done

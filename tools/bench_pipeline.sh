#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_pipeline.sh [-r RUNS] [-b BASE] DTOPT [NODES...]: the load-path
# benchmark. For each size (default 10000 100000 1000000 nodes) it generates
# a graph with `dtopt gen`, then runs on that same file, RUNS times each
# (default 3), interleaved:
#   xmllint --stream --noout FILE        (libxml2's streaming parse: the floor)
#   DTOPT opt -p $PIPELINE FILE -o OUT   (default verify,shape-infer,dce, with
#                                         the build's default flags)
#   BASE opt ...                         (with -b: another dtopt, e.g. main's)
# and prints per size the median CPU time (user+sys) of each, dtopt's (and
# BASE's) ratio to xmllint, and peak RSS per node (GNU time's maximum
# resident set size / nodes), then dtopt's --time-passes split of one run.
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

# measure NAME CMD...: append "cpu_seconds max_rss_kb" of one run to
# $tmp/NAME.times.
measure() {
	local name=$1
	shift
	nice /usr/bin/time -f '%U %S %M' -o "$tmp/t" "$@" > /dev/null 2> "$tmp/err" ||
		{ cat "$tmp/err" >&2; echo "$0: failed: $*" >&2; exit 1; }
	awk '{ printf "%.3f %d\n", $1 + $2, $3 }' "$tmp/t" >> "$tmp/$name.times"
}

# median NAME COLUMN: the median of a column of $tmp/NAME.times.
median() {
	sort -g -k"$2" "$tmp/$1.times" | awk -v c="$2" '{ v[NR] = $c }
		END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

printf '%9s %8s %9s %9s %6s %10s' nodes 'file MB' 'xmllint s' 'dtopt s' ratio 'dtopt B/n'
[ -n "$base" ] && printf ' %9s %6s %10s' 'base s' ratio 'base B/n'
printf '\n'
for n in "${sizes[@]}"; do
	rm -f "$tmp"/*.times
	"$dtopt" gen --nodes "$n" -o "$tmp/g.xml"
	count=$(grep -c '<node ' "$tmp/g.xml")
	mb=$(stat -c %s "$tmp/g.xml" | awk '{ printf "%.1f", $1 / 1e6 }')
	for _ in $(seq "$runs"); do
		measure xmllint xmllint --stream --noout "$tmp/g.xml"
		measure dtopt "$dtopt" opt -p "$pipeline" "$tmp/g.xml" -o "$tmp/out.xml"
		[ -n "$base" ] && measure base "$base" opt -p "$pipeline" "$tmp/g.xml" -o "$tmp/out.xml"
	done
	x=$(median xmllint 1)
	d=$(median dtopt 1)
	dr=$(median dtopt 2)
	printf '%9d %8s %9.3f %9.3f %6.2f %10.0f' "$count" "$mb" "$x" "$d" \
		"$(awk -v a="$d" -v b="$x" 'BEGIN { print a / b }')" \
		"$(awk -v k="$dr" -v n="$count" 'BEGIN { print k * 1024 / n }')"
	if [ -n "$base" ]; then
		b=$(median base 1)
		br=$(median base 2)
		printf ' %9.3f %6.2f %10.0f' "$b" \
			"$(awk -v a="$b" -v c="$x" 'BEGIN { print a / c }')" \
			"$(awk -v k="$br" -v n="$count" 'BEGIN { print k * 1024 / n }')"
	fi
	printf '\n'
	"$dtopt" opt -p "$pipeline" --time-passes "$tmp/g.xml" -o "$tmp/out.xml" 2> "$tmp/split"
	sed 's/^/    /' "$tmp/split"
done

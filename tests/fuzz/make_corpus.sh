#!/bin/sh
# SPDX-License-Identifier: MIT
# make_corpus.sh [OUTDIR]: build the seed corpus and dictionary of the
# fuzz targets under OUTDIR (default build-fuzz/fuzz): OUTDIR/corpus holds
# copies of the example graphs and of the golden and bad-input test files
# (named after their paths), OUTDIR/reader.dict the format's element and
# attribute names, placement tokens and every op table target. Run from the
# repository root, then for example:
#   build-fuzz/tests/fuzz/fuzz_reader -dict=build-fuzz/fuzz/reader.dict \
#     -max_len=65536 -timeout=10 -rss_limit_mb=2048 build-fuzz/fuzz/corpus
set -eu
out=${1:-build-fuzz/fuzz}
mkdir -p "$out/corpus"
for f in tools/examples/*.xml tests/golden/*/*.xml tests/golden/*.xml \
	 tests/bad/*; do
	[ -f "$f" ] || continue
	case "$f" in *.expected|*.run) continue ;; esac
	[ "$(wc -c <"$f")" -le 65536 ] || continue
	cp "$f" "$out/corpus/$(echo "$f" | tr / _)"
done
{
	for w in '<?xml version="1.0" encoding="UTF-8"?>' '<dtopt-graph' \
		 '</dtopt-graph>' '<mesh' '<group' '<node' '</node>' '<arg' \
		 '</arg>' '<kwarg' '</kwarg>' '<item' '<tensor' '<sharding' \
		 '<meta' '/>' 'version="1"' 'view="local"' 'view="global"' \
		 'rank="' 'name="' 'shape="' 'dims="' 'devices="' 'mesh="' \
		 'op="placeholder"' 'op="call_function"' 'op="output"' \
		 'op="get_attr"' 'version="1.1"' '<data' 'base64="' 'file="' \
		 'bytes="' 'crc32="' 'AAAA' '==' '../' \
		 'target="' 'node="' 'nodes="' 'int="' 'ints="' 'float="' \
		 'floats="' 'bool="true"' 'str="' 'dtype="' 'none="true"' \
		 'stride="' 'offset="' 'placements="' 'order="' \
		 'global-shape="' 'key="' 'value="' 'R' 'S(0)' 'S(1)' \
		 '_S(0,2)' 'P(sum)' 'P(avg)' 'P(max)' 'float32' 'bfloat16' \
		 'int64' 'bool' '-1' '0' '9223372036854775807' \
		 '-9223372036854775808' '4611686018427387904' 'nan' 'inf' \
		 '1e308' '&#10;' '&amp;'; do
		printf '"%s"\n' "$(printf '%s' "$w" | sed 's/\\/\\\\/g; s/"/\\"/g')"
	done
	sed -n 's/^DT_OP([A-Z0-9_]*, "\([^"]*\)".*/"\1"/p' ir/ops.def
} >"$out/reader.dict"
# the solver's JSON problems: the contest's example (in seeds/), the bad problems
mkdir -p "$out/solver-corpus"
for f in tests/bad/solver/*.json \
	 tests/bad/solver/*.json.gz tests/fuzz/seeds/fuzz_solver/*; do
	[ -f "$f" ] || continue
	cp "$f" "$out/solver-corpus/$(basename "$f")"
done
for w in '{' '}' '[' ']' ',' ':' '"problem"' '"name"' '"nodes"' '"edges"' \
	 '"intervals"' '"costs"' '"usages"' '"usage_limit"' '[[' ']]' '[]' \
	 '-1' '0' '9223372036854775807' '-9223372036854775808' '1e3' '1.5' \
	 'true' 'null' '\u0041' '\"'; do
	printf '"%s"\n' "$(printf '%s' "$w" | sed 's/\\/\\\\/g; s/"/\\"/g')"
done >"$out/solver.dict"
echo "$(ls "$out/corpus" | wc -l) seeds in $out/corpus, dictionary $out/reader.dict"

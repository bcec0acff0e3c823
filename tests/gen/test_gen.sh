#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_gen.sh: checks `dtopt gen`: every mesh, direction and dtype gives a
# graph that `dtopt verify` and `dtopt opt -p verify,shape-infer` accept,
# with the exact collective counts, chain orders and groups the generator
# promises; --seed is deterministic; --nodes sizes the graph; bad options
# exit 2.
#
# usage: tests/gen/test_gen.sh path/to/dtopt
set -u

dtopt=${1:?usage: test_gen.sh path/to/dtopt}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
checks=0

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

# expect_eq WHAT GOT WANT
expect_eq() {
	checks=$((checks + 1))
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}

# count PATTERN FILE: lines matching (fixed string)
count() { grep -cF -- "$1" "$2"; }

# Per-layer counts for an N-dim mesh (see tools/gen.c): the weights are
# sharded over N,2,N,2,N,2 dims on 3-D meshes and 4,2,4,3,4,2 on 4-D ones.
# ag = 2 chains (forward, backward) per weight; permute = 2 per backward
# link pair; rs = one per shard dim; ar = weights' replicated dims +
# 6 vector gradients over every dim, plus the loss chain (once).
expected() { # ndim layers -> "ag rs ar permute"
	local nd=$1 l=$2
	case $nd in
	2) echo "$((24 * l)) $((12 * l)) $((12 * l + 2)) $((12 * l))" ;;
	3) echo "$((30 * l)) $((15 * l)) $((21 * l + 3)) $((18 * l))" ;;
	4) echo "$((38 * l)) $((19 * l)) $((29 * l + 4)) $((26 * l))" ;;
	esac
}

# The groups the first all_gather link of every chain uses (the input of
# that link is a placeholder shard), one per line.
first_links() {
	grep -A3 -F 'all_gather_into_tensor.default' "$1" |
		awk '/<arg node="primals_/ { first = 1; next }
		     /<arg str=/ { if (first) print; first = 0 }' |
		sed 's/.*str="\([^"]*\)".*/\1/'
}

layers=2
for mesh in 2x2 4x2 2x4 2x2x2 2x2x2x2; do
	nd=$(($(tr -cd x <<<"$mesh" | wc -c) + 1))
	case $nd in
	2) dims=(dp tp) ;;
	3) dims=(dp tp cp) ;;
	4) dims=(dp tp cp ep) ;;
	esac
	for dir in dp-tp tp-dp both; do
		for dtype in float32 bfloat16; do
			name="$mesh/$dir/$dtype"
			f="$tmp/g.xml"
			checks=$((checks + 1))
			if ! "$dtopt" gen --mesh "$mesh" --direction "$dir" \
				--dtype "$dtype" --layers $layers -o "$f"; then
				fail "$name: gen failed"
				continue
			fi
			checks=$((checks + 1))
			"$dtopt" verify "$f" >/dev/null ||
				fail "$name: verify rejects the graph"
			checks=$((checks + 1))
			"$dtopt" opt "$f" -p verify,shape-infer -o "$tmp/o.xml" ||
				fail "$name: shape-infer rejects the graph"
			checks=$((checks + 1))
			cmp -s "$f" "$tmp/o.xml" ||
				fail "$name: shape-infer changed the metadata" \
					"($(diff "$f" "$tmp/o.xml" | head -4 | tr '\n' ' '))"

			read -r ag rs ar perm <<<"$(expected "$nd" $layers)"
			expect_eq "$name all_gather" \
				"$(count 'target="_c10d_functional.all_gather_into_tensor.default"' "$f")" "$ag"
			expect_eq "$name reduce_scatter" \
				"$(count 'target="_c10d_functional.reduce_scatter_tensor.default"' "$f")" "$rs"
			expect_eq "$name all_reduce" \
				"$(count 'target="_c10d_functional.all_reduce.default"' "$f")" "$ar"
			expect_eq "$name wait" \
				"$(count 'target="_c10d_functional.wait_tensor.default"' "$f")" \
				"$((ag + rs + ar))"
			expect_eq "$name permute" \
				"$(count 'target="aten.permute.default"' "$f")" "$perm"
			for t in aten.mm.default aten.t.default aten.add.Tensor \
				aten.gelu.default aten.native_layer_norm.default \
				operator.getitem aten._softmax.default \
				aten.view.default aten._unsafe_view.default \
				aten.sum.dim_IntList; do
				checks=$((checks + 1))
				grep -qF "target=\"$t\"" "$f" ||
					fail "$name: no $t node"
			done
			expect_eq "$name avg all_reduce present" \
				"$(grep -cF '<arg str="avg"/>' "$f" | awk '{print ($1 > 0)}')" 1
			expect_eq "$name sum all_reduce present" \
				"$(grep -cF '<arg str="sum"/>' "$f" | awk '{print ($1 > 0)}')" 1
			expect_eq "$name dtype" \
				"$(grep -c "<tensor dtype=\"$dtype\"" "$f" | awk '{print ($1 > 0)}')" 1

			# groups: every single dim, the full flattening in both
			# orders, and on 2-D meshes both orders of the pair
			local_fwd="${dims[*]}"
			rev=""
			for ((i = nd - 1; i >= 0; i--)); do rev+="${dims[i]} "; done
			for g in "${dims[@]}" "$local_fwd" "${rev% }"; do
				checks=$((checks + 1))
				grep -qF "dims=\"$g\"/>" "$f" ||
					fail "$name: group over '$g' not declared"
			done

			# direction: the first link of every chain gathers the
			# first (dp-tp) or last (tp-dp) mesh dim of the chain; on
			# 2-D meshes that is dp or tp; 'both' uses each for half
			if [ "$nd" = 2 ]; then
				firsts=$(first_links "$f" | sort | uniq -c |
					awk '{printf "%s=%s ", $2, $1}')
				half=$((ag / 4))
				case $dir in
				dp-tp) want="dp=$((ag / 2)) " ;;
				tp-dp) want="tp=$((ag / 2)) " ;;
				both) want="dp=$half tp=$half " ;;
				esac
				expect_eq "$name first gather links" "$firsts" "$want"
				# the shard order matches: dim 0 sharded first over
				# the dim gathered last
				expect_eq "$name shard orders" \
					"$(count 'order="0:tp,dp"' "$f")" \
					"$(case $dir in dp-tp) echo 12 ;; tp-dp) echo 0 ;; both) echo 6 ;; esac)"
			fi
		done
	done
done

# --declare-groups: singles declares no flattened group.
"$dtopt" gen --declare-groups singles -o "$tmp/s.xml"
expect_eq "singles: groups" "$(grep -c '<group ' "$tmp/s.xml")" 2
checks=$((checks + 1))
"$dtopt" verify "$tmp/s.xml" >/dev/null || fail "singles: verify rejects"
"$dtopt" gen --declare-groups none -o "$tmp/n.xml" 2>/dev/null && fail "none: accepted"
# 3 single dims, both orders of the full chain and (with the default seed,
# whose random pairs cover all three) both orders of every pair
"$dtopt" gen --mesh 2x2x2 -o "$tmp/a3.xml"
expect_eq "2x2x2 all: groups" "$(grep -c '<group ' "$tmp/a3.xml")" 11

# Determinism: same options, same bytes; the seed matters.
for args in "--mesh 2x2" "--mesh 2x2x2 --dtype bfloat16" "--mesh 2x2x2x2 --seed 7"; do
	# shellcheck disable=SC2086
	"$dtopt" gen $args --layers 3 -o "$tmp/d1.xml"
	# shellcheck disable=SC2086
	"$dtopt" gen $args --layers 3 -o - >"$tmp/d2.xml"
	checks=$((checks + 1))
	cmp -s "$tmp/d1.xml" "$tmp/d2.xml" || fail "'$args' is not deterministic"
done
distinct=$(for s in 1 2 3 4; do
	"$dtopt" gen --mesh 2x2x2 --seed $s | md5sum
done | sort -u | wc -l)
checks=$((checks + 1))
[ "$distinct" -ge 2 ] || fail "--seed does not change the graph"

# --nodes: about the requested size.
for spec in "20000 --mesh 2x2" "20000 --mesh 2x2x2" "3000 --mesh 4x2"; do
	read -r want rest <<<"$spec"
	# shellcheck disable=SC2086
	"$dtopt" gen --nodes "$want" $rest -o "$tmp/big.xml"
	got=$(count '<node ' "$tmp/big.xml")
	checks=$((checks + 1))
	if [ "$got" -lt $((want * 3 / 4)) ] || [ "$got" -gt $((want * 5 / 4)) ]; then
		fail "--nodes $want $rest gave $got nodes"
	fi
done
checks=$((checks + 1))
"$dtopt" verify "$tmp/big.xml" >/dev/null || fail "--nodes graph rejected"

# --style dp: weights replicated, no all_gather or reduce_scatter, one
# all_reduce chain per weight gradient too. The default pipeline buckets:
# DP gradient all_reduces in two collectives per reduce op (the cost
# model's cut keeps the last layers' gradients, ready last, in a bucket of
# their own: 299 + 22 sum, 55 + 9 avg), one per reduce op with
# --force-fusion (the bytes fit one 25 MiB bucket; two levels of cats past
# 64 members), FSDP gathers and scatters at least 3x fewer (semantics
# §4.7).
"$dtopt" gen --layers 32 --mesh 2x2 --style dp -o "$tmp/dp.xml"
expect_eq "dp: all_gathers" \
	"$(count 'target="_c10d_functional.all_gather_into_tensor.default"' "$tmp/dp.xml")" 0
expect_eq "dp: all_reduces" \
	"$(count 'target="_c10d_functional.all_reduce.default"' "$tmp/dp.xml")" $((24 * 32 + 2))
"$dtopt" opt "$tmp/dp.xml" -o "$tmp/dp.opt.xml" 2>/dev/null
expect_eq "dp bucketed: all_reduces" \
	"$(count 'target="_c10d_functional.all_reduce.default"' "$tmp/dp.opt.xml")" 4
"$dtopt" opt "$tmp/dp.xml" --force-fusion -o "$tmp/dp.one.xml" 2>/dev/null
expect_eq "dp bucketed, --force-fusion: all_reduces" \
	"$(count 'target="_c10d_functional.all_reduce.default"' "$tmp/dp.one.xml")" 2
"$dtopt" gen --layers 32 --mesh 2x2 -o "$tmp/fsdp.xml"
"$dtopt" opt "$tmp/fsdp.xml" -o "$tmp/fsdp.opt.xml" 2>/dev/null
for t in all_gather_into_tensor reduce_scatter_tensor; do
	before=$(count "target=\"_c10d_functional.$t.default\"" "$tmp/fsdp.xml")
	after=$(count "target=\"_c10d_functional.$t.default\"" "$tmp/fsdp.opt.xml")
	checks=$((checks + 1))
	[ $((after * 3)) -le "$before" ] && [ "$after" -gt 0 ] ||
		fail "fsdp bucketed: $t $before -> $after, want at least 3x fewer"
done

# Usage: --help exits 0; bad options exit 2 with "dtopt gen: error:".
checks=$((checks + 1))
"$dtopt" gen --help | grep -q -- '--declare-groups' || fail "--help"
for bad in "--mesh 8" "--mesh 2x0" "--mesh 2xx2" "--dims dp" "--dims dp,dp" \
	"--dtype int32" "--dtype nope" "--direction up" "--hidden 6" \
	"--layers 0" "--layers 2 --nodes 100" "--declare-groups some" \
	"--seed -1" "--style ddp" "--bogus" "--layers" "extra"; do
	# shellcheck disable=SC2086
	"$dtopt" gen $bad -o "$tmp/bad.xml" 2>"$tmp/err" >/dev/null
	expect_eq "'$bad' exit code" "$?" 2
	checks=$((checks + 1))
	grep -q '^dtopt gen: error: ' "$tmp/err" ||
		fail "'$bad': no 'dtopt gen: error:' message ($(cat "$tmp/err"))"
done

if [ "$failures" -ne 0 ]; then
	echo "test_gen: $failures of $checks checks failed" >&2
	exit 1
fi
echo "test_gen: all $checks checks passed"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run_fuzz.sh --smoke|--long [SECONDS] BUILD_FUZZ_TESTS_DIR SOURCE_ROOT
#
# Runs the libFuzzer targets of a -Dfuzz=true build (BUILD/tests/fuzz).
# First every reproducer of a fixed finding (tests/fuzz/regress/TARGET/*)
# is replayed: each must run clean. Then each target fuzzes from its seeds
# (make_corpus.sh: the example, golden and bad-input graphs, a dictionary;
# the parsers and CLI targets start from tests/fuzz/seeds/TARGET):
#   --smoke         20 s per target (the 'fuzz' suite in CI, ~80 s)
#   --long [S]      S seconds per target (default 3600), corpus kept in
#                   BUILD/fuzz/TARGET-corpus, findings in BUILD/fuzz/artifacts;
#                   run it niced in the background, e.g.
#                   nice -n 19 tests/fuzz/run_fuzz.sh --long 3600 \
#                       build-fuzz/tests/fuzz . > fuzz.log 2>&1 &
# A finding stops the run (exit 1) with its reproducer in artifacts/: fix
# it, then add the reproducer to tests/fuzz/regress/TARGET/.
set -euo pipefail
mode=$1; shift
seconds=20
if [ "$mode" = --long ]; then
  seconds=3600
  case "${1:-}" in [0-9]*) seconds=$1; shift ;; esac
fi
bin=$(cd "$1" && pwd); src=$(cd "$2" && pwd)
work=$bin/../../fuzz
mkdir -p "$work/artifacts"
(cd "$src" && sh tests/fuzz/make_corpus.sh "$work" >/dev/null)
# The targets run in a scratch folder: fuzz_cli's `plan -o NAME` writes
# NAME where it runs (every other path here is absolute).
mkdir -p "$work/scratch"
cd "$work/scratch"
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
common=(-timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$work/artifacts/")
for target in fuzz_reader fuzz_parsers fuzz_cli fuzz_solver; do
  regress=$src/tests/fuzz/regress/$target
  if [ -d "$regress" ] && [ -n "$(ls -A "$regress")" ]; then
    "$bin/$target" "${common[@]}" -close_fd_mask=3 "$regress"/* \
      >"$work/$target.regress.log" 2>&1 ||
      { echo "$target: a reproducer in $regress fails again" >&2; exit 1; }
    echo "== $target: $(ls "$regress" | wc -l) reproducers pass"
  fi
  corpus=$work/$target-corpus
  mkdir -p "$corpus"
  case $target in
    fuzz_reader) seeds=("$work/corpus"); extra=(-dict="$work/reader.dict" -max_len=65536) ;;
    fuzz_solver) seeds=("$work/solver-corpus"); extra=(-dict="$work/solver.dict" -max_len=4096) ;;
    *) seeds=("$src/tests/fuzz/seeds/$target"); extra=(-max_len=512) ;;
  esac
  echo "== $target: $seconds s"
  log=$work/$target.log
  rc=0
  "$bin/$target" "${common[@]}" "${extra[@]}" -close_fd_mask=3 \
    -max_total_time="$seconds" "$corpus" "${seeds[@]}" >"$log" 2>&1 || rc=$?
  grep -E "^(Done|stat::number_of_executed_units|SUMMARY)|ERROR|Test unit written" "$log" || true
  echo "   corpus: $(ls "$corpus" | wc -l) inputs"
  if [ $rc -ne 0 ]; then
    echo "$target failed (exit $rc); its log: $log" >&2
    grep -E "^ +#[0-9]+ " "$log" | head -20 >&2
    exit 1
  fi
done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run_tests.sh: set up, build and run every test this machine can run: the
# main build (warnings as errors under CI), an address+undefined sanitizer
# build of the unit, golden and bad-input suites, and, where clang is
# installed, a ~60 s smoke run of the libFuzzer targets.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh --asan
ninja -C build
meson test -C build --print-errorlogs --no-suite gpu
ninja -C build-asan
# The sanitizers run code about ten times slower (the whole-graph search of
# golden shard_prop/global_replan, 2 s plain, takes 20 s): four times
# meson's limits, so a loaded machine does not fail a test for its time.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  meson test -C build-asan --print-errorlogs --timeout-multiplier 4 \
  --suite unit --suite golden --suite bad
if command -v clang >/dev/null; then
  tools/setup.sh --fuzz
  ninja -C build-fuzz tests/fuzz/fuzz_reader tests/fuzz/fuzz_parsers tests/fuzz/fuzz_cli \
    tests/fuzz/fuzz_solver
  meson test -C build-fuzz --no-rebuild --print-errorlogs --suite fuzz
fi

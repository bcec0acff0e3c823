#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run_example.sh: set up, build, and run the main job on the bundled example
# graphs:
#   1. `dtopt opt` (default pipeline) on the format.md example, with remarks,
#      the collective report and pass timing, writing example-out.xml; then
#      `dtopt diff` of input and output;
#   2. the same with --force-fusion (the cost model declines this 128-rank
#      fusion by default; the remark says why);
#   3. a generated transformer fwd+bwd on a 2x2 mesh: optimized, and input
#      and output run side by side under mpirun to prove they agree.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
ninja -C build
dtopt=build/tools/dtopt
example=tools/examples/wq_backward.xml

echo "== 1. dtopt opt $example --remarks --report --time-passes"
$dtopt opt "$example" --remarks --report --time-passes -o example-out.xml
$dtopt diff "$example" example-out.xml || true
echo "== 2. dtopt opt $example --force-fusion --remarks"
$dtopt opt "$example" --force-fusion --remarks -o example-forced.xml
$dtopt dump example-forced.xml

echo "== 3. generated transformer on a 2x2 mesh, before vs after under mpirun"
$dtopt gen --layers 1 --mesh 2x2 --dims dp,tp -o example-gen.xml
$dtopt opt example-gen.xml --report -o example-gen-out.xml
mpirun --allow-run-as-root --oversubscribe -np 4 \
	$dtopt run --backend mpi --compare example-gen.xml example-gen-out.xml
echo "wrote example-out.xml, example-forced.xml, example-gen-out.xml"

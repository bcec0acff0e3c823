#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run_example.sh: set up, build, and run the main job on the bundled example
# graph: `dtopt opt` (default pipeline, timing) writing example-out.xml, then
# the text dump of the result.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
ninja -C build
example=tools/examples/wq_backward.xml
build/tools/dtopt opt "$example" --time-passes -o example-out.xml
build/tools/dtopt dump example-out.xml
echo "wrote example-out.xml"

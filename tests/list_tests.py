#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""list_tests.py DIR: print the golden test files under DIR (every file that
has a .expected neighbour's source: *.xml, *.txt, and files with a .run
sidecar), one per line, sorted. Used by meson at configure time; reconfigure
after adding a test."""
import os
import sys

root = sys.argv[1]
found = []
for dirpath, _, files in os.walk(root):
    for name in files:
        path = os.path.join(dirpath, name)
        if name.endswith(('.expected', '.run')) or name.startswith('.'):
            continue
        if name.endswith(('.xml', '.txt')) or os.path.exists(path + '.run'):
            found.append(os.path.relpath(path, root))
print('\n'.join(sorted(found)))

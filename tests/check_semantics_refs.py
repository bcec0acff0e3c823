#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_semantics_refs.py ROOT: every "semantics §N" (or "§N" after one on
the same line, or "§N–M") that the sources, tests and docs cite names a
numbered section of docs/semantics.md. Prints each dangling cite as
file:line and exits 1 if there is one."""
import os
import re
import subprocess
import sys


def sections(path):
    found = set()
    with open(path, encoding='utf-8') as f:
        for line in f:
            m = re.match(r'#+ (\d+(?:\.\d+)?)\.? ', line)
            if m:
                found.add(m.group(1))
    return found


def main():
    root = sys.argv[1]
    known = sections(os.path.join(root, 'docs', 'semantics.md'))
    files = subprocess.run(['git', 'ls-files'], cwd=root, capture_output=True,
                           text=True).stdout.split()
    if not files:  # not a git checkout: walk the tree
        files = [os.path.relpath(os.path.join(d, f), root)
                 for d, _, fs in os.walk(root) for f in fs]
    bad = 0
    cites = 0
    for rel in files:
        if not re.search(r'\.(c|h|def|cu|py|md|sh)$', rel) or \
                rel == 'docs/semantics.md' or rel.startswith('build'):
            continue
        with open(os.path.join(root, rel), encoding='utf-8',
                  errors='replace') as f:
            for no, line in enumerate(f, 1):
                if 'semantics' not in line.lower() and '§' not in line:
                    continue
                if 'RFC' in line:
                    continue
                for m in re.finditer(r'§ ?(\d+(?:\.\d+)?)(?:[–-](\d+(?:\.\d+)?))?',
                                     line):
                    for n in m.groups():
                        if n is None:
                            continue
                        cites += 1
                        if n not in known:
                            print('%s:%d: semantics §%s: no such section in '
                                  'docs/semantics.md' % (rel, no, n))
                            bad += 1
    print('%d cites, %d dangling' % (cites, bad))
    return 1 if bad or cites == 0 else 0


if __name__ == '__main__':
    sys.exit(main())

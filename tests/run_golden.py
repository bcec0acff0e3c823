#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""run_golden.py: one golden test: run the RUN: lines of a test file and
compare what they print with the file's .expected neighbour.

A test file holds its commands in lines containing "RUN:" (inside an XML
comment for graphs). Files that cannot hold text (empty, binary) keep them in
NAME.run beside them. In a command, `dtopt` is the binary under test and %s
the test file's name; commands run in bash (pipefail) in the file's folder.
The record of each command is

    $ COMMAND
    <stdout>
    --- stderr
    <stderr>          (only when something was printed there)
    [exit N]

UPDATE=1 rewrites the .expected file instead of comparing."""
import argparse
import difflib
import os
import re
import subprocess
import sys


def run_lines(path):
    src = path + '.run' if os.path.exists(path + '.run') else path
    with open(src, 'rb') as f:
        text = f.read().decode('utf-8', 'replace')
    lines = []
    for line in text.splitlines():
        m = re.search(r'RUN:\s*(.*?)\s*(-->)?\s*$', line)
        if m:
            lines.append(m.group(1))
    return lines


def expected_path(path):
    base, ext = os.path.splitext(path)
    return (base if ext in ('.xml', '.txt') else path) + '.expected'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--dtopt', required=True)
    ap.add_argument('test')
    args = ap.parse_args()
    path = os.path.abspath(args.test)
    commands = run_lines(path)
    if not commands:
        print('%s: no RUN: line' % args.test)
        return 1
    dtopt = os.path.abspath(args.dtopt)
    record = []
    for cmd in commands:
        shell = re.sub(r'(^|(?<=[|;&(]))\s*dtopt\b', ' ' + dtopt, cmd)
        shell = shell.replace('%s', os.path.basename(path))
        p = subprocess.run(['bash', '-c', 'set -o pipefail; ' + shell],
                           cwd=os.path.dirname(path), capture_output=True,
                           timeout=600)
        record.append('$ ' + cmd)
        out = p.stdout.decode('utf-8', 'replace')
        err = p.stderr.decode('utf-8', 'replace')
        if out:
            record.append(out.rstrip('\n'))
        if err:
            record.append('--- stderr')
            record.append(err.rstrip('\n'))
        record.append('[exit %d]' % p.returncode)
    got = '\n'.join(record) + '\n'
    exp_path = expected_path(path)
    if os.environ.get('UPDATE') == '1':
        with open(exp_path, 'w') as f:
            f.write(got)
        print('updated', exp_path)
        return 0
    if not os.path.exists(exp_path):
        print('missing %s; run with UPDATE=1 after reviewing:' % exp_path)
        print(got)
        return 1
    with open(exp_path) as f:
        want = f.read()
    if got != want:
        sys.stdout.writelines(difflib.unified_diff(
            want.splitlines(True), got.splitlines(True),
            'expected', 'got'))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())

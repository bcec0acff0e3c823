#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""run_exec_goldens.py: execution proofs for golden graphs. The golden test
shows what a pass wrote; this one shows that what it wrote computes what
the input computed.

usage: run_exec_goldens.py --dtopt DTOPT --mpirun MPIRUN [--workdir DIR]
                           [--max-ranks N] PATH...

PATH is a folder (every *.xml in it, sorted) or a file. A graph takes part
when it, or its NAME.xml.run sidecar, has a line

    EXEC: FLAGS                  e.g.  EXEC: -p fuse-collectives,dce
                                       EXEC: -p fuse-collectives --create-groups

(inside an XML comment the trailing --> is ignored; long options belong in
the sidecar, as XML comments cannot hold --). For each EXEC line:
  1. dtopt opt FLAGS GRAPH -o AFTER, which must succeed, and dtopt verify
     AFTER;
  2. the graph must have changed as the graph says with an optional line
     `EXEC-EXPECT: WHAT`: fewer-collectives (the default: strictly fewer
     collective nodes), fewer-nodes (strictly fewer nodes; for passes such
     as cancel-views), same (as many collectives: a negative case, which
     should rather have no EXEC line);
  3. mpirun -np N dtopt run --backend mpi --compare GRAPH AFTER, N the
     product of the first <mesh>'s shape (1 without a mesh), must exit 0
     (every output bitwise, equal or close on every rank). A global-view
     graph, or one of one rank, is compared alone on the CPU backend.
     Graphs with N > --max-ranks (default 8) print SKIP.

One line per EXEC line: PASS, FAIL (with the failing command's output) or
SKIP. Exit 0 when nothing failed, 77 (skipped) when no graph had an EXEC
line, else 1."""
import argparse
import os
import re
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import execlib  # noqa: E402

EXPECTS = ("fewer-collectives", "fewer-nodes", "same")


def directives(path):
    """The EXEC flag lists and the EXEC-EXPECT value of a graph."""
    execs, expect = [], "fewer-collectives"
    for src in (path, path + ".run"):
        if not os.path.exists(src):
            continue
        with open(src, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = re.search(r"\bEXEC:\s*(.*?)\s*(-->)?\s*$", line)
                if m and m.group(1):
                    execs.append(m.group(1))
                m = re.search(r"\bEXEC-EXPECT:\s*(\S+?)\s*(-->)?\s*$", line)
                if m:
                    expect = m.group(1)
    return execs, expect


def graphs(paths):
    for p in paths:
        if os.path.isdir(p):
            for name in sorted(os.listdir(p)):
                if name.endswith(".xml"):
                    yield os.path.join(p, name)
        else:
            yield p


def check_one(args, path, flags, expect, after):
    """Returns (status, detail)."""
    before = execlib.GraphInfo(path)
    if before.ranks > args.max_ranks:
        return "SKIP", "%d ranks > --max-ranks %d" % (before.ranks, args.max_ranks)
    if expect not in EXPECTS:
        return "FAIL", "EXEC-EXPECT: %s is none of %s" % (expect, ", ".join(EXPECTS))
    opt = execlib.run([args.dtopt, "opt"] + flags.split() + [path, "-o", after])
    if opt.code != 0:
        return "FAIL", "dtopt opt failed\n" + opt.describe()
    ver = execlib.run([args.dtopt, "verify", after])
    if ver.code != 0:
        return "FAIL", "the result does not verify\n" + ver.describe()
    got = execlib.GraphInfo(after)
    b, a = before.ncollectives(), got.ncollectives()
    change = "collectives %d -> %d, nodes %d -> %d" % (b, a, before.nodes, got.nodes)
    if expect == "fewer-collectives" and not a < b:
        return "FAIL", "expected fewer collectives: " + change
    if expect == "fewer-nodes" and not got.nodes < before.nodes:
        return "FAIL", "expected fewer nodes: " + change
    if expect == "same" and a != b:
        return "FAIL", "expected as many collectives (EXEC-EXPECT: same): " + change
    cmd = execlib.compare_cmd(args.dtopt, args.mpirun, before, path, after)
    cmp = execlib.run(cmd)
    results = execlib.compare_results(cmp.out)
    if cmp.code != 0 or not results or "MISMATCH" in results:
        return "FAIL", "the results differ\n" + cmp.describe()
    where = "%d ranks" % before.ranks if cmd[0] == args.mpirun else "cpu"
    return "PASS", "%s; outputs %s (%s, %.1f s)" % (
        change, execlib.format_counts(results), where, cmp.took)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtopt", required=True)
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--workdir", help="where results go (default: a temporary folder)")
    ap.add_argument("--max-ranks", type=int, default=8)
    ap.add_argument("paths", nargs="+")
    args = ap.parse_args()
    args.dtopt = os.path.abspath(args.dtopt)
    tmp = None
    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
        workdir = args.workdir
    else:
        tmp = tempfile.TemporaryDirectory(prefix="exec_goldens.")
        workdir = tmp.name
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    start = time.monotonic()
    for path in graphs(args.paths):
        execs, expect = directives(path)
        name = os.path.join(os.path.basename(os.path.dirname(os.path.abspath(path))),
                            os.path.basename(path))
        for i, flags in enumerate(execs):
            after = os.path.join(workdir, "%s.%d.after.xml" % (
                os.path.basename(path)[:-4], i))
            status, detail = check_one(args, path, flags, expect, after)
            counts[status] += 1
            first, _, rest = detail.partition("\n")
            print("%s %s [%s]: %s" % (status, name, flags, first), flush=True)
            if rest:
                print("    " + rest.replace("\n", "\n    "), flush=True)
    total = sum(counts.values())
    print("%d EXEC lines: %d passed, %d failed, %d skipped (%.1f s)" % (
        total, counts["PASS"], counts["FAIL"], counts["SKIP"], time.monotonic() - start))
    if counts["FAIL"]:
        return 1
    return 0 if counts["PASS"] else 77


if __name__ == "__main__":
    sys.exit(main())

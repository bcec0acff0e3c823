#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""run_mpi_tests.py: one MPI test case of `dtopt run`.

usage: run_mpi_tests.py --dtopt DTOPT --mpirun MPIRUN --workdir DIR CASE

Generates the case's graphs with make_graphs.py into DIR/CASE, runs
`mpirun --allow-run-as-root --oversubscribe -np N dtopt run ...` (each run
under a 120 s limit) and checks exit codes and rank 0's tables.
Cases: order-2x2 order-2x4 order-4x2 order-2x3 order-2x2x2 uneven planted
failing mismatch check plain cli heap."""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import make_graphs  # noqa: E402

LIMIT = 120


class Failure(Exception):
    pass


class Runner:
    def __init__(self, args, graphs):
        self.dtopt, self.mpirun, self.graphs = args.dtopt, args.mpirun, graphs

    def run(self, np, *argv, expect, mpi=True):
        """Run dtopt (under mpirun with np ranks) and check the exit code."""
        cmd = [self.dtopt, "run"] + [os.path.join(self.graphs, a) if a.endswith(".xml") else a
                                    for a in argv]
        if mpi:
            cmd = [self.mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(np)] + cmd
        env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
        start = time.monotonic()
        # A session of its own, so that a hang is ended with mpirun and
        # every rank it started.
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, None)):
                try:
                    os.killpg(proc.pid, sig)
                    proc.communicate(timeout=wait)
                    break
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    pass
            raise Failure("%s: still running after %d s (a hang)" % (" ".join(cmd), LIMIT))
        p = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
        took = time.monotonic() - start
        print("$ %s\n  -> exit %d in %.1f s" % (" ".join(cmd), p.returncode, took))
        if p.returncode != expect:
            raise Failure("exit %d, expected %d\nstdout:\n%s\nstderr:\n%s"
                          % (p.returncode, expect, p.stdout, p.stderr))
        return p


def rows(out):
    """The comparison table: {output name: (result, row text)}."""
    table = {}
    for line in out.splitlines():
        m = re.match(r"\s+(\d+)\s+(\S+)\s+(\S+)\s+(bitwise|equal|close|MISMATCH)\b", line)
        if m:
            table[m.group(2)] = (m.group(4), line)
    return table


def expect_rows(out, want, count=None):
    """Every row's result is in want(name) (a set of results)."""
    table = rows(out)
    if not table or (count is not None and len(table) != count):
        raise Failure("expected %s table rows, got %d:\n%s" % (count, len(table), out))
    for name, (res, line) in table.items():
        if res not in want(name):
            raise Failure("output %s: %s, expected one of %s\n%s"
                          % (name, res, sorted(want(name)), out))
    return table


def case_order(r, shape):
    n = 1
    for s in shape:
        n *= s
    key = "order-" + "x".join(map(str, shape))
    chains = make_graphs.chains(len(shape))
    pairs = [c for c in chains if len(c) == 2]
    ar = (len(make_graphs.FLOAT_OPS) + len(make_graphs.INT_OPS) +
          len(make_graphs.EXACT_OPS))
    p = r.run(n, "--compare", key + ".chain.xml", key + ".right.xml", expect=0)

    def right(name):
        # Float all-reduces may round differently (avg over 3); the rest,
        # data movement and exact integer sums, must be bitwise.
        return {"bitwise", "equal", "close"} if name.startswith("ar_z_") else {"bitwise"}
    table = expect_rows(p.stdout, right)
    want = 2 * len(chains) + len(pairs) + ar * len(chains)
    if len(table) < want:
        raise Failure("%d outputs compared, expected at least %d" % (len(table), want))
    if not any(name.startswith("a2a2_") for name in table):
        raise Failure("no all_to_all round trip was compared")
    p = r.run(n, "--compare", key + ".order.xml", key + ".wrong.xml", expect=1)
    expect_rows(p.stdout, lambda name: {"MISMATCH"}, 2 * len(chains) + len(pairs))


def case_uneven(r):
    p = r.run(6, "--compare", "uneven.{rank}.xml", "ident.{rank}.xml", expect=0)
    expect_rows(p.stdout, lambda name: {"bitwise"}, 2)


def case_planted(r):
    p = r.run(4, "--compare", "base.xml", "planted.xml", expect=1)
    table = expect_rows(p.stdout, lambda name: {"MISMATCH"}, 1)
    line = list(table.values())[0][1]
    if "4 of 96 elements beyond tolerance" not in line:
        raise Failure("expected one differing element per rank:\n" + line)
    p = r.run(4, "--compare", "base.xml", "tiny.xml", expect=0)
    expect_rows(p.stdout, lambda name: {"close"}, 1)


def case_failing(r):
    p = r.run(4, "fail.{rank}.xml", expect=3)
    if not re.search(r"fail\.1\.xml:\d+: error: node 'emb'.*\(rank 1\)", p.stderr):
        raise Failure("rank 1's kernel error is not reported:\n" + p.stderr)
    # Rank 1's graph on every rank: the others refuse it, before running.
    p = r.run(4, "fail.1.xml", expect=1)
    for k in (0, 2, 3):
        if "this is the graph of rank 1, but it runs on rank %d" % k not in p.stderr:
            raise Failure("rank %d's refusal is not reported:\n%s" % (k, p.stderr))


def case_mismatch(r):
    make_graphs.make_order(r.graphs, [2, 4])
    p = r.run(4, "order-2x4.chain.xml", expect=3)
    msg = "the graph's mesh 'world' has 8 devices but mpirun started 4 ranks"
    if p.stderr.count(msg) != 1:
        raise Failure("expected the message once:\n" + p.stderr)


def case_check(r):
    p = r.run(4, "--check", "--reference", "check_global.xml", "check_local.xml", expect=0)
    table = expect_rows(p.stdout, lambda name: {"bitwise", "close"}, 3)
    if table["y"][0] != "bitwise" or table["bg"][0] != "bitwise":
        raise Failure("elementwise and gathered outputs must be bitwise:\n" + p.stdout)
    if "P(sum) (all-reduced first" not in table["z"][1]:
        raise Failure("the partial output is not marked:\n" + p.stdout)
    p = r.run(4, "--check", "--reference", "check_global.xml", "check_wrong.xml", expect=1)
    expect_rows(p.stdout, lambda name: {"MISMATCH"} if name == "y" else {"bitwise", "close"}, 3)


def case_plain(r):
    out, trace = os.path.join(r.graphs, "out"), os.path.join(r.graphs, "trace.json")
    p = r.run(4, "plain.xml", "--out", out, "--trace", trace, "--summary",
              "--iters", "2", "--warmup", "1", expect=0)
    index = json.load(open(os.path.join(out, "index.json")))
    if index["world_size"] != 4 or [k["rank"] for k in index["ranks"]] != [0, 1, 2, 3]:
        raise Failure("bad index.json: %s" % index)
    # The gather over the whole mesh gives every rank the global x.
    blobs = [open(os.path.join(out, "rank%d.0.bin" % k), "rb").read() for k in range(4)]
    if len(blobs[0]) != 8 * 3 * 4 or any(b != blobs[0] for b in blobs):
        raise Failure("rank outputs differ or have the wrong size")
    first = index["ranks"][0]["outputs"][0]
    if first["shape"] != [8, 3] or first["dtype"] != "float32" or first["name"] != "w":
        raise Failure("bad index entry %s" % first)
    events = json.load(open(trace))
    events = events["traceEvents"] if isinstance(events, dict) else events
    if {e.get("pid") for e in events if e.get("ph") == "X"} != {0, 1, 2, 3}:
        raise Failure("the merged trace lacks a track per rank")
    # The gather in flight, from its start to the end of its wait, on a
    # second track of every rank (2 timed iterations).
    flight = [e for e in events if e.get("ph") == "X" and e.get("tid") == 1]
    if len(flight) != 2 * 4 or {e["name"] for e in flight} != {"ag"}:
        raise Failure("the trace lacks the collective in flight: %s" % flight)
    if not re.search(r"communication: 1 collectives per iteration, in flight "
                     r"[0-9.]+ ms, exposed [0-9.]+ ms", p.stdout):
        raise Failure("no communication line:\n" + p.stdout)
    # Per iteration, over the 4 ranks: one gather of 96 bytes each.
    if not re.search(r"g_d0_d1\s+4\s+384\b", p.stdout):
        raise Failure("bad communication summary:\n" + p.stdout)
    if not re.search(r"time: \S+ s/iteration \(max over 4 ranks", p.stdout):
        raise Failure("no timing line:\n" + p.stdout)
    # The timed iterations' CPU, summed over the ranks: more than nothing,
    # less than 4 ranks busy for the whole wall time (a thread each, and
    # MPI's own idle ones).
    wall = float(re.search(r"time: (\S+) s/iteration", p.stdout).group(1))
    cpu = re.search(r"cpu: ([0-9.]+) ms and [0-9]+ page faults per iteration \(summed over 4 ranks\)", p.stdout)
    if not cpu or not 0 < float(cpu.group(1)) <= 4 * 2 * wall * 1e3:
        raise Failure("bad cpu line (wall %g s/iteration):\n%s" % (wall, p.stdout))


def case_cli(r):
    # The global form lowers the graph on every rank, then checks.
    p = r.run(4, "--check", "check_global.xml", expect=0)
    if "check: ok (0 of 3 outputs differ" not in p.stdout:
        raise Failure("--check GLOBAL.xml did not check 3 outputs:\n" + p.stdout)
    # Lowering on each rank reads rank 0's propagated text: its messages
    # name that text's lines, not GLOBAL's.
    p = r.run(4, "--check", "check_global.xml", "--memory-limit", "100", expect=3)
    if not re.search(r"check_global\.xml \(after shard-prop\):\d+: error: .*--memory-limit", p.stderr):
        raise Failure("the refusal does not name the propagated text:\n" + p.stderr)
    r.run(1, "--compare", "base.xml", expect=2, mpi=False)
    r.run(1, "--spin", "-1", "base.xml", expect=2, mpi=False)
    r.run(1, "--compare", "base.xml", "tiny.xml", "--iters", "2", expect=2, mpi=False)
    p = r.run(1, "--backend", "cpu", "check_global.xml", expect=0, mpi=False)
    if "3 outputs" not in p.stdout:
        raise Failure("the global graph's outputs are not printed:\n" + p.stdout)


def case_heap(r):
    # Buffers freed and allocated again every iteration reuse the heap's
    # pages: after the warm-up, an iteration faults in almost none of the
    # 2 x 1024 pages per rank it allocates (glibc's default thresholds
    # trim or unmap them and fault them all in again: ~8000 here).
    p = r.run(4, "heap.xml", "--summary", "--iters", "3", "--warmup", "2", expect=0)
    m = re.search(r"cpu: [0-9.]+ ms and ([0-9]+) page faults per iteration", p.stdout)
    if not m or int(m.group(1)) > 1024:
        raise Failure("freed host memory is not reused:\n" + p.stdout)


CASES = {
    "uneven": (["uneven"], case_uneven),
    "planted": (["planted"], case_planted),
    "failing": (["failing"], case_failing),
    "mismatch": ([], case_mismatch),
    "check": (["check"], case_check),
    "plain": (["plain"], case_plain),
    "cli": (["check", "planted"], case_cli),
    "heap": (["heap"], case_heap),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtopt", required=True)
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("case")
    args = ap.parse_args()
    graphs = os.path.join(args.workdir, args.case)
    os.makedirs(graphs, exist_ok=True)
    r = Runner(args, graphs)
    try:
        if args.case.startswith("order-"):
            shape = [int(v) for v in args.case[6:].split("x")]
            make_graphs.make_order(graphs, shape)
            case_order(r, shape)
        else:
            sets, fn = CASES[args.case]
            for s in sets:
                make_graphs.SETS[s](graphs)
            fn(r)
    except Failure as e:
        print("FAIL: %s" % e)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench_lower.py: the lowering benchmark. Writes a global-view MLP stack
(FSDP + tensor parallelism on a dp x tp mesh, every compute node pinned) of
about NODES nodes, then times

    dtopt opt -p lower-redistribute --rank R --time-passes --no-verify-each

(and, with --spmd, the SPMD lowering of a stack without the rank-dependent
R -> S(0) chunk), printing the pass's seconds and input nodes per second,
nodes made, and peak RSS. Use a release build.

usage: bench_lower.py DTOPT [--nodes N] [--mesh 2x4] [--rank R] [--spmd]
                            [--keep DIR]

One layer (11 global nodes, S(0) S(0) parameters as FSDP stores them):
  w1, w2: placeholders [4H, D], [D, 4H] @ S(0) S(0)
  w1_full = redistribute(w1) @ R S(0)    (merged all_gather on "dp tp",
                                          then this tp rank's chunk)
  w1_t = t(w1_full) @ R S(1);  h = mm(x, w1_t) @ S(0) S(1);  a = relu(h)
  a_full = redistribute(a) @ S(0) R      (all_gather over tp, chunk + cat)
  w2_full = redistribute(w2) @ R R       (merged all_gather)
  w2_t = t(w2_full);  y = mm(a_full, w2_t) @ S(0) R
  x' = redistribute(y) @ S(0) R          (nothing to do: the next input)
With --spmd, w1 is stored R S(0) instead (no chunk, so one graph serves
every rank)."""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time


def write_stack(path, layers, mesh, spmd):
    dp, tp = mesh
    batch, d, h = 8 * dp, 16 * tp, 64 * tp
    w1_pl = "R S(0)" if spmd else "S(0) S(0)"
    with open(path, "w") as f:
        w = f.write
        w('<?xml version="1.0" encoding="UTF-8"?>\n')
        w('<dtopt-graph version="1" name="mlp_stack" view="global">\n')
        w('  <mesh name="world" shape="%d %d" dims="dp tp"/>\n' % (dp, tp))
        w('  <group name="dp_tp" mesh="world" dims="dp tp"/>\n')

        def node(name, target, args, pl, shape=None):
            w('  <node name="%s" op="call_function" target="%s">\n' % (name, target))
            for a in args:
                w('    <arg node="%s"/>\n' % a)
            if shape:
                w('    <tensor dtype="float32" shape="%s"/>\n' % shape)
            if pl:
                w('    <sharding mesh="world" placements="%s"/>\n' % pl)
            w('  </node>\n')

        def placeholder(name, shape, pl):
            w('  <node name="%s" op="placeholder">\n' % name)
            w('    <tensor dtype="float32" shape="%s"/>\n' % shape)
            w('    <sharding mesh="world" placements="%s"/>\n' % pl)
            w('  </node>\n')

        placeholder("x", "%d %d" % (batch, d), "S(0) R")
        x = "x"
        for i in range(layers):
            placeholder("w1_%d" % i, "%d %d" % (h, d), w1_pl)
            placeholder("w2_%d" % i, "%d %d" % (d, h), "S(0) S(0)")
            redist = "dtensor.redistribute"
            node("w1_full_%d" % i, redist, ["w1_%d" % i], "R S(0)")
            node("w1_t_%d" % i, "aten.t.default", ["w1_full_%d" % i], "R S(1)")
            node("h_%d" % i, "aten.mm.default", [x, "w1_t_%d" % i], "S(0) S(1)")
            node("a_%d" % i, "aten.relu.default", ["h_%d" % i], "S(0) S(1)")
            node("a_full_%d" % i, redist, ["a_%d" % i], "S(0) R")
            node("w2_full_%d" % i, redist, ["w2_%d" % i], "R R")
            node("w2_t_%d" % i, "aten.t.default", ["w2_full_%d" % i], None)
            node("y_%d" % i, "aten.mm.default", ["a_full_%d" % i, "w2_t_%d" % i], "S(0) R")
            node("x_%d" % i, redist, ["y_%d" % i], "S(0) R")
            x = "x_%d" % i
        w('  <node name="output" op="output">\n    <arg nodes="%s"/>\n  </node>\n' % x)
        w('</dtopt-graph>\n')


def run(dtopt, graph, out, rank):
    cmd = ["/usr/bin/time", "-v", dtopt, "opt", "-p", "lower-redistribute",
           "--no-verify-each", "--time-passes", graph, "-o", out]
    if rank is not None:
        cmd[6:6] = ["--rank", str(rank)]
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - start
    if p.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), p.stderr))
    lower = float(re.search(r"^\s+([0-9.]+)\s+[0-9.]+%\s+lower-redistribute$",
                            p.stderr, re.M).group(1))
    load = float(re.search(r"load ([0-9.]+) s", p.stderr).group(1))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))
    return lower, load, rss, wall


def count_nodes(path):
    with open(path) as f:
        return sum(1 for line in f if "<node " in line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dtopt")
    ap.add_argument("--nodes", type=int, default=100000)
    ap.add_argument("--mesh", default="2x4")
    ap.add_argument("--rank", type=int, default=1)
    ap.add_argument("--spmd", action="store_true")
    ap.add_argument("--keep", help="write the graphs into this folder")
    args = ap.parse_args()
    mesh = [int(v) for v in args.mesh.split("x")]
    if len(mesh) != 2:
        sys.exit("--mesh wants DPxTP")
    tmp = args.keep or tempfile.mkdtemp()
    os.makedirs(tmp, exist_ok=True)
    cases = [("per rank %d" % args.rank, False, args.rank)]
    if args.spmd:
        cases.append(("SPMD", True, None))
    for what, spmd, rank in cases:
        layers = max(1, (args.nodes - 2) // 11)
        graph = os.path.join(tmp, "stack%s.xml" % ("_spmd" if spmd else ""))
        write_stack(graph, layers, mesh, spmd)
        out = os.path.join(tmp, "low%s.xml" % ("_spmd" if spmd else ""))
        lower, load, rss, wall = run(args.dtopt, graph, out, rank)
        n_in, n_out = count_nodes(graph), count_nodes(out)
        print("%s, mesh %s, %d layers: %d global nodes -> %d local nodes; "
              "lower-redistribute %.3f s = %.0f nodes/s (input), %.0f nodes/s "
              "(output); load %.3f s; peak RSS %.1f MB; wall %.2f s"
              % (what, args.mesh, layers, n_in, n_out, lower, n_in / lower,
                 n_out / lower, load, rss / 1024, wall))
    if not args.keep:
        for name in os.listdir(tmp):
            os.remove(os.path.join(tmp, name))
        os.rmdir(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())

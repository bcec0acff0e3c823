#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench_bucket.py DTOPT [--np 4] [--repeats 5] [--quick]: a training
step's communication with and without bucket-collectives and
schedule-collectives, measured side by side under mpirun.

Each case is a local-view step on a 1-D mesh of NP ranks (group dp): K
gradients, each computed by an mm from two placeholders (so there is
compute for communication to hide behind), then communicated one
collective per gradient, as DDP (all_reduce sum) or FSDP (reduce_scatter
of the gradient, all_gather of the parameter shard) would. Four
pipelines of the same graph:

  plain      verify,shape-infer,fuse-collectives,cancel-views,dce
  overlap    ... + schedule-collectives (no buckets)
  bucketed   ... + bucket-collectives
  scheduled  ... + bucket-collectives,schedule-collectives (the default)

All are first checked equal with `run --compare` against plain. Then
each is run REPEATS times, interleaved (plain, overlap, bucketed,
scheduled, plain, ...), with `dtopt run --iters N --warmup W --summary`; per run it reads the
wall time per iteration (max over ranks), the exposed communication per
iteration (time in starts and waits, max over ranks: the step's
communication time), the CPU seconds of all ranks per iteration (from the
children's rusage) and rank 0's peak interpreter memory. It prints medians
and the ratios to plain, and the peak memory growth of the default
pipeline next to the bound bucket + overlap bytes.

Exit status 0; the figures are the result (no wall-clock assertion)."""
import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile

PIPE_PLAIN = "verify,shape-infer,fuse-collectives,cancel-views,dce"
PIPES = [
    ("plain", PIPE_PLAIN),
    ("overlap", "verify,shape-infer,fuse-collectives,schedule-collectives,cancel-views,dce"),
    ("bucketed", "verify,shape-infer,fuse-collectives,bucket-collectives,cancel-views,dce"),
    ("scheduled", "verify,shape-infer,fuse-collectives,bucket-collectives,"
                  "schedule-collectives,cancel-views,dce"),
]
BUCKET = 25 << 20
OVERLAP = 64 << 20

AG = "_c10d_functional.all_gather_into_tensor.default"
RS = "_c10d_functional.reduce_scatter_tensor.default"
AR = "_c10d_functional.all_reduce.default"
WAIT = "_c10d_functional.wait_tensor.default"


def step_graph(style, count, elems, np_):
    """count gradients of `elems` float32 elements each (rows x 64)."""
    cols = 64
    rows = max(np_, elems // cols // np_ * np_)
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             '<dtopt-graph version="1" name="step" view="local">',
             '  <mesh name="world" shape="%d" dims="dp"/>' % np_,
             '  <group name="dp" mesh="world" dims="dp"/>']
    outs = []

    def node(name, target, *args):
        parts = []
        for a in args:
            if isinstance(a, str) and a.startswith("="):
                parts.append('<arg str="%s"/>' % a[1:])
            elif isinstance(a, str):
                parts.append('<arg node="%s"/>' % a)
            else:
                parts.append('<arg int="%d"/>' % a)
        lines.append('  <node name="%s" op="call_function" target="%s">%s</node>'
                     % (name, target, "".join(parts)))

    def placeholder(name, shape):
        lines.append('  <node name="%s" op="placeholder"><tensor dtype="float32" shape="%s"/></node>'
                     % (name, " ".join(map(str, shape))))

    for i in range(count):
        placeholder("a%d" % i, [rows, 16])
        placeholder("b%d" % i, [16, cols])
        node("g%d" % i, "aten.mm.default", "a%d" % i, "b%d" % i)
        if style == "dp":
            node("c%d" % i, AR, "g%d" % i, "=sum", "=dp")
        else:
            node("c%d" % i, RS, "g%d" % i, "=sum", np_, "=dp")
        node("w%d" % i, WAIT, "c%d" % i)
        outs.append("w%d" % i)
        if style == "fsdp":
            placeholder("p%d" % i, [rows // np_, cols])
            node("ag%d" % i, AG, "p%d" % i, np_, "=dp")
            node("wa%d" % i, WAIT, "ag%d" % i)
            outs.append("wa%d" % i)
    lines.append('  <node name="output" op="output"><arg nodes="%s"/></node>' % " ".join(outs))
    lines.append("</dtopt-graph>")
    return "\n".join(lines) + "\n", rows * cols * 4


def run(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return p.stdout, cpu


def collectives(path):
    with open(path) as f:
        text = f.read()
    return sum(text.count('target="%s"' % t) for t in (AG, RS, AR))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dtopt")
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="two small cases, 3 repeats")
    args = ap.parse_args()
    mpirun = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(args.np)]
    cases = [("dp", 16, 4 << 10), ("dp", 32, 16 << 10), ("fsdp", 16, 4 << 10),
             ("dp", 4, 1 << 20), ("dp", 2, 4 << 20)]
    if args.quick:
        cases, args.repeats = cases[:1] + cases[3:4], 3
    tmp = tempfile.mkdtemp(prefix="bench_bucket.")
    print("%d ranks, medians of %d interleaved runs; ratios are pipeline / plain" % (
        args.np, args.repeats))
    print("%-5s %4s %9s %-10s %5s %11s %11s %11s %12s %7s %7s" % (
        "style", "K", "bytes", "pipeline", "colls", "wall us/it", "comm us/it",
        "cpu us/it", "peak bytes", "wall", "comm"))
    for style, count, elems in cases:
        text, nbytes = step_graph(style, count, elems, args.np)
        src = os.path.join(tmp, "%s_%d_%d.xml" % (style, count, elems))
        with open(src, "w") as f:
            f.write(text)
        paths = []
        for name, pipe in PIPES:
            out = src.replace(".xml", ".%s.xml" % name)
            run([args.dtopt, "opt", "-p", pipe, src, "-o", out])
            paths.append(out)
        for p in paths[1:]:
            run(mpirun + [args.dtopt, "run", "--compare", paths[0], p])
        iters = max(5, min(200, (32 << 20) // max(1, nbytes * count)))
        samples = [[] for _ in paths]
        for _ in range(args.repeats):
            for k, p in enumerate(paths):
                out, cpu = run(mpirun + [args.dtopt, "run", p, "--iters", str(iters),
                                         "--warmup", "3", "--summary"])
                wall = float(re.search(r"time: ([0-9.e+-]+) s/iteration", out).group(1))
                comm = float(re.search(r"exposed ([0-9.]+) ms", out).group(1)) * 1e-3
                peak = int(re.search(r"peak (\d+) bytes", out).group(1))
                samples[k].append((wall, comm, cpu / (iters + 3), peak))
        med = [[statistics.median(s[i] for s in samp) for i in range(4)] for samp in samples]
        for k, (name, _) in enumerate(PIPES):
            wall, comm, cpu, peak = med[k]
            print("%-5s %4d %9d %-10s %5d %11.1f %11.1f %11.1f %12d %7.2f %7.2f" % (
                style, count, nbytes, name, collectives(paths[k]), wall * 1e6, comm * 1e6,
                cpu * 1e6, peak, wall / med[0][0], comm / med[0][1] if med[0][1] else 0))
        growth = med[3][3] - med[0][3]
        print("      peak memory growth (scheduled - plain): %d bytes; bound bucket + overlap = %d"
              % (growth, BUCKET + OVERLAP))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

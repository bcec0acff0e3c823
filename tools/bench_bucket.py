#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench_bucket.py DTOPT [--np 4] [--repeats 7] [--case NAME ...] [--quick] [RATES]
[--spin S ...]:
a training step's communication with and without bucket-collectives and
schedule-collectives, measured side by side under mpirun.

Each case is a local-view step on a 1-D mesh of NP ranks (group dp): K
gradients, each computed by an mm from two placeholders (so there is
compute for communication to hide behind), then communicated one
collective per gradient, as DDP (all_reduce sum) or FSDP (reduce_scatter
of the gradient, all_gather of the parameter shard) would. Six
pipelines of the same graph:

  plain      verify,shape-infer,fuse-collectives,cancel-views,dce
  overlap    ... + schedule-collectives (no buckets)
  bucketed   ... + bucket-collectives (the cost model's cut)
  default    ... + bucket-collectives,schedule-collectives
  gpu-cut    default without the host's rates: the cut of an H100 and
             its links (the topology defaults), as before the rates
  one        default with --force-fusion: one bucket up to --bucket-bytes
             (the policy before the cost model's cut)

and with --spin S, plain@S and default@S: plain and default under `dtopt
run --spin S` (how long a wait yields the CPU before it sleeps between
tests; the MPI backend's own choice is 2 ms where more ranks than cores
share the host, so `--spin 0.1` compares with yielding throughout).

The cost model's cut weighs the compute a bucket waits for against the
latency it saves, so opt must know the host's rates, not an H100's
(semantics §4.7). Every pipeline but gpu-cut gets them as topology flags
(--device-tflops, --device-bandwidth, --bandwidth, --latency,
--base-latency). RATES: --device-tflops T, --device-bandwidth GBPS,
--link-bandwidth GBPS, --link-latency US state them; those not stated
are measured first under the same mpirun: a 256^3 mm and a 1 Mi-element
add give a rank's FLOP/s and memory bandwidth (per call, from the
summary), and NP-rank all_reduces of 16 KiB and 4 MiB, each after the
same small mm (64^3) and waited at once, the link: the exposed time of one collective
(charged as the base latency, hops ~free) and the bandwidth the model's
all_reduce term 2(n-1)/n·bytes/bw needs to fit the difference. Each
collective follows compute, as in a step: back to back, the ranks meet
in step (tens of µs on shared memory); after compute, ranks the
scheduler put aside arrive late and every collective waits for the last
one (hundreds of µs on an oversubscribed host), which is the latency a
bucket saves.

All are first checked equal with `run --compare` against plain. Then
they run in REPEATS rounds, each round every pipeline once in a rotated
order, with `dtopt run --iters N --warmup W --summary`; per run it reads
the wall time per iteration (max over ranks), the exposed communication
per iteration (time in starts, waits and MPI progress tests, max over
ranks: the step's communication time), the CPU seconds of all ranks per
timed iteration and their page faults (the summary's cpu line: compute,
polling and MPI, not mpirun's launch, MPI_Init or the warm-up) and rank
0's peak interpreter memory. Ratios (wall, communication, CPU) are taken within a round (each
pipeline against the plain run of the same round, so a load that changes
between rounds cancels) and reported as their median with the lower and
upper quartile; times are medians over rounds. On a loaded machine
(more runnable processes than cores) the exposed communication mostly
measures how long a rank waits for peers the scheduler put aside, and the
CPU ratio (work, polling included) is the steadier figure. The load
average is printed before and after each case: on a shared machine run it
under `nice` and more than once.

Exit status 0; the figures are the result (no wall-clock assertion)."""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

PIPE_PLAIN = "verify,shape-infer,fuse-collectives,cancel-views,dce"
PIPE_BUCKET = "verify,shape-infer,fuse-collectives,bucket-collectives,cancel-views,dce"
PIPE_DEFAULT = ("verify,shape-infer,fuse-collectives,cancel-views,dce,"
                "bucket-collectives,schedule-collectives,cancel-views,dce")
PIPES = [
    ("plain", ["-p", PIPE_PLAIN]),
    ("overlap", ["-p", "verify,shape-infer,fuse-collectives,schedule-collectives,cancel-views,dce"]),
    ("bucketed", ["-p", PIPE_BUCKET]),
    ("default", ["-p", PIPE_DEFAULT]),
    ("gpu-cut", ["-p", PIPE_DEFAULT]),
    ("one", ["-p", PIPE_DEFAULT, "--force-fusion"]),
]
HOST_RATES = [p for p, _ in PIPES if p != "gpu-cut"]
CASES = [("dp", 16, 4 << 10), ("dp", 32, 16 << 10), ("dp", 64, 2 << 10),
         ("fsdp", 16, 4 << 10), ("dp", 4, 1 << 20), ("dp", 2, 4 << 20)]
BUCKET = 25 << 20
OVERLAP = 64 << 20

AG = "_c10d_functional.all_gather_into_tensor.default"
RS = "_c10d_functional.reduce_scatter_tensor.default"
AR = "_c10d_functional.all_reduce.default"
WAIT = "_c10d_functional.wait_tensor.default"
MM = "aten.mm.default"
ADD = "aten.add.Tensor"


def graph_text(name, np_, body, outs):
    """A local-view graph on a 1-D mesh of np_ ranks (group dp). body:
    (node, target, args) in order; target None is a float32 placeholder
    of shape args; an arg is a node name, "=STR" a string, or an int."""
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             '<dtopt-graph version="1" name="%s" view="local">' % name,
             '  <mesh name="world" shape="%d" dims="dp"/>' % np_,
             '  <group name="dp" mesh="world" dims="dp"/>']
    for node, target, args in body:
        if target is None:
            lines.append('  <node name="%s" op="placeholder"><tensor dtype="float32" '
                         'shape="%s"/></node>' % (node, " ".join(map(str, args))))
            continue
        parts = ['<arg int="%d"/>' % a if not isinstance(a, str) else
                 '<arg str="%s"/>' % a[1:] if a.startswith("=") else
                 '<arg node="%s"/>' % a for a in args]
        lines.append('  <node name="%s" op="call_function" target="%s">%s</node>'
                     % (node, target, "".join(parts)))
    lines.append('  <node name="output" op="output"><arg nodes="%s"/></node>' % " ".join(outs))
    return "\n".join(lines + ["</dtopt-graph>"]) + "\n"


def step_graph(style, count, elems, np_):
    """count gradients of `elems` float32 elements each (rows x 64)."""
    cols = 64
    rows = max(np_, elems // cols // np_ * np_)
    body, outs = [], []
    for i in range(count):
        body += [("a%d" % i, None, [rows, 16]), ("b%d" % i, None, [16, cols]),
                 ("g%d" % i, MM, ["a%d" % i, "b%d" % i])]
        if style == "dp":
            body.append(("c%d" % i, AR, ["g%d" % i, "=sum", "=dp"]))
        else:
            body.append(("c%d" % i, RS, ["g%d" % i, "=sum", np_, "=dp"]))
        body.append(("w%d" % i, WAIT, ["c%d" % i]))
        outs.append("w%d" % i)
        if style == "fsdp":
            body += [("p%d" % i, None, [rows // np_, cols]),
                     ("ag%d" % i, AG, ["p%d" % i, np_, "=dp"]),
                     ("wa%d" % i, WAIT, ["ag%d" % i])]
            outs.append("wa%d" % i)
    return graph_text("step", np_, body, outs), rows * cols * 4


def per_call_us(summary, target):
    """µs per call of `target`, from `run --summary` (total over ranks / count)."""
    m = re.search(r"^%s\s+(\d+)\s+([0-9.]+)" % re.escape(target), summary, re.M)
    return float(m.group(2)) * 1e3 / int(m.group(1))


def calibrate(args, mpirun, tmp):
    """The rates not stated on the command line, measured (see above)."""
    def timed(name, body, outs, iters):
        path = os.path.join(tmp, name + ".xml")
        with open(path, "w") as f:
            f.write(graph_text("calibrate", args.np, body, outs))
        return run(mpirun + [args.dtopt, "run", path, "--iters", str(iters),
                             "--warmup", "2", "--summary"])
    if args.device_tflops is None or args.device_bandwidth is None:
        n, e = 256, 1 << 20
        out = timed("compute", [("x", None, [n, n]), ("y", None, [n, n]),
                                ("mm", MM, ["x", "y"]), ("u", None, [e]), ("v", None, [e]),
                                ("add", ADD, ["u", "v"])], ["mm", "add"], 10)
        if args.device_tflops is None:
            args.device_tflops = 2.0 * n ** 3 / per_call_us(out, MM) / 1e6
        if args.device_bandwidth is None:
            args.device_bandwidth = 3 * 4 * e / per_call_us(out, ADD) / 1e3
    if args.link_bandwidth is None or args.link_latency is None:
        t = {}
        for elems, count, iters in ((4 << 10, 16, 20), (1 << 20, 4, 5)):
            body, outs = [], []
            for i in range(count):
                body += [("x%d" % i, None, [64, 64]), ("m%d" % i, MM, ["x%d" % i, "x%d" % i]),
                         ("g%d" % i, None, [elems]), ("c%d" % i, AR, ["g%d" % i, "=sum", "=dp"]),
                         ("w%d" % i, WAIT, ["c%d" % i])]
                outs += ["m%d" % i, "w%d" % i]
            out = timed("link%d" % elems, body, outs, iters)
            t[elems] = float(re.search(r"exposed ([0-9.]+) ms", out).group(1)) * 1e3 / count
        if args.link_latency is None:
            args.link_latency = t[4 << 10]
        if args.link_bandwidth is None:
            beta = max(t[1 << 20] - t[4 << 10], 1e-3) / (4.0 * ((1 << 20) - (4 << 10)))  # µs/byte
            hops = 2.0 * (args.np - 1) / args.np
            args.link_bandwidth = min(1e3, hops * 1e6 / (1 << 30) / beta)


def rate_flags(args):
    return ["--device-tflops=%.6g" % args.device_tflops,
            "--device-bandwidth=%.6g" % args.device_bandwidth,
            "--bandwidth=%.6g" % args.link_bandwidth, "--latency=0.001",
            "--base-latency=%.6g" % args.link_latency]


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
    return p.stdout


def collectives(path):
    with open(path) as f:
        text = f.read()
    return sum(text.count('target="%s"' % t) for t in (AG, RS, AR))


def case_name(style, count, elems):
    return "%s%dx%dK" % (style, count, elems * 4 >> 10)


def load():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def quartiles(xs):
    xs = sorted(xs)
    q = statistics.quantiles(xs, n=4, method="inclusive") if len(xs) > 1 else xs * 3
    return q[0], statistics.median(xs), q[2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dtopt")
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--case", action="append", default=[],
                    help="run only this case (e.g. dp32x64K); repeatable")
    ap.add_argument("--quick", action="store_true", help="two small cases, 3 repeats")
    ap.add_argument("--device-tflops", type=float, help="a rank's compute, TFLOP/s (measured)")
    ap.add_argument("--device-bandwidth", type=float, help="a rank's memory GB/s (measured)")
    ap.add_argument("--link-bandwidth", type=float, help="the link's GB/s (measured)")
    ap.add_argument("--link-latency", type=float,
                    help="one collective's latency, µs (measured)")
    ap.add_argument("--spin", action="append", default=[],
                    help="also run plain and default with `dtopt run --spin SECONDS` "
                         "(e.g. 0.1: yield throughout, as before the oversubscribed "
                         "wait); repeatable")
    args = ap.parse_args()
    mpirun = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(args.np)]
    cases = CASES
    if args.quick:
        cases, args.repeats = [CASES[0], CASES[4]], 3
    if args.case:
        cases = [c for c in CASES if case_name(*c) in args.case]
        if not cases:
            sys.exit("no case named %s (cases: %s)" % (
                ", ".join(args.case), ", ".join(case_name(*c) for c in CASES)))
    tmp = tempfile.mkdtemp(prefix="bench_bucket.")
    calibrate(args, mpirun, tmp)
    print("host rates (load %s): %s" % (load(), " ".join(rate_flags(args))))
    print("%d ranks on %d cores, %d rounds; ratio = pipeline / plain of the same round: "
          "median [quartiles]" % (args.np, os.cpu_count(), args.repeats))
    print("%-10s %-13s %5s %10s %10s %10s %9s %11s %19s %19s %19s" % (
        "case", "pipeline", "colls", "wall us/it", "comm us/it", "cpu us/it", "faults/it",
        "peak bytes", "wall ratio", "comm ratio", "cpu ratio"))
    for style, count, elems in cases:
        name = case_name(style, count, elems)
        text, nbytes = step_graph(style, count, elems, args.np)
        src = os.path.join(tmp, name + ".xml")
        with open(src, "w") as f:
            f.write(text)
        paths = []
        for pname, flags in PIPES:
            out = src.replace(".xml", ".%s.xml" % pname)
            host = rate_flags(args) if pname in HOST_RATES else []
            run([args.dtopt, "opt"] + flags + host + [src, "-o", out])
            paths.append(out)
        for p in paths[1:]:
            run(mpirun + [args.dtopt, "run", "--compare", paths[0], p])
        iters = max(5, min(200, (32 << 20) // max(1, nbytes * count)))
        runs = [(pname, paths[k], []) for k, (pname, _) in enumerate(PIPES)]
        for spin in args.spin:
            runs += [("%s@%s" % (p, spin), paths[k], ["--spin", spin])
                     for k, p in ((0, "plain"), (3, "default"))]
        load_before = load()
        rounds = []
        for r in range(args.repeats):
            sample = [None] * len(runs)
            for i in range(len(runs)):
                k = (i + r) % len(runs)
                out = run(mpirun + [args.dtopt, "run", runs[k][1], "--iters", str(iters),
                                    "--warmup", "3", "--summary"] + runs[k][2])
                wall = float(re.search(r"time: ([0-9.e+-]+) s/iteration", out).group(1))
                comm = float(re.search(r"exposed ([0-9.]+) ms", out).group(1)) * 1e-3
                cpu = re.search(r"cpu: ([0-9.]+) ms and ([0-9]+) page faults", out)
                peak = int(re.search(r"(\d+) bytes in all", out).group(1))
                sample[k] = (wall, comm, float(cpu.group(1)) * 1e-3, peak, int(cpu.group(2)))
            rounds.append(sample)
        for k, (pname, path, _) in enumerate(runs):
            med = [statistics.median(rd[k][i] for rd in rounds) for i in range(5)]
            wr = quartiles([rd[k][0] / rd[0][0] for rd in rounds])
            cr = quartiles([rd[k][1] / rd[0][1] if rd[0][1] else 0 for rd in rounds])
            ur = quartiles([rd[k][2] / rd[0][2] for rd in rounds])
            print("%-10s %-13s %5d %10.1f %10.1f %10.1f %9.0f %11d %5.2f [%4.2f-%4.2f]"
                  " %5.2f [%4.2f-%4.2f] %5.2f [%4.2f-%4.2f]" % (
                      name, pname, collectives(path), med[0] * 1e6, med[1] * 1e6,
                      med[2] * 1e6, med[4], med[3], wr[1], wr[0], wr[2], cr[1], cr[0], cr[2],
                      ur[1], ur[0], ur[2]))
        peak = [statistics.median(rd[k][3] for rd in rounds) for k in range(len(runs))]
        print("           load %s -> %s; peak memory growth of default over plain: %d bytes "
              "(bound: bucket + overlap = %d)" % (load_before, load(), peak[3] - peak[0],
                                                  BUCKET + OVERLAP))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

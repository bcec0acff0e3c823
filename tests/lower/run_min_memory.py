#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""run_min_memory.py: execution proof of --redistribute=min-memory
(semantics §3.1): random S/R redistributions (random placements, shard
orders and mostly uneven shapes) on 1-D to 4-D meshes, plus the worked case
(mesh {x1:2, x2:2, y1:3, y2:2}, f32[12, 12], S(0)S(0)S(1)S(1) ->
S(1)S(1)S(0)S(0), 24 ranks oversubscribed), each table lowered per rank with
dtopt opt -p lower-redistribute --redistribute=min-memory and run with
mpirun -np N dtopt run --backend mpi --check --reference G 'low.{rank}.xml':
every output must be bitwise equal to the single-process reference; then
the same table lowered once as an SPMD program (no --rank: dt.all_permute
names placements, not the rank's splits, and moves padded shards) and
checked the same way. Two mpiruns per mesh; 546 redistributions in all
(size-1 mesh dims and repeats dropped; 40 on a (4, 3) mesh, where uneven
cases need dt.all_to_all_v). The plans must use both dt.all_permute and
dt.all_to_all_v somewhere, so both collectives are proven.
Then the worked case alone under both modes, rank 0's memory as dtopt run
--summary measures it (semantics §3.1): the largest tensor it holds (the
plan's peak) must be 24 B (6 elements) with min-memory and 288 B (72
gathered elements) with DTensor's plan; values live at once 72 B (the kept
input, a received shard and its unpacked copy) against 600 B; collective
buffers (receive buffers until the wait) 24 B against 288 B.

usage: run_min_memory.py --dtopt DTOPT --mpirun MPIRUN --workdir DIR
Exit 0 when every table passed, 1 otherwise."""
import argparse
import importlib.util
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "run_lower_tests", os.path.join(HERE, "run_lower_tests.py"))
lower = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lower)

# (mesh, dims, redistributions): 1-D to 4-D, the worked case's mesh last.
MESHES = [
    ((5,), ("a",), 60),
    ((2, 3), ("a", "b"), 80),
    ((4, 2), ("a", "b"), 80),
    ((2, 2, 2), ("a", "b", "c"), 80),
    ((3, 1, 2), ("a", "b", "c"), 60),
    ((2, 1, 2, 2), ("a", "b", "c", "d"), 100),
    ((4, 3), ("a", "b"), 40),
    ((2, 2, 3, 2), ("x1", "x2", "y1", "y2"), 100),
]
WORKED = ("worked", (12, 12), "S(0) S(0) S(1) S(1)", "S(1) S(1) S(0) S(0)",
          None, {})


def random_table(seed, mesh, dims, count):
    rnd = random.Random(seed)
    reds = []
    for i in range(count):
        rank = rnd.randint(1, 3)
        shape = tuple(rnd.randint(1, 13) for _ in range(rank))

        def placements():
            return ["R" if rnd.random() < 0.3 else "S(%d)" % rnd.randrange(rank)
                    for _ in mesh]

        def order(pl):
            by = {}
            for k, p in enumerate(pl):
                if p.startswith("S("):
                    by.setdefault(int(p[2:-1]), []).append(dims[k])
            entries = []
            for d, ms in sorted(by.items()):
                default = list(ms)
                rnd.shuffle(ms)
                if ms != default:
                    entries.append("%d:%s" % (d, ",".join(ms)))
            return " ".join(entries)

        src, dst = placements(), placements()
        extra = {k: v for k, v in (("src_order", order(src)),
                                   ("dst_order", order(dst))) if v}
        if src == dst and extra.get("src_order") == extra.get("dst_order"):
            continue  # the redistribution leaves its input
        reds.append(("r%d" % i, shape, " ".join(src), " ".join(dst), None, extra))
    return {"mesh": mesh, "dims": dims, "reds": reds}


def measured_peaks(r, dtopt):
    """Rank 0's memory (dtopt run --summary) of the worked case alone,
    lowered per rank by each mode: {mode: (largest tensor, values at peak,
    collective buffers at peak) in bytes}."""
    lower.write_table("worked", {"mesh": (2, 2, 3, 2),
                                 "dims": ("x1", "x2", "y1", "y2"),
                                 "reds": [WORKED]},
                      os.path.join(r.workdir, "w.xml"))
    peaks = {}
    for mode in ("dtensor", "min-memory"):
        r.run([dtopt, "opt", "-p", "lower-redistribute", "--redistribute=" + mode,
               "w.xml", "-o", mode + ".{rank}.xml"])
        out, _ = r.run([dtopt, "run", "--backend", "mpi", "--summary",
                        mode + ".{rank}.xml"], np=24)
        m = re.search(r"values (\d+) bytes at peak \(largest tensor (\d+) "
                      r"bytes\), collective buffers (\d+) bytes", out)
        if not m:
            raise lower.Failure("no memory line in:\n" + out)
        peaks[mode] = (int(m.group(2)), int(m.group(1)), int(m.group(3)))
    return peaks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtopt", required=True)
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    args.dtopt = os.path.abspath(args.dtopt)
    os.makedirs(args.workdir, exist_ok=True)
    r = lower.Runner(args, args.workdir)
    total = permutes = transfers = 0
    try:
        for seed, (mesh, dims, count) in enumerate(MESHES):
            table = random_table(seed, mesh, dims, count)
            if dims[0] == "x1":
                table["reds"].append(WORKED)
            lower.write_table("min-memory-%d" % seed, table,
                              os.path.join(args.workdir, "g.xml"))
            labels = [red[0] for red in table["reds"]]
            np = lower.mesh_size(table)
            r.run([args.dtopt, "opt", "-p", "lower-redistribute",
                   "--redistribute=min-memory", "g.xml", "-o", "low.{rank}.xml"])
            with open(os.path.join(args.workdir, "low.0.xml")) as f:
                text = f.read()
            permutes += text.count('target="dt.all_permute"')
            transfers += text.count('target="dt.all_to_all_v"')
            r.run([args.dtopt, "opt", "-p", "lower-redistribute",
                   "--redistribute=min-memory", "g.xml", "-o", "spmd.xml"])
            for local in ("low.{rank}.xml", "spmd.xml"):
                out, _ = r.run([args.dtopt, "run", "--backend", "mpi",
                                "--check", "--reference", "g.xml", local],
                               np=np)
                # a redistribution that changes nothing but size-1 mesh
                # dims leaves its input: the output is x_LABEL
                table = {k[2:] if k.startswith("x_") else k: v
                         for k, v in lower.results(out).items()}
                if sorted(table) != sorted(labels) or \
                        set(table.values()) != {"bitwise"}:
                    raise lower.Failure("%s: expected %d bitwise outputs:\n%s"
                                        % (local, len(labels), out))
            total += len(labels)
        peaks = measured_peaks(r, args.dtopt)
    except lower.Failure as e:
        print("FAIL (mesh %s): %s" % (mesh, e))
        return 1
    # The worked case holds 6 elements (24 B) per rank throughout; DTensor's
    # plan gathers 72 (288 B) and copies them once more.
    want = {"min-memory": (24, 72, 24), "dtensor": (288, 600, 288)}
    print("worked case, rank 0's (largest tensor, values at peak, "
          "collective buffers at peak) in bytes: %s" % peaks)
    if peaks != want:
        print("FAIL: expected %s" % want)
        return 1
    print("%d redistributions bitwise equal, %d all_permute and %d "
          "all_to_all_v steps on rank 0" % (total, permutes, transfers))
    if total < 500 or permutes == 0 or transfers == 0:
        print("FAIL: expected at least 500 redistributions, some all_permute "
              "and some all_to_all_v")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

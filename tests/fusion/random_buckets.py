#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""random_buckets.py: random graphs of independent and dependent
collectives, bucketed, scheduled and executed.

usage: random_buckets.py --dtopt DTOPT [--mpirun MPIRUN] [--workdir DIR]
                         [--count N] [--seed S] [--jobs J] [--per-run K]
                         [--generate-only]

Writes N (default 200) seeded local-view graphs, each on a random mesh of
1 or 2 dims (2 to 8 ranks) with its single-dim groups and sometimes the
flattened one, holding 4 to 14 collectives of mixed kinds (all_gather,
all_reduce, reduce_scatter), groups, dtypes (float32, bfloat16, float64,
int64) and reduce ops (sum, avg, max, min). A collective reads a fresh
placeholder (independent), a transposed one (a strided input the bucket
must copy), or a value computed from an earlier collective's result (a
dependence: bucketing it with that one would make the merged collective
wait for itself), and its wait comes at once or a few nodes later; compute
nodes read results in between. Every graph also holds a set of 2 to 9
all_reduce max collectives of int32 on placeholders (a key of their own),
whose bucket count the greedy rule fixes; in half the graphs they all read
the result of a scalar all_reduce max of int32 before them (DP's gradients
reading the all-reduced loss): its bucket is closed once they come, so it
stays alone and they still bucket greedily.

Each graph goes through `dtopt opt -p bucket-collectives,
schedule-collectives,cancel-views,dce --remarks` with a random
--bucket-bytes (small, to split buckets, or the default) and
--overlap-bytes (small, to hold moves back, or the default); the result
must verify, and `mpirun dtopt run --compare BEFORE AFTER` must pass
(outputs bitwise, or close for reductions whose order MPI chooses by
message size). The test also fails when
  * the remarks do not account for every collective exactly once (a
    "bucketed N" remark per bucket, a "not bucketed" remark per other);
  * the int32 set does not end in as many collectives as greedy first-fit
    in graph order gives for the bucket size (a pass that buckets nothing,
    or too much, fails here); in the 40% of graphs optimised for a slow
    link (--bandwidth 0.01: a member's bytes cost more than a launch, so
    the cost model cuts buckets, semantics §4.7) at least as many and at
    most one per collective.
Comparisons are batched side by side as in random_chains.py (up to
--per-run graphs of one mesh shape per mpirun). Exit 0 when every graph
passed."""
import argparse
import collections
import os
import random
import re
import shutil
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import execlib  # noqa: E402
from random_chains import merge  # noqa: E402

AG = "_c10d_functional.all_gather_into_tensor.default"
RS = "_c10d_functional.reduce_scatter_tensor.default"
AR = "_c10d_functional.all_reduce.default"
WAIT = "_c10d_functional.wait_tensor.default"
PASSES = "bucket-collectives,schedule-collectives,cancel-views,dce"
SLOW_LINK = ["--bandwidth", "0.01", "--base-latency", "0.5", "--latency", "0.1"]
SIZES = {"float32": 4, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4}


class Graph:
    def __init__(self, rng):
        self.rng, self.lines, self.outputs, self.n = rng, [], [], 0

    def fresh(self, stem):
        self.n += 1
        return "%s%d" % (stem, self.n)

    def node(self, stem, target, *args):
        name = self.fresh(stem)
        parts = []
        for a in args:
            if isinstance(a, str) and a.startswith("="):
                parts.append('<arg str="%s"/>' % a[1:])
            elif isinstance(a, str):
                parts.append('<arg node="%s"/>' % a)
            elif isinstance(a, float):
                parts.append('<arg float="%r"/>' % a)
            else:
                parts.append('<arg int="%d"/>' % a)
        self.lines.append('  <node name="%s" op="call_function" target="%s">%s</node>'
                          % (name, target, "".join(parts)))
        return name

    def placeholder(self, dtype, shape):
        name = self.fresh("x")
        self.lines.append('  <node name="%s" op="placeholder"><tensor dtype="%s" shape="%s"/>'
                          '</node>' % (name, dtype, " ".join(map(str, shape))))
        return name


def greedy_buckets(sizes, limit):
    """First fit in graph order, at most 4096 members per bucket."""
    count, used, members = 0, None, 0
    for s in sizes:
        if s > limit:
            count += 1
            continue
        if used is None or used + s > limit or members == 4096:
            count, used, members = count + 1, 0, 0
        used += s
        members += 1
    return count


def make_graph(index, seed):
    rng = random.Random("%d:%d" % (seed, index))
    shape = rng.choice([[2], [4], [8], [3], [2, 2], [2, 4], [4, 2], [2, 3]])
    names = rng.sample(["dp", "tp", "fsdp", "cp"], len(shape))
    groups = {n: n for n in names}
    if len(shape) == 2 and rng.random() < 0.5:
        groups["_".join(names)] = " ".join(names)
    gsize = {g: 1 for g in groups}
    for g, dims in groups.items():
        for d in dims.split():
            gsize[g] *= shape[names.index(d)]
    g = Graph(rng)
    results = []  # (name, dtype, shape) of wait results, for dependences
    pending = []  # waits still to emit: (wait name args)
    bucket = rng.choice([None, None, 64, 256, 1024, 4096])
    overlap = rng.choice([None, None, 256, 2048])
    ncoll = rng.randint(4, 14)
    for _ in range(ncoll):
        kind = rng.choice(["ag", "ar", "ar", "rs"])
        group = rng.choice(sorted(groups))
        n = gsize[group]
        dtype = rng.choice(["float32", "float32", "bfloat16", "float64", "int64"])
        op = rng.choice(["sum", "sum", "avg", "max", "min"])
        if dtype == "int64" and op == "avg":
            op = "sum"
        rows = n * rng.randint(1, 3) if kind == "rs" else rng.randint(1, 4)
        tshape = [rows, rng.randint(1, 5)]
        how = rng.random()
        same = [r for r in results if r[1] == dtype]
        if how < 0.25 and same:
            # A dependence: scale a placeholder by a sum of a result.
            dep = rng.choice(same)
            s = g.node("s", "aten.sum.default", dep[0])
            x = g.node("d", "aten.mul.Tensor", g.placeholder(dtype, tshape), s)
        elif how < 0.4:
            x = g.node("t", "aten.t.default", g.placeholder(dtype, list(reversed(tshape))))
        else:
            x = g.placeholder(dtype, tshape)
        if kind == "ag":
            c = g.node("ag", AG, x, n, "=" + group)
            out = [rows * n, tshape[1]]
        elif kind == "ar":
            c = g.node("ar", AR, x, "=" + op, "=" + group)
            out = tshape
        else:
            c = g.node("rs", RS, x, "=" + op, n, "=" + group)
            out = [rows // n, tshape[1]]
        pending.append((c, dtype, out))
        # Emit some pending waits now (at once, or a few nodes later).
        while pending and rng.random() < 0.6:
            c0, dt0, out0 = pending.pop(0)
            w = g.node("w", WAIT, c0)
            results.append((w, dt0, out0))
            g.outputs.append(w)
            if rng.random() < 0.3:
                g.outputs.append(g.node("u", "aten.mul.Tensor", w, 2.0))
    for c0, dt0, out0 in pending:
        w = g.node("w", WAIT, c0)
        g.outputs.append(w)
    # The int32 set: independent all_reduce max on one group, perhaps all
    # reading a scalar all_reduce max of the same key.
    group = rng.choice(sorted(groups))
    sizes, head = [], None
    if rng.random() < 0.5:
        c = g.node("arh", AR, g.placeholder("int32", []), "=max", "=" + group)
        head = g.node("wh", WAIT, c)
        g.outputs.append(head)
    for _ in range(rng.randint(2, 9)):
        shp = [rng.randint(1, 6), rng.randint(1, 6)]
        x = g.placeholder("int32", shp)
        if head:
            x = g.node("h", "aten.add.Tensor", x, head)
        c = g.node("ari", AR, x, "=max", "=" + group)
        g.outputs.append(g.node("wi", WAIT, c))
        sizes.append(shp[0] * shp[1] * 4)
    want_int = greedy_buckets(sizes, bucket or 25 << 20) + (1 if head else 0)
    max_int = len(sizes) + (1 if head else 0)
    group_xml = "".join('  <group name="%s" mesh="world" dims="%s"/>\n' % kv
                        for kv in sorted(groups.items()))
    text = ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<!-- random_buckets.py graph %d (seed %d) -->\n'
            '<dtopt-graph version="1" name="buckets_%03d" view="local">\n'
            '  <mesh name="world" shape="%s" dims="%s"/>\n%s%s\n'
            '  <node name="output" op="output"><arg nodes="%s"/></node>\n'
            '</dtopt-graph>\n' % (index, seed, index, " ".join(map(str, shape)),
                                  " ".join(names), group_xml, "\n".join(g.lines),
                                  " ".join(g.outputs)))
    flags = []
    if bucket:
        flags += ["--bucket-bytes", str(bucket)]
    if overlap:
        flags += ["--overlap-bytes", str(overlap)]
    if rng.random() < 0.4:
        # A slow link: a member's bytes cost more than a launch, so the
        # cost model cuts buckets (remark overlap) and the int32 set may
        # end in more collectives than greedy packing, never fewer.
        flags += SLOW_LINK
    else:
        max_int = want_int
    return (text, shape, flags, ncoll + len(sizes) + (1 if head else 0),
            (want_int, max_int))


def int_collectives(path):
    """all_reduce nodes of int32 in a graph file."""
    n = 0
    for m in re.finditer(r'<node [^>]*target="%s"[^>]*>(.*?)</node>' % re.escape(AR),
                         open(path).read(), re.S):
        n += 'dtype="int32"' in m.group(1)
    return n


def accounted(remarks):
    """Collectives the bucket-collectives remarks account for."""
    n = 0
    for line in remarks.splitlines():
        m = re.search(r"remark: bucketed (\d+) ", line)
        if m:
            n += int(m.group(1))
        elif re.search(r"remark: \S+ \S+ not bucketed:", line):
            n += 1
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtopt", required=True)
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--workdir")
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--per-run", type=int, default=8)
    ap.add_argument("--generate-only", action="store_true")
    args = ap.parse_args()
    args.dtopt = os.path.abspath(args.dtopt)
    tmp = None
    if args.workdir:
        workdir = args.workdir
        shutil.rmtree(os.path.join(workdir, "graphs"), ignore_errors=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="random_buckets.")
        workdir = tmp.name
    gdir = os.path.join(workdir, "graphs")
    os.makedirs(gdir, exist_ok=True)
    start = time.monotonic()
    stats = collections.Counter()
    before_c, after_c = collections.Counter(), collections.Counter()
    failures, by_mesh = [], collections.OrderedDict()

    def fail(name, what, result=None):
        failures.append(name)
        print("FAIL %s: %s" % (name, what))
        if result is not None:
            print("    " + result.describe().replace("\n", "\n    "))
        sys.stdout.flush()

    for i in range(args.count):
        text, shape, flags, ncoll, want_int = make_graph(i, args.seed)
        name = "buckets_%03d" % i
        before = os.path.join(gdir, name + ".xml")
        after = os.path.join(gdir, name + ".after.xml")
        with open(before, "w") as f:
            f.write(text)
        stats["graphs"] += 1
        ver = execlib.run([args.dtopt, "verify", before])
        if ver.code != 0:
            fail(name, "the generated graph does not verify", ver)
            continue
        opt = execlib.run([args.dtopt, "opt", "-p", PASSES, "--remarks"] + flags
                          + [before, "-o", after])
        if opt.code != 0:
            fail(name, "dtopt opt failed", opt)
            continue
        ver = execlib.run([args.dtopt, "verify", after])
        if ver.code != 0:
            fail(name, "the optimised graph does not verify", ver)
            continue
        if accounted(opt.err) != ncoll:
            fail(name, "the remarks account for %d of %d collectives"
                 % (accounted(opt.err), ncoll), opt)
            continue
        got_int = int_collectives(after)
        if not want_int[0] <= got_int <= want_int[1]:
            fail(name, "the int32 set ended in %d collectives, greedy gives %d%s"
                 % (got_int, want_int[0], "" if want_int[0] == want_int[1]
                    else " (the cost model's cut at most %d)" % want_int[1]), opt)
            continue
        info, got = execlib.GraphInfo(before), execlib.GraphInfo(after)
        before_c.update(info.collectives)
        after_c.update(got.collectives)
        stats["buckets"] += len(re.findall(r"remark: bucketed", opt.err))
        stats["dependent"] += opt.err.count("[bucket-collectives:dependent]")
        stats["cut"] += opt.err.count("[bucket-collectives:overlap]")
        print("opt  %s mesh %s [%s]: collectives %d -> %d" % (
            name, "x".join(map(str, shape)), " ".join(flags), info.ncollectives(),
            got.ncollectives()), flush=True)
        by_mesh.setdefault(tuple(shape), []).append((name, before, after, info))

    runs = []
    for entries in by_mesh.values():
        for k in range(0, len(entries), max(1, args.per_run)):
            runs.append(entries[k:k + max(1, args.per_run)])

    def launch(batch):
        name, before, after, info = batch[0]
        if len(batch) > 1:
            name = "%s..%s" % (batch[0][0], batch[-1][0][8:])
            before, after = (os.path.join(gdir, batch[0][0] + ".merged" + s)
                             for s in (".xml", ".after.xml"))
            prefixes = ["%s_" % e[0][8:] for e in batch]
            merge([e[1] for e in batch], prefixes, before)
            merge([e[2] for e in batch], prefixes, after)
        cmd = execlib.compare_cmd(args.dtopt, args.mpirun, info, before, after)
        return batch, name, execlib.start(cmd)

    def collect(entry, retry=True):
        batch, name, job = entry
        res = execlib.finish(*job)
        results = execlib.compare_results(res.out)
        if res.code != 0 or not results or "MISMATCH" in results:
            if len(batch) > 1 and retry:
                fail(name, "the results differ side by side (rerunning each alone)", res)
                for e in batch:
                    collect(launch([e]), retry=False)
                return
            fail(name, "the results differ", res)
            return
        stats["compared"] += len(batch)
        stats["mpiruns"] += 1
        for k, v in results.items():
            stats["outputs_" + k] += v
        print("run  %s (%d graphs, %d ranks): %s (%.1f s)" % (
            name, len(batch), batch[0][3].ranks, execlib.format_counts(results), res.took),
            flush=True)

    if not args.generate_only:
        pending = []
        for batch in runs:
            while len(pending) >= max(1, args.jobs):
                collect(pending.pop(0))
            pending.append(launch(batch))
        while pending:
            collect(pending.pop(0))

    print()
    print("graphs: %d (seed %d), pipeline %s" % (stats["graphs"], args.seed, PASSES))
    print("collectives before: %s" % execlib.format_counts(before_c))
    print("collectives after:  %s" % execlib.format_counts(after_c))
    print("buckets: %d; kept out as dependent: %d; left alone by the cost model's cut: %d"
          % (stats["buckets"], stats["dependent"], stats["cut"]))
    if not args.generate_only:
        print("comparisons passed: %d of %d graphs in %d mpiruns (outputs %s)" % (
            stats["compared"], stats["graphs"], stats["mpiruns"], " ".join(
                "%s=%d" % (k[8:], v) for k, v in sorted(stats.items())
                if k.startswith("outputs_"))))
    failed = sorted(set(failures))
    print("failures: %d%s" % (len(failed), (" (" + " ".join(failed[:20]) + ")") if failed else ""))
    print("time: %.0f s" % (time.monotonic() - start))
    if failures and tmp:
        keep = tempfile.mkdtemp(prefix="random_buckets_failed.")
        for f in os.listdir(gdir):
            shutil.copy(os.path.join(gdir, f), keep)
        print("graphs kept in %s" % keep)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench_dumps.py: the solver on dtopt's own problems. For every
configuration of the real-model suite (tests/models: a model under a
placement), export its global-view graph, write the sharding problem
`dtopt opt --dump-problem` builds for it (the IOPDDL contest JSON), then
solve each dump twice with `dtopt solve --stats --cpu-time`: a short budget
and a long one. Prints a markdown table: configuration, nodes and edges,
the cost after the short budget, the best cost after the long one, the
proven lower bound (or "-"), and the seconds the solver used on each.

usage: bench_dumps.py DTOPT [--dir DIR] [--short S] [--long S]
                      [--config PATTERN]...
DIR keeps the graphs and dumps between runs (default: a temporary folder);
a dump already there is reused. Configurations whose problem is too large
to write (shard-prop's size limit) are listed as such. Needs Debian's
/usr/bin/python3 with python3-torch.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
sys.path[:0] = [os.path.join(ROOT, "tests", "models"), HERE]


def export(model, placement, gm, inputs, path):
    import fx_export
    import models
    shape, dims, pl, outs = models.config_placements(model, placement)
    fx_export.export(gm, inputs, mesh_shape=shape, mesh_dims=dims,
                     placements=pl, output_placements=outs, path=path,
                     name=model + "_" + placement)


def dump(a, work, model, placement, traced):
    """The problem file of model/placement, or (None, reason)."""
    out = os.path.join(work, "%s_%s.json" % (model, placement))
    if os.path.exists(out):
        return out, ""
    g = os.path.join(work, "%s_%s.xml" % (model, placement))
    if not os.path.exists(g):
        if model not in traced:
            import models
            traced[model] = models.trace(model)
        export(model, placement, *traced[model], g)
    p = subprocess.run([a.dtopt, "opt", g, "-o", os.devnull,
                        "--dump-problem=" + out], capture_output=True,
                       text=True)
    if p.returncode != 0:
        lines = (p.stderr or p.stdout).strip().splitlines()
        return None, lines[0] if lines else "dtopt opt failed"
    return out, ""


STAT = re.compile(r"^# (cost|lower bound|time)[: ]+(\S+)")


def solve(a, path, budget):
    p = subprocess.run(["nice", a.dtopt, "solve", "-q", "--stats",
                        "--cpu-time", path, str(budget)],
                       capture_output=True, text=True)
    stats = {}
    for line in p.stdout.splitlines():
        m = STAT.match(line)
        if m:
            stats[m.group(1)] = m.group(2)
    if p.returncode != 0 or "cost" not in stats:
        sys.exit("bench_dumps.py: dtopt solve %s failed:\n%s" %
                 (path, p.stderr))
    return stats


def size(path):
    import json
    with open(path) as f:
        pr = json.load(f)["problem"]
    return len(pr["nodes"]["costs"]), len(pr["edges"]["nodes"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dtopt")
    ap.add_argument("--dir")
    ap.add_argument("--short", type=float, default=0.5)
    ap.add_argument("--long", type=float, default=10)
    ap.add_argument("--config", action="append", default=[],
                    metavar="PATTERN")
    a = ap.parse_args()
    a.dtopt = os.path.abspath(a.dtopt)
    import models
    tmp = None
    if not a.dir:
        tmp = tempfile.TemporaryDirectory(prefix="dtopt-dumps.")
        a.dir = tmp.name
    os.makedirs(a.dir, exist_ok=True)
    print("| config | nodes | edges | cost %gs | best %gs | lower bound "
          "| s (short, long) |" % (a.short, a.long))
    print("| --- | --- | --- | --- | --- | --- | --- |")
    traced = {}
    for model, placement in models.CONFIGS:
        cfg = "%s/%s" % (model, placement)
        if a.config and not any(p in (model, placement, cfg)
                                for p in a.config):
            continue
        path, why = dump(a, a.dir, model, placement, traced)
        if path is None:
            print("| %s | - | - | %s | | | |" % (cfg, why.replace("|", "/")))
            continue
        n, e = size(path)
        s = solve(a, path, a.short)
        lg = solve(a, path, a.long)
        lb = max((x.get("lower bound", "-") for x in (s, lg)),
                 key=lambda v: int(v) if v.lstrip("-").isdigit() else -1)
        print("| %s | %d | %d | %s | %s | %s | %s, %s |" % (
            cfg, n, e, s["cost"], lg["cost"], lb, s.get("time", "?"),
            lg.get("time", "?")), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

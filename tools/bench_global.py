#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench_global.py: the whole-graph search's size and speed on the real-model
suite (tests/models: GPT-2, Llama, MLP+SGD, Mixer under dp, fsdp, tp, dp_tp,
fsdp_tp, naive and 3d = dp x fsdp x tp on 2x2x2). For every configuration:

  problem  dtopt opt G --search=greedy --dump-problem=P: the problem's nodes,
           strategies and edge matrix entries (counted from P)
  global   dtopt opt G -o OUT --create-groups --search=global --report=json
           --time-passes, REPEATS times: median CPU time (user + system,
           dtopt's whole run: load, build, solve, lowering; the search runs
           on two threads) and median wall time, of which the whole-graph
           problem's build and solve (wall, the first plan's: where it does
           not fit a budget, opt plans again, `opt:replan`, and those runs
           are in the total only), and the plan's collectives, bytes and
           modelled µs
  greedy   the same with --search=greedy, once (its plan, its CPU time)

--budget FILE ('model/placement BYTES' lines, as run_models.py
--write-budgets writes the expert plans' peaks) gives the configurations
it lists --memory-budget=BYTES (both searches; column `budget`).

and prints a markdown table. Graphs are exported from the models with torch
(Debian's /usr/bin/python3 with python3-torch) into WORKDIR, or read from
--graphs DIR (files MODEL_PLACEMENT.xml, as run_models.py's export names
them). Use a release build on a quiet machine; CPU times, medians.

usage: bench_global.py DTOPT [--config PATTERN]... [--repeats N]
                       [--workdir W] [--graphs DIR] [--budget FILE]
PATTERN: a model (gpt2), a placement (3d) or model_placement (gpt2_3d);
with --graphs, a name's start or end."""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "tests", "models")


def export_all(workdir, patterns):
    """Export every configuration matching `patterns` into workdir; returns
    the configuration names (model_placement) written."""
    sys.path[:0] = [MODELS, HERE, os.path.join(HERE, "..", "tests", "runtime")]
    import fx_export
    import models
    names, traced = [], {}
    for model, placement in models.CONFIGS:
        name = "%s_%s" % (model, placement)
        if patterns and not any(p in (model, placement, name)
                                for p in patterns):
            continue
        g = os.path.join(workdir, name + ".xml")
        if not os.path.exists(g):
            if model not in traced:
                gm, inputs = models.trace(model)
                for n in gm.graph.nodes:
                    if n.name in models.input_max(model):
                        n.meta["dtopt.input_max"] = str(
                            models.input_max(model)[n.name])
                traced[model] = (gm, inputs)
            shape, dims, pl, outs = models.config_placements(model,
                                                             placement)
            fx_export.export(*traced[model], mesh_shape=shape,
                             mesh_dims=dims, placements=pl,
                             output_placements=outs, path=g, name=name)
        names.append(name)
    return names


def timed(cmd):
    """(CPU seconds of the child, returncode, output, wall seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime -
                                                 before.ru_stime)
    return cpu, p.returncode, p.stdout + p.stderr, wall


def read_budgets(path):
    """{model_placement: bytes} of 'model/placement BYTES' lines."""
    budgets = {}
    with open(path) as f:
        for ln in f:
            if ln.strip() and not ln.startswith("#"):
                cfg, b = ln.split()
                budgets[cfg.replace("/", "_")] = int(b)
    return budgets


def plan(out):
    """(collectives, bytes, modelled µs) of a --report=json output."""
    for ln in out.splitlines():
        if ln.startswith('{"rows"'):
            rep = json.loads(ln)
            return (sum(r["count_after"] for r in rep["rows"]),
                    rep["total"]["bytes_after"],
                    rep["total"]["time_us_after"])
    return None


def phases(out):
    """(build, solve) seconds of --time-passes output."""
    total = {}
    for m in re.finditer(r"^\s*([0-9.]+)\s+[0-9.]+%\s+whole-graph (problem "
                         r"build|solve)$", out, re.M):
        total[m.group(2)] = total.get(m.group(2), 0) + float(m.group(1))
    return total.get("problem build", 0), total.get("solve", 0)


def problem_size(dtopt, g, work):
    """(nodes, strategies, edge matrix entries) of g's global problem."""
    path = os.path.join(work, "problem.json")
    _, rc, out, _ = timed([dtopt, "opt", g, "-o", os.devnull,
                           "--search=greedy", "--dump-problem=" + path])
    if rc != 0:
        return None
    with open(path) as f:
        pr = json.load(f)["problem"]
    os.remove(path)
    costs = pr["nodes"]["costs"]
    return (len(costs), sum(len(c) for c in costs),
            sum(len(c) for c in pr["edges"]["costs"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dtopt")
    ap.add_argument("--config", action="append", default=[],
                    metavar="PATTERN")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workdir")
    ap.add_argument("--graphs", metavar="DIR")
    ap.add_argument("--budget", metavar="FILE")
    a = ap.parse_args()
    budgets = read_budgets(a.budget) if a.budget else {}
    tmp = None
    if not a.workdir:
        tmp = tempfile.TemporaryDirectory(prefix="dtopt-bench-global.")
        a.workdir = tmp.name
    os.makedirs(a.workdir, exist_ok=True)
    if a.graphs:
        names = sorted(f[:-4] for f in os.listdir(a.graphs)
                       if f.endswith(".xml") and (not a.config or any(
                           f[:-4] == p or f.startswith(p + "_") or
                           f[:-4].endswith("_" + p) for p in a.config)))
        gdir = a.graphs
    else:
        names = export_all(a.workdir, a.config)
        gdir = a.workdir
    print("| config | budget | nodes | strategies | edge entries | global CPU "
          "s (median of %d) | global wall s | build s | solve s | global: "
          "coll, bytes, µs | greedy CPU s | greedy: coll, bytes, µs | fell "
          "back |" % a.repeats)
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- "
          "| ---: | --- | --- |")
    for name in names:
        g = os.path.join(gdir, name + ".xml")
        out_xml = os.path.join(a.workdir, "out.xml")
        size = problem_size(a.dtopt, g, a.workdir)
        base = [a.dtopt, "opt", g, "-o", out_xml, "--create-groups",
                "--report=json"]
        if name in budgets:
            base.append("--memory-budget=%d" % budgets[name])
        runs = [timed(base + ["--search=global", "--time-passes"])
                for _ in range(a.repeats)]
        cpu = statistics.median(r[0] for r in runs)
        wall = statistics.median(r[3] for r in runs)
        build = statistics.median(phases(r[2])[0] for r in runs)
        solve = statistics.median(phases(r[2])[1] for r in runs)
        rc, out = runs[0][1], runs[0][2]
        gcpu, grc, gout, _ = timed(base + ["--search=greedy"])
        fell = "yes" if re.search(r"too-large|no-plan", out) else "no"
        cell = (lambda p: "%d, %d, %.1f" % p if p else "error")
        sizes = ["%d" % x for x in size] if size else ["-"] * 3
        print("| %s | %s | %s | %s | %s | %.2f | %.2f | %.2f | %.2f | %s | "
              "%.2f | %s | %s |"
              % (name, budgets.get(name, "-"), *sizes, cpu, wall, build,
                 solve, cell(plan(out) if rc == 0 else None), gcpu,
                 cell(plan(gout) if grc == 0 else None), fell), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

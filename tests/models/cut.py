#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""cut.py: the smallest graph of a configuration that gives wrong numbers.
For a configuration of run_models.py whose `dtopt run --check` mismatches,
each probe is the traced graph returning one node (what it depends on, and
all results of multi-result nodes, kept), exported with the configuration's
placements and run under mpirun with `dtopt run --check`. A bisection over
the nodes in graph order finds a mismatching one; then the first of its
ancestors that mismatches is taken, so every node the cut depends on
checks. The cut is written and its code printed.

usage: cut.py DTOPT MODEL/PLACEMENT [--mpirun M] [-o CUT.xml]
Needs Debian's /usr/bin/python3 with python3-torch.
"""
import argparse
import copy
import operator
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "tools")]

import fx_export  # noqa: E402
import models  # noqa: E402


def prefix(gm, inputs, name):
    """(graph module returning node `name` alone, its inputs): the node, what
    it depends on, and every getitem of a kept node (a multi-result node
    keeps all its results, as make_fx writes it)."""
    gm = copy.deepcopy(gm)
    nodes = {n.name: n for n in gm.graph.nodes}
    phs = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    (out,) = [n for n in gm.graph.nodes if n.op == "output"]
    out.args = ((nodes[name],),)
    keep, todo = {out}, [out]
    while todo:
        for n in todo.pop().all_input_nodes:
            if n not in keep:
                keep.add(n)
                todo.append(n)
    keep |= {n for n in gm.graph.nodes
             if n.target is operator.getitem and n.args[0] in keep}
    for n in reversed(list(gm.graph.nodes)):
        if n not in keep:
            gm.graph.erase_node(n)
    gm.recompile()
    kept = {n.name for n in gm.graph.nodes if n.op == "placeholder"}
    return gm, [t for t, p in zip(inputs, phs) if p in kept]


def checks(opts, gm, inputs, config, path):
    """True when `dtopt run --check` of gm's export matches; exits on any
    other failure."""
    model, placement = config.split("/")
    shape, dims, pl, _ = models.config_placements(model, placement)
    kept = {n.name for n in gm.graph.nodes if n.op == "placeholder"}
    fx_export.export(gm, inputs, mesh_shape=shape, mesh_dims=dims,
                     placements={k: v for k, v in pl.items() if k in kept},
                     path=path)
    nranks = 1
    for s in shape:
        nranks *= s
    p = subprocess.run([opts.mpirun, "--allow-run-as-root", "--oversubscribe",
                        "-np", str(nranks), opts.dtopt, "run", "--backend",
                        "mpi", "--check", path], capture_output=True,
                       text=True)
    if "check: ok" in p.stdout:
        return True
    if "check: MISMATCH" in p.stdout:
        return False
    sys.exit("cut.py: %s does not run:\n%s" % (path, p.stdout + p.stderr))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dtopt")
    ap.add_argument("config", help="MODEL/PLACEMENT, e.g. mixer/dp")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("-o", "--output", default="cut.xml")
    opts = ap.parse_args()
    model, _, placement = opts.config.partition("/")
    if (model, placement) not in models.CONFIGS:
        ap.error("no configuration %r (models: %s; placements: %s)" % (
            opts.config, " ".join(models.MODELS), " ".join(models.PLACEMENTS)))
    gm, inputs = models.trace(model)
    cands = [n.name for n in gm.graph.nodes if n.op == "call_function"
             and hasattr(n.meta.get("tensor_meta"), "shape")]
    with tempfile.TemporaryDirectory(prefix="dtopt-cut.") as tmp:
        probe = os.path.join(tmp, "probe.xml")
        if checks(opts, gm, inputs, opts.config, probe):
            print("%s checks: nothing to cut" % opts.config)
            return 0
        if checks(opts, *prefix(gm, inputs, cands[-1]), opts.config, probe):
            print("%s: the last node alone checks; cut by hand" % opts.config)
            return 1
        lo, hi = 0, len(cands) - 1  # cands[hi] mismatches
        while lo < hi:
            mid = (lo + hi) // 2
            if checks(opts, *prefix(gm, inputs, cands[mid]), opts.config,
                      probe):
                lo = mid + 1
            else:
                hi = mid
        # The bisection's node may depend on an earlier mismatching one it
        # did not probe: take the first of its ancestors that mismatches,
        # whose own ancestors (earlier in graph order) all check.
        ancestors = {n.name for n in prefix(gm, inputs, cands[hi])[0]
                     .graph.nodes}
        hi = next(i for i, c in enumerate(cands[:hi + 1])
                  if c in ancestors and (i == hi or not checks(
                      opts, *prefix(gm, inputs, c), opts.config, probe)))
    cut, cut_inputs = prefix(gm, inputs, cands[hi])
    checks(opts, cut, cut_inputs, opts.config, opts.output)
    print("first mismatching node: %s (%d nodes); written to %s"
          % (cands[hi], len(cut.graph.nodes), opts.output))
    print(cut.code)
    return 0


if __name__ == "__main__":
    sys.exit(main())

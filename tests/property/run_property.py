#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""run_property.py: the random global-graph property test.

For each mesh shape, gen_graphs.py writes --per-mesh random global-view
graphs into one file and one `mpirun -np WORLD dtopt run --check FILE`
lowers it for every rank (the default global pipeline: shard-prop,
lower-redistribute, fusion) and compares every output with the single-rank
run of the global graph; `run --check --spmd FILE` does the same with the
one SPMD program of every rank (uneven shards padded). The property: every
graph checks both ways. A failing file
is split graph by graph to name the failures; each failing graph is kept
as WORKDIR/fail-SEED-MESH-gI.xml with the command that reproduces it, and
the run exits 1. The regression graphs under regress/ (make_fx traces that
gave wrong numbers, crashed or hung, a plan the property test found) run
the same way, their lowered programs (`dtopt opt -o OUT`: one SPMD program,
or one per rank where that is refused) run with `--check --reference`,
those named *.spmd.xml must lower to one SPMD program, and those named
*.nocomm.xml to a program without collectives.

    usage: run_property.py --dtopt DTOPT --mpirun MPIRUN --workdir DIR
                           [--seed S] [--per-mesh N] [--mesh 2x2 ...]
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_graphs  # noqa: E402

# 1-D to 3-D, sizes 1 to 4, at most 8 ranks.
MESHES = ["2", "3", "4", "1x3", "2x2", "2x3", "4x2", "1x2x2", "2x2x2",
          "2x1x4"]


def world(mesh):
    n = 1
    for s in mesh.split("x"):
        n *= int(s)
    return n


def check(args, path, np, spmd=False):
    """(ok, output) of one `dtopt run --check` (spmd: `--check --spmd`, the
    one SPMD program of every rank)."""
    cmd = [args.mpirun, "--allow-run-as-root", "--oversubscribe", "-np",
           str(np), args.dtopt, "run", "--backend", "mpi", "--check", path]
    p = subprocess.run(cmd + ["--spmd"] * spmd, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    return p.returncode == 0 and "check: ok" in p.stdout, p.stdout


def check_both(args, path, np):
    """(ok, output, the failing command's flags): per-rank, then SPMD."""
    for spmd in (False, True):
        ok, out = check(args, path, np, spmd)
        if not ok:
            return False, out, " --spmd" * spmd
    return True, out, ""


def one_file(args, mesh, first, count, path):
    with open(path, "w") as f:
        f.write(gen_graphs.write(
            [gen_graphs.graph(args.seed, gen_graphs.parse_mesh(mesh), i)
             for i in range(first, first + count)],
            gen_graphs.parse_mesh(mesh),
            "property_%d_%s_%d" % (args.seed, mesh, first)))


def errors_of(out):
    lines = [l for l in out.splitlines()
             if " error: " in l or "MISMATCH" in l]
    return "\n".join(lines[:3]) or out[-800:]


def run_mesh(args, mesh):
    """Number of failing graphs on `mesh` (each reported)."""
    np = world(mesh)
    path = os.path.join(args.workdir, "batch-%d-%s.xml" % (args.seed, mesh))
    one_file(args, mesh, 0, args.per_mesh, path)
    ok, out, _ = check_both(args, path, np)
    if ok:
        os.remove(path)
        return 0
    failures = 0
    for i in range(args.per_mesh):
        single = os.path.join(args.workdir,
                              "fail-%d-%s-g%d.xml" % (args.seed, mesh, i))
        one_file(args, mesh, i, 1, single)
        ok, out, flags = check_both(args, single, np)
        if ok:
            os.remove(single)
            continue
        failures += 1
        print("FAIL seed %d mesh %s graph %d: %s\n  kept %s\n  reproduce: "
              "mpirun -np %d dtopt run --check %s%s\n  regenerate: "
              "gen_graphs.py --seed %d --mesh %s --first %d --count 1"
              % (args.seed, mesh, i, errors_of(out), single, np, single,
                 flags, args.seed, mesh, i))
    if failures == 0:
        print("FAIL seed %d mesh %s: the batch fails but no graph alone "
              "does (kept %s):\n%s" % (args.seed, mesh, path, errors_of(out)))
        failures = 1
    return failures


def run_regress(args):
    failures = 0
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          "regress")
    for name in sorted(n for n in os.listdir(folder) if n.endswith(".xml")):
        path = os.path.join(folder, name)
        with open(path) as f:
            m = re.search(r'<mesh [^>]*shape="([0-9 ]+)"', f.read())
        np = world("x".join(m.group(1).split()))
        ok, out = check(args, path, np)
        if ok:
            ok, out = check_spmd(args, path, np, ".spmd." in name)
        if not ok:
            failures += 1
            print("FAIL regression %s:\n%s" % (path, errors_of(out)))
        if ".nocomm." in name:
            failures += has_collectives(args, path)
    return failures


def has_collectives(args, path):
    """1 (reported) when the program of a *.nocomm.xml graph communicates:
    per-head attention under tp needs no collective (semantics §6.1)."""
    p = subprocess.run([args.dtopt, "opt", path, "-o", "-"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    found = re.findall(r'target="(_c10d_functional\.[a-z_]+)', p.stdout)
    if p.returncode == 0 and not found:
        return 0
    print("FAIL regression %s: the program should need no collective, "
          "it has %s" % (path, ", ".join(sorted(set(found))) or
                         p.stdout[-400:]))
    return 1


def check_spmd(args, path, np, one_program):
    """(ok, output): `dtopt opt PATH -o OUT --create-groups` (the one SPMD
    program; where it is refused with `error:`, e.g. for uneven shards, and
    one_program is false, one program per rank: -o 'OUT.{rank}.xml'), then
    `dtopt run --check --reference PATH OUT`: the fused programs `run
    --check` does not make."""
    base = os.path.join(args.workdir, "spmd-" + os.path.basename(path))
    for out_path in (base,) if one_program else (base, base + ".{rank}.xml"):
        p = subprocess.run([args.dtopt, "opt", path, "-o", out_path,
                            "--create-groups"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True)
        if p.returncode != 1 or " error: " not in p.stdout:
            break
    if p.returncode != 0:
        return False, p.stdout
    cmd = [args.mpirun, "--allow-run-as-root", "--oversubscribe", "-np",
           str(np), args.dtopt, "run", "--backend", "mpi", "--check",
           "--reference", path, out_path]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    return p.returncode == 0 and "check: ok" in p.stdout, p.stdout


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dtopt", required=True)
    p.add_argument("--mpirun", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--per-mesh", type=int, default=32)
    p.add_argument("--mesh", action="append")
    a = p.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    meshes = a.mesh or MESHES
    failures = run_regress(a)
    for mesh in meshes:
        failures += run_mesh(a, mesh)
    total = a.per_mesh * len(meshes)
    print("property: %d random graphs (seed %d, %d meshes), %d failing"
          % (total, a.seed, len(meshes), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

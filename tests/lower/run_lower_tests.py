#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""run_lower_tests.py: execution proofs of the lower-redistribute pass.

usage: run_lower_tests.py --dtopt DTOPT --mpirun MPIRUN --workdir DIR CASE
       run_lower_tests.py --write DIR        (writes every case's graph)

A table case writes one global-view graph of many redistributions (a
placeholder with the source placements, a dtensor.redistribute to the target,
every result an output) and then:
  1. lowers it for rank 0 (dtopt opt -p lower-redistribute --rank 0) and
     counts the collectives each redistribution became (emitted nodes are
     named after it: "r", "r.all_gather", ...) against the expected counts
     (DTensor's, semantics §3 and §4.4), and the warnings expected;
  2. lowers it for every rank (-o 'low.{rank}.xml') and runs
     mpirun -np N dtopt run --backend mpi --check --reference G 'low.{rank}.xml';
  3. runs mpirun -np N dtopt run --backend mpi --check G (each rank lowers
     for itself with fuse-collectives, cancel-views and dce after);
  4. lowers it for every rank at once (no --rank: one SPMD program,
     semantics §7, uneven shards padded), asserts it has no rank= and the
     collectives of the per-rank graph, and runs
     mpirun -np N dtopt run --backend mpi --check --reference G spmd.xml
     and mpirun -np N dtopt run --backend mpi --check --spmd G.
The runs must pass on every output: bitwise for data movement, close for
outputs that went through a reduction (Partial sources or targets).
An end-to-end case (an MLP with tensor parallelism, FSDP + TP, an uneven
MLP; graphs written by hand beside this script) runs
dtopt opt -p lower-redistribute,fuse-collectives,cancel-views,dce to per-rank
graphs and checks them the same two ways, counting their collectives, and
as one SPMD graph (step 4).

Cases: one-dim zero-size table-2d table-3d merge-4x2 merge-2x2x2 uneven-2x3
uneven-3x2 uneven-5x3 order partial transposed-4 transposed-2x2
transposed-2x2x2 (sources that are permuted views) mlp-2x2 mlp-2x4 fsdp-2x2 fsdp-2x4 mlp-uneven-2x2
compare-padding (run --compare of SPMD programs that differ only in padding)
random (ten seeded tables of random placements, shard orders and uneven
shapes on 1-D to 3-D meshes, each lowered to one SPMD program and checked).
Exit 0 when the case passed, 1 otherwise."""
import argparse
import os
import random
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
LIMIT = 120
AG, RS, AR, A2A = "all_gather", "reduce_scatter", "all_reduce", "all_to_all"
TARGET_KIND = {
    "_c10d_functional.all_gather_into_tensor.default": AG,
    "_c10d_functional.reduce_scatter_tensor.default": RS,
    "_c10d_functional.all_reduce.default": AR,
    "_c10d_functional.all_to_all_single.default": A2A,
}


class Failure(Exception):
    pass


# ---------------------------------------------------------------------------
# The cases. A redistribution is (label, shape, src, dst, expected counts)
# with optional "src_order"/"dst_order"/"dtype" in a trailing dict; counts
# are {kind: n} (every other kind 0).

def one_dim():
    """World of 4: each basic step on 12, 13 and 14 rows (even, uneven,
    uneven with an empty rank)."""
    reds = []
    for rows in (12, 13, 14):
        s = (rows, 6)
        reds += [
            ("s0_r_%d" % rows, s, "S(0)", "R", {AG: 1}),
            ("s1_r_%d" % rows, s, "S(1)", "R", {AG: 1}),
            ("r_s0_%d" % rows, s, "R", "S(0)", {}),
            ("r_s1_%d" % rows, s, "R", "S(1)", {}),
            ("psum_r_%d" % rows, s, "P(sum)", "R", {AR: 1}),
            ("psum_s0_%d" % rows, s, "P(sum)", "S(0)", {RS: 1}),
            ("psum_s1_%d" % rows, s, "P(sum)", "S(1)", {RS: 1}),
            ("s0_s1_%d" % rows, s, "S(0)", "S(1)", {A2A: 1}),
            ("s1_s0_%d" % rows, s, "S(1)", "S(0)", {A2A: 1}),
            ("r_psum_%d" % rows, s, "R", "P(sum)", {}),
        ]
    return {"mesh": [4], "dims": ["w"], "reds": reds}


def zero_size():
    """2 rows on 4 ranks: ranks 2 and 3 hold nothing."""
    s = (2, 8)
    return {"mesh": [4], "dims": ["w"], "reds": [
        ("z_s0_r", s, "S(0)", "R", {AG: 1}),
        ("z_r_s0", s, "R", "S(0)", {}),
        ("z_psum_s0", s, "P(sum)", "S(0)", {RS: 1}),
        ("z_s0_s1", s, "S(0)", "S(1)", {A2A: 1}),
        ("z_s1_s0", (8, 2), "S(1)", "S(0)", {A2A: 1}),
        ("z_empty", (0, 8), "S(0)", "R", {AG: 1}),
    ]}


def table_3d():
    """Semantics §3's counts on mesh (2,2,2), tensor (8,8,8)."""
    s = (8, 8, 8)
    rows = [("S(0) S(0) S(0)", "S(1) S(1) S(1)", 3),
            ("S(0) S(1) S(0)", "S(1) S(0) S(0)", 3),
            ("S(0) S(1) S(2)", "S(2) S(1) S(0)", 2),
            ("S(1) S(0) S(0)", "R S(0) S(0)", 1),
            ("S(1) R S(0)", "R S(0) S(0)", 2),
            ("S(0) S(0) S(1)", "S(0) S(1) S(2)", 2)]
    return {"mesh": [2, 2, 2], "dims": ["A", "B", "C"],
            "warn": ["redistribute:no_group"], "reds": [
        ("t3_%d" % i, s, a, b, {"total": n}) for i, (a, b, n) in enumerate(rows)]}


def table_2d():
    """Semantics §3's counts on mesh (2,2) (S1S1->S1S2 on a 3-D tensor)."""
    return {"mesh": [2, 2], "dims": ["A", "B"], "reds": [
        ("t2_0", (8, 8), "S(0) S(1)", "S(0) S(0)", {"total": 1}),
        ("t2_1", (8, 8), "S(0) S(1)", "S(1) S(0)", {"total": 2}),
        ("t2_2", (8, 8), "S(0) S(0)", "S(1) S(1)", {"total": 2}),
        ("t2_3", (8, 8, 8), "S(1) S(1)", "S(1) S(2)", {"total": 1}),
    ]}


def merge_4x2():
    """Semantics §4.4 on mesh (4,2) A,B with group "A B" declared."""
    s = (8, 8)
    return {"mesh": [4, 2], "dims": ["A", "B"], "groups": [["A", "B"]], "reds": [
        ("m_pp_rr", s, "P(sum) P(sum)", "R R", {AR: 1}),
        ("m_pp_s0s0", s, "P(sum) P(sum)", "S(0) S(0)", {RS: 1}),
        ("m_s0s0_rr", s, "S(0) S(0)", "R R", {AG: 1}),
        ("m_pp_s0s1", s, "P(sum) P(sum)", "S(0) S(1)", {RS: 2}),
        ("m_s0s1_rr", s, "S(0) S(1)", "R R", {AG: 2}),
    ]}


def merge_2x2x2():
    """Semantics §4.4 on mesh (2,2,2) A,B,C with "A B", "A C", "A B C"."""
    s = (8, 8)
    return {"mesh": [2, 2, 2], "dims": ["A", "B", "C"],
            "groups": [["A", "B"], ["A", "C"], ["A", "B", "C"]], "reds": [
        ("m3_ppp_rrr", s, "P(sum) P(sum) P(sum)", "R R R", {AR: 1}),
        ("m3_avg_rrr", s, "P(avg) P(avg) P(sum)", "R R R", {AR: 1}),
        ("m3_pps0", s, "P(sum) P(sum) S(0)", "S(0) S(0) S(0)", {RS: 1, AR: 1, AG: 1}),
        ("m3_ps0p", s, "P(sum) S(0) P(sum)", "R R R", {AR: 2, AG: 1}),
        ("m3_prp", s, "P(sum) R P(sum)", "R R R", {AR: 1}),
        ("m3_ppr", s, "P(sum) P(sum) R", "S(0) S(1) R", {RS: 2}),
        ("m3_ppp_s0s0s1", s, "P(sum) P(sum) P(sum)", "S(0) S(0) S(1)", {RS: 2}),
    ]}


def uneven_2x3():
    """(Psum,Psum)->(S0,S0) of 4 rows on (2,3): per-rank pads and narrows;
    the two reduce-scatters stay separate (uneven) despite group "A B"."""
    return {"mesh": [2, 3], "dims": ["A", "B"], "groups": [["A", "B"]],
            "warn": ["redistribute:uneven"], "reds": [
        ("u_pp_s0s0", (4, 5), "P(sum) P(sum)", "S(0) S(0)", {RS: 2}),
        ("u_s0s0_rr", (4, 5), "S(0) S(0)", "R R", {AG: 2}),
        ("u_s0s1_s1s0", (4, 5), "S(0) S(1)", "S(1) S(0)", {"total": 2}),
    ]}


def uneven_5x3():
    """S0S0->RR of a (5,3) tensor on 2x2 with group "A B": not merged; and
    its reverse, PP->S0S0 and S0S1->S0S0 (nested uneven levels: as one SPMD
    program, padding lies between the members' rows: pack and unpack)."""
    return {"mesh": [2, 2], "dims": ["A", "B"], "groups": [["A", "B"]],
            "warn": ["redistribute:uneven"], "reds": [
        ("u53", (5, 3), "S(0) S(0)", "R R", {AG: 2}),
        ("e83", (8, 3), "S(0) S(0)", "R R", {AG: 1}),
        ("u53_rr_s0s0", (5, 3), "R R", "S(0) S(0)", {}),
        ("u53_pp_s0s0", (5, 3), "P(sum) P(sum)", "S(0) S(0)", {RS: 2}),
        ("u55_s0s1_s0s0", (5, 5), "S(0) S(1)", "S(0) S(0)", None),
        ("u55_s0s0_s0s1", (5, 5), "S(0) S(0)", "S(0) S(1)", None),
    ]}


def uneven_3x2():
    """10 rows on (3,2): 4 4 2 on A, then each piece split in 2 on B, evenly
    within every group of B but not across them (2 and 1 rows): as one SPMD
    program B's pieces are padded to 2 rows, so a gather over B leaves
    padding between the rows of the third group."""
    return {"mesh": [3, 2], "dims": ["A", "B"], "warn": ["redistribute:uneven"],
            "reds": [
        ("u10_s0s0_rr", (10, 4), "S(0) S(0)", "R R", {AG: 2}),
        ("u10_pp_s0s0", (10, 4), "P(sum) P(sum)", "S(0) S(0)", {RS: 2}),
        ("u10_s0s0_s0s1", (10, 4), "S(0) S(0)", "S(0) S(1)", {A2A: 1}),
        ("u10_s0s1_s0s0", (10, 4), "S(0) S(1)", "S(0) S(0)", {A2A: 1}),
    ]}


def order():
    """A non-default shard order and a _S (the min-cost plan)."""
    return {"mesh": [4, 2], "dims": ["A", "B"],
            "warn": ["redistribute:no_group", "redistribute:uneven"], "reds": [
        ("o_rr", (8, 4), "S(0) S(0)", "R R", {AG: 2}, {"src_order": "0:B,A"}),
        ("o_default", (8, 4), "S(0) S(0)", "S(0) S(0)", None,
         {"src_order": "0:B,A"}),
        ("o_to", (8, 4), "R R", "S(0) S(0)", {}, {"dst_order": "0:B,A"}),
        ("o_s1", (8, 4), "S(0) S(0)", "S(1) R", None, {"src_order": "0:B,A"}),
        ("ss_rr", (16, 4), "_S(0,2) S(0)", "R R", {AG: 2}),
        ("ss_rr_12", (12, 4), "_S(0,2) S(0)", "R R", {AG: 2}),
        ("ss_from", (16, 4), "S(0) S(0)", "_S(0,2) S(0)", None),
        ("ss_to_s1", (16, 4), "_S(0,2) S(0)", "S(1) R", None),
    ]}


def partial():
    """Partial inputs of every op, sum with avg, and integers."""
    s = (8, 6)
    return {"mesh": [2, 2], "dims": ["A", "B"], "warn": ["redistribute:no_group"],
            "reds": [
        ("p_avg_r", s, "P(avg) R", "R R", {AR: 1}),
        ("p_max_r", s, "P(max) P(max)", "R R", {AR: 2}),
        ("p_min_s1", s, "P(min) R", "S(1) R", {RS: 1}),
        ("p_sum_avg", s, "P(sum) P(avg)", "R R", {AR: 2}),
        ("p_avg_s0", s, "P(avg) P(avg)", "S(0) S(1)", {RS: 2}),
        ("p_keep", s, "P(sum) R", "P(sum) S(0)", {}),
        ("p_to_avg", s, "R R", "P(avg) P(sum)", {}),
        ("p_int", s, "P(sum) S(0)", "R R", {AR: 1, AG: 1}, {"dtype": "int32"}),
    ]}


def transposed():
    """Sources that are permuted views of a placeholder ("perm": the view is
    aten.permute.default(x, perm)) on 4, 2x2 and 2x2x2: where the view with
    the collective's tensor dim moved first is contiguous (a transposed
    gradient reduce-scattered on its dim 1, a transposed shard gathered on
    its dim 1), the collective runs on that view and its result is viewed
    back ("dim_first": the permutes expected, none of chunk + cat); where
    it is not, or padding made a fresh tensor, chunk + cat as before. The
    2x2x2 rows merge over the group "A B" declared."""
    t = {"perm": [1, 0]}
    def dim_first(n, extra=t):
        return dict(extra, dim_first=n)
    one = [
        ("t_psum_s1", (8, 12), "P(sum)", "S(1)", {RS: 1}, dim_first(2)),
        ("t_psum_s0", (8, 12), "P(sum)", "S(0)", {RS: 1}, dim_first(0)),
        ("t_s1_r", (8, 12), "S(1)", "R", {AG: 1}, dim_first(2)),
        ("t_s0_r", (8, 12), "S(0)", "R", {AG: 1}, dim_first(0)),
        ("t_psum_s1_13", (8, 13), "P(sum)", "S(1)", {RS: 1}, dim_first(0)),
        ("t_s1_r_13", (8, 13), "S(1)", "R", {AG: 1}, t),
        ("p3_psum_s1", (4, 8, 6), "P(sum)", "S(1)", {RS: 1},
         dim_first(2, {"perm": [1, 0, 2]})),
        ("p3_psum_s2", (4, 8, 8), "P(sum)", "S(2)", {RS: 1},
         dim_first(0, {"perm": [1, 0, 2]})),
        ("p3_last_psum_s2", (4, 8, 8), "P(sum)", "S(2)", {RS: 1},
         dim_first(2, {"perm": [1, 2, 0]})),
        ("p3_last_s2_r", (4, 8, 8), "S(2)", "R", {AG: 1},
         dim_first(2, {"perm": [1, 2, 0]})),
    ]
    two = [
        ("t2_pp_s1s1", (8, 8), "P(sum) P(sum)", "S(1) S(1)", {RS: 2}, t),
        ("t2_s1s1_rr", (8, 8), "S(1) S(1)", "R R", {AG: 2}, t),
        ("t2_ps1_s1r", (8, 8), "P(sum) S(1)", "S(1) R", None, t),
    ]
    three = [
        ("t3_ppr", (8, 8), "P(sum) P(sum) R", "S(1) S(1) R", {RS: 1}, dim_first(2)),
        ("t3_ssr", (8, 8), "S(1) S(1) R", "R R R", {AG: 1}, dim_first(2)),
        ("t3_ppp", (8, 8), "P(sum) P(sum) P(sum)", "S(1) S(1) S(1)", None, t),
    ]
    return {"4": {"mesh": [4], "dims": ["w"], "reds": one},
            "2x2": {"mesh": [2, 2], "dims": ["A", "B"],
                    "warn": ["redistribute:no_group"], "reds": two},
            "2x2x2": {"mesh": [2, 2, 2], "dims": ["A", "B", "C"],
                      "groups": [["A", "B"]],
                      "warn": ["redistribute:no_group"], "reds": three}}


TABLES = {"one-dim": one_dim, "zero-size": zero_size, "table-2d": table_2d,
          "table-3d": table_3d, "merge-4x2": merge_4x2,
          "merge-2x2x2": merge_2x2x2, "uneven-2x3": uneven_2x3,
          "uneven-3x2": uneven_3x2,
          "uneven-5x3": uneven_5x3, "order": order, "partial": partial,
          "transposed-4": lambda: transposed()["4"],
          "transposed-2x2": lambda: transposed()["2x2"],
          "transposed-2x2x2": lambda: transposed()["2x2x2"]}

# End-to-end graphs beside this script: (file, ranks, collectives of rank 0
# after lower-redistribute,fuse-collectives,cancel-views,dce, outputs, the
# outputs summed in another order than the reference's: close, not bitwise).
E2E = {"mlp-2x2": ("mlp_tp_2x2.xml", 4, {AR: 1}, ["out", "a"], set()),
       "mlp-2x4": ("mlp_tp_2x4.xml", 8, {AR: 1}, ["out", "a"], set()),
       "fsdp-2x2": ("fsdp_tp_2x2.xml", 4, {AG: 4}, ["out", "a"], set()),
       "fsdp-2x4": ("fsdp_tp_2x4.xml", 8, {AG: 4}, ["out", "a"], set()),
       "mlp-uneven-2x2": ("mlp_uneven_2x2.xml", 4, {AR: 6, AG: 3},
                          ["out", "a", "s_r", "mx_r", "emb", "emb_g_r",
                           "emb_sq", "a_ex_s", "a_full", "loss", "tw",
                           "rows", "ls_g", "ls_g_rows", "mse_g"],
                          {"out", "s_r", "emb_g_r", "emb_sq", "loss", "tw",
                           "mse_g"})}


def strides(shape):
    out, s = [], 1
    for n in reversed(shape):
        out.append(s)
        s *= max(n, 1)
    return list(reversed(out))


def write_table(name, spec, path):
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             '<!-- Written by tests/lower/run_lower_tests.py (case %s). -->' % name,
             '<dtopt-graph version="1" name="%s" view="global">' % name.replace("-", "_"),
             '  <mesh name="world" shape="%s" dims="%s"/>'
             % (" ".join(map(str, spec["mesh"])), " ".join(spec["dims"]))]
    for g in spec.get("groups", []):
        lines.append('  <group name="%s" mesh="world" dims="%s"/>' % ("_".join(g), " ".join(g)))
    outs = []
    for red in spec["reds"]:
        label, shape, src, dst = red[:4]
        extra = red[5] if len(red) > 5 else {}
        so = ' order="%s"' % extra["src_order"] if "src_order" in extra else ""
        do = ' order="%s"' % extra["dst_order"] if "dst_order" in extra else ""
        dtype = extra.get("dtype", "float32")
        perm = extra.get("perm")
        base, base_src = shape, src
        if perm:  # x holds the view's dims in the order perm names them
            base = [0] * len(shape)
            for i, p in enumerate(perm):
                base[p] = shape[i]
            base_src = re.sub(r"S\((\d+)\)", lambda m: "S(%d)" % perm[int(m.group(1))], src)
        lines += ['  <node name="x_%s" op="placeholder">' % label,
                  '    <tensor dtype="%s" shape="%s" stride="%s"/>'
                  % (dtype, " ".join(map(str, base)), " ".join(map(str, strides(base)))),
                  '    <sharding mesh="world" placements="%s"%s/>' % (base_src, so),
                  '  </node>']
        source = "x_" + label
        if perm:
            source = "v_" + label
            lines += ['  <node name="%s" op="call_function" target="aten.permute.default">' % source,
                      '    <arg node="x_%s"/>' % label,
                      '    <arg ints="%s"/>' % " ".join(map(str, perm)),
                      '    <sharding mesh="world" placements="%s"/>' % src,
                      '  </node>']
        lines += ['  <node name="%s" op="call_function" target="dtensor.redistribute">' % label,
                  '    <arg node="%s"/>' % source,
                  '    <sharding mesh="world" placements="%s"%s/>' % (dst, do),
                  '  </node>']
        outs.append(label)
    lines += ['  <node name="output" op="output">',
              '    <arg nodes="%s"/>' % " ".join(outs),
              '  </node>', '</dtopt-graph>', '']
    with open(path, "w") as f:
        f.write("\n".join(lines))


# ---------------------------------------------------------------------------
# Running.

class Runner:
    def __init__(self, args, workdir):
        self.dtopt, self.mpirun, self.workdir = args.dtopt, args.mpirun, workdir

    def run(self, argv, expect=0, np=None):
        cmd = list(argv)
        if np:
            cmd = [self.mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(np)] + cmd
        env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
        start = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env, cwd=self.workdir,
                                start_new_session=True)
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
            raise Failure("%s: still running after %d s" % (" ".join(cmd), LIMIT))
        print("$ %s\n  -> exit %d in %.1f s" % (" ".join(cmd), proc.returncode,
                                               time.monotonic() - start))
        if proc.returncode != expect:
            raise Failure("exit %d, expected %d\nstdout:\n%s\nstderr:\n%s"
                          % (proc.returncode, expect, out, err))
        return out, err


def results(out):
    """{output name: result} from a comparison table."""
    table = {}
    for line in out.splitlines():
        m = re.match(r"\s+\d+\s+(\S+)\s+\S+\s+(bitwise|equal|close|MISMATCH)\b", line)
        if m:
            table[m.group(1)] = m.group(2)
    return table


def check_table(out, names, reduced):
    table = results(out)
    if sorted(table) != sorted(names):
        raise Failure("compared outputs %s, expected %s\n%s" % (sorted(table), sorted(names), out))
    for name, res in table.items():
        ok = {"bitwise", "equal", "close"} if name in reduced else {"bitwise"}
        if res not in ok:
            raise Failure("output %s: %s, expected one of %s\n%s" % (name, res, sorted(ok), out))


def collectives(path, owners=None):
    """Collective counts of a lowered graph: {kind: n}, or with owners (a
    list of redistribution names) {owner: {kind: n}} by node-name prefix."""
    counts = {}
    for node in ET.parse(path).getroot().iter("node"):
        kind = TARGET_KIND.get(node.get("target"))
        if not kind:
            continue
        name = node.get("name")
        if owners is None:
            counts[kind] = counts.get(kind, 0) + 1
            continue
        owner = [o for o in owners if name == o or name.startswith(o + ".")]
        if len(owner) != 1:
            raise Failure("collective %s belongs to no redistribution" % name)
        per = counts.setdefault(owner[0], {})
        per[kind] = per.get(kind, 0) + 1
    return counts


def check_counts(got, want, what):
    if want is None:
        return
    if "total" in want:
        if sum(got.values()) != want["total"]:
            raise Failure("%s: %s collectives, expected %d in all"
                          % (what, got, want["total"]))
        return
    if {k: v for k, v in got.items() if v} != want:
        raise Failure("%s: collectives %s, expected %s" % (what, got, want))


def check_dim_first(path, reds):
    """The permutes each redistribution with "dim_first" in its extras was
    expected to lower to (its collectives run on a view, no chunk + cat
    copies)."""
    nodes = [(n.get("name"), n.get("target"))
             for n in ET.parse(path).getroot().iter("node")]
    for red in reds:
        want = red[5].get("dim_first") if len(red) > 5 else None
        if want is None:
            continue
        mine = [t for n, t in nodes if n == red[0] or n.startswith(red[0] + ".")]
        got = mine.count("aten.permute.default")
        cats = mine.count("aten.cat.default")
        if got != want or (want and cats):
            raise Failure("%s: %d dim_first/dim_back permutes and %d cats, "
                          "expected %d permutes%s"
                          % (red[0], got, cats, want, " and no cat" if want else ""))


def mesh_size(spec):
    n = 1
    for s in spec["mesh"]:
        n *= s
    return n


def case_table(r, name, spec):
    graph = os.path.join(r.workdir, "g.xml")
    write_table(name, spec, graph)
    np = mesh_size(spec)
    labels = [red[0] for red in spec["reds"]]
    reduced = {red[0] for red in spec["reds"] if "P(" in red[2] + red[3]}
    _, err = r.run([r.dtopt, "opt", "-p", "lower-redistribute", "--rank", "0",
                    "g.xml", "-o", "low0.xml"])
    tags = set(re.findall(r"g\.xml:\d+: warning: .*\[(redistribute:\w+)\]$", err, re.M))
    if tags != set(spec.get("warn", [])) or err.count("warning:") != len(err.splitlines()):
        raise Failure("expected warnings %s, got:\n%s" % (sorted(spec.get("warn", [])), err))
    counts = collectives(os.path.join(r.workdir, "low0.xml"), labels)
    for red in spec["reds"]:
        check_counts(counts.get(red[0], {}), red[4], red[0])
    check_dim_first(os.path.join(r.workdir, "low0.xml"), spec["reds"])
    r.run([r.dtopt, "opt", "-p", "lower-redistribute", "g.xml", "-o", "low.{rank}.xml"])
    for k in range(np):
        r.run([r.dtopt, "verify", "low.%d.xml" % k])
    out, _ = r.run([r.dtopt, "run", "--backend", "mpi", "--check", "--reference",
                    "g.xml", "low.{rank}.xml"], np=np)
    check_table(out, labels, reduced)
    out, _ = r.run([r.dtopt, "run", "--backend", "mpi", "--check", "g.xml"], np=np)
    check_table(out, labels, reduced)
    check_spmd(r, "g.xml", "lower-redistribute", np, labels, reduced, counts,
               labels)


def check_spmd(r, src, pipeline, np, names, reduced, want, owners=None):
    """Lower src for every rank at once (no --rank): one program, without
    rank=, with the collectives `want` of the per-rank graph (per owner when
    owners are given), that checks against the reference on every rank."""
    r.run([r.dtopt, "opt", "-p", pipeline, src, "-o", "spmd.xml"])
    path = os.path.join(r.workdir, "spmd.xml")
    if ET.parse(path).getroot().get("rank") is not None:
        raise Failure("the SPMD graph has a rank= attribute")
    got = collectives(path, owners)
    if got != want:
        raise Failure("SPMD collectives %s, per-rank %s" % (got, want))
    r.run([r.dtopt, "verify", "spmd.xml"])
    out, _ = r.run([r.dtopt, "run", "--backend", "mpi", "--check", "--reference",
                    src, "spmd.xml"], np=np)
    check_table(out, names, reduced)
    out, _ = r.run([r.dtopt, "run", "--backend", "mpi", "--check", "--spmd", src],
                   np=np)
    check_table(out, names, reduced)


def case_e2e(r, name):
    file, np, want, names, reduced = E2E[name]
    src = os.path.join(HERE, file)
    pipeline = "lower-redistribute,fuse-collectives,cancel-views,dce"
    r.run([r.dtopt, "opt", "-p", pipeline, src, "-o", "low.{rank}.xml"])
    for k in range(np):
        r.run([r.dtopt, "verify", "low.%d.xml" % k])
    check_counts(collectives(os.path.join(r.workdir, "low.0.xml")), want, file)
    out, _ = r.run([r.dtopt, "run", "--backend", "mpi", "--check", "--reference",
                    src, "low.{rank}.xml"], np=np)
    check_table(out, names, reduced)
    out, _ = r.run([r.dtopt, "run", "--backend", "mpi", "--check", src], np=np)
    check_table(out, names, reduced)
    check_spmd(r, src, pipeline, np, names, reduced,
               collectives(os.path.join(r.workdir, "low.0.xml")))


PADDED_GRAPH = """<?xml version="1.0" encoding="UTF-8"?>
<dtopt-graph version="1.1" name="padded" view="local">
  <mesh name="world" shape="4" dims="w"/>
  <node name="x" op="placeholder">
    <tensor dtype="float32" shape="4 6"/>
    <sharding mesh="world" placements="S(0)" global-shape="13 6"/>
  </node>
  <node name="s" op="call_function" target="aten.sigmoid.default">
    <arg node="x"/>
    <sharding mesh="world" placements="S(0)" global-shape="13 6"/>
  </node>
  %s
  <node name="output" op="output">
    <arg nodes="%s"/>
  </node>
</dtopt-graph>
"""
MASK = """<node name="m" op="call_function" target="dt.local_shard">
    <arg node="s"/> <arg str="world"/> <arg str="S(0)"/> <arg str="S(0)"/>
    <arg ints="13 6"/>
    <sharding mesh="world" placements="S(0)" global-shape="13 6"/>
  </node>"""


RANDOM_MESHES = [([4], ["w"]), ([2, 2], ["A", "B"]), ([2, 3], ["A", "B"]),
                 ([3, 2], ["A", "B"]), ([2, 2, 2], ["A", "B", "C"])]


def random_table(seed):
    """Twelve redistributions of random small (mostly uneven) shapes
    between random placements (R, S(d), P(sum) sources) and shard orders
    on one of RANDOM_MESHES, reproducible from the seed."""
    rnd = random.Random(seed)
    mesh, dims = RANDOM_MESHES[seed % len(RANDOM_MESHES)]
    reds = []
    for i in range(12):
        rank = rnd.randint(1, 3)
        shape = tuple(rnd.randint(1, 9) for _ in range(rank))

        def placements(partial):
            out = []
            for _ in mesh:
                c = rnd.random()
                out.append("R" if c < 0.3 else "P(sum)" if c < 0.45 and partial
                           else "S(%d)" % rnd.randrange(rank))
            return out

        def order(pl):
            by = {}
            for k, p in enumerate(pl):
                if p.startswith("S("):
                    by.setdefault(int(p[2:-1]), []).append(dims[k])
            entries = []
            for d, ms in sorted(by.items()):
                if len(ms) > 1 and rnd.random() < 0.5:
                    default = list(ms)
                    rnd.shuffle(ms)
                    if ms != default:
                        entries.append("%d:%s" % (d, ",".join(ms)))
            return " ".join(entries)

        src, dst = placements(True), placements(False)
        extra = {k: v for k, v in (("src_order", order(src)),
                                   ("dst_order", order(dst))) if v}
        reds.append(("r%d" % i, shape, " ".join(src), " ".join(dst), None, extra))
    return {"mesh": mesh, "dims": dims, "reds": reds}


def case_random(r, seeds):
    """Random tables (random_table), each lowered to one SPMD program and
    checked against the reference; a failure names its seed."""
    for seed in seeds:
        spec = random_table(seed)
        graph = os.path.join(r.workdir, "g.xml")
        write_table("random-%d" % seed, spec, graph)
        # a redistribution to its own placements leaves its input
        labels = [red[0] if red[2:4] != red[3:1:-1] or
                  red[5].get("src_order") != red[5].get("dst_order")
                  else "x_" + red[0] for red in spec["reds"]]
        reduced = {label for label, red in zip(labels, spec["reds"])
                   if "P(" in red[2] + red[3]}
        try:
            r.run([r.dtopt, "opt", "-p", "lower-redistribute", "g.xml", "-o",
                   "spmd.xml"])
            out, _ = r.run([r.dtopt, "run", "--backend", "mpi", "--check",
                            "--reference", "g.xml", "spmd.xml"], np=mesh_size(spec))
            check_table(out, labels, reduced)
        except Failure as e:
            raise Failure("seed %d (random_table(%d)): %s" % (seed, seed, e))


def case_compare_padding(r):
    """run --compare of two SPMD programs whose outputs agree on every
    rank's shard but not in the padding (13 rows on 4: rank 3 holds 1 of
    4; sigmoid makes its padding 0.5, dt.local_shard zeroes it): equal, as
    only the valid part of a padded output counts (semantics §7)."""
    for name, extra, out in (("a.xml", "", "s"), ("b.xml", MASK, "m")):
        with open(os.path.join(r.workdir, name), "w") as f:
            f.write(PADDED_GRAPH % (extra, out))
    out, _ = r.run([r.dtopt, "run", "--backend", "mpi", "--compare", "a.xml",
                    "b.xml"], np=4)
    check_table(out, ["s"], set())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtopt")
    ap.add_argument("--mpirun")
    ap.add_argument("--workdir")
    ap.add_argument("--write", help="write every table case's graph into DIR")
    ap.add_argument("case", nargs="?")
    args = ap.parse_args()
    if args.write:
        os.makedirs(args.write, exist_ok=True)
        for name, make in TABLES.items():
            write_table(name, make(), os.path.join(args.write, name + ".xml"))
        return 0
    if args.case not in TABLES and args.case not in E2E and \
            args.case not in ("compare-padding", "random"):
        sys.exit("unknown case %r (%s compare-padding random)"
                 % (args.case, " ".join(list(TABLES) + list(E2E))))
    workdir = os.path.join(os.path.abspath(args.workdir), args.case)
    os.makedirs(workdir, exist_ok=True)
    r = Runner(args, workdir)
    r.dtopt = os.path.abspath(args.dtopt)
    try:
        if args.case in TABLES:
            case_table(r, args.case, TABLES[args.case]())
        elif args.case in E2E:
            case_e2e(r, args.case)
        elif args.case == "random":
            case_random(r, range(10))
        else:
            case_compare_padding(r)
    except Failure as e:
        print("FAIL: %s" % e)
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())

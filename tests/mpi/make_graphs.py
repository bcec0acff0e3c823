#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make_graphs.py: writes the local-view graphs of the MPI tests.

usage: make_graphs.py OUTDIR [SET...]

Sets (default: all):
  order-AxB[xC]  the rank-order law of semantics §4.1-4.3 on that mesh, by
                 execution (files order-AxB[xC].*.xml). chain.xml holds, for
                 every ordered pair of mesh dims (and every order of three):
                 an all-gather chain, a reduce-scatter chain, all-reduce
                 chains (every reduce op in float32; sum, max, min in int32
                 and in bfloat16, which reduces through float32 staging), an
                 all_to_all chain, and all_to_all twice on every group; it
                 must equal right.xml (one collective on the flattened group
                 the law names). order.xml (the gather, scatter and
                 all_to_all chains only) must differ from wrong.xml (the
                 other dim order) in every output.
  uneven         all_to_all with per-rank uneven split sizes and back, as
                 per-rank graphs uneven.{rank}.xml (mesh 2x3), vs ident.{rank}.xml
  planted        base.xml vs planted.xml (0.5 added to element [0, 0]) and
                 tiny.xml (1e-7 added: within the float32 tolerance)
  failing        fail.{rank}.xml (mesh 2x2): an embedding whose index is out
                 of range on rank 1 only, then an all_reduce
  check          check_global.xml (global view), check_local.xml (mesh 2x2,
                 outputs sharded, partial and replicated), check_wrong.xml
                 (an output whose <sharding> names the wrong shard)
  plain          plain.xml (mesh 2x2) for --out, --trace and --summary

Inputs come from the runtime's generator: a placeholder with <sharding>
gives each rank its shard of one global tensor (S(0) on every mesh dim, so
every rank's data differ), one without is per rank."""
import itertools
import os
import sys
from xml.sax.saxutils import quoteattr

AG = "_c10d_functional.all_gather_into_tensor.default"
RS = "_c10d_functional.reduce_scatter_tensor.default"
AR = "_c10d_functional.all_reduce.default"
A2A = "_c10d_functional.all_to_all_single.default"
WAIT = "_c10d_functional.wait_tensor.default"
FLOAT_OPS = ["sum", "avg", "max", "min", "product"]
INT_OPS = ["sum", "max", "min"]  # avg truncates per step, product overflows
EXACT_OPS = ["sum", "max", "min"]  # exact in bfloat16 on inputs k/8
COLS = 3


class Graph:
    """A local- or global-view graph; call nodes get their metadata from
    shape inference."""

    def __init__(self, name, shape=None, view="local", rank=None):
        self.name, self.view, self.rank = name, view, rank
        self.shape = list(shape or [])
        self.dims = ["d%d" % i for i in range(len(self.shape))]
        self.groups = {}
        self.nodes = []
        self.outputs = []

    def group(self, dims):
        """The group over mesh dim indices `dims` (slowest first)."""
        name = "g_" + "_".join(self.dims[d] for d in dims)
        self.groups[name] = " ".join(self.dims[d] for d in dims)
        return name

    def size(self, dims):
        n = 1
        for d in dims:
            n *= self.shape[d]
        return n

    def placeholder(self, name, dtype, shape, placements=None,
                    global_shape=None, input_max=None):
        body = '    <tensor dtype="%s" shape="%s" stride="%s"/>\n' % (
            dtype, " ".join(map(str, shape)), " ".join(map(str, strides(shape))))
        if placements:
            body += '    <sharding mesh="world" placements="%s"%s/>\n' % (
                placements, ' global-shape="%s"' % " ".join(map(str, global_shape))
                if global_shape else "")
        if input_max:
            body += '    <meta key="dtopt.input_max" value="%d"/>\n' % input_max
        self.nodes.append('  <node name="%s" op="placeholder">\n%s  </node>\n'
                          % (name, body))
        return name

    def call(self, name, target, *args, sharding=None):
        """args: node names (str), ints, floats, lists of ints, or None."""
        parts = []
        for a in args:
            if a is None:
                parts.append('<arg none="true"/>')
            elif isinstance(a, str) and a.startswith("="):
                parts.append('<arg str=%s/>' % quoteattr(a[1:]))
            elif isinstance(a, str):
                parts.append('<arg node="%s"/>' % a)
            elif isinstance(a, bool):
                parts.append('<arg bool="%s"/>' % ("true" if a else "false"))
            elif isinstance(a, int):
                parts.append('<arg int="%d"/>' % a)
            elif isinstance(a, float):
                parts.append('<arg float="%r"/>' % a)
            else:
                parts.append('<arg ints="%s"/>' % " ".join(map(str, a)))
        extra = ""
        if sharding:
            extra = '\n    <sharding mesh="world" placements="%s" global-shape="%s"/>' % (
                sharding[0], " ".join(map(str, sharding[1])))
        self.nodes.append('  <node name="%s" op="call_function" target="%s">\n'
                          '    %s%s\n  </node>\n' % (name, target, " ".join(parts), extra))
        return name

    def wait(self, name, x):
        return self.call(name, WAIT, x)

    def xml(self):
        head = '<dtopt-graph version="1" name="%s" view="%s"%s>\n' % (
            self.name, self.view, ' rank="%d"' % self.rank if self.rank is not None else "")
        mesh = ""
        if self.shape:
            mesh = '  <mesh name="world" shape="%s" dims="%s"/>\n' % (
                " ".join(map(str, self.shape)), " ".join(self.dims))
        groups = "".join('  <group name="%s" mesh="world" dims="%s"/>\n' % g
                         for g in sorted(self.groups.items()))
        out = '  <node name="output" op="output">\n    <arg nodes="%s"/>\n  </node>\n' % (
            " ".join(self.outputs))
        return ('<?xml version="1.0" encoding="UTF-8"?>\n' + head + mesh + groups +
                "".join(self.nodes) + out + "</dtopt-graph>\n")

    def write(self, outdir, file):
        with open(os.path.join(outdir, file), "w") as f:
            f.write(self.xml())


def strides(shape):
    s, out = 1, []
    for n in reversed(shape):
        out.append(s)
        s *= n
    return list(reversed(out))


def chains(ndim):
    """Ordered pairs of mesh dims, and on 3-D meshes every order of all three."""
    out = list(itertools.permutations(range(ndim), 2))
    if ndim == 3:
        out += list(itertools.permutations(range(3)))
    return out


def tag(g, dims):
    return "_".join(g.dims[d] for d in dims)


def order_inputs(g):
    """Shared placeholders: S(0) on every mesh dim, so every rank's shard
    differs. Rows are 2 per rank (gathers) or 2*N (scatters, all_to_all:
    divisible by every group size)."""
    n = g.size(range(len(g.shape)))
    s0 = " ".join(["S(0)"] * len(g.shape))
    g.placeholder("x", "float32", [2, COLS], s0, [2 * n, COLS])
    g.placeholder("y", "float32", [2 * n, COLS], s0, [2 * n * n, COLS])
    g.placeholder("z", "float32", [2, COLS], s0, [2 * n, COLS])
    g.placeholder("zi", "int32", [2, COLS], s0, [2 * n, COLS], input_max=100)
    g.placeholder("zb", "bfloat16", [2, COLS], s0, [2 * n, COLS])
    g.placeholder("a", "float32", [2 * n, COLS], s0, [2 * n * n, COLS])
    return n


def chain_collectives(g, dims, kind, x, op=None, label=""):
    """A chain of one collective per dim of `dims`, in that order; the last
    wait is named KIND_LABEL_DIMS (the output name in every graph)."""
    v = x
    for i, d in enumerate(dims):
        name = "%s_%s%s%s" % (kind, label, tag(g, dims),
                              "" if i == len(dims) - 1 else "_%d" % i)
        v = g.wait(name, collective(g, name + "_c", kind, v, [d], op))
    return v


def collective(g, name, kind, x, group_dims, op):
    grp = "=" + g.group(group_dims)
    n = g.size(group_dims)
    if kind == "ag":
        return g.call(name, AG, x, n, grp)
    if kind == "rs":
        return g.call(name, RS, x, "=" + op, n, grp)
    return g.call(name, AR, x, "=" + op, grp)


def fused_collective(g, dims, kind, x, group_dims, op=None, label=""):
    name = "%s_%s%s" % (kind, label, tag(g, dims))
    return g.wait(name, collective(g, name + "_c", kind, x, group_dims, op))


def a2a_chain(g, d1, d2, n):
    """all_to_all over d2 then d1 with block transposes between them, equal
    to one all_to_all on the group (d1 d2): seeing the input as blocks
    [j1][j2] and the output as [r1][r2], rank (c1, c2) ends up with block
    (c1, c2) of rank (r1, r2) at [r1][r2], which is what the fused
    all_to_all gives when group position is c1*n2 + c2."""
    n1, n2 = g.shape[d1], g.shape[d2]
    k = 2 * n // (n1 * n2)
    t = "a2a_%s" % tag(g, [d1, d2])
    v = g.call(t + "_v1", "aten.view.default", "a", [n1, n2, k, COLS])
    v = g.call(t + "_p1", "aten.permute.default", v, [1, 0, 2, 3])
    v = g.call(t + "_r1", "aten.reshape.default", v, [n2 * n1 * k, COLS])
    v = g.wait(t + "_0", g.call(t + "_c0", A2A, v, None, None, "=" + g.group([d2])))
    v = g.call(t + "_v2", "aten.view.default", v, [n2, n1, k, COLS])
    v = g.call(t + "_p2", "aten.permute.default", v, [1, 0, 2, 3])
    v = g.call(t + "_r2", "aten.reshape.default", v, [n1 * n2 * k, COLS])
    return g.wait(t, g.call(t + "_c", A2A, v, None, None, "=" + g.group([d1])))


def a2a_fused(g, d1, d2, group_dims):
    t = "a2a_%s" % tag(g, [d1, d2])
    return g.wait(t, g.call(t + "_c", A2A, "a", None, None, "=" + g.group(group_dims)))


def make_order(outdir, shape):
    ndim = len(shape)
    graphs = {k: Graph(k, shape) for k in ["chain", "right", "order", "wrong"]}
    for g in graphs.values():
        n = order_inputs(g)
    for dims in chains(ndim):
        rev = list(reversed(dims))
        # Gathers: the dim gathered last is the slowest -> group (D2 D1).
        for key, gd in [("chain", None), ("order", None), ("right", rev), ("wrong", list(dims))]:
            g = graphs[key]
            g.outputs.append(chain_collectives(g, dims, "ag", "x") if gd is None
                             else fused_collective(g, dims, "ag", "x", gd))
        # Scatters: the dim scattered first is the slowest -> group (D1 D2).
        for key, gd in [("chain", None), ("order", None), ("right", list(dims)), ("wrong", rev)]:
            g = graphs[key]
            g.outputs.append(chain_collectives(g, dims, "rs", "y", "sum") if gd is None
                             else fused_collective(g, dims, "rs", "y", gd, "sum"))
        if len(dims) == 2:
            d1, d2 = dims
            for key, gd in [("chain", None), ("order", None), ("right", [d1, d2]), ("wrong", [d2, d1])]:
                g = graphs[key]
                g.outputs.append(a2a_chain(g, d1, d2, n) if gd is None else a2a_fused(g, d1, d2, gd))
        # All-reduces: any order; the group is (D1 D2 ...).
        for x, ops in [("z", FLOAT_OPS), ("zi", INT_OPS), ("zb", EXACT_OPS)]:
            for op in ops:
                label = "%s_%s_" % (x, op)
                graphs["chain"].outputs.append(
                    chain_collectives(graphs["chain"], dims, "ar", x, op, label))
                graphs["right"].outputs.append(
                    fused_collective(graphs["right"], dims, "ar", x, list(dims), op, label))
    # all_to_all twice on every group is the identity.
    for k in range(1, ndim + 1):
        for dims in itertools.permutations(range(ndim), k):
            if k == ndim and ndim == 3 and list(dims) != [2, 0, 1]:
                continue
            g = graphs["chain"]
            grp = "=" + g.group(dims)
            t = "a2a2_%s" % tag(g, dims)
            v = g.wait(t + "_0", g.call(t + "_c0", A2A, "a", None, None, grp))
            g.outputs.append(g.wait(t, g.call(t + "_c", A2A, v, None, None, grp)))
            graphs["right"].outputs.append("a")
    for key, g in graphs.items():
        g.write(outdir, "order-%s.%s.xml" % ("x".join(map(str, shape)), key))


def group_position(shape, dims, rank):
    coord, r = [], rank
    for n in reversed(shape):
        coord.append(r % n)
        r //= n
    coord.reverse()
    pos = 0
    for d in dims:
        pos = pos * shape[d] + coord[d]
    return pos


def make_uneven(outdir):
    shape = [2, 3]
    for rank in range(6):
        a, b = Graph("uneven", shape, rank=rank), Graph("ident", shape, rank=rank)
        for g in (a, b):
            g.group([1, 0])
            g.group([1])
        for dims in ([1, 0], [1]):
            n = a.size(dims)
            p = group_position(shape, dims, rank)
            split = lambda i, j: (i + 2 * j) % 3 + (1 if i == j else 0)
            send = [split(p, j) for j in range(n)]
            recv = [split(j, p) for j in range(n)]
            x = "u_" + tag(a, dims)
            for g in (a, b):
                g.placeholder(x, "float32", [sum(send), COLS])
            grp = "=" + a.group(dims)
            w = a.wait(x + "_w0", a.call(x + "_a0", A2A, x, recv, send, grp))
            a.outputs.append(a.wait(x + "_w", a.call(x + "_a", A2A, w, send, recv, grp)))
            b.outputs.append(x)
        a.write(outdir, "uneven.%d.xml" % rank)
        b.write(outdir, "ident.%d.xml" % rank)


def make_planted(outdir):
    for name, delta in [("base", None), ("planted", 0.5), ("tiny", 1e-7)]:
        g = Graph(name, [2, 2])
        g.placeholder("x", "float32", [2, COLS], "S(0) S(0)", [8, COLS])
        v = g.wait("w", g.call("ag", AG, "x", 4, "=" + g.group([0, 1])))
        if delta is not None:
            one = g.call("one", "aten.full.default", [1, 1], delta)
            pad = g.call("pad", "aten.constant_pad_nd.default", one, [0, COLS - 1, 0, 7], 0.0)
            v = g.call("add", "aten.add.Tensor", v, pad)
        g.outputs.append(v)
        g.write(outdir, name + ".xml")


def make_failing(outdir):
    for rank in range(4):
        g = Graph("fail", [2, 2], rank=rank)
        g.placeholder("weight", "float32", [2, 4])
        g.placeholder("idx", "int64", [16], input_max=5 if rank == 1 else 2)
        e = g.call("emb", "aten.embedding.default", "weight", "idx")
        g.outputs.append(g.wait("w", g.call("ar", AR, e, "=sum", "=" + g.group([0, 1]))))
        g.write(outdir, "fail.%d.xml" % rank)


def make_check(outdir):
    glob = Graph("check_global", [2, 2], view="global")
    glob.placeholder("x", "float32", [8, 6], "S(0) S(1)", [8, 6])
    glob.placeholder("a", "float32", [4, 8], "R S(1)", [4, 8])
    glob.placeholder("b", "float32", [8, 6], "R S(0)", [8, 6])
    # Pinned, so that `--check check_global.xml` can lower it per rank.
    y2 = glob.call("y2", "aten.mul.Scalar", "x", 2.0, sharding=("S(0) S(1)", [8, 6]))
    y = glob.call("y", "aten.add.Scalar", y2, 1.0, sharding=("S(0) S(1)", [8, 6]))
    glob.outputs += [y, glob.call("z", "aten.mm.default", "a", "b",
                                  sharding=("R P(sum)", [4, 6])),
                     glob.call("bc", "aten.clone.default", "b",
                               sharding=("R S(0)", [8, 6]))]
    glob.write(outdir, "check_global.xml")
    for name, y_pl in [("check_local", "S(0) S(1)"), ("check_wrong", "S(1) S(0)")]:
        g = Graph(name, [2, 2])
        g.placeholder("x", "float32", [4, 3], "S(0) S(1)", [8, 6])
        g.placeholder("a", "float32", [4, 4], "R S(1)", [4, 8])
        g.placeholder("b", "float32", [4, 6], "R S(0)", [8, 6])
        y2 = g.call("y2", "aten.mul.Scalar", "x", 2.0)
        g.outputs.append(g.call("y", "aten.add.Scalar", y2, 1.0, sharding=(y_pl, [8, 6])))
        g.outputs.append(g.call("z", "aten.mm.default", "a", "b",
                                sharding=("R P(sum)", [4, 6])))
        ag = g.call("bg_c", AG, "b", 2, "=" + g.group([1]))
        g.outputs.append(g.call("bg", WAIT, ag, sharding=("R R", [8, 6])))
        g.write(outdir, name + ".xml")


def make_plain(outdir):
    g = Graph("plain", [2, 2])
    g.placeholder("x", "float32", [2, COLS], "S(0) S(0)", [8, COLS])
    v = g.wait("w", g.call("ag", AG, "x", 4, "=" + g.group([0, 1])))
    g.outputs += [v, g.call("s", "aten.sum.default", v)]
    g.write(outdir, "plain.xml")


def make_heap(outdir):
    """A step that allocates 8 MiB afresh every iteration: a 4 MiB sum
    and the 4 MiB result of its all_reduce."""
    g = Graph("heap", [4])
    x = g.placeholder("x", "float32", [1024, 1024])
    s = g.call("s", "aten.add.Tensor", x, x)
    g.outputs.append(g.wait("w", g.call("ar", AR, s, "=sum", "=" + g.group([0]))))
    g.write(outdir, "heap.xml")


SETS = {"uneven": make_uneven, "planted": make_planted, "failing": make_failing,
        "check": make_check, "plain": make_plain, "heap": make_heap}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    sets = sys.argv[2:] or ["order-2x2", "order-2x4", "order-4x2", "order-2x3",
                            "order-2x2x2", "uneven", "planted", "failing",
                            "check", "plain", "heap"]
    for s in sets:
        if s.startswith("order-"):
            make_order(outdir, [int(v) for v in s[6:].split("x")])
        else:
            SETS[s](outdir)


if __name__ == "__main__":
    main()

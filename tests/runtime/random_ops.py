#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""random_ops.py: seeded random graphs of the index, scan, mask, bitwise,
loss and in-place ops (tril/triu, cumsum, flip, repeat, bitwise and
remainder on negative integers, index_select/index_add, gather/scatter_add/
scatter.value, mse_loss and its backward with broadcasting and every
reduction, empty_like + fill_ + sub_) on random shapes, dims and strides,
each run by dtopt's CPU interpreter and compared with torch by
check_torch.py.

usage: random_ops.py RT_DUMP [--graphs N] [--first SEED]
Exit 0 when every graph matches; a failing graph is kept and its seed
printed (rerun with --first SEED --graphs 1).
"""
import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_torch  # noqa: E402


class Graph:
    def __init__(self):
        self.placeholders, self.nodes, self.outputs, self.count = [], [], [], 0

    def input(self, rng, name, dtype, shape, input_max=None):
        """A placeholder with a random dense layout (a permuted dim order)."""
        order = list(range(len(shape)))
        rng.shuffle(order)
        stride, acc = [0] * len(shape), 1
        for d in reversed(order):
            stride[d], acc = acc, acc * shape[d]
        meta = ('\n    <meta key="dtopt.input_max" value="%d"/>' % input_max
                if input_max else "")
        self.placeholders.append(
            '  <node name="%s" op="placeholder">\n    <tensor dtype="%s" '
            'shape="%s" stride="%s"/>%s\n  </node>\n'
            % (name, dtype, " ".join(map(str, shape)),
               " ".join(map(str, stride)), meta))
        return name

    def call(self, target, *args, out=True):
        self.count += 1
        name = "n%d" % self.count
        self.nodes.append('  <node name="%s" op="call_function" target="%s">'
                          '\n    %s\n  </node>\n' % (name, target, " ".join(args)))
        if out:
            self.outputs.append(name)
        return name

    def xml(self):
        return ('<?xml version="1.0" encoding="UTF-8"?>\n<dtopt-graph '
                'version="1" name="random_ops" view="local">\n'
                + "".join(self.placeholders) + "".join(self.nodes)
                + '  <node name="output" op="output">\n    <arg nodes="%s"/>\n'
                  '  </node>\n</dtopt-graph>\n' % " ".join(self.outputs))


def node(n):
    return '<arg node="%s"/>' % n


def num(v):
    return '<arg %s="%s"/>' % ("int" if isinstance(v, int) else "float", v)


def ints(v):
    return '<arg ints="%s"/>' % " ".join(map(str, v))


def dtype(t):
    return '<arg dtype="%s"/>' % t


def block(g, rng, t):
    """One block of ops on a random tensor of rank 1-4."""
    rank = rng.randint(1, 4)
    shape = [rng.randint(1, 5) for _ in range(rank)]
    x = g.input(rng, "x%d" % t, rng.choice(["float32", "float64"]), shape)
    xi = g.input(rng, "xi%d" % t, "int64", shape, input_max=11)
    xs = g.call("aten.sub.Tensor", node(xi), num(5), out=False)  # -5..5
    d = rng.randrange(rank)
    if rank >= 2:
        g.call(rng.choice(["aten.tril.default", "aten.triu.default"]),
               node(x), num(rng.randint(-3, 3)))
    g.call("aten.cumsum.default", node(rng.choice([x, xs])),
           num(d - rank * rng.randint(0, 1)))
    g.call("aten.flip.default", node(x),
           ints(rng.sample(range(rank), rng.randint(1, rank))))
    g.call("aten.repeat.default", node(x),
           ints([rng.randint(1, 3) for _ in range(rank + rng.randint(0, 1))]))
    for op in ("and", "or", "xor"):
        g.call("aten.bitwise_%s.Tensor" % op, node(xs), node(rng.choice([xs, xi])))
    g.call("aten.bitwise_not.default", node(xs))
    divisor = g.call("aten.add.Tensor", node(xi), num(1), out=False)
    g.call("aten.remainder.Tensor", node(xs), node(divisor))
    g.call("aten.remainder.Scalar", node(x), num(rng.choice([-1.5, 0.75, 2.0])))
    g.call("aten.sign.default", node(rng.choice([x, xs])))

    xd = g.call("prims.convert_element_type.default", node(x), dtype("float64"),
                out=False)
    n = rng.randint(1, 4)
    idx = g.input(rng, "ix%d" % t, "int64", [n], input_max=shape[d])
    g.call("aten.index_select.default", node(x), num(d), node(idx))
    src_shape = list(shape)
    src_shape[d] = n
    src = g.input(rng, "sx%d" % t, "float64", src_shape)
    g.call("aten.index_add.default", node(xd), num(d), node(idx), node(src),
           '<kwarg name="alpha" float="%s"/>' % rng.choice([1.0, -0.5, 2.0]))
    gshape = [rng.randint(1, s) for s in shape]
    gshape[d] = rng.randint(1, 5)
    gi = g.input(rng, "gi%d" % t, "int64", gshape, input_max=shape[d])
    g.call("aten.gather.default", node(xd), num(d), node(gi))
    gsrc = g.input(rng, "gs%d" % t, "float64",
                   [s + rng.randint(0, 1) for s in gshape])
    g.call("aten.scatter_add.default", node(xd), num(d), node(gi), node(gsrc))
    g.call("aten.scatter.value", node(xd), num(d), node(gi), num(7.0))

    xf = g.call("prims.convert_element_type.default", node(x), dtype("float32"),
                out=False)
    target = g.input(rng, "tg%d" % t, "float32", shape[rng.randrange(rank):])
    reduction = rng.randint(0, 2)
    g.call("aten.mse_loss.default", node(xf), node(target), num(reduction))
    grad = g.input(rng, "g%d" % t, "float32", shape if reduction == 0 else [])
    g.call("aten.mse_loss_backward.default", node(grad), node(xf), node(target),
           num(reduction))
    ones = g.call("aten.fill_.Scalar",
                  node(g.call("aten.empty_like.default", node(xf), out=False)),
                  num(1), out=False)
    g.call("aten.sub_.Tensor", node(ones), node(target))


def graph(seed):
    rng, g = random.Random(seed), Graph()
    for t in range(4):
        block(g, rng, t)
    return g.xml()


def main():
    argv = sys.argv[1:]
    opts = {"--graphs": 20, "--first": 1}
    for key in opts:
        if key in argv:
            k = argv.index(key)
            opts[key] = int(argv[k + 1])
            del argv[k:k + 2]
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    folder = tempfile.mkdtemp(prefix="random_ops.")
    failed = 0
    for seed in range(opts["--first"], opts["--first"] + opts["--graphs"]):
        path = os.path.join(folder, "seed%d.xml" % seed)
        with open(path, "w") as f:
            f.write(graph(seed))
        errors = check_torch.check_graph(argv[0], path, 0)
        if errors:
            failed += 1
            print("FAIL seed %d (%s)" % (seed, path))
            for e in errors[:10]:
                print("     " + e)
        else:
            os.remove(path)
    if not failed:
        os.rmdir(folder)
    print("%d of %d random graphs match torch" % (opts["--graphs"] - failed,
                                                  opts["--graphs"]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

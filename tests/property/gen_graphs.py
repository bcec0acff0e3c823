#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gen_graphs.py: random global-view graphs for the property test.

Each graph is a chain of ops on a random float64 placeholder: views,
reshapes, _reshape_alias with the strides view() gives, transposes and
permutes, unsqueeze/squeeze, expands, mm/bmm/addmm (and the expand +
_reshape_alias + bmm form make_fx writes for a linear on a 3-D input),
unary and broadcasting binary elementwise ops, sum/mean/amax over dims and
softmax. Placeholders get random placements on the mesh: R, S(d), P(sum),
P(avg), P(max), and S on one tensor dim over two mesh dims in the reverse
shard order (the _S form), on even and uneven lengths. Graph i of (seed,
mesh) comes from its own random stream, so it is the same whichever other
graphs share its file.

Many graphs go into one file (a "batch", names prefixed gI_) so that one
`mpirun dtopt run --check` proves them all; `graph(seed, mesh, i)` gives
one graph's nodes for a file of its own.

No torch needed: shapes and strides are tracked here (PyTorch's rules for
views), metadata of call nodes is left to dtopt's shape inference.

    usage: gen_graphs.py --seed S --mesh 2x2 --first I --count N -o OUT.xml
"""
import argparse
import random
import sys
from xml.sax.saxutils import quoteattr


def contiguous(shape):
    st, acc = [], 1
    for n in reversed(shape):
        st.append(acc)
        acc *= max(n, 1)
    return list(reversed(st))


def view_strides(shape, stride, new):
    """at::detail::computeStride: strides of `new` over (shape, stride), or
    None when view() cannot serve it."""
    numel = 1
    for n in shape:
        numel *= n
    if numel == 0:
        return contiguous(new)
    out = [0] * len(new)
    view_d = len(new) - 1
    chunk_base = stride[-1] if stride else 1
    tensor_numel, view_numel = 1, 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and
                      stride[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or
                                   new[view_d] == 1):
                out[view_d] = view_numel * chunk_base
                view_numel *= new[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = stride[d - 1]
                tensor_numel, view_numel = 1, 1
    if view_d != -1:
        return None
    return out


class Val:
    """A value of the graph being built: its name, shape and strides (None
    where an op's output layout follows its inputs' in ways not modelled
    here: element-wise ops, clone, softmax)."""

    def __init__(self, name, shape, stride=None):
        self.name, self.shape = name, list(shape)
        self.stride = list(stride) if stride is not None else None


class Builder:
    def __init__(self, rng, mesh, prefix):
        self.rng, self.mesh, self.prefix = rng, mesh, prefix
        self.placeholders, self.nodes, self.outputs = [], [], []
        self.n = 0

    def name(self, base):
        self.n += 1
        return "%s%s_%d" % (self.prefix, base, self.n)

    # ---- placeholders and placements ----

    def placements(self, shape):
        r, nd = self.rng, len(self.mesh)
        pl = ["R"] * nd
        order = None
        partial = r.choice(["sum", "avg", "max"])
        for m in range(nd):
            x = r.random()
            if shape and x < 0.45:
                pl[m] = "S(%d)" % r.randrange(len(shape))
            elif x < 0.6:
                pl[m] = "P(%s)" % (partial if partial != "max" or r.random()
                                   < 0.5 else "sum")
        ps = {p for p in pl if p.startswith("P")}
        if len(ps) > 1 and ps != {"P(sum)", "P(avg)"}:
            pl = ["R" if p.startswith("P") else p for p in pl]
        # The _S form: one tensor dim over two mesh dims, inner one first.
        if shape and nd >= 2 and r.random() < 0.15:
            a, b = sorted(r.sample(range(nd), 2))
            d = r.randrange(len(shape))
            pl[a] = pl[b] = "S(%d)" % d
            for m in range(nd):
                if m not in (a, b) and pl[m] == "S(%d)" % d:
                    pl[m] = "R"
            if r.random() < 0.5 or shape[d] % (self.mesh[a] *
                                               self.mesh[b]) != 0:
                order = "%d:%d,%d" % (d, b, a)
            else:  # the same data written as DTensor's _StridedShard
                # (redistributions lower only even _S, semantics §3)
                pl[a] = "_S(%d,%d)" % (d, self.mesh[b])
        return " ".join(pl), order

    def placeholder(self, shape):
        v = Val(self.name("in"), shape, contiguous(shape))
        pl, order = self.placements(shape)
        self.placeholders.append((v, pl, order))
        return v

    def rand_shape(self, rank=None, small=False):
        r = self.rng
        if rank is None:
            rank = r.choice([1, 2, 2, 3, 3, 4])
        top = 4 if small else 7
        return [r.choice([1, 2, 3, 4, 5, 6, 8][:top + 1 if top < 7 else 7])
                if r.random() < 0.9 else r.randint(1, top)
                for _ in range(rank)]

    # ---- nodes ----

    def call(self, target, args, shape, stride=None, base="op"):
        """A node; `stride` None: its layout is not modelled. One in ten
        is pinned (<sharding>): shard-prop must then give it exactly
        those placements."""
        v = Val(self.name(base), shape, stride)
        pin = self.placements(shape) if self.rng.random() < 0.1 else None
        self.nodes.append((v.name, target, args, pin))
        return v

    def ew_unary(self, x):
        op = self.rng.choice(["relu", "tanh", "neg", "abs", "sigmoid"])
        return self.call("aten.%s.default" % op, [("node", x.name)], x.shape)

    def ew_scalar(self, x):
        op, c = self.rng.choice([("aten.mul.Scalar", "-1.5"),
                                 ("aten.mul.Scalar", "0.5"),
                                 ("aten.add.Scalar", "0.25")])
        return self.call(op, [("node", x.name), ("float", c)], x.shape)

    def ew_binary(self, x):
        r = self.rng
        k = r.randint(0, len(x.shape))
        shape = [1 if r.random() < 0.3 else n for n in x.shape[k:]]
        y = self.placeholder(shape)
        a, b = (x, y) if r.random() < 0.7 else (y, x)
        op = r.choice(["add", "mul", "sub"])
        return self.call("aten.%s.Tensor" % op,
                         [("node", a.name), ("node", b.name)], x.shape)

    def reduce(self, x):
        r = self.rng
        if not x.shape:
            return None
        nd = r.randint(1, min(2, len(x.shape)))
        dims = sorted(r.sample(range(len(x.shape)), nd))
        keep = r.random() < 0.4
        shape = [1 if d in dims else n for d, n in enumerate(x.shape)
                 ] if keep else [n for d, n in enumerate(x.shape)
                                 if d not in dims]
        op = r.choice(["aten.sum.dim_IntList", "aten.mean.dim",
                       "aten.amax.default"])
        dims = [d - len(x.shape) if r.random() < 0.3 else d for d in dims]
        return self.call(op, [("node", x.name),
                              ("ints", " ".join(map(str, dims))),
                              ("bool", "true" if keep else "false")], shape)

    def softmax(self, x):
        if not x.shape:
            return None
        d = self.rng.randrange(len(x.shape))
        return self.call("aten._softmax.default",
                         [("node", x.name), ("int", str(d)),
                          ("bool", "false")], x.shape)

    def transpose(self, x):
        if len(x.shape) < 2:
            return None
        a, b = self.rng.sample(range(len(x.shape)), 2)
        sh, st = list(x.shape), list(x.stride or x.shape)
        sh[a], sh[b], st[a], st[b] = sh[b], sh[a], st[b], st[a]
        st = st if x.stride else None
        if len(x.shape) == 2 and self.rng.random() < 0.3:
            return self.call("aten.t.default", [("node", x.name)], sh, st)
        return self.call("aten.transpose.int",
                         [("node", x.name), ("int", str(a)), ("int", str(b))],
                         sh, st)

    def permute(self, x):
        if len(x.shape) < 2:
            return None
        p = list(range(len(x.shape)))
        self.rng.shuffle(p)
        return self.call("aten.permute.default",
                         [("node", x.name), ("ints", " ".join(map(str, p)))],
                         [x.shape[i] for i in p],
                         [x.stride[i] for i in p] if x.stride else None)

    def unsqueeze(self, x):
        if len(x.shape) >= 5:
            return None
        d = self.rng.randint(0, len(x.shape))
        sh, st = list(x.shape), list(x.stride or x.shape)
        sh.insert(d, 1)
        st.insert(d, st[d] * sh[d + 1] if d < len(st) else 1)
        return self.call("aten.unsqueeze.default",
                         [("node", x.name), ("int", str(d))], sh,
                         st if x.stride else None)

    def squeeze(self, x):
        ones = [d for d, n in enumerate(x.shape) if n == 1]
        if not ones:
            return None
        d = self.rng.choice(ones)
        sh = [n for i, n in enumerate(x.shape) if i != d]
        st = ([s for i, s in enumerate(x.stride) if i != d]
              if x.stride else None)
        return self.call("aten.squeeze.dim",
                         [("node", x.name), ("int", str(d))], sh, st)

    def expand(self, x):
        r = self.rng
        ones = [d for d, n in enumerate(x.shape) if n == 1]
        sh, st = list(x.shape), list(x.stride or x.shape)
        if ones and r.random() < 0.6:
            d = r.choice(ones)
            sh[d], st[d] = r.choice([2, 3, 4]), 0
        elif len(sh) < 4:
            sh, st = [r.choice([2, 3])] + sh, [0] + st
        else:
            return None
        v = self.call("aten.expand.default",
                      [("node", x.name), ("ints", " ".join(map(str, sh)))],
                      sh, st if x.stride else None)
        # Values of an expanded tensor repeat: make them distinct again.
        return self.call("aten.clone.default", [("node", v.name)], sh)

    def new_shape(self, shape):
        """Merge two adjacent dims or split one into two factors."""
        r = self.rng
        sh = list(shape)
        if len(sh) >= 2 and (r.random() < 0.5 or len(sh) >= 4):
            d = r.randrange(len(sh) - 1)
            return sh[:d] + [sh[d] * sh[d + 1]] + sh[d + 2:]
        splittable = [d for d, n in enumerate(sh)
                      if any(n % f == 0 for f in range(2, n))]
        if not splittable:
            return sh + [1] if len(sh) < 4 else None
        d = r.choice(splittable)
        f = r.choice([f for f in range(2, sh[d]) if sh[d] % f == 0])
        return sh[:d] + [f, sh[d] // f] + sh[d + 1:]

    def reshape(self, x):
        sh = self.new_shape(x.shape)
        if sh is None:
            return None
        vs = view_strides(x.shape, x.stride, sh) if x.stride else None
        ints = ("ints", " ".join(map(str, sh)))
        kind = self.rng.choice(["view", "reshape", "alias", "unsafe"])
        if vs is None or kind == "reshape":
            return self.call("aten.reshape.default", [("node", x.name), ints],
                             sh, vs or contiguous(sh) if x.stride else None)
        if kind == "alias":
            return self.call("aten._reshape_alias.default",
                             [("node", x.name), ints,
                              ("ints", " ".join(map(str, vs)))], sh, vs)
        target = ("aten.view.default" if kind == "view"
                  else "aten._unsafe_view.default")
        return self.call(target, [("node", x.name), ints], sh, vs)

    def matmul(self, x):
        r = self.rng
        n = r.choice([2, 3, 4, 5])
        if len(x.shape) == 2:
            w = self.placeholder([x.shape[1], n])
            if r.random() < 0.3:
                b = self.placeholder([n] if r.random() < 0.5
                                     else [x.shape[0], n])
                return self.call("aten.addmm.default",
                                 [("node", b.name), ("node", x.name),
                                  ("node", w.name)], [x.shape[0], n],
                                 contiguous([x.shape[0], n]))
            a, b = (x, w)
            return self.call("aten.mm.default",
                             [("node", a.name), ("node", b.name)],
                             [x.shape[0], n], contiguous([x.shape[0], n]))
        if len(x.shape) == 3:
            B, M, K = x.shape
            if r.random() < 0.5:
                w = self.placeholder([B, K, n])
                if r.random() < 0.4:
                    c = self.placeholder(r.choice([[B, M, n], [n], [M, 1]]))
                    return self.call("aten.baddbmm.default",
                                     [("node", c.name), ("node", x.name),
                                      ("node", w.name),
                                      ("float", "0.5", "beta")],
                                     [B, M, n], contiguous([B, M, n]))
                return self.call("aten.bmm.default",
                                 [("node", x.name), ("node", w.name)],
                                 [B, M, n], contiguous([B, M, n]))
            # make_fx's linear on a 3-D input: weight t, expand, alias, bmm.
            w = self.placeholder([n, K])
            t = self.call("aten.t.default", [("node", w.name)], [K, n],
                          [1, K])
            ex = self.call("aten.expand.default",
                           [("node", x.name), ("ints", "%d %d %d" % (B, M, K))],
                           x.shape, x.stride)
            size = ("ints", "%d %d %d" % (B, M, K))
            if x.stride:
                vs = view_strides(ex.shape, ex.stride, [B, M, K])
                a = self.call("aten._reshape_alias.default",
                              [("node", ex.name), size,
                               ("ints", " ".join(map(str, vs)))], [B, M, K],
                              vs)
            else:
                a = self.call("aten.reshape.default",
                              [("node", ex.name), size], [B, M, K])
            et = self.call("aten.expand.default",
                           [("node", t.name), ("ints", "%d %d %d" % (B, K, n))],
                           [B, K, n], [0, 1, K])
            return self.call("aten.bmm.default",
                             [("node", a.name), ("node", et.name)], [B, M, n],
                             contiguous([B, M, n]))
        return None

    def flat3(self, x, target):
        """x (B, H, A, C) as (B*H, A, C): expand then _reshape_alias, as
        make_fx writes a batched matmul's operand."""
        B, H, A, C = x.shape
        size = "%d %d %d %d" % (B, H, A, C)
        ex = self.call("aten.expand.default", [("node", x.name),
                                                ("ints", size)],
                       x.shape, x.stride)
        vs = view_strides(x.shape, x.stride, [B * H, A, C])
        flat = "%d %d %d" % (B * H, A, C)
        if vs is None:
            c = self.call("aten.clone.default",
                          [("node", ex.name),
                           ("str", "torch.contiguous_format",
                            "memory_format")], x.shape, contiguous(x.shape))
            return self.call("aten._unsafe_view.default",
                             [("node", c.name), ("ints", flat)],
                             [B * H, A, C], contiguous([B * H, A, C]))
        return self.call(target, [("node", ex.name), ("ints", flat)]
                         + ([("ints", " ".join(map(str, vs)))]
                            if target.endswith("_reshape_alias.default")
                            else []), [B * H, A, C], vs)

    def attention(self):
        """Per-head attention as make_fx traces it: (B,T,H,D) inputs
        transposed to heads, flattened to (B*H, ...), bmm, softmax, bmm,
        split back and merged to (B, T, H*D)."""
        r = self.rng
        B, T, H, D = (r.choice([1, 2, 3]), r.choice([2, 3, 4]),
                      r.choice([2, 3, 4]), r.choice([2, 3]))
        q, k, v = (self.placeholder([B, T, H, D]) for _ in range(3))
        qt, kt, vt = (self.transpose_dims(x, 1, 2) for x in (q, k, v))
        ktt = self.transpose_dims(kt, 2, 3)
        alias = "aten._reshape_alias.default"
        s = self.call("aten.bmm.default",
                      [("node", self.flat3(qt, alias).name),
                       ("node", self.flat3(ktt, alias).name)],
                      [B * H, T, T], contiguous([B * H, T, T]))
        s = self.call("aten._unsafe_view.default",
                      [("node", s.name), ("ints", "%d %d %d %d"
                                           % (B, H, T, T))],
                      [B, H, T, T], contiguous([B, H, T, T]))
        a = self.call("aten._softmax.default", [("node", s.name),
                                                ("int", "-1"),
                                                ("bool", "false")],
                      [B, H, T, T], contiguous([B, H, T, T]))
        o = self.call("aten.bmm.default",
                      [("node", self.flat3(a, alias).name),
                       ("node", self.flat3(vt, "aten.view.default").name)],
                      [B * H, T, D], contiguous([B * H, T, D]))
        o = self.call("aten._unsafe_view.default",
                      [("node", o.name), ("ints", "%d %d %d %d"
                                           % (B, H, T, D))],
                      [B, H, T, D], contiguous([B, H, T, D]))
        o = self.transpose_dims(o, 1, 2)
        o = self.call("aten.reshape.default",
                      [("node", o.name), ("ints", "%d %d %d"
                                           % (B, T, H * D))], [B, T, H * D])
        self.outputs.append(o.name)

    def transpose_dims(self, x, a, b):
        sh, st = list(x.shape), list(x.stride)
        sh[a], sh[b], st[a], st[b] = sh[b], sh[a], st[b], st[a]
        return self.call("aten.transpose.int",
                         [("node", x.name), ("int", str(a)), ("int", str(b))],
                         sh, st)

    def chain(self):
        r = self.rng
        if r.random() < 0.2:
            self.attention()
            return
        x = self.placeholder(self.rand_shape())
        steps = [self.ew_unary, self.ew_scalar, self.ew_binary, self.reduce,
                 self.softmax, self.transpose, self.permute, self.unsqueeze,
                 self.squeeze, self.expand, self.reshape, self.reshape,
                 self.matmul, self.matmul]
        for _ in range(r.randint(2, 6)):
            for _ in range(8):
                y = r.choice(steps)(x)
                if y is not None:
                    break
            if y is None:
                continue
            x = y
            if r.random() < 0.15:
                self.outputs.append(x.name)
        if x.name not in self.outputs:
            self.outputs.append(x.name)


def parse_mesh(text):
    return [int(s) for s in text.split("x")]


def graph(seed, mesh, i):
    """Graph i of (seed, mesh) as a Builder, its names prefixed gI_."""
    rng = random.Random("%d/%s/%d" % (seed, "x".join(map(str, mesh)), i))
    b = Builder(rng, mesh, "g%d_" % i)
    b.chain()
    return b


def arg_xml(kind, value, name=None):
    if name:
        return "<kwarg name=%s %s=%s/>" % (quoteattr(name), kind,
                                          quoteattr(value))
    return "<arg %s=%s/>" % (kind, quoteattr(value))


def sharding_xml(pl, order):
    return '<sharding mesh="world" placements="%s"%s/>' % (
        pl, ' order="%s"' % order if order else "")


def write(builders, mesh, name):
    dims = ["m%d" % k for k in range(len(mesh))]
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<dtopt-graph version="1" name=%s view="global">' % quoteattr(name),
           '  <mesh name="world" shape="%s" dims="%s"/>'
           % (" ".join(map(str, mesh)), " ".join(dims))]
    for d in dims:
        out.append('  <group name="%s" mesh="world" dims="%s"/>' % (d, d))
    outputs = []
    for b in builders:
        for v, pl, order in b.placeholders:
            out.append('  <node name="%s" op="placeholder">' % v.name)
            out.append('    <tensor dtype="float64" shape="%s" stride="%s"/>'
                       % (" ".join(map(str, v.shape)),
                          " ".join(map(str, v.stride))))
            out.append('    ' + sharding_xml(pl, order))
            out.append('  </node>')
        for nm, target, args, pin in b.nodes:
            out.append('  <node name="%s" op="call_function" target="%s">'
                       % (nm, target) + "".join(arg_xml(*a) for a in args)
                       + (sharding_xml(*pin) if pin else "") + "</node>")
        outputs += b.outputs
    out.append('  <node name="output" op="output"><arg nodes="%s"/></node>'
               % " ".join(outputs))
    out.append('</dtopt-graph>')
    return "\n".join(out) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--mesh", default="2x2")
    p.add_argument("--first", type=int, default=0)
    p.add_argument("--count", type=int, default=1)
    p.add_argument("-o", "--output")
    a = p.parse_args()
    mesh = parse_mesh(a.mesh)
    text = write([graph(a.seed, mesh, i)
                  for i in range(a.first, a.first + a.count)], mesh,
                 "property_%d_%s" % (a.seed, a.mesh))
    if a.output:
        with open(a.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""random_chains.py: random collective chains, optimised and executed.

usage: random_chains.py --dtopt DTOPT [--mpirun MPIRUN] [--workdir DIR]
                        [--count N] [--seed S] [--jobs J] [--per-run K]
                        [--passes LIST] [--generate-only]

Writes N (default 200) seeded, deterministic local-view graphs into
WORKDIR/graphs, each on a random mesh of 2 or 3 dims of sizes 1-4 (2 to 8
ranks) with random dim names, holding one to three chains:

  * all_gather chains over distinct mesh dims in random order, on a float32
    placeholder of random shape;
  * all_reduce chains with random reduce ops among sum, avg, max, min
    (usually one op, on purpose sometimes sum with avg, or a mix that must
    not fuse);
  * reduce_scatter chains likewise (dim 0 divisible by every group size);

with random identity view chains between links (permute pairs, t∘t,
transpose pairs, view and reshape round trips, unsqueeze/squeeze, alias,
detach, and these nested in one another), and now and then a breaker that
must stop a fusion (the intermediate wait is also an output; a clone or a
lone transpose between links). Single-dim groups are always declared; for
each chain the flattened group is declared in the right order, the wrong
order, both, or not at all, under random names. Outputs are the chains'
results. Placeholders have no <sharding>, so every rank's input differs.

Each graph is then run through `dtopt opt -p fuse-collectives,cancel-views,
dce --remarks` (with --create-groups and --force-fusion each at random),
the result must pass `dtopt verify`, and `mpirun -np RANKS dtopt run
--backend mpi --compare BEFORE AFTER` must exit 0 (J runs at a time,
default 2; see batching below). Where the registry has no fuse-collectives yet, the pipeline is
cancel-views,dce. At the end: graphs, chains and links by kind, fused
chains by kind (from the remarks), collectives before and after by kind,
chains left with one collective by kind, comparisons passed.

Besides a failing command or a difference in any output, a chain the rules
leave the pass no choice about (every group size > 1, the right flattened
group declared or --create-groups, --force-fusion, no breaker, one reduce
op or sum with avg) that keeps more than one collective is a failure: a
pass that fuses nothing would otherwise pass every comparison.

The comparisons are batched: up to --per-run graphs (default 8) of one
mesh shape are merged side by side into one graph pair (mesh dims renamed
m0.., groups and nodes prefixed with the graph's number; renaming changes
only which inputs the placeholders get) and compared by one mpirun, so the
200 graphs need about 40 runs instead of 200; --per-run 1 compares each
graph alone. A batch that differs is a failure, and each of its graphs is
then compared alone to name the culprit. A failure prints the commands to
reproduce it; the graphs stay in WORKDIR (or are copied out of the
temporary folder).

Exit 0 when every graph passed, 1 otherwise."""
import argparse
import collections
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import execlib  # noqa: E402

AG = "_c10d_functional.all_gather_into_tensor.default"
RS = "_c10d_functional.reduce_scatter_tensor.default"
AR = "_c10d_functional.all_reduce.default"
WAIT = "_c10d_functional.wait_tensor.default"
KINDS = {"ag": "all_gather", "ar": "all_reduce", "rs": "reduce_scatter"}
DIM_NAMES = ["dp", "tp", "cp", "pp", "ep", "sp", "fsdp", "x", "y", "z", "rows", "cols"]
OPS = ["sum", "avg", "max", "min"]


# ---------------------------------------------------------------- graphs

class Tensor:
    """What the generator tracks of a value: its shape, and whether its
    strides are row-major (views of other shapes need that)."""

    def __init__(self, shape, contiguous=True):
        self.shape, self.contiguous = list(shape), contiguous

    def ones(self):
        return sum(1 for s in self.shape if s == 1)


class Graph:
    def __init__(self, name, rng):
        self.name, self.rng = name, rng
        self.lines, self.outputs = [], []
        self.groups = {}  # name -> dims text
        self.counter = collections.Counter()

    def fresh(self, stem):
        self.counter[stem] += 1
        return "%s_%d" % (stem, self.counter[stem])

    def node(self, stem, target, *args):
        name = self.fresh(stem)
        parts = []
        for a in args:
            if isinstance(a, str) and a.startswith("="):
                parts.append('<arg str="%s"/>' % a[1:])
            elif isinstance(a, str):
                parts.append('<arg node="%s"/>' % a)
            elif isinstance(a, int):
                parts.append('<arg int="%d"/>' % a)
            else:
                parts.append('<arg ints="%s"/>' % " ".join(map(str, a)))
        self.lines.append('  <node name="%s" op="call_function" target="%s">\n    %s\n  </node>'
                          % (name, target, " ".join(parts)))
        return name

    def placeholder(self, stem, shape):
        name = self.fresh(stem)
        stride, s = [], 1
        for n in reversed(shape):
            stride.append(s)
            s *= n
        self.lines.append('  <node name="%s" op="placeholder">\n    <tensor dtype="float32" '
                          'shape="%s" stride="%s"/>\n  </node>'
                          % (name, " ".join(map(str, shape)), " ".join(map(str, reversed(stride)))))
        return name

    def xml(self, mesh_shape, dim_names, comment):
        groups = "".join('  <group name="%s" mesh="world" dims="%s"/>\n' % g
                         for g in self.groups.items())
        return ('<?xml version="1.0" encoding="UTF-8"?>\n<!-- %s -->\n'
                '<dtopt-graph version="1" name="%s" view="local">\n'
                '  <mesh name="world" shape="%s" dims="%s"/>\n%s%s\n'
                '  <node name="output" op="output">\n    <arg nodes="%s"/>\n  </node>\n'
                '</dtopt-graph>\n'
                % (comment, self.name, " ".join(map(str, mesh_shape)), " ".join(dim_names),
                   groups, "\n".join(self.lines), " ".join(self.outputs)))


def inverse(p):
    q = [0] * len(p)
    for i, v in enumerate(p):
        q[v] = i
    return q


def identity_views(g, v, t, depth=0):
    """Append an identity chain of view steps after v (a value like t);
    returns (the chain's end, the piece names used)."""
    rng = g.rng
    r = len(t.shape)
    choices = ["alias", "detach", "unsqueeze"]
    if r >= 2:
        choices += ["permute", "transpose"]
    if r <= 2:
        choices.append("t")
    if t.contiguous and not t.ones():
        choices += ["view", "reshape"]
    kind = rng.choice(choices)
    inner = depth < 2 and rng.random() < 0.35
    used = [kind]

    def nest(v2, t2):
        if inner:
            v2, more = identity_views(g, v2, t2, depth + 1)
            used.extend(more)
        return v2

    if kind in ("alias", "detach"):
        v = g.node(kind, "aten.%s.default" % kind, v)
        v = nest(v, t)
    elif kind == "permute":
        p = list(range(r))
        while p == list(range(r)):
            rng.shuffle(p)
        v = g.node("permute", "aten.permute.default", v, p)
        v = nest(v, Tensor([t.shape[i] for i in p], False))
        v = g.node("permute", "aten.permute.default", v, inverse(p))
    elif kind == "transpose":
        i, j = rng.sample(range(r), 2)
        shape = list(t.shape)
        shape[i], shape[j] = shape[j], shape[i]
        neg = lambda d: d - r if rng.random() < 0.3 else d  # noqa: E731
        v = g.node("transpose", "aten.transpose.int", v, neg(i), neg(j))
        v = nest(v, Tensor(shape, False))
        a, b = (j, i) if rng.random() < 0.5 else (i, j)
        v = g.node("transpose", "aten.transpose.int", v, neg(a), neg(b))
    elif kind == "t":
        v = g.node("t", "aten.t.default", v)
        v = nest(v, Tensor(list(reversed(t.shape)), r < 2))
        v = g.node("t", "aten.t.default", v)
    elif kind in ("view", "reshape"):
        target = "aten.view.default" if kind == "view" else "aten.reshape.default"
        numel = 1
        for s in t.shape:
            numel *= s
        shape = [numel] if rng.random() < 0.5 or numel < 4 else factor(rng, numel)
        v = g.node(kind, target, v, [-1] if shape == [numel] and rng.random() < 0.5 else shape)
        v = nest(v, Tensor(shape, True))
        back = list(t.shape)
        if rng.random() < 0.3:
            back[rng.randrange(r)] = -1
        v = g.node(kind, target, v, back)
    elif kind == "unsqueeze":
        d = rng.randrange(r + 1)
        shape = list(t.shape)
        shape.insert(d, 1)
        dn = d - (r + 1) if rng.random() < 0.3 else d
        v = g.node("unsqueeze", "aten.unsqueeze.default", v, dn)
        v = nest(v, Tensor(shape, t.contiguous))
        how = rng.random()
        if how < 0.2 and not t.ones():
            v = g.node("squeeze", "aten.squeeze.default", v)
        elif how < 0.5:
            v = g.node("squeeze", "aten.squeeze.dims", v, [dn])
        else:
            v = g.node("squeeze", "aten.squeeze.dim", v, dn)
    return v, used


def factor(rng, n):
    """A random 2-factor shape of n, [a, n/a] with a > 1."""
    divs = [a for a in range(2, n) if n % a == 0]
    if not divs:
        return [n]
    a = rng.choice(divs)
    return [a, n // a]


class Chain:
    """One generated chain and what the rules say about it."""

    def __init__(self, kind, dims, ops, breaker, declared):
        self.kind, self.dims, self.ops = kind, dims, ops
        self.breaker, self.declared = breaker, declared
        self.output = None  # its result's position among the outputs


def flat_group_dims(kind, dims):
    """The ordered dims of the group a whole chain fuses onto (semantics
    §4.1-4.3): gathers reversed (gathered last is slowest), scatters in
    order, all-reduces in any order (we name the chain's)."""
    return list(reversed(dims)) if kind == "ag" else list(dims)


def make_graph(index, seed):
    rng = random.Random("%d:%d" % (seed, index))
    while True:
        ndim = rng.choice([2, 3])
        shape = [rng.randint(1, 4) for _ in range(ndim)]
        total = 1
        for s in shape:
            total *= s
        if 2 <= total <= 8 and sum(1 for s in shape if s > 1) >= 2 or (
                2 <= total <= 8 and rng.random() < 0.1):
            break
    names = rng.sample(DIM_NAMES, ndim)
    g = Graph("chains_%03d" % index, rng)
    # Single-dim groups, always; names either the dim's or g_<dim>.
    single = {}
    style = rng.choice(["bare", "prefixed"])
    for d in range(ndim):
        single[d] = names[d] if style == "bare" else "g_" + names[d]
        g.groups[single[d]] = names[d]
    chains = []
    for _ in range(rng.choice([1, 1, 2, 2, 3])):
        kind = rng.choice(["ag", "ar", "rs"])
        links = rng.choice([2, 2, 3]) if ndim == 3 else 2
        dims = rng.sample(range(ndim), links)
        sizes = [shape[d] for d in dims]
        prod = 1
        for s in sizes:
            prod *= s
        rank = rng.choice([1, 2, 2, 3])
        tshape = [rng.randint(2, 5) for _ in range(rank)]
        if kind == "rs":
            tshape[0] = prod * rng.randint(1, 3)
        if kind == "ar":
            op = rng.choice(OPS)
            mix = rng.random()
            if mix < 0.15:
                ops = [rng.choice(["sum", "avg"]) for _ in dims]
            elif mix < 0.25:
                ops = [rng.choice(OPS) for _ in dims]
            else:
                ops = [op] * links
        elif kind == "rs":
            mix = rng.random()
            if mix < 0.15:
                ops = [rng.choice(["sum", "avg"]) for _ in dims]
            elif mix < 0.2:
                ops = [rng.choice(OPS) for _ in dims]
            else:
                ops = [rng.choice(OPS)] * links
        else:
            ops = [None] * links
        breaker = None
        if rng.random() < 0.12:
            breaker = rng.choice(["extra_user", "clone", "transpose"]
                                 if kind != "rs" else ["extra_user", "clone"])
        # The flattened group: right order, wrong order, both, or none.
        right = flat_group_dims(kind, dims)
        wrong = list(reversed(right))
        mode = rng.choice(["right", "right", "wrong", "both", "missing"])
        declared = []
        if mode in ("right", "both"):
            declared.append(right)
        if mode in ("wrong", "both"):
            declared.append(wrong)
        for gd in declared:
            text = " ".join(names[d] for d in gd)
            if text not in g.groups.values():
                gname = rng.choice(["_".join(names[d] for d in gd), "flat_%d" % len(g.groups)])
                if gname in g.groups:
                    gname = "flat_%d" % len(g.groups)
                g.groups[gname] = text
        # Sub-chains of three links may fuse in part: declare a random pair.
        if links == 3 and rng.random() < 0.3:
            pair = rng.sample(dims, 2)
            text = " ".join(names[d] for d in pair)
            if text not in g.groups.values():
                g.groups["pair_%d" % len(g.groups)] = text
        chain = Chain(kind, dims, ops, breaker, mode)
        chains.append(chain)
        # Emit the chain.
        x = g.placeholder(kind + "_in", tshape)
        v, t = x, Tensor(tshape)
        breaker_at = rng.randrange(links - 1) if breaker else -1
        for i, d in enumerate(dims):
            n = shape[d]
            grp = "=" + single[d]
            if kind == "ag":
                c = g.node(kind, AG, v, n, grp)
                t = Tensor([t.shape[0] * n] + t.shape[1:])
            elif kind == "rs":
                c = g.node(kind, RS, v, "=" + ops[i], n, grp)
                t = Tensor([t.shape[0] // n] + t.shape[1:])
            else:
                c = g.node(kind, AR, v, "=" + ops[i], grp)
                t = Tensor(t.shape)
            v = g.node("wait", WAIT, c)
            if i == links - 1:
                break
            if i == breaker_at:
                if breaker == "extra_user":
                    g.outputs.append(v)
                elif breaker == "clone":
                    v = g.node("clone", "aten.clone.default", v)
                elif len(t.shape) >= 2:
                    v = g.node("transpose", "aten.transpose.int", v, 0, 1)
                    t = Tensor([t.shape[1], t.shape[0]] + t.shape[2:], False)
                else:
                    v = g.node("clone", "aten.clone.default", v)
                    chain.breaker = "clone"
            for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
                v, _used = identity_views(g, v, t)
        chain.output = len(g.outputs)
        g.outputs.append(v)
    comment = "random_chains.py graph %d (seed %d): mesh %s over %s; %s" % (
        index, seed, "x".join(map(str, shape)), " ".join(names),
        "; ".join("%s over %s%s%s" % (KINDS[c.kind], ",".join(names[d] for d in c.dims),
                                     "" if c.kind == "ag" else " " + "/".join(c.ops),
                                     " breaker " + c.breaker if c.breaker else "")
                  for c in chains))
    return g.xml(shape, names, comment), shape, chains, rng


def must_fuse(chain, shape, create_groups, force):
    """Whether semantics §4 leaves the pass no choice but to fuse the whole
    chain into one collective."""
    if chain.breaker or not force:
        return False
    if any(shape[d] == 1 for d in chain.dims):
        return False
    if chain.kind != "ag":
        ops = set(chain.ops)
        if len(ops) != 1 and ops != {"sum", "avg"}:
            return False
    if chain.kind == "ar":
        return chain.declared != "missing" or create_groups
    return chain.declared in ("right", "both") or create_groups


# ---------------------------------------------------------------- running

def chain_collectives(path):
    """Per output of a graph: the collectives on the path from it back to
    a placeholder through first arguments (a chain's links)."""
    root = ET.parse(path).getroot()
    first, target = {}, {}
    outputs = []
    for node in root.findall("node"):
        name = node.get("name")
        target[name] = node.get("target", "")
        arg = node.find("arg")
        if node.get("op") == "output":
            for a in node.iter("arg"):
                outputs.extend(a.get("nodes", "").split() or
                               ([a.get("node")] if a.get("node") else []))
            for it in node.iter("item"):
                outputs.append(it.get("node"))
        elif arg is not None and arg.get("node"):
            first[name] = arg.get("node")
    counts = []
    for v in outputs:
        n = 0
        while v:
            n += target.get(v) in execlib.COLLECTIVES
            v = first.get(v)
        counts.append(n)
    return counts


def list_passes(dtopt):
    p = subprocess.run([dtopt, "opt", "--list-passes"], capture_output=True, text=True)
    return set(re.findall(r"^\s+(\S+)\s", p.stdout + p.stderr, re.M))


def fused_kinds(remarks):
    """Fused chains by kind, from the fuse-collectives remarks."""
    got = collections.Counter()
    for line in remarks.splitlines():
        m = re.search(r"remark: fused (all_gather|all_reduce|reduce_scatter) chain", line)
        if m:
            got[m.group(1)] += 1
    return got


def merge(paths, prefixes, out):
    """Write one graph holding the graphs `paths` (all on meshes of one
    shape) side by side: mesh dims renamed m0, m1, ...; groups, nodes and
    the group names collectives read get the graph's prefix; the outputs
    are all outputs in order. Renaming changes nothing the graphs compute
    except their inputs (placeholder names seed them)."""
    root = None
    groups_out, nodes_out, outputs = [], [], []
    for path, prefix in zip(paths, prefixes):
        g = ET.parse(path).getroot()
        mesh = g.find("mesh")
        dims = mesh.get("dims").split()
        canon = dict((d, "m%d" % i) for i, d in enumerate(dims))
        if root is None:
            root = ET.Element("dtopt-graph", {"version": "1", "name": "merged",
                                              "view": "local"})
            ET.SubElement(root, "mesh", {"name": "world", "shape": mesh.get("shape"),
                                         "dims": " ".join(canon[d] for d in dims)})
        groups = set()
        for grp in g.findall("group"):
            attrs = dict(grp.attrib)
            groups.add(attrs["name"])
            attrs["name"] = prefix + attrs["name"]
            attrs["dims"] = " ".join(canon[d] for d in attrs["dims"].split())
            groups_out.append(ET.Element("group", attrs))
        for node in g.findall("node"):
            node.set("name", prefix + node.get("name"))
            collective = node.get("target", "") in execlib.COLLECTIVES
            for arg in node.iter():
                if arg.get("node"):
                    arg.set("node", prefix + arg.get("node"))
                if arg.get("nodes"):
                    arg.set("nodes", " ".join(prefix + n for n in arg.get("nodes").split()))
                if collective and arg.tag == "arg" and arg.get("str") in groups:
                    arg.set("str", prefix + arg.get("str"))
            if node.get("op") == "output":
                for arg in node.iter():
                    if arg.get("node"):
                        outputs.append(arg.get("node"))
                    elif arg.get("nodes"):
                        outputs.extend(arg.get("nodes").split())
            else:
                nodes_out.append(node)
    root.extend(groups_out + nodes_out)
    output = ET.SubElement(root, "node", {"name": "output", "op": "output"})
    ET.SubElement(output, "arg", {"nodes": " ".join(outputs)})
    ET.ElementTree(root).write(out, encoding="UTF-8", xml_declaration=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtopt", required=True)
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--workdir")
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--per-run", type=int, default=8,
                    help="graphs of one mesh shape compared by one mpirun, side by side "
                    "(1: each graph alone)")
    ap.add_argument("--passes", help="pipeline (default: fuse-collectives,cancel-views,dce, "
                    "or cancel-views,dce without fuse-collectives)")
    ap.add_argument("--generate-only", action="store_true",
                    help="write, optimise and verify the graphs; run nothing under mpirun")
    args = ap.parse_args()
    args.dtopt = os.path.abspath(args.dtopt)
    tmp = None
    if args.workdir:
        workdir = args.workdir
        shutil.rmtree(os.path.join(workdir, "graphs"), ignore_errors=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="random_chains.")
        workdir = tmp.name
    gdir = os.path.join(workdir, "graphs")
    os.makedirs(gdir, exist_ok=True)
    passes = args.passes
    if not passes:
        passes = ("fuse-collectives,cancel-views,dce" if "fuse-collectives" in list_passes(args.dtopt)
                  else "cancel-views,dce")
    print("pipeline: %s; %d graphs, seed %d; up to %d graphs per mpirun, %d mpiruns at a time"
          % (passes, args.count, args.seed, args.per_run, args.jobs), flush=True)

    start = time.monotonic()
    stats = collections.Counter()
    chains_by_kind, links_by_kind = collections.Counter(), collections.Counter()
    fused, before_c, after_c = collections.Counter(), collections.Counter(), collections.Counter()
    failures, unfused = [], []
    whole = collections.Counter()  # chains left with one collective, by kind
    fusing = "fuse-collectives" in passes.split(",")
    by_mesh = collections.OrderedDict()  # mesh shape -> [(name, before, after, info)]

    def fail(name, what, result=None, repro=()):
        failures.append(name)
        print("FAIL %s: %s" % (name, what))
        if result is not None:
            print("    " + result.describe().replace("\n", "\n    "))
        for r in repro:
            print("    reproduce: " + r)
        sys.stdout.flush()

    # 1. Generate, verify, optimise and verify every graph.
    for i in range(args.count):
        text, shape, chains, rng = make_graph(i, args.seed)
        name = "chains_%03d" % i
        before = os.path.join(gdir, name + ".xml")
        after = os.path.join(gdir, name + ".after.xml")
        with open(before, "w") as f:
            f.write(text)
        create = rng.random() < 0.5
        force = rng.random() < 0.7
        flags = ["-p", passes, "--remarks"]
        flags += ["--create-groups"] if create else []
        flags += ["--force-fusion"] if force else []
        stats["graphs"] += 1
        for c in chains:
            chains_by_kind[KINDS[c.kind]] += 1
            links_by_kind[KINDS[c.kind]] += len(c.dims)
        ver = execlib.run([args.dtopt, "verify", before])
        if ver.code != 0:
            fail(name, "the generated graph does not verify", ver)
            continue
        opt = execlib.run([args.dtopt, "opt"] + flags + [before, "-o", after])
        repro = [" ".join([args.dtopt, "opt"] + flags + [before, "-o", after])]
        if opt.code != 0:
            fail(name, "dtopt opt failed", opt, repro)
            continue
        ver = execlib.run([args.dtopt, "verify", after])
        if ver.code != 0:
            fail(name, "the optimised graph does not verify", ver, repro)
            continue
        info, got = execlib.GraphInfo(before), execlib.GraphInfo(after)
        for k, v in info.collectives.items():
            before_c[k] += v
        for k, v in got.collectives.items():
            after_c[k] += v
        fk = fused_kinds(opt.err)
        fused.update(fk)
        # Chains left with one collective, and the chains the rules leave
        # the pass no choice about, which must be among them.
        left = chain_collectives(after)
        for c in chains:
            one = left[c.output] == 1
            whole[KINDS[c.kind]] += one
            if fusing and must_fuse(c, shape, create, force):
                stats["must_fuse"] += 1
                if not one:
                    unfused.append("%s: the %s chain over %s kept %d collectives" % (
                        name, KINDS[c.kind], ",".join(map(str, c.dims)), left[c.output]))
                    fail(name, "a chain the rules say must fuse kept %d collectives"
                         % left[c.output], opt, repro)
        print("opt  %s mesh %s [%s]: collectives %d -> %d, nodes %d -> %d" % (
            name, "x".join(map(str, shape)), " ".join(flags[2:]), info.ncollectives(),
            got.ncollectives(), info.nodes, got.nodes), flush=True)
        by_mesh.setdefault(tuple(shape), []).append((name, before, after, info))

    # 2. Compare each graph with its optimised form under mpirun, several
    # graphs of one mesh shape side by side, J runs at a time.
    runs = []
    for shape, entries in by_mesh.items():
        for k in range(0, len(entries), max(1, args.per_run)):
            runs.append(entries[k:k + max(1, args.per_run)])
    pending = []

    def launch(batch):
        if len(batch) == 1:
            name, before, after, info = batch[0]
        else:
            name = "%s..%s" % (batch[0][0], batch[-1][0][7:])
            tag = batch[0][0] + ".merged"
            before, after = (os.path.join(gdir, tag + s) for s in (".xml", ".after.xml"))
            prefixes = ["%s_" % e[0][7:] for e in batch]
            merge([e[1] for e in batch], prefixes, before)
            merge([e[2] for e in batch], prefixes, after)
            info = batch[0][3]
        cmd = execlib.compare_cmd(args.dtopt, args.mpirun, info, before, after)
        return batch, name, execlib.start(cmd)

    def collect(entry, retry=True):
        batch, name, job = entry
        res = execlib.finish(*job)
        results = execlib.compare_results(res.out)
        if res.code != 0 or not results or "MISMATCH" in results:
            if len(batch) > 1 and retry:
                fail(name, "the results differ side by side (rerunning each graph alone)",
                     res, [" ".join(res.cmd)])
                for e in batch:
                    collect(launch([e]), retry=False)
                return
            fail(name, "the results differ", res, [" ".join(res.cmd)])
            return
        stats["compared"] += len(batch)
        stats["mpiruns"] += 1
        stats["compare_time"] += res.took
        for k, v in results.items():
            stats["outputs_" + k] += v
        print("run  %s (%d graphs, %d ranks): %s (%.1f s)" % (
            name, len(batch), batch[0][3].ranks, execlib.format_counts(results), res.took),
            flush=True)

    if not args.generate_only:
        for batch in runs:
            while len(pending) >= max(1, args.jobs):
                collect(pending.pop(0))
            pending.append(launch(batch))
        while pending:
            collect(pending.pop(0))

    took = time.monotonic() - start
    print()
    print("graphs: %d (seed %d), pipeline %s" % (stats["graphs"], args.seed, passes))
    print("chains: %s" % execlib.format_counts(chains_by_kind))
    print("links:  %s" % execlib.format_counts(links_by_kind))
    print("fused chains (remarks): %s" % execlib.format_counts(fused))
    print("chains left with one collective: %s" % execlib.format_counts(whole))
    print("collectives before: %s" % execlib.format_counts(before_c))
    print("collectives after:  %s" % execlib.format_counts(after_c))
    print("chains the rules say must fuse: %d; not fused: %d"
          % (stats["must_fuse"], len(unfused)))
    for u in unfused[:20]:
        print("    " + u)
    if not args.generate_only:
        print("comparisons passed: %d of %d graphs in %d mpiruns (outputs %s; %.0f s under mpirun)"
              % (stats["compared"], stats["graphs"], stats["mpiruns"], " ".join(
                  "%s=%d" % (k[8:], v) for k, v in sorted(stats.items())
                  if k.startswith("outputs_")), stats["compare_time"]))
    failed = sorted(set(failures))
    print("failures: %d%s" % (len(failed), (" (" + " ".join(failed[:20]) + ")") if failed else ""))
    print("time: %.0f s" % took)
    if failures and tmp:
        # Keep the failing graphs: copy them out of the temporary folder.
        keep = tempfile.mkdtemp(prefix="random_chains_failed.")
        for f in os.listdir(gdir):
            shutil.copy(os.path.join(gdir, f), keep)
        print("graphs kept in %s" % keep)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: MIT
"""Expert reference plans for the real-model suite (issue 11 part 4): the
plans a person writes by hand, as pinned global-view graphs, the yardstick
of dtopt's own search.

An expert plan names which *logical axes* each mesh dim splits (Mesh
TensorFlow's layouts): DP and FSDP split the batch, Megatron TP the
attention heads (and the GQA key/value heads) and the MLP hidden dim. The
parameters keep the placements of models.PLACEMENTS (their storage); the
plan derives every intermediate's placements from the graph itself:

1. ``label``: every tensor dim of the traced fwd+bwd graph gets its axes,
   propagated from the inputs' (AXES below: one string per input) by
   what each aten op does with dims: views merge and split them (a merged
   dim is a list of axes, outer first), permutes move them, matmuls and
   reductions contract them. No node name is written down, so the labels
   survive re-tracing.
2. ``plan_pins``: a value's placement on mesh dim m is S(d) where its dim d
   holds an axis m splits (``_S(d,P)`` when that axis is inner in a merged
   dim behind outer axes of product P), else P(sum) (P(avg) for a mean)
   where it is a partial sum over such an axis, else R. Partial sums
   follow Megatron: a contraction over a split axis (row-parallel linear,
   the input gradient of a column-parallel one, a weight gradient over the
   batch) makes one, sums of partials and views keep it, and the first
   other consumer all-reduces it. Parameters are used at their compute
   placements (the plan's axes: an FSDP shard is all-gathered before use;
   its gradient, pinned to the storage placements by the exporter, is
   reduce-scattered).

Every call node gets its result 0's pin, except getitems (they follow
their node), values downstream of a parameter gradient (the SGD step:
shard-prop follows the gradient's shard), and values whose placements
dtopt cannot write (an inner axis of a merged dim split before its outer
one; the batch x heads of a bmm under dp x tp is a nested _S, `S(0)
_S(0,B/dp)`): those few are left to shard-prop, and `dtopt opt --remarks`
names any pin no strategy gives.

Under tp the mixture of experts splits its experts (expert parallel,
as DeepSpeed-MoE and Megatron's MoE layers place them): every rank runs
its experts on every row, and the combined output is a partial sum over
them, all-reduced.

Embedding and loss, as Megatron has them, need rules dtopt lacks (a masked
vocab-parallel lookup P(sum) <- table S(0), and log_softmax / the
cross-entropy over a split class dim), so under TP the expert all-gathers
the token embedding table and the LM head (classifier) weight before use
(their gradients are computed replicated and cut to the shard locally).
"""

import torch
import torch.utils._pytree  # noqa: F401  (tree_flatten)

import fx_export
import models

# The axes of each input's dims (batch inputs, parameters), one word per
# dim, merged axes joined by '*' (outer first).
AXES = {
    "gpt2": {
        "idx": "batch seq", "targets": "batch seq", "wte": "vocab hidden", "wpe": "seq hidden", "ln1_w": "hidden",
        "ln1_b": "hidden", "wq": "heads*hd hidden", "bq": "heads*hd",
        "wk": "heads*hd hidden", "bk": "heads*hd", "wv": "heads*hd hidden",
        "bv": "heads*hd", "wo": "hidden heads*hd", "bo": "hidden",
        "ln2_w": "hidden", "ln2_b": "hidden", "w_fc": "ffn hidden",
        "b_fc": "ffn", "w_proj": "hidden ffn", "b_proj": "hidden",
        "lnf_w": "hidden", "lnf_b": "hidden", "w_head": "vocab hidden"},
    "llama": {
        "idx": "batch seq", "targets": "batch seq", "emb": "vocab hidden", "attn_norm": "hidden",
        "wq": "heads*hd hidden", "wk": "kv*hd hidden", "wv": "kv*hd hidden",
        "wo": "hidden heads*hd", "ffn_norm": "hidden",
        "w_gate": "ffn hidden", "w_up": "ffn hidden", "w_down": "hidden ffn",
        "norm": "hidden", "w_head": "vocab hidden"},
    "mlp_sgd": {"x": "batch hidden", "y": "batch hidden", "w1": "ffn hidden", "b1": "ffn", "w2": "hidden ffn",
                "b2": "hidden"},
    "mixer": {
        "x": "batch seq hidden", "labels": "batch", "ln1_w": "hidden", "ln1_b": "hidden", "tok1_w": "ffn seq",
        "tok1_b": "ffn", "tok2_w": "seq ffn", "tok2_b": "seq",
        "ln2_w": "hidden", "ln2_b": "hidden", "ch1_w": "ffn hidden",
        "ch1_b": "ffn", "ch2_w": "hidden ffn", "ch2_b": "hidden",
        "head_w": "class hidden", "head_b": "class"},
    "bert": {
        "idx": "batch seq", "pad": "batch seq", "labels": "batch",
        "emb": "vocab hidden", "pos": "seq hidden", "ln0_w": "hidden",
        "ln0_b": "hidden", "wq": "heads*hd hidden", "bq": "heads*hd",
        "wk": "heads*hd hidden", "bk": "heads*hd", "wv": "heads*hd hidden",
        "bv": "heads*hd", "wo": "hidden heads*hd", "bo": "hidden",
        "ln1_w": "hidden", "ln1_b": "hidden", "w_fc": "ffn hidden",
        "b_fc": "ffn", "w_proj": "hidden ffn", "b_proj": "hidden",
        "ln2_w": "hidden", "ln2_b": "hidden", "w_pool": "pool hidden",
        "b_pool": "pool", "w_cls": "class pool", "b_cls": "class"},
    "moe": {"x": "batch hidden", "y": "batch hidden",
            "w_gate": "hidden gate", "w_in": "experts hidden ffn",
            "w_out": "experts ffn hidden"},
}


def _outer_sizes(models, model):
    """Sizes of the outer axes of merged parameter dims (the inner one
    takes the rest)."""
    return {"heads": {"gpt2": models.GPT2_HEADS,
                      "bert": models.BERT_HEADS}.get(model,
                                                     models.LLAMA_HEADS),
            "kv": models.LLAMA_KV_HEADS}


TP_AXES = {"heads", "kv", "ffn", "experts"}  # experts: expert parallel
BATCH = {"batch"}

# The expert plan of each placement of models.PLACEMENTS (which gives the
# mesh and the parameters' storage): {mesh dim: the axes it splits}. No
# expert writes 'naive'.
PLANS = {
    "dp": {"dp": BATCH},  # DP: one all-reduce per gradient
    "fsdp": {"dp": BATCH},  # FSDP: all-gather before use, reduce-scatter
    "tp": {"tp": TP_AXES},  # Megatron TP: column- then row-parallel
    "dp_tp": {"dp": BATCH, "tp": TP_AXES},  # DP x TP
    "fsdp_tp": {"dp": BATCH, "tp": TP_AXES},  # FSDP x TP
    "3d": {"dp": BATCH, "fsdp": BATCH, "tp": TP_AXES},  # HSDP x TP
}

# The collectives an expert plan must lower to where the textbook says what
# they are (the suite's stage expert-plan; run_models.format_collectives).
# DP: one all-reduce per gradient (GPT-2 21, Llama 12, Mixer 14) and two
# scalar ones, the mean loss and nll_loss's total weight (which its backward
# reads replicated). FSDP: one all-gather per parameter, one reduce-scatter
# per gradient, and the same two scalars. Megatron TP: 2 all-reduces per
# block forward (attention, MLP) and 2 backward (the input gradients of the
# column-parallel linears), plus the all-gathers of the token embedding
# table and the LM head (see above); the MLP's one all-reduce forward (its
# input needs no gradient); the Mixer's two MLPs, plus the input gradient of
# its first LayerNorm, which only its weight gradients read. Not listed: the
# MLP under DP / FSDP (mse_loss_backward with reduction mean has no sharded
# rule: its kernel divides by the local count, so prediction and target are
# all-gathered) and the 2-D / 3-D plans.
TEXTBOOK = {
    "gpt2/dp": "23 AR[dp]",
    "llama/dp": "14 AR[dp]",
    "mixer/dp": "16 AR[dp]",
    "gpt2/fsdp": "2 AR[dp] + 21 RS[dp] + 21 AG[dp]",
    "llama/fsdp": "2 AR[dp] + 12 RS[dp] + 12 AG[dp]",
    "mixer/fsdp": "2 AR[dp] + 14 RS[dp] + 14 AG[dp]",
    "gpt2/tp": "4 AR[tp] + 2 AG[tp]",
    "llama/tp": "4 AR[tp] + 2 AG[tp]",
    "mlp_sgd/tp": "1 AR[tp]",
    "mixer/tp": "5 AR[tp] + 2 AG[tp]",
}

# ---------------------------------------------------------------------------
# Labels: a dim is a list of atoms (axis, size), outer first; None for an
# axis no plan splits or that is unknown.


def _parse_axes(text, shape, outer):
    dims = text.split()
    if len(dims) != len(shape):
        raise ValueError("axes %r for a tensor of shape %s" % (text, shape))
    out = []
    for word, size in zip(dims, shape):
        names = word.split("*")
        atoms, rest = [], size
        for n in names[:-1]:
            atoms.append((n, outer[n]))
            rest //= outer[n]
        atoms.append((names[-1], rest))
        out.append(atoms)
    return out


def _unknown(shape):
    return [[(None, s)] if s != 1 else [] for s in shape]


def _size(atoms):
    p = 1
    for _, s in atoms:
        p *= s
    return p


def _reshape(labels, shape):
    """Labels of a view of a tensor labelled `labels` to `shape`: atoms in
    order, regrouped by the new sizes (an atom split in two keeps its name
    on the outer piece)."""
    atoms = [a for dim in labels for a in dim if a[1] != 1]
    out = []
    for size in shape:
        dim, need = [], size
        while need > 1 and atoms:
            name, s = atoms.pop(0)
            if s <= need and need % s == 0:
                dim.append((name, s))
                need //= s
            elif s % need == 0:
                dim.append((name, need))
                atoms.insert(0, (name and name + "'", s // need))
                need = 1
            else:
                return _unknown(shape)
        if need != 1:
            return _unknown(shape)
        out.append(dim)
    return out


def _resize(dim, size):
    """A dim's atoms at another length (slice, cat): one atom keeps its name."""
    if size == 1:
        return []
    if len(dim) == 1:
        return [(dim[0][0], size)]
    return [(None, size)]


_POINTWISE_LINEAR = {"aten.clone.default", "aten.detach.default",
                     "aten.alias.default", "aten.neg.default",
                     "aten.mul.Scalar", "aten.div.Scalar",
                     "aten.lift_fresh_copy.default"}
_VIEWS = {"aten.view.default", "aten._unsafe_view.default",
          "aten._reshape_alias.default", "aten.reshape.default"}
_CONTRACT = {"aten.mm.default", "aten.addmm.default", "aten.bmm.default",
             "aten.sum.dim_IntList", "aten.mean.dim",
             "aten.embedding_dense_backward.default",
             "aten.native_layer_norm_backward.default",
             "aten.nll_loss_forward.default", "aten.mse_loss.default"}


class Value:
    """One node's results: labels (one list of atoms per dim) and, for
    each result, the axes it is a partial sum over {axis: 'sum'|'avg'}."""

    def __init__(self, labels, contracted=None):
        self.labels = labels  # list per result
        self.contracted = contracted or [{} for _ in labels]
        self.pinnable = bool(labels)


def _shapes(n, descs):
    d = descs.get(n)
    return [t.shape for t in d] if d else None


def _tensor_args(n):
    return [a for a in n.args if isinstance(a, torch.fx.Node)]


def _inputs(n):
    """Every node n reads, in lists too (cat)."""
    return _tensor_args(n) + [a for lst in n.args
                              if isinstance(lst, (list, tuple))
                              for a in lst if isinstance(a, torch.fx.Node)]


def label(gm, descs, model, models):
    """node -> Value for every node of the traced graph."""
    outer = _outer_sizes(models, model)
    axes = {k + "_1": v for k, v in AXES[model].items()}  # make_fx's names
    vals = {}

    def lab(a, i=0):
        return vals[a].labels[i]

    for n in gm.graph.nodes:
        shapes = _shapes(n, descs)
        t = str(n.target)
        if n.op == "placeholder":
            vals[n] = Value([_parse_axes(axes[n.name], shapes[0], outer)])
            continue
        if n.op != "call_function":
            vals[n] = Value([_unknown(s) for s in shapes or []])
            continue
        if t == "<built-in function getitem>":
            src, i = n.args
            if i >= len(vals[src].labels):
                vals[n] = Value([_unknown(shapes[0])])
            else:
                vals[n] = Value([vals[src].labels[i]],
                                [vals[src].contracted[i]])
            continue
        if shapes is None and t != "aten.native_layer_norm_backward.default":
            vals[n] = Value([])  # a missing result: nothing to pin
            continue
        args = n.args
        x = args[0] if args and isinstance(args[0], torch.fx.Node) else None
        contracted = {}
        if t in _VIEWS:
            out = [_reshape(lab(x), shapes[0])]
        elif t in ("aten.t.default", "aten.transpose.int",
                   "aten.permute.default"):
            lx = lab(x)
            if t == "aten.permute.default":
                perm = [p % len(lx) for p in args[1]]
            else:
                i, j = ((0, 1) if t == "aten.t.default"
                        else (args[1] % len(lx), args[2] % len(lx)))
                perm = list(range(len(lx)))
                perm[i], perm[j] = perm[j], perm[i]
            out = [[lx[p] for p in perm]]
        elif t == "aten.expand.default":
            lx, shape = lab(x), shapes[0]
            lead = len(shape) - len(lx)
            out = [_unknown(shape[:lead]) + [
                d if _size(d) == s else [(None, s)]
                for d, s in zip(lx, shape[lead:])]]
        elif t == "aten.unsqueeze.default":
            lx = list(lab(x))
            lx.insert(args[1] % (len(lx) + 1), [])
            out = [lx]
        elif t in ("aten.squeeze.dim", "aten.select.int"):
            lx = list(lab(x))
            del lx[args[1] % len(lx)]
            out = [lx]
        elif t == "aten.select_backward.default":  # (grad, sizes, dim, i)
            lx = list(lab(x))
            dim = args[2] % (len(lx) + 1)
            lx.insert(dim, [(None, shapes[0][dim])])
            out = [lx]
        elif t in ("aten.slice.Tensor", "aten.slice_backward.default",
                   "aten.cat.default"):
            src = args[0][0] if t == "aten.cat.default" else x
            dim = (args[1] if t == "aten.cat.default" else
                   args[2] if t == "aten.slice_backward.default" else args[1])
            lx = list(lab(src))
            dim %= len(lx)
            lx[dim] = _resize(lx[dim], shapes[0][dim])
            out = [lx]
        elif t in ("aten.mm.default", "aten.addmm.default"):
            a, b = _tensor_args(n)[-2:]
            out = [[lab(a)[0], lab(b)[1]]]
            contracted = {ax: "sum" for ax, _ in lab(a)[1] + lab(b)[0]}
        elif t == "aten.bmm.default":
            a, b = _tensor_args(n)
            out = [[lab(a)[0], lab(a)[1], lab(b)[2]]]
            contracted = {ax: "sum" for ax, _ in lab(a)[2] + lab(b)[1]}
        elif t in ("aten.sum.dim_IntList", "aten.mean.dim"):
            lx = lab(x)
            dims = {d % len(lx) for d in args[1]}
            keep = len(args) > 2 and args[2]
            out = [[[] if i in dims else d for i, d in enumerate(lx)
                    if keep or i not in dims]]
            kind = "avg" if t == "aten.mean.dim" else "sum"
            contracted = {ax: kind for i in dims for ax, _ in lx[i]}
        elif t == "aten.native_layer_norm.default":
            lx, k = lab(x), len(args[1])
            stat = lx[:-k] + [[]] * k
            out = [lx, stat, stat]
        elif t == "aten.native_layer_norm_backward.default":
            g, w, b = args[0], args[5], args[6]
            lead = lab(g)[:-len(args[2])]
            out = [lab(g), lab(w) if w is not None else [],
                   lab(b) if b is not None else []]
            red = {ax: "sum" for d in lead for ax, _ in d}
            vals[n] = Value(out, [{}, red, red])
            vals[n].pinnable = shapes is not None  # else a result is None
            continue
        elif t == "aten.embedding.default":
            w, idx = args[0], args[1]
            out = [lab(idx) + [lab(w)[1]]]
        elif t == "aten.embedding_dense_backward.default":
            g, idx = args[0], args[1]
            out = [[[("vocab", shapes[0][0])], lab(g)[-1]]]
            contracted = {ax: "sum" for d in lab(idx) for ax, _ in d}
        elif t == "aten.nll_loss_forward.default":
            kind = "avg" if args[3] == 1 else "sum"
            red = {ax: kind for ax, _ in lab(x)[0]}
            vals[n] = Value([[], []],
                            [red, {ax: "sum" for ax in red}])
            continue
        elif t == "aten.mse_loss.default":
            kind = "avg" if len(args) < 3 or args[2] == 1 else "sum"
            out = [[]]
            contracted = {ax: kind for d in lab(x) for ax, _ in d}
        elif t in ("aten.nll_loss_backward.default",
                   "aten.mse_loss_backward.default"):
            out = [lab(args[1])]
        elif t in ("aten._softmax_backward_data.default",
                   "aten._log_softmax_backward_data.default"):
            out = [lab(x)]
        else:  # pointwise (broadcasting) or creation
            out = [_pointwise(n, shapes[0], lab)]
        vals[n] = Value(out, [dict(contracted) for _ in out])
    return vals


def _pointwise(n, shape, lab):
    """Each output dim takes the atoms of the first tensor operand that is
    not broadcast there and names them."""
    out = []
    ops = [lab(a) for a in _tensor_args(n)]
    for i in range(len(shape)):
        pick = [(None, shape[i])] if shape[i] != 1 else []
        for lx in ops:
            j = i - (len(shape) - len(lx))
            if j >= 0 and _size(lx[j]) == shape[i] and \
                    any(ax for ax, _ in lx[j]):
                pick = lx[j]
                break
        out.append(pick)
    return out


# ---------------------------------------------------------------------------
# Placements of one plan


def _is_linear_in(n, x):
    """Whether node n may keep operand x's partial sum (Megatron: views,
    copies, scalings, sums of partials, reductions; anything else reduces
    it first)."""
    t = str(n.target)
    if t in _VIEWS or t in _POINTWISE_LINEAR or t in (
            "aten.t.default", "aten.transpose.int", "aten.permute.default",
            "aten.expand.default", "aten.unsqueeze.default",
            "aten.squeeze.dim", "aten.sum.dim_IntList"):
        return True
    if t in ("aten.mul.Tensor", "aten.div.Tensor"):
        return all(not isinstance(a, torch.fx.Node) for a in n.args
                   if a is not x)
    if t in ("aten.add.Tensor", "aten.sub.Tensor"):
        return True  # when every operand is partial alike (checked after)
    return False


def _dim_placement(labels, axes):
    """(dim, pieces) of the tensor dim holding an axis in `axes`, pieces =
    the product of the atoms outside it (1: plain S); None when no dim
    holds one; False when it cannot be written."""
    found = None
    for d, dim in enumerate(labels):
        outer = 1
        for ax, s in dim:
            if ax in axes:
                if found is not None:
                    return False
                found = (d, outer)
            outer *= s
    return found


def placements_of(labels, partial, plan_axes, dims, sizes):
    """The placements string of a value on a mesh of `sizes`, or None when
    dtopt cannot write it. A merged dim whose outer axis some mesh dims
    split (S) and an inner one later mesh dims (dp x tp attention's batch
    x heads) is a nested _S: its factor counts the pieces of each S chunk
    (semantics §6.1)."""
    toks, held = [], {}
    for m, n in zip(dims, sizes):
        f = _dim_placement(labels, plan_axes.get(m, ()))
        if f is False:
            return None
        if f is not None:
            d, pieces = f
            outer = held.setdefault(d, {"plain": 1, "pieces": None})
            if pieces == 1:
                if outer["pieces"] is not None:
                    return None  # S after _S on one dim: a shard order
                outer["plain"] *= n
                toks.append("S(%d)" % d)
            else:
                if outer["pieces"] not in (None, pieces) or \
                        pieces % outer["plain"]:
                    return None
                outer["pieces"] = pieces
                sf = pieces // outer["plain"]
                toks.append("_S(%d,%d)" % (d, sf) if sf > 1 else
                            "S(%d)" % d)
        elif m in partial:
            toks.append("P(%s)" % partial[m])
        else:
            toks.append("R")
    return " ".join(toks)


def plan_pins(gm, vals, plan_axes, dims, sizes, output_pins):
    """{node name: placements of result 0} for plan `plan_axes` ({mesh dim:
    axes}), over mesh dims `dims` of sizes `sizes`; `output_pins` {node:
    placements} are the exporter's output pins (kept, and followed by later
    nodes)."""
    out_node = [n for n in gm.graph.nodes if n.op == "output"][0]
    flat = list(torch.utils._pytree.tree_flatten(out_node.args[0])[0])
    grads = set(flat[1:])
    skip = set()
    for n in gm.graph.nodes:  # downstream of a gradient: the update
        if any(a in grads or a in skip for a in _inputs(n)):
            skip.add(n)
    # partial[node] = per result {mesh dim: kind}
    partial, pins = {}, {}

    def part_of(a):
        if a in output_pins:
            toks = output_pins[a].split()
            return {m: t[2:-1] for m, t in zip(dims, toks)
                    if t.startswith("P(")}
        return partial.get(a, [{}])[0]

    for n in gm.graph.nodes:
        v = vals[n]
        if n.op != "call_function":
            partial[n] = [{} for _ in v.labels] or [{}]
            continue
        t = str(n.target)
        if t == "<built-in function getitem>":
            src, i = partial[n.args[0]], n.args[1]
            partial[n] = [src[i] if i < len(src) else {}]  # as label()
            continue
        ins = _inputs(n)
        kept = {}
        in_parts = [part_of(a) for a in ins]
        linear = all(_is_linear_in(n, a) for a, p in zip(ins, in_parts) if p)
        if t in ("aten.add.Tensor", "aten.sub.Tensor") and \
                len({tuple(sorted(p.items())) for p in in_parts}) > 1:
            linear = False
        if linear:
            for p in in_parts:
                kept.update(p)
        res = []
        for i, labels in enumerate(v.labels):
            p = dict(kept)
            for m in dims:
                for ax, kind in v.contracted[i].items():
                    if ax in plan_axes.get(m, ()):
                        p[m] = kind
            res.append(p)
        partial[n] = res or [kept]
        if n in output_pins or n in skip or not v.pinnable:
            continue
        pl = placements_of(v.labels[0], partial[n][0], plan_axes, dims,
                           sizes)
        if pl is not None:
            pins[n.name] = pl
    return pins


# ---------------------------------------------------------------------------
# The pinned graph


def export(gm, inputs, model, placement, path, models_mod=None):
    """Write model `model` (traced: gm, inputs) under the expert plan of
    `placement` (PLANS) as a pinned global-view graph at `path`; returns
    {node name: placements}, the pins added (fx_export.ExportError when it
    cannot be written). models_mod: models.py loaded at other sizes."""
    mods = models_mod or models
    plan_axes = PLANS[placement]
    shape, dims, pl, outs = mods.config_placements(model, placement)
    descs = fx_export._collect_metadata(gm, inputs)
    vals = label(gm, descs, model, mods)
    out_node = [n for n in gm.graph.nodes if n.op == "output"][0]
    flat = torch.utils._pytree.tree_flatten(out_node.args[0])[0]
    output_pins = {v: o for v, o in zip(flat, outs)
                   if isinstance(v, torch.fx.Node) and v.op == "call_function"}
    pins = plan_pins(gm, vals, plan_axes, dims, shape, output_pins)
    fx_export.export(gm, inputs, mesh_shape=shape, mesh_dims=dims,
                     placements=pl, output_placements=outs,
                     node_placements=pins, path=path,
                     name="%s_%s_expert" % (model, placement))
    return pins

#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""variants.py: the real-model suite's models (models.py) under sizes and
placements run_models.py does not try: odd and small sizes (uneven shards),
sequence parallelism, 3-rank and 2x3 / 3x2 meshes, parameters split on the
other dim, more heads... For every variant:

  export     trace with make_fx at the variant's sizes, write the global
             graph G (tools/fx_export.py, outputs pinned as run_models.py
             pins them)
  verify     dtopt verify G
  check      mpirun -np N dtopt run --check G (per-rank lowering on every
             rank against the single-rank run of G)
  spmd       dtopt opt G -o OUT.xml --create-groups (one program; a refusal
             with a message is an outcome, not a failure)
  lower      where spmd is refused: dtopt opt G -o 'OUT.{rank}.xml'
             --create-groups (one program per rank, fused as OUT.xml is)
  check-ref  mpirun -np N dtopt run --check --reference G OUT.xml (or the
             per-rank files)
  eager      dtopt run --backend cpu G against torch eager

Each outcome is classified: ok, refused (exit 1 with an `error:` line),
MISMATCH (wrong numbers), crash (any other exit, a signal, no summary) or
hang (no end within --timeout seconds).

usage: variants.py DTOPT [--mpirun M] [--workdir W] [--variant PATTERN]...
                   [--fuzz N [--fuzz-seed S]] [--timeout S] [--list]
                   [--require-spmd] [--require-global]

--fuzz N adds N random variants (a mesh, a size set, random placements per
input and parameter; fuzz/SEED reproduces one). The exit status is 1 when an
outcome is MISMATCH, crash or hang (with --require-spmd also when the one
SPMD program is refused or not reached; the models suite runs the uneven
sequence-parallel variants so; with --require-global also when `opt`
warns that shard-prop decided node by node: spmd=node-by-node, as the
suite runs the 12-block GPT-2 on 2x2x2); note that `run --check` compares
gradients through relu exactly, and an input of runtime/inputs.c's 1/8 grid
can put a pre-activation exactly on 0, where another summation order (an
R -> P(sum) division by 3) flips the relu mask: check such a MISMATCH with
another `--seed` before calling it a wrong program.
Needs Debian's /usr/bin/python3 with python3-torch.
"""
import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run_models as rm  # noqa: E402  (puts tools/ on sys.path)
import fx_export  # noqa: E402
import torch  # noqa: E402

MODELS_PY = os.path.join(HERE, "models.py")

# A top-level size constant line of models.py, e.g. `B, T, H, V = 8, ...`.
_CONST_RE = re.compile(r"^([A-Z][A-Z0-9_]*(, [A-Z][A-Z0-9_]*)*) = [0-9., ]+$",
                       re.M)


def load_models(sizes):
    """A fresh copy of models.py whose size constants in `sizes` (e.g.
    {"B": 6, "GPT2_HEADS": 3}) replace its own, before anything derived from
    them (parameter shapes) is computed."""
    with open(MODELS_PY) as f:
        src = f.read()
    known = {n for m in _CONST_RE.finditer(src)
             for n in m.group(1).split(", ")} | {"_dtype"}
    unknown = set(sizes) - known
    if unknown:
        sys.exit("variants.py: models.py has no constant %s" % sorted(unknown))
    src = _CONST_RE.sub(lambda m: m.group(0) + "; globals().update(_SIZES)",
                        src)
    mod = types.ModuleType("models_variant")
    mod.__dict__["_SIZES"] = dict(sizes)
    exec(compile(src, MODELS_PY, "exec"), mod.__dict__)
    return mod


# ---------------------------------------------------------------------------
# Placements: (mesh shape, mesh dims, batch(name, rank) -> placements,
# param(role, rank, name) -> placements[, extra]); extra: see extra()


def tp_of(role, rank, col="S(0)", row="S(1)"):
    """The tp placement of a parameter of `role`: Megatron's by default;
    col/row give the dims split instead (None: replicate)."""
    pick = col if role == "col" else row if role == "row" else None
    if pick and int(pick[2:-1]) < rank and (role == "col" or rank == 2):
        return pick
    return "R"


def dp_only(n):
    return ((n,), ("dp",), lambda name, r: "S(0)", lambda role, r, name=None: "R")


def tp_only(n, col="S(0)", row="S(1)"):
    return ((n,), ("tp",), lambda name, r: "R",
            lambda role, r, name=None: tp_of(role, r, col, row))


def dp_tp(dp, tp, col="S(0)", row="S(1)"):
    return ((dp, tp), ("dp", "tp"), lambda name, r: "S(0) R",
            lambda role, r, name=None: "R " + tp_of(role, r, col, row))


def fsdp_tp(dp, tp):
    """FSDP x TP as run_models.py's fsdp_tp: the FSDP dim splits dim 0
    within the tp shard (`_S(0,tp)`) when tp splits dim 0 too."""
    def param(role, r, name=None):
        t = tp_of(role, r)
        return ("_S(0,%d)" % tp if t == "S(0)" else "S(0)") + " " + t
    return ((dp, tp), ("dp", "tp"), lambda name, r: "S(0) R", param)


def naive(dp, tp):
    return ((dp, tp), ("dp", "tp"), lambda name, r: "S(0) R",
            lambda role, r, name=None: "S(0) S(0)")


def seq_par(n):
    """Sequence parallel: batch inputs split on dim 1 (the sequence; rank-1
    inputs replicated), parameters replicated."""
    return ((n,), ("sp",), lambda name, r: "S(1)" if r >= 2 else "R",
            lambda role, r, name=None: "R")


def dp_sp(dp, sp):
    return ((dp, sp), ("dp", "sp"),
            lambda name, r: "S(0) S(1)" if r >= 2 else "S(0) R",
            lambda role, r, name=None: "R R")


def sp_tp(sp, tp):
    """Sequence parallel on one mesh dim, tensor parallel on the other."""
    return ((sp, tp), ("sp", "tp"),
            lambda name, r: "S(1) R" if r >= 2 else "R R",
            lambda role, r, name=None: "R " + tp_of(role, r))


def reversed_fsdp(tp, dp):
    """FSDP x TP with the tp dim first on the mesh: the FSDP dim (right)
    splits dim 0 within the tp shard, which the default shard order (left
    to right) already says: `S(0) S(0)` for col parameters."""
    def param(role, r, name=None):
        t = tp_of(role, r)
        return t + " S(0)"
    return ((tp, dp), ("tp", "dp"), lambda name, r: "R S(0)", param)


def three_d(dp, fsdp, tp):
    def param(role, r, name=None):
        t = tp_of(role, r)
        return "R " + ("_S(0,%d)" % tp if t == "S(0)" else "S(0)") + " " + t
    return ((dp, fsdp, tp), ("dp", "fsdp", "tp"),
            lambda name, r: "S(0) S(0) R", param)


def fsdp_dim1(dp, tp):
    """FSDP splitting the last dim of every parameter of rank 2 (dim 0 of
    vectors), tp as Megatron's."""
    def param(role, r, name=None):
        t = tp_of(role, r)
        f = "S(0)" if r == 1 else "S(1)"
        if t == f:
            f = "_S(%s,%d)" % (t[2:-1], tp)
        return f + " " + t
    return ((dp, tp), ("dp", "tp"), lambda name, r: "S(0) R", param)


def split_factor(dp, tp, sf):
    """A split factor that matches no other mesh dim: `_S(0,sf)` on the
    FSDP dim of every parameter (a valid placement no framework writes)."""
    def param(role, r, name=None):
        return "_S(0,%d) %s" % (sf, tp_of(role, r))
    return ((dp, tp), ("dp", "tp"), lambda name, r: "S(0) R", param)


def partial_batch(op, n):
    """Batch inputs (integer ones too) partial over a 1-D mesh: the true
    input is the `op` reduction of the ranks' values; parameters replicated,
    gradients pinned to P(op) when op is sum (a partial result)."""
    return ((n,), ("dp",), lambda name, r: "P(%s)" % op,
            lambda role, r, name=None: "P(sum)" if op == "sum" else "R")


def ordered(dp, tp):
    """`S(0) S(0)` on every parameter with the non-default shard order
    `order="0:tp,dp"` (tp splits first): FSDP within the tp shard, as
    `_S(0,tp) S(0)` says; the order is added to the exported XML."""
    def fix(text):
        return text.replace('placements="S(0) S(0)"/>',
                            'placements="S(0) S(0)" order="0:tp,dp"/>')
    return ((dp, tp), ("dp", "tp"), lambda name, r: "S(0) R",
            lambda role, r, name=None: "S(0) S(0)" if role == "col" else
            "S(0) " + tp_of(role, r), {"fix": fix})


FUZZ_MESHES = [(2,), (3,), (4,), (2, 2), (2, 3), (3, 2), (1, 4), (2, 2, 2)]


def fuzz(seed):
    """(sizes, placement) of random variant `seed`: a mesh, a size set and,
    per batch input and parameter (seeded by its name, so the model's
    parameter order does not matter), per mesh dim R, S(d) or (rarely)
    P(sum)."""
    rnd = random.Random(seed)
    shape = rnd.choice(FUZZ_MESHES)
    sizes = rnd.choice([BASE, ODD, SMALL, EVEN6, HEADS3, GQA3])
    dims = ("a", "b", "c")[:len(shape)]

    def pick(name, r):
        g = random.Random("%d/%s" % (seed, name))
        partial = g.choice(["P(sum)", "P(avg)", "P(max)"])
        toks = [g.choice(["R"] * 2 + ["S(%d)" % d for d in range(r)]
                         + [partial] * (g.random() < 0.2)) for _ in shape]
        # Now and then the right-to-left nesting `_S(d,sf)`: sf is the
        # product of the sizes of the mesh dims to the right splitting d.
        for m, t in enumerate(toks):
            sf = 1
            for m2 in range(m + 1, len(shape)):
                sf *= shape[m2] if toks[m2] == t else 1
            if t.startswith("S(") and sf > 1 and g.random() < 0.5:
                toks[m] = "_S(%s,%d)" % (t[2:-1], sf)
        return " ".join(toks)
    return sizes, (shape, dims, pick, lambda role, r, name=None:
                   pick(name, r))


def pinned_elsewhere(dp, tp):
    """dp x tp with every gradient pinned elsewhere than its parameter:
    split on the other mesh dim and the last tensor dim (a layout change
    after the backward pass)."""
    base = dp_tp(dp, tp)
    return base + ({"pin": lambda role, r, p: "S(%d) R" % (r - 1)},)


# ---------------------------------------------------------------------------
# The variants

ODD = {"B": 6, "T": 7, "H": 24, "V": 50, "GPT2_HEADS": 3,
       "LLAMA_HEADS": 6, "LLAMA_KV_HEADS": 2, "LLAMA_FFN": 40,
       "MLP_HIDDEN": 40, "MIX_TOKEN_HIDDEN": 10, "MIX_CHANNEL_HIDDEN": 40,
       "MIX_CLASSES": 10}
SMALL = {"B": 2, "T": 5, "H": 12, "V": 10, "GPT2_HEADS": 3,
         "LLAMA_HEADS": 3, "LLAMA_KV_HEADS": 1, "LLAMA_FFN": 20,
         "MLP_HIDDEN": 6, "MIX_TOKEN_HIDDEN": 6, "MIX_CHANNEL_HIDDEN": 20,
         "MIX_CLASSES": 5}
# Even on 4 and 8 ranks, uneven on 3 / 6 (the suite's sizes, mixer T = 6).
BASE = {}
MIX6 = {"T": 6}
HEADS3 = {"H": 24, "GPT2_HEADS": 3, "LLAMA_HEADS": 3, "LLAMA_KV_HEADS": 1}
GQA3 = {"H": 24, "LLAMA_HEADS": 6, "LLAMA_KV_HEADS": 2}
EVEN6 = {"B": 12, "T": 12, "H": 48, "V": 96, "GPT2_HEADS": 6,
         "LLAMA_HEADS": 6, "LLAMA_KV_HEADS": 3, "LLAMA_FFN": 96,
         "MLP_HIDDEN": 96, "MIX_TOKEN_HIDDEN": 24, "MIX_CHANNEL_HIDDEN": 96,
         "MIX_CLASSES": 12}

# GPT-2 of 12 blocks (the other models have one): on 2x2x2 its whole-graph
# problem holds 9.7e6 edge matrix entries, which session 22 found past
# the limit of the time (8e6; node by node then, 60 times the collectives).
DEEP12 = {"GPT2_LAYERS": 12}

# `_dtype`: the default dtype while tracing (parameters, inputs, tables).
F64 = {"_dtype": "float64"}
F64ODD = dict(ODD, _dtype="float64")

MODEL_NAMES = ("gpt2", "llama", "mlp_sgd", "mixer")

# name -> (sizes, placement); every model runs under every variant.
VARIANTS = {
    "odd/dp": (ODD, dp_only(4)),
    "odd/tp": (ODD, tp_only(4)),
    "odd/dp_tp": (ODD, dp_tp(2, 2)),
    "odd/fsdp_tp": (ODD, fsdp_tp(2, 2)),
    "odd/naive": (ODD, naive(2, 2)),
    "small/dp_tp": (SMALL, dp_tp(2, 2)),
    "small/tp": (SMALL, tp_only(4)),
    "base/sp": (BASE, seq_par(4)),
    "odd/sp": (ODD, seq_par(4)),
    "base/dp_sp": (BASE, dp_sp(2, 2)),
    "base/sp_tp": (BASE, sp_tp(2, 2)),
    "base/tp3": (BASE, tp_only(3)),
    "heads3/tp3": (HEADS3, tp_only(3)),
    "heads3/tp4": (HEADS3, tp_only(4)),
    "gqa3/tp2": (GQA3, tp_only(2)),
    "mix6/dp4": (MIX6, dp_only(4)),
    "base/dp_tp_2x3": (BASE, dp_tp(2, 3)),
    "base/dp_tp_3x2": (BASE, dp_tp(3, 2)),
    "even6/dp_tp_2x3": (EVEN6, dp_tp(2, 3)),
    "even6/fsdp_tp_3x2": (EVEN6, fsdp_tp(3, 2)),
    "even6/fsdp_tp_2x3": (EVEN6, fsdp_tp(2, 3)),
    "small/dp": (SMALL, dp_only(4)),
    "small/sp": (SMALL, seq_par(4)),
    "small/naive": (SMALL, naive(2, 2)),
    "small/fsdp_tp": (SMALL, fsdp_tp(2, 2)),
    "odd/3d": (ODD, three_d(2, 2, 2)),
    "odd/sp3": (ODD, seq_par(3)),
    "odd/sp_tp_3x2": (ODD, sp_tp(3, 2)),
    "base/fsdp_dim1": (BASE, fsdp_dim1(2, 2)),
    "base/tp8": (BASE, tp_only(8)),
    "base/split3": (BASE, split_factor(2, 2, 3)),
    "base/psum": (BASE, partial_batch("sum", 2)),
    "odd/pmax": (ODD, partial_batch("max", 3)),
    "base/order": (BASE, ordered(2, 2)),
    "odd/order": (ODD, ordered(2, 2)),
    "odd/dp_tp_1x4": (ODD, dp_tp(1, 4)),
    "odd/dp_tp_4x1": (ODD, dp_tp(4, 1)),
    "odd/3d_2x1x2": (ODD, three_d(2, 1, 2)),
    "odd/tp8": (ODD, tp_only(8)),
    "odd/dp8": (ODD, dp_only(8)),
    "base/pins_other": (BASE, pinned_elsewhere(2, 2)),
    "odd/pins_other": (ODD, pinned_elsewhere(2, 2)),
    "f64/fsdp_tp": (F64, fsdp_tp(2, 2)),
    "f64odd/dp_tp_2x3": (F64ODD, dp_tp(2, 3)),
    "base/tp_swapped": (BASE, tp_only(4, col="S(1)", row="S(0)")),
    "base/dp_tp_swapped": (BASE, dp_tp(2, 2, col="S(1)", row="S(0)")),
    "deep12/3d": (DEEP12, three_d(2, 2, 2)),
    "base/tp_first_fsdp": (BASE, reversed_fsdp(2, 2)),
    "odd/tp_first_fsdp": (ODD, reversed_fsdp(2, 2)),
}


def placements(mod, model, placement):
    """(mesh shape, dims, placeholder placements, output placements) as
    models.config_placements gives them, for `placement`."""
    shape, dims, batch_pl, param_pl = placement[:4]
    _, batch, params, sgd = mod.MODELS[model]
    pl = {n + "_1": batch_pl(n, len(s)) for n, s, *_ in batch}
    per_param = [param_pl(role, len(s), n) for n, s, role in params]
    pin = extra(placement).get("pin")
    pins = per_param if not pin else [pin(role, len(s), p) for (_, s, role), p
                                      in zip(params, per_param)]
    pl.update({n + "_1": p for (n, *_), p in zip(params, per_param)})
    outs = [" ".join(["R"] * len(dims))] + pins
    return shape, dims, pl, outs + (pins if sgd else [])


def extra(placement):
    """The optional fifth item of a placement: {"fix": text -> text applied
    to the exported XML, "pin": (role, rank, placements) -> the pin of that
    parameter's gradient and update}."""
    return placement[4] if len(placement) > 4 else {}


# ---------------------------------------------------------------------------
# Running one variant


def run(cmd, timeout):
    """(kind, rc, output): kind 'done' or 'hang'."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(
            e.stdout, bytes) else (e.stdout or "")
        return "hang", None, out
    return "done", p.returncode, p.stdout + p.stderr


def classify_tool(kind, rc, out):
    """A dtopt command that writes a file: ok, refused (exit 1 with an
    error line) or crash / hang."""
    if kind == "hang":
        return "hang", "no end"
    if rc == 0:
        return "ok", ""
    if rc == 1 and "error:" in out and not _internal(out):
        return "refused", rm.first_error(out)
    return "crash", "exit %s: %s" % (rc, _tail(out))


def classify_check(kind, rc, out):
    """A `run --check`: ok, MISMATCH, refused or crash / hang."""
    if kind == "hang":
        return "hang", "no end"
    ok, err, why = rm.check_summary(rc, out)
    if ok:
        return "ok", "%.1e" % (err or 0)
    if why.startswith("MISMATCH"):
        return "MISMATCH", why
    if rc == 1 and "error:" in out and not _internal(out):
        return "refused", rm.first_error(out)
    return "crash", "exit %s: %s" % (rc, _tail(out))


def _internal(out):
    return any(s in out for s in ("internal error", "Assertion",
                                  "AddressSanitizer", "runtime error:",
                                  "Segmentation", "signal"))


def _tail(out):
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    errs = [ln for ln in lines if "error" in ln.lower()]
    return (errs or lines or ["(no output)"])[0][:200]


# The warnings of a shard-prop that decided node by node where the
# whole-graph search was asked for.
NODE_BY_NODE = ("[shard-prop:too-large]", "[shard-prop:no-plan]")


def run_variant(a, variant, model, traced):
    sizes, placement = VARIANTS[variant]
    mod, gm, inputs, eager = traced
    res = {"variant": variant, "model": model}
    work = os.path.join(a.workdir, variant.replace("/", "_") + "_" + model)
    os.makedirs(work, exist_ok=True)
    g = os.path.join(work, "global.xml")
    shape, dims, pl, outs = placements(mod, model, placement)
    nranks = 1
    for s in shape:
        nranks *= s
    res["ranks"] = "x".join(map(str, shape))
    try:
        fx_export.export(gm, inputs, mesh_shape=shape, mesh_dims=dims,
                         placements=pl, output_placements=outs, path=g,
                         name=model)
    except fx_export.ExportError as e:
        res["export"] = ("refused", str(e).splitlines()[0])
        return res
    fix = extra(placement).get("fix")
    if fix:  # what the exporter cannot write
        with open(g) as f:
            text = fix(f.read())
        with open(g, "w") as f:
            f.write(text)
    res["export"] = ("ok", "")
    res["verify"] = classify_tool(*run([a.dtopt, "verify", g], a.timeout))
    if res["verify"][0] != "ok":
        return res
    mpirun = [a.mpirun, "--allow-run-as-root", "--oversubscribe", "-np",
              str(nranks), a.dtopt, "run", "--backend", "mpi", "--check"]
    res["check"] = classify_check(*run(mpirun + [g], a.timeout))
    low = os.path.join(work, "out.xml")
    opt = run([a.dtopt, "opt", g, "-o", low, "--create-groups"], a.timeout)
    res["spmd"] = classify_tool(*opt)
    fallback = [ln for ln in opt[2].splitlines()
                if any(t in ln for t in NODE_BY_NODE)]
    if a.require_global and fallback and res["spmd"][0] == "ok":
        res["spmd"] = ("node-by-node", fallback[0][-160:])
    if res["spmd"][0] == "refused":  # one program per rank instead
        low = os.path.join(work, "out.{rank}.xml")
        res["lower"] = classify_tool(*run([a.dtopt, "opt", g, "-o", low,
                                           "--create-groups"], a.timeout))
    if res["spmd"][0] == "ok" or res.get("lower", ("",))[0] == "ok":
        res["check-ref"] = classify_check(
            *run(mpirun + ["--reference", g, low], a.timeout))
    rm.models = mod  # compare_eager's inputs come from this model table
    ok, err, why = rm.compare_eager(a.dtopt, g, work, eager)
    res["eager"] = ("ok", "%.1e" % err) if ok else ("MISMATCH", why)
    return res


COLS = ("export", "verify", "check", "spmd", "lower", "check-ref", "eager")


def print_table(results):
    head = ("variant", "model", "mesh") + COLS
    rows = [(r["variant"], r["model"], r["ranks"]) + tuple(
        (r[c][0] + (" " + r[c][1] if r[c][0] == "ok" and r[c][1] else ""))
        if c in r else "-" for c in COLS) for r in results]
    widths = [max(len(x[i]) for x in rows + [head]) for i in range(len(head))]
    for row in [head] + rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    print("\nnot ok:")
    for r in results:
        for c in COLS:
            if c in r and r[c][0] != "ok":
                print("  %-20s %-8s %-9s %-8s %s" % (
                    r["variant"], r["model"], c, r[c][0], r[c][1]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dtopt")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--workdir")
    ap.add_argument("--variant", action="append", default=[],
                    metavar="PATTERN", help="a variant (odd/dp), its sizes "
                    "(odd), its placement (dp), a model (gpt2) or "
                    "variant:model")
    ap.add_argument("--timeout", type=float, default=600,
                    help="seconds before a command counts as a hang")
    ap.add_argument("--fuzz", type=int, default=0, metavar="N",
                    help="also N random variants fuzz/SEED (seeds "
                    "--fuzz-seed, ...), every model under each")
    ap.add_argument("--fuzz-seed", type=int, default=1)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--require-spmd", action="store_true",
                    help="also fail when a variant gets no one SPMD "
                    "program (a refusal included)")
    ap.add_argument("--require-global", action="store_true",
                    help="also fail when dtopt's whole-graph search left "
                    "the plan to node-by-node decisions (a problem too "
                    "large to build, no plan found)")
    a = ap.parse_args()
    for seed in range(a.fuzz_seed, a.fuzz_seed + a.fuzz):
        VARIANTS["fuzz/%d" % seed] = fuzz(seed)
    todo = []
    for v in VARIANTS:
        for m in MODEL_NAMES:
            keys = {v, m, "%s:%s" % (v, m)} | set(v.split("/"))
            if not a.variant or any(p in keys for p in a.variant):
                todo.append((v, m))
    if a.list:
        print("\n".join("%s:%s" % vm for vm in todo))
        return 0
    if not todo:
        ap.error("no variant matches %s" % a.variant)
    tmp = None
    if not a.workdir:
        tmp = tempfile.TemporaryDirectory(prefix="dtopt-variants.")
        a.workdir = tmp.name
    start, results, traced = time.time(), [], {}
    for v, m in todo:
        sizes = VARIANTS[v][0]
        key = (tuple(sorted(sizes.items())), m)
        if key not in traced:
            mod = load_models(sizes)
            rm.models = mod
            torch.set_default_dtype(getattr(torch, sizes.get("_dtype",
                                                             "float32")))
            gm, inputs = mod.trace(m)
            for n in gm.graph.nodes:
                if n.name in mod.input_max(m):
                    n.meta["dtopt.input_max"] = str(mod.input_max(m)[n.name])
            traced[key] = (mod, gm, inputs, rm.eager_outputs(m))
            torch.set_default_dtype(torch.float32)
        t0 = time.time()
        r = run_variant(a, v, m, traced[key])
        results.append(r)
        print("%-20s %-8s %s (%.1f s)" % (v, m, " ".join(
            "%s=%s" % (c, r[c][0]) for c in COLS if c in r),
            time.time() - t0), flush=True)
    print()
    print_table(results)
    print("%d variants in %.1f s" % (len(results), time.time() - start))
    bad = [r for r in results for c in COLS
           if c in r and r[c][0] not in ("ok", "refused")]
    if a.require_spmd:
        bad += [r for r in results if r.get("spmd", ("-",))[0] != "ok"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

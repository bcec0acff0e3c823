# SPDX-License-Identifier: MIT
"""Small example models for tools/fx_export.py.

Each model is written as a plain function of explicit tensors (activations
first, then parameters), so that make_fx turns every parameter into a graph
placeholder with a stable, predictable name (`<arg>_1`, as make_fx names
placeholders after the traced function's parameter names).

Two models, each traceable forward-only or forward+backward:

- ``mlp``: Linear -> GELU -> Linear (batch 8, hidden 16 -> 32 -> 16).
- ``transformer``: one pre-LayerNorm transformer block (multi-head
  self-attention with q/k/v/o projections, softmax, residuals, LayerNorm,
  MLP with GELU); batch 2, seq 4, hidden 16, 2 heads, MLP width 32.

The forward+backward variants compute a scalar loss (sum of the output) and
return ``(out, *torch.autograd.grad(loss, params))`` from inside the traced
function, so the backward pass is part of the same FX graph.

``build(name, backward)`` returns ``(gm, example_inputs, placements)`` where
``placements`` is a suggested Megatron-style sharding on a ``dp x tp`` mesh
(input sharded on the batch over dp; weights column/row sharded over tp).

Needs torch (tested with Debian's python3-torch 1.13).
"""

import functools
import inspect
import math

import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

# ---------------------------------------------------------------------------
# MLP

MLP_BATCH, MLP_IN, MLP_HIDDEN = 8, 16, 32


def mlp_forward(x, w1, b1, w2, b2):
    """Linear(16->32) -> GELU -> Linear(32->16)."""
    h = F.gelu(F.linear(x, w1, b1))
    return F.linear(h, w2, b2)


def mlp_inputs():
    """Example inputs (x, w1, b1, w2, b2); parameters require grad."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(MLP_BATCH, MLP_IN, generator=g)
    params = [
        torch.randn(MLP_HIDDEN, MLP_IN, generator=g),
        torch.randn(MLP_HIDDEN, generator=g),
        torch.randn(MLP_IN, MLP_HIDDEN, generator=g),
        torch.randn(MLP_IN, generator=g),
    ]
    return [x] + [p.requires_grad_() for p in params]


# Placeholder name -> placements on a (dp, tp) mesh: w1/b1 column parallel,
# w2 row parallel, b2 replicated.
MLP_PLACEMENTS = {
    "x_1": "S(0) R",
    "w1_1": "R S(0)",
    "b1_1": "R S(0)",
    "w2_1": "R S(1)",
}

# ---------------------------------------------------------------------------
# Transformer block

TF_BATCH, TF_SEQ, TF_HIDDEN, TF_HEADS, TF_FFN = 2, 4, 16, 2, 32
TF_PARAM_NAMES = ("ln1_w", "ln1_b", "wq", "bq", "wk", "bk", "wv", "bv",
                  "wo", "bo", "ln2_w", "ln2_b", "w1", "b1", "w2", "b2")


def transformer_forward(x, ln1_w, ln1_b, wq, bq, wk, bk, wv, bv, wo, bo,
                        ln2_w, ln2_b, w1, b1, w2, b2):
    """Pre-LN block: x + Attn(LN(x)), then h + MLP(LN(h))."""
    B, S, H = x.shape
    nh = TF_HEADS
    hd = H // nh

    # Self-attention.
    a = F.layer_norm(x, (H,), ln1_w, ln1_b)

    def heads(t):  # [B, S, H] -> [B, nh, S, hd]
        return t.view(B, S, nh, hd).transpose(1, 2)

    q = heads(F.linear(a, wq, bq))
    k = heads(F.linear(a, wk, bk))
    v = heads(F.linear(a, wv, bv))
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(hd)
    probs = torch.softmax(scores, dim=-1)
    ctx = torch.matmul(probs, v).transpose(1, 2).reshape(B, S, H)
    h = x + F.linear(ctx, wo, bo)

    # MLP.
    m = F.layer_norm(h, (H,), ln2_w, ln2_b)
    m = F.linear(F.gelu(F.linear(m, w1, b1)), w2, b2)
    return h + m


def transformer_inputs():
    """Example inputs (x, *params in TF_PARAM_NAMES order)."""
    g = torch.Generator().manual_seed(0)
    H, F_ = TF_HIDDEN, TF_FFN
    shapes = {
        "ln1_w": (H,), "ln1_b": (H,),
        "wq": (H, H), "bq": (H,), "wk": (H, H), "bk": (H,),
        "wv": (H, H), "bv": (H,), "wo": (H, H), "bo": (H,),
        "ln2_w": (H,), "ln2_b": (H,),
        "w1": (F_, H), "b1": (F_,), "w2": (H, F_), "b2": (H,),
    }
    x = torch.randn(TF_BATCH, TF_SEQ, H, generator=g)
    params = [(torch.randn(shapes[n], generator=g) * 0.1).requires_grad_()
              for n in TF_PARAM_NAMES]
    return [x] + params


# Megatron-style: q/k/v and w1 column parallel, wo and w2 row parallel,
# LayerNorm parameters and row-parallel biases replicated.
TRANSFORMER_PLACEMENTS = {
    "x_1": "S(0) R",
    "wq_1": "R S(0)", "bq_1": "R S(0)",
    "wk_1": "R S(0)", "bk_1": "R S(0)",
    "wv_1": "R S(0)", "bv_1": "R S(0)",
    "wo_1": "R S(1)",
    "w1_1": "R S(0)", "b1_1": "R S(0)",
    "w2_1": "R S(1)",
}

# ---------------------------------------------------------------------------
# Tracing


def with_backward(forward):
    """Wrap `forward(x, *params)` into a function returning (out, *grads),
    with the gradients of sum(out) w.r.t. the parameters computed by
    torch.autograd.grad inside the traced function."""

    def fwd_bwd(x, *params):
        out = forward(x, *params)
        grads = torch.autograd.grad(out.sum(), params)
        return (out,) + tuple(grads)

    # make_fx names placeholders after the function's parameter names; a
    # *params signature would give them anonymous names (arg0_1, ...), so
    # keep the original signature.
    fwd_bwd = functools.wraps(forward)(fwd_bwd)
    fwd_bwd.__signature__ = inspect.signature(forward)
    return fwd_bwd


EXAMPLES = {
    "mlp": (mlp_forward, mlp_inputs, MLP_PLACEMENTS),
    "transformer": (transformer_forward, transformer_inputs,
                    TRANSFORMER_PLACEMENTS),
}


def build(name, backward=False):
    """Trace example `name` with make_fx (real tensors).

    Returns (gm, example_inputs, placements)."""
    if name not in EXAMPLES:
        raise ValueError("unknown example %r (have: %s)"
                         % (name, ", ".join(sorted(EXAMPLES))))
    forward, make_inputs, placements = EXAMPLES[name]
    fn = with_backward(forward) if backward else forward
    inputs = make_inputs()
    gm = make_fx(fn)(*inputs)
    return gm, inputs, dict(placements)

# SPDX-License-Identifier: MIT
"""The real-model suite's models (issue 10 part 4): six small blocks as
real code writes them, traced forward+backward with make_fx, and the seven
placements each runs under.

Models (each a plain function of explicit tensors: batch inputs first, then
the parameters, so make_fx names every parameter's placeholder `<name>_1`):

- ``gpt2``: token + position embedding, pre-LN causal self-attention (the
  nanoGPT mask: ``torch.tril(ones)`` and ``masked_fill(mask == 0, -inf)``),
  GELU (tanh) MLP, residuals, final LayerNorm, LM head, cross-entropy.
- ``llama``: embedding, RMSNorm, RoPE (HF's cos/sin tables from
  ``10000.0 ** (arange / d)`` and ``rotate_half``), grouped-query attention
  (k/v heads repeated), the causal mask Llama builds (``full(-inf).triu(1)``
  added to the scores), SwiGLU MLP, LM head, cross-entropy.
- ``mlp_sgd``: Linear -> ReLU -> Linear, ``F.mse_loss``, and one SGD step in
  the graph (the updated parameters are outputs).
- ``mixer``: an MLP-Mixer block: LayerNorm, token mixing (transpose ->
  Linear -> GELU -> Linear -> transpose back), channel MLP with GELU,
  residuals, mean pooling, classifier head, cross-entropy.
- ``bert``: a BERT encoder block: token + position embedding and
  LayerNorm, bidirectional attention with HF's additive padding mask
  (``pad`` 0 masks a key), post-LN residuals, GELU (erf) MLP, the pooler
  (``tanh`` of a Linear of the first token: ``select``), classifier,
  cross-entropy.
- ``moe``: a mixture of experts with top-1 routing computed densely: a
  softmax gate, ``max`` (value and argmax) choosing each row's expert,
  every expert's ReLU MLP by ``einsum`` over the experts dim, the outputs
  combined by the one-hot route times the gate, ``mse_loss`` plus a
  load-balancing term; under tp the experts split (expert parallel).

``GPT2_LAYERS`` stacks that many GPT-2 blocks (1 here; variants.py's deep12
traces 12, block l > 0's parameters named ``<name>_l<l>``).

The traced function returns ``(loss, *grads)`` (``mlp_sgd``: ``(loss,
*grads, *updated_params)``), so output i > 0 belongs to one parameter and is
pinned to that parameter's placement (``output_placements``).

Every parameter has a tensor-parallel role: ``col`` (Megatron column
parallel: the [out, in] weight and its bias split on dim 0), ``row`` (row
parallel: the weight split on dim 1; its bias replicated) or ``rep``
(replicated under tp: norms, position embedding, row biases). The
placements (PLACEMENTS) derive every parameter's from its role. Sizes that
any placement shards divide by 8, so every shard is even.

Needs torch (Debian's python3-torch 1.13, /usr/bin/python3).
"""

import functools
import inspect
import math
import os

import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

# One size set for all models: batch, sequence, hidden, vocabulary, and
# the blocks' inner widths (one line: variants.py replaces them). These
# are "toy", the suite's: runs check in seconds, and a collective's
# latency outweighs its bytes, so a plan that gathers weights once and
# computes replicated beats the expert's. DTOPT_MODEL_SIZES=medium in the
# environment takes MEDIUM instead: 16 times the tokens and 8 times the
# width (128 tokens a sequence, hidden 256, GPT-2's 4x MLP), where bytes
# weigh as in real blocks; for tables (run_models.py --no-check: a checked
# run there takes minutes).
B, T, H, V, LLAMA_FFN, MLP_HIDDEN, MIX_TOKEN_HIDDEN, MIX_CHANNEL_HIDDEN = 8, 8, 32, 64, 64, 64, 16, 64
MEDIUM = dict(B=8, T=128, H=256, V=512, LLAMA_FFN=768, MLP_HIDDEN=1024,
              MIX_TOKEN_HIDDEN=256, MIX_CHANNEL_HIDDEN=1024)
SIZE_SET = os.environ.get("DTOPT_MODEL_SIZES", "toy")
if SIZE_SET not in ("toy", "medium"):
    raise SystemExit("DTOPT_MODEL_SIZES=%s: not toy or medium" % SIZE_SET)
globals().update(MEDIUM if SIZE_SET == "medium" else {})

# ---------------------------------------------------------------------------
# GPT-2 block

GPT2_HEADS = 4
# Blocks: one in the suite; variants.py's deep12 traces 12.
GPT2_LAYERS = 1


def gpt2_block(x, ln1_w, ln1_b, wq, bq, wk, bk, wv, bv, wo, bo, ln2_w, ln2_b,
               w_fc, b_fc, w_proj, b_proj):
    b, t, _ = x.shape
    nh, hd = GPT2_HEADS, H // GPT2_HEADS
    a = F.layer_norm(x, (H,), ln1_w, ln1_b)
    q = F.linear(a, wq, bq).view(b, t, nh, hd).transpose(1, 2)
    k = F.linear(a, wk, bk).view(b, t, nh, hd).transpose(1, 2)
    v = F.linear(a, wv, bv).view(b, t, nh, hd).transpose(1, 2)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
    mask = torch.tril(torch.ones(t, t)).view(1, 1, t, t)
    att = att.masked_fill(mask == 0, float("-inf"))
    att = F.softmax(att, dim=-1)
    y = (att @ v).transpose(1, 2).contiguous().view(b, t, H)
    x = x + F.linear(y, wo, bo)

    m = F.layer_norm(x, (H,), ln2_w, ln2_b)
    m = F.gelu(F.linear(m, w_fc, b_fc), approximate="tanh")
    return x + F.linear(m, w_proj, b_proj)


GPT2_BLOCK = [  # name, shape, tp role: one block's parameters
    ("ln1_w", (H,), "rep"), ("ln1_b", (H,), "rep"),
    ("wq", (H, H), "col"), ("bq", (H,), "col"),
    ("wk", (H, H), "col"), ("bk", (H,), "col"),
    ("wv", (H, H), "col"), ("bv", (H,), "col"),
    ("wo", (H, H), "row"), ("bo", (H,), "rep"),
    ("ln2_w", (H,), "rep"), ("ln2_b", (H,), "rep"),
    ("w_fc", (4 * H, H), "col"), ("b_fc", (4 * H,), "col"),
    ("w_proj", (H, 4 * H), "row"), ("b_proj", (H,), "rep"),
]
# The embeddings, GPT2_LAYERS blocks (block l > 0's names end in _l<l>),
# the final LayerNorm and the LM head.
GPT2_PARAMS = ([("wte", (V, H), "col"), ("wpe", (T, H), "rep")]
               + [(n + ("_l%d" % layer if layer else ""), shape, role)
                  for layer in range(GPT2_LAYERS)
                  for n, shape, role in GPT2_BLOCK]
               + [("lnf_w", (H,), "rep"), ("lnf_b", (H,), "rep"),
                  ("w_head", (V, H), "col")])


def gpt2_layers(idx, targets, wte, wpe, *params):
    b, t = idx.shape
    pos = torch.arange(0, t, dtype=torch.long)
    x = F.embedding(idx, wte) + F.embedding(pos, wpe)
    per = len(GPT2_BLOCK)
    for layer in range(GPT2_LAYERS):
        x = gpt2_block(x, *params[per * layer:per * (layer + 1)])
    lnf_w, lnf_b, w_head = params[per * GPT2_LAYERS:]
    logits = F.linear(F.layer_norm(x, (H,), lnf_w, lnf_b), w_head)
    return F.cross_entropy(logits.view(-1, V), targets.view(-1))


def with_arguments(fn, names):
    """fn under a signature of positional parameters `names`: make_fx
    names a placeholder after its parameter in the traced function's code
    (`wq` -> `wq_1`), so a variable number of them needs the code written
    out."""
    code = "def %s(%s):\n    return fn(%s)\n" % (
        fn.__name__, ", ".join(names), ", ".join(names))
    scope = {"fn": fn}
    exec(code, scope)
    return scope[fn.__name__]


gpt2_forward = with_arguments(
    gpt2_layers, ["idx", "targets"] + [n for n, _, _ in GPT2_PARAMS])

# ---------------------------------------------------------------------------
# Llama block

LLAMA_HEADS, LLAMA_KV_HEADS = 8, 4


def rms_norm(x, w, eps=1e-5):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x, n_rep):
    """[b, nkv, t, hd] -> [b, nkv * n_rep, t, hd], as HF's Llama does."""
    b, nkv, t, hd = x.shape
    x = x[:, :, None, :, :].expand(b, nkv, n_rep, t, hd)
    return x.reshape(b, nkv * n_rep, t, hd)


def llama_forward(idx, targets, emb, attn_norm, wq, wk, wv, wo, ffn_norm,
                  w_gate, w_up, w_down, norm, w_head):
    b, t = idx.shape
    nh, nkv = LLAMA_HEADS, LLAMA_KV_HEADS
    hd = H // nh
    x = F.embedding(idx, emb)

    # RoPE tables, as HF's LlamaRotaryEmbedding builds them.
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, hd, 2).float() / hd))
    freqs = torch.outer(torch.arange(t, dtype=torch.float32), inv_freq)
    emb_t = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb_t.cos()[None, None], emb_t.sin()[None, None]

    a = rms_norm(x, attn_norm)
    q = F.linear(a, wq).view(b, t, nh, hd).transpose(1, 2)
    k = F.linear(a, wk).view(b, t, nkv, hd).transpose(1, 2)
    v = F.linear(a, wv).view(b, t, nkv, hd).transpose(1, 2)
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    k, v = repeat_kv(k, nh // nkv), repeat_kv(v, nh // nkv)
    scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(hd)
    mask = torch.full((t, t), float("-inf")).triu(1)
    probs = F.softmax(scores + mask, dim=-1)
    y = torch.matmul(probs, v).transpose(1, 2).contiguous().view(b, t, H)
    h = x + F.linear(y, wo)

    m = rms_norm(h, ffn_norm)
    h = h + F.linear(F.silu(F.linear(m, w_gate)) * F.linear(m, w_up), w_down)

    logits = F.linear(rms_norm(h, norm), w_head)
    return F.cross_entropy(logits.view(-1, V), targets.view(-1))


_KV = LLAMA_KV_HEADS * (H // LLAMA_HEADS)
LLAMA_PARAMS = [
    ("emb", (V, H), "col"), ("attn_norm", (H,), "rep"),
    ("wq", (H, H), "col"), ("wk", (_KV, H), "col"), ("wv", (_KV, H), "col"),
    ("wo", (H, H), "row"), ("ffn_norm", (H,), "rep"),
    ("w_gate", (LLAMA_FFN, H), "col"), ("w_up", (LLAMA_FFN, H), "col"),
    ("w_down", (H, LLAMA_FFN), "row"), ("norm", (H,), "rep"),
    ("w_head", (V, H), "col"),
]

# ---------------------------------------------------------------------------
# MLP with an SGD step

SGD_LR = 0.1


def mlp_sgd_forward(x, y, w1, b1, w2, b2):
    out = F.linear(F.relu(F.linear(x, w1, b1)), w2, b2)
    return F.mse_loss(out, y)


MLP_SGD_PARAMS = [
    ("w1", (MLP_HIDDEN, H), "col"), ("b1", (MLP_HIDDEN,), "col"),
    ("w2", (H, MLP_HIDDEN), "row"), ("b2", (H,), "rep"),
]

# ---------------------------------------------------------------------------
# MLP-Mixer block

MIX_CLASSES = 16


def mixer_forward(x, labels, ln1_w, ln1_b, tok1_w, tok1_b, tok2_w, tok2_b,
                  ln2_w, ln2_b, ch1_w, ch1_b, ch2_w, ch2_b, head_w, head_b):
    y = F.layer_norm(x, (H,), ln1_w, ln1_b).transpose(1, 2)  # [B, C, P]
    y = F.linear(F.gelu(F.linear(y, tok1_w, tok1_b)), tok2_w, tok2_b)
    x = x + y.transpose(1, 2)
    y = F.layer_norm(x, (H,), ln2_w, ln2_b)
    x = x + F.linear(F.gelu(F.linear(y, ch1_w, ch1_b)), ch2_w, ch2_b)
    logits = F.linear(x.mean(dim=1), head_w, head_b)
    return F.cross_entropy(logits, labels)


MIXER_PARAMS = [  # patches: T, channels: H
    ("ln1_w", (H,), "rep"), ("ln1_b", (H,), "rep"),
    ("tok1_w", (MIX_TOKEN_HIDDEN, T), "col"),
    ("tok1_b", (MIX_TOKEN_HIDDEN,), "col"),
    ("tok2_w", (T, MIX_TOKEN_HIDDEN), "row"), ("tok2_b", (T,), "rep"),
    ("ln2_w", (H,), "rep"), ("ln2_b", (H,), "rep"),
    ("ch1_w", (MIX_CHANNEL_HIDDEN, H), "col"),
    ("ch1_b", (MIX_CHANNEL_HIDDEN,), "col"),
    ("ch2_w", (H, MIX_CHANNEL_HIDDEN), "row"), ("ch2_b", (H,), "rep"),
    ("head_w", (MIX_CLASSES, H), "col"), ("head_b", (MIX_CLASSES,), "col"),
]

# ---------------------------------------------------------------------------
# BERT encoder block

BERT_HEADS = 4
BERT_CLASSES = 16


def bert_forward(idx, pad, labels, emb, pos, ln0_w, ln0_b, wq, bq, wk, bk,
                 wv, bv, wo, bo, ln1_w, ln1_b, w_fc, b_fc, w_proj, b_proj,
                 ln2_w, ln2_b, w_pool, b_pool, w_cls, b_cls):
    b, t = idx.shape
    nh, hd = BERT_HEADS, H // BERT_HEADS
    x = F.layer_norm(F.embedding(idx, emb) + pos, (H,), ln0_w, ln0_b)
    q = F.linear(x, wq, bq).view(b, t, nh, hd).permute(0, 2, 1, 3)
    k = F.linear(x, wk, bk).view(b, t, nh, hd).permute(0, 2, 1, 3)
    v = F.linear(x, wv, bv).view(b, t, nh, hd).permute(0, 2, 1, 3)
    # bidirectional attention; padded keys (pad == 0) masked additively,
    # as HF's BERT extends its attention mask
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd)
    scores = scores + (1.0 - pad[:, None, None, :].float()) * -10000.0
    y = torch.matmul(F.softmax(scores, dim=-1), v)
    y = y.permute(0, 2, 1, 3).reshape(b, t, H)
    x = F.layer_norm(x + F.linear(y, wo, bo), (H,), ln1_w, ln1_b)  # post-LN
    m = F.linear(F.gelu(F.linear(x, w_fc, b_fc)), w_proj, b_proj)
    x = F.layer_norm(x + m, (H,), ln2_w, ln2_b)
    pooled = torch.tanh(F.linear(x[:, 0], w_pool, b_pool))  # [CLS] token
    return F.cross_entropy(F.linear(pooled, w_cls, b_cls), labels)


BERT_PARAMS = [
    ("emb", (V, H), "col"), ("pos", (T, H), "rep"),
    ("ln0_w", (H,), "rep"), ("ln0_b", (H,), "rep"),
    ("wq", (H, H), "col"), ("bq", (H,), "col"),
    ("wk", (H, H), "col"), ("bk", (H,), "col"),
    ("wv", (H, H), "col"), ("bv", (H,), "col"),
    ("wo", (H, H), "row"), ("bo", (H,), "rep"),
    ("ln1_w", (H,), "rep"), ("ln1_b", (H,), "rep"),
    ("w_fc", (4 * H, H), "col"), ("b_fc", (4 * H,), "col"),
    ("w_proj", (H, 4 * H), "row"), ("b_proj", (H,), "rep"),
    ("ln2_w", (H,), "rep"), ("ln2_b", (H,), "rep"),
    ("w_pool", (H, H), "col"), ("b_pool", (H,), "col"),
    ("w_cls", (BERT_CLASSES, H), "col"), ("b_cls", (BERT_CLASSES,), "col"),
]

# ---------------------------------------------------------------------------
# Mixture of experts: top-1 routing, computed densely

MOE_EXPERTS = 4


def moe_forward(x, y, w_gate, w_in, w_out):
    gate = F.softmax(x @ w_gate, dim=-1)                 # [B, E]
    top, choice = gate.max(dim=-1)                       # [B]
    route = (choice[:, None] == torch.arange(MOE_EXPERTS)).to(x.dtype)
    h = torch.einsum("bh,ehf->bef", x, w_in).relu()      # every expert
    out = torch.einsum("bef,efh->beh", h, w_out)         # [B, E, H]
    out = (out * (route * top[:, None])[:, :, None]).sum(1)
    # the load-balancing term keeps the gate's gradient dense
    return F.mse_loss(out, y) + 0.01 * (gate.mean(0) ** 2).sum()


MOE_PARAMS = [  # tp: expert parallel (the experts split, "col")
    ("w_gate", (H, MOE_EXPERTS), "rep"),
    ("w_in", (MOE_EXPERTS, H, MLP_HIDDEN), "col"),
    ("w_out", (MOE_EXPERTS, MLP_HIDDEN, H), "col"),
]

# ---------------------------------------------------------------------------
# The model table

# name -> (forward, batch inputs [(name, shape, dtype, input_max)], params,
#          sgd): integer inputs take values in [0, input_max).
MODELS = {
    "gpt2": (gpt2_forward, [("idx", (B, T), torch.long, V),
                            ("targets", (B, T), torch.long, V)],
             GPT2_PARAMS, False),
    "llama": (llama_forward, [("idx", (B, T), torch.long, V),
                              ("targets", (B, T), torch.long, V)],
              LLAMA_PARAMS, False),
    "mlp_sgd": (mlp_sgd_forward, [("x", (B, H), torch.float32, None),
                                  ("y", (B, H), torch.float32, None)],
                MLP_SGD_PARAMS, True),
    "mixer": (mixer_forward, [("x", (B, T, H), torch.float32, None),
                              ("labels", (B,), torch.long, MIX_CLASSES)],
              MIXER_PARAMS, False),
    "bert": (bert_forward, [("idx", (B, T), torch.long, V),
                            ("pad", (B, T), torch.long, 2),
                            ("labels", (B,), torch.long, BERT_CLASSES)],
             BERT_PARAMS, False),
    "moe": (moe_forward, [("x", (B, H), torch.float32, None),
                          ("y", (B, H), torch.float32, None)],
            MOE_PARAMS, False),
}


def training_step(name):
    """The function make_fx traces for model `name`: (batch..., params...)
    -> (loss, *grads) or, with an SGD step, (loss, *grads, *updated)."""
    forward, _, params, sgd = MODELS[name]
    nbatch = len(MODELS[name][1])

    def step(*args):
        ps = args[nbatch:]
        loss = forward(*args)
        grads = torch.autograd.grad(loss, ps)
        if not sgd:
            return (loss,) + tuple(grads)
        return ((loss,) + tuple(grads)
                + tuple(p - SGD_LR * g for p, g in zip(ps, grads)))

    # make_fx names placeholders after the parameters of the signature.
    step = functools.wraps(forward)(step)
    step.__signature__ = inspect.signature(forward)
    return step


def example_inputs(name, seed=0):
    """Seeded inputs to trace with (parameters require grad)."""
    _, batch, params, _ = MODELS[name]
    g = torch.Generator().manual_seed(seed)
    out = []
    for _, shape, dtype, input_max in batch:
        if dtype.is_floating_point:
            out.append(torch.randn(shape, generator=g))
        else:
            out.append(torch.randint(0, input_max, shape, generator=g))
    for _, shape, _ in params:
        out.append((torch.randn(shape, generator=g) * 0.1).requires_grad_())
    return out


def trace(name):
    """(gm, example_inputs) for model `name`."""
    inputs = example_inputs(name)
    return make_fx(training_step(name))(*inputs), inputs


def placeholder_names(name):
    """Batch input and parameter placeholder names, in argument order."""
    _, batch, params, _ = MODELS[name]
    return ([n + "_1" for n, *_ in batch], [n + "_1" for n, *_ in params])


# ---------------------------------------------------------------------------
# Placements

def _fsdp(tp):
    """The FSDP mesh dim's placement of a parameter whose tp placement is
    `tp`: dim 0 split; when tp splits dim 0 too, FSDP splits within the tp
    shard, i.e. `_S(0,2)` (semantics §2: `[_S(0,sf), S(0)]` is `[S(0),
    S(0)]` with the tp dim applied first, sf = the tp dim's size, 2 here)."""
    return "_S(0,2)" if tp == "S(0)" else "S(0)"


def _tp(role, rank):
    if role == "col":
        return "S(0)"
    if role == "row" and rank == 2:
        return "S(1)"
    return "R"


# name -> (mesh shape, mesh dims, batch input placements,
#          parameter placements from (tp role, tensor rank)).
PLACEMENTS = {
    "dp": ((4,), ("dp",), "S(0)", lambda role, r: "R"),
    "fsdp": ((4,), ("dp",), "S(0)", lambda role, r: "S(0)"),
    "tp": ((4,), ("tp",), "R", lambda role, r: _tp(role, r)),
    "dp_tp": ((2, 2), ("dp", "tp"), "S(0) R",
              lambda role, r: "R " + _tp(role, r)),
    "fsdp_tp": ((2, 2), ("dp", "tp"), "S(0) R",
                lambda role, r: _fsdp(_tp(role, r)) + " " + _tp(role, r)),
    "naive": ((2, 2), ("dp", "tp"), "S(0) R", lambda role, r: "S(0) S(0)"),
    "3d": ((2, 2, 2), ("dp", "fsdp", "tp"), "S(0) S(0) R",
           lambda role, r: "R " + _fsdp(_tp(role, r)) + " " + _tp(role, r)),
}

CONFIGS = [(m, p) for m in MODELS for p in PLACEMENTS]


def config_placements(model, placement):
    """(mesh_shape, mesh_dims, placeholder placements, output placements):
    output 0 (the loss) replicated, each gradient (and updated parameter)
    pinned to its parameter's placements."""
    shape, dims, batch_pl, param_pl = PLACEMENTS[placement]
    _, batch, params, sgd = MODELS[model]
    pl = {}
    for n, shp, *_ in batch:
        pl[n + "_1"] = batch_pl
    per_param = [param_pl(role, len(shp)) for _, shp, role in params]
    for (n, _, _), p in zip(params, per_param):
        pl[n + "_1"] = p
    outs = [" ".join(["R"] * len(dims))] + per_param
    if sgd:
        outs += per_param
    return shape, dims, pl, outs


def input_max(model):
    """placeholder name -> input_max for the integer batch inputs."""
    return {n + "_1": m for n, _, dtype, m in MODELS[model][1]
            if not dtype.is_floating_point}

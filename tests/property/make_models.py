#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""make_models.py: the make_fx MLP-Mixer block and Llama block (RMSNorm,
rotary, grouped-query attention, SwiGLU), forward and backward in float64,
under dp, tp, dp x tp, S(0) S(0) and 3-D placements, written as MODEL_PL.xml
into the current directory. regress/mixer_fwdbwd_dp.xml and
regress/llama_fwdbwd_3d.xml come from it (the configurations issue 10 saw
give wrong numbers). Needs torch: /usr/bin/python3 make_models.py"""
import os
import sys
import torch
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools"))
from torch.fx.experimental.proxy_tensor import make_fx
from fx_export import export
import torch.nn.functional as F
torch.manual_seed(0)
torch.set_default_dtype(torch.float64)
B, T, C, H = 4, 8, 16, 4

def mixer(x, ln1w, ln1b, tw1, tw2, ln2w, ln2b, cw1, cw2):
    y = F.layer_norm(x, (C,), ln1w, ln1b)
    y = F.linear(F.gelu(F.linear(y.transpose(1, 2), tw1)), tw2).transpose(1, 2)
    x = x + y
    y = F.layer_norm(x, (C,), ln2w, ln2b)
    x = x + F.linear(F.gelu(F.linear(y, cw1)), cw2)
    return x

def rms(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

def llama(x, nw, wq, wk, wv, wo, cos, sin, w1, w2, w3, nw2):
    h = rms(x, nw)
    q = (h @ wq).view(B, T, H, C // H)
    k = (h @ wk).view(B, T, H // 2, C // H)
    v = (h @ wv).view(B, T, H // 2, C // H)
    def rope(t):
        t1, t2 = t[..., : C // H // 2], t[..., C // H // 2:]
        return t * cos + torch.cat([-t2, t1], -1) * sin
    q, k = rope(q), rope(k)
    k = k[:, :, :, None, :].expand(B, T, H // 2, 2, C // H).reshape(B, T, H, C // H)
    v = v[:, :, :, None, :].expand(B, T, H // 2, 2, C // H).reshape(B, T, H, C // H)
    q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    a = torch.softmax(q @ k.transpose(-2, -1) / 2.0, -1)
    o = (a @ v).transpose(1, 2).reshape(B, T, C)
    x = x + o @ wo
    h = rms(x, nw2)
    return x + ((h @ w1) * torch.sigmoid(h @ w1) * (h @ w3)) @ w2

def fb(fn):
    def f(*args):
        out = fn(*args)
        g = torch.autograd.grad(out.sum(), args[1:], allow_unused=True)
        return [out] + [t for t in g if t is not None]
    return f

def mk(shape): return torch.randn(*shape, requires_grad=True)
mixer_in = [mk((B, T, C)), mk((C,)), mk((C,)), mk((12, T)), mk((T, 12)), mk((C,)), mk((C,)), mk((32, C)), mk((C, 32))]
ll_in = [mk((B, T, C)), mk((C,)), mk((C, C)), mk((C, C // 2)), mk((C, C // 2)), mk((C, C)), mk((T, 1, C // H)), mk((T, 1, C // H)), mk((C, 32)), mk((32, C)), mk((C, 32)), mk((C,))]
plc = {
 "dp": ((2,), ("dp",), {"arg0_1": "S(0)"}),
 "tp": ((2,), ("tp",), {"arg0_1": "R"}),
 "dptp": ((2, 2), ("dp", "tp"), {"arg0_1": "S(0) R"}),
 "s0s0": ((2, 2), ("dp", "tp"), {"arg0_1": "S(0) S(0)"}),
 "3d": ((2, 2, 2), ("dp", "fsdp", "tp"), {"arg0_1": "S(0) S(0) R"}),
}
for (mname, fn, inp) in [("mixer", mixer, mixer_in), ("llama", llama, ll_in)]:
    gm = make_fx(fb(fn))(*inp)
    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    for pn, (ms, md, pl) in plc.items():
        pl = dict(pl)
        if pn in ("tp", "dptp", "3d") and mname == "llama":
            for nm in names:
                if nm in ("arg2_1", "arg3_1", "arg4_1", "arg8_1", "arg10_1"):
                    pl[nm] = " ".join(["R"] * (len(ms) - 1) + ["S(1)"])
                if nm in ("arg5_1", "arg9_1"):
                    pl[nm] = " ".join(["R"] * (len(ms) - 1) + ["S(0)"])
        export(gm, inp, mesh_shape=ms, mesh_dims=md, placements=pl, path="%s_%s.xml" % (mname, pn))
        print(mname, pn)

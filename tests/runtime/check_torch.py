#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_torch.py: runs a graph with dtopt's CPU interpreter (rt_dump) and
with PyTorch on the same inputs, and compares every output.

usage: check_torch.py RT_DUMP GRAPH.xml [GRAPH.xml ...] [--seed N]
(RT_DUMP: the rt_dump test program, or a directory of its saved outputs)

For each graph: rt_dump prints every placeholder's value and every output;
this script checks the placeholder values against the documented input
formula (runtime/inputs.c) re-implemented here, builds the placeholders as
torch tensors with the graph's strides, runs every node with torch.ops
twice (as written, and with float32, bfloat16 and float16 widened to
float64 as the exact reference), and compares the outputs: dtype and shape
exactly, integers and bools exactly, floats within rtol 1e-5 (atol 1e-6,
for values that are float32 rounding noise around zero) of torch, or no
further from the float64 reference than torch's result is (plus 1e-6 of
the output's largest magnitude). Torch's own bfloat16 kernels differ by a
rounding step from one CPU to another (gelu(1) is 0.83984375, correctly
rounded, with one vector unit and 0.84375 with another), so only the
float64 reference decides between two roundings. Outputs that depend on random or empty* ops
are compared on dtype and shape only. Exit 0 when every graph matches.
"""
import operator
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import torch

MASK = (1 << 64) - 1
# Ops whose values differ from torch by design: the random ops (dtopt's
# own generator) and empty* (zeros in dtopt, garbage in torch).
UNCOMPARABLE = {"aten.native_dropout.default", "aten.bernoulli.default",
                "aten.bernoulli.p", "aten.rand_like.default",
                "aten.randn_like.default", "aten.empty_like.default",
                "aten.empty.memory_format", "aten.empty_strided.default",
                "aten.new_empty.default"}


# The floating dtypes the exact reference computes in float64.
WIDENED = (torch.float32, torch.bfloat16, torch.float16)


def mix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def fnv1a(s):
    h = 0xCBF29CE484222325
    for ch in s.encode():
        h = ((h ^ ch) * 0x100000001B3) & MASK
    return h


def input_value(seed, name, index, dtype, input_max):
    h = mix64(mix64(mix64(seed) ^ fnv1a(name)) ^ (index & MASK))
    if dtype.is_floating_point:
        return (h % 17 - 8) / 8
    if dtype == torch.bool:
        return float(h & 1)
    return float(h % input_max)


def parse_dump(text):
    """{'input': {name: (dtype, shape, values)}, 'output': {i: ...}}"""
    out = {"input": {}, "output": {}}
    lines = text.split("\n")
    for i in range(0, len(lines) - 1, 2):
        head = lines[i].split()
        if not head:
            continue
        kind, name, dtype, rank = head[0], head[1], head[2], int(head[3])
        shape = [int(x) for x in head[4:4 + rank]]
        values = [float(x) for x in lines[i + 1].split()]
        out[kind][name] = (getattr(torch, dtype), shape, values)
    return out


def convert_str(name, s):
    if name == "layout":
        return getattr(torch, s.replace("torch.", ""))
    if name == "device":
        return torch.device(s)
    if name == "memory_format":
        return getattr(torch, s.replace("torch.", ""))
    return s


def arg_value(el, env, name="", wide=False):
    a = el.attrib
    if "node" in a:
        return env[a["node"]]
    if "nodes" in a:
        return [env[x] for x in a["nodes"].split()]
    if "int" in a:
        return int(a["int"])
    if "ints" in a:
        return [int(x) for x in a["ints"].split()]
    if "float" in a:
        return float(a["float"])
    if "floats" in a:
        return [float(x) for x in a["floats"].split()]
    if "bool" in a:
        return a["bool"] == "true"
    if "str" in a:
        return convert_str(name, a["str"])
    if "dtype" in a:
        return widen(getattr(torch, a["dtype"]), wide)
    if "none" in a:
        return None
    return [arg_value(it, env, "", wide) for it in el.findall("item")]


def widen(dtype, wide):
    return torch.float64 if wide and dtype in WIDENED else dtype


def resolve(target):
    if target == "operator.getitem":
        return operator.getitem
    if target == "dtensor.redistribute":
        return lambda x: x
    ns, op, overload = target.split(".")
    return getattr(getattr(getattr(torch.ops, ns), op), overload)


def make_input(node, dumped, wide):
    t = node.find("tensor")
    dtype, shape, values = dumped
    dtype = widen(dtype, wide)
    stride = [int(x) for x in t.get("stride", "").split()]
    offset = int(t.get("offset", "0"))
    dense = torch.tensor(values, dtype=torch.float64).reshape(shape).to(dtype)
    extent = offset + sum((s - 1) * st for s, st in zip(shape, stride)) + 1 \
        if all(s > 0 for s in shape) else 0
    storage = torch.zeros(max(extent, 1), dtype=dtype)
    view = storage.as_strided(shape, stride, offset)
    view.copy_(dense)
    return view


def check_inputs(root, dumped, seed, errors):
    view = root.get("view")
    for node in root.findall("node"):
        if node.get("op") != "placeholder":
            continue
        name = node.get("name")
        if view == "local" and node.find("sharding") is not None:
            continue  # shards: the C tests check those
        label = name if view == "global" else name + "@0"
        dtype, shape, values = dumped["input"][name]
        input_max = 2
        for meta in node.findall("meta"):
            if meta.get("key") == "dtopt.input_max":
                input_max = int(meta.get("value"))
        for i, v in enumerate(values):
            want = input_value(seed, label, i, dtype, input_max)
            if v != want:
                errors.append(f"input {name}[{i}] = {v}, formula gives {want}")
                break


def compare(i, ours, ref, exact, values_too, errors):
    dtype, shape, values = ours
    if ref.dtype != dtype or list(ref.shape) != shape:
        errors.append(f"output {i}: ours {dtype}{shape}, torch {ref.dtype}{list(ref.shape)}")
        return
    if not values_too:
        return
    got = torch.tensor(values, dtype=torch.float64).reshape(shape)
    want = ref.detach().to(torch.float64).contiguous()
    if not dtype.is_floating_point:
        if not torch.equal(got, want):
            errors.append(f"output {i}: integer values differ")
        return
    truth = exact.detach().to(torch.float64).contiguous()
    scale = truth.abs().max().item() if truth.numel() else 0.0
    near_torch = (got - want).abs() <= 1e-5 * want.abs() + 1e-6
    near_truth = (got - truth).abs() <= (want - truth).abs() + 1e-6 * scale
    nan = torch.isnan(got) & torch.isnan(want)
    bad = ~(near_torch | near_truth | nan | (got == want))
    if bad.any():
        k = int(bad.flatten().nonzero()[0])
        errors.append(f"output {i}: element {k}: ours {got.flatten()[k].item()!r}, "
                      f"torch {want.flatten()[k].item()!r}, float64 "
                      f"{truth.flatten()[k].item()!r} ({int(bad.sum())} differ)")


def run_torch(root, dumped, wide):
    """Every node's torch value, the output node names, the nodes that
    depend on random ops."""
    env, tainted, outputs = {}, set(), []
    for node in root.findall("node"):
        name, op = node.get("name"), node.get("op")
        if op == "placeholder":
            env[name] = make_input(node, dumped["input"][name], wide)
            continue
        args = [arg_value(a, env, "", wide) for a in node.findall("arg")]
        refs = [x for a in node.iter() if a.tag in ("arg", "kwarg", "item")
                for x in (a.get("node") or a.get("nodes") or "").split()]
        if op == "output":
            outputs = refs
            continue
        kwargs = {k.get("name"): arg_value(k, env, k.get("name"), wide)
                  for k in node.findall("kwarg")}
        target = node.get("target")
        env[name] = resolve(target)(*args, **kwargs)
        if target in UNCOMPARABLE or any(r in tainted for r in refs):
            tainted.add(name)
    return env, outputs, tainted


def dump_of(rt_dump, path, seed):
    """rt_dump's output for the graph, or None after an error message.
    RT_DUMP may be a directory of saved outputs (GRAPH's base name +
    ".dump"), to compare with a torch on a machine without dtopt."""
    if os.path.isdir(rt_dump):
        with open(os.path.join(rt_dump, os.path.basename(path) + ".dump")) as f:
            return f.read(), None
    proc = subprocess.run([rt_dump, path, str(seed)], capture_output=True, text=True)
    if proc.returncode != 0:
        return None, f"rt_dump failed: {proc.stderr.strip()}"
    return proc.stdout, None


def check_graph(rt_dump, path, seed):
    errors = []
    root = ET.parse(path).getroot()
    text, error = dump_of(rt_dump, path, seed)
    if error:
        return [error]
    dumped = parse_dump(text)
    check_inputs(root, dumped, seed, errors)
    env, outputs, tainted = run_torch(root, dumped, False)
    exact, _, _ = run_torch(root, dumped, True)
    for i, out in enumerate(outputs):
        compare(i, dumped["output"][str(i)], env[out], exact[out], out not in tainted,
                errors)
    return errors


def main():
    argv = sys.argv[1:]
    seed = 0
    if "--seed" in argv:
        k = argv.index("--seed")
        seed = int(argv[k + 1])
        del argv[k:k + 2]
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    failed = 0
    for path in argv[1:]:
        errors = check_graph(argv[0], path, seed)
        print(f"{'FAIL' if errors else 'ok  '} {path}")
        for e in errors[:20]:
            print("     " + e)
        failed += bool(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

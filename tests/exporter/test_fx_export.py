#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Tests of tools/fx_export.py, the torch.fx -> format v1 exporter.

Run:  /usr/bin/python3 tests/exporter/test_fx_export.py [DTOPT_BINARY]

Exports the bundled MLP and transformer block (forward and forward+backward)
and checks each file against the FX graph it came from, independently of the
exporter's code: node order and names, targets, every argument decoded back
and compared with the FX args, every <tensor> compared with the real values
obtained by running the graph, shardings, references to earlier nodes only,
and `xmllint --noout`. Small hand-made graphs cover the value spellings
(storage offsets, 0-d tensors, lists with None, inf/nan, dtypes, prims).

With DTOPT_BINARY, also runs `dtopt verify FILE` and
`dtopt opt -p verify,shape-infer FILE -o /dev/null` on each exported file
(skipped with a message when the binary does not exist).
"""

import base64
import math
import operator
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(HERE, "..", "..", "tools")
sys.path.insert(0, TOOLS)

import torch  # noqa: E402
import torch.fx  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

import fx_export  # noqa: E402
import fx_models  # noqa: E402

DTOPT = None  # set from argv[1] in __main__
DTOPT_GIVEN = len(sys.argv) > 1 and not sys.argv[1].startswith("-")

MESH_SHAPE, MESH_DIMS = (2, 2), ("dp", "tp")

# Targets each example must contain (a subset: the exact set depends on the
# torch version's decompositions).
REQUIRED_TARGETS = {
    ("mlp", False): {"aten.addmm.default", "aten.gelu.default",
                     "aten.t.default"},
    ("mlp", True): {"aten.addmm.default", "aten.gelu.default",
                    "aten.gelu_backward.default", "aten.mm.default",
                    "aten.sum.dim_IntList"},
    ("transformer", False): {"aten.native_layer_norm.default",
                             "operator.getitem", "aten.bmm.default",
                             "aten._softmax.default", "aten.gelu.default",
                             "aten.add.Tensor", "aten.transpose.int"},
    ("transformer", True): {"aten.native_layer_norm_backward.default",
                            "aten._softmax_backward_data.default",
                            "aten.gelu_backward.default", "operator.getitem",
                            "aten.mm.default"},
}


# ---------------------------------------------------------------------------
# Independent reference: what each node should look like.


def expected_target(target):
    """The target spelling the format asks for, computed without fx_export."""
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    if target is operator.getitem:
        return "operator.getitem"
    raise AssertionError("unexpected target %r" % (target,))


def canon(value):
    """A comparable, type-tagged form of an FX argument value."""
    if isinstance(value, torch.fx.Node):
        return ("node", value.name)
    if value is None:
        return ("none",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else value)
    if isinstance(value, torch.dtype):
        return ("dtype", str(value).replace("torch.", ""))
    if isinstance(value, (str, torch.device, torch.layout,
                          torch.memory_format)):
        return ("str", str(value))
    if isinstance(value, (list, tuple)):
        return ("list", tuple(canon(v) for v in value))
    raise AssertionError("unexpected value %r" % (value,))


def decode_scalar(attr, text):
    if attr == "node":
        return ("node", text)
    if attr == "none":
        assert text == "true", text
        return ("none",)
    if attr == "bool":
        assert text in ("true", "false"), text
        return ("bool", text == "true")
    if attr == "int":
        return ("int", int(text))
    if attr == "float":
        f = float(text)
        return ("float", "nan" if math.isnan(f) else f)
    if attr in ("str", "dtype"):
        return (attr, text)
    raise AssertionError("unknown value attribute %r" % attr)


def decode_arg(el):
    """An <arg>/<kwarg> element back to canon() form."""
    attrs = {k: v for k, v in el.attrib.items() if k != "name"}
    items = list(el)
    if items:
        assert not attrs, ET.tostring(el)
        out = []
        for it in items:
            assert it.tag == "item" and len(it.attrib) == 1, ET.tostring(el)
            ((k, v),) = it.attrib.items()
            out.append(decode_scalar(k, v))
        return ("list", tuple(out))
    assert len(attrs) == 1, ET.tostring(el)
    ((k, v),) = attrs.items()
    if k == "nodes":
        return ("list", tuple(("node", s) for s in v.split()))
    if k == "ints":
        return ("list", tuple(("int", int(s)) for s in v.split()))
    if k == "floats":
        return ("list", tuple(decode_scalar("float", s) for s in v.split()))
    return decode_scalar(k, v)


class Recorder(torch.fx.Interpreter):
    """Keeps every node's real value."""

    def __init__(self, gm):
        super().__init__(gm, garbage_collect_values=False)
        self.values = {}

    def run_node(self, n):
        self.values[n.name] = super().run_node(n)
        return self.values[n.name]


def real_values(gm, inputs):
    rec = Recorder(gm)
    with torch.no_grad():
        rec.run(*inputs)
    return rec.values


def tensor_attrs(t):
    d = {"dtype": str(t.dtype).replace("torch.", ""),
         "shape": " ".join(str(s) for s in t.shape),
         "stride": " ".join(str(s) for s in t.stride())}
    if t.storage_offset():
        d["offset"] = str(t.storage_offset())
    return d


def expected_tensors(value):
    """The <tensor> attribute dicts a node's real value should produce."""
    if isinstance(value, torch.Tensor):
        return [tensor_attrs(value)]
    if isinstance(value, (tuple, list)):
        if any(v is None for v in value):
            return []  # a missing result: no metadata at all
        return [tensor_attrs(v) for v in value]
    return []


# ---------------------------------------------------------------------------


class GraphChecks(unittest.TestCase):
    """Shared structural comparison of an exported file with its FX graph."""

    def check_graph(self, xml_path, gm, inputs, placements):
        root = ET.parse(xml_path).getroot()
        self.assertEqual(root.tag, "dtopt-graph")
        self.assertEqual(root.get("version"), "1")
        self.assertEqual(root.get("view"), "global")
        self.assertTrue(root.get("name"))

        meshes = root.findall("mesh")
        self.assertEqual(len(meshes), 1)
        self.assertEqual(meshes[0].attrib, {
            "name": "world", "shape": " ".join(map(str, MESH_SHAPE)),
            "dims": " ".join(MESH_DIMS)})
        self.assertEqual([g.attrib for g in root.findall("group")],
                         [{"name": d, "mesh": "world", "dims": d}
                          for d in MESH_DIMS])

        fx_nodes = list(gm.graph.nodes)
        xml_nodes = root.findall("node")
        self.assertEqual([n.get("name") for n in xml_nodes],
                         [n.name for n in fx_nodes])
        values = real_values(gm, inputs)
        seen = set()
        for fx, el in zip(fx_nodes, xml_nodes):
            with self.subTest(node=fx.name):
                self.assertEqual(el.get("op"), fx.op)
                self.check_refs(el, seen)
                seen.add(fx.name)
                tensors = [t.attrib for t in el.findall("tensor")]
                if fx.op == "placeholder":
                    self.assertIsNone(el.get("target"))
                    self.assertEqual(tensors,
                                     expected_tensors(values[fx.name]))
                    sh = el.findall("sharding")
                    self.assertEqual(len(sh), 1)
                    self.assertEqual(sh[0].attrib, {
                        "mesh": "world",
                        "placements": placements.get(fx.name, "R R")})
                elif fx.op == "call_function":
                    self.assertEqual(el.get("target"),
                                     expected_target(fx.target))
                    args = [decode_arg(a) for a in el.findall("arg")]
                    self.assertEqual(args, [canon(a) for a in fx.args])
                    kwargs = {k.get("name"): decode_arg(k)
                              for k in el.findall("kwarg")}
                    self.assertEqual(kwargs, {k: canon(v)
                                              for k, v in fx.kwargs.items()})
                    self.assertEqual(tensors,
                                     expected_tensors(values[fx.name]))
                    self.assertEqual(el.findall("sharding"), [])
                else:
                    (arg,) = el.findall("arg")
                    (ret,) = fx.args
                    ret = ret if isinstance(ret, (tuple, list)) else [ret]
                    self.assertEqual(decode_arg(arg), canon(list(ret)))
                    self.assertEqual(tensors, [])
        return root

    def check_refs(self, el, earlier):
        """Every node reference names an earlier node."""
        for sub in el.iter():
            refs = []
            if "node" in sub.attrib:
                refs.append(sub.get("node"))
            if sub.tag in ("arg", "kwarg") and "nodes" in sub.attrib:
                refs += sub.get("nodes").split()
            for r in refs:
                self.assertIn(r, earlier, "reference to a later/unknown node")


class ExampleTests(GraphChecks):
    """The four bundled example graphs."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="fx_export_test.")
        cls.built = {}
        cls.all_targets = set()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)
        if cls.all_targets:
            print("\ndistinct targets across the examples:\n  "
                  + "\n  ".join(sorted(cls.all_targets)))

    def export_example(self, model, backward):
        gm, inputs, placements = fx_models.build(model, backward)
        path = os.path.join(self.tmp, "%s_%s.xml"
                            % (model, "fwdbwd" if backward else "fwd"))
        text = fx_export.export(gm, inputs, mesh_shape=MESH_SHAPE,
                                mesh_dims=MESH_DIMS, placements=placements,
                                path=path)
        with open(path, encoding="utf-8") as f:
            self.assertEqual(f.read(), text)
        leftovers = [n for n in os.listdir(self.tmp) if n.endswith(".tmp")]
        self.assertEqual(leftovers, [])
        return gm, inputs, placements, path

    def run_example(self, model, backward):
        gm, inputs, placements, path = self.export_example(model, backward)
        root = self.check_graph(path, gm, inputs, placements)
        self.assertEqual(root.get("name"),
                         os.path.splitext(os.path.basename(path))[0])

        targets = {n.get("target") for n in root.findall("node")
                   if n.get("op") == "call_function"}
        self.assertEqual(targets, set(fx_export.distinct_targets(gm)))
        self.assertLessEqual(REQUIRED_TARGETS[(model, backward)], targets)
        type(self).all_targets |= targets
        print("\n%s: %d nodes, targets: %s" % (
            os.path.basename(path), len(root.findall("node")),
            " ".join(sorted(targets))))

        # Placeholders are exactly the model's inputs, every one sharded.
        phs = [n for n in root.findall("node") if n.get("op") == "placeholder"]
        self.assertEqual(len(phs), len(inputs))
        # Every call_function carries a tensor unless its value is (or
        # contains) a missing result.
        values = real_values(gm, inputs)
        for n in root.findall("node"):
            if n.get("op") != "call_function":
                continue
            v = values[n.get("name")]
            missing = v is None or (isinstance(v, (tuple, list))
                                    and any(x is None for x in v))
            self.assertEqual(bool(n.findall("tensor")), not missing,
                             n.get("name"))

        self.xmllint(path)
        self.run_dtopt(path)

    def xmllint(self, path):
        xmllint = shutil.which("xmllint")
        if xmllint is None:
            print("xmllint not found: skipping xmllint --noout")
            return
        r = subprocess.run([xmllint, "--noout", path], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    def run_dtopt(self, path):
        if DTOPT is None:
            return
        if not (os.path.isfile(DTOPT) and os.access(DTOPT, os.X_OK)):
            print("SKIP dtopt checks: %s does not exist (yet)" % DTOPT)
            return
        for cmd in ([DTOPT, "verify", path],
                    [DTOPT, "opt", "-p", "verify,shape-infer", path,
                     "-o", "/dev/null"]):
            r = subprocess.run(cmd, capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, "%s exited %d:\n%s%s" % (
                " ".join(cmd), r.returncode, r.stdout, r.stderr))

    def test_mlp_fwd(self):
        self.run_example("mlp", False)

    def test_mlp_fwdbwd(self):
        self.run_example("mlp", True)

    def test_transformer_fwd(self):
        self.run_example("transformer", False)

    def test_transformer_fwdbwd(self):
        self.run_example("transformer", True)
        # native_layer_norm_backward of the first LayerNorm has output mask
        # [False, True, True] (x needs no gradient): its None result leaves
        # that node and the getitem of result 0 without <tensor>.
        gm, inputs, _, path = self.export_example("transformer", True)
        root = ET.parse(path).getroot()
        bare = sorted(n.get("name") for n in root.findall("node")
                      if n.get("op") == "call_function"
                      and not n.findall("tensor"))
        self.assertEqual(len(bare), 2, bare)

    def test_cli(self):
        out = os.path.join(self.tmp, "cli.xml")
        r = subprocess.run(
            [sys.executable, os.path.join(TOOLS, "fx_export.py"),
             "--example", "mlp", "--backward", "--mesh", "2x2",
             "--dims", "dp,tp", "--placement", "x_1=S(0) R",
             "--placement", "w2_1=R S(1)", "--name", "cli_mlp", "-o", out],
            capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        root = ET.parse(out).getroot()
        self.assertEqual(root.get("name"), "cli_mlp")
        shard = {n.get("name"): n.find("sharding").get("placements")
                 for n in root.findall("node") if n.get("op") == "placeholder"}
        self.assertEqual(shard, {"x_1": "S(0) R", "w1_1": "R R",
                                 "b1_1": "R R", "w2_1": "R S(1)",
                                 "b2_1": "R R"})
        # A bad placement: exit 1, and the existing output is untouched.
        with open(out, encoding="utf-8") as f:
            before = f.read()
        r = subprocess.run(
            [sys.executable, os.path.join(TOOLS, "fx_export.py"),
             "--example", "mlp", "--placement", "x_1=S(5) R", "-o", out],
            capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("S(5)", r.stderr)
        with open(out, encoding="utf-8") as f:
            self.assertEqual(f.read(), before)

    def test_bundled_files_up_to_date(self):
        """tools/examples/*.xml are what the exporter writes today."""
        for model in ("mlp", "transformer"):
            for backward in (False, True):
                stem = "%s_%s" % (model, "fwdbwd" if backward else "fwd")
                bundled = os.path.join(TOOLS, "examples", stem + ".xml")
                if not os.path.exists(bundled):
                    self.fail("missing %s" % bundled)
                gm, inputs, placements = fx_models.build(model, backward)
                text = fx_export.export(gm, inputs, mesh_shape=MESH_SHAPE,
                                        mesh_dims=MESH_DIMS,
                                        placements=placements, name=stem)
                with open(bundled, encoding="utf-8") as f:
                    self.assertEqual(f.read(), text, "regenerate " + bundled)


def _values_fn(x, idx):
    a = x[1:]                                   # storage offset 3
    b = x[:, idx]                               # index list [None, idx]
    c = torch.ops.prims.convert_element_type.default(a, torch.float16)
    d = x.masked_fill(x > 0, float("-inf")) + float("nan")
    e = torch.clamp(x, max=float("inf")).sum()  # 0-d result
    f = torch.full((2, 3), 0.5, dtype=torch.bfloat16)
    g = x.to(torch.int64)
    return a, b, c, d, e, f, g, None


class ValueTests(GraphChecks):
    """Value spellings and error handling on a small hand-made graph."""

    def setUp(self):
        self.x = torch.randn(4, 3)
        self.idx = torch.tensor([0, 2])
        self.gm = make_fx(_values_fn)(self.x, self.idx)

    def export(self, **kw):
        args = dict(mesh_shape=MESH_SHAPE, mesh_dims=MESH_DIMS,
                    placements={"x_1": "S(0) S(1)"})
        args.update(kw)
        return fx_export.export(self.gm, [self.x, self.idx], **args)

    def node(self, root, name):
        (el,) = [n for n in root.findall("node") if n.get("name") == name]
        return el

    def test_values(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "values.xml")
            self.export(path=path)
            root = self.check_graph(path, self.gm, [self.x, self.idx],
                                    {"x_1": "S(0) S(1)"})
        n = self.node(root, "slice_1").find("tensor")
        self.assertEqual(n.attrib, {"dtype": "float32", "shape": "3 3",
                                    "stride": "3 1", "offset": "3"})
        self.assertEqual(self.node(root, "sum_1").find("tensor").attrib,
                         {"dtype": "float32", "shape": "", "stride": ""})
        idx_arg = self.node(root, "index").findall("arg")[1]
        self.assertEqual([i.attrib for i in idx_arg],
                         [{"none": "true"}, {"node": "idx_1"}])
        self.assertEqual(self.node(root, "masked_fill").findall("arg")[2]
                         .attrib, {"float": "-inf"})
        self.assertEqual(self.node(root, "add").findall("arg")[1].attrib,
                         {"float": "nan"})
        self.assertEqual(self.node(root, "clamp").findall("arg")[2].attrib,
                         {"float": "inf"})
        conv = self.node(root, "convert_element_type")
        self.assertEqual(conv.get("target"),
                         "prims.convert_element_type.default")
        self.assertEqual(conv.findall("arg")[1].attrib, {"dtype": "float16"})
        full = {k.get("name"): dict(k.attrib)
                for k in self.node(root, "full").findall("kwarg")}
        self.assertEqual(full["dtype"], {"name": "dtype", "dtype": "bfloat16"})
        self.assertEqual(full["device"], {"name": "device", "str": "cpu"})
        self.assertEqual(full["pin_memory"],
                         {"name": "pin_memory", "bool": "false"})
        out = self.node(root, "output").find("arg")
        self.assertEqual(out[-1].attrib, {"none": "true"})

    def test_stack_trace_flag(self):
        for n in self.gm.graph.nodes:
            n.meta["stack_trace"] = 'File "m.py", line 3\n  x < y & "z"'
        self.assertNotIn("stack_trace", self.export())
        root = ET.fromstring(self.export(stack_trace=True).encode())
        metas = root.find("node").findall("meta")
        self.assertEqual([m.attrib for m in metas], [{
            "key": "stack_trace",
            "value": 'File "m.py", line 3\n  x < y & "z"'}])

    def test_errors(self):
        bad = [
            dict(placements={"nope": "R R"}),              # no such node
            dict(placements={"x_1": "S(0)"}),              # too few tokens
            dict(placements={"x_1": "S(2) R"}),            # dim >= rank
            dict(placements={"x_1": "Shard(0) R"}),        # bad token
            dict(mesh_shape=(2, 2, 2)),                     # dims mismatch
            dict(mesh_dims=("dp", "dp")),                   # duplicate dims
        ]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "keep.xml")
            with open(path, "w") as f:
                f.write("old")
            for kw in bad:
                with self.subTest(kw=kw):
                    with self.assertRaises(fx_export.ExportError):
                        self.export(path=path, **kw)
            with open(path) as f:
                self.assertEqual(f.read(), "old")
            self.assertEqual(os.listdir(tmp), ["keep.xml"])

    def test_partial_and_strided_placements(self):
        root = ET.fromstring(self.export(
            placements={"x_1": "_S(0,2)  P(sum)"}).encode())
        self.assertEqual(self.node(root, "x_1").find("sharding")
                         .get("placements"), "_S(0,2) P(sum)")

    def test_output_placements(self):
        pins = ["S(0) R"] + [None] * 7  # output 0 is slice_1
        root = ET.fromstring(self.export(output_placements=pins).encode())
        pinned = {n.get("name"): n.find("sharding").get("placements")
                  for n in root.findall("node")
                  if n.find("sharding") is not None}
        self.assertEqual(pinned, {"x_1": "S(0) S(1)", "idx_1": "R R",
                                  "slice_1": "S(0) R"})
        for bad in ([None] * 3,                       # wrong length
                    [None] * 7 + ["R R"],             # a None output
                    [None] * 4 + ["S(0) R"] + [None] * 3,  # 0-d sum_1
                    ["S(0)"] + [None] * 7):           # too few tokens
            with self.subTest(pins=bad):
                with self.assertRaises(fx_export.ExportError):
                    self.export(output_placements=bad)

    def test_node_placements(self):
        root = ET.fromstring(self.export(
            node_placements={"slice_1": "S(0) R"},
            output_placements=["S(0) R"] + [None] * 7).encode())
        self.assertEqual(self.node(root, "slice_1").find("sharding")
                         .get("placements"), "S(0) R")
        for bad, outs in (({"x_1": "R R"}, None),      # a placeholder
                          ({"nope": "R R"}, None),     # no such node
                          ({"slice_1": "S(0)"}, None),  # too few tokens
                          ({"slice_1": "R R"},          # the output's pin
                           ["S(0) R"] + [None] * 7)):
            with self.subTest(pins=bad):
                with self.assertRaises(fx_export.ExportError):
                    self.export(node_placements=bad, output_placements=outs)


class ConstantTests(unittest.TestCase):
    """get_attr tensors (closed over by the traced function) become
    constants: data inline or in a side file, byte for byte; the exported
    graph runs like torch eager and checks under dp x tp."""

    D = 16

    @classmethod
    def setUpClass(cls):
        torch.manual_seed(0)
        # RoPE-like: computed outside the traced function, used inside.
        cls.freqs = 1.0 / (10000.0 ** (torch.arange(0, cls.D, 2).float()
                                       / cls.D))
        cls.w = torch.randn(cls.D // 2, 509)  # 16 KiB: a side file; odd
        cls.mask = torch.tensor([True, False] * (cls.D // 4))

    def fn(self, x):
        freqs, w, mask = self.freqs, self.w, self.mask
        ang = x * freqs
        y = torch.where(mask, torch.cos(ang), torch.sin(ang))
        return y @ w, x

    def trace(self):
        x = torch.randn(4, self.D // 2)
        gm = make_fx(lambda x: self.fn(x))(x)
        consts = {n.name: getattr(gm, n.target)
                  for n in gm.graph.nodes if n.op == "get_attr"}
        self.assertEqual(consts["_tensor_constant2"].shape, self.w.shape)
        return gm, x, consts

    def export(self, tmp, placements, name="rope.xml", **kw):
        gm, x, consts = self.trace()
        path = os.path.join(tmp, name)
        fx_export.export(gm, [x], mesh_shape=MESH_SHAPE, mesh_dims=MESH_DIMS,
                         placements=placements, path=path, **kw)
        return path, consts

    def test_data_inline_and_side_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path, consts = self.export(tmp, {"x_1": "S(0) R"})
            root = ET.parse(path).getroot()
            self.assertEqual(root.get("version"), "1.1")
            nodes = {n.get("name"): n for n in root.findall("node")
                     if n.get("op") == "get_attr"}
            self.assertEqual(sorted(nodes), sorted(consts))
            files = []
            for name, t in consts.items():
                el = nodes[name]
                raw = t.contiguous().numpy().tobytes()  # little-endian host
                (tensor,) = el.findall("tensor")
                self.assertEqual(tensor.attrib, tensor_attrs(t))
                (data,) = el.findall("data")
                self.assertEqual(el.get("target"), name)
                if len(raw) <= fx_export.INLINE_MAX_BYTES:
                    self.assertEqual(base64.b64decode(data.get("base64")),
                                     raw)
                    continue
                files.append(data.get("file"))
                self.assertEqual(int(data.get("bytes")), len(raw))
                self.assertEqual(int(data.get("crc32"), 16),
                                 zlib.crc32(raw))
                with open(os.path.join(tmp, data.get("file")), "rb") as f:
                    self.assertEqual(f.read(), raw)
            self.assertEqual(len(files), 1)  # w
            self.assertEqual(sorted(os.listdir(tmp)),
                             sorted(files + ["rope.xml"]))
            # All inline when asked to.
            path2, _ = self.export(tmp, {}, name="inline.xml",
                                   inline_max=1 << 20)
            with open(path2) as f:
                self.assertNotIn("file=", f.read())
            with self.assertRaises(fx_export.ExportError):
                self.export(tmp, {}, name="no.xml",
                            inline_max=fx_export.INLINE_LIMIT_BYTES + 1)
            self.assertNotIn("no.xml", os.listdir(tmp))

    def test_bfloat16_and_bool_bytes(self):
        t = torch.tensor([1.0, -2.5, 3.0e38], dtype=torch.bfloat16)
        self.assertEqual(fx_export.constant_bytes(t),
                         t.view(torch.int16).numpy().tobytes())
        self.assertEqual(fx_export.constant_bytes(self.mask),
                         bytes([1, 0] * (self.D // 4)))

    def test_noncontiguous_refused(self):
        w = torch.randn(6, 4).t()
        gm = make_fx(lambda x: x @ w)(torch.randn(3, 4))
        with self.assertRaises(fx_export.ExportError):
            fx_export.export(gm, None, mesh_shape=MESH_SHAPE,
                             mesh_dims=MESH_DIMS, placements={})

    @unittest.skipUnless(DTOPT_GIVEN, "no dtopt binary")
    def test_runs_like_eager(self):
        with tempfile.TemporaryDirectory() as tmp:
            path, _ = self.export(tmp, {"x_1": "S(0) R"})
            out = os.path.join(tmp, "out")
            subprocess.run([DTOPT, "run", "--backend=cpu", path,
                            "--out=" + out], check=True,
                           stdout=subprocess.DEVNULL)
            import numpy as np
            mm = np.fromfile(os.path.join(out, "rank0.0.bin"), "<f4")
            x = np.fromfile(os.path.join(out, "rank0.1.bin"), "<f4")
            x = torch.from_numpy(x.reshape(4, self.D // 2))
            want, _ = self.fn(x)
            got = torch.from_numpy(mm.reshape(want.shape))
            self.assertLess((got - want).abs().max().item(), 1e-4)
            self.assertGreater(want.abs().max().item(), 1.0)

    @unittest.skipUnless(DTOPT_GIVEN and shutil.which("mpirun"),
                         "no dtopt binary or no mpirun")
    def test_checks_under_dp_tp(self):
        """Constants replicated, sharded evenly and unevenly, each graph
        lowered per rank by run --check on a 2x2 mesh."""
        cases = [{"x_1": "S(0) R"},
                 {"x_1": "S(0) R", "_tensor_constant2": "R S(1)"},
                 {"x_1": "R S(0)", "_tensor_constant2": "S(0) S(1)",
                  "_tensor_constant0": "R S(0)"}]
        with tempfile.TemporaryDirectory() as tmp:
            for i, placements in enumerate(cases):
                with self.subTest(placements=placements):
                    path, consts = self.export(tmp, placements,
                                               name="c%d.xml" % i)
                    p = subprocess.run(
                        ["mpirun", "--allow-run-as-root", "--oversubscribe",
                         "-np", "4", DTOPT, "run", "--check", path],
                        capture_output=True, text=True)
                    self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                    self.assertIn("check: ok", p.stdout)
                    self.check_spmd(path, must=i == 0)

    def check_spmd(self, path, must):
        """The one program for every rank (dtopt opt -o OUT.xml) checks
        against the global graph. Sharded constants need the SPMD local
        shard of an R -> S(d) step: where this dtopt refuses it (`must`
        false), the refusal must be that one, never another error."""
        out = path[:-len(".xml")] + ".spmd.xml"
        p = subprocess.run([DTOPT, "opt", path, "-o", out],
                           capture_output=True, text=True)
        if p.returncode != 0 and not must:
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("cannot lower for every rank at once (SPMD)",
                          p.stderr)
            return
        self.assertEqual(p.returncode, 0, p.stderr)
        p = subprocess.run(
            ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4",
             DTOPT, "run", "--check", "--reference", path, out],
            capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("check: ok", p.stdout)

    @unittest.skipUnless(DTOPT_GIVEN and shutil.which("mpirun"),
                         "no dtopt binary or no mpirun")
    def test_module_parameters_tensor_parallel(self):
        """make_fx of a module reads its parameters and buffers with
        get_attr: exported as constants, pinned Megatron-style (first
        linear column-parallel, second row-parallel: a P(sum) result), the
        graph checks on 2x2 and runs like eager."""
        torch.manual_seed(1)
        m = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.GELU(),
                                torch.nn.Linear(64, 8))
        m.register_buffer("scale", torch.linspace(0.5, 2, 8))

        def f(x):
            return m(x) * m.scale, x

        x = torch.randn(4, 16)
        gm = make_fx(f)(x)
        consts = {n.name: getattr(gm, n.target)
                  for n in gm.graph.nodes if n.op == "get_attr"}
        self.assertEqual(len(consts), 5)
        self.assertEqual(consts["_param_constant0"].shape, (64, 16))
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "mlp.xml")
            fx_export.export(gm, [x], mesh_shape=MESH_SHAPE,
                             mesh_dims=MESH_DIMS, path=path, placements={
                                 "x_1": "S(0) R",
                                 "_param_constant0": "R S(0)",
                                 "_param_constant1": "R S(0)",
                                 "_param_constant2": "R S(1)"})
            p = subprocess.run(
                ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
                 "4", DTOPT, "run", "--check", path],
                capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("check: ok", p.stdout)
            out = os.path.join(tmp, "out")
            subprocess.run([DTOPT, "run", "--backend=cpu", path,
                            "--out=" + out], check=True,
                           stdout=subprocess.DEVNULL)
            import numpy as np
            xs = np.fromfile(os.path.join(out, "rank0.1.bin"), "<f4")
            got = np.fromfile(os.path.join(out, "rank0.0.bin"), "<f4")
            want, _ = f(torch.from_numpy(xs.reshape(4, 16)))
            self.assertLess(np.abs(got.reshape(4, 8) - want.detach().numpy())
                            .max(), 1e-5)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and not args[0].startswith("-"):
        DTOPT = os.path.abspath(args.pop(0))
        print("dtopt binary: %s" % DTOPT)
    else:
        print("no dtopt binary given: skipping the dtopt verify/opt checks")
    unittest.main(argv=[sys.argv[0]] + args, verbosity=2)

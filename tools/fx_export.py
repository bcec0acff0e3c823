#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Export a torch.fx graph traced with make_fx to dtopt's XML format v1.

The result is a global-view graph (see format.md): one mesh named "world",
one group per mesh dim, every FX node in graph order with its positional
args, keyword args, result tensor metadata and (on placeholders) the
caller-given sharding.

Python API::

    from fx_export import export
    xml_text = export(gm, example_inputs, mesh_shape=(2, 2),
                      mesh_dims=("dp", "tp"),
                      placements={"x_1": "S(0) R"}, path="out.xml")

Command line (regenerates the bundled examples of tools/fx_models.py)::

    /usr/bin/python3 tools/fx_export.py --example mlp --backward \\
        --mesh 2x2 --dims dp,tp --placement x_1='S(0) R' -o mlp.xml

Where the tensor metadata comes from: newer torch versions store the traced
value (a real or fake tensor) in ``node.meta['val']``. torch 1.13's make_fx in
real mode stores only ``node.meta['tensor_meta']`` (a TensorMetadata without
storage offset) and stores nothing at all for nodes returning a tuple (e.g.
``aten.native_layer_norm``). So when some node lacks ``'val'``, the exporter
re-runs the graph on ``example_inputs`` with torch.fx.Interpreter and takes
dtype/shape/stride/storage offset from the real results; ``tensor_meta`` is
the last resort when that is not possible.

A ``get_attr`` node (a tensor the traced function closes over, e.g. a RoPE
table: make_fx stores it on the GraphModule as ``_tensor_constant0``) becomes
a constant node of format 1.1: its ``<tensor>`` and ``<data>``, inline as
base64 up to ``inline_max`` bytes (4 KiB), else in a side file beside the
XML file named as dtopt names them (``NODE-CRC32.bin``, content-addressed),
with its byte count and CRC-32. It is replicated unless ``placements`` names
it. The file says version="1.1" only when it has a constant.

A node whose value is None, or a tuple containing None (e.g.
``native_layer_norm_backward`` with a False entry in its output mask), gets
no ``<tensor>`` child: format v1 has no way to write a missing result, and a
partial list would misnumber the results that ``operator.getitem`` selects.
Such metadata is optional in the format and ``shape-infer`` recomputes it.

Needs torch; on Debian use /usr/bin/python3 (python3-torch).
"""

import argparse
import base64
import enum
import math
import os
import re
import sys
import tempfile
import warnings
import zlib

import torch
import torch.fx
import torch.utils._pytree as pytree

FORMAT_VERSION = "1"
# The version of a graph that uses a format 1.1 feature (constants).
FORMAT_VERSION_CONSTANTS = "1.1"
MESH_NAME = "world"
# Constant data up to this many bytes is written inline (as dtopt does).
INLINE_MAX_BYTES = 4096
# The most data an inline base64 attribute may carry (dtopt's reader, like
# libxml2, refuses attribute values over 10 MB).
INLINE_LIMIT_BYTES = 6 << 20
# dtopt's dtypes (ir.h DT_DTYPES).
_DATA_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64,
                torch.int64, torch.int32, torch.int16, torch.int8,
                torch.uint8, torch.bool)

# One placement token: R, S(d), _S(d,sf), P(op).
_PLACEMENT_RE = re.compile(
    r"^(?:R|S\((\d+)\)|_S\((\d+),(\d+)\)|P\((?:sum|avg|max|min)\))$")
_DIM_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Characters XML 1.0 cannot carry at all, even as character references.
_XML_INVALID_RE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


class ExportError(ValueError):
    """The graph or the arguments cannot be written in format v1."""


# ---------------------------------------------------------------------------
# Scalar spellings


def _xml_attr(text):
    """Quote `text` as an XML attribute value (with the quotes). Newlines and
    tabs become character references so that they survive attribute-value
    normalisation; characters XML 1.0 cannot hold become U+FFFD."""
    text = _XML_INVALID_RE.sub("\ufffd", str(text))
    text = (text.replace("&", "&amp;").replace("<", "&lt;")
            .replace(">", "&gt;").replace('"', "&quot;")
            .replace("\n", "&#10;").replace("\r", "&#13;")
            .replace("\t", "&#9;"))
    return '"' + text + '"'


def _attrs(pairs):
    """' k="v" k2="v2"' for a list of (key, value) pairs."""
    return "".join(" %s=%s" % (k, _xml_attr(v)) for k, v in pairs)


def _fmt_float(x):
    """Shortest round-trip spelling; inf/-inf/nan as strtod reads them."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(float(x))


def _fmt_dtype(dtype):
    """torch.float32 -> "float32"."""
    s = str(dtype)
    return s[len("torch."):] if s.startswith("torch.") else s


def _fmt_ints(values):
    return " ".join(str(int(v)) for v in values)


def format_target(target):
    """FX target as written in format v1: OpOverloads print themselves
    ("aten.mm.default"); other callables are module.qualname, with the C
    implementation module "_operator" spelled "operator"."""
    if isinstance(target, str):
        return target
    if isinstance(target, (torch._ops.OpOverload,
                           torch._ops.OpOverloadPacket)):
        return str(target)
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or getattr(
        target, "__name__", repr(target))
    if module in ("_operator", "operator"):
        module = "operator"
    elif module == "builtins" or not module:
        return name
    return module + "." + name


# ---------------------------------------------------------------------------
# Argument values


def _scalar_form(value):
    """(attribute, text) for a scalar value, or None if it is not one.
    bool is tested before int: bool is a subclass of int."""
    if isinstance(value, torch.fx.Node):
        return ("node", value.name)
    if value is None:
        return ("none", "true")
    if isinstance(value, bool):
        return ("bool", "true" if value else "false")
    if isinstance(value, int):
        return ("int", str(value))
    if isinstance(value, float):
        return ("float", _fmt_float(value))
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, torch.dtype):
        return ("dtype", _fmt_dtype(value))
    if isinstance(value, (torch.device, torch.layout, torch.memory_format)):
        return ("str", str(value))
    if isinstance(value, enum.Enum):
        return ("str", value.name)
    return None


def _value_form(value, where):
    """How one arg/kwarg value is written: ("attr", attribute, text) for the
    single-attribute forms or ("items", [(attribute, text), ...]).

    Homogeneous lists use the compact forms (nodes, ints, floats); an empty
    list is written ints="" (empty lists in aten schemas are int[] dims);
    anything else (mixed, containing None or bools) becomes <item> children.
    """
    scalar = _scalar_form(value)
    if scalar is not None:
        return ("attr",) + scalar
    if isinstance(value, (list, tuple, torch.Size)):
        values = list(value)
        if not values:
            return ("attr", "ints", "")
        if all(isinstance(v, torch.fx.Node) for v in values):
            return ("attr", "nodes", " ".join(v.name for v in values))
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return ("attr", "ints", _fmt_ints(values))
        if all(isinstance(v, float) for v in values):
            return ("attr", "floats", " ".join(_fmt_float(v) for v in values))
        items = []
        for v in values:
            form = _scalar_form(v)
            if form is None:
                raise ExportError("%s: list element %r (%s) has no format v1 "
                                  "spelling" % (where, v, type(v).__name__))
            items.append(form)
        return ("items", items)
    raise ExportError("%s: value %r (%s) has no format v1 spelling"
                      % (where, value, type(value).__name__))


def _arg_xml(tag, value, where, name=None):
    """One <arg>/<kwarg> element."""
    head = [("name", name)] if name is not None else []
    form = _value_form(value, where)
    if form[0] == "attr":
        return "<%s%s/>" % (tag, _attrs(head + [(form[1], form[2])]))
    items = "".join("<item%s/>" % _attrs([f]) for f in form[1])
    return "<%s%s>%s</%s>" % (tag, _attrs(head), items, tag)


# ---------------------------------------------------------------------------
# Tensor metadata


class _TensorDesc:
    """dtype/shape/stride/offset of one tensor result."""

    __slots__ = ("dtype", "shape", "stride", "offset")

    def __init__(self, dtype, shape, stride, offset):
        self.dtype, self.shape, self.stride, self.offset = (
            dtype, tuple(int(s) for s in shape), tuple(int(s) for s in stride),
            int(offset))

    @classmethod
    def of_tensor(cls, t):
        return cls(t.dtype, t.shape, t.stride(), t.storage_offset())

    def xml(self):
        pairs = [("dtype", _fmt_dtype(self.dtype)),
                 ("shape", _fmt_ints(self.shape)),
                 ("stride", _fmt_ints(self.stride))]
        if self.offset != 0:
            pairs.append(("offset", str(self.offset)))
        return "<tensor%s/>" % _attrs(pairs)


def _describe(value):
    """A node's value as a list of _TensorDesc (one per tensor result), [] for
    a non-tensor value, or None when a result is missing (None in a tuple)."""
    if isinstance(value, torch.Tensor):
        return [_TensorDesc.of_tensor(value)]
    if isinstance(value, (list, tuple)):
        descs = []
        for v in value:
            if v is None:
                return None
            if not isinstance(v, torch.Tensor):
                return []  # a mixed/non-tensor tuple: nothing to write
            descs.append(_TensorDesc.of_tensor(v))
        return descs
    if value is None:
        return None
    return []


def _describe_tensor_meta(tm):
    """torch.fx.passes.shape_prop.TensorMetadata (no storage offset)."""
    if tm is None:
        return None
    if isinstance(tm, (list, tuple)) and not hasattr(tm, "shape"):
        out = []
        for t in tm:
            d = _describe_tensor_meta(t)
            if d is None:
                return None
            out += d
        return out
    return [_TensorDesc(tm.dtype, tm.shape, tm.stride, 0)]


class _Recorder(torch.fx.Interpreter):
    """Runs the graph on real inputs and keeps each node's tensor metadata
    (not the tensors, so the interpreter can still free values early)."""

    def __init__(self, gm):
        super().__init__(gm)
        self.descs = {}

    def run_node(self, n):
        result = super().run_node(n)
        self.descs[n] = _describe(result)
        return result


def _collect_metadata(gm, example_inputs):
    """node -> list of _TensorDesc, [] (no tensor) or None (missing result)."""
    nodes = list(gm.graph.nodes)
    descs = {}
    if all("val" in n.meta for n in nodes if n.op != "output"):
        for n in nodes:
            descs[n] = _describe(n.meta.get("val"))
        return descs
    recorded = None
    if example_inputs is not None:
        try:
            rec = _Recorder(gm)
            with torch.no_grad():
                rec.run(*example_inputs)
            recorded = rec.descs
        except Exception as e:  # fall back to what the tracer stored
            warnings.warn("fx_export: re-running the graph on example_inputs "
                          "failed (%s); using node.meta['tensor_meta'] "
                          "(no storage offsets, no tuple results)" % e)
    for n in nodes:
        if "val" in n.meta:
            descs[n] = _describe(n.meta["val"])
        elif recorded is not None and n in recorded:
            descs[n] = recorded[n]
        else:
            descs[n] = _describe_tensor_meta(n.meta.get("tensor_meta"))
    return descs


# ---------------------------------------------------------------------------
# Mesh and placements


def _check_mesh(mesh_shape, mesh_dims):
    shape = [int(s) for s in mesh_shape]
    dims = [str(d) for d in mesh_dims]
    if not shape or len(shape) != len(dims):
        raise ExportError("mesh_shape %r and mesh_dims %r must be non-empty "
                          "and of equal length" % (mesh_shape, mesh_dims))
    if any(s <= 0 for s in shape):
        raise ExportError("mesh_shape %r: sizes must be positive" % (shape,))
    for d in dims:
        if not _DIM_NAME_RE.match(d):
            raise ExportError("mesh dim name %r is not an identifier" % d)
    if len(set(dims)) != len(dims):
        raise ExportError("mesh_dims %r: names must be distinct" % (dims,))
    return shape, dims


def _check_placements(name, text, ndims, rank):
    """Normalised placements string for placeholder `name` of tensor rank
    `rank` on a mesh with `ndims` dims."""
    tokens = str(text).split()
    if len(tokens) != ndims:
        raise ExportError("placements for %s: %r has %d token(s), the mesh "
                          "has %d dim(s)" % (name, text, len(tokens), ndims))
    for tok in tokens:
        m = _PLACEMENT_RE.match(tok)
        if not m:
            raise ExportError("placements for %s: bad token %r (want R, S(d), "
                              "_S(d,sf) or P(sum|avg|max|min))" % (name, tok))
        d = m.group(1) or m.group(2)
        if d is not None and int(d) >= rank:
            raise ExportError("placements for %s: %s shards dim %s of a "
                              "rank-%d tensor" % (name, tok, d, rank))
        if m.group(3) is not None and int(m.group(3)) < 1:
            raise ExportError("placements for %s: %s: split factor must be "
                              ">= 1" % (name, tok))
    return " ".join(tokens)


# ---------------------------------------------------------------------------
# Export


def _constant_tensor(gm, node, where):
    """The tensor a get_attr node reads (a dotted path on gm)."""
    obj = gm
    for part in str(node.target).split("."):
        if not hasattr(obj, part):
            raise ExportError("%s: the GraphModule has no attribute %r"
                              % (where, node.target))
        obj = getattr(obj, part)
    if not isinstance(obj, torch.Tensor):
        raise ExportError("%s: %r is a %s, not a tensor"
                          % (where, node.target, type(obj).__name__))
    if obj.dtype not in _DATA_DTYPES:
        raise ExportError("%s: dtype %s has no format v1 spelling"
                          % (where, _fmt_dtype(obj.dtype)))
    if obj.is_sparse or not obj.is_contiguous() or obj.storage_offset():
        raise ExportError("%s: %r is not a contiguous dense tensor (constant "
                          "data is row-major); make it .contiguous() before "
                          "tracing" % (where, node.target))
    return obj.detach().cpu()


def constant_bytes(t):
    """A tensor's elements as dtopt stores constant data: row-major,
    little-endian; float16/bfloat16 as their bit patterns, bool as 0/1."""
    t = t.detach().cpu().contiguous()
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.view(torch.int16)
    a = t.numpy()
    return a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()


def side_file_name(node_name, data):
    """dtopt's content-addressed side-file name (constant_data.h)."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", node_name[:64]) or "constant"
    return "%s-%08x.bin" % (safe, zlib.crc32(data))


def _data_xml(node_name, data, folder, inline_max, side_files):
    """<data>: base64 inline, or a side file (queued in side_files) when
    over inline_max bytes and the XML goes to a folder."""
    if folder is None and len(data) > INLINE_LIMIT_BYTES:
        raise ExportError("constant %s has %d bytes, more than inline data "
                          "may hold (%d); give a path, whose folder gets its "
                          "side file" % (node_name, len(data),
                                         INLINE_LIMIT_BYTES))
    if folder is None or len(data) <= inline_max:
        return "<data%s/>" % _attrs([("base64",
                                      base64.b64encode(data).decode())])
    name = side_file_name(node_name, data)
    side_files.append((os.path.join(folder, name), data))
    return "<data%s/>" % _attrs([("file", name), ("bytes", str(len(data))),
                                 ("crc32", "%08x" % zlib.crc32(data))])


def _meta_xml(node, stack_trace):
    """<meta> children: string-valued FX metadata (and enum-valued, e.g.
    'recompute', by name). stack_trace only when asked for: it is large."""
    out = []
    for key, value in node.meta.items():
        if key == "stack_trace" and not stack_trace:
            continue
        if isinstance(value, enum.Enum):
            value = value.name
        if isinstance(value, str):
            out.append("<meta%s/>" % _attrs([("key", key), ("value", value)]))
    return out


def _output_xml(node):
    """The output node's single <arg>: the returned values as a flat list."""
    (ret,) = node.args
    flat, _ = pytree.tree_flatten(ret)
    if all(isinstance(v, torch.fx.Node) for v in flat):
        return '<arg nodes=%s/>' % _xml_attr(" ".join(v.name for v in flat))
    return _arg_xml("arg", flat, "output")


def _output_pins(gm, output_placements, ndims, descs):
    """node -> placements string for the nodes feeding the output positions
    `output_placements` names (a list, one entry or None per flattened
    output; None leaves that position unpinned)."""
    (out,) = [n for n in gm.graph.nodes if n.op == "output"]
    flat, _ = pytree.tree_flatten(out.args[0])
    if len(output_placements) != len(flat):
        raise ExportError("output_placements has %d entries, the graph %d "
                          "outputs" % (len(output_placements), len(flat)))
    pins = {}
    for i, (value, text) in enumerate(zip(flat, output_placements)):
        if text is None:
            continue
        where = "output %d" % i
        d = descs.get(value) if isinstance(value, torch.fx.Node) else None
        if not d or len(d) != 1 or value.op not in ("placeholder",
                                                    "call_function"):
            raise ExportError("%s: not a single tensor result; it cannot be "
                              "pinned" % where)
        pl = _check_placements(where, text, ndims, len(d[0].shape))
        if pins.setdefault(value, pl) != pl:
            raise ExportError("%s: %s also feeds an output pinned to %s"
                              % (where, value.name, pins[value]))
    return pins


def _node_pins(nodes, node_placements, ndims, descs, pins):
    """Add the pins `node_placements` names (call_function node name ->
    placements of its result 0) to `pins` (node -> placements)."""
    by_name = {n.name: n for n in nodes if n.op == "call_function"}
    for name, text in node_placements.items():
        n = by_name.get(name)
        d = descs.get(n) if n is not None else None
        if not d:
            raise ExportError("node_placements: %s is no call_function node "
                              "with a tensor result" % name)
        pl = _check_placements(name, text, ndims, len(d[0].shape))
        if pins.setdefault(n, pl) != pl:
            raise ExportError("node_placements: %s pinned to %s, an output "
                              "pins it to %s" % (name, pl, pins[n]))


def export(gm, example_inputs, *, mesh_shape, mesh_dims, placements,
           path=None, name=None, stack_trace=False,
           inline_max=INLINE_MAX_BYTES, output_placements=None,
           node_placements=None):
    """Write `gm` (a torch.fx.GraphModule from make_fx) as a format v1
    global-view graph and return the XML text.

    example_inputs: the real tensors gm was traced with (used to recover
      tensor metadata the tracer did not store; may be None if every node
      has meta['val']).
    mesh_shape, mesh_dims: e.g. (2, 2) and ("dp", "tp").
    placements: placeholder (or get_attr) name -> placements string, one
      token per mesh dim (e.g. "S(0) R"); placeholders not named are
      replicated, constants not named get no <sharding> (replicated).
    path: when given, the text is also written there atomically, after the
      side files of constants over inline_max bytes (without a path all
      data is inline).
    name: the graph name (default: the file name without extension, else
      the GraphModule's class name, which make_fx sets to the function's).
    stack_trace: also write node.meta['stack_trace'] where present.
    output_placements: optional list, one placements string (or None) per
      flattened output: the node feeding that output gets a <sharding>
      pin, which shard-prop honours (redistributing after the node when no
      strategy gives it). A placeholder output keeps its own placements.
    node_placements: optional dict, call_function node name -> placements
      string of its result 0: a <sharding> pin on that node (an expert
      plan pins intermediates so). A node an output also pins must agree.

    Raises ExportError (a ValueError) for what format v1 cannot express:
    call_module/call_method nodes, non-tensor placeholders or constants,
    argument values without a spelling, bad mesh or placements, or
    placements naming no placeholder.
    """
    shape, dims = _check_mesh(mesh_shape, mesh_dims)
    if not 0 <= inline_max <= INLINE_LIMIT_BYTES:
        raise ExportError("inline_max %d: want 0 to %d bytes"
                          % (inline_max, INLINE_LIMIT_BYTES))
    placements = dict(placements or {})
    nodes = list(gm.graph.nodes)
    placeholder_names = {n.name for n in nodes
                         if n.op in ("placeholder", "get_attr")}
    unknown = sorted(set(placements) - placeholder_names)
    if unknown:
        raise ExportError("placements name no placeholder: %s (placeholders: "
                          "%s)" % (", ".join(unknown),
                                   ", ".join(sorted(placeholder_names))))
    if name is None:
        name = (os.path.splitext(os.path.basename(path))[0] if path
                else type(gm).__name__)
    descs = _collect_metadata(gm, example_inputs)
    folder = os.path.dirname(os.path.abspath(path)) if path else None
    side_files = []
    version = (FORMAT_VERSION_CONSTANTS
               if any(n.op == "get_attr" for n in nodes) else FORMAT_VERSION)
    pins = (_output_pins(gm, output_placements, len(dims), descs)
            if output_placements is not None else {})
    _node_pins(nodes, node_placements or {}, len(dims), descs, pins)

    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             "<dtopt-graph%s>" % _attrs([("version", version),
                                         ("name", name), ("view", "global")]),
             "  <mesh%s/>" % _attrs([("name", MESH_NAME),
                                     ("shape", _fmt_ints(shape)),
                                     ("dims", " ".join(dims))])]
    for d in dims:
        lines.append("  <group%s/>" % _attrs([("name", d), ("mesh", MESH_NAME),
                                              ("dims", d)]))
    lines.append("")

    for n in nodes:
        where = "node %s (%s)" % (n.name, n.op)
        children = []
        if n.op == "placeholder":
            head = [("name", n.name), ("op", "placeholder")]
            d = descs.get(n)
            if not d or len(d) != 1:
                raise ExportError("%s: not a single tensor; format v1 "
                                  "placeholders are tensors" % where)
            children.append(d[0].xml())
            pl = _check_placements(n.name, placements.get(n.name, " ".join(
                ["R"] * len(dims))), len(dims), len(d[0].shape))
            if pins.get(n, pl) != pl:
                raise ExportError("%s: an output pins it to %s, its "
                                  "placements are %s" % (where, pins[n], pl))
            children.append("<sharding%s/>" % _attrs([("mesh", MESH_NAME),
                                                      ("placements", pl)]))
        elif n.op == "call_function":
            head = [("name", n.name), ("op", "call_function"),
                    ("target", format_target(n.target))]
            children += [_arg_xml("arg", a, where) for a in n.args]
            children += [_arg_xml("kwarg", v, where, name=k)
                         for k, v in n.kwargs.items()]
            children += [t.xml() for t in (descs.get(n) or [])]
            if n in pins:
                children.append("<sharding%s/>" % _attrs(
                    [("mesh", MESH_NAME), ("placements", pins[n])]))
        elif n.op == "get_attr":
            head = [("name", n.name), ("op", "get_attr"),
                    ("target", str(n.target))]
            t = _constant_tensor(gm, n, where)
            children.append(_TensorDesc(t.dtype, t.shape, _contiguous(t.shape),
                                        0).xml())
            children.append(_data_xml(n.name, constant_bytes(t), folder,
                                      inline_max, side_files))
            if n.name in placements:
                pl = _check_placements(n.name, placements[n.name], len(dims),
                                       t.dim())
                children.append("<sharding%s/>" % _attrs(
                    [("mesh", MESH_NAME), ("placements", pl)]))
        elif n.op == "output":
            head = [("name", n.name), ("op", "output")]
            children.append(_output_xml(n))
        else:
            raise ExportError("%s: op %r is not in format v1 (only "
                              "placeholder, get_attr, call_function, output)"
                              % (where, n.op))
        children += _meta_xml(n, stack_trace)
        lines.append("  <node%s>" % _attrs(head))
        lines += ["    " + c for c in children]
        lines.append("  </node>")
    lines.append("</dtopt-graph>")
    text = "\n".join(lines) + "\n"
    if path is not None:
        for side_path, data in side_files:
            write_atomic(side_path, data)
        write_atomic(path, text)
    return text


def _contiguous(shape):
    """Row-major strides of `shape`."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(int(size), 1)
    return tuple(reversed(strides))


def write_atomic(path, text):
    """Write `text` (str, or bytes for a side file) to `path` through a
    temporary file in the same folder and os.replace, so `path` is never
    left half-written."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".fx_export.", suffix=".tmp",
                               dir=folder)
    try:
        with (os.fdopen(fd, "wb") if isinstance(text, bytes)
              else os.fdopen(fd, "w", encoding="utf-8")) as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def distinct_targets(gm):
    """Sorted distinct call_function targets of `gm`, as exported."""
    return sorted({format_target(n.target) for n in gm.graph.nodes
                   if n.op == "call_function"})


# ---------------------------------------------------------------------------
# Command line


def _parse_args(argv):
    p = argparse.ArgumentParser(
        prog="fx_export.py",
        description="Trace a bundled example model with make_fx and write it "
                    "as a dtopt format v1 global-view graph.")
    p.add_argument("--example", required=True, choices=("mlp", "transformer"),
                   help="model to trace (see tools/fx_models.py)")
    p.add_argument("--backward", action="store_true",
                   help="trace forward+backward (gradients of sum(out) "
                        "w.r.t. the parameters)")
    p.add_argument("--mesh", default="2x2",
                   help="mesh shape, e.g. 2x2 or 8 (default 2x2)")
    p.add_argument("--dims", default="dp,tp",
                   help="mesh dim names, comma separated (default dp,tp)")
    p.add_argument("--placement", action="append", default=[],
                   metavar="NAME=PLACEMENTS",
                   help="placements of placeholder NAME, e.g. x_1='S(0) R'; "
                        "repeatable. Without any, the example's suggested "
                        "placements for a 2-D (dp, tp) mesh are used; with "
                        "some, unnamed placeholders are replicated")
    p.add_argument("--name", help="graph name (default: output file stem)")
    p.add_argument("--inline-max", type=int, default=INLINE_MAX_BYTES,
                   metavar="BYTES",
                   help="constant data up to BYTES is written inline, larger "
                        "to a side file beside -o (default %d)"
                        % INLINE_MAX_BYTES)
    p.add_argument("--stack-trace", action="store_true",
                   help="write node.meta['stack_trace'] where present")
    p.add_argument("--targets", action="store_true",
                   help="print the distinct call_function targets (to "
                        "stdout, or stderr when the graph goes to stdout)")
    p.add_argument("-o", "--output", help="output file (default: stdout)")
    args = p.parse_args(argv)
    try:
        args.mesh_shape = [int(s) for s in args.mesh.lower().split("x")]
    except ValueError:
        p.error("--mesh %r: want sizes separated by 'x', e.g. 2x2" % args.mesh)
    args.mesh_dims = [d.strip() for d in args.dims.split(",")]
    if len(args.mesh_dims) != len(args.mesh_shape):
        p.error("--mesh %s has %d dims but --dims names %d"
                % (args.mesh, len(args.mesh_shape), len(args.mesh_dims)))
    args.placements = {}
    for spec in args.placement:
        key, sep, value = spec.partition("=")
        if not sep or not key:
            p.error("--placement %r: want NAME=PLACEMENTS" % spec)
        args.placements[key.strip()] = value
    return args


def main(argv=None):
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import fx_models

    gm, inputs, suggested = fx_models.build(args.example, args.backward)
    placements = args.placements
    if not placements:
        if len(args.mesh_shape) != 2:
            print("fx_export.py: error: the suggested placements are for a "
                  "2-D mesh; give --placement for a %d-D mesh"
                  % len(args.mesh_shape), file=sys.stderr)
            return 2
        placements = suggested
    try:
        text = export(gm, inputs, mesh_shape=args.mesh_shape,
                      mesh_dims=args.mesh_dims, placements=placements,
                      path=args.output, name=args.name,
                      stack_trace=args.stack_trace,
                      inline_max=args.inline_max)
    except (ExportError, OSError) as e:
        print("fx_export.py: error: %s" % e, file=sys.stderr)
        return 1
    if args.output is None:
        sys.stdout.write(text)
    if args.targets:  # to stderr when stdout carries the graph
        print("\n".join(distinct_targets(gm)),
              file=sys.stdout if args.output else sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

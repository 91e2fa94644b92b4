#!/usr/bin/env python3
"""Writes grids of single-op (and a few small fused) ONNX test cases whose
expected outputs come from onnxruntime, as ONNX backend-test folders:

    OUT/NAME/model.onnx
    OUT/NAME/test_data_set_0/input_K.pb, output_K.pb

    make_op_cases.py --out DIR [--filter TEXT] [--list]

Each model is built with onnx.helper at an explicit opset; weights and shape
operands are initializers, the data inputs are deterministic random tensors
(seeded from the case name), and the reference outputs are computed by
onnxruntime's CPUExecutionProvider with graph optimizations off, so the
reference is the plain op and never a fused rewrite of it. Cases of opsets
1 to 6 (legacy_opset_cases) whose op version onnxruntime no longer
implements use ONNX's reference evaluator (onnx.reference), or, where that
lacks the version too, a NumPy expression of the operator changelog's
definition written in the case.

Test tooling only: neither the library nor its tools depend on Python.
"""

import argparse
import os
import shutil
import sys
import zlib

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

NP_TO_ONNX = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.uint8): TensorProto.UINT8,
    np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.bool_): TensorProto.BOOL,
}


class Case:
    """One model: nodes, data inputs (graph inputs) and initializers."""

    def __init__(self, name, opset=13):
        self.name = name
        self.opset = opset
        self.rng = np.random.default_rng(zlib.crc32(name.encode()))
        self.nodes = []
        self.inputs = []  # (name, array)
        self.inits = []  # (name, array)
        self.outputs = []  # names
        self._count = 0
        # Who computes the expected outputs: "ort" (onnxruntime), "evaluator"
        # (onnx.reference.ReferenceEvaluator), or a function of the feeds
        # (a dict of name -> array, initializers included) returning the outputs.
        self.ref = "ort"

    def fresh(self, prefix):
        self._count += 1
        return f"{prefix}{self._count}"

    # Data.
    def uniform(self, shape, lo=-1.0, hi=1.0):
        return self.rng.uniform(lo, hi, size=shape).astype(np.float32)

    def ints(self, shape, lo, hi, dtype=np.int64):
        return self.rng.integers(lo, hi, size=shape).astype(dtype)

    def input(self, arr, name=None):
        name = name or self.fresh("x")
        self.inputs.append((name, np.asarray(arr)))
        return name

    def init(self, arr, name=None):
        name = name or self.fresh("w")
        self.inits.append((name, np.asarray(arr)))
        return name

    def node(self, op, inputs, n_out=1, domain=None, **attrs):
        outs = [self.fresh("y") for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=self.fresh(op.lower() + "_"), domain=domain,
                                           **attrs))
        return outs[0] if n_out == 1 else outs

    def output(self, *names):
        self.outputs.extend(names)

    def model(self, out_values=None):
        g_inputs = [helper.make_tensor_value_info(n, NP_TO_ONNX[a.dtype], a.shape) for n, a in self.inputs]
        g_outputs = []
        for i, n in enumerate(self.outputs):
            if out_values is None:
                g_outputs.append(helper.make_empty_tensor_value_info(n))
            else:
                a = out_values[i]
                g_outputs.append(helper.make_tensor_value_info(n, NP_TO_ONNX[a.dtype], a.shape))
        inits = [numpy_helper.from_array(a, n) for n, a in self.inits]
        graph = helper.make_graph(self.nodes, self.name, g_inputs, g_outputs, initializer=inits)
        opsets = [helper.make_opsetid("", self.opset)]
        if any(n.domain == "com.microsoft" for n in self.nodes):
            opsets.append(helper.make_opsetid("com.microsoft", 1))
        m = helper.make_model(graph, opset_imports=opsets, producer_name="minirt-op-cases")
        m.ir_version = 8 if self.opset <= 17 else 9
        return m


def reference(case):
    """Runs the case on its reference (onnxruntime unless case.ref says
    otherwise) and returns the outputs."""
    if callable(case.ref):
        feeds = dict(case.inits)
        feeds.update(case.inputs)
        return [np.asarray(a) for a in case.ref(feeds)]
    if case.ref == "evaluator":
        from onnx.reference import ReferenceEvaluator
        feeds = {n: a for n, a in case.inputs}
        return ReferenceEvaluator(case.model()).run(case.outputs, feeds)
    # Without output types onnxruntime cannot load the model, so infer them
    # with ONNX's shape inference first.
    m = case.model()
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    types = {vi.name: vi.type.tensor_type.elem_type for vi in inferred.graph.output}
    types.update({vi.name: vi.type.tensor_type.elem_type for vi in inferred.graph.value_info})
    del m.graph.output[:]
    # Where ONNX's inference leaves a type open (a function op such as
    # GroupNormalization-21), the first input's type: the ops so written keep it.
    first = NP_TO_ONNX[case.inputs[0][1].dtype] if case.inputs else TensorProto.FLOAT
    types.update(getattr(case, "out_types", {}))  # what ONNX cannot infer (contrib ops)
    for n in case.outputs:
        m.graph.output.append(helper.make_tensor_value_info(n, types.get(n) or first, None))
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    feeds = {n: a for n, a in case.inputs}
    return sess.run(case.outputs, feeds)


def write_case(case, out_dir):
    outs = reference(case)
    d = os.path.join(out_dir, case.name)
    ds = os.path.join(d, "test_data_set_0")
    os.makedirs(ds, exist_ok=True)
    m = case.model(outs)
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for i, (n, a) in enumerate(case.inputs):
        with open(os.path.join(ds, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    for i, (n, a) in enumerate(zip(case.outputs, outs)):
        with open(os.path.join(ds, f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(a), n).SerializeToString())


# ---------------------------------------------------------------- helpers

def pads_tag(pads):
    return "p" + "".join(str(p) for p in pads)


def out_len(n, k, s, d, pb, pe):
    return (n + pb + pe - d * (k - 1) - 1) // s + 1


def conv_weights(c, shape):
    """Weights scaled by 1/sqrt(fan-in) so outputs stay O(1)."""
    fan_in = int(np.prod(shape[1:]))
    return (c.uniform(shape) / np.sqrt(fan_in)).astype(np.float32)


def add_conv(c, x, cin, m, ks, group, bias, **attrs):
    w = c.init(conv_weights(c, [m, cin // group] + list(ks)))
    ins = [x, w]
    if bias:
        ins.append(c.init(c.uniform([m])))
    return c.node("Conv", ins, group=group, **attrs)


def add_batchnorm(c, y, m):
    scale = c.init(c.uniform([m], 0.5, 1.5))
    shift = c.init(c.uniform([m]))
    mean = c.init(c.uniform([m], -0.5, 0.5))
    var = c.init(c.uniform([m], 0.2, 2.0))
    return c.node("BatchNormalization", [y, scale, shift, mean, var], epsilon=1e-3)


# ---------------------------------------------------------------- Conv

def conv_case(n, cin, m, hw, ks, s, d, group, bias, pads=None, auto_pad=None, post=()):
    one_d = len(hw) == 1
    kt = "x".join(str(k) for k in ks) if len(set(ks)) > 1 else str(ks[0])
    st = "x".join(str(v) for v in s) if len(set(s)) > 1 else str(s[0])
    dt = "x".join(str(v) for v in d) if len(set(d)) > 1 else str(d[0])
    pt = auto_pad.lower().replace("_", "") if auto_pad else pads_tag(pads)
    gt = "dw" if group == cin and m == cin else ("dwm%d" % (m // cin) if group == cin else str(group))
    name = "%s_k%s_s%s_d%s_%s_g%s_c%dm%d_n%d_%s%s%s" % (
        "conv%dd" % len(hw), kt, st, dt, pt, gt, cin, m, n, "x".join(map(str, hw)),
        "_bias" if bias else "", "".join("_" + p for p in post))
    # Skip geometries without any output.
    for i in range(len(hw)):
        if auto_pad is None and out_len(hw[i], ks[i], s[i], d[i], pads[i], pads[i + len(hw)]) < 1:
            return None
        if auto_pad == "VALID" and out_len(hw[i], ks[i], s[i], d[i], 0, 0) < 1:
            return None
    c = Case(name)
    x = c.input(c.uniform([n, cin] + list(hw)))
    attrs = dict(kernel_shape=list(ks), strides=list(s), dilations=list(d))
    if auto_pad:
        attrs["auto_pad"] = auto_pad
    else:
        attrs["pads"] = list(pads)
    y = add_conv(c, x, cin, m, ks, group, bias, **attrs)
    for p in post:
        if p == "relu":
            y = c.node("Relu", [y])
        elif p == "clip6":
            y = c.node("Clip", [y, c.init(np.float32(0.0)), c.init(np.float32(6.0))])
        elif p == "bn":
            y = add_batchnorm(c, y, m)
        elif p == "addc":
            y = c.node("Add", [y, c.init(c.uniform([1, m] + [1] * len(hw)))])
        elif p == "leaky":
            y = c.node("LeakyRelu", [y], alpha=0.1)
        elif p == "silu":
            y = c.node("Mul", [y, c.node("Sigmoid", [y])])
        elif p == "gelu":  # decomposed, as torch exports it before opset 20
            e = c.node("Erf", [c.node("Div", [y, c.init(np.float32(np.sqrt(2.0)))])])
            a = c.node("Add", [e, c.init(np.float32(1.0))])
            y = c.node("Mul", [c.node("Mul", [y, a]), c.init(np.float32(0.5))])
    c.output(y)
    return c


def conv_cases():
    out = []
    i = 0
    # Group 1 over kernel, stride, dilation and pads.
    for k in (1, 3, 5, 7):
        for s in (1, 2, 3):
            for d in (1, 2):
                if k in (1, 7) and d == 2:
                    continue
                sym = (k // 2) * d
                for pads in ((0, 0, 0, 0), (sym, sym, sym, sym), (0, 1, 2, 1)):
                    hw = (13, 9) if i % 2 == 0 else (7, 11)
                    n = 3 if i % 3 == 1 else 1
                    out.append(conv_case(n, 3, 4, hw, (k, k), (s, s), (d, d), 1, i % 4 != 3, pads=pads))
                    i += 1
    # Grouped, depthwise, depthwise with a channel multiplier.
    for cin, m, g in ((4, 6, 2), (5, 5, 5), (3, 6, 3)):
        for k in (3, 5):
            for s in (1, 2):
                for d in ((1, 2) if k == 3 else (1,)):
                    for pads in ((k // 2 * d,) * 4, (0, 1, 2, 1)):
                        n = 3 if i % 3 == 1 else 1
                        hw = (13, 9) if i % 2 == 0 else (9, 13)
                        out.append(conv_case(n, cin, m, hw, (k, k), (s, s), (d, d), g, i % 4 != 3, pads=pads))
                        i += 1
    # Non-square kernels, strides and dilations.
    out.append(conv_case(1, 3, 4, (13, 9), (3, 5), (1, 2), (2, 1), 1, True, pads=(1, 2, 0, 1)))
    out.append(conv_case(3, 4, 4, (13, 9), (5, 3), (2, 1), (1, 2), 4, True, pads=(2, 0, 1, 2)))
    out.append(conv_case(1, 4, 8, (7, 9), (1, 3), (1, 1), (1, 1), 2, False, pads=(0, 1, 0, 1)))
    out.append(conv_case(2, 6, 6, (11, 7), (3, 1), (3, 1), (1, 1), 6, True, pads=(1, 0, 1, 0)))
    # 1x1 on the gemm_1x1 path, with several column tiles.
    out.append(conv_case(1, 128, 24, (31, 23), (1, 1), (1, 1), (1, 1), 1, True, pads=(0, 0, 0, 0)))
    out.append(conv_case(3, 6, 10, (5, 7), (1, 1), (1, 1), (1, 1), 2, True, pads=(0, 0, 0, 0)))
    # Large im2col: several column tiles, many output channels (row tiles).
    out.append(conv_case(1, 16, 48, (13, 9), (7, 7), (1, 1), (1, 1), 1, True, pads=(3, 3, 3, 3)))
    out.append(conv_case(2, 32, 64, (5, 4), (3, 3), (1, 1), (1, 1), 1, True, pads=(1, 1, 1, 1)))
    out.append(conv_case(1, 8, 40, (6, 6), (3, 3), (2, 2), (1, 1), 2, False, pads=(1, 1, 1, 1)))
    # An empty batch.
    out.append(conv_case(0, 8, 64, (3, 3), (3, 3), (1, 1), (1, 1), 1, True, pads=(1, 1, 1, 1)))
    out.append(conv_case(0, 4, 4, (5, 5), (3, 3), (1, 1), (1, 1), 4, True, pads=(1, 1, 1, 1)))
    # auto_pad.
    for ap in ("SAME_UPPER", "SAME_LOWER", "VALID"):
        for k, s in ((2, 1), (2, 2), (2, 3), (3, 1), (3, 2), (3, 3), (4, 2)):
            n = 3 if i % 3 == 1 else 1
            out.append(conv_case(n, 3, 4, (13, 9), (k, k), (s, s), (1, 1), 1, i % 2 == 0, auto_pad=ap))
            i += 1
        if ap == "VALID":  # onnxruntime refuses dilations with SAME_*
            out.append(conv_case(1, 3, 4, (13, 9), (3, 3), (2, 2), (2, 2), 1, True, auto_pad=ap))
        out.append(conv_case(1, 4, 4, (13, 9), (4, 3), (1, 2), (1, 1), 4, True, auto_pad=ap))
        out.append(conv_case(1, 4, 8, (13, 9), (3, 3), (2, 2), (1, 1), 4, False, auto_pad=ap))
    # 1-D.
    for k in (1, 3, 5):
        for s in (1, 2, 3):
            for d in (1, 2):
                if k != 3 and d == 2:
                    continue
                for pads in ((0, 0), (1, 2)):
                    n = 3 if i % 3 == 1 else 1
                    length = 13 if i % 2 == 0 else 8
                    out.append(conv_case(n, 3, 4, (length,), (k,), (s,), (d,), 1, i % 4 != 3, pads=pads))
                    i += 1
    for cin, m, g in ((4, 6, 2), (5, 5, 5), (3, 6, 3)):
        for s in (1, 2):
            out.append(conv_case(3, cin, m, (13,), (3,), (s,), (2 - s + 1,), g, s == 1, pads=(1, 1)))
    for ap in ("SAME_UPPER", "SAME_LOWER", "VALID"):
        for k in (2, 3):
            for s in (1, 2):
                out.append(conv_case(1, 3, 4, (13,), (k,), (s,), (1,), 1, True, auto_pad=ap))
    # Small graphs the passes rewrite: activation fusion, BatchNorm folding,
    # bias-Add folding; on each algorithm.
    fused = [
        ((1, 3, 4, (13, 9), (3, 3), (1, 1), (1, 1), 1, True), ("relu",)),
        ((3, 3, 4, (13, 9), (3, 3), (2, 2), (1, 1), 1, False), ("clip6",)),
        ((1, 3, 4, (13, 9), (3, 3), (1, 1), (2, 2), 1, True), ("bn",)),
        ((1, 3, 4, (13, 9), (3, 3), (1, 1), (1, 1), 1, False), ("bn",)),
        ((3, 3, 4, (13, 9), (3, 3), (1, 1), (1, 1), 1, True), ("bn", "relu")),
        ((1, 3, 4, (13, 9), (3, 3), (2, 2), (1, 1), 1, True), ("bn", "clip6")),
        ((1, 3, 4, (13, 9), (3, 3), (1, 1), (1, 1), 1, False), ("addc",)),
        ((1, 3, 4, (13, 9), (3, 3), (1, 1), (1, 1), 1, True), ("addc", "relu")),
        ((1, 3, 4, (13, 9), (3, 3), (1, 1), (1, 1), 1, True), ("leaky",)),
        ((1, 3, 4, (13, 9), (3, 3), (1, 1), (1, 1), 1, True), ("silu",)),
        ((1, 3, 4, (13, 9), (3, 3), (1, 1), (1, 1), 1, True), ("gelu",)),
        ((1, 6, 8, (7, 9), (1, 1), (1, 1), (1, 1), 1, True), ("bn", "gelu")),
        ((1, 6, 8, (7, 9), (1, 1), (1, 1), (1, 1), 1, True), ("relu",)),
        ((3, 6, 8, (7, 9), (1, 1), (1, 1), (1, 1), 2, False), ("bn", "relu")),
        ((1, 6, 8, (7, 9), (1, 1), (1, 1), (1, 1), 1, True), ("clip6",)),
        ((1, 5, 5, (13, 9), (3, 3), (1, 1), (1, 1), 5, True), ("relu",)),
        ((3, 5, 5, (13, 9), (3, 3), (2, 2), (1, 1), 5, True), ("clip6",)),
        ((1, 5, 5, (13, 9), (3, 3), (1, 1), (1, 1), 5, False), ("bn", "clip6")),
        ((1, 3, 6, (13, 9), (3, 3), (1, 1), (1, 1), 3, True), ("bn", "relu")),
        ((1, 3, 4, (13,), (3,), (1,), (1,), 1, True), ("relu",)),
        ((3, 3, 4, (13,), (3,), (2,), (1,), 1, True), ("bn", "clip6")),
    ]
    for (n, cin, m, hw, ks, s, d, g, b), post in fused:
        pads = tuple(k // 2 for k in ks) * 2
        out.append(conv_case(n, cin, m, hw, ks, s, d, g, b, pads=pads, post=post))
    # 3-D (video and volumetric models): strides, dilations, uneven pads,
    # groups and depthwise, auto_pad, the fusions (bias, BatchNormalization,
    # activations) and a residual Add.
    for n, cin, m, hw, ks, s, d, g, b, pads, post in (
            (1, 3, 4, (5, 6, 7), (3, 3, 3), (1, 1, 1), (1, 1, 1), 1, True, (1,) * 6, ()),
            (2, 4, 6, (6, 7, 5), (2, 3, 3), (2, 1, 2), (1, 1, 1), 2, False, (0, 1, 1, 1, 0, 1), ("relu",)),
            (1, 4, 4, (5, 8, 8), (3, 3, 3), (1, 2, 2), (1, 1, 1), 4, True, (1,) * 6, ("bn", "clip6")),
            (1, 3, 5, (7, 7, 7), (3, 2, 3), (1, 1, 2), (2, 1, 2), 1, True, (2, 0, 1, 2, 1, 1), ("silu",)),
            (1, 16, 8, (4, 14, 14), (1, 3, 3), (1, 1, 1), (1, 1, 1), 1, True, (0, 1, 1, 0, 1, 1), ("bn", "relu"))):
        out.append(conv_case(n, cin, m, hw, ks, s, d, g, b, pads=pads, post=post))
    out.append(conv_case(1, 3, 4, (5, 6, 7), (3, 3, 3), (2, 2, 2), (1, 1, 1), 1, True, auto_pad="SAME_UPPER"))
    c = Case("conv3d_k3_residual_add_relu_c8m8_n1_4x6x6")  # Conv + Add(x) fuses the residual on the CPU
    x = c.input(c.uniform([1, 8, 4, 6, 6]))
    y = add_conv(c, x, 8, 8, (3, 3, 3), 1, True, pads=[1] * 6)
    c.output(c.node("Relu", [c.node("Add", [y, x])]))
    out.append(c)
    return out


# ---------------------------------------------------------------- ConvTranspose

def convt_case(n, cin, mg, hw, ks, s, group, bias, pads=None, d=None, output_padding=None, output_shape=None,
               auto_pad=None, post=()):
    sp = len(hw)
    d = d or (1,) * sp
    parts = ["convtranspose%dd" % sp, "k" + "x".join(map(str, ks)), "s" + "x".join(map(str, s)),
             "d" + "x".join(map(str, d))]
    attrs = dict(kernel_shape=list(ks), strides=list(s), dilations=list(d), group=group)
    if pads is not None:
        attrs["pads"] = list(pads)
        parts.append(pads_tag(pads))
    if auto_pad:
        attrs["auto_pad"] = auto_pad
        parts.append(auto_pad.lower().replace("_", ""))
    if output_padding is not None:
        attrs["output_padding"] = list(output_padding)
        parts.append("op" + "".join(map(str, output_padding)))
    if output_shape is not None:
        attrs["output_shape"] = list(output_shape)
        parts.append("os" + "x".join(map(str, output_shape)))
    parts += ["g%d" % group, "c%dm%d" % (cin, mg * group), "n%d" % n, "x".join(map(str, hw))]
    if bias:
        parts.append("bias")
    parts += list(post)
    c = Case("_".join(parts))
    x = c.input(c.uniform([n, cin] + list(hw)))
    w = c.init(conv_weights(c, [cin, mg] + list(ks)))
    ins = [x, w]
    if bias:
        ins.append(c.init(c.uniform([mg * group])))
    y = c.node("ConvTranspose", ins, **attrs)
    # What the planner folds into a ConvTranspose: BatchNormalization into its
    # filters and bias, then (2-D) the activation after the columns are added.
    for p in post:
        if p == "bn":
            y = add_batchnorm(c, y, mg * group)
        elif p == "relu":
            y = c.node("Relu", [y])
        elif p == "sigmoid":
            y = c.node("Sigmoid", [y])
    c.output(y)
    return c


def convt_cases():
    out = []
    i = 0
    for s in (1, 2, 3):
        for pads in ((0, 0, 0, 0), (1, 1, 1, 1), (0, 1, 1, 0)):
            out.append(convt_case(1 + 2 * (i % 2), 3, 2, (5, 4), (3, 3), (s, s), 1, i % 3 != 2, pads=pads))
            i += 1
    # 3-D: strides, pads, dilations, groups, output_padding and output_shape.
    out.append(convt_case(2, 3, 2, (3, 4, 5), (3, 3, 3), (1, 1, 1), 1, True, pads=(1,) * 6))
    out.append(convt_case(1, 4, 3, (3, 4, 3), (2, 3, 3), (2, 2, 1), 2, False, pads=(0, 1, 1, 0, 0, 1),
                          output_padding=(1, 0, 0)))
    out.append(convt_case(1, 2, 2, (3, 3, 4), (3, 2, 2), (2, 1, 2), 1, True, d=(1, 2, 1), pads=(0,) * 6))
    out.append(convt_case(1, 3, 2, (2, 3, 3), (3, 3, 3), (2, 2, 2), 1, True, output_shape=(5, 6, 7)))
    out.append(convt_case(1, 3, 2, (5, 4), (3, 3), (2, 2), 1, True, pads=(1, 1, 1, 1), output_padding=(1, 0)))
    out.append(convt_case(3, 3, 2, (5, 4), (3, 3), (2, 2), 1, False, pads=(0, 0, 0, 0), output_padding=(1, 1)))
    out.append(convt_case(1, 3, 2, (5, 4), (2, 4), (3, 2), 1, True, pads=(0, 1, 1, 0), output_padding=(2, 1)))
    out.append(convt_case(1, 3, 2, (5, 4), (3, 3), (1, 1), 1, True, pads=(1, 1, 1, 1), d=(2, 2)))
    out.append(convt_case(1, 3, 2, (5, 4), (3, 3), (2, 2), 1, True, pads=(0, 1, 2, 1), d=(2, 1)))
    out.append(convt_case(1, 3, 2, (5, 4), (3, 3), (2, 2), 1, False, pads=(0, 0, 0, 0), d=(2, 2), output_padding=(1, 1)))
    out.append(convt_case(1, 4, 3, (5, 4), (3, 3), (1, 1), 2, True, pads=(1, 1, 1, 1)))
    out.append(convt_case(3, 4, 3, (5, 4), (3, 3), (2, 2), 2, True, pads=(0, 1, 1, 0), output_padding=(1, 0)))
    out.append(convt_case(1, 4, 1, (5, 4), (3, 3), (2, 2), 4, True, pads=(1, 1, 1, 1)))
    out.append(convt_case(1, 4, 2, (5, 4), (4, 4), (2, 2), 4, False, pads=(1, 1, 1, 1)))
    out.append(convt_case(1, 3, 2, (5, 4), (3, 3), (2, 2), 1, True, output_shape=(10, 8)))
    out.append(convt_case(1, 3, 2, (5, 4), (3, 3), (2, 2), 1, True, output_shape=(9, 9)))
    out.append(convt_case(1, 3, 2, (5, 4), (3, 3), (3, 3), 1, False, pads=(1, 1, 1, 1), output_shape=(14, 11)))
    # output_shape longer than the full output: negative pads, bias-only positions.
    out.append(convt_case(1, 3, 2, (3, 3), (3, 3), (3, 2), 1, True, output_shape=(10, 8)))
    out.append(convt_case(1, 3, 2, (5, 4), (3, 3), (2, 2), 1, True, output_shape=(12, 10)))
    out.append(convt_case(1, 3, 2, (5, 4), (2, 2), (3, 3), 1, True, output_shape=(15, 12), auto_pad="SAME_LOWER"))
    # Not here: SAME_UPPER with a longer output_shape, and SAME_* with a
    # stride longer than the kernel. onnxruntime clamps the total padding at
    # zero there; minirt follows the ONNX spec and onnx.reference instead.
    for ap in ("SAME_UPPER", "SAME_LOWER"):
        for k in (3, 4):
            out.append(convt_case(1, 3, 2, (5, 4), (k, k), (2, 2), 1, True, auto_pad=ap))
        out.append(convt_case(1, 3, 2, (5, 4), (3, 3), (1, 1), 1, True, auto_pad=ap))
    out.append(convt_case(1, 3, 2, (5, 4), (3, 3), (2, 2), 1, True, auto_pad="VALID"))
    # A text detector's upsampling head (DB): k2 s2 with BatchNormalization
    # and Relu, then the map's Sigmoid; groups; a 1-D and a 3-D one, whose
    # activation stays a step of its own.
    out.append(convt_case(1, 6, 4, (5, 7), (2, 2), (2, 2), 1, True, post=("bn", "relu")))
    out.append(convt_case(2, 6, 2, (5, 7), (2, 2), (2, 2), 2, False, post=("bn", "relu")))
    out.append(convt_case(1, 4, 1, (6, 5), (2, 2), (2, 2), 1, True, post=("sigmoid",)))
    out.append(convt_case(1, 4, 3, (5, 4), (3, 3), (2, 2), 1, True, pads=(1, 1, 1, 1), output_padding=(1, 1),
                          post=("bn", "relu")))
    out.append(convt_case(1, 3, 2, (9,), (4,), (2,), 1, True, pads=(1, 1), post=("bn", "relu")))
    out.append(convt_case(1, 3, 2, (3, 4, 3), (2, 2, 2), (2, 2, 2), 1, True, post=("bn", "relu")))
    out.append(convt_case(1, 16, 8, (9, 7), (4, 4), (2, 2), 1, True, pads=(1, 1, 1, 1)))
    # 1-D.
    out.append(convt_case(1, 3, 2, (7,), (3,), (1,), 1, True, pads=(0, 0)))
    out.append(convt_case(3, 3, 2, (7,), (3,), (2,), 1, True, pads=(1, 0), output_padding=(1,)))
    out.append(convt_case(1, 3, 2, (7,), (5,), (3,), 1, False, pads=(2, 2), d=(2,)))
    out.append(convt_case(1, 4, 3, (7,), (3,), (2,), 2, True, pads=(1, 1)))
    out.append(convt_case(1, 3, 2, (7,), (3,), (2,), 1, True, output_shape=(14,)))
    out.append(convt_case(1, 3, 2, (7,), (4,), (2,), 1, True, auto_pad="SAME_UPPER"))
    return out


# ---------------------------------------------------------------- pools

def window_attrs(prefix, ks, s, pads, d, auto_pad):
    """A pooling window's attributes and the case-name parts that spell them (after `prefix`)."""
    parts = list(prefix) + ["k" + "x".join(map(str, ks)), "s" + "x".join(map(str, s))]
    attrs = dict(kernel_shape=list(ks), strides=list(s))
    if d is not None:
        attrs["dilations"] = list(d)
        parts.append("d" + "x".join(map(str, d)))
    if auto_pad:
        attrs["auto_pad"] = auto_pad
        parts.append(auto_pad.lower().replace("_", ""))
    else:
        attrs["pads"] = list(pads)
        parts.append(pads_tag(pads))
    return attrs, parts


def pool_case(op, n, ch, hw, ks, s, pads=None, ceil=0, cip=None, d=None, auto_pad=None, opset=None):
    sp = len(hw)
    attrs, parts = window_attrs([op.lower() + "%dd" % sp], ks, s, pads, d, auto_pad)
    attrs["ceil_mode"] = ceil
    parts.append("ceil%d" % ceil)
    if cip is not None:
        attrs["count_include_pad"] = cip
        parts.append("cip%d" % cip)
    parts += ["n%d" % n, "x".join(map(str, hw))]
    if opset is None:
        opset = 19 if (op == "AveragePool" and d is not None) else 13
    c = Case("_".join(parts), opset=opset)
    x = c.input(c.uniform([n, ch] + list(hw)))
    c.output(c.node(op, [x], **attrs))
    return c


def pool_cases():
    out = []
    i = 0
    for ks in ((2, 2), (3, 3), (2, 3)):
        for s in (1, 2, 3):
            for pads in ((0, 0, 0, 0), (0, 1, 1, 0)):
                for ceil in (0, 1):
                    if s == 1 and ceil == 1:
                        continue
                    hw = (13, 9) if i % 2 == 0 else (7, 10)
                    out.append(pool_case("MaxPool", 1 + 2 * (i % 3 == 0), 3, hw, ks, (s, s), pads=pads, ceil=ceil))
                    i += 1
    for ks in ((2, 2), (3, 3)):
        for s in (1, 2):
            for ceil in (0, 1):
                out.append(pool_case("MaxPool", 1, 3, (13, 9), ks, (s, s), pads=(1, 0, 0, 1), ceil=ceil, d=(2, 2)))
    out.append(pool_case("MaxPool", 1, 3, (13, 9), (3, 2), (2, 1), pads=(0, 1, 1, 0), ceil=1, d=(1, 3)))
    # Windows that hold only padding (a width-1 input, pads 1, dilation 2).
    out.append(pool_case("MaxPool", 2, 3, (8, 1), (1, 2), (3, 2), pads=(0, 1, 0, 1), d=(1, 2)))
    out.append(pool_case("AveragePool", 2, 3, (8, 1), (1, 2), (3, 2), pads=(0, 1, 0, 1), d=(1, 2), cip=0))
    for ap in ("SAME_UPPER", "SAME_LOWER", "VALID"):
        for k in (2, 3):
            out.append(pool_case("MaxPool", 1, 3, (13, 9), (k, k), (2, 2), auto_pad=ap))
    for ks in ((2, 2), (3, 3), (2, 3)):
        for pads in ((1, 1, 1, 1), (0, 1, 1, 0)):
            for cip in (0, 1):
                for s, ceil in ((1, 0), (2, 0), (2, 1), (3, 0), (3, 1)):
                    if ks == (2, 3) and (s, ceil) in ((2, 0), (3, 0)):
                        continue
                    hw = (13, 9) if i % 2 == 0 else (7, 10)
                    out.append(pool_case("AveragePool", 1 + 2 * (i % 3 == 0), 3, hw, ks, (s, s), pads=pads, ceil=ceil,
                                         cip=cip))
                    i += 1
    for ks in ((2, 2), (3, 3)):
        for s, ceil in ((1, 0), (2, 1)):
            for cip in (0, 1):
                out.append(pool_case("AveragePool", 1, 3, (13, 9), ks, (s, s), pads=(1, 0, 0, 1), ceil=ceil, cip=cip,
                                     d=(2, 2)))
    for ap in ("SAME_UPPER", "SAME_LOWER", "VALID"):
        for cip in (0, 1):
            out.append(pool_case("AveragePool", 1, 3, (13, 9), (3, 3), (2, 2), auto_pad=ap, cip=cip))
    # 1-D.
    for op in ("MaxPool", "AveragePool"):
        for k, s in ((3, 2), (2, 1), (3, 3)):
            for pads in ((0, 0), (1, 1), (0, 1)):
                for ceil in (0, 1):
                    if s == 1 and ceil == 1:
                        continue
                    cip = None if op == "MaxPool" else (i % 2)
                    out.append(pool_case(op, 2, 3, (13,), (k,), (s,), pads=pads, ceil=ceil, cip=cip))
                    i += 1
    out.append(pool_case("MaxPool", 1, 3, (13,), (3,), (2,), pads=(2, 1), ceil=1, d=(2,)))
    out.append(pool_case("AveragePool", 1, 3, (13,), (3,), (2,), pads=(2, 1), ceil=1, cip=1, d=(2,)))
    out.append(pool_case("AveragePool", 1, 3, (13,), (3,), (2,), auto_pad="SAME_UPPER", cip=1))
    # The SPP block's windows (stride 1, pads k/2), and large windows with
    # uneven pads, strides, ceil_mode and dilations: the passes that double
    # spans (8 taps or more along an axis) and the direct ones.
    for k in (5, 9, 13):
        out.append(pool_case("MaxPool", 1, 4, (13, 13), (k, k), (1, 1), pads=(k // 2,) * 4))
        out.append(pool_case("MaxPool", 2, 3, (20, 17), (k, k), (1, 1), pads=(k // 2,) * 4))
    out.append(pool_case("MaxPool", 1, 3, (15, 16), (7, 9), (2, 1), pads=(3, 2, 1, 4), ceil=1))
    out.append(pool_case("MaxPool", 1, 3, (13, 11), (5, 8), (1, 3), pads=(4, 3, 4, 7), ceil=1, d=(2, 2)))
    out.append(pool_case("MaxPool", 2, 3, (9, 40), (9, 11), (3, 2), pads=(4, 5, 2, 5)))
    out.append(pool_case("MaxPool", 1, 3, (40,), (9,), (1,), pads=(4, 4)))
    for cip in (0, 1):
        out.append(pool_case("AveragePool", 1, 3, (15, 16), (7, 5), (2, 1), pads=(3, 2, 1, 2), ceil=1, cip=cip))
        out.append(pool_case("AveragePool", 1, 3, (13, 13), (9, 9), (1, 1), pads=(4, 4, 4, 4), cip=cip))
    # 3-D (video and volumetric models): strides, uneven pads, ceil_mode,
    # dilations, count_include_pad, auto_pad; between 3-D convolutions' shapes.
    for op in ("MaxPool", "AveragePool"):
        for ks, s, pads, ceil, d in (((2, 2, 2), (2, 2, 2), (0,) * 6, 0, None),
                                     ((3, 3, 3), (1, 1, 1), (1,) * 6, 0, None),
                                     ((3, 2, 3), (2, 1, 2), (0, 1, 1, 1, 0, 0), 1, None),
                                     ((1, 3, 3), (1, 2, 2), (0, 1, 1, 0, 1, 1), 1, None),
                                     ((2, 2, 3), (1, 2, 1), (1, 0, 1, 0, 1, 1), 0, (2, 1, 2))):
            for cip in ((None,) if op == "MaxPool" else (0, 1)):
                out.append(pool_case(op, 2, 3, (5, 7, 6), ks, s, pads=pads, ceil=ceil, cip=cip, d=d,
                                     opset=19 if d is not None else None))
        out.append(pool_case(op, 1, 4, (4, 9, 8), (2, 3, 3), (2, 2, 2), auto_pad="SAME_UPPER",
                             cip=None if op == "MaxPool" else 1))
    out.append(pool_case("MaxPool", 2, 16, (8, 16, 16), (3, 3, 3), (2, 2, 2), pads=(1,) * 6))  # split across threads
    out += lppool_cases()
    out = [c for c in out if c is not None]
    # Global pools, 1-D to 3-D.
    for op in ("GlobalAveragePool", "GlobalMaxPool"):
        for shape in ((3, 5, 7, 9), (2, 4, 13), (2, 3, 4, 5, 6), (1, 64, 1, 1)):
            c = Case("%s_%s" % (op.lower(), "x".join(map(str, shape))))
            c.output(c.node(op, [c.input(c.uniform(shape))]))
            out.append(c)
    return out


def lppool_case(n, ch, hw, ks, s, p=2, pads=None, ceil=0, d=None, auto_pad=None, opset=18):
    attrs, parts = window_attrs(["lppool_opset%d" % opset, "p%d" % p], ks, s, pads, d, auto_pad)
    attrs["p"] = p
    if opset >= 18:
        attrs["ceil_mode"] = ceil
        parts.append("ceil%d" % ceil)
    parts += ["n%d" % n, "x".join(map(str, hw))]
    c = Case("_".join(parts), opset=opset)
    x = c.input(c.uniform([n, ch] + list(hw)))
    c.output(c.node("LpPool", [x], **attrs))
    return c


def lppool_cases():
    out = []
    for p in (1, 2, 3):
        for ks, s, pads in (((2, 2), (2, 2), (0, 0, 0, 0)), ((3, 3), (1, 1), (1, 1, 1, 1)),
                            ((3, 2), (2, 1), (0, 1, 1, 0))):
            out.append(lppool_case(1 + (p == 2), 3, (9, 8), ks, s, p=p, pads=pads))
    # ceil_mode and dilations (opset 18), auto_pad, the older versions.
    out.append(lppool_case(1, 3, (13, 9), (3, 3), (2, 2), pads=(1, 0, 0, 1), ceil=1))
    out.append(lppool_case(1, 3, (13, 9), (2, 3), (3, 2), p=3, pads=(0, 1, 1, 0), ceil=1))
    out.append(lppool_case(1, 3, (13, 9), (3, 2), (2, 1), pads=(1, 0, 0, 1), d=(2, 2)))
    out.append(lppool_case(2, 3, (13, 9), (2, 2), (2, 2), p=1, pads=(0, 1, 1, 0), ceil=1, d=(1, 3)))
    for ap in ("SAME_UPPER", "SAME_LOWER", "VALID"):
        out.append(lppool_case(1, 3, (13, 9), (3, 3), (2, 2), auto_pad=ap))
    out.append(lppool_case(1, 4, (7, 7), (3, 3), (2, 2), pads=(1, 1, 1, 1), opset=11))
    out.append(lppool_case(1, 4, (7, 7), (2, 3), (1, 2), p=3, pads=(0, 0, 0, 0), opset=2))
    out.append(lppool_case(1, 4, (6, 6), (2, 2), (2, 2), p=2, pads=(0, 0, 0, 0), opset=22))
    # Big enough to split across threads.
    out.append(lppool_case(2, 32, (20, 20), (3, 3), (1, 1), pads=(1, 1, 1, 1)))
    # 1-D and 3-D.
    for p in (1, 2, 3):
        out.append(lppool_case(2, 3, (13,), (3,), (2,), p=p, pads=(1, 0), ceil=p == 2))
        out.append(lppool_case(1, 3, (5, 6, 7), (2, 3, 2), (1, 2, 2), p=p, pads=(0, 1, 1, 1, 0, 0),
                               d=(2, 1, 1) if p == 3 else None))
    # Between blocked-layout ops (Conv, Relu): LpPool reads and writes plain NCHW.
    c = Case("lppool_opset18_p2_k3x3_s2x2_between_conv_relu_1x16x12x12", opset=18)
    y = add_conv(c, c.input(c.uniform([1, 16, 12, 12])), 16, 32, (3, 3), 1, True, pads=[1, 1, 1, 1])
    y = c.node("LpPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c.output(c.node("Relu", [add_conv(c, y, 32, 16, (1, 1), 1, True)]))
    out.append(c)
    # Version 1's float p (onnxruntime starts at version 2): NumPy.
    c = Case("lppool_opset1_p1p5_k2x3_s1x2_1x3x6x7", opset=1)
    c.output(c.node("LpPool", [c.input(c.uniform([1, 3, 6, 7]), "x")], kernel_shape=[2, 3], strides=[1, 2], p=1.5))

    def lp_v1(feeds):
        a = np.abs(feeds["x"].astype(np.float64)) ** 1.5
        y = np.zeros((1, 3, 5, 3))
        for i in range(5):
            for j in range(3):
                y[:, :, i, j] = a[:, :, i:i + 2, 2 * j:2 * j + 3].sum(axis=(2, 3)) ** (1 / 1.5)
        return [y.astype(np.float32)]
    c.ref = lp_v1
    out.append(c)
    return out


# ---------------------------------------------------------------- Resize

def resize_cases():
    """Resize of the last two axes (the 2-D engine), nearest and linear, and nearest of N and W."""
    out = []
    tag = lambda v: "x".join(("%g" % f).replace(".", "p") for f in v)  # noqa: E731
    for mode, coord, nearest, scales, shape in (
            ("nearest", "asymmetric", "floor", (1, 1, 2, 2), (1, 5, 13, 13)),
            ("nearest", "half_pixel", "round_prefer_floor", (1, 1, 2, 2), (2, 3, 9, 10)),
            ("nearest", "half_pixel", "round_prefer_ceil", (1, 1, 0.5, 0.6), (1, 3, 10, 15)),
            ("nearest", "align_corners", "round_prefer_floor", (1, 1, 1.5, 3), (1, 2, 7, 5)),
            ("linear", "half_pixel", None, (1, 1, 2, 2), (1, 3, 10, 12)),
            ("linear", "align_corners", None, (1, 1, 1.5, 0.5), (2, 3, 8, 12)),
            ("linear", "pytorch_half_pixel", None, (1, 1, 3, 1), (1, 2, 5, 7)),
            ("linear", "asymmetric", None, (1, 1, 0.6, 1.7), (1, 2, 11, 9)),
            ("linear", "half_pixel", None, (1, 2, 1.5), (2, 6, 4)),
            ("nearest", "asymmetric", "floor", (2, 1, 1, 2), (1, 3, 4, 5))):
        name = "resize_%s_%s_%s_s%s_%s" % (mode, coord, nearest or "", tag(scales), shp(shape))
        c = Case(name.replace("__", "_"))
        attrs = dict(mode=mode, coordinate_transformation_mode=coord)
        if nearest:
            attrs["nearest_mode"] = nearest
        x = c.input(c.uniform(list(shape)))
        c.output(c.node("Resize", [x, "", c.init(np.array(scales, np.float32))], **attrs))
        out.append(c)
    # Cubic (cubic_coeff_a, exclude_outside), by scales and by sizes.
    for coord, a, excl, scales, shape in (
            ("half_pixel", -0.75, 0, (1, 1, 2, 2), (1, 2, 6, 7)),
            ("half_pixel", -0.5, 1, (1, 1, 0.6, 0.8), (1, 3, 10, 9)),
            ("align_corners", -0.75, 0, (1, 1, 1.5, 2.5), (2, 2, 5, 4)),
            ("asymmetric", -0.75, 0, (1, 1, 3, 0.5), (1, 2, 4, 12)),
            ("pytorch_half_pixel", -0.75, 1, (1, 1, 2, 3), (1, 1, 5, 3))):
        name = "resize_cubic_%s_a%s_ex%d_s%s_%s" % (coord, ("%g" % -a).replace(".", "p"), excl, tag(scales), shp(shape))
        c = Case(name, opset=13)
        x = c.input(c.uniform(list(shape)))
        c.output(c.node("Resize", [x, "", c.init(np.array(scales, np.float32))], mode="cubic",
                        coordinate_transformation_mode=coord, cubic_coeff_a=a, exclude_outside=excl))
        out.append(c)
    c = Case("resize_cubic_sizes_1x2x7x9_to_4x13", opset=13)
    x = c.input(c.uniform([1, 2, 7, 9]))
    c.output(c.node("Resize", [x, "", "", c.init(np.array([1, 2, 4, 13], np.int64))], mode="cubic"))
    out.append(c)
    # Opset 18: axes, keep_aspect_ratio_policy; 19: half_pixel_symmetric.
    for mode in ("linear", "cubic", "nearest"):
        c = Case("resize_opset18_axes23_scales_%s_1x2x6x8" % mode, opset=18)
        x = c.input(c.uniform([1, 2, 6, 8]))
        c.output(c.node("Resize", [x, "", c.init(np.array([1.5, 0.75], np.float32))], mode=mode, axes=[2, 3]))
        out.append(c)
    for policy in ("not_larger", "not_smaller"):
        c = Case("resize_opset18_keep_aspect_%s_1x2x6x8" % policy, opset=18)
        x = c.input(c.uniform([1, 2, 6, 8]))
        c.output(c.node("Resize", [x, "", "", c.init(np.array([9, 10], np.int64))], mode="linear", axes=[2, 3],
                        keep_aspect_ratio_policy=policy))
        out.append(c)
    for mode, scales in (("linear", (1, 1, 0.7, 1.3)), ("cubic", (1, 1, 1.7, 0.6))):
        c = Case("resize_opset19_half_pixel_symmetric_%s_1x2x7x9" % mode, opset=19)
        x = c.input(c.uniform([1, 2, 7, 9]))
        c.output(c.node("Resize", [x, "", c.init(np.array(scales, np.float32))], mode=mode,
                        coordinate_transformation_mode="half_pixel_symmetric"))
        out.append(c)
    # Opset 18 antialias: linear and cubic filters stretched by 1/scale on shrinking axes
    # (an axis that grows keeps the plain filter); sizes and scales, exclude_outside, axes.
    for mode, coord, excl, scales, shape in (
            ("linear", "half_pixel", 0, (1, 1, 0.5, 0.3), (1, 2, 12, 20)),
            ("linear", "align_corners", 0, (1, 1, 0.6, 1.5), (1, 3, 10, 7)),
            ("linear", "pytorch_half_pixel", 0, (1, 1, 0.25, 0.4), (2, 2, 16, 15)),
            ("cubic", "half_pixel", 0, (1, 1, 0.5, 0.35), (1, 2, 12, 20)),
            ("cubic", "half_pixel", 1, (1, 1, 0.45, 0.7), (1, 2, 11, 13)),
            ("cubic", "asymmetric", 0, (1, 1, 1.6, 0.3), (1, 1, 6, 21))):
        name = "resize_opset18_antialias_%s_%s_ex%d_s%s_%s" % (mode, coord, excl, tag(scales), shp(shape))
        c = Case(name, opset=18)
        x = c.input(c.uniform(list(shape)))
        c.output(c.node("Resize", [x, "", c.init(np.array(scales, np.float32))], mode=mode, antialias=1,
                        coordinate_transformation_mode=coord, exclude_outside=excl))
        out.append(c)
    for mode in ("linear", "cubic"):
        c = Case("resize_opset18_antialias_%s_sizes_axes23_1x2x17x23_to_5x8" % mode, opset=18)
        x = c.input(c.uniform([1, 2, 17, 23]))
        c.output(c.node("Resize", [x, "", "", c.init(np.array([5, 8], np.int64))], mode=mode, antialias=1,
                        axes=[2, 3]))
        out.append(c)
    # tf_crop_and_resize: a constant roi box per axis (fractions; beyond [0, 1] reads
    # outside the input, which takes extrapolation_value), sampled corner to corner.
    for mode, roi, scales, sizes, extra, shape in (
            ("linear", (0, 0, 0.2, 0.1, 1, 1, 0.8, 0.7), None, (1, 2, 7, 9), 0.0, (1, 2, 10, 12)),
            ("nearest", (0, 0, -0.3, 0.2, 1, 1, 0.9, 1.4), None, (1, 1, 8, 6), 2.5, (1, 1, 9, 7)),
            ("cubic", (0, 0, 0.1, -0.2, 1, 1, 1.2, 0.8), None, (2, 2, 6, 11), -1.0, (2, 2, 8, 10)),
            ("linear", (0, 0, 0.25, 0.25, 1, 1, 0.75, 0.75), (1, 1, 2, 1.5), None, 0.0, (1, 3, 8, 8)),
            ("linear", (0, 0, 0.5, 0.5, 1, 1, 0.5, 0.5), None, (1, 1, 1, 1), 0.0, (1, 1, 5, 5))):
        name = "resize_tf_crop_%s_roi%s_%s_e%s_%s" % (mode, tag(roi), ("s" + tag(scales)) if scales else ("z" + shp(sizes)),
                                                     tag([extra]), shp(shape))
        c = Case(name, opset=13)
        x = c.input(c.uniform(list(shape)))
        ins = [x, c.init(np.array(roi, np.float32))]
        ins += [c.init(np.array(scales, np.float32))] if scales else ["", c.init(np.array(sizes, np.int64))]
        c.output(c.node("Resize", ins, mode=mode, coordinate_transformation_mode="tf_crop_and_resize",
                        extrapolation_value=extra))
        out.append(c)
    c = Case("resize_opset18_tf_crop_axes32_linear_1x2x9x11", opset=18)
    x = c.input(c.uniform([1, 2, 9, 11]))
    c.output(c.node("Resize", [x, c.init(np.array([0.1, 0.3, 0.9, 0.6], np.float32)), "",
                               c.init(np.array([7, 5], np.int64))], mode="linear", axes=[3, 2],
                    coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=3.0))
    out.append(c)
    for mode in ("nearest", "linear"):
        c = Case("upsample9_%s_s1x1x2x3_1x3x5x6" % mode, opset=9)
        x = c.input(c.uniform([1, 3, 5, 6]))
        c.output(c.node("Upsample", [x, c.init(np.array([1, 1, 2, 3], np.float32))], mode=mode))
        out.append(c)
    return out


# ---------------------------------------------------------------- Gemm / MatMul

def gemm_case(m, k, n, ta, tb, alpha, beta, cshape, post=None):
    cs = "none" if cshape is None else ("scalar" if cshape == () else "x".join(map(str, cshape)))
    name = "gemm_m%dk%dn%d_ta%d_tb%d_a%s_b%s_c%s%s" % (m, k, n, ta, tb, str(alpha).replace(".", "p"),
                                                         str(beta).replace(".", "p"), cs, "_" + post if post else "")
    c = Case(name)
    a = c.input(c.uniform([k, m] if ta else [m, k]))
    b = c.init((c.uniform([n, k] if tb else [k, n]) / np.sqrt(k)).astype(np.float32))
    ins = [a, b]
    if cshape is not None:
        ins.append(c.init(c.uniform(list(cshape))))
    y = c.node("Gemm", ins, transA=ta, transB=tb, alpha=alpha, beta=beta)
    if post == "relu":
        y = c.node("Relu", [y])
    elif post == "clip6":
        y = c.node("Clip", [y, c.init(np.float32(-0.5)), c.init(np.float32(0.5))])
    c.output(y)
    return c


def matmul_case(sa, sb, b_const=False):
    name = "matmul_%s_x_%s%s" % ("x".join(map(str, sa)) or "s", "x".join(map(str, sb)) or "s", "_bconst" if b_const else "")
    c = Case(name)
    a = c.input(c.uniform(sa))
    k = sb[-2] if len(sb) > 1 else sb[0]
    bv = (c.uniform(sb) / np.sqrt(k)).astype(np.float32)
    b = c.init(bv) if b_const else c.input(bv)
    c.output(c.node("MatMul", [a, b]))
    return c


def linalg_cases():
    out = []
    i = 0
    for ta in (0, 1):
        for tb in (0, 1):
            for cshape in (None, (6,), (1, 6), (5, 1), (5, 6), ()):
                alpha, beta = ((1.0, 1.0), (0.5, 2.0), (1.5, -0.75))[i % 3]
                out.append(gemm_case(5, 7, 6, ta, tb, alpha, beta, cshape))
                i += 1
    out.append(gemm_case(1, 64, 10, 0, 1, 1.0, 1.0, (10,)))
    out.append(gemm_case(1, 64, 10, 0, 0, 1.0, 1.0, (1, 10)))
    out.append(gemm_case(5, 7, 6, 0, 1, 1.0, 0.0, (5, 6)))
    out.append(gemm_case(7, 150, 100, 0, 1, 1.0, 1.0, (100,)))
    out.append(gemm_case(100, 150, 7, 1, 0, 0.5, 1.0, (100, 1)))
    out.append(gemm_case(3, 150, 200, 1, 1, 1.0, 1.0, (200,)))
    out.append(gemm_case(4, 16, 8, 0, 1, 1.0, 1.0, (8,), post="relu"))
    out.append(gemm_case(4, 16, 8, 0, 1, 1.0, 1.0, (8,), post="clip6"))
    for sa, sb in (((5,), (5,)), ((5,), (5, 3)), ((4, 5), (5,)), ((5,), (2, 5, 3)), ((2, 4, 5), (5,)),
                   ((4, 5), (5, 6)), ((1, 5), (5, 6)), ((2, 1, 4, 5), (3, 5, 6)), ((4, 5), (2, 5, 3)),
                   ((3, 4, 5), (3, 5, 6)), ((1, 4, 5), (3, 5, 6)), ((3, 4, 5), (1, 5, 6)), ((2, 3, 4, 5), (5, 6)),
                   ((3, 1, 4, 5), (1, 2, 5, 6)), ((64, 96), (96, 80)), ((2, 3, 40, 60), (60, 50))):
        out.append(matmul_case(sa, sb))
    out.append(matmul_case((2, 3, 4, 5), (5, 6), b_const=True))
    out.append(matmul_case((3, 4, 5), (3, 5, 6), b_const=True))
    return out


# ---------------------------------------------------------------- elementwise

def shp(s):
    return "x".join(map(str, s)) if s else "s"


def binary_case(op, sa, sb, dtype=np.float32, b_dtype=None, b_const=False):
    b_dtype = b_dtype or dtype
    tag = "" if dtype == np.float32 and b_dtype == np.float32 else "_" + np.dtype(dtype).name + (
        "_" + np.dtype(b_dtype).name if b_dtype != dtype else "")
    c = Case("%s_%s_by_%s%s%s" % (op.lower(), shp(sa), shp(sb), tag, "_bconst" if b_const else ""))
    if dtype == np.float32:
        if op == "Pow":
            a = c.uniform(sa, 0.5, 2.0)
        else:
            a = c.uniform(sa)
    else:
        a = c.ints(sa, -20, 21, dtype)
    if b_dtype == np.float32:
        if op == "Div":
            b = (c.uniform(sb, 0.5, 2.0) * np.where(c.rng.random(sb) < 0.5, -1, 1)).astype(np.float32)
        elif op == "Pow":
            b = c.uniform(sb, -2.0, 2.0)
        else:
            b = c.uniform(sb)
    else:
        if op == "Div":
            b = (c.ints(sb, 1, 7, b_dtype) * np.where(c.rng.random(sb) < 0.5, -1, 1)).astype(b_dtype)
        elif op == "Pow":
            b = c.ints(sb, -2, 4, b_dtype)
        else:
            b = c.ints(sb, -20, 21, b_dtype)
    xa = c.input(np.asarray(a, dtype=dtype).reshape(sa))
    xb = c.init(np.asarray(b, dtype=b_dtype).reshape(sb)) if b_const else c.input(np.asarray(b, dtype=b_dtype).reshape(sb))
    c.output(c.node(op, [xa, xb]))
    return c


def elementwise_cases():
    out = []
    pairs = [((2, 3, 4, 5), (2, 3, 4, 5)), ((2, 3, 4, 5), ()), ((), (2, 3, 4, 5)), ((2, 3, 4, 5), (5,)),
             ((2, 3, 4, 5), (3, 1, 1)), ((2, 3, 4, 5), (1, 3, 1, 1)), ((2, 3, 4, 5), (4, 1)),
             ((2, 3, 4, 5), (3, 4, 1)), ((3, 1, 5), (1, 4, 1)), ((3, 1, 5), (4, 1)), ((1,), (2, 3)),
             ((2, 1, 4, 1), (1, 3, 1, 5)), ((2, 3, 4, 5), (2, 1, 4, 1)), ((4, 1), (2, 3, 4, 5)), ((1, 1), (1,)),
             ((7,), (7,)), ((2, 3, 4, 5), (1, 1, 1, 1)), ((3, 4, 1, 5), (4, 6, 1))]
    # Add on every pair; the other ops on a spread of them.
    subsets = {"Add": range(len(pairs)), "Sub": (0, 1, 2, 4, 8, 11, 13, 17), "Mul": (0, 1, 3, 5, 6, 8, 9, 12, 14, 16),
               "Div": (0, 1, 2, 4, 7, 8, 10, 11, 15, 17), "Pow": (0, 1, 3, 4, 8, 12, 13, 14)}
    for op, picks in subsets.items():
        for j in picks:
            out.append(binary_case(op, *pairs[j]))
    for op in ("Add", "Mul", "Div", "Sub"):
        for sa, sb in (((2, 3, 4), (2, 3, 4)), ((2, 3, 4), ()), ((3, 1, 5), (1, 4, 1)), ((2, 3, 4), (3, 1))):
            out.append(binary_case(op, sa, sb, dtype=np.int64))
    out.append(binary_case("Add", (2, 3, 4), (3, 1), dtype=np.int32))
    out.append(binary_case("Pow", (2, 3, 4), (4,), b_dtype=np.int64))
    out.append(binary_case("Pow", (2, 3, 4), (), b_dtype=np.int64, b_const=True))
    # Big enough to split across threads.
    out.append(binary_case("Add", (2, 16, 32, 32), (16, 1, 1), b_const=True))
    out.append(binary_case("Mul", (2, 16, 32, 32), (2, 16, 32, 32)))
    out.append(binary_case("Sub", (1, 40000), (1,)))
    out.append(binary_case("Div", (3, 1, 9000), (3, 5, 1)))
    for sx, ss in (((2, 3, 4, 5), (3, 1, 1)), ((2, 3, 4, 5), (1,)), ((2, 3, 4, 5), (5,)), ((2, 3, 4, 5), (4, 5)),
                   ((2, 3, 4, 5), ()), ((2, 3, 4, 5), (1, 3, 1, 1)), ((4, 6), (6,)), ((3, 5, 7), (5, 1))):
        out.append(binary_case("PRelu", sx, ss, b_const=True))
    return out


# ---------------------------------------------------------------- data movement

def shape_cases():
    out = []

    def single(name, op, x, consts=(), n_out=1, opset=13, **attrs):
        c = Case(name, opset=opset)
        ins = [c.input(x(c) if callable(x) else x)]
        for k in consts:
            ins.append("" if k is None else c.init(k))
        y = c.node(op, ins, n_out=n_out, **attrs)
        c.output(*(y if isinstance(y, list) else [y]))
        out.append(c)
        return c

    f = lambda s: (lambda c: c.uniform(s))  # noqa: E731
    i64 = lambda s: (lambda c: c.ints(s, -100, 100))  # noqa: E731

    # Concat of three inputs on every axis.
    for axis in (0, 1, 2, -1, -3):
        c = Case("concat_3in_axis%s_2x3x4" % str(axis).replace("-", "m"))
        base = [2, 3, 4]
        ins = []
        for j in range(3):
            s = list(base)
            s[axis] = base[axis] + j
            ins.append(c.input(c.uniform(s)))
        c.output(c.node("Concat", ins, axis=axis))
        out.append(c)
    c = Case("concat_3in_axis1_int64_2x3x1x5")
    c.output(c.node("Concat", [c.input(c.ints([2, k, 1, 5], -9, 9)) for k in (3, 1, 2)], axis=1))
    out.append(c)
    c = Case("concat_3in_axis0_1d")
    c.output(c.node("Concat", [c.input(c.uniform([k])) for k in (3, 1, 5)], axis=0))
    out.append(c)

    # Large enough (over 1 MiB) to be cut across threads.
    c = Case("concat_4in_axis1_1x128x26x26")
    c.output(c.node("Concat", [c.input(c.uniform([1, 128, 26, 26])) for _ in range(4)], axis=1))
    out.append(c)
    c = Case("concat_2in_axis2_2x8x40x33")
    c.output(c.node("Concat", [c.input(c.uniform([2, 8, 40, 33])), c.input(c.uniform([2, 8, 25, 33]))], axis=2))
    out.append(c)
    single("split_equal4_axis1_1x512x26x26", "Split", f((1, 512, 26, 26)), n_out=4, axis=1)

    # Split: equal (no split input), uneven (opset 13 input), opset 18 num_outputs.
    for axis, shape in ((0, (6, 4, 5)), (1, (2, 6, 5)), (2, (2, 3, 6)), (-1, (2, 3, 9))):
        single("split_equal3_axis%s_%s" % (str(axis).replace("-", "m"), shp(shape)), "Split", f(shape), n_out=3,
               axis=axis)
    single("split_uneven_123_axis1_2x6x5", "Split", f((2, 6, 5)), consts=[np.array([1, 2, 3], np.int64)], n_out=3,
           axis=1)
    single("split_uneven_502_axis0_7x3", "Split", f((7, 3)), consts=[np.array([5, 0, 2], np.int64)], n_out=3, axis=0)
    single("split_uneven_41_axism1_int64_3x5", "Split", i64((3, 5)), consts=[np.array([4, 1], np.int64)], n_out=2,
           axis=-1)
    single("split_numoutputs3_axis1_2x7x3_opset18", "Split", f((2, 7, 3)), n_out=3, axis=1, opset=18, num_outputs=3)
    single("split_numoutputs2_axis0_5x4_opset18", "Split", f((5, 4)), n_out=2, axis=0, opset=18, num_outputs=2)

    # Slice.
    big = np.iinfo(np.int64).max
    small = np.iinfo(np.int64).min
    slices = [
        ("basic_axis0", [1], [4], [0], None),
        ("all_axes", [1, 0, 2], [4, 5, 6], None, None),
        ("reverse_axis2", [-1], [small], [2], [-1]),
        ("negstep2_axis1", [5], [0], [1], [-2]),
        ("negstep3_axis0_oversized", [100], [-100], [0], [-3]),
        ("oversized_start_end", [-100, 2], [100, 1000], [0, 2], None),
        ("negative_starts_ends", [-4, -3], [-1, -1], [1, 2], None),
        ("axes_subset_neg", [1, 0], [6, 3], [-1, -3], [2, 1]),
        ("steps_2_3", [0, 1], [big, big], [1, 2], [2, 3]),
        ("empty_result", [4], [2], [1], None),
        ("mixed_steps", [4, 0, 6], [0, 5, 0], [0, 1, 2], [-1, 2, -3]),
    ]
    for tag, st, en, ax, sp in slices:
        consts = [np.array(st, np.int64), np.array(en, np.int64)]
        if ax is not None or sp is not None:
            consts.append(np.array(ax if ax is not None else list(range(len(st))), np.int64))
        if sp is not None:
            consts.append(np.array(sp, np.int64))
        single("slice_%s_5x6x7" % tag, "Slice", f((5, 6, 7)), consts=consts)
    single("slice_int64_negstep_4x9", "Slice", i64((4, 9)),
           consts=[np.array([7], np.int64), np.array([1], np.int64), np.array([1], np.int64), np.array([-2], np.int64)])
    single("slice_rank4_2x3x8x8", "Slice", f((2, 3, 8, 8)),
           consts=[np.array([1, 1], np.int64), np.array([7, -1], np.int64), np.array([2, 3], np.int64),
                   np.array([2, 1], np.int64)])

    # Gather.
    for axis in (0, 1, -1):
        for itag, idx in (("scalar", np.array(-2, np.int64)), ("1d", np.array([0, -1, 2, 1], np.int64)),
                          ("2d", np.array([[1, -3], [0, 2], [-1, 1]], np.int64))):
            single("gather_axis%s_%s_5x6x7" % (str(axis).replace("-", "m"), itag), "Gather", f((5, 6, 7)),
                   consts=[idx], axis=axis)
    c = Case("gather_axis1_runtime_indices_int32_4x5")
    c.output(c.node("Gather", [c.input(c.uniform([4, 5])), c.input(np.array([[4, -5, 0]], np.int32))], axis=1))
    out.append(c)
    c = Case("gather_axis0_int64_data_6x3")
    c.output(c.node("Gather", [c.input(c.ints([6, 3], -50, 50)), c.input(np.array([5, -6, 3], np.int64))], axis=0))
    out.append(c)

    # Transpose.
    for shape, perm in (((4, 6), None), ((3, 4, 5), (1, 0, 2)), ((3, 4, 5), (2, 0, 1)), ((3, 4, 5), (0, 2, 1)),
                        ((2, 3, 4, 5), (0, 2, 3, 1)), ((2, 3, 4, 5), (0, 3, 1, 2)), ((2, 3, 4, 5), (3, 2, 1, 0)),
                        ((2, 3, 4, 5, 6), (0, 2, 4, 1, 3)), ((2, 3, 4, 5, 6), (4, 3, 2, 1, 0)),
                        ((2, 3, 4, 5, 6), (0, 1, 2, 4, 3)), ((2, 3, 4, 5, 6), (1, 0, 2, 3, 4)),
                        ((1, 64, 33), (0, 2, 1)), ((3, 1, 5), (2, 1, 0))):
        attrs = {} if perm is None else {"perm": list(perm)}
        single("transpose_%s_perm%s" % (shp(shape), "default" if perm is None else "".join(map(str, perm))),
               "Transpose", f(shape), **attrs)
    single("transpose_int64_3x4x5_perm201", "Transpose", i64((3, 4, 5)), perm=[2, 0, 1])
    # Large enough for the tiled path, on 1-, 4- and 8-byte elements.
    single("transpose_3x33x65_perm021", "Transpose", f((3, 33, 65)), perm=[0, 2, 1])
    single("transpose_17x9x33_perm201", "Transpose", f((17, 9, 33)), perm=[2, 0, 1])
    single("transpose_2x40x3x50_perm0321", "Transpose", f((2, 40, 3, 50)), perm=[0, 3, 2, 1])
    single("transpose_uint8_40x70_perm10", "Transpose", lambda c: c.ints((40, 70), 0, 256, np.uint8))
    single("transpose_int64_9x70x12_perm120", "Transpose", i64((9, 70, 12)), perm=[1, 2, 0])
    single("transpose_bool_12x31_perm10", "Transpose", lambda c: c.rng.random((12, 31)) < 0.5)
    # NCHW <-> NHWC with whole 8 x 8 blocks and edges (the 4-byte SIMD tiles).
    single("transpose_1x24x16x40_perm0231", "Transpose", f((1, 24, 16, 40)), perm=[0, 2, 3, 1])
    single("transpose_2x19x37x8_perm0312", "Transpose", f((2, 19, 37, 8)), perm=[0, 3, 1, 2])

    # Pad (opset 13: pads and value as inputs; 18: axes).
    for mode in ("constant", "reflect", "edge"):
        for tag, pads in (("p00120021", [0, 0, 1, 2, 0, 0, 2, 1]), ("p01230123", [0, 1, 2, 3, 0, 1, 2, 3]),
                          ("neg_p0m12_00m22", [0, 1, -1, 2, 0, 0, 2, -2]), ("neg_only", [0, 0, -1, -2, 0, -1, 0, -1])):
            consts = [np.array(pads, np.int64)]
            if mode == "constant":
                consts.append(np.array(1.5, np.float32))
            single("pad_%s_%s_2x3x5x6" % (mode, tag), "Pad", f((2, 3, 5, 6)), consts=consts, mode=mode)
    # wrap (opset 19): the axis repeated periodically, pads up to and beyond the axis length.
    for tag, pads in (("p00120021", [0, 0, 1, 2, 0, 0, 2, 1]), ("p01230123", [0, 1, 2, 3, 0, 1, 2, 3]),
                      ("wide_p00780079", [0, 0, 7, 8, 0, 0, 7, 9])):
        single("pad_wrap_opset19_%s_2x3x5x6" % tag, "Pad", f((2, 3, 5, 6)), consts=[np.array(pads, np.int64)],
               opset=19, mode="wrap")
    single("pad_wrap_opset19_int64_3x4", "Pad", i64((3, 4)), consts=[np.array([2, 0, 1, 5], np.int64)], opset=19,
           mode="wrap")
    single("pad_constant_default_1d_7", "Pad", f((7,)), consts=[np.array([2, 3], np.int64)])
    single("pad_reflect_3d_3x4x5", "Pad", f((3, 4, 5)), consts=[np.array([1, 3, 4, 2, 0, 1], np.int64)],
           mode="reflect")
    single("pad_edge_int64_3x4", "Pad", i64((3, 4)), consts=[np.array([2, 0, 1, 3], np.int64)], mode="edge")
    single("pad_constant_int64_3x4", "Pad", i64((3, 4)),
           consts=[np.array([1, 1, 0, 2], np.int64), np.array(7, np.int64)])
    # The fill value in the data's own type: uint8, int8 below zero, bool, and
    # an int64 that a float cannot hold exactly.
    single("pad_constant_uint8_4x6", "Pad", lambda c: c.ints((4, 6), 0, 256, np.uint8),
           consts=[np.array([1, 2, 0, 1], np.int64), np.array(9, np.uint8)])
    single("pad_constant_int8_neg_4x6", "Pad", lambda c: c.ints((4, 6), -128, 128, np.int8),
           consts=[np.array([0, 1, 2, 0], np.int64), np.array(-7, np.int8)])
    single("pad_constant_bool_3x5", "Pad", lambda c: c.rng.random((3, 5)) < 0.5,
           consts=[np.array([1, 0, 0, 2], np.int64), np.array(True)])
    single("pad_constant_int64_big_value_3x4", "Pad", i64((3, 4)),
           consts=[np.array([1, 1, 1, 1], np.int64), np.array(123456789012345, np.int64)])
    single("pad_constant_axes_opset18_2x3x5x6", "Pad", f((2, 3, 5, 6)),
           consts=[np.array([1, 2, 3, 0], np.int64), np.array(-1.0, np.float32), np.array([-1, 1], np.int64)],
           opset=18)
    single("pad_reflect_axes_opset18_2x3x5x6", "Pad", f((2, 3, 5, 6)),
           consts=[np.array([2, -1, 1, 3], np.int64), None, np.array([2, 3], np.int64)], opset=18, mode="reflect")
    single("pad_constant_large_1x16x64x64", "Pad", f((1, 16, 64, 64)),
           consts=[np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)])

    # CenterCropPad (opset 18; onnxruntime inlines its function): crop and pad
    # by even and odd amounts (the odd element at the end), a subset of axes
    # (negative too), and other dtypes.
    for sx, target in (((2, 3, 7, 8), (2, 3, 4, 5)), ((2, 3, 4, 5), (2, 3, 7, 8)), ((2, 3, 6, 5), (2, 3, 3, 9)),
                       ((5, 6), (5, 6)), ((9,), (2,))):
        single("centercroppad_%s_to_%s" % (shp(sx), shp(target)), "CenterCropPad", f(sx),
               consts=[np.array(target, np.int64)], opset=18)
    single("centercroppad_axes_m1_1_2x5x7_to_4x2", "CenterCropPad", f((2, 5, 7)),
           consts=[np.array([4, 2], np.int64)], opset=18, axes=[-1, 1])
    single("centercroppad_axes_2_1x3x9x4", "CenterCropPad", f((1, 3, 9, 4)), consts=[np.array([6], np.int64)],
           opset=18, axes=[2])
    single("centercroppad_int64_5x4_to_2x7", "CenterCropPad", i64((5, 4)), consts=[np.array([2, 7], np.int64)],
           opset=18)
    single("centercroppad_uint8_6x3_to_3x6", "CenterCropPad", lambda c: c.ints((6, 3), 0, 256, np.uint8),
           consts=[np.array([3, 6], np.int64)], opset=18)
    single("centercroppad_bool_4x4_to_7x1", "CenterCropPad", lambda c: c.rng.random((4, 4)) < 0.5,
           consts=[np.array([7, 1], np.int64)], opset=18)

    # Expand.
    for sx, target in (((3, 1), (2, 3, 4)), ((1,), (4, 5)), ((2, 1, 4), (2, 3, 4)), ((3, 1, 5), (2, 1, 1, 1)),
                       ((4,), (1,)), ((1, 5), (3, 1))):
        single("expand_%s_to_%s" % (shp(sx), shp(target)), "Expand", f(sx), consts=[np.array(target, np.int64)])
    single("expand_int64_3x1_to_3x4", "Expand", i64((3, 1)), consts=[np.array([3, 4], np.int64)])

    # Flatten, Squeeze, Unsqueeze, Reshape.
    for axis in (0, 1, 2, -1, 4):
        single("flatten_axis%s_2x3x4x5" % str(axis).replace("-", "m"), "Flatten", f((2, 3, 4, 5)), axis=axis)
    for tag, axes, shape in (("axis1", [1], (3, 1, 4, 1)), ("axes13", [1, 3], (3, 1, 4, 1)),
                             ("all", None, (1, 3, 1, 4, 1)), ("axism1", [-1], (3, 4, 1))):
        single("squeeze_%s_%s" % (tag, shp(shape)), "Squeeze", f(shape),
               consts=[] if axes is None else [np.array(axes, np.int64)])
    for tag, axes, shape in (("axis0", [0], (3, 4)), ("axes24", [2, 4], (3, 4, 5)), ("axism1", [-1], (3, 4)),
                             ("axes0m1", [0, -1], (2, 3))):
        single("unsqueeze_%s_%s" % (tag, shp(shape)), "Unsqueeze", f(shape), consts=[np.array(axes, np.int64)])
    for tag, spec, shape in (("0m1", [0, -1], (2, 3, 4)), ("m14", [-1, 4], (2, 3, 4)), ("402", [4, 0, 2], (2, 3, 4)),
                             ("00m1", [0, 0, -1], (2, 3, 4, 5)), ("m1", [-1], (2, 3, 4)), ("2m12", [2, -1, 2], (2, 3, 4))):
        single("reshape_%s_%s" % (tag, shp(shape)), "Reshape", f(shape), consts=[np.array(spec, np.int64)])

    # Cast.
    P = TensorProto
    casts = [
        ("float_to_int64", lambda c: c.uniform([3, 7], -50, 50), P.INT64),
        ("float_to_int32", lambda c: c.uniform([3, 7], -50, 50), P.INT32),
        ("float_to_uint8", lambda c: c.uniform([3, 7], 0, 250), P.UINT8),
        ("float_to_int8", lambda c: c.uniform([3, 7], -120, 120), P.INT8),
        ("float_to_bool", lambda c: np.where(c.rng.random([3, 7]) < 0.5, 0, c.uniform([3, 7])).astype(np.float32),
         P.BOOL),
        ("int64_to_float", lambda c: c.ints([3, 7], -1000, 1000), P.FLOAT),
        ("int64_to_int32", lambda c: c.ints([3, 7], -1000, 1000), P.INT32),
        ("int32_to_int64", lambda c: c.ints([3, 7], -1000, 1000, np.int32), P.INT64),
        ("int64_to_bool", lambda c: c.ints([3, 7], -2, 3), P.BOOL),
        ("bool_to_float", lambda c: c.rng.random([3, 7]) < 0.5, P.FLOAT),
        ("uint8_to_float", lambda c: c.ints([3, 7], 0, 256, np.uint8), P.FLOAT),
        ("float_to_float", lambda c: c.uniform([3, 7]), P.FLOAT),
    ]
    for tag, gen, to in casts:
        single("cast_%s_3x7" % tag, "Cast", gen, to=to)

    # Shape (folds to a constant output).
    single("shape_2x3x4x5", "Shape", f((2, 3, 4, 5)))
    single("shape_start1_endm1_2x3x4x5_opset15", "Shape", f((2, 3, 4, 5)), opset=15, start=1, end=-1)
    return out


# ================================================================ newer op families
#
# Ops added for CNN/detector exporters: variadic Max/Min/Sum/Mean, the
# comparisons and boolean ops, Where, ArgMax/ArgMin, TopK, Tile, Range, Size,
# CastLike, GatherElements, DepthToSpace/SpaceToDepth, the newer activations
# (also fused after Conv and Gemm), Mod, Sign/Sin/Cos, InstanceNormalization,
# LayerNormalization, the newer Reduce ops, Dropout's mask, 8-bit Add/Sub/Mul/Div.

def op_case(name, op, inputs, opset=13, n_out=1, consts=(), **attrs):
    """One node: `inputs` are data arrays (graph inputs), then `consts`
    (initializers; None leaves an optional input out)."""
    c = Case(name, opset=opset)
    ins = [c.input(a) for a in inputs] + ["" if k is None else c.init(k) for k in consts]
    y = c.node(op, ins, n_out=n_out, **attrs)
    c.output(*(y if isinstance(y, list) else [y]))
    return c


def newer_op_cases():
    out = []
    rng = np.random.default_rng(7)
    f = lambda *s: rng.uniform(-2, 2, size=s).astype(np.float32)  # noqa: E731
    i64 = lambda *s: rng.integers(-5, 6, size=s).astype(np.int64)  # noqa: E731
    b = lambda *s: rng.random(s) < 0.5  # noqa: E731

    # Variadic ops with three-way broadcasting.
    for op in ("Max", "Min", "Sum", "Mean"):
        out.append(op_case("%s_3in_2x3x4_3x1_4" % op.lower(), op, [f(2, 3, 4), f(3, 1), f(4)]))
    out.append(op_case("max_1in_3x5", "Max", [f(3, 5)]))
    out.append(op_case("min_int64_2in_4x1_by_3", "Min", [i64(4, 1), i64(3)]))
    out.append(op_case("max_int32_2in_2x3", "Max", [i64(2, 3).astype(np.int32), i64(2, 3).astype(np.int32)]))
    out.append(op_case("sum_big_2x16x32x32_16x1x1", "Sum", [f(2, 16, 32, 32), f(16, 1, 1)]))

    # Comparisons (float, int64, int32) and boolean ops.
    out.append(op_case("equal_int64_3x4_by_4", "Equal", [i64(3, 4), i64(4)]))
    out.append(op_case("greater_2x3x4_by_3x1", "Greater", [f(2, 3, 4), f(3, 1)]))
    out.append(op_case("less_5x6_by_scalar", "Less", [f(5, 6), np.float32(0.25)]))
    out.append(op_case("greaterorequal_int32_3x1x5_by_4x1", "GreaterOrEqual",
                       [i64(3, 1, 5).astype(np.int32), i64(4, 1).astype(np.int32)], opset=12))
    out.append(op_case("lessorequal_int64_2x5", "LessOrEqual", [i64(2, 5), i64(2, 5)], opset=16))
    for op in ("And", "Or", "Xor"):
        out.append(op_case("%s_3x1x4_by_5x1" % op.lower(), op, [b(3, 1, 4), b(5, 1)]))
    out.append(op_case("not_3x4", "Not", [b(3, 4)]))
    out.append(op_case("where_2x1x4_3x1_4", "Where", [b(2, 1, 4), f(3, 1), f(4)], opset=16))
    out.append(op_case("where_int64_3x4_scalar", "Where", [b(3, 4), i64(3, 4), np.int64(-1)], opset=16))

    # ArgMax / ArgMin: ties come from small integers.
    out.append(op_case("argmax_axis1_2x5x3", "ArgMax", [f(2, 5, 3)], axis=1))
    out.append(op_case("argmin_axism1_nokeep_3x7", "ArgMin", [f(3, 7)], axis=-1, keepdims=0))
    out.append(op_case("argmax_int64_ties_last_4x6", "ArgMax", [rng.integers(0, 3, (4, 6)).astype(np.int64)], axis=1,
                       select_last_index=1))
    out.append(op_case("argmin_int64_ties_first_6x4", "ArgMin", [rng.integers(0, 3, (6, 4)).astype(np.int64)], axis=0))
    out.append(op_case("argmax_wide_inner_3x4x300", "ArgMax", [f(3, 4, 300)], axis=1))

    # TopK: K as an input (opset 10+), largest and smallest, ties by index.
    out.append(op_case("topk_k3_axism1_3x8", "TopK", [f(3, 8)], opset=11, n_out=2, consts=[np.array([3], np.int64)]))
    out.append(op_case("topk_smallest_k2_axis1_2x6x3", "TopK", [f(2, 6, 3)], opset=11, n_out=2,
                       consts=[np.array([2], np.int64)], axis=1, largest=0))
    out.append(op_case("topk_int64_ties_k4_2x9", "TopK", [rng.integers(0, 3, (2, 9)).astype(np.int64)], opset=11,
                       n_out=2, consts=[np.array([4], np.int64)]))
    out.append(op_case("topk_kall_opset10_4x5", "TopK", [f(4, 5)], opset=10, n_out=2, consts=[np.array([4], np.int64)],
                       axis=0))

    # Tile, Range, Size, CastLike.
    out.append(op_case("tile_2x3x4_rep213", "Tile", [f(2, 3, 4)], consts=[np.array([2, 1, 3], np.int64)]))
    out.append(op_case("tile_int64_3x1_rep14", "Tile", [i64(3, 1)], consts=[np.array([1, 4], np.int64)]))
    out.append(op_case("range_float", "Range", [], opset=11,
                       consts=[np.float32(0.5), np.float32(4.0), np.float32(0.25)]))
    out.append(op_case("range_int64_negative_delta", "Range", [], opset=11,
                       consts=[np.int64(10), np.int64(-7), np.int64(-3)]))
    out.append(op_case("range_int32_empty", "Range", [], opset=11,
                       consts=[np.int32(5), np.int32(5), np.int32(1)]))
    # Shape operands computed at run time from input values (planned per value):
    # Range's limit Add(n, 2), and Pad's pads a Concat of an input with zeros.
    c = Case("range_limit_computed_from_input_value", opset=13)
    n = c.input(np.array(5, np.int64))
    lim = c.node("Add", [n, c.init(np.array(2, np.int64))])
    c.output(c.node("Range", [c.init(np.array(1, np.int64)), lim, c.init(np.array(2, np.int64))]))
    out.append(c)
    c = Case("pad_pads_computed_from_input_value_3x4", opset=13)
    x = c.input(c.uniform([3, 4]))
    p = c.input(np.array([1, 2], np.int64))
    pads = c.node("Concat", [p, c.init(np.array([0, 1], np.int64))], axis=0)
    c.output(c.node("Pad", [x, pads], mode="reflect"))
    out.append(c)
    out.append(op_case("size_2x3x4", "Size", [f(2, 3, 4)]))
    out.append(op_case("castlike_float_to_int64_3x4", "CastLike", [f(3, 4) * 10, i64(1)], opset=15))
    out.append(op_case("castlike_int32_to_float_3x4", "CastLike", [i64(3, 4).astype(np.int32), f(2)], opset=15))

    # GatherElements, DepthToSpace, SpaceToDepth.
    out.append(op_case("gatherelements_axis0_4x3", "GatherElements", [f(4, 3)],
                       consts=[np.array([[3, 0, -1], [1, -4, 2]], np.int64)], axis=0))
    out.append(op_case("gatherelements_axis1_int32_idx_3x5x2", "GatherElements", [f(3, 5, 2)],
                       consts=[rng.integers(-5, 5, (3, 4, 2)).astype(np.int32)], axis=1))
    out.append(op_case("gatherelements_axism1_smaller_idx_4x6", "GatherElements", [i64(4, 6)],
                       consts=[rng.integers(0, 6, (2, 3)).astype(np.int64)], axis=-1))
    for mode in ("DCR", "CRD"):
        out.append(op_case("depthtospace_%s_b2_2x8x3x4" % mode.lower(), "DepthToSpace", [f(2, 8, 3, 4)], blocksize=2,
                           mode=mode))
        out.append(op_case("depthtospace_%s_b3_1x18x2x3" % mode.lower(), "DepthToSpace", [f(1, 18, 2, 3)],
                           blocksize=3, mode=mode))
    out.append(op_case("spacetodepth_b2_2x3x4x6", "SpaceToDepth", [f(2, 3, 4, 6)], blocksize=2))
    out.append(op_case("spacetodepth_b3_1x2x6x9", "SpaceToDepth", [f(1, 2, 6, 9)], blocksize=3))

    # Activations and unary math.
    wide = lambda *s: rng.uniform(-6, 6, size=s).astype(np.float32)  # noqa: E731
    acts = [("Elu", 13, {"alpha": 0.5}), ("Selu", 13, {}), ("Celu", 13, {"alpha": 2.0}), ("Softplus", 13, {}),
            ("Softsign", 13, {}), ("ThresholdedRelu", 13, {"alpha": 0.3}), ("Mish", 18, {}),
            ("Gelu", 20, {}), ("Gelu", 20, {"approximate": "tanh"}), ("Sin", 13, {}), ("Cos", 13, {})]
    for op, opset, attrs in acts:
        tag = op.lower() + ("_tanh" if attrs.get("approximate") == "tanh" else "")
        out.append(op_case("%s_3x4x5" % tag, op, [wide(3, 4, 5)], opset=opset, **attrs))
    out.append(op_case("softplus_large_2x50", "Softplus", [rng.uniform(-100, 100, (2, 50)).astype(np.float32)]))
    sign_in = f(3, 5)
    sign_in[0, :2] = 0
    out.append(op_case("sign_3x5", "Sign", [sign_in]))
    out.append(op_case("sign_int64_3x5", "Sign", [i64(3, 5)]))
    # Fused into Conv and Gemm by the activation pass.
    for act, opset, attrs in (("Mish", 18, {}), ("Elu", 13, {"alpha": 0.7}), ("Gelu", 20, {})):
        c = Case("conv2d_k3_%s_fused_1x3x9x9" % act.lower(), opset=opset)
        y = add_conv(c, c.input(c.uniform([1, 3, 9, 9])), 3, 4, (3, 3), 1, True, pads=[1, 1, 1, 1])
        c.output(c.node(act, [y], **attrs))
        out.append(c)
    c = Case("gemm_softplus_fused_4x16x8")
    y = c.node("Gemm", [c.input(c.uniform([4, 16])), c.init(c.uniform([8, 16]) / 4), c.init(c.uniform([8]))], transB=1)
    c.output(c.node("Softplus", [y]))
    out.append(c)

    # Mod: fmod=1 for floats, both kinds for integers.
    nz = lambda *s: (rng.integers(1, 6, size=s) * np.where(rng.random(s) < 0.5, -1, 1)).astype(np.int64)  # noqa: E731
    out.append(op_case("mod_fmod_float_3x4_by_4", "Mod", [f(3, 4) * 5, (rng.uniform(0.5, 2, 4) * np.where(
        rng.random(4) < 0.5, -1, 1)).astype(np.float32)], fmod=1))
    out.append(op_case("mod_int64_3x4_by_4", "Mod", [i64(3, 4) * 3, nz(4)]))
    out.append(op_case("mod_fmod_int32_2x3", "Mod", [(i64(2, 3) * 3).astype(np.int32), nz(2, 3).astype(np.int32)],
                       fmod=1))

    # 8-bit Add/Sub/Mul/Div (opset 14), wrapping as numpy and onnxruntime do.
    u8 = lambda *s: rng.integers(0, 256, size=s).astype(np.uint8)  # noqa: E731
    s8 = lambda *s: rng.integers(-128, 128, size=s).astype(np.int8)  # noqa: E731
    for op in ("Add", "Sub", "Mul"):
        out.append(op_case("%s_uint8_3x4_by_4" % op.lower(), op, [u8(3, 4), u8(4)], opset=14))
        out.append(op_case("%s_int8_3x4_by_3x1" % op.lower(), op, [s8(3, 4), s8(3, 1)], opset=14))
    out.append(op_case("div_uint8_3x4", "Div", [u8(3, 4), rng.integers(1, 256, (3, 4)).astype(np.uint8)], opset=14))
    out.append(op_case("div_int8_3x4", "Div", [s8(3, 4), (rng.integers(1, 100, (3, 4)) * np.where(
        rng.random((3, 4)) < 0.5, -1, 1)).astype(np.int8)], opset=14))

    # Normalizations.
    out.append(op_case("instancenorm_2x3x5x7", "InstanceNormalization", [f(2, 3, 5, 7)],
                       consts=[rng.uniform(0.5, 1.5, 3).astype(np.float32), f(3)], epsilon=1e-3))
    out.append(op_case("instancenorm_1d_3x4x9", "InstanceNormalization", [f(3, 4, 9)], consts=[f(4), f(4)]))
    out.append(op_case("layernorm_axism1_2x5x8", "LayerNormalization", [f(2, 5, 8)], opset=17,
                       consts=[f(8), f(8)]))
    out.append(op_case("layernorm_axis1_stats_2x3x4x5", "LayerNormalization", [f(2, 3, 4, 5)], opset=17, n_out=3,
                       consts=[f(3, 4, 5), f(3, 4, 5)], axis=1, epsilon=1e-3))
    out.append(op_case("layernorm_axism2_noB_bcast_scale_3x6x4", "LayerNormalization", [f(3, 6, 4)], opset=17,
                       consts=[f(4)], axis=-2))

    # The newer Reduce ops: axes attribute (opset 13) and input (opset 18).
    pos = lambda *s: rng.uniform(0.2, 2, size=s).astype(np.float32)  # noqa: E731
    for op in ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceProd", "ReduceSumSquare"):
        x = pos if op == "ReduceLogSum" else f
        out.append(op_case("%s_axes02_keep_opset13_3x4x5" % op.lower(), op, [x(3, 4, 5)], axes=[0, 2]))
        out.append(op_case("%s_axism1_nokeep_opset18_3x4x5" % op.lower(), op, [x(3, 4, 5)], opset=18,
                           consts=[np.array([-1], np.int64)], keepdims=0))
        out.append(op_case("%s_all_opset18_4x6" % op.lower(), op, [x(4, 6)], opset=18))
        out.append(op_case("%s_noop_opset18_2x3" % op.lower(), op, [x(2, 3)], opset=18,
                           consts=[np.zeros([0], np.int64)], noop_with_empty_axes=1))

    # ReduceMin (ReduceMax's twin): the axes attribute and input forms.
    out.append(op_case("reducemin_axes1_keep_opset13_3x4x5", "ReduceMin", [f(3, 4, 5)], axes=[1]))
    out.append(op_case("reducemin_axism1_nokeep_opset18_3x4x5", "ReduceMin", [f(3, 4, 5)], opset=18,
                       consts=[np.array([-1], np.int64)], keepdims=0))
    out.append(op_case("reducemin_all_opset18_4x6", "ReduceMin", [f(4, 6)], opset=18))

    # Constant (each value attribute kind) and ConstantOfShape feeding computed values; the loader
    # folds both, and the case checks what it folded them to.
    for attr, value, shape in (("value", helper.make_tensor("v", TensorProto.FLOAT, [2, 3], list(range(6))), (2, 3)),
                               ("value_float", 0.75, (2, 3)), ("value_floats", [0.5, -1.0, 2.0], (2, 3)),
                               ("value_int", 7, None), ("value_ints", [1, -2, 3], None)):
        c = Case("constant_%s_add" % attr, opset=13 if attr == "value" else 12)
        k = c.node("Constant", [], **{attr: value})
        if shape is None:
            c.output(c.node("Add", [c.input(rng.integers(-9, 9, (2, 3)).astype(np.int64)), k]))
        else:
            c.output(c.node("Add", [c.input(f(*shape)), k]))
        out.append(c)
    for dtype, value in ((TensorProto.FLOAT, 1.5), (TensorProto.INT64, 4), (None, None)):
        c = Case("constantofshape_%s_mul" % ("default" if dtype is None else TensorProto.DataType.Name(dtype).lower()),
                 opset=9 if dtype is None else 20)
        shape = c.init(np.array([3, 4], np.int64))
        attrs = {} if dtype is None else {"value": helper.make_tensor("v", dtype, [1], [value])}
        filled = c.node("ConstantOfShape", [shape], **attrs)
        x = c.input(rng.integers(-9, 9, (3, 4)).astype(np.int64) if dtype == TensorProto.INT64 else f(3, 4))
        c.output(c.node("Mul", [x, filled]))
        out.append(c)

    # Dropout's mask in inference, and training mode with ratio 0.
    out.append(op_case("dropout_mask_opset13_3x4", "Dropout", [f(3, 4)], n_out=2))
    out.append(op_case("dropout_mask_training_ratio0_3x4", "Dropout", [f(3, 4)], n_out=2,
                       consts=[np.float32(0.0), np.array(True)]))
    # Not here: the mask before opset 10 (of the input's type). minirt writes
    # ones (every element kept), as the ONNX reference does; onnxruntime's
    # opset 7-9 Dropout writes zeros.
    return out


def detector_op_cases():
    """The ops detectors, segmenters and OCR models export: the scatters,
    OneHot, Trilu, Hardmax, LpNormalization, GridSample."""
    out = []
    rng = np.random.default_rng(11)
    f = lambda *s: rng.uniform(-2, 2, size=s).astype(np.float32)  # noqa: E731
    i64 = lambda *s: rng.integers(-5, 6, size=s).astype(np.int64)  # noqa: E731

    def perm_rows(n_rows, length, count, negative=False):
        # count distinct indices in [0, length) per column of n_rows rows.
        cols = [rng.permutation(length)[:count] for _ in range(n_rows)]
        a = np.stack(cols, axis=1).astype(np.int64)
        if negative:
            a = np.where(rng.random(a.shape) < 0.5, a - length, a)
        return a

    # GatherND: tuples of every length, negative indices, batch_dims 1 and 2,
    # dtypes, and indices computed in the model (TensorFlow detectors' boxes).
    def nd_idx(shape, dims):
        a = np.stack([rng.integers(-d, d, size=shape) for d in dims], axis=-1)
        return a.astype(np.int64)
    out.append(op_case("gathernd_k1_4x3x5", "GatherND", [f(4, 3, 5), nd_idx((6,), (4,))], opset=11))
    out.append(op_case("gathernd_k2_4x3x5", "GatherND", [f(4, 3, 5), nd_idx((2, 3), (4, 3))], opset=11))
    out.append(op_case("gathernd_k3_scalars_4x3x5", "GatherND", [f(4, 3, 5), nd_idx((7,), (4, 3, 5))], opset=12))
    out.append(op_case("gathernd_batch1_k1_2x4x3", "GatherND", [f(2, 4, 3), nd_idx((2, 5), (4,))], opset=12,
                       batch_dims=1))
    out.append(op_case("gathernd_batch2_k1_2x3x4x5", "GatherND", [f(2, 3, 4, 5), nd_idx((2, 3, 2), (4,))], opset=13,
                       batch_dims=2))
    out.append(op_case("gathernd_int64_data_k2_3x3", "GatherND", [i64(3, 3), nd_idx((4,), (3, 3))], opset=13))
    c = Case("gathernd_indices_from_argmax_3x6x4")  # the best row's features, per image
    x = c.input(f(3, 6, 4))
    best = c.node("ArgMax", [c.node("ReduceSum", [x], axes=[2], keepdims=0)], axis=1, keepdims=1)
    c.output(c.node("GatherND", [x, best], batch_dims=1))
    c.opset = 12
    out.append(c)

    # GroupNormalization (opset 21: scale and bias per channel; ONNX's
    # checker refuses the deprecated version 18): groups of one channel to
    # all channels, 3-D to 5-D inputs.
    for shape, groups in (((2, 6, 5, 4), 3), ((1, 8, 7), 8), ((2, 4, 3, 3, 2), 1), ((2, 6, 5, 4), 2)):
        c = Case("groupnorm_opset21_g%d_%s" % (groups, "x".join(map(str, shape))), opset=21)
        y = c.node("GroupNormalization", [c.input(f(*shape) * 3 + 1), c.init(f(shape[1])), c.init(f(shape[1]))],
                   num_groups=groups, epsilon=1e-3)
        c.output(y)
        out.append(c)

    # RoiAlign (Mask R-CNN's heads): both modes and coordinate modes,
    # sampling ratios (0: adaptive), spatial_scale, regions partly outside
    # the image, tiny and inverted ones, opset 10's behaviour.
    x = f(2, 3, 10, 12)
    rois = np.array([[0.5, 1.0, 7.5, 8.0], [2.0, 2.0, 2.4, 2.3], [-3.0, -2.0, 5.0, 4.0], [8.0, 6.0, 14.0, 13.0],
                     [6.0, 5.0, 1.0, 2.0], [0.0, 0.0, 11.0, 9.0]], np.float32)
    batch = np.array([0, 1, 1, 0, 1, 0], np.int64)
    for mode in ("avg", "max"):
        for ctm in ("half_pixel", "output_half_pixel"):
            for ratio, oh, ow, scale in ((0, 3, 4, 1.0), (2, 2, 2, 0.5), (1, 5, 3, 1.0)):
                out.append(op_case("roialign_%s_%s_r%d_o%dx%d_s%g" % (mode, ctm.replace("_", ""), ratio, oh, ow, scale),
                                   "RoiAlign", [x, rois, batch], opset=16, mode=mode,
                                   coordinate_transformation_mode=ctm, sampling_ratio=ratio, output_height=oh,
                                   output_width=ow, spatial_scale=scale))
    out.append(op_case("roialign_opset10_avg_o2x2", "RoiAlign", [x, rois, batch], opset=10, output_height=2,
                       output_width=2, sampling_ratio=2))

    # ScatterElements: axis 0 / 1 / -1, distinct indices for reduction none.
    idx = perm_rows(5, 4, 3)  # [3, 5] into axis 0 of [4, 5]
    out.append(op_case("scatterelements_axis0_4x5", "ScatterElements", [f(4, 5), idx, f(3, 5)], axis=0))
    idx = perm_rows(4, 5, 2, negative=True).T.copy()  # [4, 2] into axis 1 of [4, 5]
    out.append(op_case("scatterelements_axis1_neg_idx_4x5", "ScatterElements", [f(4, 5), idx, f(4, 2)], axis=1))
    idx = perm_rows(12, 6, 4).T.reshape(2, 3, 2, 4).copy()  # distinct along the last axis
    out.append(op_case("scatterelements_axism1_int32_2x3x4x6", "ScatterElements",
                       [f(2, 3, 4, 6), idx.astype(np.int32), f(2, 3, 2, 4)], axis=-1))
    out.append(op_case("scatterelements_int64_data_axis0_4x3", "ScatterElements",
                       [i64(4, 3), perm_rows(3, 4, 2), i64(2, 3)], axis=0))
    c = Case("scatterelements_const_idx_axis0_3x4")  # indices an initializer, checked at plan time
    y = c.node("ScatterElements", [c.input(f(3, 4)), c.init(perm_rows(4, 3, 2)), c.input(f(2, 4))], axis=0)
    c.output(y)
    out.append(c)
    dup = rng.integers(0, 3, size=(4, 5)).astype(np.int64)  # duplicates: the reductions combine them
    for red, opset in (("add", 16), ("mul", 16), ("max", 18), ("min", 18)):
        out.append(op_case("scatterelements_%s_dup_3x5" % red, "ScatterElements", [f(3, 5), dup, f(4, 5)],
                           opset=opset, axis=0, reduction=red))
    out.append(op_case("scatter_opset10_axis1_3x4", "Scatter", [f(3, 4), perm_rows(3, 4, 2).T.copy(), f(3, 2)],
                       opset=10, axis=1))

    # ScatterND: element, row and plane updates; reductions with duplicates.
    pairs = np.array([[0, 1], [3, 4], [2, 0], [1, 5], [-1, 2]], np.int64)
    out.append(op_case("scatternd_elements_4x6", "ScatterND", [f(4, 6), pairs, f(5)]))
    out.append(op_case("scatternd_rows_4x5x6", "ScatterND",
                       [f(4, 5, 6), np.array([[2], [0], [-1]], np.int64), f(3, 5, 6)]))
    out.append(op_case("scatternd_int32_data_slices_3x4x2", "ScatterND",
                       [i64(3, 4, 2).astype(np.int32), np.array([[[0, 1]], [[2, 3]]], np.int64),
                        i64(2, 1, 2).astype(np.int32)]))
    dup = np.array([[1], [3], [1], [0], [3]], np.int64)
    for red, opset in (("add", 16), ("mul", 16), ("max", 18), ("min", 18)):
        out.append(op_case("scatternd_%s_dup_4x3" % red, "ScatterND", [f(4, 3), dup, f(5, 3)], opset=opset,
                           reduction=red))

    # OneHot: axes, negative indices (opset 11), float indices and depth, int64 values.
    ids = rng.integers(-4, 4, size=(2, 3)).astype(np.int64)
    for axis in (-1, 0, 1):
        out.append(op_case("onehot_axis%s_depth4_2x3" % str(axis).replace("-", "m"), "OneHot", [ids],
                           opset=11, consts=[np.int64(4), np.array([0.0, 1.0], np.float32)], axis=axis))
    out.append(op_case("onehot_float_idx_depth_values_5", "OneHot",
                       [np.array([0.0, 2.7, 5.0, -1.0, 6.0], np.float32)], opset=11,
                       consts=[np.array([6.0], np.float32), np.array([-3, 7], np.float32)]))
    out.append(op_case("onehot_int64_values_2x2", "OneHot", [np.array([[1, 0], [2, -1]], np.int64)], opset=11,
                       consts=[np.int64(3), np.array([-3, 7], np.int64)]))
    out.append(op_case("onehot_opset9_3x2", "OneHot", [rng.integers(0, 5, (3, 2)).astype(np.int64)],
                       opset=9, consts=[np.int64(5), np.array([0.5, 2.0], np.float32)], axis=1))

    # Trilu: upper and lower, k from -2 to 3, batched, integer data, no k.
    for upper in (0, 1):
        for k in (-2, 0, 1, 3):
            out.append(op_case("trilu_%s_k%s_3x5" % ("upper" if upper else "lower", str(k).replace("-", "m")),
                               "Trilu", [f(3, 5)], opset=14, consts=[np.int64(k)], upper=upper))
        out.append(op_case("trilu_%s_nok_2x4x3" % ("upper" if upper else "lower"), "Trilu", [f(2, 4, 3)],
                           opset=14, upper=upper))
    out.append(op_case("trilu_int64_lower_k1_4x4", "Trilu", [i64(4, 4)], opset=14, consts=[np.int64(1)], upper=0))

    # Hardmax: ties go to the first index; opset 11's 2-D coercion and 13's single axis.
    ties = rng.integers(0, 3, size=(2, 3, 4)).astype(np.float32)
    out.append(op_case("hardmax_opset13_axism1_ties_2x3x4", "Hardmax", [ties]))
    out.append(op_case("hardmax_opset13_axis0_2x3x4", "Hardmax", [f(2, 3, 4)], axis=0))
    out.append(op_case("hardmax_opset13_axis1_ties_2x3x4", "Hardmax", [ties], axis=1))
    out.append(op_case("hardmax_opset11_axis1_coerced_2x3x4", "Hardmax", [f(2, 3, 4)], opset=11, axis=1))
    out.append(op_case("hardmax_opset11_default_ties_2x3x4", "Hardmax", [ties], opset=11))

    # LpNormalization: p 1 and 2 along each axis, a zero column.
    z = f(2, 3, 4)
    z[1, :, 2] = 0.0
    z[0, 1, :] = 0.0
    for p in (1, 2):
        for axis in (-1, 0, 1):
            out.append(op_case("lpnormalization_p%d_axis%s_2x3x4" % (p, str(axis).replace("-", "m")),
                               "LpNormalization", [z], axis=axis, p=p))

    # GridSample: every mode, padding and align_corners, positions inside and
    # outside the image, opset 16 and 20 spellings.
    for mode16, mode20 in (("bilinear", "linear"), ("nearest", "nearest"), ("bicubic", "cubic")):
        for pad in ("zeros", "border", "reflection"):
            for align in (0, 1):
                x = f(2, 3, 5, 6)
                grid = rng.uniform(-1.4, 1.4, size=(2, 4, 7, 2)).astype(np.float32)
                out.append(op_case("gridsample_%s_%s_align%d_2x3x5x6" % (mode16, pad, align), "GridSample",
                                   [x, grid], opset=16, mode=mode16, padding_mode=pad, align_corners=align))
        out.append(op_case("gridsample_opset20_%s_border_1x2x4x4" % mode20, "GridSample",
                           [f(1, 2, 4, 4), rng.uniform(-1.2, 1.2, size=(1, 3, 5, 2)).astype(np.float32)],
                           opset=20, mode=mode20, padding_mode="border"))
    # Half-pixel ties for nearest (rounded half to even).
    ties_grid = np.array([[[[-0.6, -0.2], [0.2, 0.6], [-1.0, 1.0], [0.0, 0.0]]]], np.float32)
    out.append(op_case("gridsample_nearest_ties_1x1x5x5", "GridSample", [f(1, 1, 5, 5), ties_grid], opset=16,
                       mode="nearest"))
    out += value_sized_cases()
    return out


def value_sized_cases():
    """NonZero, Compress, Unique and NonMaxSuppression, whose output sizes follow from the
    data: minirt cuts the model at them (runtime/stages.h). Alone, between
    computed stages, feeding shape-dependent ops, and chained."""
    out = []
    rng = np.random.default_rng(17)

    # NonZero: every dtype, ranks 1 to 4, none / all / some nonzero, opsets 9 and 13.
    def sparse(shape, dtype, p=0.4):
        a = rng.integers(1, 5, size=shape) * (rng.random(shape) < p)
        return a.astype(dtype)
    for dt in (np.float32, np.int64, np.int32, np.uint8, np.bool_):  # onnxruntime has no int8 NonZero
        out.append(op_case("nonzero_%s_3x4x5" % np.dtype(dt).name, "NonZero", [sparse((3, 4, 5), dt)]))
    out.append(op_case("nonzero_rank1_7", "NonZero", [sparse((7,), np.float32)], opset=9))
    out.append(op_case("nonzero_rank4_2x3x2x4", "NonZero", [sparse((2, 3, 2, 4), np.float32, 0.7)]))
    out.append(op_case("nonzero_none_4x3", "NonZero", [np.zeros((4, 3), np.float32)]))
    out.append(op_case("nonzero_all_2x3", "NonZero", [np.ones((2, 3), np.int64)]))
    out.append(op_case("nonzero_negzero_nan_2x3", "NonZero",
                       [np.array([[-0.0, 0.0, np.nan], [1.0, -2.0, 0.0]], np.float32)]))

    # Unique: flattened and along each axis (negative too), sorted or in
    # order of first occurrence, every output, dtypes onnxruntime runs.
    def repeats(shape, dtype, hi=4):
        return rng.integers(0, hi, size=shape).astype(dtype)
    for sorted_ in (1, 0):
        out.append(op_case("unique_flat_sorted%d_3x4" % sorted_, "Unique", [repeats((3, 4), np.float32)], opset=11,
                           n_out=4, sorted=sorted_))
        for axis in (0, 1, -1):
            x = repeats((4, 3), np.float32, 2)  # rows and columns that repeat
            x[2] = x[0]
            x[:, 2] = x[:, 0]
            out.append(op_case("unique_axis%d_sorted%d_4x3" % (axis, sorted_), "Unique", [x], opset=11, n_out=4,
                               axis=axis, sorted=sorted_))
        x = repeats((2, 5, 3), np.float32, 2)
        x[:, 3] = x[:, 1]
        out.append(op_case("unique_axis1_sorted%d_2x5x3" % sorted_, "Unique", [x], opset=11, n_out=4, axis=1,
                           sorted=sorted_))
    for dt in (np.int64, np.int8):
        out.append(op_case("unique_%s_10" % np.dtype(dt).name, "Unique", [repeats((10,), dt, 5) - 2], opset=11, n_out=4))
    out.append(op_case("unique_negzero_5", "Unique", [np.array([0.0, -0.0, 1.5, -2.0, 1.5], np.float32)], opset=11,
                       n_out=4))
    c = Case("unique_values_only_6")  # only Y asked for; the other outputs left out
    y = c.node("Unique", [c.input(np.array([3, 1, 3, 2, 1, 5], np.float32))], sorted=0)
    c.output(c.node("Mul", [y, c.init(np.float32(10.0))]))
    out.append(c)

    # Compress: flattened and along each axis (negative from opset 11), a
    # condition shorter than the axis, none and all kept, dtypes.
    def cond(n, p=0.5):
        return rng.random(n) < p
    out.append(op_case("compress_flat_3x4", "Compress", [rng.uniform(-1, 1, (3, 4)).astype(np.float32), cond(12)],
                       opset=11))
    out.append(op_case("compress_flat_short_cond_3x4", "Compress",
                       [rng.uniform(-1, 1, (3, 4)).astype(np.float32), cond(5, 0.7)], opset=11))
    for axis in (0, 1, 2, -1):
        out.append(op_case("compress_axis%d_3x4x5" % axis, "Compress",
                           [rng.uniform(-1, 1, (3, 4, 5)).astype(np.float32), cond((3, 4, 5)[axis])], opset=11,
                           axis=axis))
    out.append(op_case("compress_axis1_none_2x3", "Compress",
                       [rng.uniform(-1, 1, (2, 3)).astype(np.float32), np.zeros(3, np.bool_)], opset=11, axis=1))
    out.append(op_case("compress_axis0_all_int64_4x2", "Compress",
                       [rng.integers(-9, 9, (4, 2)).astype(np.int64), np.ones(4, np.bool_)], opset=11, axis=0))
    out.append(op_case("compress_axis1_uint8_2x6", "Compress",
                       [rng.integers(0, 255, (2, 6)).astype(np.uint8), cond(4)], opset=11, axis=1))
    # Compress's condition computed in the model (a score threshold), then more work on what was kept.
    c = Case("compress_scores_over_threshold_then_softmax_8x5")
    x = c.input(rng.uniform(-1, 1, (8, 5)).astype(np.float32))
    keep = c.node("Greater", [c.node("ReduceMax", [x], axes=[1], keepdims=0), c.init(np.float32(0.3))])
    c.output(c.node("Softmax", [c.node("Compress", [x, keep], axis=0)], axis=1))
    out.append(c)

    # IsNaN, IsInf (each sign alone and both).
    special = np.array([[0.0, -0.0, np.inf, -np.inf, np.nan, 1e38], [-1e-40, 3.5, -np.nan, np.inf, -2.0, -np.inf]],
                       np.float32)
    out.append(op_case("isnan_2x6", "IsNaN", [special], opset=13))
    out.append(op_case("isnan_opset20_2x6", "IsNaN", [special], opset=20))
    for pos, neg in ((1, 1), (1, 0), (0, 1), (0, 0)):
        out.append(op_case("isinf_pos%d_neg%d_2x6" % (pos, neg), "IsInf", [special], opset=10, detect_positive=pos,
                           detect_negative=neg))

    # NonMaxSuppression: both box encodings, thresholds given or not, limits,
    # several batches and classes, ties in score, boxes without area.
    def boxes(b, n, center):
        xy = rng.uniform(0, 8, size=(b, n, 2))
        wh = rng.uniform(0.5, 4, size=(b, n, 2))
        if center:
            return np.concatenate([xy, wh], axis=2).astype(np.float32)
        c = np.concatenate([xy[..., ::-1], (xy + wh)[..., ::-1]], axis=2)  # [y1, x1, y2, x2]
        flip = rng.random((b, n)) < 0.3  # the other diagonal pair of corners
        c[flip] = c[flip][:, [2, 1, 0, 3]]
        return c.astype(np.float32)
    i64 = lambda v: np.array([v], np.int64)  # noqa: E731
    f32 = lambda v: np.array([v], np.float32)  # noqa: E731
    for center in (0, 1):
        for b, cls, n in ((1, 1, 6), (2, 3, 10), (1, 2, 40)):
            for limit, iou, score in ((3, 0.5, None), (100, 0.3, 0.2), (5, 0.0, 0.5), (2, 1.0, None)):
                consts = [i64(limit), f32(iou)] + ([] if score is None else [f32(score)])
                name = "nms_center%d_%dx%dx%d_max%d_iou%g%s" % (center, b, cls, n, limit, iou,
                                                                 "" if score is None else "_score%g" % score)
                out.append(op_case(name, "NonMaxSuppression",
                                   [boxes(b, n, center), rng.uniform(0, 1, size=(b, cls, n)).astype(np.float32)],
                                   opset=11, consts=consts, center_point_box=center))
    ties = np.array([[[0.5, 0.9, 0.5, 0.9, 0.1, 0.5]]], np.float32)
    out.append(op_case("nms_score_ties_1x1x6", "NonMaxSuppression", [boxes(1, 6, 0), ties], opset=11,
                       consts=[i64(4), f32(0.4)]))
    flat = np.array([[[0, 0, 1, 1], [0, 0, 0, 1], [0, 0, 1, 1], [2, 2, 2, 2]]], np.float32)  # two without area
    out.append(op_case("nms_no_area_1x1x4", "NonMaxSuppression",
                       [flat, np.array([[[0.9, 0.8, 0.7, 0.6]]], np.float32)], opset=10, consts=[i64(4), f32(0.1)]))
    out.append(op_case("nms_no_limit_input_1x1x5", "NonMaxSuppression",
                       [boxes(1, 5, 0), rng.uniform(0, 1, size=(1, 1, 5)).astype(np.float32)], opset=11))
    out.append(op_case("nms_limit_zero_1x2x5", "NonMaxSuppression",
                       [boxes(1, 5, 0), rng.uniform(0, 1, size=(1, 2, 5)).astype(np.float32)], opset=11,
                       consts=[i64(0), f32(0.5)]))
    out.append(op_case("nms_limit_as_input_2x2x8", "NonMaxSuppression",
                       [boxes(2, 8, 1), rng.uniform(0, 1, size=(2, 2, 8)).astype(np.float32), i64(3), f32(0.4),
                        f32(0.3)], opset=11, center_point_box=1))

    # A detector's tail: scores computed from the input (stage 1), NMS, then
    # the kept boxes gathered and scaled (stage 2, one plan per count kept).
    c = Case("nms_detector_tail_2x3x12")
    bx = c.input(boxes(2, 12, 1))
    logits = c.input(rng.uniform(-3, 3, size=(2, 12, 3)).astype(np.float32))
    sc = c.node("Transpose", [c.node("Sigmoid", [logits])], perm=[0, 2, 1])
    keep = c.node("NonMaxSuppression", [bx, sc, c.init(i64(4)), c.init(f32(0.45)), c.init(f32(0.3))],
                  center_point_box=1)
    box_idx = c.node("Gather", [keep, c.init(np.array(2, np.int64))], axis=1)
    flat_boxes = c.node("Reshape", [bx, c.init(np.array([-1, 4], np.int64))])
    batch_idx = c.node("Gather", [keep, c.init(np.array(0, np.int64))], axis=1)
    row = c.node("Add", [c.node("Mul", [batch_idx, c.init(np.array(12, np.int64))]), box_idx])
    picked = c.node("Gather", [flat_boxes, row], axis=0)
    c.output(keep, c.node("Mul", [picked, c.init(np.float32(2.0))]), sc)
    out.append(c)
    # NonZero feeding shape-dependent ops: a mask's positions, their count as
    # a Reshape operand (a value of the next stage), and NonZero of NonZero.
    c = Case("nonzero_chain_3x5")
    x = c.input(rng.uniform(-1, 1, size=(3, 5)).astype(np.float32))
    nz = c.node("NonZero", [c.node("Greater", [x, c.init(np.float32(0.2))])])
    count = c.node("Slice", [c.node("Shape", [nz]), c.init(np.array([1], np.int64)), c.init(np.array([2], np.int64))])
    flat = c.node("Reshape", [nz, c.node("Concat", [c.init(np.array([2], np.int64)), count], axis=0)])
    vals = c.node("Cast", [flat], to=1)
    nz2 = c.node("NonZero", [c.node("Sub", [nz, c.init(np.array(1, np.int64))])])
    c.output(vals, nz2, c.node("Relu", [x]))
    out.append(c)
    return out


# ================================================================ opsets 1 to 6
# The versions before opset 7: broadcast/axis of the binary ops, Gemm-6's
# broadcast, PRelu-6 per channel, is_test=1, Reshape-1, Cast-1, Pad-1/2,
# Concat-1, Split-1/2, Tile-1, Upsample-1, and the unary ops at version 6.
# onnxruntime runs some of these; the reference evaluator most of the rest;
# NumPy (the changelog's definition, spelled out here) the others.

def legacy_opset_cases():
    out = []
    rng = np.random.default_rng(11)
    f = lambda *s: rng.uniform(-2, 2, size=s).astype(np.float32)  # noqa: E731

    def case(name, op, inputs, opset, ref, n_out=1, consts=(), **attrs):
        c = op_case("legacy_" + name, op, inputs, opset=opset, n_out=n_out, consts=consts, **attrs)
        c.ref = ref
        return c

    # Unary ops at version 6 (and 1 where that is the only version before 7): onnxruntime.
    for op, attrs, pos in (("Relu", {}, False), ("Sigmoid", {}, False), ("Tanh", {}, False), ("Exp", {}, False),
                           ("Log", {}, True), ("Sqrt", {}, True), ("Abs", {}, False), ("Neg", {}, False),
                           ("Floor", {}, False), ("Ceil", {}, False), ("Reciprocal", {}, True),
                           ("Elu", {"alpha": 0.7}, False), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, False),
                           ("LeakyRelu", {"alpha": 0.2}, False), ("Selu", {}, False),
                           ("Clip", {"min": -0.5, "max": 0.8}, False)):
        x = np.abs(f(3, 4, 5)) + 0.1 if pos else f(3, 4, 5)
        out.append(case("%s_opset6_3x4x5" % op.lower(), op, [x], 6, "ort", **attrs))
    for op in ("Softplus", "Softsign"):
        out.append(case("%s_opset1_3x4x5" % op.lower(), op, [f(3, 4, 5)], 1, "ort"))
    # Variadic ops before 8: inputs of one shape.
    for op in ("Sum", "Max", "Min", "Mean"):
        out.append(case("%s_opset6_3_inputs_2x3x4" % op.lower(), op, [f(2, 3, 4), f(2, 3, 4), f(2, 3, 4)], 6, "ort"))

    # Binary ops with broadcast=1 and no axis: B is A's trailing dimensions
    # (NumPy's rule gives the same): the reference evaluator.
    for op in ("Add", "Sub", "Mul", "Div"):
        out.append(case("%s_opset6_bcast_suffix_2x3x4x5_by_4x5" % op.lower(), op, [f(2, 3, 4, 5)], 6, "evaluator",
                        consts=[f(4, 5) + (3 if op == "Div" else 0)], broadcast=1))
    out.append(case("pow_opset1_bcast_scalar_3x4", "Pow", [np.abs(f(3, 4)) + 0.5], 1,
                    lambda d: [np.power(d["x1"], d["w2"])], consts=[np.array([1.5], np.float32)], broadcast=1))
    out.append(case("add_opset6_same_shape_3x4", "Add", [f(3, 4), f(3, 4)], 6, "evaluator"))

    # With axis: B lines up with A's dimensions from axis on. NumPy, B
    # reshaped to (B's dims followed by 1s for A's remaining dimensions).
    def aligned(op_fn, axis, rank_a):
        def ref(feeds):
            names = sorted(feeds)
            a, b = feeds[names[0]], feeds[names[1]]
            b = b.reshape(b.shape + (1,) * (rank_a - axis - b.ndim))
            return [op_fn(a, b)]
        return ref

    for name, op, fn, sa, sb, axis in (
            ("add_axis1_2x3x4x5_by_3x4", "Add", np.add, (2, 3, 4, 5), (3, 4), 1),
            ("mul_axis0_2x3x4_by_2", "Mul", np.multiply, (2, 3, 4), (2,), 0),
            ("sub_axis2_2x3x4x5_by_4x5", "Sub", np.subtract, (2, 3, 4, 5), (4, 5), 2),
            ("div_axis1_2x3x4x5_by_3", "Div", np.divide, (2, 3, 4, 5), (3,), 1),
            ("pow_axis1_2x3x4_by_3", "Pow", np.power, (2, 3, 4), (3,), 1)):
        a = np.abs(f(*sa)) + 0.5 if op == "Pow" else f(*sa)
        b = f(*sb) + (3 if op == "Div" else 0)
        c = Case("legacy_%s_opset6" % name if op != "Pow" else "legacy_%s_opset1" % name, opset=6 if op != "Pow" else 1)
        # Inputs named so that sorted() in the reference gives A then B.
        ya = c.input(a, "a")
        yb = c.input(b, "b") if op in ("Add", "Div") else c.init(b, "b")
        c.output(c.node(op, [ya, yb], broadcast=1, axis=axis))
        c.ref = aligned(lambda x, y, fn=fn: fn(x, y).astype(x.dtype), axis, len(sa))
        out.append(c)
    for name, op, fn, a, b, axis in (
            ("equal_int64_axis1_2x3x4_by_3", "Equal", np.equal, rng.integers(0, 3, (2, 3, 4)).astype(np.int64),
             rng.integers(0, 3, (3,)).astype(np.int64), 1),
            ("less_axis0_3x4_by_3", "Less", np.less, f(3, 4), f(3), 0),
            ("greater_axis1_2x3x4_by_3x4", "Greater", np.greater, f(2, 3, 4), f(3, 4), 1),
            ("and_axis0_2x3_by_2", "And", np.logical_and, rng.random((2, 3)) < 0.5, rng.random(2) < 0.5, 0),
            ("xor_axis1_2x3x2_by_3", "Xor", np.logical_xor, rng.random((2, 3, 2)) < 0.5, rng.random(3) < 0.5, 1)):
        c = Case("legacy_%s_opset6" % name, opset=6)
        c.output(c.node(op, [c.input(a, "a"), c.input(b, "b")], broadcast=1, axis=axis))
        c.ref = aligned(fn, axis, a.ndim)
        out.append(c)

    # Gemm-6 with broadcast=1 (C broadcasts); PRelu-6 per channel;
    # BatchNormalization-6 in test mode: the reference evaluator.
    out.append(case("gemm_opset6_bcast_c_n_3x5_5x4", "Gemm", [f(3, 5)], 6, "evaluator",
                    consts=[f(5, 4), f(4)], broadcast=1, alpha=0.5, beta=2.0))
    out.append(case("gemm_opset6_c_full_transb_3x5_4x5", "Gemm", [f(3, 5)], 6, "evaluator",
                    consts=[f(4, 5), f(3, 4)], transB=1))
    out.append(case("prelu_opset6_slope_per_channel_2x3x4x5", "PRelu", [f(2, 3, 4, 5)], 6, "evaluator",
                    consts=[f(3)]))
    out.append(case("batchnorm_opset6_is_test_2x3x4x4", "BatchNormalization", [f(2, 3, 4, 4)], 6, "evaluator",
                    consts=[f(3), f(3), f(3), np.abs(f(3)) + 0.5], is_test=1, epsilon=1e-3))

    # Reshape-1 (shape attribute; 0 copies the input's dimension): NumPy.
    out.append(case("reshape_opset4_attr_2x3x4_to_0x4xm1", "Reshape", [f(2, 3, 4)], 4,
                    lambda d: [d["x1"].reshape(2, 4, -1)], shape=[0, 4, -1]))
    # Pad-2 attributes: onnxruntime; Pad-1's paddings: the reference evaluator.
    out.append(case("pad_opset2_constant_2x3x4", "Pad", [f(2, 3, 4)], 2, "ort", pads=[0, 1, 2, 1, 0, 3], value=1.5))
    out.append(case("pad_opset2_reflect_2x5x6", "Pad", [f(2, 5, 6)], 2, "ort", pads=[0, 2, 1, 0, 1, 3],
                    mode="reflect"))
    out.append(case("pad_opset2_edge_2x3x4", "Pad", [f(2, 3, 4)], 2, "ort", pads=[1, 0, 2, 0, 2, 1], mode="edge"))
    out.append(case("pad_opset1_paddings_3x4", "Pad", [f(3, 4)], 1, "evaluator", paddings=[1, 0, 2, 3], value=-1.0))
    # Split-2 (attribute): onnxruntime.
    out.append(case("split_opset2_attr_axis1_2x7", "Split", [f(2, 7)], 2, "ort", n_out=2, axis=1, split=[3, 4]))

    # Cast-1 (`to` a string), Concat-1 (axis default 1), Split-1 (split as
    # an input), Tile-1 (tiles and axis inputs), Upsample-1 (height_scale,
    # width_scale): NumPy, from the changelog's definitions.
    x = f(3, 4) * 10
    c = case("cast_opset5_string_to_int32_3x4", "Cast", [x], 5, lambda d: [d["x1"].astype(np.int32)], to="INT32")
    out.append(c)
    c = Case("legacy_concat_opset3_default_axis_2x2_2x3", opset=3)
    c.output(c.node("Concat", [c.input(f(2, 2), "a"), c.input(f(2, 3), "b")]))
    c.ref = lambda d: [np.concatenate([d["a"], d["b"]], axis=1)]
    out.append(c)
    c = Case("legacy_split_opset1_input_axis0_6x3", opset=1)
    y = c.node("Split", [c.input(f(6, 3), "x"), c.init(np.array([1, 5], np.int64), "split")], n_out=2, axis=0)
    c.output(*y)
    c.ref = lambda d: [d["x"][:1], d["x"][1:]]
    out.append(c)
    c = Case("legacy_tile_opset5_tiles3_axis1_2x3x2", opset=5)
    c.output(c.node("Tile", [c.input(f(2, 3, 2), "x"), c.init(np.array(3, np.int64), "tiles"),
                             c.init(np.array(1, np.int64), "axis")]))
    c.ref = lambda d: [np.tile(d["x"], (1, 3, 1))]
    out.append(c)
    c = Case("legacy_upsample_opset6_nearest_h2_w3_1x2x3x4", opset=6)
    c.output(c.node("Upsample", [c.input(f(1, 2, 3, 4), "x")], height_scale=2.0, width_scale=3.0))
    c.ref = lambda d: [np.repeat(np.repeat(d["x"], 2, axis=2), 3, axis=3)]
    out.append(c)

    # Other ops at their version 1, which opset 7 kept: onnxruntime or the evaluator.
    out.append(case("instancenorm_opset6_2x3x4x5", "InstanceNormalization", [f(2, 3, 4, 5)], 6, "ort",
                    consts=[f(3), f(3)], epsilon=1e-3))
    out.append(case("softmax_opset1_axis1_coerced_2x3x4", "Softmax", [f(2, 3, 4)], 1, "ort"))
    out.append(case("conv_opset1_k3_p1_1x2x6x6", "Conv", [f(1, 2, 6, 6)], 1, "ort",
                    consts=[f(4, 2, 3, 3), f(4)], pads=[1, 1, 1, 1]))
    out.append(case("maxpool_opset1_k2_s2_1x2x6x6", "MaxPool", [f(1, 2, 6, 6)], 1, "ort", kernel_shape=[2, 2],
                    strides=[2, 2]))
    out.append(case("globalaveragepool_opset1_2x3x4x5", "GlobalAveragePool", [f(2, 3, 4, 5)], 1, "ort"))
    out.append(case("transpose_opset1_2x3x4", "Transpose", [f(2, 3, 4)], 1, "ort", perm=[2, 0, 1]))
    out.append(case("slice_opset1_attrs_4x5", "Slice", [f(4, 5)], 1, "ort", starts=[1, 0], ends=[3, -1]))
    out.append(case("flatten_opset1_axis2_2x3x4", "Flatten", [f(2, 3, 4)], 1, "ort", axis=2))
    out.append(case("unsqueeze_opset1_axes02_3x4", "Unsqueeze", [f(3, 4)], 1, "ort", axes=[0, 2]))
    out.append(case("reducemean_opset1_axes1_2x3x4", "ReduceMean", [f(2, 3, 4)], 1, "ort", axes=[1]))
    return out


# ================================================================ quantization
# QuantizeLinear / DequantizeLinear per tensor, per axis and blocked, with
# ties to even and saturation; DynamicQuantizeLinear; the QOperator ops
# QLinearConv and QLinearMatMul (minirt rewrites them into the QDQ form at
# load); MatMulInteger and ConvInteger. 8-bit outputs of the quantizing ones
# may be one unit off (minirt-conformance's rule for models that quantize).

def quant_op_cases():
    out = []
    rng = np.random.default_rng(25)
    u8 = lambda *s: rng.integers(0, 256, size=s).astype(np.uint8)  # noqa: E731
    i8 = lambda *s: rng.integers(-128, 128, size=s).astype(np.int8)  # noqa: E731

    def ties(shape, scale):
        # Multiples of scale / 2 (ties), values past the int8/uint8 range, random values.
        k = rng.integers(-600, 600, size=shape)
        x = (k * (np.float32(scale) / 2)).astype(np.float32)
        return np.where(rng.random(shape) < 0.3, rng.uniform(-200, 200, size=shape) * np.float32(scale), x).astype(np.float32)

    # QuantizeLinear.
    x = ties((2, 3, 4, 5), 0.25)
    out.append(op_case("quantizelinear_u8_tensor", "QuantizeLinear", [x],
                       consts=[np.float32(0.25), np.uint8(128)]))
    out.append(op_case("quantizelinear_i8_tensor_zp", "QuantizeLinear", [x],
                       consts=[np.float32(0.25), np.int8(-3)]))
    out.append(op_case("quantizelinear_default_u8_opset10", "QuantizeLinear", [x], opset=10,
                       consts=[np.float32(0.25)]))
    s3 = np.array([0.25, 0.5, 0.125], np.float32)
    out.append(op_case("quantizelinear_i8_axis1", "QuantizeLinear", [x],
                       consts=[s3, np.array([0, 5, -7], np.int8)]))
    out.append(op_case("quantizelinear_u8_axis_neg1", "QuantizeLinear", [ties((2, 3, 4, 5), 0.5)], axis=-1,
                       consts=[np.array([0.5, 0.25, 1.0, 2.0, 0.75], np.float32), np.array([128, 0, 255, 7, 9], np.uint8)]))
    xb = ties((2, 6, 4), 0.5)
    sb = rng.uniform(0.1, 1.0, size=(2, 3, 4)).astype(np.float32)
    c = op_case("quantizelinear_i8_blocked_axis1", "QuantizeLinear", [xb], opset=21, axis=1, block_size=2,
                consts=[sb, rng.integers(-5, 5, size=(2, 3, 4)).astype(np.int8)])
    c.ref = "evaluator"
    out.append(c)
    # DequantizeLinear.
    out.append(op_case("dequantizelinear_u8_tensor", "DequantizeLinear", [u8(2, 3, 4, 5)],
                       consts=[np.float32(0.05), np.uint8(131)]))
    out.append(op_case("dequantizelinear_i8_axis0", "DequantizeLinear", [i8(4, 3, 3, 3)], axis=0,
                       consts=[rng.uniform(0.001, 0.1, size=4).astype(np.float32), i8(4)]))
    out.append(op_case("dequantizelinear_i32_tensor", "DequantizeLinear",
                       [rng.integers(-100000, 100000, size=(16,)).astype(np.int32)], consts=[np.float32(0.0007)]))
    c = op_case("dequantizelinear_u8_blocked_axis0", "DequantizeLinear", [u8(5, 3)], opset=21, axis=0, block_size=2,
                consts=[rng.uniform(0.01, 0.5, size=(3, 3)).astype(np.float32), u8(3, 3)])
    c.ref = "evaluator"
    out.append(c)
    # DynamicQuantizeLinear.
    out.append(op_case("dynamicquantizelinear_mixed", "DynamicQuantizeLinear", [rng.uniform(-3, 5, (3, 7)).astype(np.float32)],
                       opset=11, n_out=3))
    out.append(op_case("dynamicquantizelinear_positive", "DynamicQuantizeLinear",
                       [rng.uniform(0.5, 9, (2, 33)).astype(np.float32)], opset=11, n_out=3))

    # QLinearConv: uint8 data, int8 weights per output channel, int32 bias.
    def qconv(name, n, cin, m, hw, ks, stride, pads, group, per_channel, bias, w_u8=False):
        c = Case(name, opset=13)
        xs, xz = np.float32(0.02), np.uint8(120)
        ws = (rng.uniform(0.002, 0.02, size=m).astype(np.float32) if per_channel else np.float32(0.01))
        wz = (np.zeros(m, np.uint8 if w_u8 else np.int8) if per_channel else (np.uint8(128) if w_u8 else np.int8(0)))
        ys, yz = np.float32(0.05), np.uint8(100)
        w = u8(m, cin // group, ks, ks) if w_u8 else i8(m, cin // group, ks, ks)
        ins = [c.input(u8(n, cin, hw, hw)), c.init(xs), c.init(xz), c.init(w), c.init(ws), c.init(wz), c.init(ys), c.init(yz)]
        if bias:
            ins.append(c.init(rng.integers(-2000, 2000, size=m).astype(np.int32)))
        c.output(c.node("QLinearConv", ins, kernel_shape=[ks, ks], strides=[stride, stride], pads=pads, group=group))
        return c

    out.append(qconv("qlinearconv_3x3_perchannel_bias", 1, 8, 16, 9, 3, 1, [1, 1, 1, 1], 1, True, True))
    out.append(qconv("qlinearconv_3x3_s2_pertensor", 1, 4, 8, 10, 3, 2, [0, 0, 1, 1], 1, False, False))
    out.append(qconv("qlinearconv_depthwise_bias", 2, 8, 8, 7, 3, 1, [1, 1, 1, 1], 8, True, True))
    out.append(qconv("qlinearconv_1x1_u8_weights", 1, 16, 8, 5, 1, 1, [0, 0, 0, 0], 1, False, True, w_u8=True))

    # QLinearMatMul: a per tensor, b per column.
    def qmatmul(name, sa, sb, per_column, signed=False, opset=13):
        c = Case(name, opset=opset)
        q = i8 if signed else u8
        zt = np.int8 if signed else np.uint8
        n = sb[-1]
        bs = rng.uniform(0.005, 0.05, size=n).astype(np.float32) if per_column else np.float32(0.02)
        bz = np.array(rng.integers(-3 if signed else 120, 3 if signed else 136, size=n), zt) if per_column else zt(5)
        ins = [c.input(q(*sa)), c.init(np.float32(0.03)), c.init(zt(4)), c.init(q(*sb)), c.init(bs), c.init(bz),
               c.init(np.float32(0.4)), c.init(zt(10))]
        c.output(c.node("QLinearMatMul", ins))
        return c

    out.append(qmatmul("qlinearmatmul_2d_u8", (4, 24), (24, 6), False))
    out.append(qmatmul("qlinearmatmul_3d_i8_percolumn", (2, 3, 16), (16, 5), True, signed=True, opset=21))

    # MatMulInteger and ConvInteger (int32 results: exact).
    c = op_case("matmulinteger_u8_i8_zp", "MatMulInteger", [u8(3, 20)], opset=10, consts=[i8(20, 7), np.uint8(7), np.int8(-2)])
    out.append(c)
    # Per-row and per-column zero points: onnxruntime takes scalars only, so
    # NumPy spells out the spec (a's zero point per row, b's per column).
    c = op_case("matmulinteger_batched_per_row_column", "MatMulInteger", [u8(2, 4, 9), u8(2, 9, 3)], opset=10,
                consts=[u8(4), u8(3)])
    names = [n for n, _ in c.inputs] + [n for n, _ in c.inits]
    c.ref = lambda f, names=names: [np.matmul(f[names[0]].astype(np.int32) - f[names[2]].astype(np.int32)[:, None],
                                              f[names[1]].astype(np.int32) - f[names[3]].astype(np.int32))]
    out.append(c)
    out.append(op_case("convinteger_3x3_pads_stride", "ConvInteger", [u8(1, 3, 8, 8)], opset=10,
                       consts=[u8(4, 3, 3, 3), np.uint8(100), np.uint8(127)], pads=[1, 1, 1, 1], strides=[2, 2]))
    out.append(op_case("convinteger_1d_i8", "ConvInteger", [i8(2, 4, 11)], opset=10,
                       consts=[i8(6, 4, 3)], dilations=[2]))
    out.append(op_case("convinteger_groups_s2_pads", "ConvInteger", [u8(2, 6, 9, 10)], opset=10,
                       consts=[u8(4, 3, 3, 3), np.uint8(3), np.uint8(250)], group=2, strides=[2, 2],
                       pads=[1, 0, 2, 1]))
    out.append(op_case("convinteger_3d_k2", "ConvInteger", [u8(1, 2, 4, 5, 6)], opset=10,
                       consts=[u8(3, 2, 2, 2, 2), np.uint8(77)]))
    out.append(op_case("matmulinteger_s8_s8_k70", "MatMulInteger", [i8(5, 70)], opset=10,
                       consts=[i8(70, 33), np.int8(-9), np.int8(4)]))

    # onnxruntime's com.microsoft quantized ops (its contrib-op semantics).
    def contrib(name, op, data, params, n_out=1, out_types=None, **attrs):
        """data: the quantized graph inputs; params: the initializers after
        them, in the op's input order with None for a left-out input; a data
        array in params marks where the inputs go (by identity)."""
        c = Case(name, opset=13)
        ins = [c.input(a) for a in data]
        it = iter(ins)
        names = []
        for p in params:
            if p is None:
                names.append("")
            elif isinstance(p, str) and p == "in":
                names.append(next(it))
            else:
                names.append(c.init(p))
        c.output(c.node(op, names, domain="com.microsoft", **attrs))
        if out_types:
            c.out_types = {c.outputs[0]: out_types}
        return c

    f32 = np.float32
    a, b = u8(2, 3, 4, 5), u8(1, 3, 1, 5)
    out.append(contrib("qlinearadd_u8_broadcast", "QLinearAdd", [a, b],
                       ["in", f32(0.03), np.uint8(120), "in", f32(0.05), np.uint8(130), f32(0.06), np.uint8(128)]))
    out.append(contrib("qlinearmul_i8", "QLinearMul", [i8(3, 8), i8(3, 8)],
                       ["in", f32(0.04), np.int8(3), "in", f32(0.02), np.int8(-4), f32(0.03), np.int8(0)]))
    out.append(contrib("qlinearglobalaveragepool_u8", "QLinearGlobalAveragePool", [u8(2, 8, 7, 7)],
                       ["in", f32(0.05), np.uint8(100), f32(0.02), np.uint8(90)]))
    out.append(contrib("qlinearaveragepool_k3s2_pads", "QLinearAveragePool", [u8(1, 4, 9, 9)],
                       ["in", f32(0.05), np.uint8(100), f32(0.04), np.uint8(110)], kernel_shape=[3, 3],
                       strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1))
    out.append(contrib("qlinearsigmoid_u8", "QLinearSigmoid", [u8(4, 16)],
                       ["in", f32(0.05), np.uint8(128), f32(1.0 / 256), np.uint8(0)]))
    out.append(contrib("qlinearleakyrelu_i8", "QLinearLeakyRelu", [i8(4, 16)],
                       ["in", f32(0.05), np.int8(-5), f32(0.04), np.int8(10)], alpha=0.1))
    out.append(contrib("qlinearsoftmax_u8_opset13", "QLinearSoftmax", [u8(3, 10)],
                       ["in", f32(0.1), np.uint8(128), f32(1.0 / 256), np.uint8(0)], axis=-1, opset=13))
    out.append(contrib("qlinearconcat_u8_axis1", "QLinearConcat", [u8(1, 2, 3, 3), u8(1, 5, 3, 3)],
                       [f32(0.05), np.uint8(120), "in", f32(0.04), np.uint8(100), "in", f32(0.06), np.uint8(130)],
                       axis=1))
    k, m, n = 24, 3, 6
    out.append(contrib("qgemm_u8_bias_quantized", "QGemm", [u8(m, k)],
                       ["in", f32(0.02), np.uint8(110), i8(k, n), f32(0.01), np.int8(0),
                        rng.integers(-500, 500, size=n).astype(np.int32), f32(0.2), np.uint8(128)]))
    out.append(contrib("qgemm_u8_transb_float_out", "QGemm", [u8(m, k)],
                       ["in", f32(0.02), np.uint8(110), i8(n, k), f32(0.01), np.int8(0)], transB=1,
                       out_types=TensorProto.FLOAT))
    return out


# ---------------------------------------------------------------------------
# Ops the GPU table (kernels/cuda/README.md) names that no family above covers, so that the
# CPU/CUDA support matrix (minirt-support-matrix, ctest
# conformance.gpu_support_matrix) has a case of each, and the GPU run of the
# op cases (minirt-conformance --device cuda --reference cpu) tries them.

def gpu_table_cases():
    out = []
    for size in (3, 5):  # onnxruntime takes odd sizes only
        c = Case("lrn_size%d_2x8x5x6" % size)
        c.output(c.node("LRN", [c.input(c.uniform([2, 8, 5, 6], -3, 3))], size=size, alpha=1e-3, beta=0.75,
                        bias=2.0))
        out.append(c)
    for opset, shape, axis in ((13, [3, 4, 5], -1), (13, [2, 3, 4, 6], 1), (11, [2, 3, 4, 6], 1)):
        c = Case("logsoftmax_opset%d_axis%d_%s" % (opset, axis, shp(shape)), opset=opset)
        c.output(c.node("LogSoftmax", [c.input(c.uniform(shape, -4, 4))], axis=axis))
        out.append(c)
    c = Case("hardswish_2x3x9x7", opset=14)
    c.output(c.node("HardSwish", [c.input(c.uniform([2, 3, 9, 7], -5, 5))]))
    out.append(c)
    # Removed by the planner before placement: on no backend at all.
    c = Case("identity_3x4x5")
    c.output(c.node("Identity", [c.input(c.uniform([3, 4, 5]))]))
    out.append(c)
    c = Case("dropout_nomask_opset13_3x4x5")
    c.output(c.node("Dropout", [c.input(c.uniform([3, 4, 5]))]))
    out.append(c)
    return out


FAMILIES = [conv_cases, convt_cases, pool_cases, resize_cases, linalg_cases, elementwise_cases, shape_cases,
            newer_op_cases, detector_op_cases, legacy_opset_cases, quant_op_cases, gpu_table_cases]


def all_cases():
    cases = []
    for fam in FAMILIES:
        cases.extend(c for c in fam() if c is not None)
    names = [c.name for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SystemExit("make_op_cases: duplicate case names: " + ", ".join(sorted(dup)))
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="folder to write the cases into (its old contents are replaced)")
    ap.add_argument("--filter", default="", help="only cases whose name contains this text")
    ap.add_argument("--list", action="store_true", help="print the case names and exit")
    args = ap.parse_args()
    cases = [c for c in all_cases() if args.filter in c.name]
    if args.list:
        for c in cases:
            print(c.name)
        print("%d cases" % len(cases), file=sys.stderr)
        return
    if not args.out:
        ap.error("--out is required")
    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    for c in cases:
        try:
            write_case(c, args.out)
        except Exception as e:  # say which case, then stop
            raise SystemExit("make_op_cases: case %s: %s" % (c.name, e))
    print("make_op_cases: wrote %d cases to %s" % (len(cases), args.out))


if __name__ == "__main__":
    main()

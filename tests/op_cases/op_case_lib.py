"""The op cases' building blocks, shared by the case families (cases_*.py)
and make_op_cases.py: Case (one model, its inputs and who computes its
reference), reference(), write_case(), op_case() (a one-node case) and small
shape helpers. See make_op_cases.py for what the cases are and how they run.

Test tooling only.
"""

import os

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

def shp(s):
    return "x".join(map(str, s)) if s else "s"

def op_case(name, op, inputs, opset=13, n_out=1, consts=(), **attrs):
    """One node: `inputs` are data arrays (graph inputs), then `consts`
    (initializers; None leaves an optional input out)."""
    c = Case(name, opset=opset)
    ins = [c.input(a) for a in inputs] + ["" if k is None else c.init(k) for k in consts]
    y = c.node(op, ins, n_out=n_out, **attrs)
    c.output(*(y if isinstance(y, list) else [y]))
    return c

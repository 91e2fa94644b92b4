#!/usr/bin/env python3
"""Makes ONNX backend-test folders with onnxruntime's outputs as the reference.

    make_reference.py --out DIR [--batch N] [--seed S] [--shape NAME=1x3x48x192] MODEL.onnx...

For each MODEL.onnx this writes

    DIR/<stem>/model.onnx                      a copy of the model
    DIR/<stem>/test_data_set_0/input_K.pb      deterministic random input (uniform [0, 1), seeded)
    DIR/<stem>/test_data_set_0/output_K.pb     onnxruntime's outputs (CPUExecutionProvider)

which `minirt-conformance DIR` then runs. With --convert-opset N the folder is
DIR/<stem>_opsetN and its model.onnx is the model converted to default-domain
opset N by onnx.version_converter (ONNX's own tool), while the outputs stay
onnxruntime's on the original: minirt's reading of the older versions is
checked against the model as exported. With --batch N (N > 1) the folder is
DIR/<stem>_batchN and the first dimension of every input, which must be
symbolic, is N. Other symbolic dimensions are 1 unless --shape gives the
input's whole shape. Reference outputs come from onnxruntime only, never
from minirt (see models/README.md). Test tooling: needs onnx, onnxruntime and
numpy (tools/setup.sh --venv).
"""

import argparse
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

# An output whose largest magnitude is outside this range is reported as a
# broken model (random weights that blew up or died out), not compared.
SANE_MAX_ABS = (1e-4, 1e4)


def parse_shape(text):
    name, sep, dims = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"--shape wants NAME=DxDx..., got '{text}'")
    try:
        shape = [int(d) for d in dims.lower().split("x")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shape wants NAME=DxDx..., got '{text}'") from None
    if any(d <= 0 for d in shape):
        raise argparse.ArgumentTypeError(f"--shape dimensions must be positive, got '{text}'")
    return name, shape


def graph_inputs(model):
    """The inputs a caller feeds: graph inputs that are not initializers (IR < 4 lists both)."""
    inits = {t.name for t in model.graph.initializer}
    return [v for v in model.graph.input if v.name not in inits]


def input_shape(value, batch, shapes, path):
    if value.name in shapes:
        return shapes[value.name]
    tt = value.type.tensor_type
    if not tt.HasField("shape"):
        sys.exit(f"{path}: input '{value.name}' has no shape; give it with --shape {value.name}=...")
    dims = []
    for i, d in enumerate(tt.shape.dim):
        fixed = d.HasField("dim_value") and d.dim_value > 0
        if i == 0 and batch != 1:
            if fixed:
                sys.exit(f"{path}: input '{value.name}' has a fixed first dimension {d.dim_value}; "
                         f"--batch {batch} needs a symbolic one")
            dims.append(batch)
        else:
            dims.append(d.dim_value if fixed else 1)
    return dims


def random_input(rng, value, shape, path):
    elem = value.type.tensor_type.elem_type
    dtype = onnx.helper.tensor_dtype_to_np_dtype(elem)
    if dtype == np.float32 or dtype == np.float64 or dtype == np.float16:
        return rng.random(shape, dtype=np.float64).astype(dtype)
    sys.exit(f"{path}: input '{value.name}' has type {onnx.TensorProto.DataType.Name(elem)}; "
             "only float inputs get random data")


def write_tensor(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def make_case(model_path, out_dir, batch, seed, shapes, threads, convert_opset=None):
    model = onnx.load(model_path)
    stem = os.path.splitext(os.path.basename(model_path))[0]
    if convert_opset is not None:
        stem += f"_opset{convert_opset}"
    case = os.path.join(out_dir, stem if batch == 1 else f"{stem}_batch{batch}")
    data = os.path.join(case, "test_data_set_0")
    if os.path.isdir(case):
        shutil.rmtree(case)
    os.makedirs(data)
    if convert_opset is None:
        shutil.copyfile(model_path, os.path.join(case, "model.onnx"))
    else:
        from onnx import shape_inference, version_converter
        converted = version_converter.convert_version(shape_inference.infer_shapes(model), convert_opset)
        onnx.save(converted, os.path.join(case, "model.onnx"))

    rng = np.random.default_rng(seed)
    feeds = {}
    for k, value in enumerate(graph_inputs(model)):
        x = random_input(rng, value, input_shape(value, batch, shapes, model_path), model_path)
        feeds[value.name] = x
        write_tensor(os.path.join(data, f"input_{k}.pb"), x, value.name)

    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = threads
    # The graph exactly as written (no onnxruntime fusions such as its own
    # Conv+BatchNormalization folding), so minirt's passes are checked
    # against the unfolded arithmetic.
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    outputs = sess.run(names, feeds)

    problems = []
    for k, (name, y) in enumerate(zip(names, outputs)):
        write_tensor(os.path.join(data, f"output_{k}.pb"), y, name)
        if np.issubdtype(y.dtype, np.floating) and y.size:
            if not np.all(np.isfinite(y)):
                problems.append(f"output '{name}' has non-finite values")
            else:
                m = float(np.max(np.abs(y)))
                if not SANE_MAX_ABS[0] <= m <= SANE_MAX_ABS[1]:
                    problems.append(f"output '{name}' has max |y| = {m:g}, outside [{SANE_MAX_ABS[0]:g}, {SANE_MAX_ABS[1]:g}]")
    shapes_text = ", ".join(f"{n} {'x'.join(map(str, v.shape))}" for n, v in feeds.items())
    stats = ", ".join(f"{n}: std {float(np.std(y.astype(np.float64))):.3g}, max|y| {float(np.max(np.abs(y))):.3g}"
                      for n, y in zip(names, outputs) if np.issubdtype(y.dtype, np.floating) and y.size)
    print(f"{case}: {shapes_text} -> {stats}")
    for p in problems:
        print(f"{case}: {p}", file=sys.stderr)
    return not problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for the test cases")
    ap.add_argument("--batch", type=int, default=1, help="first dimension of every input (must be symbolic when > 1)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    ap.add_argument("--shape", type=parse_shape, action="append", default=[],
                    help="NAME=DxDx...: the whole shape of input NAME (repeatable)")
    ap.add_argument("--threads", type=int, default=2, help="onnxruntime intra-op threads (default 2)")
    ap.add_argument("--convert-opset", type=int, default=None, metavar="N",
                    help="write the model converted to opset N (onnx.version_converter); outputs of the original")
    ap.add_argument("models", nargs="+", metavar="MODEL.onnx")
    args = ap.parse_args()
    if args.batch < 1:
        ap.error("--batch must be at least 1")
    shapes = dict(args.shape)
    ok = True
    for m in args.models:
        if not os.path.isfile(m):
            sys.exit(f"make_reference.py: {m}: no such file")
        ok = make_case(m, args.out, args.batch, args.seed, shapes, args.threads, args.convert_opset) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

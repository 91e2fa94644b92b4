"""Writes the fuzzers' seed corpora (small, valid inputs the fuzzers mutate).

  .venv/bin/python tests/fuzz/make_seeds.py

seeds_model/: tiny ONNX models covering the loader's paths (raw and typed
data, Constant nodes, symbolic dims, initializers listed as inputs, old and
new opsets (down to 1), shape chains, float16). seeds_inputs/: byte strings for fuzz_inputs
(3 dimension bytes, then float32 values).
"""
import os
import struct

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def save(model, name):
    os.makedirs(os.path.join(HERE, "seeds_model"), exist_ok=True)
    with open(os.path.join(HERE, "seeds_model", name), "wb") as f:
        f.write(model.SerializeToString())


def w(name, shape, seed=0):
    return numpy_helper.from_array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32), name)


def main():
    x4 = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
         helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"], name="bn"),
         helper.make_node("Relu", ["n"], ["r"], name="relu"),
         helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
         helper.make_node("GlobalAveragePool", ["p"], ["g"], name="gap"),
         helper.make_node("Flatten", ["g"], ["f"], name="flat"),
         helper.make_node("Gemm", ["f", "fc"], ["l"], transB=1, name="fc"),
         helper.make_node("Softmax", ["l"], ["y"], name="softmax")],
        "cnn", [x4], [y],
        [w("w", (4, 3, 3, 3)), w("b", (4,), 1), numpy_helper.from_array(np.ones(4, np.float32), "s"),
         w("bb", (4,), 2), w("m", (4,), 3), numpy_helper.from_array(np.ones(4, np.float32), "v"), w("fc", (5, 4), 4)])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "cnn_opset13.onnx")
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)], ir_version=4), "cnn_opset9.onnx")

    # PyTorch-style flatten through a Shape chain, Constant nodes, Slice, Concat, Resize.
    xs = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2, 4, 4])
    nodes = [
        helper.make_node("Constant", [], ["zero"], value=helper.make_tensor("z", TensorProto.INT64, [1], [0])),
        helper.make_node("Constant", [], ["m1"], value=helper.make_tensor("m", TensorProto.INT64, [1], [-1])),
        helper.make_node("Constant", [], ["sc"], value=helper.make_tensor("s", TensorProto.FLOAT, [4], [1, 1, 2, 2])),
        helper.make_node("Resize", ["x", "", "sc"], ["u"], mode="nearest"),
        helper.make_node("Shape", ["u"], ["sh"]),
        helper.make_node("Gather", ["sh", "zero"], ["n"]),
        helper.make_node("Concat", ["n", "m1"], ["t"], axis=0),
        helper.make_node("Reshape", ["u", "t"], ["f"]),
        helper.make_node("Slice", ["f", "zero", "m1", "m1"], ["y"]),
    ]
    g2 = helper.make_graph(nodes, "chain", [xs], [y])
    save(helper.make_model(g2, opset_imports=[helper.make_opsetid("", 13)]), "shape_chain.onnx")

    # IR 3: typed float_data, initializers also listed as inputs, Clip/Pad as attributes.
    wt = helper.make_tensor("w", TensorProto.FLOAT, [2, 1, 3, 3], list(np.linspace(-1, 1, 18)))
    g3 = helper.make_graph(
        [helper.make_node("Pad", ["x"], ["p"], pads=[0, 0, 1, 1, 0, 0, 1, 1], mode="reflect"),
         helper.make_node("Conv", ["p", "w"], ["c"], group=1),
         helper.make_node("Clip", ["c"], ["y"], min=0.0, max=6.0)],
        "old", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 5, 5]),
                helper.make_tensor_value_info("w", TensorProto.FLOAT, [2, 1, 3, 3])], [y], [wt])
    save(helper.make_model(g3, opset_imports=[helper.make_opsetid("", 7)], ir_version=3), "ir3_opset7.onnx")

    # Opsets 1 and 6: broadcast/axis (B a graph input, so an Unsqueeze goes
    # in front of it when planning), a C x 1 x 1 bias, Gemm's broadcast,
    # BatchNormalization is_test, Reshape-1, Cast-1, Pad-1, Concat-1.
    g6 = helper.make_graph(
        [helper.make_node("Add", ["x", "b"], ["a"], broadcast=1, axis=1),
         helper.make_node("Mul", ["a", "c"], ["m"], broadcast=1),
         helper.make_node("BatchNormalization", ["m", "s", "s", "z", "s"], ["n"], is_test=1),
         helper.make_node("Flatten", ["n"], ["f"]),
         helper.make_node("Gemm", ["f", "fc", "fb"], ["y"], broadcast=1, transB=1)],
        "legacy6", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 3]),
                    helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 3])], [y],
        [w("c", [2, 1, 1]), w("s", [2], 1), numpy_helper.from_array(np.zeros(2, np.float32), "z"),
         w("fc", [4, 18], 2), w("fb", [4], 3)])
    save(helper.make_model(g6, opset_imports=[helper.make_opsetid("", 6)], ir_version=3), "legacy_opset6.onnx")
    g1 = helper.make_graph(
        [helper.make_node("Reshape", ["x"], ["r"], shape=[2, -1]),
         helper.make_node("Pad", ["r"], ["p"], paddings=[0, 1, 0, 2], value=0.5),
         helper.make_node("Concat", ["p", "p"], ["c"]),
         helper.make_node("Cast", ["c"], ["y"], to="INT32")],
        "legacy1", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3])], [y])
    save(helper.make_model(g1, opset_imports=[helper.make_opsetid("", 1)], ir_version=3), "legacy_opset1.onnx")

    # Elementwise broadcasting, Transpose, Split, Concat, ReduceMean, MatMul.
    g4 = helper.make_graph(
        [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
         helper.make_node("Split", ["t"], ["a", "b"], axis=1),
         helper.make_node("Mul", ["a", "b"], ["m"]),
         helper.make_node("Concat", ["m", "a"], ["c"], axis=2),
         helper.make_node("ReduceMean", ["c"], ["r"], axes=[2], keepdims=1),
         helper.make_node("MatMul", ["c", "k"], ["y"])],
        "misc", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])], [y], [w("k", (6, 2), 5)])
    save(helper.make_model(g4, opset_imports=[helper.make_opsetid("", 11)]), "misc_opset11.onnx")

    # The detector ops: GridSample, the scatters (run-time indices), OneHot,
    # Trilu, Hardmax, LpNormalization.
    grid = numpy_helper.from_array(np.random.default_rng(3).uniform(-1.2, 1.2, (1, 3, 3, 2)).astype(np.float32), "grid")
    g5 = helper.make_graph(
        [helper.make_node("GridSample", ["x", "grid"], ["gs"], mode="bilinear", padding_mode="reflection"),
         helper.make_node("Reshape", ["gs", "shape"], ["m"]),
         helper.make_node("ScatterElements", ["m", "ie", "ue"], ["se"], axis=1, reduction="add"),
         helper.make_node("ScatterND", ["se", "ind", "und"], ["sn"]),
         helper.make_node("Trilu", ["sn", "k"], ["tr"], upper=0),
         helper.make_node("Hardmax", ["tr"], ["hm"], axis=1),
         helper.make_node("LpNormalization", ["tr"], ["ln"], axis=0, p=1),
         helper.make_node("Add", ["hm", "ln"], ["s"]),
         helper.make_node("OneHot", ["ie", "depth", "vals"], ["oh"], axis=-1),
         helper.make_node("ReduceSum", ["oh"], ["ohs"], keepdims=0),
         helper.make_node("Mul", ["s", "ohs"], ["y"])],
        "detector",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4]),
         helper.make_tensor_value_info("ie", TensorProto.INT64, [2, 3]),
         helper.make_tensor_value_info("ind", TensorProto.INT64, [2, 1])],
        [y],
        [grid, numpy_helper.from_array(np.array([2, 9], np.int64), "shape"), w("ue", (2, 3), 6), w("und", (2, 9), 7),
         numpy_helper.from_array(np.array(1, np.int64), "k"), numpy_helper.from_array(np.array(9, np.int64), "depth"),
         numpy_helper.from_array(np.array([0.0, 1.0], np.float32), "vals")])
    save(helper.make_model(g5, opset_imports=[helper.make_opsetid("", 18)]), "detector_opset18.onnx")

    # Resize-19 antialias and tf_crop_and_resize, Pad-19 wrap, and a Range
    # whose limit is computed from an input's value.
    g6 = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "scales"], ["aa"], mode="cubic", antialias=1, exclude_outside=1),
         helper.make_node("Resize", ["aa", "roi", "", "sizes"], ["cr"], mode="linear",
                          coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=0.5),
         helper.make_node("Pad", ["cr", "pads"], ["y"], mode="wrap"),
         helper.make_node("Add", ["n", "one"], ["lim"]),
         helper.make_node("Range", ["zero", "lim", "one"], ["ids"])],
        "resample",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8, 10]),
         helper.make_tensor_value_info("n", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 8, 10]),
         helper.make_tensor_value_info("ids", TensorProto.INT64, ["L"])],
        [numpy_helper.from_array(np.array([1, 1, 0.5, 0.6], np.float32), "scales"),
         numpy_helper.from_array(np.array([0, 0, 0.1, -0.2, 1, 1, 0.9, 1.1], np.float32), "roi"),
         numpy_helper.from_array(np.array([1, 2, 5, 7], np.int64), "sizes"),
         numpy_helper.from_array(np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64), "pads"),
         numpy_helper.from_array(np.array(1, np.int64), "one"), numpy_helper.from_array(np.array(0, np.int64), "zero")])
    save(helper.make_model(g6, opset_imports=[helper.make_opsetid("", 19)]), "resample_opset19.onnx")

    # Value-sized ops (the model runs in stages cut at them): scores computed
    # from an input, NonMaxSuppression, the kept boxes gathered; NonZero of a
    # mask and a Reshape whose shape comes from its count; Unique along an axis;
    # IsNaN and IsInf; Compress of the boxes by a constant condition.
    g7 = helper.make_graph(
        [helper.make_node("Sigmoid", ["logits"], ["sg"]),
         helper.make_node("Transpose", ["sg"], ["scores"], perm=[0, 2, 1]),
         helper.make_node("NonMaxSuppression", ["boxes", "scores", "maxk", "iou", "thr"], ["keep"],
                          center_point_box=1, name="nms"),
         helper.make_node("Gather", ["keep", "two"], ["bi"], axis=1),
         helper.make_node("Reshape", ["boxes", "flat"], ["fb"]),
         helper.make_node("Gather", ["fb", "bi"], ["picked"], axis=0),
         helper.make_node("Greater", ["logits", "half"], ["mask"]),
         helper.make_node("NonZero", ["mask"], ["nz"], name="nonzero"),
         helper.make_node("Shape", ["nz"], ["nzs"]),
         helper.make_node("Reshape", ["nz", "nzs"], ["pos"]),
         helper.make_node("Unique", ["mask"], ["uq", "uqi", "uqinv", "uqc"], axis=1, sorted=0, name="unique"),
         helper.make_node("IsNaN", ["logits"], ["nan"]),
         helper.make_node("Not", ["nan"], ["finite"]),
         helper.make_node("Compress", ["boxes", "rowsel"], ["kept"], axis=1, name="compress"),
         helper.make_node("IsInf", ["kept"], ["inf"], detect_negative=0)],
        "value_sized",
        [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 6, 4]),
         helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 6, 2])],
        [helper.make_tensor_value_info("picked", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("pos", TensorProto.INT64, None),
         helper.make_tensor_value_info("uqinv", TensorProto.INT64, None),
         helper.make_tensor_value_info("finite", TensorProto.BOOL, None),
         helper.make_tensor_value_info("inf", TensorProto.BOOL, None)],
        [numpy_helper.from_array(np.array([3], np.int64), "maxk"),
         numpy_helper.from_array(np.array([0.5], np.float32), "iou"),
         numpy_helper.from_array(np.array([0.1], np.float32), "thr"),
         numpy_helper.from_array(np.array(2, np.int64), "two"),
         numpy_helper.from_array(np.array([-1, 4], np.int64), "flat"),
         numpy_helper.from_array(np.array(0.5, np.float32), "half"),
         numpy_helper.from_array(np.array([True, False, True, True, False, True]), "rowsel")])
    save(helper.make_model(g7, opset_imports=[helper.make_opsetid("", 13)]), "value_sized.onnx")

    # 3-D: Conv with a residual Add and Relu, MaxPool and AveragePool with
    # uneven pads and ceil_mode, ConvTranspose, and a 1-D LpPool.
    g8 = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1, 1, 1], name="conv3d"),
         helper.make_node("Add", ["c", "x"], ["r"]),
         helper.make_node("Relu", ["r"], ["a"]),
         helper.make_node("MaxPool", ["a"], ["m"], kernel_shape=[2, 3, 2], strides=[2, 2, 1],
                          pads=[0, 1, 0, 1, 0, 1], ceil_mode=1),
         helper.make_node("AveragePool", ["m"], ["p"], kernel_shape=[1, 2, 2], pads=[0, 0, 1, 0, 1, 0],
                          count_include_pad=1),
         helper.make_node("ConvTranspose", ["p", "wt"], ["y"], strides=[1, 2, 2], name="convt3d"),
         helper.make_node("LpPool", ["s"], ["l"], kernel_shape=[3], strides=[2], pads=[1, 0], p=2)],
        "three_d",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 6, 5]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 3, 9])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("l", TensorProto.FLOAT, None)],
        [w("w", (2, 2, 3, 3, 3), 8), w("wt", (2, 3, 1, 2, 2), 9)])
    save(helper.make_model(g8, opset_imports=[helper.make_opsetid("", 18)]), "three_d.onnx")

    # Two-stage detector heads: RoiAlign of regions over a feature map (avg
    # and max, both coordinate modes), GatherND with batch_dims.
    g9 = helper.make_graph(
        [helper.make_node("RoiAlign", ["feat", "rois", "bidx"], ["pooled"], output_height=3, output_width=2,
                          sampling_ratio=0, spatial_scale=0.5, name="roialign"),
         helper.make_node("RoiAlign", ["feat", "rois", "bidx"], ["pooled_max"], mode="max",
                          coordinate_transformation_mode="output_half_pixel", sampling_ratio=2, name="roialign_max"),
         helper.make_node("GatherND", ["feat", "nd"], ["picked"], batch_dims=1, name="gathernd")],
        "heads",
        [helper.make_tensor_value_info("feat", TensorProto.FLOAT, [2, 3, 8, 8]),
         helper.make_tensor_value_info("rois", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("pooled_max", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("picked", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([0, 1, 1], np.int64), "bidx"),
         numpy_helper.from_array(np.array([[1, 2], [0, -1]], np.int64), "nd")])
    save(helper.make_model(g9, opset_imports=[helper.make_opsetid("", 16)]), "heads.onnx")

    # float16: a half input and output, a half weight in raw_data, a half
    # Constant in int32_data (16-bit patterns), a Cast to float16 and back.
    h = helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 2, 4, 4])
    hw = numpy_helper.from_array(np.random.default_rng(6).standard_normal((2, 2, 3, 3)).astype(np.float16), "w")
    hc = helper.make_tensor("c", TensorProto.FLOAT16, [1], np.array([0.5], np.float16).view(np.uint16).tolist())
    g6 = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c1"], pads=[1, 1, 1, 1], name="conv"),
         helper.make_node("Constant", [], ["k"], value=hc, name="half_const"),
         helper.make_node("Mul", ["c1", "k"], ["m"], name="mul"),
         helper.make_node("Cast", ["m"], ["m32"], to=TensorProto.FLOAT, name="to32"),
         helper.make_node("Sigmoid", ["m32"], ["s"], name="sigmoid"),
         helper.make_node("Cast", ["s"], ["y"], to=TensorProto.FLOAT16, name="to16")],
        "half", [h], [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)], [hw])
    save(helper.make_model(g6, opset_imports=[helper.make_opsetid("", 13)]), "float16.onnx")

    # Quantized (issue 25): QDQ around a Conv with per-channel int8 weights,
    # a QLinearConv, onnxruntime's com.microsoft QLinearAdd, uint8 straight
    # into MaxPool; DynamicQuantizeLinear into MatMulInteger.
    q = lambda name, a: numpy_helper.from_array(np.asarray(a), name)  # noqa: E731
    rng = np.random.default_rng(8)
    xq = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])
    g7 = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="quant"),
         helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dequant"),
         helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], axis=0, name="dequant_w"),
         helper.make_node("Conv", ["xd", "wd"], ["c"], pads=[1, 1, 1, 1], name="conv"),
         helper.make_node("QuantizeLinear", ["c", "cs", "cz"], ["cq"], name="quant_c"),
         helper.make_node("QLinearConv", ["cq", "cs", "cz", "w2", "w2s", "w2z", "ys", "yz", "b2"], ["d"],
                          pads=[1, 1, 1, 1], name="qconv"),
         helper.make_node("QLinearAdd", ["d", "ys", "yz", "cq", "cs", "cz", "ys", "yz"], ["e"], name="qadd",
                          domain="com.microsoft"),
         helper.make_node("MaxPool", ["e"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
         helper.make_node("DequantizeLinear", ["p", "ys", "yz"], ["y"], name="out"),
         helper.make_node("DynamicQuantizeLinear", ["x"], ["dq", "dqs", "dqz"], name="dyn"),
         helper.make_node("Reshape", ["dq", "shape"], ["dq2"], name="flat"),
         helper.make_node("MatMulInteger", ["dq2", "mb", "dqz"], ["mm"], name="mmi")],
        "quantized", [xq], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                            helper.make_tensor_value_info("mm", TensorProto.INT32, None)],
        [q("xs", np.float32(0.02)), q("xz", np.uint8(128)),
         q("wq", rng.integers(-127, 127, (3, 2, 3, 3)).astype(np.int8)), q("ws", np.full(3, 0.01, np.float32)),
         q("wz", np.zeros(3, np.int8)), q("cs", np.float32(0.05)), q("cz", np.uint8(100)),
         q("w2", rng.integers(-127, 127, (3, 3, 3, 3)).astype(np.int8)), q("w2s", np.float32(0.01)),
         q("w2z", np.int8(0)), q("ys", np.float32(0.1)), q("yz", np.uint8(90)),
         q("b2", rng.integers(-100, 100, 3).astype(np.int32)), q("shape", np.array([12, 6], np.int64)),
         q("mb", rng.integers(0, 255, (6, 4)).astype(np.uint8))])
    save(helper.make_model(g7, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)]),
         "quantized.onnx")

    os.makedirs(os.path.join(HERE, "seeds_inputs"), exist_ok=True)
    rng = np.random.default_rng(0)
    for i, dims in enumerate([(1, 8, 8), (2, 5, 7), (0, 3, 3), (1, 1, 1), (3, 15, 2)]):
        vals = rng.standard_normal(dims[0] * 3 * dims[1] * dims[2]).astype(np.float32)
        if i == 3:
            vals[:] = np.float32("nan")
        with open(os.path.join(HERE, "seeds_inputs", f"seed{i}"), "wb") as f:
            f.write(bytes(dims) + vals.tobytes())


if __name__ == "__main__":
    main()

"""The matrix product, elementwise, shape and newer-op (comparisons, Where, TopK, activations,
normalizations, reductions, ...) op cases.

Test tooling only: see make_op_cases.py.
"""

from cases_conv import add_conv
from op_case_lib import *  # noqa: F401,F403 (Case, op_case, np, helper, ...)


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

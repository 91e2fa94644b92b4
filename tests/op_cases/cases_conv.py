"""The convolution, transposed convolution, pooling and Resize op cases.

Test tooling only: see make_op_cases.py.
"""

from op_case_lib import *  # noqa: F401,F403 (Case, op_case, np, helper, ...)


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

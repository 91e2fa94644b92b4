"""The op cases of what detectors, segmenters and OCR models export, the value-sized ops,
the legacy opsets, the quantized ops and the GPU table's extra cases.

Test tooling only: see make_op_cases.py.
"""

from op_case_lib import *  # noqa: F401,F403 (Case, op_case, np, helper, ...)


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

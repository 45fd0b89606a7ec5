"""SoftmaxWithLoss, AveragedLoss, SquaredL2Distance, Accuracy and their
gradient ops through the op harness, against numpy."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h

label_dtypes = st.sampled_from([np.int32, np.int64])

# --------------------------------------------------------- SoftmaxWithLoss


def log_softmax_rows(rows):
    rows = rows.astype(np.float64)
    shifted = rows - rows.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def softmax_with_loss_reference(x, labels, weights=None, axis=1, scale=1.0, label_prob=False):
    n = int(np.prod(x.shape[:axis]))
    log_p = log_softmax_rows(x.reshape(n, -1))
    if label_prob:
        losses = -(labels.reshape(n, -1).astype(np.float64) * log_p).sum(axis=1)
    else:
        losses = -log_p[np.arange(n), labels.reshape(-1)]
    w = np.ones(n) if weights is None else weights.reshape(-1).astype(np.float64)
    loss = scale * (w * losses).sum() / w.sum() if w.sum() != 0 else 0.0
    return [np.exp(log_p).reshape(x.shape).astype(x.dtype), np.array(loss, dtype=x.dtype)]


@st.composite
def softmax_loss_case(draw, dtype=None):
    """(inputs, args): logits with `axis`, labels (classes or
    probabilities), maybe weights, maybe scale."""
    dtype = dtype or draw(h.float_dtypes)
    label_prob = draw(st.booleans())
    shape = tuple(draw(h.dims(1, 4)))
    axis = draw(st.integers(0, len(shape) - 1)) if draw(st.booleans()) else 1
    # Caffe2 wants probability labels of at least 2 dims.
    while axis >= len(shape) or (label_prob and len(shape) < 2):
        shape = shape + (draw(st.integers(1, 4)),)
    x = draw(h.arrays(shape, dtype, elements=st.floats(-3, 3, width=32)))
    n = int(np.prod(shape[:axis]))
    d = x.size // n
    args = {}
    if axis != 1:
        args["axis"] = axis
    if draw(st.booleans()):
        args["scale"] = float(np.float32(draw(st.floats(0, 4))))
    rng = np.random.RandomState(draw(st.integers(0, 1000)))
    if label_prob:
        args["label_prob"] = 1
        raw = rng.uniform(0.01, 1, (n, d))
        labels = (raw / raw.sum(axis=1, keepdims=True)).astype(dtype).reshape(shape)
    else:
        labels = rng.randint(0, d, n).astype(draw(label_dtypes))
        if axis > 0 and draw(st.booleans()):
            labels = labels.reshape(shape[:axis] + (1,))
        elif axis > 0:
            labels = labels.reshape(shape[:axis])
    inputs = [x, labels]
    if draw(st.booleans()):
        inputs.append(rng.uniform(0.1, 2, n).astype(dtype))
    return inputs, args


def softmax_loss_op(num_inputs, **args):
    names = ["X", "labels", "weights"][:num_inputs]
    return h.make_op("SoftmaxWithLoss", names, ["P", "loss"], **args)


@given(softmax_loss_case())
def test_softmax_with_loss(case):
    inputs, args = case
    op = softmax_loss_op(len(inputs), **args)
    h.check_output(op, inputs, lambda x, t, w=None: softmax_with_loss_reference(
        x, t, w, axis=args.get("axis", 1), scale=args.get("scale", 1.0),
        label_prob=bool(args.get("label_prob"))))


@h.requires_cuda
@given(softmax_loss_case())
def test_softmax_with_loss_cuda_matches_cpu(case):
    inputs, args = case
    h.check_device(softmax_loss_op(len(inputs), **args), inputs)


@given(softmax_loss_case(np.float64))
def test_softmax_with_loss_gradient(case):
    inputs, args = case
    # Only the loss is differentiated (the softmax output gets no gradient).
    h.check_gradient(softmax_loss_op(len(inputs), **args), inputs, [0], outputs_with_grad=[1])


def test_gradient_maker_inputs_follow_caffe2():
    ops, grads = h.gradient_ops(softmax_loss_op(3, scale=2.0))
    assert ops[0].type == "SoftmaxWithLossGradient"
    assert list(ops[0].input) == ["X", "labels", "weights", "P", "loss_grad"]
    assert grads == ["X_grad", None, None]
    ops, _ = h.gradient_ops(softmax_loss_op(2))
    assert list(ops[0].input) == ["X", "labels", "P", "loss_grad"]


def test_zero_weights_give_zero_loss_and_gradient():
    x = np.float32([[1, 2, 3], [3, 2, 1]])
    inputs = [x, np.int32([0, 1]), np.zeros(2, np.float32)]
    op = softmax_loss_op(3)
    h.check_output(op, inputs, lambda x, t, w: [softmax_with_loss_reference(x, t)[0],
                                                np.float32(0)])
    h.check_gradient(op, [v.astype(np.float64) if v.dtype == np.float32 else v for v in inputs],
                     [0], outputs_with_grad=[1])


def spatial_reference(x, labels, weights=None, scale=1.0):
    """x [N, D, H, W] -> per-pixel softmax over D; label -1 is ignored."""
    moved = np.moveaxis(x.astype(np.float64), 1, -1)           # [N, H, W, D]
    log_p = log_softmax_rows(moved.reshape(-1, x.shape[1]))
    flat = labels.reshape(-1)
    keep = flat != -1
    w = np.ones(flat.size) if weights is None else weights.reshape(-1).astype(np.float64)
    losses = -log_p[np.arange(flat.size), np.where(keep, flat, 0)]
    total = (w * keep).sum()
    loss = scale * (w * keep * losses).sum() / total if total != 0 else 0.0
    p = np.moveaxis(np.exp(log_p).reshape(moved.shape), -1, 1)
    return [p.astype(x.dtype), np.array(loss, dtype=x.dtype)]


@st.composite
def spatial_case(draw, dtype=None):
    dtype = dtype or draw(h.float_dtypes)
    n, d, hh, ww = draw(h.dims(4, 4, 1, 3))
    x = draw(h.arrays((n, d, hh, ww), dtype, elements=st.floats(-3, 3, width=32)))
    rng = np.random.RandomState(draw(st.integers(0, 1000)))
    labels = rng.randint(-1, d, (n, hh, ww)).astype(draw(label_dtypes))
    inputs = [x, labels]
    if draw(st.booleans()):
        inputs.append(rng.uniform(0.1, 2, (n, hh, ww)).astype(dtype))
    return inputs, float(np.float32(draw(st.floats(0.5, 2))))


@given(spatial_case())
def test_spatial_softmax_with_loss(case):
    inputs, scale = case
    op = softmax_loss_op(len(inputs), spatial=1, scale=scale)
    h.check_output(op, inputs, lambda x, t, w=None: spatial_reference(x, t, w, scale))


@given(spatial_case(np.float64))
def test_spatial_softmax_with_loss_gradient(case):
    inputs, scale = case
    op = softmax_loss_op(len(inputs), spatial=1, scale=scale)
    h.check_gradient(op, inputs, [0], outputs_with_grad=[1])


@given(spatial_case())
def test_spatial_softmax_with_loss_op_is_the_spatial_form(case):
    inputs, _ = case
    names = ["X", "labels", "weights"][:len(inputs)]
    op = h.make_op("SpatialSoftmaxWithLoss", names, ["P", "loss"])
    h.check_output(op, inputs, lambda x, t, w=None: spatial_reference(x, t, w))


@given(spatial_case(np.float64))
def test_spatial_softmax_with_loss_op_gradient(case):
    inputs, _ = case
    names = ["X", "labels", "weights"][:len(inputs)]
    op = h.make_op("SpatialSoftmaxWithLoss", names, ["P", "loss"])
    ops, _ = h.gradient_ops(op)
    assert [o.type for o in ops] == ["SpatialSoftmaxWithLossGradient"]
    h.check_gradient(op, inputs, [0], outputs_with_grad=[1])


# ------------------------------------------ AveragedLoss, SquaredL2Distance


@given(h.dims(0, 4), h.float_dtypes, st.data())
def test_averaged_loss(shape, dtype, data):
    x = data.draw(h.arrays(tuple(shape), dtype))
    op = h.make_op("AveragedLoss", ["X"], ["Y"])
    h.check_output(op, [x], lambda x: np.array(x.astype(np.float64).mean(), dtype=dtype),
                   output_dtypes=[dtype])
    h.check_gradient(op, [x.astype(np.float64)], [0])


@given(h.dims(0, 4), h.float_dtypes, st.data())
def test_squared_l2_distance(shape, dtype, data):
    x = data.draw(h.arrays(tuple(shape), dtype))
    y = data.draw(h.arrays(tuple(shape), dtype))

    def reference(x, y):
        diff = (x.astype(np.float64) - y).reshape(x.shape[0] if x.ndim else 1, -1)
        return (0.5 * (diff ** 2).sum(axis=1)).astype(dtype)

    op = h.make_op("SquaredL2Distance", ["X", "Y"], ["Z"])
    h.check_output(op, [x, y], reference, output_dtypes=[dtype])
    h.check_gradient(op, [x.astype(np.float64), y.astype(np.float64)], [0, 1])


def test_squared_l2_distance_gradient_op():
    x = np.float32([[1, 2], [3, 5]])
    y = np.float32([[0, 0], [1, 1]])
    op = h.make_op("SquaredL2DistanceGradient", ["X", "Y", "dD"], ["dX", "dY"])
    h.check_output(op, [x, y, np.float32([2, -1])],
                   lambda x, y, dd: [(x - y) * dd[:, None], (y - x) * dd[:, None]])


# ---------------------------------------------------------------- Accuracy


def accuracy_reference(scores, labels, top_k):
    correct = 0
    for row, label in zip(scores, labels):
        # A stable sort of -scores ranks ties by class index, as Caffe2 does.
        order = np.argsort(-row, kind="stable")
        correct += label in order[:top_k]
    return np.float32(correct / len(labels)) if len(labels) else np.float32(0)


@given(h.dims(2, 2), st.integers(1, 6), h.float_dtypes, label_dtypes, st.data())
def test_accuracy(shape, top_k, dtype, label_dtype, data):
    n, d = shape
    # Few distinct scores, so ties happen.
    scores = data.draw(h.arrays((n, d), dtype, elements=st.sampled_from([0.0, 0.25, 0.5, 1.0])))
    labels = np.array(data.draw(st.lists(st.integers(0, d - 1), min_size=n, max_size=n)),
                      dtype=label_dtype)
    args = {} if top_k == 1 and data.draw(st.booleans()) else {"top_k": top_k}
    op = h.make_op("Accuracy", ["scores", "labels"], ["accuracy"], **args)
    h.check_output(op, [scores, labels], lambda s, l: accuracy_reference(s, l, top_k),
                   output_dtypes=[np.float32])


def test_accuracy_has_no_gradient():
    ops, grads = h.gradient_ops(h.make_op("Accuracy", ["scores", "labels"], ["accuracy"]))
    assert ops == [] and grads == [None, None]


@pytest.mark.parametrize("op_type,inputs,outputs", [
    ("SoftmaxWithLoss", [np.ones((2, 3), np.float32), np.int32([0, 2])], ["P", "loss"]),
    ("AveragedLoss", [np.ones((2, 3), np.float32)], ["Y"]),
    ("SquaredL2Distance", [np.ones((2, 3), np.float32), np.zeros((2, 3), np.float32)], ["Z"]),
    ("Accuracy", [np.ones((2, 3), np.float32), np.int32([0, 2])], ["A"]),
])
def test_device(op_type, inputs, outputs):
    names = ["in%d" % i for i in range(len(inputs))]
    h.check_device(h.make_op(op_type, names, outputs), inputs)


# ------------------------------------------------------------ bad input


def test_softmax_loss_label_outside_classes():
    x = np.zeros((2, 3), np.float32)
    h.assert_op_error(softmax_loss_op(2), [x, np.int32([0, 3])], "'labels'", "label 3",
                      "[0, 3)")
    h.assert_op_error(softmax_loss_op(2), [x, np.int64([-1, 0])], "'labels'", "label -1")
    # -1 is only "ignore" in spatial mode; 5 is out of range there too.
    h.assert_op_error(softmax_loss_op(2, spatial=1),
                      [np.zeros((1, 3, 2, 2), np.float32), np.int32([[[0, -1], [5, 1]]])],
                      "'labels'", "label 5")
    grad = h.make_op("SoftmaxWithLossGradient", ["X", "labels", "P", "dL"], ["dX"])
    h.assert_op_error(grad, [x, np.int32([0, 9]), x, np.float32(1).reshape(())], "label 9")


def test_softmax_loss_label_shape_mismatch():
    x = np.zeros((2, 3), np.float32)
    h.assert_op_error(softmax_loss_op(2), [x, np.int32([0, 1, 2])], "'labels'", "[3]",
                      "2 rows")
    h.assert_op_error(softmax_loss_op(2, label_prob=1), [x, np.full((2, 2), 0.5, np.float32)],
                      "'labels'", "[2, 2]")
    h.assert_op_error(softmax_loss_op(3), [x, np.int32([0, 1]), np.ones(3, np.float32)],
                      "'weights'", "2 samples")


def test_softmax_loss_spatial_wrong_rank():
    h.assert_op_error(softmax_loss_op(2, spatial=1),
                      [np.zeros((2, 3, 4), np.float32), np.zeros((2, 4), np.int32)],
                      "'X'", "[N, D, H, W]", "[2, 3, 4]")


def test_softmax_loss_bad_arguments_and_probabilities():
    x = np.zeros((2, 3), np.float32)
    h.assert_op_error(softmax_loss_op(2, scale=-1.0), [x, np.int32([0, 1])], "scale")
    h.assert_op_error(softmax_loss_op(2, order="NHWC"), [x, np.int32([0, 1])], "NHWC")
    h.assert_op_error(softmax_loss_op(2, label_prob=1), [x, np.full((2, 3), 0.5, np.float32)],
                      "'labels'", "sum to")
    h.assert_op_error(softmax_loss_op(2), [x, np.float32([0, 1])], "'labels'", "float32")


def test_averaged_and_distance_errors():
    h.assert_op_error(h.make_op("AveragedLoss", ["X"], ["Y"]), [np.ones(3, np.int32)], "'X'",
                      "int32")
    grad = h.make_op("AveragedLossGradient", ["X", "dY"], ["dX"])
    h.assert_op_error(grad, [np.ones(3), np.ones(2)], "'dY'", "scalar")
    h.assert_op_error(h.make_op("SquaredL2Distance", ["X", "Y"], ["Z"]),
                      [np.ones((2, 3)), np.ones((2, 4))], "'X'", "'Y'", "[2, 3]", "[2, 4]")


def test_accuracy_errors():
    op = h.make_op("Accuracy", ["scores", "labels"], ["accuracy"])
    scores = np.zeros((2, 3), np.float32)
    h.assert_op_error(op, [scores, np.int32([0, 3])], "'labels'", "label 3", "[0, 3)")
    h.assert_op_error(op, [scores, np.int32([0, 1, 2])], "'labels'", "[3]")
    h.assert_op_error(op, [np.zeros((2, 3, 1), np.float32), np.int32([0, 1])], "'scores'",
                      "[N, classes]")
    h.assert_op_error(h.make_op("Accuracy", ["scores", "labels"], ["a"], top_k=0),
                      [scores, np.int32([0, 1])], "top_k")


if __name__ == "__main__":
    h.run_main(__file__)

"""LabelCrossEntropy, CrossEntropy, SigmoidCrossEntropyWithLogits and their
gradient ops through the op harness, against numpy."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h

label_dtypes = st.sampled_from([np.int32, np.int64])


@st.composite
def probabilities(draw, dtype=None, rank=None):
    """X of positive probabilities, [N, D] (or [N, ...] / a vector of D),
    kept away from 0 so finite differences of log stay accurate."""
    dtype = dtype or draw(h.float_dtypes)
    rank = rank or draw(st.integers(1, 3))
    shape = tuple(draw(h.dims(rank, rank)))
    return draw(h.arrays(shape, dtype, elements=st.floats(0.125, 1, width=32)))


def rows(x):
    """X as [N, D], the way the ops read it."""
    return x.reshape(1, -1) if x.ndim == 1 else x.reshape(x.shape[0], -1)


# ------------------------------------------------------ LabelCrossEntropy


@st.composite
def label_case(draw, dtype=None):
    x = draw(probabilities(dtype))
    n, d = rows(x).shape
    labels = np.array(draw(st.lists(st.integers(0, d - 1), min_size=n, max_size=n)),
                      dtype=draw(label_dtypes))
    if draw(st.booleans()):
        labels = labels.reshape(n, 1)
    return x, labels


@given(label_case())
def test_label_cross_entropy(case):
    x, labels = case

    def reference(x, labels):
        picked = rows(x)[np.arange(labels.size), labels.reshape(-1)]
        return -np.log(picked.astype(np.float64)).astype(x.dtype)

    op = h.make_op("LabelCrossEntropy", ["X", "label"], ["Y"])
    h.check_output(op, [x, labels], reference, output_dtypes=[x.dtype])


@given(label_case(np.float64))
def test_label_cross_entropy_gradient(case):
    h.check_gradient(h.make_op("LabelCrossEntropy", ["X", "label"], ["Y"]), list(case), [0])


def test_label_cross_entropy_of_zero_probability_is_finite():
    op = h.make_op("LabelCrossEntropy", ["X", "label"], ["Y"])
    (y,) = h.run_op(op, [np.float32([[0.0, 1.0]]), np.int32([0])])
    np.testing.assert_allclose(y, [-np.log(1e-20)], rtol=1e-6)


# ----------------------------------------------------------- CrossEntropy


@st.composite
def soft_label_case(draw, dtype=None):
    x = draw(probabilities(dtype))
    n, d = rows(x).shape
    shape = x.shape if draw(st.booleans()) else (n, d)
    labels = draw(h.arrays(shape, x.dtype, elements=st.floats(0, 1, width=32)))
    return x, labels


@given(soft_label_case())
def test_cross_entropy(case):
    x, labels = case

    def reference(x, labels):
        terms = rows(labels).astype(np.float64) * np.log(rows(x).astype(np.float64))
        return -terms.sum(axis=1).astype(x.dtype)

    op = h.make_op("CrossEntropy", ["X", "label"], ["Y"])
    h.check_output(op, [x, labels], reference, output_dtypes=[x.dtype])


@given(soft_label_case(np.float64))
def test_cross_entropy_gradient(case):
    h.check_gradient(h.make_op("CrossEntropy", ["X", "label"], ["Y"]), list(case), [0])


def test_one_hot_cross_entropy_equals_label_cross_entropy():
    x = np.float32([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])
    labels = np.int32([1, 2])
    one_hot = np.eye(3, dtype=np.float32)[labels]
    (soft,) = h.run_op(h.make_op("CrossEntropy", ["X", "T"], ["Y"]), [x, one_hot])
    (hard,) = h.run_op(h.make_op("LabelCrossEntropy", ["X", "L"], ["Y"]), [x, labels])
    np.testing.assert_allclose(soft, hard, rtol=1e-6)
    np.testing.assert_allclose(hard, -np.log([0.5, 0.3]), rtol=1e-6)


# ------------------------------------------ SigmoidCrossEntropyWithLogits

VARIANTS = [{}, {"log_D_trick": True}, {"unjoined_lr_loss": True}]


def sigmoid_xent_reference(logits, targets, variant):
    """Per element loss, written from each variant's definition, then the
    mean over the last dim."""
    x = logits.astype(np.float64)
    t = targets.astype(np.float64)
    log_s = -np.logaddexp(0, -x)        # log sigmoid(x)
    log_1ms = -np.logaddexp(0, x)       # log (1 - sigmoid(x))
    if variant.get("log_D_trick"):
        loss = -(2 * t - 1) * log_s
    elif variant.get("unjoined_lr_loss"):
        # Caffe2's unjoined formula: -(t x + (t - 1) x [x >= 0] - (1 - t) log(1 + e^(-|x|)))
        pos = (x >= 0).astype(np.float64)
        loss = -(x * t + (t - 1) * x * pos - (1 - t) * np.log1p(np.exp(-np.abs(x))))
    else:
        loss = -(t * log_s + (1 - t) * log_1ms)
    if loss.ndim == 0:
        return loss.astype(logits.dtype)
    return loss.mean(axis=-1).astype(logits.dtype)


@st.composite
def sigmoid_case(draw, dtype=None):
    dtype = dtype or draw(h.float_dtypes)
    shape = tuple(draw(h.dims(0, 3)))
    logits = draw(h.arrays(shape, dtype, elements=st.floats(-4, 4, width=32)))
    targets = draw(h.arrays(shape, dtype, elements=st.floats(0, 1, width=32)))
    return logits, targets, draw(st.sampled_from(VARIANTS))


@given(sigmoid_case())
def test_sigmoid_cross_entropy(case):
    logits, targets, variant = case
    op = h.make_op("SigmoidCrossEntropyWithLogits", ["logits", "targets"], ["xent"], **variant)
    h.check_output(op, [logits, targets], lambda x, t: sigmoid_xent_reference(x, t, variant),
                   output_dtypes=[logits.dtype])


@h.requires_cuda
@given(sigmoid_case())
def test_sigmoid_cross_entropy_cuda_matches_cpu(case):
    logits, targets, variant = case
    op = h.make_op("SigmoidCrossEntropyWithLogits", ["logits", "targets"], ["xent"], **variant)
    h.check_device(op, [logits, targets])


@given(sigmoid_case(np.float64))
def test_sigmoid_cross_entropy_gradient(case):
    logits, targets, variant = case
    op = h.make_op("SigmoidCrossEntropyWithLogits", ["logits", "targets"], ["xent"], **variant)
    h.check_gradient(op, [logits, targets], [0])


@st.composite
def weighted_sigmoid_case(draw, dtype=None):
    logits, targets, _ = draw(sigmoid_case(dtype))
    weights = draw(h.arrays(logits.shape, logits.dtype, elements=st.floats(0, 2, width=32)))
    return logits, targets, weights


def weighted_sigmoid_xent_reference(logits, targets, weights):
    x, t, w = (v.astype(np.float64) for v in (logits, targets, weights))
    loss = w * (np.logaddexp(0, x) - t * x)
    if loss.ndim == 0:
        return loss.astype(logits.dtype)
    return loss.mean(axis=-1).astype(logits.dtype)


@given(weighted_sigmoid_case())
def test_weighted_sigmoid_cross_entropy(case):
    op = h.make_op("WeightedSigmoidCrossEntropyWithLogits", ["logits", "targets", "weights"],
                   ["xent"])
    h.check_output(op, list(case), weighted_sigmoid_xent_reference,
                   output_dtypes=[case[0].dtype])


@given(weighted_sigmoid_case(np.float64))
def test_weighted_sigmoid_cross_entropy_gradient(case):
    op = h.make_op("WeightedSigmoidCrossEntropyWithLogits", ["logits", "targets", "weights"],
                   ["xent"])
    ops, grads = h.gradient_ops(op)
    assert [o.type for o in ops] == ["WeightedSigmoidCrossEntropyWithLogitsGradient"]
    assert grads[1] is None and grads[2] is None
    h.check_gradient(op, list(case), [0])


def test_weighted_sigmoid_cross_entropy_checks_weight_shape():
    op = h.make_op("WeightedSigmoidCrossEntropyWithLogits", ["logits", "targets", "weights"],
                   ["xent"])
    x = np.zeros((2, 3), np.float32)
    h.assert_op_error(op, [x, x, np.zeros((2, 2), np.float32)], "weights 'weights'", "[2, 2]")


@given(h.dims(0, 3), h.float_dtypes, st.data())
def test_make_two_class(shape, dtype, data):
    x = data.draw(h.arrays(tuple(shape), dtype, elements=st.floats(0, 1, width=32)))
    op = h.make_op("MakeTwoClass", ["X"], ["Y"])
    h.check_output(op, [x], lambda x: np.stack([1 - x, x], axis=-1))
    # Kept inside (0, 1) so finite differences stay probabilities.
    h.check_gradient(op, [np.clip(x, 0.125, 0.875).astype(np.float64)], [0])


def test_make_two_class_refuses_non_probabilities():
    h.assert_op_error(h.make_op("MakeTwoClass", ["X"], ["Y"]), [np.array([0.5, 1.5], np.float32)],
                      "probabilities", "1.5")


def test_sigmoid_cross_entropy_is_stable_for_large_logits():
    x = np.float32([[-200.0, 200.0]])
    op = h.make_op("SigmoidCrossEntropyWithLogits", ["x", "t"], ["y"])
    (y,) = h.run_op(op, [x, np.float32([[1.0, 0.0]])])
    np.testing.assert_allclose(y, [200.0], rtol=1e-6)


@pytest.mark.parametrize("op_type,inputs", [
    ("LabelCrossEntropy", [np.full((2, 3), 0.5, np.float32), np.int32([0, 2])]),
    ("CrossEntropy", [np.full((2, 3), 0.5, np.float32), np.full((2, 3), 0.3, np.float32)]),
    ("SigmoidCrossEntropyWithLogits", [np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)]),
])
def test_device(op_type, inputs):
    h.check_device(h.make_op(op_type, ["a", "b"], ["c"]), inputs)


# ------------------------------------------------------------ bad input


def test_label_outside_classes_names_op_blob_and_label():
    op = h.make_op("LabelCrossEntropy", ["X", "label"], ["Y"])
    h.assert_op_error(op, [np.full((2, 3), 0.5, np.float32), np.int32([0, 3])],
                      "'label'", "label 3", "[0, 3)")
    h.assert_op_error(op, [np.full((2, 3), 0.5, np.float32), np.int64([-1, 0])],
                      "'label'", "label -1")
    grad = h.make_op("LabelCrossEntropyGradient", ["X", "label", "dY"], ["dX"])
    h.assert_op_error(grad, [np.full((2, 3), 0.5), np.int32([0, 7]), np.ones(2)], "label 7")


def test_label_shape_mismatch():
    op = h.make_op("LabelCrossEntropy", ["X", "label"], ["Y"])
    h.assert_op_error(op, [np.full((2, 3), 0.5, np.float32), np.int32([0, 1, 2])],
                      "'label'", "[3]", "2 rows")
    h.assert_op_error(op, [np.full((2, 3), 0.5, np.float32), np.int32([[0, 1], [1, 0]])],
                      "'label'", "[2, 2]")


def test_float_labels_are_refused_by_label_cross_entropy():
    op = h.make_op("LabelCrossEntropy", ["X", "label"], ["Y"])
    h.assert_op_error(op, [np.full((2, 3), 0.5, np.float32), np.float32([0, 1])],
                      "'label'", "float32", "supported types are int32, int64")


def test_scalar_probabilities_have_the_wrong_rank():
    op = h.make_op("LabelCrossEntropy", ["X", "label"], ["Y"])
    h.assert_op_error(op, [np.float32(0.5).reshape(()), np.int32([0])], "'X'", "scalar")


def test_cross_entropy_checks_soft_labels():
    op = h.make_op("CrossEntropy", ["X", "label"], ["Y"])
    x = np.full((2, 3), 0.5, np.float32)
    h.assert_op_error(op, [x, np.full((2, 3), 1.5, np.float32)], "'label'", "[0, 1]")
    h.assert_op_error(op, [x, np.full((3, 2), 0.5, np.float32)], "'label'", "[3, 2]")
    h.assert_op_error(op, [x, np.zeros(2, np.int32)], "'label'")


def test_sigmoid_cross_entropy_checks_shapes_and_variants():
    op = h.make_op("SigmoidCrossEntropyWithLogits", ["logits", "targets"], ["y"])
    h.assert_op_error(op, [np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)],
                      "'logits'", "'targets'", "[2, 3]", "[3, 2]")
    both = h.make_op("SigmoidCrossEntropyWithLogits", ["logits", "targets"], ["y"],
                     log_D_trick=True, unjoined_lr_loss=True)
    h.assert_op_error(both, [np.ones(2, np.float32), np.ones(2, np.float32)], "log_D_trick",
                      "unjoined_lr_loss")
    grad = h.make_op("SigmoidCrossEntropyWithLogitsGradient", ["g", "logits", "targets"], ["d"])
    h.assert_op_error(grad, [np.ones(3, np.float32), np.ones((2, 3), np.float32),
                             np.ones((2, 3), np.float32)], "'g'", "[3]")


if __name__ == "__main__":
    h.run_main(__file__)

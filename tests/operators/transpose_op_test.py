"""Transpose against numpy.transpose."""
import hypothesis.strategies as st
import numpy as np
from hypothesis import given

import op_harness as h


def _transpose_case(shape, dtype, explicit, data):
    """(x, the Transpose op, its numpy reference)."""
    x = data.draw(h.arrays(tuple(shape), dtype))
    if not explicit:
        return x, h.make_op("Transpose", ["X"], ["Y"]), np.transpose  # reverses the dims
    axes = data.draw(st.permutations(range(len(shape))))
    return (x, h.make_op("Transpose", ["X"], ["Y"], axes=list(axes)),
            lambda x: np.transpose(x, axes))


@given(h.dims(0, 5, 1, 4), st.sampled_from([np.float32, np.float64, np.int32, np.bool_]),
       st.booleans(), st.data())
def test_matches_numpy(shape, dtype, explicit, data):
    x, op, reference = _transpose_case(shape, dtype, explicit, data)
    h.check_output(op, [x], reference)
    if dtype == np.float64:
        h.check_gradient(op, [x], [0])


@h.requires_cuda
@given(h.dims(0, 5, 1, 4), st.sampled_from([np.float32, np.float64, np.int32, np.bool_]),
       st.booleans(), st.data())
def test_cuda_matches_cpu(shape, dtype, explicit, data):
    x, op, _ = _transpose_case(shape, dtype, explicit, data)
    h.check_device(op, [x])


@given(st.lists(st.integers(1, 23), min_size=2, max_size=6), st.data())
def test_large_float_tensors_match_numpy_exactly(dims, data):
    """Float32 tensors of >= 4,096 elements permute on oneDNN's reorders
    (operators/dnnl_permute.h); a permutation is a copy, so bit for bit."""
    while int(np.prod(dims)) < 4096:
        dims = dims + [3] if len(dims) < 6 else [d + 5 for d in dims]
    x = np.random.RandomState(len(dims)).randn(*dims).astype(np.float32)
    axes = data.draw(st.permutations(range(len(dims))))
    y = h.run_op(h.make_op("Transpose", ["X"], ["Y"], axes=list(axes)), [x])[0]
    np.testing.assert_array_equal(y, np.transpose(x, axes))


def test_strings_and_gradient_axes():
    s = np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=object)
    y = h.run_op(h.make_op("Transpose", ["S"], ["T"]), [s])[0]
    assert y.shape == (3, 2) and y[2, 1] == b"f"
    ops, _ = h.gradient_ops(h.make_op("Transpose", ["X"], ["Y"], axes=[1, 2, 0]))
    assert ops[0].type == "Transpose"
    assert list(ops[0].arg[0].ints) == [2, 0, 1]  # the inverse permutation


def test_bad_axes():
    x = np.zeros((2, 3, 4), np.float32)
    op = lambda axes: h.make_op("Transpose", ["X"], ["Y"], axes=axes)
    h.assert_op_error(op([0, 1]), [x], "'axes'", "[2, 3, 4]")
    h.assert_op_error(op([0, 1, 1]), [x], "not a permutation")
    h.assert_op_error(op([0, 1, 3]), [x], "not a permutation")
    h.assert_op_error(op([0, -1, 1]), [x], "not a permutation")


if __name__ == "__main__":
    h.run_main(__file__)

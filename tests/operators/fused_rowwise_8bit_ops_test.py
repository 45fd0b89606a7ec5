"""Fused 8-bit row-wise quantization and its gather / lengths reducers,
against a numpy implementation of Caffe2's layout (bytes, then float32
scale and bias per row)."""
import hypothesis.strategies as st
import numpy as np
from hypothesis import given

import op_harness as h


def quantize(x):
    """Caffe2's rule: bias = row min, scale = range / 255, round half away."""
    x = x.astype(np.float32)
    if x.shape[1]:
        low, high = x.min(axis=1), x.max(axis=1)
    else:
        low = high = np.zeros(x.shape[0], np.float32)
    span = (high - low).astype(np.float32)
    inverse = np.float32(255.0) / (span + np.float32(1e-8))
    scaled = ((x - low[:, None]) * inverse[:, None]).astype(np.float64)
    levels = np.floor(scaled + 0.5)
    scale_bias = np.stack([span / np.float32(255.0), low], axis=1).astype(np.float32)
    return np.concatenate([levels.astype(np.uint8), scale_bias.view(np.uint8)], axis=1)


def dequantize(q):
    columns = q.shape[1] - 8
    scale_bias = np.ascontiguousarray(q[:, columns:]).view(np.float32)
    return q[:, :columns].astype(np.float32) * scale_bias[:, :1] + scale_bias[:, 1:]


tables = st.tuples(st.integers(1, 6), st.integers(0, 7)).flatmap(
    lambda shape: h.arrays(shape, np.float32, elements=st.floats(-5, 5, width=32)))


def split_fused(q):
    """(levels, [scale, bias] floats) of fused rows."""
    columns = q.shape[1] - 8
    return q[:, :columns], np.ascontiguousarray(q[:, columns:]).view(np.float32)


@given(tables)
def test_quantize_and_dequantize_match_numpy(x):
    q = h.run_op(h.make_op("FloatToFused8BitRowwiseQuantized", ["X"], ["Q"]), [x])[0]
    assert q.dtype == np.uint8 and q.shape == (x.shape[0], x.shape[1] + 8)
    levels, scale_bias = split_fused(q)
    want_levels, want_scale_bias = split_fused(quantize(x))
    np.testing.assert_array_equal(levels, want_levels)
    # As floats: a zero bias may be -0 or +0 (the row's first minimum).
    np.testing.assert_array_equal(scale_bias, want_scale_bias)
    back = h.check_output(h.make_op("Fused8BitRowwiseQuantizedToFloat", ["Q"], ["Y"]), [q],
                          dequantize, output_dtypes=[np.float32])[0]
    # Within half a quantization step of the original.
    step = (x.max(axis=1, keepdims=True) - x.min(axis=1, keepdims=True)) / 255 if x.size else 0
    assert np.all(np.abs(back - x) <= step / 2 + 1e-5)


@st.composite
def lookups(draw):
    table = draw(tables)
    rows = table.shape[0]
    lengths = draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    indices = np.array(draw(st.lists(st.integers(0, rows - 1), min_size=sum(lengths),
                                     max_size=sum(lengths))), np.int64)
    weights = draw(h.arrays((sum(lengths),), np.float32, elements=st.floats(-2, 2, width=32)))
    return quantize(table), indices, np.array(lengths, np.int32), weights


@given(lookups())
def test_gather_and_lengths_reducers_match_numpy(case):
    q, indices, lengths, weights = case
    rows = dequantize(q)[indices].astype(np.float64)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    segments = [slice(starts[s], starts[s + 1]) for s in range(len(lengths))]

    def reduce(values, mean=False):
        out = [values[seg].sum(axis=0) if seg.stop > seg.start else np.zeros(q.shape[1] - 8)
               for seg in segments]
        if mean:
            out = [o / max(n, 1) for o, n in zip(out, lengths)]
        return np.array(out, np.float32).reshape(len(lengths), q.shape[1] - 8)

    h.check_output(h.make_op("GatherFused8BitRowwise", ["Q", "I"], ["Y"]), [q, indices],
                   lambda q, i: rows.astype(np.float32))
    h.check_output(h.make_op("SparseLengthsSumFused8BitRowwise", ["Q", "I", "L"], ["Y"]),
                   [q, indices, lengths], lambda *_: reduce(rows))
    h.check_output(h.make_op("SparseLengthsMeanFused8BitRowwise", ["Q", "I", "L"], ["Y"]),
                   [q, indices, lengths], lambda *_: reduce(rows, mean=True))
    h.check_output(
        h.make_op("SparseLengthsWeightedSumFused8BitRowwise", ["Q", "W", "I", "L"], ["Y"]),
        [q, weights, indices, lengths], lambda *_: reduce(rows * weights[:, None]))


def test_bad_inputs_name_the_blob():
    q = quantize(np.ones((3, 2), np.float32))
    h.assert_op_error(h.make_op("GatherFused8BitRowwise", ["Q", "I"], ["Y"]),
                      [q, np.array([3], np.int32)], "index 3", "'I'")
    h.assert_op_error(h.make_op("Fused8BitRowwiseQuantizedToFloat", ["Q"], ["Y"]),
                      [np.zeros((2, 4), np.uint8)], "'Q'", "scale and bias")
    h.assert_op_error(h.make_op("FloatToFused8BitRowwiseQuantized", ["X"], ["Q"]),
                      [np.zeros((2, 3, 1), np.float32)], "'X'", "2-D float32")
    h.assert_op_error(h.make_op("SparseLengthsSumFused8BitRowwise", ["Q", "I", "L"], ["Y"]),
                      [q, np.array([0, 1], np.int32), np.array([1], np.int32)], "sum to 1")


def test_non_finite_rows_stay_defined():
    x = np.array([[np.nan, 1.0, 2.0], [np.inf, 0.0, 1.0]], np.float32)
    q = h.run_op(h.make_op("FloatToFused8BitRowwiseQuantized", ["X"], ["Q"]), [x])[0]
    assert q.shape == (2, 11) and q.dtype == np.uint8


if __name__ == "__main__":
    h.run_main(__file__)

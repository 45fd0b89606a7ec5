"""SparseNormalize against numpy: the indexed rows scaled to L2 norm
`norm` (or at most `norm` with use_max_norm), in place, others untouched."""
import hypothesis.strategies as st
import numpy as np
from hypothesis import given

import op_harness as h


@given(st.integers(1, 5), h.dims(0, 2, 1, 3), h.float_dtypes, st.booleans(),
       st.sampled_from([0.5, 1.0, 3.0]), st.data())
def test_sparse_normalize_matches_numpy(rows, row_shape, dtype, use_max, norm, data):
    shape = (rows,) + tuple(row_shape)
    w = data.draw(h.arrays(shape, dtype, elements=st.floats(-3, 3, width=32)))
    count = data.draw(st.integers(0, 4))
    indices = data.draw(h.arrays((count,), np.int64, elements=st.integers(0, rows - 1)))
    g = np.zeros((count,) + tuple(row_shape), dtype)
    op = h.make_op("SparseNormalize", ["w", "i", "g"], ["w"], use_max_norm=use_max, norm=norm)

    def reference(w, i, g):
        out = w.astype(np.float64)
        for row in i:  # in order: a repeated row is normalized again
            length = np.linalg.norm(out[row])
            if length > 0 and not (use_max and length <= norm):
                out[row] *= norm / length
        return out.astype(dtype)

    h.check_output(op, [w, indices, g], reference)


def test_sparse_normalize_errors():
    op = h.make_op("SparseNormalize", ["w", "i", "g"], ["w"])
    w = np.ones((3, 2), np.float32)
    h.assert_op_error(op, [w, np.array([3], np.int32), np.ones((1, 2), np.float32)], "index 3")
    h.assert_op_error(op, [w, np.array([0], np.int32), np.ones((1, 3), np.float32)], "'g'")


if __name__ == "__main__":
    h.run_main(__file__)

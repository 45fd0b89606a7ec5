"""Conditional against np.where over rows; mismatched inputs are errors."""
import numpy as np
from hypothesis import given, settings, strategies as st

import op_harness as h


@given(h.dims(1, 3), st.sampled_from([np.float32, np.int64, np.bool_]))
@settings(max_examples=25, deadline=None)
def test_conditional_picks_rows(shape, dtype):
    rng = np.random.RandomState(len(shape))
    cond = rng.rand(shape[0]) > 0.5
    t = (rng.randn(*shape) * 5).astype(dtype)
    f = (rng.randn(*shape) * 5).astype(dtype)
    op = h.make_op('Conditional', ['C', 'T', 'F'], ['Y'])
    mask = cond.reshape((-1,) + (1,) * (len(shape) - 1))
    h.check_output(op, [cond, t, f], lambda c, t, f: np.where(mask, t, f))


def test_conditional_errors():
    op = h.make_op('Conditional', ['C', 'T', 'F'], ['Y'])
    t = np.zeros((3, 2), np.float32)
    h.assert_op_error(op, [np.ones(2, bool), t, t], "'T'", 'one row per condition')
    h.assert_op_error(op, [np.ones(3, bool), t, np.zeros((3, 2), np.int32)], "'F'", 'must match')
    h.assert_op_error(op, [np.ones(3, np.float32), t, t], "'C'", 'bool')


if __name__ == '__main__':
    h.run_main(__file__)

"""DotProduct against numpy (1-D and row-wise), its gradient against finite
differences, and the shape error."""
import numpy as np
from hypothesis import given, settings

import op_harness as h


@given(h.dims(1, 3))
@settings(max_examples=20, deadline=None)
def test_dot_product_matches_numpy(shape):
    rng = np.random.RandomState(len(shape))
    x = rng.randn(*shape).astype(np.float32)
    y = rng.randn(*shape).astype(np.float32)
    op = h.make_op('DotProduct', ['X', 'Y'], ['Z'])
    h.check_output(op, [x, y], lambda x, y: (x * y).reshape(shape[0], -1).sum(axis=1),
                   atol=1e-5, rtol=1e-5)


def test_dot_product_gradient_and_errors():
    rng = np.random.RandomState(3)
    x, y = rng.randn(3, 4).astype(np.float32), rng.randn(3, 4).astype(np.float32)
    op = h.make_op('DotProduct', ['X', 'Y'], ['Z'])
    h.check_gradient(op, [x, y], [0, 1])
    h.assert_op_error(op, [x, y[:, :3]], "'X'", "'Y'", 'one shape')


if __name__ == '__main__':
    h.run_main(__file__)

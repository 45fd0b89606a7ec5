"""FP16MomentumSGDUpdate and FP32MomentumSGDUpdate against a numpy
reference of Caffe2's formula (weight decay folded into the gradient),
computed in float32 and rounded once to the blobs' type."""
import numpy as np
import pytest
from hypothesis import given
import hypothesis.strategies as st

import op_harness as h


def reference(grad, moment, lr, param, momentum, nesterov, weight_decay):
    g = grad.astype(np.float32) + np.float32(weight_decay) * param.astype(np.float32)
    m = moment.astype(np.float32)
    m_new = np.float32(lr) * g + np.float32(momentum) * m
    step = (1 + np.float32(momentum)) * m_new - np.float32(momentum) * m if nesterov else m_new
    return step, m_new, param.astype(np.float32) - step


def case(data, dtype):
    n = data.draw(st.integers(1, 40))
    values = st.floats(-2, 2, width=32)
    grad, moment, param = (data.draw(h.arrays((n,), np.float32, elements=values)).astype(dtype)
                           for _ in range(3))
    lr = np.array([data.draw(st.floats(0.001, 0.5))], np.float32)
    return grad, moment, lr, param


@pytest.mark.parametrize('op_type,dtype', [('FP16MomentumSGDUpdate', np.float16),
                                           ('FP32MomentumSGDUpdate', np.float32)])
@given(data=st.data(), momentum=st.floats(0, 0.99), nesterov=st.booleans(),
       weight_decay=st.sampled_from([0.0, 1e-4, 0.01]))
def test_matches_numpy(op_type, dtype, data, momentum, nesterov, weight_decay):
    grad, moment, lr, param = case(data, dtype)
    op = h.make_op(op_type, ['g', 'm', 'lr', 'p'], ['g', 'm', 'p'], momentum=momentum,
                   nesterov=int(nesterov), weight_decay=weight_decay)
    outputs = h.run_op(op, [grad, moment, lr, param])
    expected = reference(grad, moment, lr[0], param, momentum, nesterov, weight_decay)
    for actual, want in zip(outputs, expected):
        assert actual.dtype == dtype
        # One rounding of float32 arithmetic; FMA in the kernel may differ
        # from numpy's separate multiply and add by an ulp of float32.
        np.testing.assert_allclose(actual.astype(np.float32), want.astype(dtype).astype(np.float32),
                                   rtol=2e-3 if dtype == np.float16 else 1e-6, atol=1e-6)


def test_out_of_place_param_leaves_the_input():
    grad, moment, param = (np.full(4, v, np.float16) for v in (1.0, 0.0, 2.0))
    op = h.make_op('FP16MomentumSGDUpdate', ['g', 'm', 'lr', 'p'], ['g2', 'm2', 'p2'],
                   momentum=0.9)
    g2, m2, p2 = h.run_op(op, [grad, moment, np.array([0.5], np.float32), param])
    np.testing.assert_array_equal(p2, np.full(4, 1.5, np.float16))


def test_refuses_float32_and_mismatched_sizes():
    lr = np.array([0.1], np.float32)
    op = h.make_op('FP16MomentumSGDUpdate', ['g', 'm', 'lr', 'p'], ['g', 'm', 'p'])
    x = np.ones(3, np.float32)
    h.assert_op_error(op, [x, x, lr, x], 'FP16MomentumSGDUpdate', 'float32')
    half = np.ones(3, np.float16)
    h.assert_op_error(op, [half, np.ones(4, np.float16), lr, half], 'FP16MomentumSGDUpdate')


if __name__ == '__main__':
    h.run_main(__file__)

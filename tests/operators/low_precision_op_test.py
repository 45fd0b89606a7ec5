"""float16 and bfloat16 on the CPU kernels that compute in float32
(core/low_precision_op.h): for each op, the op on low-precision inputs
equals the float32 op on the same (rounded) values, with the results
rounded to the low type by numpy (float16) or PyTorch (bfloat16), and the
outputs the schema keeps in float32 unrounded. In-place forms, the float32
statistics of SpatialBN and the mix of the two low types are checked too.
Plus an independent numpy reference for FC and Conv in float16."""
import numpy as np
import pytest
import torch

from doppio import workspace
from doppio.proto import doppio_pb2

import op_harness as h

FLOAT16, BFLOAT16, FLOAT = 12, 16, 1


def bf16_round(x):
    return torch.from_numpy(np.ascontiguousarray(x, np.float32)).to(torch.bfloat16).float().numpy()


def round_to(x, low):
    return x.astype(np.float16).astype(np.float32) if low == FLOAT16 else bf16_round(x)


def run_low(op, inputs, low, float32_inputs=()):
    """`op` with inputs cast to `low` in the net (those in float32_inputs
    stay float32); its outputs (bfloat16 fetched as float32)."""
    with h._FreshWorkspace():
        net = doppio_pb2.NetDef(name='low')
        for index, (name, array) in enumerate(zip(op.input, inputs)):
            if index in float32_inputs:
                workspace.FeedBlob(name, array)
                continue
            workspace.FeedBlob(name + '_f', array)
            net.op.extend([h.make_op('Cast', [name + '_f'], [name], to=low, from_type=FLOAT)])
        net.op.extend([op])
        workspace.RunNetOnce(net)
        return [workspace.FetchBlob(name) for name in op.output]


def check_low(op, inputs, low, float32_inputs=(), float32_outputs=()):
    rounded = [x if i in float32_inputs else round_to(x, low) for i, x in enumerate(inputs)]
    expected = h.run_op(op, rounded)
    actual = run_low(op, inputs, low, float32_inputs)
    for j, (a, e) in enumerate(zip(actual, expected)):
        want = e if j in float32_outputs or e.dtype != np.float32 else round_to(e, low)
        np.testing.assert_array_equal(np.asarray(a, np.float32) if a.dtype == np.float16 else a,
                                      want, err_msg='{} output {}'.format(op.type, j))
    return actual


LOW_TYPES = [pytest.param(FLOAT16, id='float16'), pytest.param(BFLOAT16, id='bfloat16')]
rng = np.random.RandomState(0)


def randn(*shape):
    return rng.randn(*shape).astype(np.float32)


@pytest.mark.parametrize('low', LOW_TYPES)
def test_fc_and_its_gradient(low):
    x, w, b = randn(5, 7), randn(3, 7), randn(3)
    check_low(h.make_op('FC', ['X', 'W', 'b'], ['Y']), [x, w, b], low)
    dy = randn(5, 3)
    check_low(h.make_op('FCGradient', ['X', 'W', 'dY'], ['dW', 'db', 'dX']), [x, w, dy], low)


@pytest.mark.parametrize('low', LOW_TYPES)
def test_conv_and_its_gradient(low):
    x, w, b = randn(2, 3, 6, 6), randn(4, 3, 3, 3), randn(4)
    check_low(h.make_op('Conv', ['X', 'W', 'b'], ['Y'], kernel=3, pad=1), [x, w, b], low)
    dy = randn(2, 4, 6, 6)
    check_low(h.make_op('ConvGradient', ['X', 'W', 'dY'], ['dW', 'db', 'dX'], kernel=3, pad=1),
              [x, w, dy], low)


@pytest.mark.parametrize('low', LOW_TYPES)
def test_spatial_bn_keeps_its_statistics_in_float32(low):
    x = randn(4, 3, 5, 5) * 3 + 1
    scale, bias = randn(3), randn(3)
    mean, var = randn(3), np.abs(randn(3)) + 0.5
    op = h.make_op('SpatialBN', ['X', 'scale', 'bias', 'mean', 'var'],
                   ['Y', 'mean', 'var', 'saved_mean', 'saved_inv_var'], is_test=0,
                   momentum=0.9, epsilon=1e-5)
    check_low(op, [x, scale, bias, mean, var], low, float32_inputs=(1, 2, 3, 4),
              float32_outputs=(1, 2, 3, 4))
    dy = randn(4, 3, 5, 5)
    saved_mean, saved_inv_var = randn(3), np.abs(randn(3)) + 0.5
    grad = h.make_op('SpatialBNGradient', ['X', 'scale', 'dY', 'saved_mean', 'saved_inv_var'],
                     ['dX', 'dscale', 'dbias'])
    check_low(grad, [x, scale, dy, saved_mean, saved_inv_var], low, float32_inputs=(1, 3, 4),
              float32_outputs=(1, 2))


@pytest.mark.parametrize('low', LOW_TYPES)
def test_activations_pools_and_sums(low):
    x = randn(2, 3, 4, 4)
    check_low(h.make_op('Relu', ['X'], ['X']), [x], low)  # in place
    check_low(h.make_op('ReluGradient', ['Y', 'dY'], ['dX']), [np.maximum(x, 0), randn(2, 3, 4, 4)],
              low)
    check_low(h.make_op('MaxPool', ['X'], ['Y'], kernel=2, stride=2), [x], low)
    check_low(h.make_op('AveragePool', ['X'], ['Y'], kernel=2, stride=2), [x], low)
    check_low(h.make_op('AveragePool', ['X'], ['Y'], global_pooling=1), [x], low)
    check_low(h.make_op('Sum', ['A', 'B', 'C'], ['A']), [x, randn(2, 3, 4, 4), randn(2, 3, 4, 4)],
              low)
    check_low(h.make_op('Softmax', ['X'], ['Y']), [randn(4, 10)], low)
    check_low(h.make_op('Dropout', ['X'], ['Y', 'mask'], ratio=0.5, is_test=1), [x], low)


@pytest.mark.parametrize('low', LOW_TYPES)
def test_float32_operand_is_shared_not_rounded(low):
    # Add of a low tensor and a float32 bias: the bias is read as float32.
    x, bias = randn(3, 4), randn(4)
    check_low(h.make_op('Add', ['X', 'bias'], ['Y'], broadcast=1), [x, bias], low,
              float32_inputs=(1,))


def test_float16_results_are_float16_and_float32_stays_float32():
    x = randn(2, 3, 4, 4)
    with h._FreshWorkspace():
        for name, value in [('X', x.astype(np.float16)), ('scale', randn(3)), ('bias', randn(3)),
                            ('mean', np.zeros(3, np.float32)), ('var', np.ones(3, np.float32))]:
            workspace.FeedBlob(name, value)
        workspace.RunOperatorOnce(h.make_op(
            'SpatialBN', ['X', 'scale', 'bias', 'mean', 'var'],
            ['Y', 'mean', 'var', 'saved_mean', 'saved_inv_var'], is_test=0))
        assert workspace.FetchBlob('Y').dtype == np.float16
        for name in ['mean', 'var', 'saved_mean', 'saved_inv_var']:
            assert workspace.FetchBlob(name).dtype == np.float32, name


def test_fc_and_conv_in_float16_match_numpy():
    x, w, b = randn(6, 9).astype(np.float16), randn(4, 9).astype(np.float16), randn(4).astype(
        np.float16)
    (y,) = h.run_op(h.make_op('FC', ['X', 'W', 'b'], ['Y']), [x, w, b])
    assert y.dtype == np.float16
    ref = (x.astype(np.float64) @ w.astype(np.float64).T + b).astype(np.float16)
    np.testing.assert_allclose(y.astype(np.float32), ref.astype(np.float32), rtol=2e-3, atol=2e-3)
    image, kernel = randn(1, 2, 5, 5).astype(np.float16), randn(3, 2, 3, 3).astype(np.float16)
    (out,) = h.run_op(h.make_op('Conv', ['X', 'W'], ['Y'], kernel=3), [image, kernel])
    windows = np.lib.stride_tricks.sliding_window_view(image.astype(np.float64)[0], (3, 3),
                                                       axis=(1, 2))
    ref = np.einsum('chwij,ocij->ohw', windows, kernel.astype(np.float64))[None]
    np.testing.assert_allclose(out.astype(np.float32), ref.astype(np.float16).astype(np.float32),
                               rtol=2e-3, atol=2e-3)


def test_mixing_float16_and_bfloat16_is_refused():
    with h._FreshWorkspace():
        workspace.FeedBlob('A', randn(3).astype(np.float16))
        workspace.FeedBlob('Bf', randn(3))
        workspace.RunOperatorOnce(h.make_op('Cast', ['Bf'], ['B'], to=BFLOAT16))
        with pytest.raises(RuntimeError, match=r"(?s)mix float16 and bfloat16 \('B'.*Sum"):
            workspace.RunOperatorOnce(h.make_op('Sum', ['A', 'B'], ['Y']))


def test_float32_inputs_run_the_kernel_as_is():
    # No rounding anywhere: the float32 path is the plain kernel.
    x, w, b = randn(5, 7), randn(3, 7), randn(3)
    (y,) = h.run_op(h.make_op('FC', ['X', 'W', 'b'], ['Y']), [x, w, b])
    np.testing.assert_allclose(y, x @ w.T + b, rtol=1e-5, atol=1e-5)
    assert y.dtype == np.float32


if __name__ == '__main__':
    h.run_main(__file__)

"""The numpy ONNX evaluator the export tests trust (onnx_numpy_reference)
against torch.nn.functional on random inputs: one ONNX node per model,
each model valid for onnx.checker at the opset it is run at."""
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, checker, helper, numpy_helper

try:
    from tests.onnx import onnx_numpy_reference as ref
except ImportError:  # run directly from the source tree
    import onnx_numpy_reference as ref

RNG = np.random.RandomState(7)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def single_node_model(op_type, inputs, constants, opset, output, attrs):
    node = helper.make_node(op_type, list(inputs) + list(constants), ['y'], **attrs)
    graph = helper.make_graph(
        [node], 'one_' + op_type,
        [helper.make_tensor_value_info(n, numpy_helper.from_array(v).data_type, v.shape)
         for n, v in inputs.items()],
        [output],
        initializer=[numpy_helper.from_array(v, name=n) for n, v in constants.items()])
    opsets = [helper.make_opsetid('', opset)]
    return helper.make_model(graph, opset_imports=opsets,
                             ir_version=helper.find_min_ir_version_for(opsets))


def run_one(op_type, inputs, opset=13, constants=None, **attrs):
    """Runs one node with graph inputs `inputs` (name -> array) and
    initializers `constants`; returns its single output. The model, with
    the output's dtype and shape as computed, must pass the checker with
    ONNX's own shape inference (strict): so the node is valid at `opset`
    and the evaluator's output shape is the one the spec infers."""
    constants = constants or {}
    unknown = helper.make_empty_tensor_value_info('y')
    y = ref.run_model(single_node_model(op_type, inputs, constants, opset, unknown, attrs),
                      inputs)['y']
    output = helper.make_tensor_value_info('y', numpy_helper.from_array(y).data_type, y.shape)
    checker.check_model(single_node_model(op_type, inputs, constants, opset, output, attrs),
                        full_check=True)
    return y


def t(x):
    return torch.from_numpy(np.ascontiguousarray(x))


def close(actual, expected, tol=1e-5):
    expected = expected.detach().numpy() if isinstance(expected, torch.Tensor) else expected
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol)


# ---- convolution ----

def test_conv2d_groups_strides_dilations_asymmetric_pads():
    x, w, b = rand(2, 4, 9, 8), rand(6, 2, 3, 2), rand(6)
    y = run_one('Conv', {'x': x, 'w': w, 'b': b}, kernel_shape=[3, 2], strides=[2, 1],
                dilations=[1, 2], pads=[1, 0, 2, 1], group=2)
    # ONNX pads are [top, left, bottom, right]; F.pad takes (left, right, top, bottom).
    expected = F.conv2d(F.pad(t(x), (0, 1, 1, 2)), t(w), t(b), stride=(2, 1),
                        dilation=(1, 2), groups=2)
    close(y, expected, 1e-4)


def test_conv1d_and_conv3d_without_bias():
    x, w = rand(2, 3, 11), rand(5, 3, 4)
    close(run_one('Conv', {'x': x, 'w': w}, strides=[3], pads=[2, 2]),
          F.conv1d(t(x), t(w), stride=3, padding=2), 1e-4)
    x, w = rand(1, 2, 5, 6, 4), rand(3, 2, 2, 3, 2)
    close(run_one('Conv', {'x': x, 'w': w}, pads=[1, 0, 1, 1, 0, 1]),
          F.conv3d(t(x), t(w), padding=(1, 0, 1)), 1e-4)


def test_conv_depthwise():
    x, w = rand(2, 3, 7, 7), rand(3, 1, 3, 3)
    close(run_one('Conv', {'x': x, 'w': w}, group=3, pads=[1, 1, 1, 1]),
          F.conv2d(t(x), t(w), padding=1, groups=3), 1e-4)


# ---- pooling ----

@pytest.mark.parametrize('ceil_mode', [0, 1])
def test_max_pool(ceil_mode):
    x = rand(2, 3, 10, 9)
    y = run_one('MaxPool', {'x': x}, opset=12, kernel_shape=[3, 2], strides=[2, 2],
                pads=[1, 1, 1, 1], dilations=[1, 2], ceil_mode=ceil_mode)
    close(y, F.max_pool2d(t(x), (3, 2), stride=2, padding=1, dilation=(1, 2),
                          ceil_mode=bool(ceil_mode)))


def test_max_pool_asymmetric_pads_and_opset_9():
    x = rand(1, 2, 7, 6)
    y = run_one('MaxPool', {'x': x}, opset=9, kernel_shape=[2, 2], strides=[2, 2],
                pads=[0, 1, 1, 0])
    close(y, F.max_pool2d(F.pad(t(x), (1, 0, 0, 1), value=-np.inf), 2, stride=2))


@pytest.mark.parametrize('count_include_pad', [0, 1])
@pytest.mark.parametrize('ceil_mode', [0, 1])
def test_average_pool(count_include_pad, ceil_mode):
    x = rand(2, 3, 9, 10)
    y = run_one('AveragePool', {'x': x}, opset=11, kernel_shape=[3, 3], strides=[2, 3],
                pads=[1, 1, 1, 1], count_include_pad=count_include_pad, ceil_mode=ceil_mode)
    close(y, F.avg_pool2d(t(x), 3, stride=(2, 3), padding=1, ceil_mode=bool(ceil_mode),
                          count_include_pad=bool(count_include_pad)))


def test_global_pools():
    x = rand(2, 3, 5, 4)
    close(run_one('GlobalAveragePool', {'x': x}), F.adaptive_avg_pool2d(t(x), 1))
    close(run_one('GlobalMaxPool', {'x': x}), F.adaptive_max_pool2d(t(x), 1))


# ---- normalization, matrix products ----

@pytest.mark.parametrize('opset', [9, 15])
def test_batch_normalization(opset):
    x = rand(2, 4, 3, 5)
    scale, bias, mean = rand(4), rand(4), rand(4)
    var = np.abs(rand(4)) + 0.1
    y = run_one('BatchNormalization', {'x': x}, opset=opset,
                constants=dict(s=scale, b=bias, m=mean, v=var), epsilon=1e-3)
    close(y, F.batch_norm(t(x), t(mean), t(var), t(scale), t(bias), training=False, eps=1e-3))


@pytest.mark.parametrize('trans_a, trans_b', [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_gemm(trans_a, trans_b):
    a = rand(4, 3) if not trans_a else rand(3, 4)
    b = rand(3, 5) if not trans_b else rand(5, 3)
    c = rand(5)
    y = run_one('Gemm', {'a': a, 'b': b, 'c': c}, transA=trans_a, transB=trans_b,
                alpha=0.5, beta=2.0)
    ta = t(a).T if trans_a else t(a)
    tb = t(b).T if trans_b else t(b)
    close(y, 0.5 * (ta @ tb) + 2.0 * t(c), 1e-4)


def test_gemm_is_linear_without_c():
    x, w = rand(3, 6), rand(4, 6)
    close(run_one('Gemm', {'x': x, 'w': w}, transB=1), F.linear(t(x), t(w)), 1e-4)


def test_matmul_batched_and_broadcast():
    a, b = rand(2, 3, 4, 5), rand(3, 5, 2)
    close(run_one('MatMul', {'a': a, 'b': b}), torch.matmul(t(a), t(b)), 1e-4)


# ---- softmax: the axis rule changed in opset 13 ----

@pytest.mark.parametrize('op_type, fn', [('Softmax', F.softmax), ('LogSoftmax', F.log_softmax)])
def test_softmax_before_opset_13_normalizes_all_dims_from_axis(op_type, fn):
    x = rand(2, 3, 4)
    y = run_one(op_type, {'x': x}, opset=11, axis=1)
    close(y, fn(t(x).reshape(2, 12), dim=1).reshape(2, 3, 4))


@pytest.mark.parametrize('op_type, fn', [('Softmax', F.softmax), ('LogSoftmax', F.log_softmax)])
def test_softmax_from_opset_13_normalizes_one_axis(op_type, fn):
    x = rand(2, 3, 4)
    close(run_one(op_type, {'x': x}, opset=13, axis=1), fn(t(x), dim=1))
    close(run_one(op_type, {'x': x}, opset=13), fn(t(x), dim=-1))


# ---- elementwise ----

@pytest.mark.parametrize('op_type, fn', [
    ('Relu', F.relu), ('Sigmoid', torch.sigmoid), ('Tanh', torch.tanh), ('Exp', torch.exp),
    ('Abs', torch.abs), ('Neg', torch.neg), ('Softplus', F.softplus), ('Identity', lambda v: v),
])
def test_unary(op_type, fn):
    x = rand(3, 4, 2)
    close(run_one(op_type, {'x': x}), fn(t(x)))


def test_log_sqrt_on_positive_values():
    x = np.abs(rand(5, 3)) + 0.01
    close(run_one('Log', {'x': x}), torch.log(t(x)))
    close(run_one('Sqrt', {'x': x}), torch.sqrt(t(x)))


def test_leaky_relu_and_elu_alpha():
    x = rand(4, 5)
    close(run_one('LeakyRelu', {'x': x}, alpha=0.2), F.leaky_relu(t(x), 0.2))
    close(run_one('LeakyRelu', {'x': x}), F.leaky_relu(t(x), 0.01))
    close(run_one('Elu', {'x': x}, alpha=0.7), F.elu(t(x), 0.7))


@pytest.mark.parametrize('op_type, fn', [('Add', torch.add), ('Sub', torch.sub),
                                         ('Mul', torch.mul), ('Div', torch.div)])
def test_binary_numpy_broadcasting(op_type, fn):
    a, b = rand(2, 3, 4, 5), rand(3, 1, 5)
    close(run_one(op_type, {'a': a, 'b': b}), fn(t(a), t(b)), 1e-5)


def test_variadic_sum_max_min():
    xs = {'a': rand(3, 4), 'b': rand(3, 4), 'c': rand(4)}
    close(run_one('Sum', xs), t(xs['a']) + t(xs['b']) + t(xs['c']))
    close(run_one('Max', xs), torch.maximum(torch.maximum(t(xs['a']), t(xs['b'])), t(xs['c'])))
    close(run_one('Min', xs), torch.minimum(torch.minimum(t(xs['a']), t(xs['b'])), t(xs['c'])))


def test_clip_attributes_before_opset_11_inputs_after():
    x = rand(4, 6)
    expected = torch.clamp(t(x), -0.3, 0.5)
    close(run_one('Clip', {'x': x}, opset=9, min=-0.3, max=0.5), expected)
    close(run_one('Clip', {'x': x}, opset=11,
                  constants={'lo': np.array(-0.3, np.float32), 'hi': np.array(0.5, np.float32)}),
          expected)


def test_cast():
    x = rand(3, 4) * 10
    close(run_one('Cast', {'x': x}, to=TensorProto.INT32), t(x).to(torch.int32))
    u = RNG.randint(0, 256, (2, 3)).astype(np.uint8)
    close(run_one('Cast', {'u': u}, to=TensorProto.FLOAT), t(u).to(torch.float32))


# ---- shapes ----

def test_flatten_reshape_transpose():
    x = rand(2, 3, 4, 5)
    close(run_one('Flatten', {'x': x}, axis=2), t(x).reshape(6, 20))
    close(run_one('Flatten', {'x': x}, axis=0), t(x).reshape(1, 120))
    close(run_one('Reshape', {'x': x}, constants={'s': np.array([0, -1, 5], np.int64)}),
          t(x).reshape(2, 12, 5))
    close(run_one('Transpose', {'x': x}, perm=[2, 0, 3, 1]), t(x).permute(2, 0, 3, 1))
    close(run_one('Transpose', {'x': x}), t(x).permute(3, 2, 1, 0))
    close(run_one('Shape', {'x': x}), np.array([2, 3, 4, 5], np.int64))


def test_concat():
    a, b = rand(2, 3, 4), rand(2, 5, 4)
    close(run_one('Concat', {'a': a, 'b': b}, axis=1), torch.cat([t(a), t(b)], 1))
    close(run_one('Concat', {'a': a, 'b': b}, axis=-2), torch.cat([t(a), t(b)], -2))


def test_unsqueeze_squeeze_axes_attribute_then_input():
    x = rand(3, 4)
    expected = t(x).reshape(1, 3, 1, 4)
    close(run_one('Unsqueeze', {'x': x}, opset=11, axes=[0, 2]), expected)
    close(run_one('Unsqueeze', {'x': x}, opset=13,
                  constants={'axes': np.array([0, -2], np.int64)}), expected)
    z = rand(1, 3, 1, 4)
    close(run_one('Squeeze', {'z': z}, opset=11, axes=[2]), t(z).squeeze(2))
    close(run_one('Squeeze', {'z': z}, opset=13,
                  constants={'axes': np.array([0], np.int64)}), t(z).squeeze(0))


def test_unknown_op_is_refused():
    node = helper.make_node('Hardmax', ['x'], ['y'])
    with pytest.raises(ref.NotImplementedInReference):
        ref.run_node(node, [rand(2, 2)], 13)


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q']))

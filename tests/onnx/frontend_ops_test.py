"""Each op of doppio.onnx.frontend's table, exported at opsets 9, 11, 13
and 17: the model passes onnx.checker (with strict shape inference), and
the independent numpy evaluator of the ONNX model (onnx_numpy_reference,
itself checked against PyTorch) reproduces Doppio's outputs."""
import sys

import numpy as np
import pytest

try:
    from tests.onnx.frontend_export_util import check_export, op
except ImportError:  # run directly from the source tree
    from frontend_export_util import check_export, op

RNG = np.random.RandomState(3)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def node_types(model):
    return [n.op_type for n in model.graph.node]


# ---- convolution and pooling ----

@pytest.mark.parametrize('args', [
    dict(kernel=3, pad=1),
    dict(kernel=3, stride=2, pad_t=0, pad_l=1, pad_b=2, pad_r=1),
    dict(kernels=[3, 2], strides=[1, 2], pads=[1, 0, 1, 1], dilation=2),
    dict(kernel_h=2, kernel_w=3, group=2),
    dict(kernel=3, stride=2, legacy_pad=2),   # SAME
    dict(kernel=3, legacy_pad=1),             # VALID
])
def test_conv(args):
    x, w, b = rand(2, 4, 9, 8), rand(6, 4 // args.get('group', 1), 1, 1), rand(6)
    kernel = args.get('kernels') or [args.get('kernel_h', args.get('kernel')),
                                     args.get('kernel_w', args.get('kernel'))]
    w = rand(6, 4 // args.get('group', 1), *kernel)
    check_export([op('Conv', ['x', 'w', 'b'], ['y'], **args)], {'x': x},
                 {'w': w, 'b': b}, rtol=1e-4, atol=1e-4)


def test_conv_without_bias_and_kernel_from_the_filter():
    x, w = rand(1, 3, 7, 6), rand(5, 3, 3, 2)
    model = check_export([op('Conv', ['x', 'w'], ['y'])], {'x': x}, {'w': w},
                         rtol=1e-4, atol=1e-4)
    assert node_types(model) == ['Conv']


def test_conv_1d():
    x, w, b = rand(2, 3, 12), rand(4, 3, 3), rand(4)
    check_export([op('Conv', ['x', 'w', 'b'], ['y'], kernel=3, stride=2, pad=1)], {'x': x},
                 {'w': w, 'b': b}, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize('op_type', ['MaxPool', 'AveragePool', 'MaxPool2D', 'AveragePool2D'])
@pytest.mark.parametrize('args', [
    dict(kernel=2, stride=2),
    dict(kernel=3, stride=2, pad=1),
    dict(kernels=[3, 2], strides=[2, 1], pads=[1, 0, 0, 1]),
    dict(kernel=3, stride=2, legacy_pad=2),
    dict(global_pooling=1),
])
def test_pool(op_type, args):
    check_export([op(op_type, ['x'], ['y'], **args)], {'x': rand(2, 3, 9, 8)})


@pytest.mark.parametrize('count_include_pad', [0, 1])
def test_average_pool_count_include_pad(count_include_pad):
    check_export([op('AveragePool', ['x'], ['y'], kernel=3, stride=2, pad=1,
                     count_include_pad=count_include_pad)], {'x': rand(2, 2, 7, 8)})


def test_max_pool_caffe_legacy_padding():
    # Caffe rounds the output size up: 8 -> 4 windows of 3 with stride 2.
    check_export([op('MaxPool', ['x'], ['y'], kernel=3, stride=2, legacy_pad=3)],
                 {'x': rand(1, 2, 8, 8)})


def test_spatial_bn_in_test_mode():
    c = 5
    params = {'s': rand(c), 'b': rand(c), 'm': rand(c), 'v': np.abs(rand(c)) + 0.5}
    check_export([op('SpatialBN', ['x', 's', 'b', 'm', 'v'], ['y'], is_test=1, epsilon=1e-3)],
                 {'x': rand(2, c, 4, 3)}, params)


# ---- matrix products ----

def test_fc_on_a_matrix_is_one_gemm():
    model = check_export([op('FC', ['x', 'w', 'b'], ['y'])], {'x': rand(4, 6)},
                         {'w': rand(3, 6), 'b': rand(3)})
    assert node_types(model) == ['Gemm']


def test_fc_flattens_an_image_batch():
    check_export([op('FC', ['x', 'w', 'b'], ['y'])], {'x': rand(2, 3, 4, 5)},
                 {'w': rand(7, 60), 'b': rand(7)}, rtol=1e-4, atol=1e-4)


def test_fc_axis_2_keeps_the_leading_dims():
    check_export([op('FC', ['x', 'w', 'b'], ['y'], axis=2)], {'x': rand(2, 3, 4, 5)},
                 {'w': rand(7, 20), 'b': rand(7)}, rtol=1e-4, atol=1e-4)


def test_fc_axis_w_and_fc_transposed():
    check_export([op('FC', ['x', 'w', 'b'], ['y'], axis_w=1)], {'x': rand(3, 12)},
                 {'w': rand(5, 3, 4), 'b': rand(5)}, rtol=1e-4, atol=1e-4)
    check_export([op('FCTransposed', ['x', 'w', 'b'], ['y'])], {'x': rand(3, 6)},
                 {'w': rand(6, 4), 'b': rand(4)}, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize('args, a_shape, b_shape', [
    (dict(), (3, 4), (4, 5)),
    (dict(trans_a=1, trans_b=1), (4, 3), (5, 4)),
    (dict(axis_a=2), (2, 3, 4), (4, 6)),
])
def test_matmul(args, a_shape, b_shape):
    check_export([op('MatMul', ['a', 'b'], ['y'], **args)],
                 {'a': rand(*a_shape), 'b': rand(*b_shape)}, rtol=1e-4, atol=1e-4)


def test_batch_matmul_with_transposes():
    check_export([op('BatchMatMul', ['a', 'b'], ['y'], trans_a=1, trans_b=1)],
                 {'a': rand(2, 4, 3), 'b': rand(2, 5, 4)}, rtol=1e-4, atol=1e-4)


# ---- softmax: Caffe2 normalizes all dims from axis, ONNX 13+ only axis ----

@pytest.mark.parametrize('op_type', ['Softmax', 'LogSoftmax'])
@pytest.mark.parametrize('shape, axis', [((4, 10), 1), ((2, 3, 4), 1), ((2, 3, 4), 2),
                                         ((2, 3, 4), -2), ((2, 3, 2, 2), 0)])
def test_softmax(op_type, shape, axis):
    check_export([op(op_type, ['x'], ['y'], axis=axis)], {'x': rand(*shape)})


def test_softmax_default_axis_is_1():
    check_export([op('Softmax', ['x'], ['y'])], {'x': rand(2, 3, 4)})


# ---- elementwise ----

@pytest.mark.parametrize('op_type', ['Relu', 'Sigmoid', 'Tanh', 'Exp', 'Abs', 'Neg',
                                     'Softplus', 'Elu', 'LeakyRelu'])
def test_unary(op_type):
    check_export([op(op_type, ['x'], ['y'])], {'x': rand(3, 4, 5)})


def test_unary_on_positive_values_and_alphas():
    x = np.abs(rand(4, 5)) + 0.1
    check_export([op('Log', ['x'], ['l']), op('Sqrt', ['x'], ['y'])], {'x': x},
                 outputs=['l', 'y'])
    check_export([op('LeakyRelu', ['x'], ['y'], alpha=0.3)], {'x': rand(4, 5)})
    check_export([op('Elu', ['x'], ['y'], alpha=0.6)], {'x': rand(4, 5)})


@pytest.mark.parametrize('op_type', ['Add', 'Sub', 'Mul', 'Div'])
@pytest.mark.parametrize('b_shape, args', [
    ((2, 3, 4, 5), {}),                           # same shape
    ((3, 1, 5), {}),                              # numpy broadcasting
    ((4, 5), dict(broadcast=1)),                  # legacy, B at the end
    ((3,), dict(broadcast=1, axis=1)),            # legacy, B at C
    ((3, 4), dict(broadcast=1, axis=1)),
    ((1,), dict(broadcast=1)),
    ((3,), dict(broadcast=1, axis_str='C', order='NCHW')),
])
def test_binary(op_type, b_shape, args):
    b = rand(*b_shape)
    if op_type == 'Div':
        b = np.abs(b) + 0.5
    check_export([op(op_type, ['a', 'b'], ['y'], **args)], {'a': rand(2, 3, 4, 5), 'b': b})


@pytest.mark.parametrize('op_type', ['Sum', 'Max', 'Min'])
def test_variadic(op_type):
    check_export([op(op_type, ['a', 'b', 'c'], ['y'])],
                 {'a': rand(3, 4), 'b': rand(3, 4), 'c': rand(3, 4)})
    check_export([op(op_type, ['a'], ['y'])], {'a': rand(3, 4)})


def test_scale_and_clip():
    check_export([op('Scale', ['x'], ['y'], scale=-2.5)], {'x': rand(3, 4)})
    check_export([op('Clip', ['x'], ['y'], min=-0.5, max=0.25)], {'x': rand(3, 4)})
    check_export([op('Clip', ['x'], ['y'], max=0.25)], {'x': rand(3, 4)})


@pytest.mark.parametrize('to, dtype', [(1, np.uint8), (2, np.float32), (10, np.float32),
                                       (13, np.float32), ('INT32', np.float32)])
def test_cast(to, dtype):
    x = (rand(3, 4) * 20).astype(dtype) if dtype != np.uint8 else \
        RNG.randint(0, 256, (3, 4)).astype(np.uint8)
    check_export([op('Cast', ['x'], ['y'], to=to)], {'x': x})


@pytest.mark.parametrize('op_type', ['Copy', 'Alias', 'StopGradient', 'EnsureCPUOutput'])
def test_copies_become_identity(op_type):
    model = check_export([op(op_type, ['x'], ['y'])], {'x': rand(2, 3)})
    assert node_types(model) == ['Identity']


def test_dropout_in_test_mode_is_identity():
    check_export([op('Dropout', ['x'], ['y'], ratio=0.3, is_test=1)], {'x': rand(5, 4)})


# ---- shapes ----

def test_reshape_with_the_shape_argument_and_old_shape():
    check_export([op('Reshape', ['x'], ['y', 'old'], shape=[0, -1, 2])], {'x': rand(2, 3, 4)},
                 outputs=['y', 'old'])


@pytest.mark.parametrize('dtype', [np.int32, np.int64])
def test_reshape_with_a_shape_input(dtype):
    check_export([op('Reshape', ['x', 's'], ['y', 'old'])], {'x': rand(2, 3, 4)},
                 {'s': np.array([4, -1], dtype)}, outputs=['y', 'old'])


def test_flatten_and_flatten_to_vec():
    check_export([op('Flatten', ['x'], ['y'], axis=2)], {'x': rand(2, 3, 4, 5)})
    check_export([op('Flatten', ['x'], ['y'])], {'x': rand(2, 3, 4, 5)})
    check_export([op('FlattenToVec', ['x'], ['y'])], {'x': rand(2, 3, 4)})


def test_transpose_and_layout_switches():
    check_export([op('Transpose', ['x'], ['y'])], {'x': rand(2, 3, 4)})
    check_export([op('Transpose', ['x'], ['y'], axes=[1, 0, 3, 2])], {'x': rand(2, 3, 4, 5)})
    check_export([op('NCHW2NHWC', ['x'], ['y'])], {'x': rand(2, 3, 4, 5)})
    check_export([op('NHWC2NCHW', ['x'], ['y'])], {'x': rand(2, 3, 4, 5)})


def test_squeeze_and_expand_dims():
    check_export([op('Squeeze', ['x'], ['y'], dims=[0, 2])], {'x': rand(1, 3, 1, 4)})
    check_export([op('ExpandDims', ['x'], ['y'], dims=[2, 0])], {'x': rand(3, 4)})


@pytest.mark.parametrize('args', [dict(axis=1), dict(axis=-1), dict(order='NHWC'), dict()])
def test_concat_with_split_info(args):
    if args.get('order') == 'NHWC' or args.get('axis') == -1:
        inputs = {'a': rand(2, 3, 4, 2), 'b': rand(2, 3, 4, 5)}
    else:
        inputs = {'a': rand(2, 2, 4, 5), 'b': rand(2, 6, 4, 5)}
    check_export([op('Concat', ['a', 'b'], ['y', 'split'], **args)], inputs,
                 outputs=['y', 'split'])


def test_concat_add_axis_stacks():
    check_export([op('Concat', ['a', 'b', 'c'], ['y', 'split'], axis=1, add_axis=1)],
                 {'a': rand(2, 3), 'b': rand(2, 3), 'c': rand(2, 3)}, outputs=['y', 'split'])


def test_shape():
    check_export([op('Shape', ['x'], ['y'])], {'x': rand(2, 3, 4)})


# ---- nets ----

def test_in_place_chains_keep_the_net_names():
    ops = [op('Scale', ['x'], ['h'], scale=2.0), op('Relu', ['h'], ['h']),
           op('Scale', ['h'], ['h'], scale=0.5), op('FC', ['h', 'w', 'b'], ['y']),
           op('Sigmoid', ['y'], ['y'])]
    model = check_export(ops, {'x': rand(4, 3)}, {'w': rand(2, 3), 'b': rand(2)})
    assert [i.name for i in model.graph.input] == ['x']
    assert [o.name for o in model.graph.output] == ['y']
    assert sorted(i.name for i in model.graph.initializer
                  if i.name in ('w', 'b')) == ['b', 'w']


def test_an_intermediate_blob_can_be_an_output_too():
    ops = [op('Relu', ['x'], ['r']), op('Sigmoid', ['r'], ['y'])]
    check_export(ops, {'x': rand(3, 3)}, outputs=['r', 'y'])


def test_data_input_overwritten_in_place():
    # The graph input keeps the name; its new version gets another.
    ops = [op('Scale', ['x'], ['x'], scale=3.0), op('Relu', ['x'], ['y'])]
    check_export(ops, {'x': rand(3, 3)})


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q']))

"""Doppio -> ONNX -> Doppio: models exported by doppio.onnx.frontend and
imported back by doppio.onnx.backend predict what the original nets
predict, for the trained reference CNN and MLP and for the frontend's
multi-node translations (Caffe2 semantics rebuilt from several ONNX ops)."""
import sys

import numpy as np
import pytest

from doppio.onnx import backend

try:
    from tests.onnx import frontend_export_util as util
except ImportError:  # run directly from the source tree
    import frontend_export_util as util

op = util.op
RNG = np.random.RandomState(11)
STEPS = 30


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def round_trip(predict, init, inputs, opset):
    """The exported model run by the ONNX backend; outputs by name. The
    round trip itself is exact, so the backend runs the converted net as it
    is (the inference passes' float reassociation is tested elsewhere)."""
    model = util.export(predict, init, inputs, opset)
    rep = backend.prepare(model, optimize=False)
    outputs = rep.run([inputs[i.name] for i in model.graph.input])
    return {o.name: np.asarray(outputs[o.name]) for o in model.graph.output}


@pytest.fixture(scope='module', params=['cnn', 'mlp'])
def trained(request):
    predict, init, images, _, _ = util.train_reference_model(request.param, STEPS)
    expected = util.run_doppio(predict, init, {'data_uint8': images})['softmax']
    return request.param, predict, init, images, expected


@pytest.mark.parametrize('opset', [9, 13, 17])
def test_trained_model_round_trip_predicts_the_same(trained, opset):
    kind, predict, init, images, expected = trained
    got = round_trip(predict, init, {'data_uint8': images}, opset)['softmax']
    np.testing.assert_array_equal(got.argmax(axis=1), expected.argmax(axis=1))
    util.assert_same(got, expected, '{} softmax at opset {}'.format(kind, opset),
                     rtol=1e-6, atol=1e-7)


CASES = {
    'softmax_over_trailing_dims': (
        [op('Softmax', ['x'], ['y'], axis=1)], {'x': rand(2, 3, 4)}, {}, ['y']),
    'fc_axis_2': (
        [op('FC', ['x', 'w', 'b'], ['y'], axis=2)], {'x': rand(2, 3, 4, 5)},
        {'w': rand(6, 20), 'b': rand(6)}, ['y']),
    'legacy_broadcast_at_c': (
        [op('Mul', ['x', 's'], ['y'], broadcast=1, axis=1)], {'x': rand(2, 3, 4, 5)},
        {'s': rand(3)}, ['y']),
    'concat_split_info': (
        [op('Concat', ['a', 'b'], ['y', 'split'], axis=1)],
        {'a': rand(2, 3, 4), 'b': rand(2, 1, 4)}, {}, ['y', 'split']),
    'concat_add_axis': (
        [op('Concat', ['a', 'b'], ['y', 'split'], axis=0, add_axis=1)],
        {'a': rand(2, 3), 'b': rand(2, 3)}, {}, ['y', 'split']),
    'reshape_old_shape': (
        [op('Reshape', ['x'], ['y', 'old'], shape=[-1, 6])], {'x': rand(2, 3, 4)}, {},
        ['y', 'old']),
    'conv_pool_bn': (
        [op('Conv', ['x', 'w', 'b'], ['c'], kernel=3, stride=2, pad_t=1, pad_l=0, pad_b=0,
            pad_r=1),
         op('SpatialBN', ['c', 'bs', 'bb', 'bm', 'bv'], ['c'], is_test=1),
         op('AveragePool', ['c'], ['p'], kernel=2, stride=1, pad=1),
         op('MaxPool', ['p'], ['y'], kernel=3, stride=2, legacy_pad=3)],
        {'x': rand(2, 3, 11, 10)},
        {'w': rand(4, 3, 3, 3), 'b': rand(4), 'bs': rand(4), 'bb': rand(4), 'bm': rand(4),
         'bv': np.abs(rand(4)) + 0.5}, ['y']),
    'matmul_transposed': (
        [op('MatMul', ['a', 'b'], ['y'], trans_a=1, trans_b=1)],
        {'a': rand(4, 3), 'b': rand(5, 4)}, {}, ['y']),
    'squeeze_expand_dims': (
        [op('ExpandDims', ['x'], ['e'], dims=[0, 3]), op('Squeeze', ['e'], ['y'], dims=[0])],
        {'x': rand(2, 3, 4)}, {}, ['y']),
    'clip_scale_cast': (
        [op('Clip', ['x'], ['c'], min=-0.5, max=0.5), op('Scale', ['c'], ['c'], scale=10.0),
         op('Cast', ['c'], ['y'], to=2)], {'x': rand(3, 4)}, {}, ['y']),
    'dropout_in_test_mode': (
        [op('Dropout', ['x'], ['y'], ratio=0.5, is_test=1)], {'x': rand(3, 4)}, {}, ['y']),
    'transpose_flatten': (
        [op('NCHW2NHWC', ['x'], ['t']), op('Flatten', ['t'], ['y'], axis=2)],
        {'x': rand(2, 3, 4, 5)}, {}, ['y']),
}


@pytest.mark.parametrize('opset', [9, 13, 17])
@pytest.mark.parametrize('case', sorted(CASES))
def test_translation_round_trip(case, opset):
    ops, inputs, params, outputs = CASES[case]
    predict, init = util.make_nets(ops, inputs, params, outputs)
    expected = util.run_doppio(predict, init, inputs)
    got = round_trip(predict, init, inputs, opset)
    for name in outputs:
        util.assert_same(got[name], expected[name], '{} at opset {}'.format(name, opset),
                         rtol=1e-5, atol=1e-6)


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q']))

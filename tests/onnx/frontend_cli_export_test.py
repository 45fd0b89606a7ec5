"""tools/doppio_to_onnx end to end: predict_net.pb + init_net.pb of the
reference CNN (as the example writes them) -> model.onnx, which passes
onnx.checker and which the independent numpy evaluator runs to Doppio's
predictions; and each bad input exits 1 with one line naming the culprit."""
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from google.protobuf import text_format

import doppio
from caffe2.python import core

try:
    from tests.onnx import frontend_export_util as util
except ImportError:  # run directly from the source tree
    import frontend_export_util as util

IMAGES = 50


def tool_path():
    runfiles = os.environ.get('TEST_SRCDIR')
    if runfiles:
        return os.path.join(runfiles, 'doppio', 'tools', 'doppio_to_onnx')
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tools',
                        'doppio_to_onnx')


def run_tool(*args):
    env = dict(os.environ)
    # The package this test imports, so the tool does not rebuild it.
    env['PYTHONPATH'] = os.path.dirname(os.path.dirname(os.path.abspath(doppio.__file__)))
    return subprocess.run(['/usr/bin/python3', tool_path()] + [str(a) for a in args],
                          capture_output=True, text=True, env=env, timeout=300)


def assert_fails(result, *words):
    assert result.returncode == 1, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith('doppio_to_onnx: error: ')
    for word in words:
        assert word in lines[0], lines[0]


@pytest.fixture(scope='module')
def nets(tmp_path_factory):
    predict, init, images, _, _ = util.train_reference_model('cnn', 5, test_images=IMAGES)
    folder = tmp_path_factory.mktemp('cli')
    paths = {'predict': folder / 'predict_net.pb', 'init': folder / 'init_net.pb',
             'predict_text': folder / 'predict_net.pbtxt'}
    paths['predict'].write_bytes(predict.SerializeToString())
    paths['init'].write_bytes(init.SerializeToString())
    paths['predict_text'].write_text(text_format.MessageToString(predict))
    expected = util.run_doppio(predict, init, {'data_uint8': images})['softmax']
    return folder, paths, images, expected


def shape_flag():
    return 'data_uint8:{},1,28,28'.format(IMAGES)


@pytest.mark.parametrize('text, opset', [(False, None), (True, 11)])
def test_exports_a_model_that_predicts_like_doppio(nets, text, opset):
    folder, paths, images, expected = nets
    out = folder / 'model_{}.onnx'.format(opset)
    args = ['--init_net', paths['init'],
            '--predict_net', paths['predict_text'] if text else paths['predict'],
            '--input_shape', shape_flag(), '--input_type', 'data_uint8:uint8',
            '--output', out]
    if opset:
        args += ['--opset_version', opset]
    result = run_tool(*args)
    assert result.returncode == 0, result.stderr
    assert str(out) in result.stdout and 'softmax' in result.stdout
    model = onnx.load(str(out))
    onnx.checker.check_model(model, full_check=True)
    assert model.opset_import[0].version == (opset or onnx.defs.onnx_opset_version())
    got = util.ref.run_model(model, {'data_uint8': images})['softmax']
    util.assert_same(got, expected, 'softmax', rtol=1e-4, atol=1e-5)
    assert not os.path.exists(str(out) + '.partial')


def test_float_is_the_default_input_type(nets):
    folder, paths, images, expected = nets
    out = folder / 'float_input.onnx'
    result = run_tool('--init_net', paths['init'], '--predict_net', paths['predict'],
                      '--input_shape', shape_flag(), '--output', out)
    assert result.returncode == 0, result.stderr
    model = onnx.load(str(out))
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    got = util.ref.run_model(model, {'data_uint8': images.astype(np.float32)})['softmax']
    util.assert_same(got, expected, 'softmax', rtol=1e-4, atol=1e-5)


def test_missing_and_unreadable_files(nets, tmp_path):
    folder, paths, _, _ = nets
    out = tmp_path / 'm.onnx'
    assert_fails(run_tool('--init_net', tmp_path / 'nope.pb', '--predict_net', paths['predict'],
                          '--input_shape', shape_flag(), '--output', out), 'nope.pb')
    garbage = tmp_path / 'garbage.pb'
    garbage.write_bytes(b'\xff\xfe not a proto \x00\x01')
    assert_fails(run_tool('--init_net', paths['init'], '--predict_net', garbage,
                          '--input_shape', shape_flag(), '--output', out),
                 'garbage.pb', 'not a NetDef')
    assert_fails(run_tool('--init_net', paths['init'], '--predict_net', paths['predict'],
                          '--input_shape', shape_flag(), '--output',
                          tmp_path / 'no_such_dir' / 'm.onnx'), 'cannot write')
    assert not out.exists()


@pytest.mark.parametrize('flags, words', [
    (['--input_shape', 'data_uint8:1,x,28,28'], ['--input_shape', 'integers']),
    (['--input_shape', 'data_uint8'], ['--input_shape', 'NAME:VALUE']),
    (['--input_shape', 'data_uint8:1,1,28,28', '--input_type', 'data_uint8:complex'],
     ['complex']),
    (['--input_shape', 'data_uint8:1,1,28,28', '--input_type', 'other:uint8'], ['other']),
    (['--input_shape', 'data_uint8:1,1,28,28', '--opset_version', '8'], ['opset_version 8']),
    (['--input_shape', 'data_uint8:1,1,5,5'], ['FC']),
    (['--input_shape', 'wrong_name:1,1,28,28'], ['data_uint8']),
])
def test_bad_flags(nets, tmp_path, flags, words):
    _, paths, _, _ = nets
    assert_fails(run_tool('--init_net', paths['init'], '--predict_net', paths['predict'],
                          '--output', tmp_path / 'm.onnx', *flags), *words)


def test_input_shape_is_required(nets, tmp_path):
    _, paths, _, _ = nets
    result = run_tool('--init_net', paths['init'], '--predict_net', paths['predict'],
                      '--output', tmp_path / 'm.onnx')
    assert result.returncode == 2 and '--input_shape' in result.stderr


def test_unexportable_op_is_named(tmp_path):
    predict, init = util.make_nets(
        [core.CreateOperator('Relu', ['x'], ['r']),
         core.CreateOperator('LabelCrossEntropy', ['r', 'label'], ['xent'], name='loss')],
        {'x': None, 'label': None}, {}, ['xent'])
    path = tmp_path / 'loss_net.pb'
    path.write_bytes(predict.SerializeToString())
    assert_fails(run_tool('--predict_net', path, '--input_shape', 'x:2,3',
                          '--input_shape', 'label:2', '--input_type', 'label:int32',
                          '--output', tmp_path / 'm.onnx'),
                 'op #1', "'loss'", 'LabelCrossEntropy')


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q']))

"""tools/onnx_to_doppio end to end: ONNX test models (with their weights
turned into initializers) are converted by the script, the NetDefs it writes
are run by bazel-bin/tools/run_net and by the Python API, and the outputs are
compared with the reference outputs stored with ONNX's test models. Failures
follow the CLI contract: exit 1 and one line on stderr naming the problem, or
exit 2 for a bad command line."""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import pytest
from google.protobuf import text_format
from onnx import numpy_helper

from doppio import workspace
from doppio.proto import doppio_pb2

DATA = os.path.join(os.path.dirname(onnx.__file__), 'backend', 'test', 'data', 'node')


def _runfile(path):
    for root in (os.environ.get('TEST_SRCDIR'), os.environ.get('RUNFILES_DIR')):
        if root:
            candidate = os.path.join(root, 'doppio', path)
            if os.path.exists(candidate):
                return candidate
    # Run from the source tree (tools/python tests/onnx/...).
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(here, '..', '..', path),
                      os.path.join(here, '..', '..', 'bazel-bin', path)):
        if os.path.exists(candidate):
            return candidate
    raise RuntimeError('cannot find ' + path)


SCRIPT = _runfile('tools/onnx_to_doppio.py')
RUN_NET = _runfile('tools/run_net')


def _load(path):
    tensor = onnx.TensorProto()
    with open(path, 'rb') as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


def _test_case(name, initializer_inputs):
    """The model of ONNX node test `name` with the inputs at positions
    `initializer_inputs` turned into initializers, the remaining inputs and
    the reference outputs."""
    directory = os.path.join(DATA, name)
    model = onnx.load(os.path.join(directory, 'model.onnx'))
    inputs = [_load(os.path.join(directory, 'test_data_set_0', 'input_%d.pb' % i))
              for i in range(len(model.graph.input))]
    outputs = [_load(os.path.join(directory, 'test_data_set_0', 'output_%d.pb' % i))
               for i in range(len(model.graph.output))]
    fed = {}
    for index, value_info in reversed(list(enumerate(model.graph.input))):
        if index in initializer_inputs:
            model.graph.initializer.append(numpy_helper.from_array(inputs[index],
                                                                   value_info.name))
            del model.graph.input[index]
        else:
            fed[value_info.name] = inputs[index]
    return model, fed, [o.name for o in model.graph.output], outputs


def _convert(args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run([sys.executable, SCRIPT] + args, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, timeout=120)


CASES = [
    ('test_conv_with_strides_padding', [1]),
    ('test_gemm_all_attributes', [1, 2]),
    ('test_layer_normalization_4d_axis1', [1, 2]),
    ('test_batchnorm_example', [1, 2, 3, 4]),
    ('test_maxpool_2d_same_lower', []),
    ('test_softmax_axis_0', []),
    ('test_instancenorm_example', [1, 2]),
]


@pytest.mark.parametrize('name, initializer_inputs', CASES)
def test_converted_nets_reproduce_the_reference_outputs(name, initializer_inputs):
    model, fed, output_names, expected = _test_case(name, initializer_inputs)
    with tempfile.TemporaryDirectory() as tmp:
        model_path = os.path.join(tmp, 'model.onnx')
        onnx.save(model, model_path)
        init_path, predict_path = os.path.join(tmp, 'init.pb'), os.path.join(tmp, 'predict.pb')
        result = _convert([model_path, '--init_net', init_path, '--predict_net', predict_path])
        assert result.returncode == 0, result.stderr.decode()
        init_net, predict_net = doppio_pb2.NetDef(), doppio_pb2.NetDef()
        with open(init_path, 'rb') as f:
            init_net.ParseFromString(f.read())
        with open(predict_path, 'rb') as f:
            predict_net.ParseFromString(f.read())
        # One fill per initializer in the init net; inputs and outputs named.
        fills = [op.output[0] for op in init_net.op if op.type.startswith('GivenTensor')]
        assert set(fills) >= {t.name for t in model.graph.initializer}
        assert set(fed) <= set(predict_net.external_input)
        assert list(predict_net.external_output) == output_names

        # The runner binary.
        command = [RUN_NET, '--init_net', init_path, '--net', predict_path]
        for input_name, value in fed.items():
            np.save(os.path.join(tmp, input_name + '.npy'), value)
            command += ['--input', '%s=%s' % (input_name, os.path.join(tmp, input_name + '.npy'))]
        for output_name in output_names:
            path = os.path.join(tmp, output_name + '.npy')
            command += ['--output', '%s=%s' % (output_name, path)]
        run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        assert run.returncode == 0, run.stderr.decode()
        for output_name, want in zip(output_names, expected):
            got = np.load(os.path.join(tmp, output_name + '.npy'))
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=output_name)

        # The Python API, in a workspace of its own.
        previous = workspace.CurrentWorkspace()
        workspace.SwitchWorkspace('onnx_to_doppio_test_' + name, True)
        try:
            workspace.RunNetOnce(init_net)
            for input_name, value in fed.items():
                workspace.FeedBlob(input_name, value)
            workspace.RunNetOnce(predict_net)
            for output_name, want in zip(output_names, expected):
                np.testing.assert_allclose(workspace.FetchBlob(output_name), want, rtol=1e-4,
                                           atol=1e-5)
        finally:
            workspace.ResetWorkspace()
            workspace.SwitchWorkspace(previous, True)


def test_text_output():
    model, _, _, _ = _test_case('test_conv_with_strides_padding', [1])
    with tempfile.TemporaryDirectory() as tmp:
        onnx.save(model, os.path.join(tmp, 'm.onnx'))
        result = _convert([os.path.join(tmp, 'm.onnx'), '--text', '--init_net',
                           os.path.join(tmp, 'init.pbtxt'), '--predict_net',
                           os.path.join(tmp, 'predict.pbtxt')])
        assert result.returncode == 0, result.stderr.decode()
        with open(os.path.join(tmp, 'predict.pbtxt')) as f:
            predict_net = text_format.Parse(f.read(), doppio_pb2.NetDef())
        assert [op.type for op in predict_net.op] == ['Conv']


def _assert_one_line_failure(result, *fragments):
    assert result.returncode == 1
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1, lines
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_failures_are_one_line_errors():
    with tempfile.TemporaryDirectory() as tmp:
        outputs = ['--init_net', os.path.join(tmp, 'i.pb'), '--predict_net',
                   os.path.join(tmp, 'p.pb')]
        garbage = os.path.join(tmp, 'garbage.onnx')
        with open(garbage, 'wb') as f:
            f.write(b'\x12\xff\xff\xff not a model')
        _assert_one_line_failure(_convert([garbage] + outputs), 'cannot decode')
        _assert_one_line_failure(_convert([os.path.join(tmp, 'missing.onnx')] + outputs),
                                 'cannot read', 'missing.onnx')
        # An op Doppio cannot run names the op, the node and the opset.
        model = onnx.load(os.path.join(DATA, 'test_top_k', 'model.onnx'))
        model.graph.node[0].name = 'topk1'
        onnx.save(model, os.path.join(tmp, 'topk.onnx'))
        _assert_one_line_failure(_convert([os.path.join(tmp, 'topk.onnx')] + outputs),
                                 "ONNX op 'TopK' (node 'topk1', opset 11) is not supported")
        # A value only known at run time cannot become a fixed net.
        _assert_one_line_failure(
            _convert([os.path.join(DATA, 'test_squeeze', 'model.onnx')] + outputs),
            'must be a constant')
        assert not os.path.exists(os.path.join(tmp, 'p.pb'))
        # A command-line error.
        assert _convert([garbage]).returncode == 2


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q']))

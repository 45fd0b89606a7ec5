"""Importing randomly corrupted ONNX models never crashes the interpreter.

A child Python process takes a few node-test models of the installed ONNX
test data (and one with initializers made from them), corrupts their bytes
with a seeded generator (byte changes, deletions, insertions) a few hundred
times, and hands each to doppio.onnx.backend.prepare and run. Every failure
must be a clean Python exception of the expected types: doppio.onnx's
OnnxError, or the RuntimeError the runtime raises for an op that fails. The
parent checks the child's exit status (a signal means a crash), that no
other exception type appeared, and that the corruptions reached beyond the
protobuf decoder.
"""
import json
import os
import subprocess
import sys

import onnx

CHILD = r'''
import glob, json, os, random, sys, traceback
import onnx
from onnx import numpy_helper
from doppio.onnx import backend
from doppio.onnx.errors import OnnxError

data_dir, iterations, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
names = ['test_conv_with_strides_padding', 'test_maxpool_2d_pads', 'test_gemm_all_attributes',
         'test_reshape_reordered_all_dims', 'test_slice', 'test_softmax_axis_0',
         'test_squeeze', 'test_layer_normalization_4d_axis1', 'test_convtranspose_pads',
         'test_averagepool_2d_ceil', 'test_tile', 'test_edge_pad', 'test_gather_1',
         'test_split_variable_parts_2d', 'test_constantofshape_int_zeros', 'test_pow_bcast_array']


def load(path):
    tensor = onnx.TensorProto()
    with open(path, 'rb') as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


cases = []
for name in names:
    directory = os.path.join(data_dir, name)
    inputs = [load(p) for p in sorted(glob.glob(os.path.join(directory, 'test_data_set_0',
                                                             'input_*.pb')))]
    with open(os.path.join(directory, 'model.onnx'), 'rb') as f:
        cases.append((name, f.read(), inputs))
# A model with an initializer: the conv test's weights moved into the graph.
model = onnx.load(os.path.join(data_dir, 'test_conv_with_strides_padding', 'model.onnx'))
weights = cases[0][2][1]
model.graph.initializer.append(numpy_helper.from_array(weights, model.graph.input[1].name))
del model.graph.input[1]
cases.append(('conv_with_initializer', model.SerializeToString(), cases[0][2][:1]))

rng = random.Random(seed)
counts, unexpected = {}, []
for iteration in range(iterations):
    name, original, inputs = rng.choice(cases)
    data = bytearray(original)
    for _ in range(rng.choice([1, 1, 1, 2, 3, 8])):
        position = rng.randrange(len(data))
        action = rng.random()
        if action < 0.7:
            data[position] = rng.randrange(256)
        elif action < 0.85:
            del data[position]
        else:
            data.insert(position, rng.randrange(256))
    try:
        backend.prepare(bytes(data)).run(inputs)
        kind = 'ran'
    except OnnxError as error:
        kind = type(error).__name__
        if 'cannot decode' in str(error):
            kind = 'undecodable'
    except RuntimeError:
        kind = 'RuntimeError'
    except Exception as error:
        kind = 'unexpected'
        unexpected.append('{} #{}: {}'.format(name, iteration, traceback.format_exc()))
    counts[kind] = counts.get(kind, 0) + 1
print(json.dumps({'counts': counts, 'unexpected': unexpected[:5]}))
'''


def test_corrupted_models_fail_cleanly():
    data_dir = os.path.join(os.path.dirname(onnx.__file__), 'backend', 'test', 'data', 'node')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    for seed in (1, 2):
        child = subprocess.run([sys.executable, '-c', CHILD, data_dir, '300', str(seed)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                               timeout=240)
        assert child.returncode == 0, 'the child crashed (status {}):\n{}'.format(
            child.returncode, child.stderr.decode(errors='replace')[-3000:])
        report = json.loads(child.stdout.decode().strip().splitlines()[-1])
        counts = report['counts']
        assert report['unexpected'] == [], '\n'.join(report['unexpected'])
        assert sum(counts.values()) == 300
        # Some corruptions must get past the decoder, or only it was tested.
        assert sum(v for k, v in counts.items() if k != 'undecodable') >= 30, counts


if __name__ == '__main__':
    import pytest
    sys.exit(pytest.main([__file__, '-q']))

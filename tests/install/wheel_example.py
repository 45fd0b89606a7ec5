"""A Caffe2 user's training script, run by wheel_test.py with the python of a
virtual environment the wheel was pip-installed into (never the source tree).

  python wheel_example.py INPUTS.npz RESULTS.npz

Trains a small MLP with data_parallel_model.Parallelize_CPU on two CPU
devices (plain SGD, lr 0.1) on the batches in INPUTS.npz, from its initial
parameters: STEPS_BEFORE steps, a checkpoint Save, a fresh workspace and
model, Load + FinalizeAfterCheckpoint, then the remaining steps. It writes
every device's final parameters and where doppio, its extension and the
shared libraries it loaded came from; wheel_test.py compares the parameters
with numpy's SGD on the whole batch.
"""
import json
import sys

import numpy as np
import google.protobuf  # noqa: F401  (mapped before doppio: see _mapped_libraries)


def _mapped_libraries():
    with open('/proc/self/maps') as maps:
        return sorted(set(line.split()[-1] for line in maps if '.so' in line.split()[-1]))


# numpy and protobuf's own libraries are loaded by now; what importing the
# caffe2 alias adds is the extension and the libraries it needs.
_BEFORE = _mapped_libraries()

from caffe2.proto import caffe2_pb2  # noqa: E402
from caffe2.python import (brew, core, data_parallel_model, model_helper,  # noqa: E402
                           optimizer, workspace)

_AFTER = _mapped_libraries()

DEVICES = [0, 1]
PARAMS = ['fc1_w', 'fc1_b', 'fc2_w', 'fc2_b']
CHECKPOINT = 'mlp_checkpoint.minidb'


def forward_builder(dims):
    d_in, hidden, d_out = dims

    def forward(model, loss_scale):
        h = brew.fc(model, 'data', 'fc1', d_in, hidden)
        h = brew.relu(model, h, 'relu1')
        logits = brew.fc(model, h, 'fc2', hidden, d_out)
        _, loss = model.net.SoftmaxWithLoss([logits, 'label'], ['softmax', 'avg_loss'])
        return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]
    return forward


def build(name, dims):
    model = model_helper.ModelHelper(name=name)
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward_builder(dims),
        optimizer_builder_fun=lambda m: optimizer.build_sgd(m, 0.1, momentum=0.0),
        devices=DEVICES, num_threads_per_device=1)
    data_parallel_model.RunInitNet(model)
    return model


def train(model, xs, ys):
    per_device = xs.shape[1] // len(DEVICES)
    for x, y in zip(xs, ys):
        for i, device in enumerate(DEVICES):
            rows = slice(i * per_device, (i + 1) * per_device)
            workspace.FeedBlob('cpu_{}/data'.format(device), x[rows])
            workspace.FeedBlob('cpu_{}/label'.format(device), y[rows])
        data_parallel_model.RunNet(model, 1)


def main(inputs_path, results_path):
    inputs = np.load(inputs_path)
    xs, ys, before = inputs['xs'], inputs['ys'], int(inputs['steps_before'])
    dims = (xs.shape[2], inputs['fc1_w'].shape[0], inputs['fc2_w'].shape[0])

    model = build('mlp', dims)
    for p in PARAMS:
        workspace.FeedBlob('cpu_0/' + p, inputs[p])
    data_parallel_model.FinalizeAfterCheckpoint(model)
    train(model, xs[:before], ys[:before])
    checkpoint = [str(b) for b in data_parallel_model.GetCheckpointParams(model)]
    workspace.RunOperatorOnce(core.CreateOperator(
        'Save', checkpoint, [], db=CHECKPOINT, db_type='minidb'))

    # A new process would start here: nothing survives but the file.
    workspace.ResetWorkspace()
    model = build('mlp_resumed', dims)
    load = core.CreateOperator('Load', [], checkpoint, db=CHECKPOINT, db_type='minidb')
    load.device_option.CopyFrom(core.DeviceOption(caffe2_pb2.CPU, 0))
    workspace.RunOperatorOnce(load)
    data_parallel_model.FinalizeAfterCheckpoint(model)
    train(model, xs[before:], ys[before:])

    results = {'cpu_{}/{}'.format(d, p): workspace.FetchBlob('cpu_{}/{}'.format(d, p))
               for d in DEVICES for p in PARAMS}
    import doppio
    info = {
        'doppio_file': doppio.__file__,
        'extension_file': workspace.C.__file__,
        'caffe2_core_is_doppio_core': core is doppio.core,
        'new_libraries': [lib for lib in _AFTER if lib not in _BEFORE],
        'iteration': int(workspace.FetchBlob('optimizer_iteration').reshape(-1)[0]),
    }
    results['info'] = np.array(json.dumps(info))
    np.savez(results_path, **results)


if __name__ == '__main__':
    if len(sys.argv) != 3:
        sys.exit('usage: wheel_example.py INPUTS.npz RESULTS.npz')
    main(sys.argv[1], sys.argv[2])

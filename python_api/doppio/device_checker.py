"""caffe2.python.device_checker: an op (or net) must compute the same
outputs on every given device (CPU against each GPU)."""
import copy

import numpy as np

from doppio import workspace

_WORKSPACE = '_device_check_'


def _report(device_index, blob, got, want):
    print('Failure in checking device option {} and output {}. The outputs are:'.format(
        device_index, blob))
    print(np.asarray(got).flatten())
    print(np.asarray(want).flatten())
    print(np.max(np.abs(np.asarray(got, np.float64) - np.asarray(want, np.float64))))


class DeviceChecker(object):

    def __init__(self, threshold, device_options):
        self._threshold = threshold
        self._device_options = device_options

    def _agree(self, results, names):
        success = True
        for index in range(1, len(results)):
            for position, name in enumerate(names):
                got, want = results[index][position], results[0][position]
                if not np.allclose(got, want, atol=self._threshold, rtol=self._threshold):
                    _report(index, name, got, want)
                    success = False
        return success

    def CheckSimple(self, op, inputs, outputs_to_check, input_device_options=None):
        """Runs `op` on `inputs` once per device in a scratch workspace;
        True when outputs `outputs_to_check` (indices) agree with the first
        device's within the threshold."""
        op = copy.deepcopy(op)
        input_device_options = input_device_options or {}
        previous = workspace.CurrentWorkspace()
        results = []
        workspace.SwitchWorkspace(_WORKSPACE, True)
        try:
            for device_option in self._device_options:
                for name, value in zip(op.input, inputs):
                    workspace.FeedBlob(name, np.array(value),
                                       input_device_options.get(name, device_option))
                op.device_option.CopyFrom(device_option)
                workspace.RunOperatorOnce(op)
                results.append([workspace.FetchBlob(op.output[i]) for i in outputs_to_check])
                workspace.ResetWorkspace()
        finally:
            workspace.SwitchWorkspace(previous)
        return self._agree(results, [op.output[i] for i in outputs_to_check])

    def CheckNet(self, net, inputs=None, blobs_to_check=None, ignore=None):
        """Runs `net` (a NetDef) once per device; True when every blob of
        `blobs_to_check` (default: every op output not in `ignore`) agrees."""
        inputs = inputs or {}
        ignore = ignore or set()
        if blobs_to_check is None:
            blobs_to_check = [name for op in net.op for name in op.output]
        blobs_to_check = [b for b in blobs_to_check if b not in ignore]
        previous = workspace.CurrentWorkspace()
        results = []
        workspace.SwitchWorkspace(_WORKSPACE, True)
        try:
            for device_option in self._device_options:
                for name, value in inputs.items():
                    workspace.FeedBlob(name, value, device_option)
                for op in net.op:
                    op.device_option.CopyFrom(device_option)
                workspace.RunNetOnce(net)
                results.append([workspace.FetchBlob(name) for name in blobs_to_check])
        finally:
            workspace.SwitchWorkspace(previous)
        return self._agree(results, blobs_to_check)

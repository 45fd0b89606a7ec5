"""caffe2.python.gradient_checker: an op's (or net's) gradient against
central finite differences.

GradientChecker.CheckSimple stacks loss = sum(y^2) / 2 over the outputs
`outputs_with_grads` (so dloss/dy = y is fed as each output's gradient),
runs the op's registered gradient ops, and compares the gradient of input
`input_to_check` with (loss(x + h) - loss(x - h)) / 2h per element."""
import numpy as np

from doppio import core, workspace
from doppio.proto import doppio_pb2 as caffe2_pb2


def _dense(grad_blob, like):
    """A gradient blob (dense, or a GradientSlice) as a dense array shaped
    like `like`, repeated indices summed."""
    if isinstance(grad_blob, core.GradientSlice):
        dense = np.zeros_like(like, dtype=np.float64)
        np.add.at(dense, workspace.FetchBlob(str(grad_blob.indices)).astype(np.int64),
                  workspace.FetchBlob(str(grad_blob.values)))
        return dense.astype(like.dtype)
    return workspace.FetchBlob(str(grad_blob))


def _assert_close(value1, value2, threshold, err_msg=''):
    np.testing.assert_allclose(value1, value2, atol=threshold, rtol=threshold, err_msg=err_msg)
    delta = np.abs(np.asarray(value1) - np.asarray(value2)).flatten()
    return np.mean(delta), max(delta)


def _get_grad(net, outputs, outputs_with_grad, input_values, inputs_with_grads):
    grad_net = net.Clone(net.Name() + '_copy')
    grad_map = grad_net.AddGradientOperators(outputs_with_grad)
    for name, value in (input_values or {}).items():
        workspace.FeedBlob(name, value)
    for name in inputs_with_grads:
        if name not in grad_map:
            raise ValueError('{} has no gradient, cannot check net gradient.'.format(name))
    workspace.RunNetOnce(grad_net)
    forward = [(output, workspace.FetchBlob(str(output))) for output in outputs]
    grads = {name: _dense(grad_map[name], workspace.FetchBlob(str(name)))
             for name in inputs_with_grads}
    return forward, grads, grad_net


class NetGradientChecker(object):

    @staticmethod
    def CompareNets(nets, outputs, outputs_with_grad_ids, inputs_with_grads, input_values=None,
                    threshold=0.0000001, print_net_images=False):
        """Nets computing the same function must agree on their outputs and
        on the gradients of `inputs_with_grads`."""
        results = [_get_grad(net, net_outputs, [net_outputs[i] for i in outputs_with_grad_ids],
                             input_values, inputs_with_grads)
                   for net, net_outputs in zip(nets, outputs)]
        first_outputs, first_grads, _ = results[0]
        for net_outputs, net_grads, _ in results[1:]:
            if len(net_outputs) != len(first_outputs):
                raise AssertionError('the nets have different numbers of outputs')
            for index, ((blob1, value1), (blob2, value2)) in enumerate(
                    zip(first_outputs, net_outputs)):
                _assert_close(value1, value2, threshold,
                              err_msg='Different forward pass results for output id {}. '
                              'Corresponding output blobs: {} and {}'.format(index, blob1, blob2))
            if set(net_grads) != set(first_grads):
                raise AssertionError('the nets have gradients for different inputs')
            for blob, value in net_grads.items():
                _assert_close(first_grads[blob], value, threshold,
                              err_msg='Different gradients for input {}'.format(blob))

    @staticmethod
    def Check(net, outputs_with_grad, input_values, input_to_check, step_size=0.0001,
              threshold=0.05, print_net=True):
        """The gradient of sum(outputs_with_grad) with respect to
        `input_to_check` against finite differences; returns (mean, max)
        absolute difference."""
        _, grads, full_net = _get_grad(net, [], outputs_with_grad, input_values,
                                       [input_to_check])

        def loss_at(dim, delta):
            value = input_values[input_to_check].copy()
            value.flat[dim] += delta
            workspace.FeedBlob(input_to_check, value)
            workspace.RunNetOnce(full_net)
            return sum(workspace.FetchBlob(str(o)) for o in outputs_with_grad).sum()

        estimate = np.zeros_like(input_values[input_to_check])
        for dim in range(estimate.size):
            estimate.flat[dim] = (loss_at(dim, step_size) - loss_at(dim, -step_size)) / (
                2 * step_size)
        message = 'Error in gradient check for net_copy {}'.format(net.Name())
        if print_net:
            message += ': {}'.format(net.Proto())
        return _assert_close(grads[input_to_check], estimate, threshold, message)


class GradientChecker(object):

    def __init__(self, stepsize, threshold, device_option=None,
                 workspace_name='gradient_check', input_device_options=None):
        self._stepsize = stepsize
        self._threshold = threshold
        self._device_option = device_option or caffe2_pb2.DeviceOption()
        self._workspace_name = workspace_name
        self._input_device_options = input_device_options or {}

    def GetLossAndGrad(self, op, grad_ops, x, input_name, grad_name, outputs_with_grads):
        """loss = sum of y^2 / 2 over the checked outputs at input x, and
        the gradient the gradient ops compute for `input_name`."""
        workspace.FeedBlob(input_name, x,
                           self._input_device_options.get(input_name, self._device_option))
        workspace.RunOperatorOnce(op)
        loss = 0.0
        for index in outputs_with_grads:
            name = op.output[index]
            value = workspace.FetchBlob(name)
            loss += (value.astype(np.float64) ** 2).sum()
            workspace.FeedBlob(name + '_grad', value, self._device_option)
        loss /= 2.0
        workspace.RunOperatorsOnce(grad_ops)
        return loss, _dense(grad_name, x)

    def CheckSimple(self, op, inputs, input_to_check, outputs_with_grads, grad_ops=None,
                    input_device_options=None):
        """(passed, gradient, finite-difference estimate) for input
        `input_to_check` (an index) of `op` at `inputs`."""
        if input_device_options is not None:
            self._input_device_options = input_device_options
        previous = workspace.CurrentWorkspace()
        if self._workspace_name != previous:
            workspace.SwitchWorkspace(self._workspace_name, True)
        try:
            return self._check(op, inputs, input_to_check, outputs_with_grads, grad_ops)
        finally:
            if self._workspace_name != previous:
                workspace.ResetWorkspace()
                workspace.SwitchWorkspace(previous)

    def _check(self, op, inputs, input_to_check, outputs_with_grads, grad_ops):
        op.device_option.CopyFrom(self._device_option)
        grad_ops_found, grad_inputs = core.GradientRegistry.GetGradientForOp(
            op, [name + '_grad' for name in op.output])
        grad_ops = grad_ops_found if grad_ops is None else grad_ops
        for name, value in zip(op.input, inputs):
            workspace.FeedBlob(name, value,
                               self._input_device_options.get(name, self._device_option))
        x = inputs[input_to_check]
        input_name, grad_name = op.input[input_to_check], grad_inputs[input_to_check]
        if grad_name is None:
            raise ValueError('op {} has no gradient for its input {}'.format(op.type, input_name))
        _, grad = self.GetLossAndGrad(op, grad_ops, x, input_name, grad_name, outputs_with_grads)
        estimate = np.zeros_like(x)
        if estimate.shape != grad.shape:
            raise ValueError('Mismatched gradient shapes: estimated ({}), grad ({})'.format(
                estimate.shape, grad.shape))
        for dim in range(x.size):
            original = x.flat[dim]
            x.flat[dim] = original + self._stepsize
            positive, _ = self.GetLossAndGrad(op, grad_ops, x, input_name, grad_name,
                                              outputs_with_grads)
            x.flat[dim] = original - self._stepsize
            negative, _ = self.GetLossAndGrad(op, grad_ops, x, input_name, grad_name,
                                              outputs_with_grads)
            x.flat[dim] = original
            estimate.flat[dim] = (positive - negative) / self._stepsize / 2
        failed = ~np.isclose(grad, estimate, atol=self._threshold, rtol=self._threshold)
        if np.any(failed):
            index = np.flatnonzero(failed)
            print('Failed. [idx, grad, grad_estimate] are:')
            print(np.vstack([index, grad.flat[index], estimate.flat[index]]).T)
        return not np.any(failed), grad, estimate

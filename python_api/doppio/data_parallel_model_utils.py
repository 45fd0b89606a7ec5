"""Caffe2's data_parallel_model_utils: simple model parallelism on top of a
data-parallel model, by moving some activations (and the ops that make and
read them) of each replica to another GPU.

    activations = GetActivationBlobs(model)
    ShiftActivationDevices(model, activations[len(activations) // 2:],
                           shifts={0: 2, 1: 3})
"""
import logging

from doppio import core
from doppio.data_parallel_model import _Prefix, stripBlobName

log = logging.getLogger('data_parallel_model_utils')


def GetActivationBlobs(model):
    """The activations of device 0's replica, unprefixed, in the order the
    net makes them: blobs made by a forward op, read by a later op, that are
    not parameters and whose gradient the backward pass reads."""
    first_prefix = _Prefix(model._devices[0], model)
    ops = model.net.Proto().op
    all_inputs = set(name for op in ops for name in op.input)
    params = set(str(p) for p in model.GetParams(''))
    activations = []
    for op in ops:
        for blob in op.output:
            if (blob.startswith(first_prefix) and not blob.endswith('_grad') and
                    blob in all_inputs and blob not in params and
                    blob + '_grad' in all_inputs):
                activations.append(stripBlobName(blob))
    return activations


def _AssignDevices(ops, prefix, moved, others, from_device, to_device):
    """Gives each op of `from_device` a device by label propagation: the
    device of the first labelled blob it touches, where an activation's label
    (to_device for the moved ones, from_device for the others) overrides a
    label inherited from another op. Returns blob -> device."""
    device_of = {blob: to_device for blob in moved}
    device_of.update({blob: from_device for blob in others if blob not in moved})
    activations = moved | others
    for op in ops:
        op_device = None
        for blob in list(op.input) + list(op.output):
            if blob in device_of and (op_device is None or blob in activations):
                op_device = device_of[blob]
        if op_device is None:
            op_device = op.device_option.cuda_gpu_id
        for blob in list(op.input) + list(op.output):
            if blob not in device_of and blob.startswith(prefix):
                device_of[blob] = op_device
        op.device_option.cuda_gpu_id = op_device
    return device_of


def _ShiftActivationDevices(model, activations, from_device, to_device):
    prefix = _Prefix(from_device, model)
    moved = set(prefix + a for a in activations)
    others = set(prefix + a for a in GetActivationBlobs(model))
    ops = [op for op in model.net.Proto().op if op.device_option.cuda_gpu_id == from_device]
    device_of = _AssignDevices(ops, prefix, moved, others, from_device, to_device)
    for op in model.param_init_net.Proto().op:
        if op.output and op.output[0] in device_of:
            op.device_option.cuda_gpu_id = device_of[op.output[0]]


def ShiftActivationDevices(model, activations, shifts):
    """Moves the given activations (unprefixed, from GetActivationBlobs) of
    each replica `from_gpu` to `to_gpu` (shifts: {from_gpu: to_gpu}, no GPU
    both a source and a target), with the ops around them, and inserts the
    copies between devices."""
    if set(shifts.values()) & set(shifts):
        raise ValueError('ShiftActivationDevices: a GPU cannot be both a source and a '
                         'target of shifts {}'.format(shifts))
    for from_device, to_device in shifts.items():
        log.info('Shifting %d activations from %s --> %s', len(activations), from_device,
                 to_device)
        _ShiftActivationDevices(model, activations, from_device, to_device)
    param_init_net, blob_to_device = core.InjectCrossDeviceCopies(model.param_init_net)
    net, _ = core.InjectCrossDeviceCopies(model.net, blob_to_device)
    model.param_init_net = param_init_net
    model.net = net

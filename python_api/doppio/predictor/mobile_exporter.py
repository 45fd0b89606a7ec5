"""Caffe2's mobile_exporter: a predict net plus an init net that recreates
its parameters from values fetched out of a workspace.

The pair is what `run_net --init_net init.pb --net predict.pb` and Caffe2's
Predictor load: the init net holds one GivenTensor*Fill per parameter, so it
is self-contained (no checkpoint file next to it).
"""
import numpy as np

from doppio import core
from doppio.proto import caffe2_pb2

# numpy kind -> the fill op that recreates such a tensor exactly. Caffe2 has
# GivenTensorByteStringToUInt8Fill for uint8; Doppio's serving nets carry
# only the types below, and any other type is refused by name.
_FILL_FOR_DTYPE = {
    np.dtype(np.float32): 'GivenTensorFill',
    np.dtype(np.float64): 'GivenTensorDoubleFill',
    np.dtype(np.int32): 'GivenTensorIntFill',
    np.dtype(np.int64): 'GivenTensorInt64Fill',
    np.dtype(np.bool_): 'GivenTensorBoolFill',
}


def add_tensor(net, name, blob):
    """Appends to `net` (a NetDef) an op that creates blob `name` equal to
    the numpy array or bytes/str `blob`."""
    if isinstance(blob, (bytes, str)):
        blob = np.array([blob], dtype=object)
    blob = np.asarray(blob)
    if blob.dtype == object:
        values = [v.encode() if isinstance(v, str) else bytes(v) for v in blob.flat]
        op = core.CreateOperator('GivenTensorStringFill', [], [name],
                                 shape=list(blob.shape), values=values)
    else:
        fill = _FILL_FOR_DTYPE.get(blob.dtype)
        if fill is None:
            raise TypeError('mobile_exporter: blob {!r} has dtype {}, which no '
                            'GivenTensor*Fill op recreates (supported: {})'.format(
                                name, blob.dtype,
                                ', '.join(str(d) for d in _FILL_FOR_DTYPE)))
        values = blob.ravel().tolist()
        op = core.CreateOperator(fill, [], [name], shape=list(blob.shape),
                                 values=values)
    net.op.extend([op])


def Export(workspace, net, params):
    """Returns (init_net, predict_net) NetDefs for `net` (a core.Net or a
    NetDef): init_net fills every blob of `params` with its current value in
    `workspace`; each other external input of the net (the data) gets a 1x1
    placeholder, as Caffe2 does, so the predictor can bind it by name."""
    net_proto = net if isinstance(net, caffe2_pb2.NetDef) else net.Proto()
    param_names = [str(p) for p in params]
    missing = [p for p in param_names if not workspace.HasBlob(p)]
    if missing:
        raise KeyError('mobile_exporter.Export: parameters not in the current '
                       'workspace: {}'.format(', '.join(missing)))

    produced = set()
    inputs = []
    for op in net_proto.op:
        for blob in op.input:
            if blob not in produced and blob not in inputs:
                inputs.append(blob)
        produced.update(op.output)
    for blob in net_proto.external_input:
        if blob not in inputs:
            inputs.append(blob)
    data_inputs = [b for b in inputs if b not in param_names]

    init_net = caffe2_pb2.NetDef()
    init_net.name = net_proto.name + '_init'
    for name in param_names:
        add_tensor(init_net, name, workspace.FetchBlob(name))
    for name in data_inputs:
        init_net.op.extend([core.CreateOperator(
            'GivenTensorFill', [], [name], shape=[1, 1], values=[0.0])])
    init_net.external_output.extend(param_names + data_inputs)

    predict_net = caffe2_pb2.NetDef()
    predict_net.CopyFrom(net_proto)
    del predict_net.external_input[:]
    predict_net.external_input.extend(data_inputs + param_names)
    if not predict_net.external_output:
        outputs = [b for op in net_proto.op for b in op.output]
        predict_net.external_output.extend(outputs[-1:])
    return init_net, predict_net

"""Caffe2's Workspace object (`workspace.C.Workspace`): a workspace held as a
Python object, with Blob and Net handles, next to the module's functions
that act on the current workspace.

    ws = workspace.C.Workspace()          # a new, separate workspace
    ws.create_blob('x').feed(np.ones(3))
    ws.run(core.CreateOperator('Relu', ['x'], ['y']))
    ws.blobs['y'].fetch()
    workspace.C.Workspace.current.blobs   # the current workspace's

Each object names one of the process's workspaces (the C++ registry's);
every call switches to it, acts, and switches back, so objects and the
module functions can be mixed. Not thread-safe (neither is switching
workspaces).
"""
import contextlib
import itertools

import numpy

from doppio import _C as C
from doppio.proto import caffe2_pb2

_object_names = itertools.count()


@contextlib.contextmanager
def _inside(name):
    previous = C.current_workspace()
    if previous == name:
        yield
        return
    C.switch_workspace(name, True)
    try:
        yield
    finally:
        C.switch_workspace(previous, True)


class Blob(object):
    """One blob of a workspace: feed(array), fetch()."""

    def __init__(self, workspace_name, name, feed, fetch):
        self._workspace = workspace_name
        self._name = name
        self._feed_fn = feed
        self._fetch_fn = fetch

    def feed(self, value, device_option=None):
        with _inside(self._workspace):
            return self._feed_fn(self._name, value, device_option)

    def fetch(self):
        with _inside(self._workspace):
            return self._fetch_fn(self._name)

    def is_tensor(self):
        return not isinstance(self.fetch(), bytes)

    def tensor(self):
        """The blob's tensor, to read and write in place (Caffe2's
        TensorCPU)."""
        return Tensor(self)

    def serialize(self, name):
        """The blob as the bytes of one BlobProto named `name`."""
        with _inside(self._workspace):
            data = C.serialize_blob(self._name)
        proto = caffe2_pb2.BlobProto()
        proto.ParseFromString(data)
        proto.name = name
        return proto.SerializeToString()

    def deserialize(self, serialized):
        """Sets the blob from the bytes serialize (or Caffe2) made."""
        with _inside(self._workspace):
            C.deserialize_blob(self._name, serialized)


class Tensor(object):
    """Caffe2's TensorCPU handle on a blob: `data` is a numpy array over the
    tensor's memory (writes land in the blob), `init` reshapes it to zeros
    of a type, `feed` and `fetch` copy in and out. String tensors' `data`
    is a copy."""

    def __init__(self, blob):
        self._blob = blob

    @property
    def data(self):
        with _inside(self._blob._workspace):
            return C.tensor_view(self._blob._name)

    @property
    def _shape(self):
        return list(self.data.shape)

    def init(self, dims, data_type):
        """Makes the tensor zeros of shape `dims` and TensorProto type
        `data_type`."""
        if data_type == caffe2_pb2.TensorProto.STRING:
            raise RuntimeError('a string tensor cannot be initialized in place from '
                               'Python; feed an object array of bytes instead')
        dtype = _NUMPY_TYPES.get(data_type)
        if dtype is None:
            raise RuntimeError('cannot initialize a tensor of TensorProto type {}'
                               .format(data_type))
        self.feed(numpy.zeros(dims, dtype=dtype))

    def feed(self, value):
        return self._blob.feed(value)

    def fetch(self):
        return self._blob.fetch()


_NUMPY_TYPES = {
    caffe2_pb2.TensorProto.FLOAT: numpy.float32,
    caffe2_pb2.TensorProto.DOUBLE: numpy.float64,
    caffe2_pb2.TensorProto.INT32: numpy.int32,
    caffe2_pb2.TensorProto.INT64: numpy.int64,
    caffe2_pb2.TensorProto.INT16: numpy.int16,
    caffe2_pb2.TensorProto.INT8: numpy.int8,
    caffe2_pb2.TensorProto.UINT16: numpy.uint16,
    caffe2_pb2.TensorProto.UINT32: numpy.uint32,
    caffe2_pb2.TensorProto.UINT64: numpy.uint64,
    caffe2_pb2.TensorProto.UINT8: numpy.uint8,
    caffe2_pb2.TensorProto.BOOL: numpy.bool_,
    caffe2_pb2.TensorProto.FLOAT16: numpy.float16,
}


class Net(object):
    """A net created in a workspace: run() runs it once."""

    def __init__(self, workspace_name, name):
        self._workspace = workspace_name
        self.name = name

    def run(self):
        with _inside(self._workspace):
            C.run_net(self.name, 1)
        return True


class _Current(object):
    def __get__(self, instance, owner):
        return owner(_name=C.current_workspace())


class Workspace(object):
    """A workspace of the process: new and empty, or (Workspace.current) the
    current one."""

    current = _Current()

    # The module's feed / fetch / proto helpers (doppio.workspace sets them:
    # this module must not import that one, which imports this one).
    _feed = None
    _fetch = None
    _stringify = None

    def __init__(self, _name=None):
        self._name = _name if _name is not None else '_workspace_object_{}'.format(
            next(_object_names))
        with _inside(self._name):
            pass

    @property
    def blobs(self):
        with _inside(self._name):
            names = list(C.blobs())
        return {name: self._blob(name) for name in names}

    @property
    def nets(self):
        with _inside(self._name):
            names = list(C.nets())
        return {name: Net(self._name, name) for name in names}

    def _blob(self, name):
        return Blob(self._name, name, type(self)._feed, type(self)._fetch)

    def create_blob(self, name):
        with _inside(self._name):
            C.create_blob(name)
        return self._blob(name)

    def create_net(self, net, overwrite=False):
        proto = net.Proto() if hasattr(net, 'Proto') else net
        if type(proto).__name__ != 'NetDef':
            raise TypeError('create_net takes a Net or NetDef, not {}'.format(
                type(net).__name__))
        with _inside(self._name):
            C.create_net(type(self)._stringify(proto), bool(overwrite))
        return Net(self._name, proto.name)

    def run(self, obj):
        """Runs an OperatorDef, a Net / NetDef (once), a Plan / PlanDef, or
        a Net handle from create_net."""
        if isinstance(obj, Net):
            return obj.run()
        proto = obj.Proto() if hasattr(obj, 'Proto') else obj
        kind = type(proto).__name__
        if kind not in ('PlanDef', 'NetDef', 'OperatorDef'):
            raise ValueError("Don't know how to do Workspace.run() on {}".format(kind))
        data = type(self)._stringify(proto)
        with _inside(self._name):
            if kind == 'PlanDef':
                C.run_plan(data)
            elif kind == 'NetDef':
                C.run_net_once(data)
            else:
                C.run_operator_once(data)
        return True

    def _run_net(self, data):
        with _inside(self._name):
            C.run_net_once(data)
        return True

    def _run_operator(self, data):
        with _inside(self._name):
            C.run_operator_once(data)
        return True

    def _run_plan(self, data):
        with _inside(self._name):
            C.run_plan(data)
        return True


class Predictor(object):
    """Caffe2's Predictor: an init net and a predict net (NetDefs or their
    bytes) in a workspace of their own. run(inputs) feeds a list to the
    predict net's first external inputs in order (or a dict by name), runs
    it, and returns its external outputs in order.

    With `optimize` (the default; a pass list as optimizeForInference takes,
    or False) the net it runs goes through the inference passes once the init
    net has filled the weights; its external outputs stay as the net computes
    them (folding Conv + SpatialBN reassociates floats: ~1e-6 relative)."""

    def __init__(self, init_net, predict_net, optimize=True):
        from doppio import transformations
        from doppio.proto import doppio_pb2
        self._predict_net = doppio_pb2.NetDef()
        self._predict_net.ParseFromString(Workspace._stringify(predict_net))
        self._workspace = Workspace()
        self._workspace._run_net(Workspace._stringify(init_net))
        running = doppio_pb2.NetDef()
        running.CopyFrom(self._predict_net)
        # Inputs the init net did not make are fed at run time.
        with _inside(self._workspace._name):
            for name in self._predict_net.external_input:
                if not C.has_blob(name):
                    C.create_blob(name)
            transformations.optimizeWhenServing(running, optimize, keep=running.external_output)
        self._workspace.create_net(running, overwrite=True)
        self._running_net = running

    @property
    def running_net(self):
        """The NetDef run: the predict net, after the passes when optimizing."""
        return self._running_net

    def run(self, inputs):
        names = list(self._predict_net.external_input)
        if isinstance(inputs, dict):
            items = list(inputs.items())
        else:
            if len(inputs) > len(names):
                raise ValueError('Predictor.run: {} inputs for a net with {} external inputs'
                                 .format(len(inputs), len(names)))
            items = list(zip(names, inputs))
        for name, value in items:
            self._workspace._blob(name).feed(value)
        Net(self._workspace._name, self._predict_net.name).run()
        return [self._workspace._blob(name).fetch()
                for name in self._predict_net.external_output]

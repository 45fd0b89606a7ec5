"""Graph building, the heart of caffe2.python.core: blob references,
operator protos, the Python face of the gradient registry, and Net, a NetDef
with operator sugar (`net.Relu(x, y)`). doppio.core re-exports all of it.

Below workspace, plan and cross_device in the import order (they build on
Net), so it reaches the runtime through doppio._C, not doppio.workspace."""

import collections
import os
import sys
import collections.abc

import numpy as np
from google.protobuf.message import Message

from doppio import _C
from doppio import scope
from doppio.core_blob import (  # noqa: F401  (core's names)
    BlobReference, GradientSlice, IsOperator, IsOperatorWithEngine, RefreshRegisteredOperators,
    RegisteredOperators, ScopedBlobReference, ScopedName)
from doppio.core_gradient import GradientRegistry
from doppio.core_net_rewrites import NetRewrites
from doppio.proto import doppio_pb2 as caffe2_pb2

# Caffe2 exposes these through core as well.
DataType = caffe2_pb2.TensorProto
DeviceScope = scope.DeviceScope
NameScope = scope.NameScope

# A sparse gradient: the rows touched (indices) and their gradients (values).

# Set by workspace.StartImmediate: called with each op a Net creates.
_immediate_runner = None
# Set by net_builder (above this module): the active NetBuilder's name.
_net_name_prefix = None


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _caller_outside_package():
    """(file, line, function) of the innermost frame not in this package:
    the script line that asked for an op."""
    frame = sys._getframe(1)
    while frame is not None and os.path.dirname(
            os.path.abspath(frame.f_code.co_filename)) == _PACKAGE_DIR:
        frame = frame.f_back
    if frame is None:
        return ('<unknown>', 0, '<unknown>')
    return (frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)


def SetNetNamePrefix(prefix_function):
    """Installs the function giving the prefix of new nets' names."""
    global _net_name_prefix
    _net_name_prefix = prefix_function


def SetImmediateRunner(runner):
    """Installs (or, with None, removes) the function that runs each op a
    Net creates at once: workspace's immediate mode, which lives above this
    module."""
    global _immediate_runner
    _immediate_runner = runner



def SetPerOpEnginePref(op_engine_pref):
    """Caffe2's per-op engine preference: {device_type: {op_type: [engine,
    ...]}}. CreateOperator tries these engines after the op's own and before
    the device-wide ones; every op type named must have a kernel on its
    device."""
    _C.set_per_op_engine_pref(op_engine_pref)


def SetGlobalEnginePref(global_engine_pref):
    """{device_type: [engine, ...]}: tried for every op on the device, after
    its own and its type's preferred engines."""
    _C.set_global_engine_pref(global_engine_pref)


def SetEnginePref(per_op_engine_pref, global_engine_pref):
    """Both preferences at once; SetEnginePref({}, {}) clears them (Caffe2's
    test utilities do that before every test)."""
    _C.set_engine_pref(per_op_engine_pref, global_engine_pref)


def SetOpEnginePref(op_type, op_engine_pref):
    """{device_type: [engine, ...]} for one op type."""
    _C.set_op_engine_pref(op_type, op_engine_pref)


def DeviceOption(device_type, device_id=0, random_seed=None, node_name=None,
                 numa_node_id=None, cuda_gpu_id=None):
    """A DeviceOption proto; the device id goes to cuda_gpu_id as in Caffe2's
    standalone proto (cuda_gpu_id= is accepted as Caffe2's older keyword)."""
    option = caffe2_pb2.DeviceOption()
    option.device_type = device_type
    option.cuda_gpu_id = device_id if cuda_gpu_id is None else cuda_gpu_id
    if random_seed is not None:
        option.random_seed = random_seed
    if node_name is not None:
        option.node_name = node_name
    if numa_node_id is not None:
        option.numa_node_id = numa_node_id
    return option


def device_option_equal(opt1, opt2, ignore_node_name=True, ignore_random_seed=True):
    if not opt1 or not opt2:
        return opt1 == opt2
    if not ignore_node_name and opt1.node_name != opt2.node_name:
        return False
    if not ignore_random_seed and opt1.random_seed != opt2.random_seed:
        return False
    if not opt1.device_type or not opt2.device_type:
        # Either is CPU: the GPU id does not matter.
        return opt1.device_type == opt2.device_type
    return opt1.cuda_gpu_id == opt2.cuda_gpu_id


def _RectifyInputOutput(blobs, net=None):
    """A list of BlobReferences; plain strings get the current name scope."""
    if isinstance(blobs, (str, bytes)):
        name = blobs.decode('utf-8') if isinstance(blobs, bytes) else blobs
        return [ScopedBlobReference(name, net=net)]
    if type(blobs) is BlobReference:
        return [blobs]
    if type(blobs) in (list, tuple):
        rectified = []
        for blob in blobs:
            if isinstance(blob, (str, bytes)):
                name = blob.decode('utf-8') if isinstance(blob, bytes) else blob
                rectified.append(ScopedBlobReference(name, net=net))
            elif type(blob) is BlobReference:
                rectified.append(blob)
            else:
                raise TypeError('I/O blob #{} of unsupported type: {} of type {}'.format(
                    len(rectified), str(blob), type(blob)))
        return rectified
    raise TypeError('Unknown input/output type: %s of type %s.' % (str(blobs), type(blobs)))


def MakeArgument(key, value):
    """An Argument proto, typed by the value as in caffe2.python.utils:
    float -> f, int/bool -> i, str/bytes -> s, NetDef -> n, other protos ->
    serialized s, and lists of those -> floats/ints/strings/nets."""
    argument = caffe2_pb2.Argument()
    argument.name = key
    if isinstance(value, np.ndarray) and value.dtype.type is np.float32:
        argument.floats.extend(value.flatten().tolist())
        return argument
    if isinstance(value, np.ndarray):
        value = value.flatten().tolist()
    elif isinstance(value, np.generic):
        value = value.item()
    iterable = isinstance(value, collections.abc.Iterable)

    def is_float(v):
        return type(v) in (float, np.float64, np.float32)

    def is_int(v):
        return type(v) in (int, bool, np.int64, np.int32)

    if type(value) is float:
        argument.f = value
    elif type(value) in (int, bool):
        # Caffe2 stores bools as ints.
        argument.i = value
    elif isinstance(value, bytes):
        argument.s = value
    elif isinstance(value, str):
        argument.s = value.encode('utf-8')
    elif isinstance(value, caffe2_pb2.NetDef):
        argument.n.CopyFrom(value)
    elif isinstance(value, Message):
        argument.s = value.SerializeToString()
    elif iterable and all(is_float(v) for v in value):
        argument.floats.extend(float(v) for v in value)
    elif iterable and all(is_int(v) for v in value):
        argument.ints.extend(int(v) for v in value)
    elif iterable and all(isinstance(v, (str, bytes)) for v in value):
        argument.strings.extend(v.encode('utf-8') if isinstance(v, str) else v for v in value)
    elif iterable and all(isinstance(v, caffe2_pb2.NetDef) for v in value):
        argument.nets.extend(value)
    elif iterable and all(isinstance(v, Message) for v in value):
        argument.strings.extend(v.SerializeToString() for v in value)
    elif iterable:
        raise ValueError('Unknown iterable argument type: key={} value={}, value type={}[{}]'.format(
            key, value, type(value), set(type(v) for v in value)))
    else:
        raise ValueError('Unknown argument type: key={} value={}, value type={}'.format(
            key, value, type(value)))
    return argument


def CreateOperator(operator_type, inputs, outputs, name='', control_input=None,
                   device_option=None, arg=None, engine=None, **kwargs):
    """An OperatorDef. Plain-string blob names take the current name scope;
    the device is `device_option`, else the current DeviceScope's, else unset;
    `random_seed=` goes into the device option; other keywords become
    arguments (see MakeArgument)."""
    operator = caffe2_pb2.OperatorDef()
    operator.type = operator_type
    operator.name = name
    operator.input.extend(str(i) for i in _RectifyInputOutput(inputs))
    operator.output.extend(str(o) for o in _RectifyInputOutput(outputs))
    if control_input:
        operator.control_input.extend(str(i) for i in _RectifyInputOutput(control_input))
    if device_option is not None:
        operator.device_option.CopyFrom(device_option)
    elif scope.CurrentDeviceScope() is not None:
        operator.device_option.CopyFrom(scope.CurrentDeviceScope())
    if engine is not None:
        operator.engine = engine
    if 'random_seed' in kwargs:
        operator.device_option.random_seed = kwargs.pop('random_seed')
    if arg is not None:
        operator.arg.extend(arg)
    for key, value in kwargs.items():
        operator.arg.add().CopyFrom(MakeArgument(key, value))
    return operator


class Net(NetRewrites):
    """A NetDef under construction. Any registered operator type is a method:
    `net.FC([x, w, b], 'y', axis=1)` appends an FC and returns its output(s)
    as BlobReferences; leaving the outputs out (or giving a count) names them
    automatically."""

    # Net names handed out in this process, so two nets built from the same
    # base name do not collide when created in one workspace.
    _net_names_used = set()

    @staticmethod
    def _get_next_net_name(basename):
        # Inside a net_builder.NetBuilder, nets are named under the builder's.
        prefix = _net_name_prefix() if _net_name_prefix is not None else ''
        name = basename = '/'.join(x for x in [prefix, basename] if x)
        next_idx = 1
        while name in Net._net_names_used:
            name = basename + '_' + str(next_idx)
            next_idx += 1
        Net._net_names_used.add(name)
        return name

    def __init__(self, name_or_proto):
        self._op_outputs = set()
        self._external_input_map = set()
        self._recreate_lookup_tables = False
        self._attr_dict = collections.defaultdict(list)
        self._registered_blob_names = set()
        # op index -> (file, line, function) of the script line creating it.
        self._op_sites = {}
        if isinstance(name_or_proto, caffe2_pb2.NetDef):
            self._net = caffe2_pb2.NetDef()
            self._net.CopyFrom(name_or_proto)
            self._RecreateLookupTables()
            # Continue automatic names after the highest one already used.
            prefix = self._net.name + '_blob_'
            indices = [-1]
            for op in self._net.op:
                for blob in list(op.input) + list(op.output):
                    if blob.startswith(prefix) and blob[len(prefix):].isdigit():
                        indices.append(int(blob[len(prefix):]))
            self._next_name_index = max(indices) + 1
            name = self._net.name
        elif name_or_proto is None or isinstance(name_or_proto, (str, BlobReference)):
            self._net = caffe2_pb2.NetDef()
            self._next_name_index = 0
            name = '' if name_or_proto is None else str(name_or_proto)
        else:
            raise TypeError('Net() takes a name or a NetDef, got {}'.format(
                type(name_or_proto).__name__))
        self._net.name = Net._get_next_net_name(name)

    # ---- the proto ----

    def Name(self):
        return self._net.name

    def __str__(self):
        return self.Name()

    def Proto(self):
        """The NetDef itself; callers may edit it."""
        self._recreate_lookup_tables = True
        return self._net

    def _RecreateLookupTables(self):
        self._op_outputs = set(o for op in self._net.op for o in op.output)
        self._external_input_map = set(self._net.external_input)
        self._recreate_lookup_tables = False

    def _ExtendOps(self, new_ops):
        self._net.op.extend(new_ops)
        for op in new_ops:
            self._op_outputs.update(str(o) for o in op.output)

    def BlobIsDefined(self, blob):
        """Whether an op of this net writes `blob` or it is an external input."""
        if self._recreate_lookup_tables:
            self._RecreateLookupTables()
        name = str(blob)
        return name in self._op_outputs or name in self._external_input_map

    def UsesBlob(self, blob):
        name = str(blob)
        return any(name in op.input or name in op.output for op in self._net.op)

    def GetBlobRef(self, blob_name):
        """A reference to a blob this net defines (KeyError otherwise)."""
        blob_name = str(blob_name)
        if not self.BlobIsDefined(blob_name):
            raise KeyError('Net does not define blob {}'.format(blob_name))
        return BlobReference(blob_name, self)

    def UsedBlobNames(self):
        """Every blob an op reads or writes, and the external inputs and
        outputs."""
        names = set(self._net.external_input) | set(self._net.external_output)
        for op in self._net.op:
            names.update(op.input)
            names.update(op.output)
        return names

    # ---- attributes: user objects kept with the net (no semantics here;
    # net_builder and task register setup steps this way) ----

    def add_attribute(self, name, obj):
        self._attr_dict[name].append(obj)

    def get_attributes(self, name):
        return self._attr_dict.get(name, [])

    # ---- external inputs and outputs ----

    @property
    def external_inputs(self):
        return [BlobReference(name, self) for name in self._net.external_input]

    @property
    def external_outputs(self):
        return [BlobReference(name, self) for name in self._net.external_output]

    def AddExternalInput(self, *inputs):
        """Declares blobs the net reads without producing; returns their
        references (one, or a list)."""
        if not inputs:
            raise ValueError('AddExternalInput needs at least one blob')
        if self._recreate_lookup_tables:
            self._RecreateLookupTables()
        names = [str(i) for i in inputs]
        for name in names:
            if name in self._external_input_map:
                raise ValueError('Net {} already contains an input named {}'.format(
                    self.Name(), name))
        refs = []
        for name in names:
            self._net.external_input.append(name)
            self._external_input_map.add(name)
            refs.append(BlobReference(name, self))
        return refs[0] if len(refs) == 1 else refs

    def AddExternalInputs(self, *inputs):
        return self.AddExternalInput(*inputs)

    def AddExternalOutput(self, *outputs):
        """Declares blobs the net produces for its caller; each must be
        written by an op of the net or be an external input."""
        for output in outputs:
            if not self.BlobIsDefined(output):
                raise ValueError('Net {}: cannot declare {} an external output: '
                                 'no op writes it'.format(self.Name(), output))
        for output in outputs:
            self._net.external_output.append(str(output))
        return outputs[0] if len(outputs) == 1 else list(outputs)

    def AddExternalOutputs(self, *outputs):
        return self.AddExternalOutput(*outputs)

    def AddScopedExternalInputs(self, *inputs):
        refs = self.AddExternalInput(*[ScopedName(str(i)) for i in inputs])
        return refs if isinstance(refs, list) else [refs]

    def AddScopedExternalOutputs(self, *outputs):
        return self.AddExternalOutput(*[ScopedBlobReference(str(o)) for o in outputs])

    # ---- names ----

    def NextName(self, prefix=None, output_id=None):
        """An unused blob name: `<net>/<prefix>[:<output_id>]` (with _2, _3 ...
        while taken), or `<net>_blob_<n>` without a prefix."""
        if prefix:
            base = self._net.name + '/' + prefix
            output_name = base + ('' if output_id is None else ':' + str(output_id))
            index = 2
            while self.BlobIsDefined(ScopedName(output_name)):
                output_name = base + '_' + str(index)
                if output_id is not None:
                    output_name += ':' + str(output_id)
                index += 1
            return output_name
        output_name = self._net.name + '_blob_' + str(self._next_name_index)
        self._next_name_index += 1
        return output_name

    def NextBlob(self, prefix='unnamed'):
        """`prefix` itself if no op of this net writes it and no earlier
        call returned it, else `prefix_auto_<k>`: repeated calls return
        different names, and the same calls on two nets the same ones."""
        base = BlobReference(str(prefix), self)
        blob, index = base, 0
        while str(blob) in self._registered_blob_names or self.BlobIsDefined(blob):
            blob = BlobReference('{}_auto_{}'.format(base, index), self)
            index += 1
        self._registered_blob_names.add(str(blob))
        return blob

    def NextScopedBlob(self, prefix='unnamed'):
        """NextBlob of the prefix under the current name scope."""
        return self.NextBlob(ScopedName(prefix))

    def _CheckLookupTables(self):
        """For tests: the lookup tables agree with the proto."""
        outputs = set(o for op in self._net.op for o in op.output)
        if self._recreate_lookup_tables:
            self._RecreateLookupTables()
        assert outputs <= self._op_outputs, outputs - self._op_outputs
        assert set(self._net.external_input) <= self._external_input_map

    # ---- operators ----

    def _CreateAndAddToSelf(self, op_type, inputs, outputs=None, **kwargs):
        inputs = _RectifyInputOutput(inputs)
        for blob in inputs:
            # Inputs nothing in the net writes are the net's external inputs.
            if not self.BlobIsDefined(blob):
                self.AddExternalInput(blob)
        if outputs is None:
            outputs = self.NextName(prefix=op_type)
        elif type(outputs) is int:
            outputs = [self.NextName(prefix=op_type, output_id=i) for i in range(outputs)]
        outputs = _RectifyInputOutput(outputs, net=self)
        op = CreateOperator(op_type, inputs, outputs, **kwargs)
        self._op_sites[len(self._net.op)] = _caller_outside_package()
        self._ExtendOps([op])
        if _immediate_runner is not None:
            _immediate_runner(op)
        if len(op.output) == 0:
            return None
        if len(op.output) == 1:
            return BlobReference(op.output[0], self)
        return tuple(BlobReference(o, self) for o in op.output)

    def __getattr__(self, op_type):
        if op_type.startswith('__') or op_type.startswith('_'):
            raise AttributeError(op_type)
        if not IsOperator(op_type):
            raise AttributeError('Method ' + op_type + ' is not a registered operator.')
        return lambda *args, **kwargs: self._CreateAndAddToSelf(op_type, *args, **kwargs)

    def Const(self, array, blob_out=None, dtype=None):
        """A GivenTensor*Fill (ConstantFill for a bool) producing `array`."""
        if isinstance(array, bool):
            return self.ConstantFill([], blob_out or 1, dtype=DataType.BOOL, value=array)
        array = np.array(array) if dtype is None else np.array(array, dtype=dtype)
        if array.dtype == np.int32:
            fill = self.GivenTensorIntFill
        elif array.dtype == np.int64:
            fill = self.GivenTensorInt64Fill
        elif array.dtype.kind in 'SUO':
            fill = self.GivenTensorStringFill
        elif array.dtype == np.bool_:
            fill = self.GivenTensorBoolFill
        else:
            fill = self.GivenTensorFill
        return fill([], blob_out or 1, shape=list(array.shape),
                    values=array.flatten().tolist())

    def AddGradientOperators(self, ys, skip=0):
        """Appends the backward pass of ops[skip:] for the losses `ys` (a list:
        gradients of ones; or a dict loss -> gradient blob or None) and
        returns {blob: gradient BlobReference or GradientSlice}. No loss at
        all is an error here (a model's backward pass needs one), though
        GetBackwardPass itself returns nothing for none, as Caffe2's."""
        if not ys:
            raise RuntimeError('AddGradientOperators on net {!r}: no loss blobs given'.format(
                self.Name()))
        grad_ops, input_to_grad = GradientRegistry.GetBackwardPass(
            self._net.op[skip:], ys, net_name=self.Name())
        # Given loss gradients are fed from outside; this runtime checks that
        # every input a net reads is external or made inside it.
        for grad in (ys.values() if isinstance(ys, dict) else []):
            names = [] if grad is None else (
                list(grad) if isinstance(grad, GradientSlice) else [grad])
            for name in names:
                if not self.BlobIsDefined(name):
                    self.AddExternalInput(str(name))
        self._ExtendOps(grad_ops)
        return input_to_grad

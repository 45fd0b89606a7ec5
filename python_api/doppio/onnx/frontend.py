"""Caffe2 NetDefs to ONNX, as caffe2.python.onnx.frontend:

    model = caffe2_net_to_onnx_model(predict_net, init_net,
                                     {'data': (onnx.TensorProto.FLOAT, (1, 1, 28, 28))})

`predict_net` is an inference net (ExtractPredictorNet's, or a deploy
model's), `init_net` the net that fills its parameters (mobile_exporter's
GivenTensor*Fill ops, or any init net Doppio can run); `value_info` gives
the dtype (an onnx.TensorProto enum) and shape of each data input. The init
net's outputs become initializers; an init op that fills a blob named in
value_info is the placeholder of a data input and is dropped, as in Caffe2.

Like Caffe2's frontend this runs the nets once, in a scratch workspace, to
learn the dtype and shape of every blob. Unlike it, blob names survive: a
blob written more than once (in-place Relu, Scale ...) keeps its name for
its last version and only the earlier versions get suffixes, so the model's
inputs and outputs are the net's own external input and output names.

Ops without an ONNX equivalent raise `Unsupported` naming the op's index,
name and type (the table is frontend_ops.TRANSLATORS).
"""
import warnings

import numpy as np
from onnx import checker, defs, helper, numpy_helper

from doppio import workspace
from doppio.onnx.frontend_ops import (NUMPY_TO_ONNX_DTYPE, ONNX_TO_NUMPY_DTYPE,
                                      TRANSLATORS, ExportContext, OpView, Unsupported)
from doppio.proto import caffe2_pb2

__all__ = ['Caffe2Frontend', 'Unsupported', 'caffe2_net_to_onnx_graph',
           'caffe2_net_to_onnx_model', 'caffe2_init_net_to_initializer',
           'exportable_op_types']

# The oldest opset whose ops the table targets (Caffe2's frontend targeted
# 9); the newest is what the installed onnx package knows.
MIN_OPSET_VERSION = 9
_SCRATCH_WORKSPACE = '__doppio_onnx_frontend__'


def exportable_op_types():
    return sorted(TRANSLATORS)


def _as_netdef(net, what):
    if net is None:
        return None
    if hasattr(net, 'Proto'):
        net = net.Proto()
    if not isinstance(net, caffe2_pb2.NetDef):
        raise TypeError('doppio.onnx: {} must be a NetDef or a core.Net, not {}'.format(
            what, type(net).__name__))
    # Never the caller's message: the frontend edits its copies.
    copy = caffe2_pb2.NetDef()
    copy.CopyFrom(net)
    return copy


def _checked_opset(opset_version):
    newest = defs.onnx_opset_version()
    if opset_version is None:
        return newest
    if isinstance(opset_version, bool) or not isinstance(opset_version, (int, np.integer)):
        raise TypeError('doppio.onnx: opset_version must be an int, not {!r}'.format(
            opset_version))
    if not MIN_OPSET_VERSION <= opset_version <= newest:
        raise ValueError('doppio.onnx: opset_version {} is outside the supported range '
                         '[{}, {}]'.format(opset_version, MIN_OPSET_VERSION, newest))
    return int(opset_version)


def _checked_value_info(value_info):
    """name -> (numpy dtype, shape tuple), validated."""
    if value_info is None:
        return {}
    if not isinstance(value_info, dict):
        raise ValueError('doppio.onnx: pass value_info as a name -> (type, shape) dict')
    checked = {}
    for name, entry in value_info.items():
        try:
            elem_type, shape = entry
            shape = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            raise ValueError('doppio.onnx: value_info[{!r}] is {!r}; expected (onnx '
                             'TensorProto type, shape)'.format(name, entry))
        if not isinstance(elem_type, int) or elem_type not in ONNX_TO_NUMPY_DTYPE:
            raise ValueError('doppio.onnx: value_info[{!r}] has ONNX type {!r}, which '
                             'Doppio does not export'.format(name, elem_type))
        if any(d < 0 for d in shape):
            raise ValueError('doppio.onnx: value_info[{!r}] has a negative dim in {}'.format(
                name, shape))
        checked[str(name)] = (ONNX_TO_NUMPY_DTYPE[elem_type], shape)
    return checked


class _ScratchWorkspace(object):
    """Runs the nets away from the caller's blobs, then empties and leaves."""

    def __enter__(self):
        self._previous = workspace.CurrentWorkspace()
        workspace.SwitchWorkspace(_SCRATCH_WORKSPACE, True)
        workspace.ResetWorkspace()
        return self

    def __exit__(self, *exc):
        workspace.ResetWorkspace()
        workspace.SwitchWorkspace(self._previous, True)
        return False


def _cpu_copy(op):
    """The op on the CPU: shapes do not depend on the device, and a GPU-made
    net must export on a machine without one."""
    copy = caffe2_pb2.OperatorDef()
    copy.CopyFrom(op)
    copy.ClearField('device_option')
    # A seeded random fill must give the values the caller's run gave.
    if op.device_option.HasField('random_seed'):
        copy.device_option.random_seed = op.device_option.random_seed
    return copy


def _run_init_net(init_net):
    """Runs `init_net` (in the current, scratch workspace); returns its
    outputs by name, in the order the ops write them."""
    for index, op in enumerate(init_net.op):
        try:
            workspace.RunOperatorOnce(_cpu_copy(op))
        except RuntimeError as e:
            raise ValueError('doppio.onnx: init net op #{} (type {}) failed: {}'.format(
                index, op.type, e))
    names = []
    for op in init_net.op:
        names += [b for b in op.output if b not in names]
    return {name: np.array(workspace.FetchBlob(name)) for name in names}


def _drop_placeholder_fills(init_net, value_info):
    """Caffe2's _filter_fake_init: mobile_exporter fills each data input
    with a 1x1 placeholder; value_info says it is an input instead."""
    keep = [op for op in init_net.op
            if not (len(op.output) == 1 and op.output[0] in value_info and
                    (op.type.startswith('GivenTensor') or op.type == 'ConstantFill'))]
    del init_net.op[:]
    init_net.op.extend(keep)


def caffe2_init_net_to_initializer(init_net):
    """The init net's outputs as ONNX TensorProtos, sorted by name."""
    init_net = _as_netdef(init_net, 'init_net')
    with _ScratchWorkspace():
        values = _run_init_net(init_net)
    return [numpy_helper.from_array(values[name], name=name) for name in sorted(values)]


class _SsaNet(object):
    """The predict net in SSA form: every write of a blob is a new value.
    The last write keeps the blob's name (unless the blob is also a graph
    input or initializer, whose name its first version holds)."""

    def __init__(self, predict_net, defined):
        self.inputs = []
        self.read_before_written = []
        versions = {name: 0 for name in defined}
        writes = []
        for index, op in enumerate(predict_net.op):
            reads = []
            for blob in op.input:
                if blob not in versions:
                    self.read_before_written.append((index, op, blob))
                    versions[blob] = 0
                reads.append((blob, versions[blob]))
            written = []
            for blob in op.output:
                versions[blob] = versions.get(blob, 0) + 1
                written.append((blob, versions[blob]))
            self.inputs.append(reads)
            writes.append(written)
        self.outputs = writes
        self.final_versions = versions
        self._defined_at_start = set(defined) | {b for _, _, b in self.read_before_written}
        self._taken = set(versions)
        self._names = {}

    def name(self, blob, version):
        key = (blob, version)
        if key not in self._names:
            if version == 0 or (version == self.final_versions[blob] and
                                blob not in self._defined_at_start):
                self._names[key] = blob
            else:
                candidate, k = '{}_{}'.format(blob, version), 0
                while candidate in self._taken:
                    k += 1
                    candidate = '{}_{}_{}'.format(blob, version, k)
                self._taken.add(candidate)
                self._names[key] = candidate
        return self._names[key]

    def all_names(self):
        return set(self._taken)


def _random_input(dtype, shape, rng):
    """Data to trace shapes with: floats from N(0, 1); integers and bools
    all 0, which is valid wherever an index or a count is expected."""
    if dtype.kind == 'f':
        return rng.standard_normal(shape).astype(dtype)
    return np.zeros(shape, dtype)


def _trace(predict_net, ssa, initializers, value_info, graph_inputs):
    """Runs the predict net op by op (in the scratch workspace, after the
    init net) and returns SSA name -> (numpy dtype, shape) for every value,
    so an in-place op's input and output each keep their own shape."""
    rng = np.random.RandomState(0)
    types = {}
    for name, value in initializers.items():
        types[name] = (value.dtype, value.shape)
    for name in graph_inputs:
        dtype, shape = value_info[name]
        workspace.FeedBlob(name, _random_input(dtype, shape, rng))
        types[name] = (dtype, shape)
    for index, op in enumerate(predict_net.op):
        try:
            workspace.RunOperatorOnce(_cpu_copy(op))
        except RuntimeError as e:
            hint = ''
            if any(value_info[name][0].kind != 'f' for name in graph_inputs):
                hint = (' (integer and bool inputs are traced as zeros; an input whose '
                        'values matter, such as a shape, belongs in init_net)')
            raise ValueError('doppio.onnx: op #{} (type {}) failed on inputs of the shapes '
                             'in value_info{}: {}'.format(index, op.type, hint, e))
        for blob, version in ssa.outputs[index]:
            value = np.asarray(workspace.FetchBlob(blob))
            if value.dtype not in NUMPY_TO_ONNX_DTYPE:
                raise Unsupported('doppio.onnx: cannot export op #{} (type {}): its output '
                                  '{!r} has dtype {}, which has no ONNX type'.format(
                                      index, op.type, blob, value.dtype))
            types[ssa.name(blob, version)] = (value.dtype, value.shape)
    return types


def _value_info_proto(name, dtype, shape):
    return helper.make_tensor_value_info(name, NUMPY_TO_ONNX_DTYPE[np.dtype(dtype)],
                                         list(shape))


def _check_exportable(predict_net):
    for index, op in enumerate(predict_net.op):
        if op.type not in TRANSLATORS:
            OpView(index, op, [], [], set()).fail(
                'Doppio has no ONNX translation for op type {!r} (exportable: see '
                'doppio.onnx.frontend.exportable_op_types())'.format(op.type))


def _external_reads(predict_net):
    """Blobs the predict net reads before any of its ops writes them, in
    the order of first use."""
    written, outside = set(), []
    for op in predict_net.op:
        outside += [b for b in op.input if b not in written and b not in outside]
        written.update(op.output)
    return outside


def _check_value_info_names(predict_net, value_info):
    """A value_info name the net never mentions is a misspelt input (as
    Caffe2 allows, value_info may also describe intermediate blobs)."""
    mentioned = {b for op in predict_net.op for b in list(op.input) + list(op.output)}
    unknown = sorted(set(value_info) - mentioned)
    if unknown:
        outside = _external_reads(predict_net)
        shown = ', '.join(outside[:8]) + (' ...' if len(outside) > 8 else '')
        raise ValueError('doppio.onnx: value_info names {}, which no op of the predict net '
                         'reads or writes (it reads from outside: {})'.format(
                             ', '.join(repr(n) for n in unknown), shown))


def caffe2_net_to_onnx_graph(predict_net, init_net=None, value_info=None,
                             opset_version=None):
    """The ONNX GraphProto of `predict_net` (see the module doc).
    `opset_version` (default: the newest the onnx package knows) picks the
    ONNX ops emitted; the model must import the same opset."""
    predict_net = _as_netdef(predict_net, 'predict_net')
    init_net = _as_netdef(init_net, 'init_net')
    value_info = _checked_value_info(value_info)
    opset = _checked_opset(opset_version)
    _check_exportable(predict_net)
    _check_value_info_names(predict_net, value_info)
    external_reads = _external_reads(predict_net)
    # Entries for intermediate blobs (Caffe2 accepted them) are not inputs:
    # the trace finds those blobs' types anyway.
    input_info = {name: value_info[name] for name in external_reads if name in value_info}
    if init_net is not None:
        _drop_placeholder_fills(init_net, input_info)

    with _ScratchWorkspace():
        initializers = _run_init_net(init_net) if init_net is not None else {}
        # Inputs in the net's own order where it declares one.
        graph_inputs = [b for b in external_reads if b in input_info and b not in initializers]
        declared = [b for b in predict_net.external_input if b in graph_inputs]
        graph_inputs = declared + [b for b in graph_inputs if b not in declared]
        ssa = _SsaNet(predict_net, list(initializers) + graph_inputs)
        missing = sorted({blob for _, _, blob in ssa.read_before_written})
        if missing:
            index, op, blob = ssa.read_before_written[0]
            raise ValueError('doppio.onnx: op #{} (type {}) reads {!r}, which is no output '
                             'of an earlier op, not filled by init_net and not in value_info '
                             '(missing: {})'.format(index, op.type, blob, ', '.join(missing)))
        types = _trace(predict_net, ssa, initializers, input_info, graph_inputs)

    output_names = []
    for blob in predict_net.external_output:
        if ssa.final_versions.get(blob, 0) == 0:
            warnings.warn('doppio.onnx: external output {!r} is written by no op of the '
                          'predict net; it is not a graph output'.format(blob))
        else:
            output_names.append(ssa.name(blob, ssa.final_versions[blob]))
    graph_output_names = set(output_names)
    read_later = set(graph_output_names)
    for reads in ssa.inputs:
        read_later.update(ssa.name(b, v) for b, v in reads)

    taken = ssa.all_names() | set(initializers) | set(value_info)
    ctx = ExportContext(opset, taken, types)
    for index, op in enumerate(predict_net.op):
        view = OpView(index, op, [ssa.name(b, v) for b, v in ssa.inputs[index]],
                      [ssa.name(b, v) for b, v in ssa.outputs[index]], read_later)
        TRANSLATORS[op.type](ctx, view)

    used_initializers = [name for name in initializers if name in external_reads]
    graph = helper.make_graph(
        ctx.nodes, predict_net.name or 'doppio_net',
        inputs=[_value_info_proto(name, *types[name]) for name in graph_inputs],
        outputs=[_value_info_proto(name, *types[name]) for name in output_names],
        initializer=[numpy_helper.from_array(initializers[name], name=name)
                     for name in used_initializers] + ctx.constants)
    return graph


def caffe2_net_to_onnx_model(predict_net, init_net=None, value_info=None,
                             opset_version=None):
    """An ONNX ModelProto of `predict_net` that onnx.checker accepts; the
    arguments are caffe2_net_to_onnx_graph's."""
    opset = _checked_opset(opset_version)
    graph = caffe2_net_to_onnx_graph(predict_net, init_net, value_info, opset)
    opset_imports = [helper.make_opsetid('', opset)]
    # The oldest IR version that carries the opset, so older runtimes load
    # the model too.
    model = helper.make_model(graph, opset_imports=opset_imports, producer_name='doppio',
                              ir_version=helper.find_min_ir_version_for(opset_imports))
    checker.check_model(model)
    return model


class Caffe2Frontend(object):
    """Caffe2's class-style entry points (caffe2.python.onnx.frontend)."""
    target_opset_version = defs.onnx_opset_version()

    @classmethod
    def caffe2_net_to_onnx_graph(cls, predict_net, init_net=None, value_info=None,
                                 opset_version=None):
        return caffe2_net_to_onnx_graph(predict_net, init_net, value_info,
                                        opset_version or cls.target_opset_version)

    @classmethod
    def caffe2_net_to_onnx_model(cls, predict_net, init_net=None, value_info=None,
                                 opset_version=None):
        return caffe2_net_to_onnx_model(predict_net, init_net, value_info,
                                        opset_version or cls.target_opset_version)

    @classmethod
    def caffe2_init_net_to_initializer(cls, init_net):
        return caffe2_init_net_to_initializer(init_net)


"""The process's workspaces, as in caffe2.python.workspace.

Nets and operators go to the C++ runtime as serialized protos; blobs cross
as numpy arrays. Every failure inside the runtime surfaces as a
RuntimeError carrying the C++ message; its kind, where the check chose
one, is a subclass as well (doppio.errors: a bad argument is also a
ValueError, a missing blob or net a LookupError).
"""

import atexit
import collections.abc
import contextlib
import os
import shutil
import sys
import tempfile

import numpy as np

from doppio import _C as C
from doppio import core_net
from doppio.proto import doppio_pb2 as caffe2_pb2
from doppio import plan
from doppio import scope
from doppio import workspace_object
from doppio.workspace_transforms import ApplyTransform, ApplyTransformIfFaster  # noqa: F401

# Build-time capabilities, under Caffe2's names (the extension's answers;
# python_api/capabilities_py.cc).
has_cuda_support = C.has_cuda_support
has_gpu_support = C.has_gpu_support
has_hip_support = C.has_hip_support
is_asan = C.is_asan
GetCUDAVersion = C.get_cuda_version
GetCuDNNVersion = C.get_cudnn_version
GetDeviceProperties = C.get_device_properties
IsNUMAEnabled = C.is_numa_enabled
GetNumNUMANodes = C.get_num_numa_nodes


def GetCudaPeerAccessPattern():
    """[i, j]: whether CUDA device i reads device j's memory directly (an
    empty array without GPUs)."""
    pattern = C.get_cuda_peer_access_pattern()
    return np.asarray(pattern, dtype=bool).reshape(len(pattern), len(pattern))


GetGpuPeerAccessPattern = GetCudaPeerAccessPattern


# At a normal exit, wait for the peers of every Gloo common world this
# process connected before the kernel closes its sockets: a rank that exits
# right after its last collective could otherwise fail a peer still reading
# that collective's final message (see parallel/gloo/gloo_common.h). After an
# uncaught exception the wait is skipped, so peers learn of the failure at
# once instead of after their timeout.
_uncaught_exception = False
_previous_excepthook = sys.excepthook


def _note_uncaught_exception(kind, value, traceback):
    global _uncaught_exception
    _uncaught_exception = True
    _previous_excepthook(kind, value, traceback)


def _drain_common_worlds_at_exit():
    if not _uncaught_exception:
        C.drain_common_worlds()


sys.excepthook = _note_uncaught_exception
atexit.register(_drain_common_worlds_at_exit)


def GlobalInit(args):
    """Accepts Caffe2's command line (program name, then --caffe2_* flags).
    Doppio needs no process-wide setup, so the flags are checked for form
    and otherwise ignored."""
    if isinstance(args, (str, bytes)) or not all(isinstance(a, str) for a in args):
        raise TypeError('GlobalInit takes a list of str, e.g. '
                        "['prog', '--caffe2_log_level=0'], got {!r}".format(args))
    for flag in list(args)[1:]:
        if not flag.startswith('-'):
            raise ValueError('GlobalInit: {!r} is not a flag'.format(flag))
    return True


def NumCudaDevices():
    return C.num_cuda_devices()


def NumGpuDevices():
    return NumCudaDevices()


def CudaUnavailableReason():
    """Why this process sees no CUDA device ('' when it sees one)."""
    return C.cuda_unavailable_reason()


def RegisteredOperators():
    return C.registered_operators()


def GetCPUAllocatorStats():
    """Doppio addition (not in Caffe2): the CPU allocator's byte counts, a
    dict with 'current_bytes' (tensor bytes held now, every workspace
    together), 'peak_bytes' (most held since the last ResetCPUAllocatorPeak)
    'allocations' (allocations ever made) and 'allocated_bytes' (the bytes
    they asked for). memonger's benchmark and tests read the peak workspace
    bytes of a net from it; steady_state_allocations_test and memory_bench
    --report_allocations read how often an iteration allocates."""
    return C.cpu_allocator_stats()


def ResetCPUAllocatorPeak():
    """Doppio addition (not in Caffe2): starts a new peak window for
    GetCPUAllocatorStats at the bytes held now."""
    C.reset_cpu_allocator_peak()


# ---- immediate mode (Caffe2's debugging aid) ----
#
# Between StartImmediate and StopImmediate every op a core.Net creates also
# runs at once, in a workspace of its own rooted in a fresh temporary folder,
# so a notebook user sees each op's result as the net is built. The user's
# workspaces are untouched.

_immediate_workspace_name = '_CAFFE2_IMMEDIATE'
_immediate_root_folder = ''


def IsImmediate():
    return bool(_immediate_root_folder)


def StartImmediate(i_know=False):
    """Starts immediate mode (restarting it, empty, if it is on)."""
    global _immediate_root_folder
    if IsImmediate():
        StopImmediate()
    root = tempfile.mkdtemp(prefix='doppio_immediate_')
    with WorkspaceGuard(_immediate_workspace_name):
        ResetWorkspace(root)
    _immediate_root_folder = root
    core_net.SetImmediateRunner(RunOperatorImmediate)
    if not i_know:
        print('Immediate mode is on: every op a net creates also runs at once, in '
              'workspace {!r}. It is for debugging and slow; StopImmediate() ends it.'
              .format(_immediate_workspace_name))


def StopImmediate():
    """Ends immediate mode: its blobs and its root folder are deleted."""
    global _immediate_root_folder
    if not IsImmediate():
        return
    core_net.SetImmediateRunner(None)
    with WorkspaceGuard(_immediate_workspace_name):
        ResetWorkspace()
    shutil.rmtree(_immediate_root_folder, ignore_errors=True)
    _immediate_root_folder = ''


def _in_immediate_workspace(function, *args, **kwargs):
    with WorkspaceGuard(_immediate_workspace_name):
        return function(*args, **kwargs)


def ImmediateBlobs():
    return _in_immediate_workspace(Blobs)


def RunOperatorImmediate(op):
    return _in_immediate_workspace(RunOperatorOnce, op)


def FetchImmediate(*args, **kwargs):
    return _in_immediate_workspace(FetchBlob, *args, **kwargs)


def FeedImmediate(*args, **kwargs):
    return _in_immediate_workspace(FeedBlob, *args, **kwargs)


def StringifyBlobName(name):
    if isinstance(name, bytes):
        return name.decode('utf-8')
    if isinstance(name, str):
        return name
    # BlobReference, or anything else naming a blob through str().
    if hasattr(name, 'GetNameScope') or type(name).__name__ == 'BlobReference':
        return str(name)
    raise TypeError('a blob name must be str or BlobReference, got {}'.format(
        type(name).__name__))


def StringifyNetName(name):
    if isinstance(name, str):
        return name
    if isinstance(name, bytes):
        return name.decode('utf-8')
    if isinstance(name, caffe2_pb2.NetDef):
        return name.name
    if hasattr(name, 'Name') and hasattr(name, 'Proto'):
        return name.Name()
    raise TypeError('not a net or net name: {!r} of type {}'.format(
        name, type(name).__name__))


GetNetName = StringifyNetName


def StringifyProto(obj):
    """Serialized bytes of a proto, of an object with Proto() (a Net), or the
    bytes themselves."""
    if isinstance(obj, bytes):
        return obj
    if hasattr(obj, 'SerializeToString'):
        return obj.SerializeToString()
    if hasattr(obj, 'Proto'):
        return obj.Proto().SerializeToString()
    raise ValueError('Unexpected argument to StringifyProto of type ' +
                     type(obj).__name__)


# ---- workspaces ----

def CurrentWorkspace():
    return C.current_workspace()


def Workspaces():
    names = list(C.workspaces())
    # The current workspace exists (Caffe2 always lists it), even before
    # the runtime materializes it on first use.
    current = C.current_workspace()
    if current not in names:
        names.append(current)
    return sorted(names)


def SwitchWorkspace(name, create_if_missing=False):
    if not isinstance(name, str):
        raise TypeError('workspace name must be str, got {}'.format(type(name).__name__))
    C.switch_workspace(name, bool(create_if_missing))


def ResetWorkspace(root_folder=None):
    """Empties the current workspace. With `root_folder`, as in Caffe2, the
    fresh workspace's Load, Save, DBExists and CreateDB resolve relative db
    paths against that folder (and refuse paths that leave it unless the op
    has absolute_path=1); without, against the current directory."""
    if root_folder is None:
        C.reset_workspace()
    else:
        C.reset_workspace(os.fspath(root_folder))
    return True


def RootFolder():
    """The current workspace's root folder ("." unless ResetWorkspace set
    one)."""
    return C.root_folder()


# ---- blobs ----

def Blobs():
    return list(C.blobs())


def HasBlob(name):
    return C.has_blob(StringifyBlobName(name))


def CreateBlob(name):
    """An empty blob `name` (kept if it exists)."""
    return C.create_blob(StringifyBlobName(name))


def SerializeBlob(name):
    """Blob `name` as the bytes of one BlobProto (as Save stores it)."""
    return C.serialize_blob(StringifyBlobName(name))


def DeserializeBlob(name, serialized):
    """Sets blob `name` from the bytes SerializeBlob (or Caffe2) made."""
    C.deserialize_blob(StringifyBlobName(name), serialized)


def _TensorProtoToArray(tensor):
    dtypes = caffe2_pb2.TensorProto
    shape = tuple(tensor.dims)
    if tensor.data_type == dtypes.FLOAT:
        return np.asarray(tensor.float_data, dtype=np.float32).reshape(shape)
    if tensor.data_type == dtypes.DOUBLE:
        return np.asarray(tensor.double_data, dtype=np.float64).reshape(shape)
    if tensor.data_type == dtypes.INT64:
        return np.asarray(tensor.int64_data, dtype=np.int64).reshape(shape)
    if tensor.data_type in (dtypes.UINT32, dtypes.UINT64):
        # int64_data holds them (a uint64 as its two's-complement bits).
        wide = np.asarray(tensor.int64_data, dtype=np.int64).view(np.uint64)
        kind = np.uint32 if tensor.data_type == dtypes.UINT32 else np.uint64
        return wide.astype(kind).reshape(shape)
    if tensor.data_type == dtypes.STRING:
        return np.asarray(list(tensor.string_data), dtype=object).reshape(shape)
    small_ints = {
        dtypes.INT32: np.int32, dtypes.INT16: np.int16, dtypes.INT8: np.int8,
        dtypes.UINT16: np.uint16, dtypes.UINT8: np.uint8, dtypes.BOOL: np.bool_,
    }
    if tensor.data_type in small_ints:
        return np.asarray(tensor.int32_data).astype(
            small_ints[tensor.data_type]).reshape(shape)
    raise TypeError('cannot feed a TensorProto of data_type {}'.format(tensor.data_type))


def _AsFeedableArray(name, arr):
    if isinstance(arr, caffe2_pb2.TensorProto):
        return _TensorProtoToArray(arr)
    if not isinstance(arr, np.ndarray):
        # Python scalars and (nested) lists take numpy's dtype for them.
        try:
            arr = np.asarray(arr)
        except Exception as error:  # ragged lists and the like
            raise TypeError('cannot feed blob {!r}: {!r} does not convert to a '
                            'numpy array ({})'.format(name, arr, error)) from None
    if arr.dtype.kind in 'SU':
        # numpy's fixed-width strings carry padding; the runtime wants objects.
        arr = arr.astype(object)
    return arr


# What FetchInt8Blob returns: an Int8TensorCPU's integers (uint8, or int32
# for biases) and the quantization real = scale * (data - zero_point).
Int8Tensor = collections.namedtuple('Int8Tensor', ['data', 'scale', 'zero_point'])

# What FeedBlob makes a bfloat16 tensor of (numpy has no bfloat16): float
# values, rounded to nearest even, or a uint16 array of bfloat16 bit
# patterns. FetchBlob gives a bfloat16 tensor back widened to float32.
BFloat16Tensor = collections.namedtuple('BFloat16Tensor', ['values'])


def FeedBlob(name, arr, device_option=None):
    """Stores `arr` (numpy array, TensorProto, scalar or list) as a tensor
    in blob `name` of the current workspace. A str or bytes is a string blob,
    as in Caffe2: FetchBlob gives it back as bytes (a str as its UTF-8), Save
    writes it as Caffe2 does; a numpy array of strings is a string tensor.
    An Int8Tensor (a Doppio extension) becomes an Int8TensorCPU blob, a
    BFloat16Tensor a bfloat16 tensor."""
    name = StringifyBlobName(name)
    if isinstance(arr, (str, bytes)):
        C.feed_string_blob(name, arr.encode('utf-8') if isinstance(arr, str) else arr)
        return True
    if isinstance(arr, Int8Tensor):
        C.feed_int8_blob(name, np.ascontiguousarray(arr.data), float(arr.scale),
                         int(arr.zero_point))
        return True
    if isinstance(arr, BFloat16Tensor):
        C.feed_bfloat16_blob(name, np.asarray(arr.values))
        return True
    arr = _AsFeedableArray(name, arr)
    if device_option is None:
        device_option = scope.CurrentDeviceScope()
    if device_option is not None and device_option.device_type == caffe2_pb2.CUDA:
        # The runtime copies the array onto the GPU, or raises naming the
        # blob and why there is no usable GPU.
        C.feed_blob(name, arr, device_option.SerializeToString())
        return True
    C.feed_blob(name, arr)
    return True


def FetchBlob(name, device_option=None):
    """The tensor in blob `name` as a numpy array (strings as bytes objects);
    a string blob as bytes.
    GPU tensors are copied to the host. A CUDA `device_option` (a Doppio
    extension) states that a GPU is expected: without one it raises."""
    name = StringifyBlobName(name)
    if device_option is not None and device_option.device_type == caffe2_pb2.CUDA:
        result = C.fetch_blob(name, device_option.SerializeToString())
    else:
        result = C.fetch_blob(name)
    if isinstance(result, tuple):
        raise TypeError('Use FetchInt8Blob to fetch Int8 Blob {}'.format(name))
    return result


def FetchInt8Blob(name):
    """Blob `name`'s Int8TensorCPU as Int8Tensor(data, scale, zero_point)."""
    name = StringifyBlobName(name)
    result = C.fetch_blob(name)
    if not isinstance(result, tuple):
        raise TypeError('blob {} is not an Int8 blob; use FetchBlob'.format(name))
    return Int8Tensor(*result)


def FetchInt8BlobRealVal(name):
    """Blob `name`'s Int8TensorCPU as the float32 reals it stands for."""
    data, scale, zero_point = FetchInt8Blob(name)
    return ((data.astype(np.int64) - zero_point) * np.float64(scale)).astype(np.float32)


# numpy dtype -> TensorProto data type (utils' conversions use it too).
_PROTO_TYPES = {
    np.dtype(np.float32): caffe2_pb2.TensorProto.FLOAT,
    np.dtype(np.float64): caffe2_pb2.TensorProto.DOUBLE,
    np.dtype(np.float16): caffe2_pb2.TensorProto.FLOAT16,
    np.dtype(np.int32): caffe2_pb2.TensorProto.INT32,
    np.dtype(np.int64): caffe2_pb2.TensorProto.INT64,
    np.dtype(np.int16): caffe2_pb2.TensorProto.INT16,
    np.dtype(np.uint16): caffe2_pb2.TensorProto.UINT16,
    np.dtype(np.uint32): caffe2_pb2.TensorProto.UINT32,
    np.dtype(np.uint64): caffe2_pb2.TensorProto.UINT64,
    np.dtype(np.uint8): caffe2_pb2.TensorProto.UINT8,
    np.dtype(np.int8): caffe2_pb2.TensorProto.INT8,
    np.dtype(np.bool_): caffe2_pb2.TensorProto.BOOL,
}


def GetOperatorCost(operator, blobs):
    """(flops, bytes written) of one op (an OperatorDef or its bytes) from its
    schema's cost function, given the shapes of `blobs` in the current
    workspace."""
    if isinstance(operator, bytes):
        op = caffe2_pb2.OperatorDef()
        op.ParseFromString(operator)
    else:
        op = operator
    net = caffe2_pb2.NetDef()
    net.op.extend([op])
    shapes, types = {}, {}
    for name in blobs:
        value = FetchBlob(name)
        shapes[str(name)] = list(value.shape)
        if value.dtype in _PROTO_TYPES:
            types[str(name)] = int(_PROTO_TYPES[value.dtype])
    total = C.infer_net_cost(net.SerializeToString(), shapes, types)['total']
    return total['flops'], total['bytes_written']


def FetchBlobs(names):
    return [FetchBlob(name) for name in names]


# ---- nets and operators ----

def RunOperatorOnce(operator):
    C.run_operator_once(StringifyProto(operator))
    return True


def RunOperatorsOnce(operators):
    for op in operators:
        if not RunOperatorOnce(op):
            return False
    return True


def RunNetOnce(net):
    C.run_net_once(StringifyProto(net))
    return True


def CreateNet(net, overwrite=False, input_blobs=None):
    """Instantiates `net` (a Net or NetDef) in the current workspace so RunNet
    can run it by name. `input_blobs` that are missing are fed as empty
    float tensors, the closest to Caffe2's empty blobs this runtime has."""
    for blob in input_blobs or []:
        if not HasBlob(blob):
            FeedBlob(blob, np.zeros((0,), dtype=np.float32))
    C.create_net(StringifyProto(net), bool(overwrite))
    return True


def RunNet(name, num_iter=1, allow_fail=False):
    """Runs a net made by CreateNet `num_iter` times. With allow_fail, a
    failure returns False instead of raising."""
    name = StringifyNetName(name)
    try:
        C.run_net(name, int(num_iter))
    except RuntimeError:
        if allow_fail:
            return False
        raise
    return True


def InferShapesAndTypes(nets, blob_dimensions=None, nets_proto=False, blob_types=None):
    """(shapes, types): blob -> dims and blob -> TensorProto.DataType after
    running `nets` (Nets or NetDefs) in order, as the operators' schemas
    infer them. Starts from `blob_dimensions` (blob -> dims, float unless
    `blob_types` says otherwise) or, without it, from the tensors in the
    current workspace. Blobs whose shape cannot be inferred are absent."""
    del nets_proto  # Nets and NetDefs are both accepted
    return C.infer_shapes_and_types([StringifyProto(net) for net in nets], blob_dimensions,
                                    blob_types)


def Nets():
    return list(C.nets())


def RunPlan(plan_or_step):
    """Runs a plan (a core.Plan, a PlanDef or its bytes, or a lone
    core.ExecutionStep, which becomes a plan of its own) in the current
    workspace until it finishes; errors raise RuntimeError."""
    if isinstance(plan_or_step, plan.ExecutionStep):
        plan_or_step = plan.Plan(plan_or_step)
    if not isinstance(plan_or_step, (bytes, caffe2_pb2.PlanDef, plan.Plan)):
        raise TypeError('RunPlan takes a core.Plan, a PlanDef, its bytes or a '
                        'core.ExecutionStep, got {}'.format(type(plan_or_step).__name__))
    C.run_plan(StringifyProto(plan_or_step))
    return True


def GetNameScope():
    """The current name scope (Caffe2 keeps this helper in workspace)."""
    return scope.CurrentNameScope()


@contextlib.contextmanager
def WorkspaceGuard(workspace_name):
    """Runs the block in workspace `workspace_name` (created if missing),
    then switches back."""
    previous = CurrentWorkspace()
    SwitchWorkspace(workspace_name, True)
    try:
        yield
    finally:
        SwitchWorkspace(previous)


class _BlobDict(collections.abc.MutableMapping):
    """workspace.blobs: the current workspace's blobs as a dict; reading
    fetches, assigning feeds."""

    def __getitem__(self, name):
        if not HasBlob(name):
            raise KeyError(name)
        return FetchBlob(name)

    def __setitem__(self, name, value):
        FeedBlob(name, value)

    def __delitem__(self, name):
        if not C.remove_blob(StringifyBlobName(name)):
            raise KeyError(name)

    def __contains__(self, name):
        return HasBlob(name)

    def __iter__(self):
        return iter(Blobs())

    def __len__(self):
        return len(Blobs())


blobs = _BlobDict()


# Caffe2's Workspace object, where Caffe2 scripts look for it.
workspace_object.Workspace._feed = staticmethod(FeedBlob)
workspace_object.Workspace._fetch = staticmethod(FetchBlob)
workspace_object.Workspace._stringify = staticmethod(StringifyProto)
C.Workspace = workspace_object.Workspace
Predictor = workspace_object.Predictor

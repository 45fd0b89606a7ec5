"""Mixed precision in Parallelize (a Doppio addition): the forward net's
rewrite before backward is derived, and the dynamic loss scale's state.
The rules are the C++ pass's (parallel/mixed_precision.h); this module only
carries nets and blobs across."""
import logging

from doppio import core
from doppio import workspace
from doppio.modeling.parameter_info import ParameterInfo
from doppio.proto import doppio_pb2 as caffe2_pb2

log = logging.getLogger('data_parallel_model')


def LowerForwardNet(model, precision):
    """The forward net lowered to `precision` by the C++ rewrite, in place,
    before the backward is derived from it."""
    lowered_bytes, plan_text = workspace.C.lower_precision(
        model.net.Proto().SerializeToString(), precision)
    lowered = caffe2_pb2.NetDef()
    lowered.ParseFromString(lowered_bytes)
    proto = model.net.Proto()
    del proto.op[:]
    proto.op.extend(lowered.op)
    if plan_text:
        log.info('%s', plan_text.rstrip())


def LossScaleState(model):
    """Dynamic loss scaling's state per device prefix (a Doppio addition):
    {'cpu_0/': {'scale': float, 'skipped_steps': int}, ...}; empty when the
    model does not scale its loss."""
    if not getattr(model, '_parallel_plan', None) or not model._parallel_plan.loss_scaling:
        return {}
    state = {}
    for prefix in model._parallel_plan.prefixes:
        state[prefix] = {
            'scale': float(workspace.FetchBlob(prefix + workspace.C.LOSS_SCALE_BLOB)[0]),
            'skipped_steps': int(workspace.FetchBlob(
                prefix + workspace.C.LOSS_SCALE_SKIPPED_STEPS_BLOB)[0]),
        }
    return state


def RecordDeviceBlobCopies(model, params, prefixes, grouped):
    """Each device's param gets the template param's other-precision copies
    (PseudoFP16Initializer's float32 master), under the device's prefix, so
    that GetOptimizationParamInfo on device params finds them: what Caffe2's
    post-sync builders read to refresh the masters from the broadcast float16
    params. `prefixes`: device -> prefix of the devices owning params;
    `grouped`: template name -> device -> blob."""
    for name in params:
        info = model._parameters_info.get(name)
        if info is None or not info.blob_copy:
            continue
        for device, prefix in prefixes.items():
            param = grouped[name][device]
            copies = {dtype: core.BlobReference(prefix + str(blob))
                      for dtype, blob in info.blob_copy.items()}
            model._parameters_info[str(param)] = ParameterInfo(
                param_id=None, param=param, shape=info.shape,
                grad=model.param_to_grad.get(param), blob_copy=copies)

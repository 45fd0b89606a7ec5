"""The memonger steps of data_parallel_model.Parallelize (Caffe2's
_OptimizeGradientMemorySimple and _AddDynamicMemoryOptimization) on the
parallelized model, CPU (`cpu_N/`) or GPU (`gpu_N/`): optimize_gradient_memory
and dynamic_memory_management."""

from doppio import core
from doppio import memonger
from doppio import workspace


def _prefix(model, device):
    return workspace.C.device_prefix(model._device_type, device)


def _OptimizeGradientMemorySimple(model, losses_by_gpu, devices, blobs_to_keep=None,
                                  share_activations=False):
    """Caffe2's gradient sharing: share_grad_blobs per device namescope on
    the parallelized net, never touching the device's losses, param grads or
    blobs_to_keep (given without the device prefix, as in Caffe2). Blobs are
    shared only inside one namescope, so only with blobs of the same
    device."""
    # Every device's copy: with a shared model param_to_grad lists the
    # master's alone, but each device still computes and allreduces its own.
    param_grads = set()
    for name in _ParamGradNames(model):
        local = name[len(workspace.C.device_prefix_of(model._device_type, name)):]
        param_grads.update(_prefix(model, d) + local for d in devices)
    for device in devices:
        namescope = _prefix(model, device)
        keep = set(namescope + str(b) for b in (blobs_to_keep or []))
        model.net._net = memonger.share_grad_blobs(
            model.net,
            losses_by_gpu[device],
            param_grads,
            namescope,
            dont_share_blobs=keep,
            share_activations=share_activations,
        )


def _ParamGradNames(model):
    names = []
    for grad in model.param_to_grad.values():
        if isinstance(grad, core.GradientSlice):
            names.extend([str(grad.indices), str(grad.values)])
        else:
            names.append(str(grad))
    return names


def _AddDynamicMemoryOptimization(model, blobs_to_keep, devices):
    """Caffe2's dynamic memory management: Free ops after last use, except
    for blobs_to_keep on every device (and, across shards, the param grads
    the collectives hold on to)."""
    keep = set()
    for device in devices:
        for blob in (blobs_to_keep or []):
            keep.add(_prefix(model, device) + str(blob))
    if model._rendezvous is not None:
        keep.update(_ParamGradNames(model))
    model.net._net = memonger.release_blobs_when_used(model.net.Proto(), keep)

"""core.GradientRegistry: Caffe2's Python entry points to the backward
pass, whose gradient makers live in the C++ registry. Below core_net."""
from doppio import _C
from doppio.core_blob import BlobReference, GradientSlice
from doppio.proto import doppio_pb2 as caffe2_pb2


def _FromUntypedGradient(grad):
    if isinstance(grad, (tuple, list)):
        return GradientSlice(BlobReference(grad[0]), BlobReference(grad[1]))
    return BlobReference(grad)


class GradientRegistry(object):
    """The backward pass. Gradient makers live in the C++ registry; this
    keeps Caffe2's Python entry points to it."""

    @classmethod
    def GetGradientForOp(cls, op, g_output):
        """(gradient ops, gradient per input) of one op given its output
        gradients (names, GradientSlices or None)."""
        grads = []
        for g in g_output:
            if g is None:
                grads.append(None)
            elif isinstance(g, GradientSlice):
                grads.append((str(g.indices), str(g.values)))
            else:
                grads.append(str(g))
        op_bytes, g_input = _C.get_gradient_defs(op.SerializeToString(), grads)
        return _ParseOps(op_bytes), [None if g is None else _FromUntypedGradient(g) for g in g_input]

    @classmethod
    def GetBackwardPass(cls, operators, ys, ys_generate_gradient=False, net_name=''):
        """(gradient ops, {blob: gradient}) for `operators` given the loss
        blobs `ys`: a list (gradients filled with ones) or a dict from loss to
        its gradient blob (None: filled with ones)."""
        if not ys:
            # Nothing to differentiate (Caffe2 returns no ops).
            return [], {}
        net = caffe2_pb2.NetDef(name=net_name)
        net.op.extend(operators)
        if isinstance(ys, dict):
            losses = [str(y) for y in ys]
            loss_grads = {str(y): (str(g.indices), str(g.values))
                          if isinstance(g, GradientSlice) else str(g)
                          for y, g in ys.items() if g is not None}
        else:
            if isinstance(ys, (str, bytes, BlobReference)):
                ys = [ys]
            losses = [str(y) for y in ys]
            loss_grads = None
        if not hasattr(_C, 'add_gradient_operators'):
            raise RuntimeError('this build of doppio._C has no backward pass '
                               '(add_gradient_operators)')
        op_bytes, grad_map = _C.add_gradient_operators(
            net.SerializeToString(), losses, loss_grads)
        return _ParseOps(op_bytes), {BlobReference(key): _FromUntypedGradient(value)
                     for key, value in grad_map.items() if value is not None}


def _ParseOps(op_bytes):
    ops = []
    for data in op_bytes:
        op = caffe2_pb2.OperatorDef()
        op.ParseFromString(data)
        ops.append(op)
    return ops

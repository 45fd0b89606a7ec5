"""Drops gradient outputs nothing reads from a training NetDef, so their ops
skip the work.

Caffe2's backward pass (and Doppio's, which follows it) asks every gradient
maker for all of its op's input gradients, and stops propagating only after:
the first FC of an MLP on `StopGradient(data)` still computes `data_grad`, a
[batch, 784] x [784, 256] product (a third of that layer's backward GEMM work)
that no op reads. FCGradient, like Caffe2's, computes the input gradient only
when it is given a third output, so removing an unread third output removes
the work.

    data_parallel_model.Parallelize_CPU(model, ...)
    net_pruning.prune_unread_gradient_outputs(model.net.Proto())

Only ops listed in OPTIONAL_TRAILING_OUTPUTS are touched, and only their
trailing outputs, so the remaining outputs keep their positions. A blob
counts as read if any op of the net reads it or the net lists it as an
external output; the caller must not read the pruned blobs elsewhere (other
nets, FetchBlob), as they are no longer written.
"""

# Op type -> index of its first optional output: outputs from there on are
# dropped when nothing reads them (FCGradient: dW, db, then dX).
OPTIONAL_TRAILING_OUTPUTS = {'FCGradient': 2}


def prune_unread_gradient_outputs(net_proto):
    """Removes, in place, the unread optional trailing outputs of the ops in
    OPTIONAL_TRAILING_OUTPUTS; returns the removed blob names."""
    read = set(net_proto.external_output)
    for op in net_proto.op:
        read.update(op.input)
    removed = []
    for op in net_proto.op:
        first_optional = OPTIONAL_TRAILING_OUTPUTS.get(op.type)
        if first_optional is None:
            continue
        while len(op.output) > first_optional and op.output[-1] not in read:
            removed.append(op.output[-1])
            del op.output[-1]
    return removed

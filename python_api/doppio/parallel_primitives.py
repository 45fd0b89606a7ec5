"""PyTorch's data-parallel primitives (torch.nn.parallel scatter / gather /
replicate / parallel_apply) as net transforms, and DataParallelBlock, which
makes one block of a single-device model data-parallel.

Op choice: Caffe2's `Gather` is an index gather (Doppio registers it) and
Caffe2 has ScatterAssign / ScatterWeightedSum, so these primitives add no op
named Scatter or Gather. They emit
  scatter   -> `Chunk` (operators/scatter_gather_op.cc): torch.chunk's sizes,
               computed at run time from the batch the op sees, so a short
               last batch still splits as PyTorch would; a batch smaller than
               the number of devices is an error naming the op and blob;
  gather    -> Caffe2's `Concat` along `axis` (its split_info output makes
               its gradient a Split of the runtime sizes);
  replicate -> one `Copy` per device (the gradients of the copies accumulate
               into the source's gradient in the backward pass).
Gradients flow through all three via AddGradientOperators.

Per-device blobs are named "<prefix>/<name>", prefix cpu_N or gpu_N as in
data_parallel_model, and their ops carry the device's DeviceOption. The ops
write plain tensors on the device they run on: moving blobs between GPUs is
the InjectCrossDeviceCopies pass's job, not these helpers'.
"""
from doppio import core
from doppio import workspace
from doppio.proto import doppio_pb2


def device_prefix(device, device_type=doppio_pb2.CPU):
    """The name scope of a device: cpu_N or gpu_N (the Parallelize pass's
    DevicePrefix without its '/')."""
    return workspace.C.device_prefix(device_type, device).rstrip('/')


def _on_device(op, device, device_type):
    if device is not None:
        op.device_option.CopyFrom(core.DeviceOption(device_type, device))
    return op


def _add_op(net, op_type, inputs, outputs, device, device_type, **args):
    # BlobReferences, so an active NameScope does not prefix the names again.
    op = core.CreateOperator(op_type, [core.BlobReference(str(b)) for b in inputs],
                             [core.BlobReference(str(b)) for b in outputs], **args)
    net._ExtendOps([_on_device(op, device, device_type)])
    return [core.BlobReference(str(b), net) for b in outputs]


def scatter(net, blob, devices, axis=0, device_type=doppio_pb2.CPU):
    """Splits `blob` along `axis` into one chunk per device (torch.chunk's
    sizes); returns the chunks, "<prefix>/<blob>" for each device."""
    if not devices:
        raise ValueError('scatter of %s: no devices' % blob)
    outputs = ['%s/%s' % (device_prefix(d, device_type), blob) for d in devices]
    return _add_op(net, 'Chunk', [blob], outputs, None, device_type, axis=axis)


def gather(net, blobs, device=None, axis=0, output=None, device_type=doppio_pb2.CPU):
    """Concatenates the per-device `blobs` along `axis` on `device` (None:
    the net's default); returns the joined blob (default name: the first
    blob's name without its device prefix)."""
    if not blobs:
        raise ValueError('gather: no blobs')
    if output is None:
        output = str(blobs[0]).split('/', 1)[-1]
    joined, _ = _add_op(net, 'Concat', blobs, [output, '%s_split_info' % output],
                        device, device_type, axis=axis)
    return joined


def replicate(net, blobs, devices, device_type=doppio_pb2.CPU):
    """Copies each blob to every device; returns, per device, the list of its
    copies "<prefix>/<blob>"."""
    replicas = []
    for d in devices:
        prefix = device_prefix(d, device_type)
        replicas.append([_add_op(net, 'Copy', [b], ['%s/%s' % (prefix, b)], d,
                                 device_type)[0] for b in blobs])
    return replicas


def _ops_of(sub_net):
    if callable(sub_net) and not isinstance(sub_net, core.Net):
        built = core.Net('parallel_apply_template')
        sub_net(built)
        sub_net = built
    if isinstance(sub_net, core.Net):
        sub_net = sub_net.Proto()
    if isinstance(sub_net, doppio_pb2.NetDef):
        return list(sub_net.op)
    return list(sub_net)  # a list of OperatorDefs


def parallel_apply(net, sub_net, devices, shared=(), device_type=doppio_pb2.CPU):
    """Appends one copy of `sub_net` (a NetDef, a core.Net, a list of
    OperatorDefs, or a function that builds ops into the net it is given) per device to `net`. Every blob but
    those in `shared` is renamed "<prefix>/<name>"; the shared ones (params)
    are read by every replica under their own name. Returns, per device, the
    function that maps a template blob name to that replica's name."""
    ops = _ops_of(sub_net)
    shared = set(str(b) for b in shared)
    renames = []
    for d in devices:
        prefix = device_prefix(d, device_type)

        def rename(name, prefix=prefix):
            name = str(name)
            return name if name in shared else '%s/%s' % (prefix, name)

        clones = []
        for op in ops:
            clone = doppio_pb2.OperatorDef()
            clone.CopyFrom(op)
            clone.input[:] = [rename(b) for b in op.input]
            clone.output[:] = [rename(b) for b in op.output]
            clones.append(_on_device(clone, d, device_type))
        net._ExtendOps(clones)
        renames.append(rename)
    return renames


def _flatten(structure):
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in _flatten(item)]
    return [structure]


def _unflatten(structure, leaves):
    """`structure`'s nesting with its leaves taken in order from the iterator."""
    if isinstance(structure, (list, tuple)):
        return type(structure)(_unflatten(item, leaves) for item in structure)
    return next(leaves)


def DataParallelBlock(model, block_fun, inputs, devices, axis=0,
                      device_type=doppio_pb2.CPU):
    """Makes one block of a single-device model data-parallel, as
    torch.nn.DataParallel wraps a module: each input (nested lists/tuples of
    blobs allowed) is scattered along `axis`, one replica of the block runs
    per device, and each output is gathered back under the name the block
    gave it, so the rest of the model is unchanged.

    `block_fun(model, inputs)` builds the block once, unscoped, and returns
    its outputs (the same nesting comes back). Params stay single: every
    replica reads the same param blobs, so the backward pass's gradient
    accumulation sums the replicas' gradients into the one param gradient --
    exactly the single-device gradient (up to float summation order) with no
    extra sync step. Every output must have the batch along `axis`: a scalar
    (a loss) cannot be gathered. A block whose result depends on the whole
    batch (SpatialBN in training) normalizes per replica, as in PyTorch, and
    so differs from the single-device model.
    """
    net = model.net.Proto()
    first = len(net.op)
    outputs = block_fun(model, inputs)
    block_ops = [doppio_pb2.OperatorDef() for _ in net.op[first:]]
    for copy, op in zip(block_ops, net.op[first:]):
        copy.CopyFrom(op)
    del net.op[first:]
    model.net._RecreateLookupTables()

    flat_inputs = [str(b) for b in _flatten(inputs)]
    produced = set(flat_inputs)
    for op in block_ops:
        produced.update(op.output)
    referenced = set()
    for op in block_ops:
        referenced.update(op.input)
        referenced.update(op.output)
    for blob in flat_inputs:
        scatter(model.net, blob, devices, axis=axis, device_type=device_type)
    renames = parallel_apply(model.net, block_ops, devices, shared=referenced - produced,
                             device_type=device_type)
    gathered = [gather(model.net, [rename(out) for rename in renames], axis=axis,
                       output=str(out), device_type=device_type)
                for out in _flatten(outputs)]
    return _unflatten(outputs, iter(gathered))

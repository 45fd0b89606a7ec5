"""Caffe2's predictor_py_utils: building the nets of a predictor export and
reading the key/value maps of a MetaNetDef.

A MetaNetDef predates proto3 maps: `nets`, `blobs`, `plans` and
`applicationSpecificInfo` are repeated {key, value} messages, looked up here
by a linear scan (they hold a handful of entries).
"""
from doppio import core
from doppio import scope


def create_predict_net(predictor_export_meta):
    """The predict net of an export: the model's ops with the inputs and
    parameters as external inputs and the outputs as external outputs."""
    source = predictor_export_meta.predict_net
    net = core.Net(source.name or 'predict')
    proto = net.Proto()
    proto.op.extend(source.op)
    proto.external_input.extend(predictor_export_meta.inputs +
                                predictor_export_meta.parameters)
    proto.external_output.extend(predictor_export_meta.outputs)
    proto.arg.extend(source.arg)
    if predictor_export_meta.net_type is not None:
        proto.type = predictor_export_meta.net_type
    if predictor_export_meta.num_workers is not None:
        proto.num_workers = predictor_export_meta.num_workers
    return proto


def create_predict_init_net(ws, predictor_export_meta):
    """A net that creates every input and output blob, zero-filled, with the
    export's shape for it or else the shape the blob has in `ws` (so the
    predictor can run shape-dependent setup before the first request)."""
    net = core.Net('predict-init')
    blobs = predictor_export_meta.inputs + predictor_export_meta.outputs
    for blob in blobs:
        shape = predictor_export_meta.shapes.get(blob)
        if shape is None:
            shape = _shape_in_workspace(ws, blob)
        # No device scope: whoever loads the export picks the device.
        with scope.EmptyDeviceScope():
            net.ConstantFill([], blob, shape=list(shape), value=0.0)
    net.Proto().external_input.extend(blobs)
    if predictor_export_meta.extra_init_net:
        net.AppendNet(predictor_export_meta.extra_init_net)
    AddModelIdArg(predictor_export_meta, net.Proto())
    return net.Proto()


def _shape_in_workspace(ws, blob):
    """The shape of `blob` in `ws`: Caffe2's Workspace object (its `blobs`
    map) or, for None, the current workspace."""
    if ws is None:
        from doppio import workspace
        present = workspace.HasBlob(blob)
        fetch = lambda: workspace.FetchBlob(blob)  # noqa: E731
    else:
        present = blob in ws.blobs
        fetch = lambda: ws.blobs[blob].fetch()  # noqa: E731
    if not present:
        raise KeyError('predictor export: no shape given for {!r} and the blob is not in '
                       'the workspace (pass it in shapes=)'.format(blob))
    return fetch().shape


def get_comp_name(string, name):
    """The map key of component `string` for the predictor named `name`."""
    return '{}_{}'.format(string, name) if name else string


def _ProtoMapGet(field, key):
    for entry in field:
        if entry.key == key:
            return entry.value
    return None


def GetPlan(meta_net_def, key):
    return _ProtoMapGet(meta_net_def.plans, key)


def GetPlanOriginal(meta_net_def, key):
    return _ProtoMapGet(meta_net_def.plans, key)


def GetBlobs(meta_net_def, key):
    blobs = _ProtoMapGet(meta_net_def.blobs, key)
    return [] if blobs is None else blobs


def GetNet(meta_net_def, key):
    return _ProtoMapGet(meta_net_def.nets, key)


def GetNetOriginal(meta_net_def, key):
    return _ProtoMapGet(meta_net_def.nets, key)


def GetApplicationSpecificInfo(meta_net_def, key):
    return _ProtoMapGet(meta_net_def.applicationSpecificInfo, key)


def AddBlobs(meta_net_def, blob_name, blob_def):
    """Appends the names `blob_def` to the blob list `blob_name`, creating
    the entry on first use."""
    blobs = _ProtoMapGet(meta_net_def.blobs, blob_name)
    if blobs is None:
        entry = meta_net_def.blobs.add()
        entry.key = blob_name
        blobs = entry.value
    blobs.extend(str(blob) for blob in blob_def)


def AddPlan(meta_net_def, plan_name, plan_def):
    meta_net_def.plans.add(key=plan_name, value=plan_def)


def AddNet(meta_net_def, net_name, net_def):
    meta_net_def.nets.add(key=net_name, value=net_def)


def GetArgumentByName(net_def, arg_name):
    for arg in net_def.arg:
        if arg.name == arg_name:
            return arg
    return None


def AddModelIdArg(meta_net_def, net_def):
    """Copies the integer `model_id` argument of the export's predict net
    (if it has one) onto `net_def`, replacing any it had: the init nets of
    one export carry the predict net's id."""
    model_id = GetArgumentByName(meta_net_def.predict_net, 'model_id')
    if model_id is None:
        return
    existing = GetArgumentByName(net_def, 'model_id')
    if existing is None:
        existing = net_def.arg.add()
        existing.name = 'model_id'
    existing.i = model_id.i

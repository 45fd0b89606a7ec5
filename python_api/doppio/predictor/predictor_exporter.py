"""Caffe2's predictor_exporter: a model saved as one DB that a predictor
(or `prepare_prediction_net`) loads without the code that built it.

The DB holds the parameters and, under predictor_constants.META_NET_DEF, a
serialized MetaNetDef with three nets:
  * global init: Load the parameters from the DB reader blob
    predictor_constants.PREDICTOR_DBREADER,
  * predict init: zero-filled inputs and outputs of the export's shapes,
  * predict: the model's ops,
and the blob lists (parameters, inputs, outputs), each under a key that
`PredictorExportMeta.*_name()` gives (suffixed by the predictor's name when
one file holds several predictors).
"""
import collections

from doppio import core
from doppio import scope
from doppio import transformations
from doppio import workspace
from doppio.predictor import predictor_py_utils as utils
from doppio.predictor import serde
from doppio.predictor_constants import predictor_constants
from doppio.proto import doppio_pb2 as caffe2_pb2
from doppio.proto import metanet_pb2

_EXPORT_FIELDS = ('predict_net', 'parameters', 'inputs', 'outputs', 'shapes', 'name',
                  'extra_init_net', 'net_type', 'num_workers')


def get_predictor_exporter_helper(submodelNetName):
    """An export of an empty net named `submodelNetName`: only for its
    *_name() methods (the keys its nets and blobs would have)."""
    return PredictorExportMeta(predict_net=core.Net(submodelNetName), parameters=[],
                               inputs=[], outputs=[], shapes=None, name=submodelNetName,
                               extra_init_net=None)


class PredictorExportMeta(collections.namedtuple('PredictorExportMeta', _EXPORT_FIELDS)):
    """What an export holds. `predict_net` is a Net, Plan, NetDef or PlanDef;
    parameters, inputs and outputs are blob names or BlobReferences; inputs
    must be distinct and share no blob with the parameters, nor may the
    outputs. `shapes` maps an input or output to its shape (a blob without
    one takes its shape from the workspace at export time)."""

    def __new__(cls, predict_net, parameters, inputs, outputs, shapes=None, name='',
                extra_init_net=None, net_type=None, num_workers=None):
        inputs = [str(blob) for blob in inputs]
        outputs = [str(blob) for blob in outputs]
        parameters = [str(blob) for blob in parameters]
        if len(set(inputs)) != len(inputs):
            raise ValueError('PredictorExportMeta: the inputs must be distinct, got {}'.format(
                inputs))
        for what, blobs in (('inputs', inputs), ('outputs', outputs)):
            common = set(parameters).intersection(blobs)
            if common:
                raise ValueError('PredictorExportMeta: parameters and {} must be disjoint; '
                                 'both hold {}'.format(what, sorted(common)))
        if isinstance(predict_net, (core.Net, core.Plan)):
            predict_net = predict_net.Proto()
        if not isinstance(predict_net, (caffe2_pb2.NetDef, caffe2_pb2.PlanDef)):
            raise TypeError('PredictorExportMeta: predict_net must be a Net, Plan, NetDef or '
                            'PlanDef, got {}'.format(type(predict_net).__name__))
        return super(PredictorExportMeta, cls).__new__(
            cls, predict_net, parameters, inputs, outputs, shapes or {}, name,
            extra_init_net, net_type, num_workers)

    def _key(self, component):
        return utils.get_comp_name(getattr(predictor_constants, component), self.name)

    def inputs_name(self):
        return self._key('INPUTS_BLOB_TYPE')

    def outputs_name(self):
        return self._key('OUTPUTS_BLOB_TYPE')

    def parameters_name(self):
        return self._key('PARAMETERS_BLOB_TYPE')

    def global_init_name(self):
        return self._key('GLOBAL_INIT_NET_TYPE')

    def predict_init_name(self):
        return self._key('PREDICT_INIT_NET_TYPE')

    def predict_net_name(self):
        return self._key('PREDICT_NET_TYPE')

    def train_init_plan_name(self):
        return self._key('TRAIN_INIT_PLAN_TYPE')

    def train_plan_name(self):
        return self._key('TRAIN_PLAN_TYPE')


def _global_init_net(predictor_export_meta):
    net = core.Net('global-init')
    net.Load([predictor_constants.PREDICTOR_DBREADER], predictor_export_meta.parameters)
    net.Proto().external_input.extend([predictor_constants.PREDICTOR_DBREADER])
    net.Proto().external_output.extend(predictor_export_meta.parameters)
    utils.AddModelIdArg(predictor_export_meta, net.Proto())
    return net.Proto()


def get_meta_net_def(predictor_export_meta, ws=None):
    """The MetaNetDef of an export; blobs without a given shape take theirs
    from `ws` (Caffe2's Workspace object) or the current workspace."""
    meta_net_def = metanet_pb2.MetaNetDef()
    utils.AddNet(meta_net_def, predictor_export_meta.predict_init_name(),
                 utils.create_predict_init_net(ws, predictor_export_meta))
    utils.AddNet(meta_net_def, predictor_export_meta.global_init_name(),
                 _global_init_net(predictor_export_meta))
    utils.AddNet(meta_net_def, predictor_export_meta.predict_net_name(),
                 utils.create_predict_net(predictor_export_meta))
    utils.AddBlobs(meta_net_def, predictor_export_meta.parameters_name(),
                   predictor_export_meta.parameters)
    utils.AddBlobs(meta_net_def, predictor_export_meta.inputs_name(),
                   predictor_export_meta.inputs)
    utils.AddBlobs(meta_net_def, predictor_export_meta.outputs_name(),
                   predictor_export_meta.outputs)
    return meta_net_def


def set_model_info(meta_net_def, project_str, model_class_str, version):
    if not isinstance(meta_net_def, metanet_pb2.MetaNetDef):
        raise TypeError('set_model_info needs a MetaNetDef, got {}'.format(
            type(meta_net_def).__name__))
    meta_net_def.modelInfo.project = project_str
    meta_net_def.modelInfo.modelClass = model_class_str
    meta_net_def.modelInfo.version = version


def save_to_db(db_type, db_destination, predictor_export_meta):
    """Writes the export to the DB `db_destination`: the MetaNetDef first
    (load_from_db reads it before anything else), then the parameters as
    they are in the current workspace."""
    meta_net_def = get_meta_net_def(predictor_export_meta)
    with core.DeviceScope(core.DeviceOption(caffe2_pb2.CPU)):
        workspace.FeedBlob(predictor_constants.META_NET_DEF,
                           serde.serialize_protobuf_struct(meta_net_def))
    blobs_to_save = [predictor_constants.META_NET_DEF] + predictor_export_meta.parameters
    workspace.RunOperatorOnce(core.CreateOperator(
        'Save', blobs_to_save, [], absolute_path=True, db=db_destination, db_type=db_type))


def load_from_db(filename, db_type, device_option=None):
    """The MetaNetDef saved in `filename`. Leaves a reader of the DB in blob
    predictor_constants.PREDICTOR_DBREADER for the global init net; the
    nets' ops get `device_option` (default: the current device scope, if
    any)."""
    reader = predictor_constants.PREDICTOR_DBREADER
    workspace.RunOperatorOnce(core.CreateOperator(
        'CreateDB', [], [core.BlobReference(reader)], db=filename, db_type=db_type))
    workspace.RunOperatorOnce(core.CreateOperator(
        'Load', [core.BlobReference(reader)],
        [core.BlobReference(predictor_constants.META_NET_DEF)]))
    blob = workspace.FetchBlob(predictor_constants.META_NET_DEF)
    if not isinstance(blob, (bytes, str)):
        raise TypeError('{}: blob {} holds a {}, not a serialized MetaNetDef'.format(
            filename, predictor_constants.META_NET_DEF, type(blob).__name__))
    meta_net_def = serde.deserialize_protobuf_struct(blob, metanet_pb2.MetaNetDef)
    if device_option is None:
        device_option = scope.CurrentDeviceScope()
    if device_option is not None:
        for entry in meta_net_def.nets:
            for op in entry.value.op:
                op.device_option.CopyFrom(device_option)
    return meta_net_def


def prepare_prediction_net(filename, db_type, device_option=None, optimize=True):
    """Loads the export in `filename` into the current workspace (runs its
    init nets) and returns its predict net, created and ready to run. With
    `optimize` (the default; a pass list as optimizeForInference takes, or
    False) the predict net first goes through the inference passes, which
    keep its external outputs as it computes them."""
    meta_net_def = load_from_db(filename, db_type, device_option)
    workspace.RunNetOnce(utils.GetNet(meta_net_def, predictor_constants.GLOBAL_INIT_NET_TYPE))
    workspace.RunNetOnce(utils.GetNet(meta_net_def, predictor_constants.PREDICT_INIT_NET_TYPE))
    predict_net = core.Net(utils.GetNet(meta_net_def, predictor_constants.PREDICT_NET_TYPE))
    transformations.optimizeWhenServing(predict_net, optimize,
                                        keep=predict_net.Proto().external_output)
    workspace.CreateNet(predict_net)
    return predict_net

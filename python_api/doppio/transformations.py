"""Graph transformations of Caffe2's caffe2.python.transformations, on
Doppio's C++ passes (transforms/): each rewrites a net in place, as Caffe2's
do, and reads (and writes) weights in the current workspace.

    from caffe2.python import transformations as tf
    workspace.RunNetOnce(init_net)          # the weights must be there
    tf.fuseConvBN(predict_net)              # Conv + SpatialBN(is_test) -> Conv
    tf.fuseActivation(predict_net)          # Conv + Relu -> ConvFusion, FC + Relu
    tf.optimizeForInference(predict_net)    # all of them, in-place activations, FC on oneDNN

`net` is a core.Net or a NetDef. The fused ops are for inference only: they
have no gradient. run_net --optimize applies the same passes.
"""
from doppio import _C as C
from doppio.proto import doppio_pb2 as caffe2_pb2


def _proto(net):
    return net if isinstance(net, caffe2_pb2.NetDef) else net.Proto()


def _rewrite(net, function, *args):
    proto = _proto(net)
    out, counts = function(proto.SerializeToString(), *args)
    proto.ParseFromString(out)
    return counts


def fuseConvBN(net):
    """Folds every SpatialBN(is_test=1) into the Conv before it, where safe
    (transforms/fuse_conv_bn.h); the folded filter and bias are new blobs of
    the current workspace. Returns how many pairs were folded."""
    return _rewrite(net, C.transform_fuseConvBN)


def fuseActivation(net):
    """Sigmoid(x) * x -> Swish(x); Conv + activation (Relu, LeakyRelu, Clip,
    Sigmoid, Tanh, Elu, Swish) -> ConvFusion(fusion_type=1, activation=...)
    and FC + Relu -> FC with fusion_type=1, where safe. Returns
    {'swish': s, 'conv_relu': n, 'conv_activation': a, 'fc_relu': m}."""
    return _rewrite(net, C.transform_fuseActivation)


def inplaceActivation(net):
    """Activations whose input dies there overwrite it. Returns how many."""
    return _rewrite(net, C.transform_inplaceActivation)


def optimizeForInference(net, keep=(), passes='default'):
    """fuseConvBN, MatMul + bias -> FCTransposed, fuseActivation and
    inplaceActivation, in that order; blobs in `keep` are left as the net
    computes them. `passes`: a comma-separated subset of
    conv_bn,matmul_bias,activation,conv_sum,conv_inference,channels_last,
    channels_last_always,inplace,
    or 'default' (all but channels_last_always: channels_last runs a
    convolutional region in NHWC only where oneDNN's layout choices on this CPU
    say it saves reorders), 'all', 'none'. Returns the counts
    of each."""
    return _rewrite(net, C.transform_optimizeForInference, [str(b) for b in keep], passes)


def optimizeWhenServing(net, optimize, keep=()):
    """What the ONNX backend's prepare, workspace.Predictor and
    prepare_prediction_net do with their `optimize` argument: True runs the
    default passes, a string names them (as optimizeForInference takes),
    False leaves the net as it is. Returns the counts, or None."""
    if not optimize:
        return None
    passes = optimize if isinstance(optimize, str) else 'default'
    return optimizeForInference(net, keep=keep, passes=passes)


def optimizeForMKLDNN(net, training_mode=False):
    """Caffe2's ideep optimization; here the same inference passes on the
    CPU ops. With training_mode the net is left as it is: every fusion here
    is inference-only."""
    if training_mode:
        return {'conv_bn': 0, 'matmul_bias': 0, 'swish': 0, 'conv_relu': 0, 'conv_activation': 0,
                'fc_relu': 0, 'conv_sum': 0, 'conv_inference': 0, 'channels_last': 0,
                'inplace': 0}
    return optimizeForInference(net)


class Transformer:
    """Caffe2's by-name access: Transformer().fuseConvBN(net) and
    Transformer.runTransform('fuseConvBN', net)."""

    _TRANSFORMS = {
        'fuseConvBN': fuseConvBN,
        'FuseConvBN': fuseConvBN,
        'fuseActivation': fuseActivation,
        'inplaceActivation': inplaceActivation,
        'optimizeForInference': optimizeForInference,
        'optimizeForMKLDNN': optimizeForMKLDNN,
    }

    @classmethod
    def runTransform(cls, transform_name, net):
        transform = cls._TRANSFORMS.get(transform_name)
        if transform is None:
            raise AttributeError('Transformation {} not found (available: {}).'.format(
                transform_name, ', '.join(sorted(cls._TRANSFORMS))))
        transform(net)

    def __getattr__(self, transform_name):
        if transform_name.startswith('__'):
            raise AttributeError(transform_name)
        return lambda net: self.runTransform(transform_name, net)

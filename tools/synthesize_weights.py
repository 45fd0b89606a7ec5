#!/usr/bin/python3
"""Makes an init net for a predict net whose weights are not at hand: every
parameter gets a shape the net accepts and seeded random values calibrated on
a sample input, so the net runs end to end and its outputs are not
degenerate (a detector detects something, a quantized layer spans its uint8
range).

    tools/python tools/synthesize_weights.py --net model.pbtxt --out model_init.pb \\
        --input data=input.npy --input im_info=info.npy [--classes 81] [--seed 0]

Shapes: a parameter's shape follows from its op's arguments and its inputs'
shapes, except each layer's output channel count, which only the weight
itself fixes. Those counts are solved from the net: channel counts are
variables, equal across ops that keep channels (Sum, Relu, pools, layout
changes, quantization, RoIAlign...), a depthwise convolution fixes its
input's and output's to its `group`, GenerateProposals ties its deltas to
4 x its scores (and the anchors to the scores' count), BoxWithNMSLimit and
BBoxTransform tie boxes to 4 x classes; what is still free gets --classes
for class scores, 15 anchors, and --channels otherwise.

Values: the net runs op by op (If runs the branch its condition picks);
before a Conv / FC / Int8 layer runs, its weights are drawn (He scaling),
the layer runs once in float32, and weight and bias are rescaled so the
output's spread is one (in float32 nets) or 40 quantization steps of the
op's Y_scale (Int8 ops; weights quantized to uint8 around 128, biases to
int32 at input scale x weight scale, as Caffe2's quantized models store
them). The init net holds GivenTensorFill / Int8GivenTensorFill /
Int8GivenIntTensorFill ops, like the model_init.pb files Caffe2 exports.
"""
import argparse
import sys

import numpy as np
from google.protobuf.message import DecodeError

from doppio import core, utils, workspace
from doppio.proto import doppio_pb2

CONV_TYPES = ('Conv', 'Int8Conv', 'Int8ConvRelu', 'ConvTranspose', 'Int8ConvTranspose')
FC_TYPES = ('FC', 'Int8FC')
# Ops whose output has the channel count of their inputs: (op types, inputs).
CHANNEL_KEEPING = {
    'all': ('Relu', 'Sum', 'Add', 'Sigmoid', 'Softmax', 'NCHW2NHWC', 'NHWC2NCHW',
            'Int8Quantize', 'Int8Dequantize', 'Int8Relu', 'Int8Sum', 'Int8SumRelu', 'Int8Add',
            'Int8AddRelu', 'Int8Sigmoid', 'Int8Softmax', 'AveragePool', 'MaxPool',
            'Int8AveragePool', 'Int8MaxPool', 'ResizeNearest', 'Int8ResizeNearest',
            'UpsampleNearest', 'SpatialBN', 'AffineChannel', 'Copy', 'Int8AveragePoolRelu',
            'Int8MaxPoolRelu', 'LeakyRelu', 'Int8LeakyRelu', 'Clip'),
    'first': ('RoIAlign', 'Int8RoIAlign', 'RoIPool'),
}
NUM_ANCHORS = 15  # Detectron's 5 sizes x 3 aspect ratios


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--net', required=True, help='predict NetDef, binary or text')
    parser.add_argument('--out', required=True, help='init NetDef to write (binary)')
    parser.add_argument('--input', action='append', default=[],
                        help='NAME=FILE.npy: a sample input (repeatable)')
    parser.add_argument('--classes', type=int, default=81, help='class count of class scores')
    parser.add_argument('--channels', type=int, default=32, help='free channel counts')
    parser.add_argument('--seed', type=int, default=0)
    return parser.parse_args(argv)


class _Channels(object):
    """Union-find over blobs' channel counts, with fixed values and
    'b is k times a' relations."""

    def __init__(self):
        self.parent, self.value, self.times = {}, {}, []

    def find(self, blob):
        self.parent.setdefault(blob, blob)
        while self.parent[blob] != blob:
            self.parent[blob] = self.parent[self.parent[blob]]
            blob = self.parent[blob]
        return blob

    def same(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra
            if rb in self.value:
                self.fix(ra, self.value.pop(rb))

    def fix(self, blob, count):
        root = self.find(blob)
        if self.value.get(root, count) != count:
            raise ValueError('channel count of {!r}: {} and {} both required'.format(
                blob, self.value[root], count))
        self.value[root] = count

    def get(self, blob):
        return self.value.get(self.find(blob))

    def settle(self, defaults):
        """Applies the relations, then `defaults` [(blob, count)] to roots
        still free, until every related count is known."""
        pending = list(defaults)
        while True:
            changed = False
            for big, factor, small in self.times:
                if self.get(small) is not None and self.get(big) is None:
                    self.fix(big, factor * self.get(small))
                    changed = True
                elif self.get(big) is not None and self.get(small) is None:
                    self.fix(small, self.get(big) // factor)
                    changed = True
            if changed:
                continue
            while pending and self.get(pending[0][0]) is not None:
                pending.pop(0)
            if not pending:
                return
            self.fix(*pending.pop(0))


def _arg(op, name, default=None):
    """Argument `name` of `op` (strings decoded), or `default`."""
    value = utils.ArgsToDict(op.arg).get(name, default)
    return value.decode() if isinstance(value, bytes) else value


def _all_ops(net):
    """The ops of `net` and of the nets in its ops' arguments, in order."""
    for op in net.op:
        yield op
        for arg in op.arg:
            if arg.HasField('n'):
                yield from _all_ops(arg.n)
            for sub in arg.nets:
                yield from _all_ops(sub)


def solve_channels(net, classes, channels):
    """Each blob's channel count (see the module doc): a _Channels."""
    solved = _Channels()
    defaults = []
    for op in _all_ops(net):
        if op.type in CONV_TYPES:
            group = _arg(op, 'group', 1)
            if group > 1:
                solved.fix(op.input[0], group)
                solved.fix(op.output[0], group)
        elif op.type in CHANNEL_KEEPING['all']:
            for blob in list(op.input) + list(op.output):
                solved.same(op.input[0], blob)
        elif op.type in CHANNEL_KEEPING['first']:
            solved.same(op.input[0], op.output[0])
        elif op.type == 'GenerateProposals':
            solved.times.append((op.input[1], 4, op.input[0]))
            defaults.append((op.input[0], NUM_ANCHORS))
        elif op.type == 'BBoxTransform':
            solved.same(op.input[1], op.output[0])
            defaults.append((op.input[1], 4 * classes))
        elif op.type == 'BoxWithNMSLimit':
            solved.times.append((op.input[1], 4, op.input[0]))
            defaults.append((op.input[0], classes))
    for op in _all_ops(net):
        if op.type in CONV_TYPES + FC_TYPES:
            defaults.append((op.output[0], channels))
    solved.settle(defaults)
    return solved


# Float32 nets: the spread each head's output is calibrated to (by output
# name); every other layer gets one. Wide class logits, so some detections
# clear a 0.05 score threshold; small box deltas, so boxes stay in the image.
_FLOAT_OUTPUT_STD = (('rpn_cls_logits', 2.0), ('rpn_bbox_pred', 0.1), ('cls_score', 3.0),
                     ('bbox_pred', 0.1), ('mask_fcn_logits', 2.0))
_INT8_OUTPUT_STEPS = 40.0


class Synthesizer(object):
    """Runs a net op by op in the workspace, drawing each missing parameter
    as its op first needs it (see the module doc). `params` maps a name to
    (float32 array) or (uint8/int32 array, scale, zero point)."""

    def __init__(self, solved, seed):
        self.solved = solved
        self.rng = np.random.RandomState(seed)
        self.params = {}

    def run_net(self, net):
        for op in net.op:
            self.run_op(op)

    def run_op(self, op):
        if op.type == 'If':
            branch = 'then_net' if bool(workspace.FetchBlob(op.input[0])) else 'else_net'
            chosen = _arg(op, branch)
            if chosen is not None:
                self.run_net(chosen)
            return
        if op.type in CONV_TYPES + FC_TYPES and not workspace.HasBlob(op.input[1]):
            self._draw_layer(op)
        elif op.type == 'GenerateProposals' and not workspace.HasBlob(op.input[3]):
            self._draw_anchors(op)
        workspace.RunOperatorOnce(op)

    def _draw_anchors(self, op):
        count = self.solved.get(op.input[0])
        stride = 1.0 / _arg(op, 'spatial_scale', 1.0 / 16)
        ratios = (0.5, 1.0, 2.0) if count % 3 == 0 else (1.0,)
        sizes = [32.0 * 2 ** i for i in range(count // len(ratios))]
        anchors = []
        for size in sizes:
            for ratio in ratios:
                w, h = size / np.sqrt(ratio), size * np.sqrt(ratio)
                center = (stride - 1) / 2.0
                anchors.append([center - (w - 1) / 2, center - (h - 1) / 2,
                                center + (w - 1) / 2, center + (h - 1) / 2])
        self.params[op.input[3]] = np.array(anchors, np.float32)
        workspace.FeedBlob(op.input[3], self.params[op.input[3]])

    def _shapes(self, op, x_shape):
        """(weight shape, bias length) of layer `op` on an input of x_shape."""
        out = self.solved.get(op.output[0])
        if op.type in FC_TYPES:
            axis = _arg(op, 'axis', 1)
            return (out, int(np.prod(x_shape[axis:]))), out
        nhwc = _arg(op, 'order', 'NHWC' if op.type.startswith('Int8') else 'NCHW') == 'NHWC'
        cin = x_shape[-1] if nhwc else x_shape[1]
        group = _arg(op, 'group', 1)
        kernel = _arg(op, 'kernel', None)
        kh, kw = (kernel, kernel) if kernel is not None else (
            _arg(op, 'kernel_h', 1), _arg(op, 'kernel_w', 1))
        if 'Transpose' in op.type:
            first, per_group = cin, out // group
        else:
            first, per_group = out, cin // group
        shape = (first, kh, kw, per_group) if nhwc else (first, per_group, kh, kw)
        return shape, out

    def _draw_layer(self, op):
        quantized = op.type.startswith('Int8')
        x = (workspace.FetchInt8BlobRealVal(op.input[0]) if quantized
             else workspace.FetchBlob(op.input[0]))
        w_shape, bias_len = self._shapes(op, x.shape)
        fan_in = int(np.prod(w_shape[1:]))
        w = self.rng.normal(0.0, np.sqrt(2.0 / fan_in), w_shape).astype(np.float32)
        b = self.rng.normal(0.0, 0.1, bias_len).astype(np.float32) if len(op.input) > 2 else None
        # The layer once in float32, to measure its output's spread.
        twin = core.CreateOperator(op.type.replace('Int8', '').replace('ConvRelu', 'Conv'),
                                   ['__x', '__w'] + (['__b'] if b is not None else []), ['__y'])
        twin.arg.extend(a for a in op.arg if a.name not in ('Y_scale', 'Y_zero_point'))
        for name, value in (('__x', x), ('__w', w), ('__b', b)):
            if value is not None:
                workspace.FeedBlob(name, value)
        workspace.RunOperatorOnce(twin)
        spread = float(np.std(workspace.FetchBlob('__y'))) or 1.0
        target = (_INT8_OUTPUT_STEPS * _arg(op, 'Y_scale') if quantized else
                  next((t for key, t in _FLOAT_OUTPUT_STD if key in op.output[0]), 1.0))
        w *= target / spread
        if b is not None:
            b *= target / spread
        if quantized:
            self._feed_quantized(op, w, b, _input_scale(op.input[0]))
        else:
            self._feed(op.input[1], w)
            if b is not None:
                self._feed(op.input[2], b)

    def _feed(self, name, value):
        self.params[name] = value
        workspace.FeedBlob(name, value)

    def _feed_quantized(self, op, w, b, x_scale):
        """Caffe2's stored form: uint8 weights around 128, int32 biases at
        x_scale * w_scale with zero point 0."""
        w_scale = float(np.abs(w).max() / 127.0) or 1.0
        q = (np.clip(np.round(w / w_scale), -127, 127) + 128).astype(np.uint8)
        self.params[op.input[1]] = (q, w_scale, 128)
        workspace.FeedBlob(op.input[1], workspace.Int8Tensor(q, w_scale, 128))
        if b is not None:
            scale = x_scale * w_scale
            qb = np.round(b / scale).astype(np.int32)
            self.params[op.input[2]] = (qb, scale, 0)
            workspace.FeedBlob(op.input[2], workspace.Int8Tensor(qb, scale, 0))

    def init_net(self, name):
        """The parameters as an init NetDef."""
        net = doppio_pb2.NetDef(name=name)
        for blob, value in sorted(self.params.items()):
            if isinstance(value, tuple):
                q, scale, zero_point = value
                if q.dtype == np.uint8:
                    op = core.CreateOperator('Int8GivenTensorFill', [], [blob], shape=q.shape,
                                             values=q.tobytes(), Y_scale=scale,
                                             Y_zero_point=zero_point)
                else:
                    op = core.CreateOperator('Int8GivenIntTensorFill', [], [blob],
                                             shape=q.shape, values=[int(v) for v in q],
                                             Y_scale=scale, Y_zero_point=zero_point)
            else:
                op = core.CreateOperator('GivenTensorFill', [], [blob], shape=value.shape,
                                         values=value.ravel().tolist())
            net.op.append(op)
        return net


def _input_scale(blob):
    return workspace.FetchInt8Blob(blob).scale


def load_net(path):
    """A NetDef file, binary or text protobuf."""
    with open(path, 'rb') as f:
        data = f.read()
    try:
        return utils.TryReadProtoWithClass(doppio_pb2.NetDef, data)
    except DecodeError as error:
        raise ValueError('{}: neither a binary nor a text NetDef ({})'.format(path, error))


def synthesize(net, inputs, classes=81, channels=32, seed=0):
    """An init NetDef for `net` (see the module doc), calibrated on
    `inputs` {name: array}; leaves the net's blobs in the workspace."""
    workspace.ResetWorkspace()
    for name, value in inputs.items():
        workspace.FeedBlob(name, value)
    synthesizer = Synthesizer(solve_channels(net, classes, channels), seed)
    synthesizer.run_net(net)
    return synthesizer.init_net(net.name + '_init')


def main(argv):
    args = parse_args(argv)
    inputs = {}
    for item in args.input:
        name, equals, path = item.partition('=')
        if not equals or not name:
            raise SystemExit('--input {!r}: expected NAME=FILE.npy'.format(item))
        inputs[name] = np.load(path)
    init = synthesize(load_net(args.net), inputs, args.classes, args.channels, args.seed)
    with open(args.out, 'wb') as f:
        f.write(init.SerializeToString())
    print('{} parameters -> {}'.format(len(init.op), args.out))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

"""Summary of a NetDef: ops by type, external inputs and outputs, parameters,
devices, engines, and the FLOPs and bytes of each op from its schema's cost
inference.

  tools/inspect_net --net train.pb [--init_net init.pb] \\
      [--input_shape data=64,1,28,28 --input_shape label=64:int32] [--json]

Cost inference needs the shapes of the net's inputs: the parameters' come from
the init net's fill ops (their shape arguments), the data's from
--input_shape NAME=D0,D1,...[:TYPE] (TYPE a numpy-style name such as float32
or int32; default float32). Ops whose inputs' shapes stay unknown, or whose
type has no cost function, are listed without figures and counted apart.
Exit status: 0 success, 1 unreadable input (one line on stderr), 2 usage.
"""

import argparse
import collections
import json
import sys

from google.protobuf import text_format
from google.protobuf.message import DecodeError

from doppio import _C
from doppio.proto import doppio_pb2

_TYPES = {
    'float32': doppio_pb2.TensorProto.FLOAT, 'float': doppio_pb2.TensorProto.FLOAT,
    'float64': doppio_pb2.TensorProto.DOUBLE, 'double': doppio_pb2.TensorProto.DOUBLE,
    'float16': doppio_pb2.TensorProto.FLOAT16,
    'int8': doppio_pb2.TensorProto.INT8, 'int16': doppio_pb2.TensorProto.INT16,
    'int32': doppio_pb2.TensorProto.INT32, 'int64': doppio_pb2.TensorProto.INT64,
    'uint8': doppio_pb2.TensorProto.UINT8, 'uint16': doppio_pb2.TensorProto.UINT16,
    'bool': doppio_pb2.TensorProto.BOOL,
}
_ITEM_BYTES = {
    doppio_pb2.TensorProto.FLOAT: 4, doppio_pb2.TensorProto.DOUBLE: 8,
    doppio_pb2.TensorProto.FLOAT16: 2, doppio_pb2.TensorProto.INT8: 1,
    doppio_pb2.TensorProto.INT16: 2, doppio_pb2.TensorProto.INT32: 4,
    doppio_pb2.TensorProto.INT64: 8, doppio_pb2.TensorProto.UINT8: 1,
    doppio_pb2.TensorProto.UINT16: 2, doppio_pb2.TensorProto.BOOL: 1,
}


class InputError(Exception):
    """A file or argument the user gave cannot be used; the message says why."""


def read_net(path):
    """A NetDef from a binary or text protobuf file."""
    try:
        with open(path, 'rb') as source:
            content = source.read()
    except OSError as error:
        raise InputError('cannot read NetDef file {!r}: {}'.format(path, error.strerror))
    net = doppio_pb2.NetDef()
    try:
        text_format.Parse(content.decode('utf-8'), net)
        return net
    except (UnicodeDecodeError, text_format.ParseError):
        net.Clear()
    try:
        net.ParseFromString(content)
    except DecodeError as error:
        raise InputError('{!r} is not a NetDef in binary or text protobuf format ({})'.format(
            path, error))
    if any(not op.type for op in net.op):
        raise InputError('{!r} is not a NetDef: an op without a type (a PlanDef? '
                         'inspect its nets one at a time)'.format(path))
    return net


def parse_input_shape(text):
    """'data=64,1,28,28[:int32]' -> ('data', [64, 1, 28, 28], dtype)."""
    name, sep, rest = text.partition('=')
    if not sep or not name:
        raise argparse.ArgumentTypeError(
            '--input_shape takes NAME=D0,D1,...[:TYPE], got {!r}'.format(text))
    dims_text, _, type_name = rest.partition(':')
    try:
        dims = [int(d) for d in dims_text.split(',')] if dims_text.strip() else []
    except ValueError:
        raise argparse.ArgumentTypeError(
            '--input_shape {!r}: dims must be integers separated by commas'.format(text))
    if any(d < 0 for d in dims):
        raise argparse.ArgumentTypeError('--input_shape {!r}: negative dim'.format(text))
    type_name = type_name or 'float32'
    if type_name not in _TYPES:
        raise argparse.ArgumentTypeError('--input_shape {!r}: unknown type {!r} (one of {})'.format(
            text, type_name, ', '.join(sorted(_TYPES))))
    return name, dims, _TYPES[type_name]


def device_name(device_option):
    kinds = {doppio_pb2.CPU: 'cpu', doppio_pb2.CUDA: 'gpu'}
    kind = kinds.get(device_option.device_type, 'device%d' % device_option.device_type)
    return '{}_{}'.format(kind, device_option.cuda_gpu_id)


def _elements(dims):
    count = 1
    for d in dims:
        count *= d
    return count


def _shape_maps(shapes_with_types):
    shapes = {name: list(dims) for name, (dims, _) in shapes_with_types.items()}
    types = {name: dtype for name, (_, dtype) in shapes_with_types.items()}
    return shapes, types


def inspect(net, init_net=None, input_shapes=()):
    """The summary as a dict (what --json prints)."""
    known = {}
    parameters = collections.OrderedDict()
    if init_net is not None:
        init_result = _C.infer_net_cost(init_net.SerializeToString(), {}, None)
        written = []
        for op in init_net.op:
            written.extend(b for b in op.output if b not in written)
        for blob in written:
            if blob in init_result['shapes']:
                dims, dtype = init_result['shapes'][blob]
                known[blob] = (list(dims), dtype)
                parameters[blob] = {'dims': list(dims), 'elements': _elements(dims),
                                    'bytes': _elements(dims) * _ITEM_BYTES.get(dtype, 4)}
            else:
                parameters[blob] = {'dims': None, 'elements': None, 'bytes': None}
    for name, dims, dtype in input_shapes:
        known[name] = (dims, dtype)
    shapes, types = _shape_maps(known)
    result = _C.infer_net_cost(net.SerializeToString(), shapes, types)

    net_device = device_name(net.device_option) if net.HasField('device_option') else None
    devices = collections.Counter()
    engines = collections.Counter()
    ops = []
    for op, figures in zip(net.op, result['ops']):
        device = device_name(op.device_option) if op.HasField('device_option') else net_device
        devices[device or 'default'] += 1
        engines[op.engine or 'default'] += 1
        entry = dict(figures)
        entry['device'] = device or 'default'
        entry['engine'] = op.engine
        entry['inputs'] = list(op.input)
        entry['outputs'] = list(op.output)
        ops.append(entry)
    known_params = [p for p in parameters.values() if p['elements'] is not None]
    return {
        'net': net.name,
        'num_ops': len(net.op),
        'ops_by_type': dict(collections.Counter(op.type for op in net.op).most_common()),
        'external_inputs': list(net.external_input),
        'external_outputs': list(net.external_output),
        'parameters': {
            'count': len(parameters),
            'count_with_known_shape': len(known_params),
            'elements': sum(p['elements'] for p in known_params),
            'bytes': sum(p['bytes'] for p in known_params),
            'blobs': parameters,
        },
        'devices': dict(devices.most_common()),
        'engines': dict(engines.most_common()),
        'ops': ops,
        'total': result['total'],
        'ops_without_cost': result['unknown_ops'],
    }


def _human(count, unit=''):
    for scale, prefix in ((1e12, 'T'), (1e9, 'G'), (1e6, 'M'), (1e3, 'K')):
        if count >= scale:
            return '{:.2f} {}{}'.format(count / scale, prefix, unit)
    return '{} {}'.format(count, unit).rstrip()


def format_text(summary):
    lines = ['net: {} ({} ops)'.format(summary['net'] or '(unnamed)', summary['num_ops'])]
    lines.append('ops by type: ' + ', '.join(
        '{} {}'.format(t, n) for t, n in summary['ops_by_type'].items()))
    lines.append('external inputs: ' + (', '.join(summary['external_inputs']) or '(none)'))
    lines.append('external outputs: ' + (', '.join(summary['external_outputs']) or '(none)'))
    params = summary['parameters']
    if params['count']:
        lines.append('parameters (init net): {} blobs, {} with known shape: {} elements, {}'.format(
            params['count'], params['count_with_known_shape'], params['elements'],
            _human(params['bytes'], 'B')))
    else:
        lines.append('parameters: no init net given')
    lines.append('devices: ' + ', '.join('{} ({} ops)'.format(d, n)
                                         for d, n in summary['devices'].items()))
    lines.append('engines: ' + ', '.join('{} ({} ops)'.format(e, n)
                                         for e, n in summary['engines'].items()))
    lines.append('')
    header = '{:>4}  {:<28} {:>14} {:>14} {:>14} {:>12}'.format(
        '#', 'op', 'FLOPs', 'bytes read', 'bytes written', 'param bytes')
    lines.append(header)
    for op in summary['ops']:
        label = op['type'] + (' ' + op['name'] if op['name'] else '')
        if op['known']:
            lines.append('{:>4}  {:<28} {:>14} {:>14} {:>14} {:>12}'.format(
                op['index'], label[:28], op['flops'], op['bytes_read'], op['bytes_written'],
                op['params_bytes']))
        else:
            lines.append('{:>4}  {:<28} {}'.format(op['index'], label[:28],
                                                    '-- (' + op['reason'] + ')'))
    total = summary['total']
    lines.append('')
    lines.append('total: {} FLOPs ({}), {} read, {} written; {} of {} ops without figures'.format(
        total['flops'], _human(total['flops'], 'FLOP'), _human(total['bytes_read'], 'B'),
        _human(total['bytes_written'], 'B'), summary['ops_without_cost'], summary['num_ops']))
    return '\n'.join(lines) + '\n'


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='inspect_net', description=__doc__.split('\n\n')[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--net', required=True, help='NetDef file (binary or text protobuf)')
    parser.add_argument('--init_net', help='NetDef that fills the parameters (their shapes '
                                           'and sizes come from its fill ops)')
    parser.add_argument('--input_shape', action='append', default=[], type=parse_input_shape,
                        help='NAME=D0,D1,...[:TYPE] shape of an input blob; repeatable')
    parser.add_argument('--json', action='store_true', help='print the summary as JSON')
    args = parser.parse_args(argv)
    try:
        net = read_net(args.net)
        init_net = read_net(args.init_net) if args.init_net else None
        summary = inspect(net, init_net, args.input_shape)
    except (InputError, RuntimeError) as error:
        sys.stderr.write('inspect_net: {}\n'.format(str(error).replace('\n', ' ')))
        return 1
    if args.json:
        json.dump(summary, sys.stdout, indent=1)
        sys.stdout.write('\n')
    else:
        sys.stdout.write(format_text(summary))
    return 0


if __name__ == '__main__':
    sys.exit(main())

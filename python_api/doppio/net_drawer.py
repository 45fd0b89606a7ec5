"""Graphviz drawings of nets, as caffe2.python.net_drawer.

Caffe2 builds pydot graphs; Doppio does not depend on pydot, so GetPydotGraph
and friends return a `Graph` of this module with the pydot methods scripts
call (create_png, create_svg, write_png, write_svg, write, to_string,
get_name, add_node, add_edge). The DOT text is written here; rendering runs
graphviz's `dot` program, which must be on PATH.

As in Caffe2, a blob written more than once becomes one node per version, so
the drawing stays acyclic for in-place ops. `group_by_device=True` draws the
ops of each DeviceOption (cpu_0, gpu_1, ...) in a cluster of their own.

Command line (tools/net_drawer runs it under tools/python):
  python -m doppio.net_drawer --input net.pb --output_prefix out_ --format svg,png
writes out_<net name>.dot and a drawing per format; a Parallelized net (ops on
several devices) is grouped by device unless --group_by_device=no.
"""

import argparse
import collections
import json
import re
import struct
import sys
import types
import zlib

from google.protobuf import text_format
from google.protobuf.message import DecodeError

from doppio.dot_graph import (  # noqa: F401  (re-exported: pydot's names, as in Caffe2)
    Cluster, Edge, Graph, Node)
from doppio.proto import doppio_pb2 as caffe2_pb2

OP_STYLE = {
    'shape': 'box',
    'color': '#0F9D58',
    'style': 'filled',
    'fontcolor': '#FFFFFF',
}
BLOB_STYLE = {'shape': 'octagon'}
# Clusters are drawn light so the op colours stay readable inside them.
CLUSTER_STYLE = {'style': 'rounded,filled', 'color': '#4285F4', 'fillcolor': '#E8F0FE'}
# Ops that move data between devices (collectives, copies) stay outside every
# cluster and are drawn in another colour with a double border.
CROSS_DEVICE_OP_STYLE = {'color': '#DB4437', 'peripheries': '2'}
# Blob names under a device's name scope: cpu_0/..., gpu_3/...
_DEVICE_SCOPE = re.compile(r'^((?:cpu|gpu)_\d+)/')
# Copies whose very job is to cross devices, whatever their blob names.
CROSS_DEVICE_OP_TYPES = frozenset(['CopyCPUToGPU', 'CopyGPUToCPU', 'CopyFromCPUInput',
                                   'EnsureCPUOutput'])


# Scripts written for Caffe2 sometimes build nodes through the module's pydot.
pydot = types.SimpleNamespace(Dot=Graph, Node=Node, Edge=Edge, Cluster=Cluster)


def _rectify_operator_and_name(operators_or_net, name):
    """(list of OperatorDefs, graph name) from a NetDef, a core.Net or ops."""
    if isinstance(operators_or_net, caffe2_pb2.NetDef):
        operators = operators_or_net.op
        if name is None:
            name = operators_or_net.name
    elif hasattr(operators_or_net, 'Proto'):
        net = operators_or_net.Proto()
        if not isinstance(net, caffe2_pb2.NetDef):
            raise TypeError('expected a Net whose Proto() is a NetDef, got {}'.format(
                type(net).__name__))
        operators = net.op
        if name is None:
            name = net.name
    else:
        operators = list(operators_or_net)
        for op in operators:
            if not isinstance(op, caffe2_pb2.OperatorDef):
                raise TypeError('net_drawer draws a NetDef, a core.Net or a list of '
                                'OperatorDefs, got an element of type {}'.format(type(op).__name__))
    return list(operators), (name if name is not None else 'G')


def _escape_label(name):
    # Caffe2 quotes names with json.dumps for pydot; kept for its callers.
    return json.dumps(name)


def DeviceName(device_option):
    """The name scope Doppio gives a device: cpu_0, gpu_1, ...; None when an
    op has no device option."""
    if device_option is None:
        return None
    kinds = {caffe2_pb2.CPU: 'cpu', caffe2_pb2.CUDA: 'gpu'}
    kind = kinds.get(device_option.device_type, 'device%d' % device_option.device_type)
    return '{}_{}'.format(kind, device_option.cuda_gpu_id)


def GetOpNodeProducer(append_output, **kwargs):
    def ReallyGetOpNode(op, op_id):
        if op.name:
            node_name = '%s/%s (op#%d)' % (op.name, op.type, op_id)
        else:
            node_name = '%s (op#%d)' % (op.type, op_id)
        if append_output:
            for output_name in op.output:
                node_name += '\n' + output_name
        return Node(node_name, **kwargs)
    return ReallyGetOpNode


def GetBlobNodeProducer(**kwargs):
    def ReallyGetBlobNode(node_name, label):
        return Node(node_name, label=label, **kwargs)
    return ReallyGetBlobNode


def _BlobNodeName(blob, version):
    # '#' then digits: distinct for every (blob, version) pair, and never the
    # name of an op node (those end with ')').
    return '{}#{}'.format(blob, version)


def _OpDevice(op, default_device):
    """The op's device: its device option's, else the net's, else the one
    name scope all its blobs share (None when there is none)."""
    if op.HasField('device_option'):
        return DeviceName(op.device_option)
    if default_device is not None:
        return default_device
    scopes = _BlobScopes(op)
    return next(iter(scopes)) if len(scopes) == 1 else None


def _BlobScope(blob):
    match = _DEVICE_SCOPE.match(blob)
    return match.group(1) if match else None


def _BlobScopes(op):
    scopes = set(_BlobScope(b) for b in list(op.input) + list(op.output))
    scopes.discard(None)
    return scopes


def IsCrossDeviceOp(op):
    """True for ops that read or write the blobs of more than one device
    (Allreduce, Broadcast, NCCL ops over cpu_N/ or gpu_N/ blobs) and for the
    cross-device copy ops."""
    return op.type in CROSS_DEVICE_OP_TYPES or len(_BlobScopes(op)) > 1


def GetPydotGraph(operators_or_net, name=None, rankdir='LR', op_node_producer=None,
                  blob_node_producer=None, group_by_device=False):
    """Ops and blob versions as nodes, data flow as edges. With
    group_by_device, each device's ops are drawn in a cluster named after the
    device, with the blobs under its name scope (or touched by its ops only);
    ops that span devices (see IsCrossDeviceOp) stay outside the clusters,
    drawn with CROSS_DEVICE_OP_STYLE."""
    if op_node_producer is None:
        op_node_producer = GetOpNodeProducer(False, **OP_STYLE)
    if blob_node_producer is None:
        blob_node_producer = GetBlobNodeProducer(**BLOB_STYLE)
    default_device = None
    if isinstance(operators_or_net, caffe2_pb2.NetDef) or hasattr(operators_or_net, 'Proto'):
        proto = (operators_or_net if isinstance(operators_or_net, caffe2_pb2.NetDef)
                 else operators_or_net.Proto())
        if isinstance(proto, caffe2_pb2.NetDef) and proto.HasField('device_option'):
            default_device = DeviceName(proto.device_option)
    operators, name = _rectify_operator_and_name(operators_or_net, name)
    graph = Graph(name, rankdir=rankdir)
    current_version = {}  # blob -> its latest version's node
    version_count = collections.defaultdict(int)
    # Devices of the ops touching each blob node: it joins a cluster only
    # when exactly one device touches it.
    node_devices = collections.defaultdict(set)
    blob_of_node = {}
    op_nodes = []
    for op_id, op in enumerate(operators):
        op_node = op_node_producer(op, op_id)
        device = _OpDevice(op, default_device)
        if group_by_device and IsCrossDeviceOp(op):
            for key, value in CROSS_DEVICE_OP_STYLE.items():
                op_node.set(key, value)
            device = _CROSS_DEVICE
        graph.add_node(op_node)
        op_nodes.append((op_node, device))
        for input_name in op.input:
            if input_name not in current_version:
                current_version[input_name] = blob_node_producer(
                    _BlobNodeName(input_name, version_count[input_name]), label=input_name)
            input_node = current_version[input_name]
            blob_of_node[input_node.get_name()] = input_name
            graph.add_node(input_node)
            node_devices[input_node.get_name()].add(device)
            graph.add_edge(Edge(input_node, op_node))
        for output_name in op.output:
            if output_name in current_version:
                version_count[output_name] += 1  # a new version of the blob
            output_node = blob_node_producer(
                _BlobNodeName(output_name, version_count[output_name]), label=output_name)
            current_version[output_name] = output_node
            blob_of_node[output_node.get_name()] = output_name
            graph.add_node(output_node)
            node_devices[output_node.get_name()].add(device)
            graph.add_edge(Edge(op_node, output_node))
    if group_by_device:
        _GroupByDevice(graph, op_nodes, node_devices, blob_of_node)
    return graph


# The "device" of a cross-device op: in no cluster.
_CROSS_DEVICE = object()


def _GroupByDevice(graph, op_nodes, node_devices, blob_of_node):
    clusters = collections.OrderedDict()

    def cluster_for(device):
        if device not in clusters:
            clusters[device] = Cluster(device, label=device, **CLUSTER_STYLE)
            graph.add_subgraph(clusters[device])
        return clusters[device]

    for op_node, device in op_nodes:
        if device is not None and device is not _CROSS_DEVICE:
            cluster_for(device).add_node(op_node)
    for node in graph.get_nodes():
        if node.get_name() not in blob_of_node:
            continue
        scope = _BlobScope(blob_of_node[node.get_name()])
        devices = node_devices.get(node.get_name())
        if scope is not None and scope in clusters:
            clusters[scope].add_node(node)
        elif (devices and len(devices) == 1 and None not in devices and
              _CROSS_DEVICE not in devices):
            cluster_for(next(iter(devices))).add_node(node)


def GetPydotGraphMinimal(operators_or_net, name=None, rankdir='LR', minimal_dependency=False,
                         op_node_producer=None):
    """Ops only, an edge from each op to the ops whose outputs it reads. With
    minimal_dependency, an edge implied by a longer path is left out."""
    if op_node_producer is None:
        op_node_producer = GetOpNodeProducer(False, **OP_STYLE)
    operators, name = _rectify_operator_and_name(operators_or_net, name)
    graph = Graph(name, rankdir=rankdir)
    blob_parents = {}  # blob -> the op node that last wrote it
    op_ancestry = collections.defaultdict(set)  # op node name -> ancestor names
    for op_id, op in enumerate(operators):
        op_node = op_node_producer(op, op_id)
        name_here = op_node.get_name()
        graph.add_node(op_node)
        parents = []
        for input_name in op.input:
            parent = blob_parents.get(input_name)
            if parent is not None and parent not in parents:
                parents.append(parent)
        op_ancestry[name_here].update(parents)
        for parent in parents:
            op_ancestry[name_here].update(op_ancestry[parent])
        for parent in parents:
            if minimal_dependency and any(parent in op_ancestry[other] for other in parents):
                continue
            graph.add_edge(Edge(parent, name_here))
        for output_name in op.output:
            blob_parents[output_name] = name_here
    return graph


def GetOperatorMapForPlan(plan_def):
    """{'<plan>_<net>': ops} for every net of a PlanDef."""
    operators_map = {}
    for net_id, net in enumerate(plan_def.network):
        if net.HasField('name'):
            operators_map[plan_def.name + '_' + net.name] = net.op
        else:
            operators_map[plan_def.name + '_network_%d' % net_id] = net.op
    return operators_map


def GetGraphInJson(operators_or_net, output_filepath):
    """Writes {'nodes': [...], 'edges': [...]} of the net's ops and blobs."""
    operators, _ = _rectify_operator_and_name(operators_or_net, None)
    blob_strid_to_node_id = {}
    node_name_counts = collections.defaultdict(int)
    nodes, edges = [], []
    for op_id, op in enumerate(operators):
        op_label = op.name + '/' + op.type if op.name else op.type
        op_node_id = len(nodes)
        nodes.append({'id': op_node_id, 'label': op_label, 'op_id': op_id, 'type': 'op'})
        for input_name in op.input:
            strid = _escape_label(input_name + str(node_name_counts[input_name]))
            if strid not in blob_strid_to_node_id:
                blob_strid_to_node_id[strid] = len(nodes)
                nodes.append({'id': len(nodes), 'label': input_name})
            edges.append({'source': blob_strid_to_node_id[strid], 'target': op_node_id})
        for output_name in op.output:
            strid = _escape_label(output_name + str(node_name_counts[output_name]))
            if strid in blob_strid_to_node_id:
                node_name_counts[output_name] += 1
                strid = _escape_label(output_name + str(node_name_counts[output_name]))
            blob_strid_to_node_id[strid] = len(nodes)
            nodes.append({'id': len(nodes), 'label': output_name})
            edges.append({'source': op_node_id, 'target': blob_strid_to_node_id[strid]})
    with open(output_filepath, 'w') as out:
        json.dump({'nodes': nodes, 'edges': edges}, out)


def _PngChunk(kind, data):
    return (struct.pack('>I', len(data)) + kind + data +
            struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff))


# A 1x1 white PNG, what GetGraphPngSafe returns when drawing fails.
_DummyPngImage = (b'\x89PNG\r\n\x1a\n' +
                  _PngChunk(b'IHDR', struct.pack('>IIBBBBB', 1, 1, 8, 2, 0, 0, 0)) +
                  _PngChunk(b'IDAT', zlib.compress(b'\x00\xff\xff\xff')) +
                  _PngChunk(b'IEND', b''))


def GetGraphPngSafe(func, *args, **kwargs):
    """func(*args, **kwargs).create_png(), or a blank PNG (with the reason on
    stderr) when that fails: for notebooks that must not stop on a drawing."""
    try:
        graph = func(*args, **kwargs)
        if not isinstance(graph, Graph):
            raise ValueError('func is expected to return a net_drawer.Graph')
        return graph.create_png()
    except Exception as error:  # the point is to never raise
        sys.stderr.write('net_drawer: failed to draw graph: {}\n'.format(error))
        return _DummyPngImage


def _ReadNetsFromFile(path):
    """{graph name: ops} from a NetDef or PlanDef file, text or binary."""
    with open(path, 'rb') as source:
        content = source.read()
    try:
        text = content.decode('utf-8')
    except UnicodeDecodeError:
        text = None
    if text is not None:
        for cls in (caffe2_pb2.NetDef, caffe2_pb2.PlanDef):
            proto = cls()
            try:
                text_format.Parse(text, proto)
            except text_format.ParseError:
                continue
            return _OperatorMap(proto)
    # Binary: a PlanDef also parses as a NetDef, but then its "ops" (really
    # nets) have no type, which a real NetDef's ops always have.
    net = caffe2_pb2.NetDef()
    try:
        net.ParseFromString(content)
        if all(op.type for op in net.op):
            return _OperatorMap(net)
    except DecodeError:
        pass
    plan = caffe2_pb2.PlanDef()
    try:
        plan.ParseFromString(content)
    except DecodeError as error:
        raise ValueError('net_drawer: {} is neither a NetDef nor a PlanDef, in text or binary '
                         'protobuf format ({})'.format(path, error)) from None
    return _OperatorMap(plan)


def _OperatorMap(proto):
    if isinstance(proto, caffe2_pb2.PlanDef):
        return GetOperatorMapForPlan(proto)
    return {proto.name: proto.op}


# What the command line writes: graphviz output formats.
_FORMATS = ('pdf', 'svg', 'png')


def _SpansDevices(operators):
    devices = set(_OpDevice(op, None) for op in operators)
    devices.discard(None)
    return len(devices) > 1


def main(argv=None):
    parser = argparse.ArgumentParser(description='Doppio (Caffe2) net drawer.')
    parser.add_argument('--input', type=str, required=True,
                        help='The input protobuf file (NetDef or PlanDef, text or binary).')
    parser.add_argument('--output_prefix', type=str, default='',
                        help='The prefix to be added to the output filename.')
    parser.add_argument('--minimal', action='store_true',
                        help='If set, produce a minimal visualization.')
    parser.add_argument('--minimal_dependency', action='store_true',
                        help='If set, only draw minimal dependency.')
    parser.add_argument('--append_output', action='store_true',
                        help='If set, append the output blobs to the operator names.')
    parser.add_argument('--rankdir', type=str, default='LR',
                        help='The rank direction of the graph.')
    parser.add_argument('--group_by_device', nargs='?', const='yes', default='auto',
                        choices=['auto', 'yes', 'no'],
                        help='Draw each device\'s ops in a cluster: yes, no, or auto (the '
                             'default: when the ops run on more than one device).')
    parser.add_argument('--format', type=str, default='pdf',
                        help='Comma-separated drawing formats written beside the .dot file: '
                             'any of ' + ', '.join(_FORMATS) + ' (default pdf, as Caffe2).')
    args = parser.parse_args(argv)
    formats = [f.strip() for f in args.format.split(',') if f.strip()]
    unknown = [f for f in formats if f not in _FORMATS]
    if unknown:
        parser.error('--format: unknown format(s) {} (choose from {})'.format(
            ', '.join(unknown), ', '.join(_FORMATS)))
    try:
        graphs = _ReadNetsFromFile(args.input)
    except (OSError, ValueError) as error:
        sys.stderr.write('{}\n'.format(error))
        return 1
    for key, operators in graphs.items():
        producer = GetOpNodeProducer(args.append_output, **OP_STYLE)
        if args.minimal:
            graph = GetPydotGraphMinimal(operators, name=key, rankdir=args.rankdir,
                                         op_node_producer=producer,
                                         minimal_dependency=args.minimal_dependency)
        else:
            group = (args.group_by_device == 'yes' or
                     (args.group_by_device == 'auto' and _SpansDevices(operators)))
            graph = GetPydotGraph(operators, name=key, rankdir=args.rankdir,
                                  op_node_producer=producer, group_by_device=group)
        filename = args.output_prefix + graph.get_name() + '.dot'
        try:
            graph.write(filename, format='raw')
        except OSError as error:
            sys.stderr.write('Error when writing out the dot file {}: {}\n'.format(filename, error))
            return 1
        for drawing_format in formats:
            drawing = filename[:-3] + drawing_format
            try:
                graph.write(drawing, format=drawing_format)
            except (OSError, RuntimeError) as error:
                sys.stderr.write('Error when writing out the {} file {}: {}\n'.format(
                    drawing_format, drawing, error))
                return 1
    return 0



if __name__ == '__main__':
    sys.exit(main())

"""doppio.net_drawer: the DOT text it writes is accepted by graphviz, and the
drawn nodes and edges are exactly the net's ops and blob versions (read back
from graphviz's SVG, expected sets computed here from the NetDef)."""
import html
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

from doppio import brew, core, data_parallel_model, model_helper, net_drawer, optimizer, scope
from doppio.proto import doppio_pb2

SVG = '{http://www.w3.org/2000/svg}'
needs_dot = pytest.mark.skipif(shutil.which('dot') is None, reason='graphviz is not installed')


def op(op_type, inputs, outputs, name='', device=None):
    op_def = doppio_pb2.OperatorDef(type=op_type, input=inputs, output=outputs, name=name)
    if device is not None:
        op_def.device_option.CopyFrom(device)
    return op_def


def svg_graph(svg_bytes):
    """({node title: [text lines]}, {edge title}, {cluster title}) of an SVG."""
    root = ElementTree.fromstring(svg_bytes)
    nodes, edges, clusters = {}, set(), set()
    for group in root.iter(SVG + 'g'):
        title = group.find(SVG + 'title')
        kind = group.get('class')
        if kind == 'node':
            nodes[title.text] = [t.text for t in group.iter(SVG + 'text')]
        elif kind == 'edge':
            edges.add(title.text)
        elif kind == 'cluster':
            clusters.add(title.text)
    return nodes, edges, clusters


def op_node_name(op_def, op_id):
    """Caffe2's op node: 'name/Type (op#i)', or 'Type (op#i)' without a name."""
    prefix = op_def.name + '/' if op_def.name else ''
    return '%s%s (op#%d)' % (prefix, op_def.type, op_id)


def expected_drawing(net_def):
    """Nodes and edges of Caffe2's drawing, by another route than the drawer:
    a blob's version is the number of times it was written before, counting
    a write only when the blob had already appeared."""
    nodes, edges = set(), set()
    appearances = []  # every (blob, is_write) in op order
    for op_def in net_def.op:
        appearances.extend((b, False) for b in op_def.input)
        appearances.extend((b, True) for b in op_def.output)

    def version_at(position):
        blob = appearances[position][0]
        earlier = [w for b, w in appearances[:position] if b == blob]
        if not earlier:
            return 0
        # The first appearance starts version 0; each later write adds one.
        return sum(earlier[1:]) + (1 if appearances[position][1] else 0)

    position = 0
    for op_id, op_def in enumerate(net_def.op):
        op_node = op_node_name(op_def, op_id)
        nodes.add(op_node)
        for blob in op_def.input:
            blob_node = '%s#%d' % (blob, version_at(position))
            nodes.add(blob_node)
            edges.add(blob_node + '->' + op_node)
            position += 1
        for blob in op_def.output:
            blob_node = '%s#%d' % (blob, version_at(position))
            nodes.add(blob_node)
            edges.add(op_node + '->' + blob_node)
            position += 1
    return nodes, edges


def sample_net():
    net = doppio_pb2.NetDef(name='sample')
    net.op.extend([
        op('FC', ['data', 'w', 'b'], ['fc']),
        op('Relu', ['fc'], ['fc']),            # in place: a second version of fc
        op('Relu', ['fc'], ['fc']),            # and a third
        op('Add', ['fc', 'data'], ['sum']),
        op('Copy', ['sum'], ['data']),          # data written after it was read
        op('Sum', ['data', 'sum'], ['total']),
    ])
    return net


@needs_dot
def test_nodes_and_edges_match_a_hand_checked_net():
    graph = net_drawer.GetPydotGraph(sample_net())
    nodes, edges, _ = svg_graph(graph.create_svg())
    assert set(nodes) == {
        'FC (op#0)', 'Relu (op#1)', 'Relu (op#2)', 'Add (op#3)', 'Copy (op#4)', 'Sum (op#5)',
        'data#0', 'w#0', 'b#0', 'fc#0', 'fc#1', 'fc#2', 'sum#0', 'data#1', 'total#0'}
    assert edges == {
        'data#0->FC (op#0)', 'w#0->FC (op#0)', 'b#0->FC (op#0)', 'FC (op#0)->fc#0',
        'fc#0->Relu (op#1)', 'Relu (op#1)->fc#1', 'fc#1->Relu (op#2)', 'Relu (op#2)->fc#2',
        'fc#2->Add (op#3)', 'data#0->Add (op#3)', 'Add (op#3)->sum#0',
        'sum#0->Copy (op#4)', 'Copy (op#4)->data#1',
        'data#1->Sum (op#5)', 'sum#0->Sum (op#5)', 'Sum (op#5)->total#0'}
    # Blob nodes are labelled with the blob's name, op nodes with their id.
    assert nodes['fc#2'] == ['fc'] and nodes['FC (op#0)'] == ['FC (op#0)']
    assert expected_drawing(sample_net()) == (set(nodes), edges)


@needs_dot
def test_net_object_and_op_list_draw_the_same():
    net = core.Net('drawn')
    hidden = net.FC(['x', 'w', 'b'], 'h')
    net.Relu(hidden, hidden)
    net.Softmax(hidden, 'prob')
    by_net = svg_graph(net_drawer.GetPydotGraph(net).create_svg())
    by_ops = svg_graph(net_drawer.GetPydotGraph(net.Proto().op, name='drawn').create_svg())
    assert by_net == by_ops
    assert (set(by_net[0]), by_net[1]) == expected_drawing(net.Proto())
    assert net_drawer.GetPydotGraph(net).get_name() == net.Name()


@needs_dot
def test_minimal_graph_and_minimal_dependency():
    net = doppio_pb2.NetDef(name='minimal')
    net.op.extend([op('Relu', ['x'], ['a']), op('Relu', ['a'], ['b']),
                   op('Add', ['a', 'b'], ['c'])])
    _, edges, _ = svg_graph(net_drawer.GetPydotGraphMinimal(net).create_svg())
    assert edges == {'Relu (op#0)->Relu (op#1)', 'Relu (op#0)->Add (op#2)',
                     'Relu (op#1)->Add (op#2)'}
    graph = net_drawer.GetPydotGraphMinimal(net, minimal_dependency=True)
    nodes, edges, _ = svg_graph(graph.create_svg())
    assert set(nodes) == {'Relu (op#0)', 'Relu (op#1)', 'Add (op#2)'}
    # op 0 -> op 2 is implied by op 0 -> op 1 -> op 2.
    assert edges == {'Relu (op#0)->Relu (op#1)', 'Relu (op#1)->Add (op#2)'}


@needs_dot
def test_group_by_device_clusters():
    net = doppio_pb2.NetDef(name='parallel')
    for device_id in (0, 1):
        gpu = core.DeviceOption(doppio_pb2.CUDA, device_id)
        prefix = 'gpu_%d/' % device_id
        net.op.append(op('Relu', [prefix + 'x'], [prefix + 'y'], device=gpu))
    net.op.append(op('Sum', ['gpu_0/y', 'gpu_1/y'], ['total'],
                     device=core.DeviceOption(doppio_pb2.CPU, 0)))
    net.op.append(op('Relu', ['cpu_blob'], ['cpu_out'], device=core.DeviceOption(doppio_pb2.CPU, 0)))
    graph = net_drawer.GetPydotGraph(net, group_by_device=True)
    text = graph.to_string()
    nodes, edges, clusters = svg_graph(graph.create_svg())
    assert clusters == {'cluster_gpu_0', 'cluster_gpu_1', 'cluster_cpu_0'}
    assert (set(nodes), edges) == expected_drawing(net)
    # Each device's op and the blobs under its name scope (or touched by its
    # ops only) are inside its cluster; the Sum reading both GPUs' blobs is a
    # cross-device op: outside every cluster, with its own style.
    body = {m.group(1): m.group(2) for m in re.finditer(
        r'subgraph "cluster_(\w+)" \{(.*?)\n  \}', text, re.S)}
    assert '"Relu (op#0)"' in body['gpu_0'] and '"gpu_0/x#0"' in body['gpu_0']
    assert '"gpu_0/y#0"' in body['gpu_0']
    assert '"Relu (op#1)"' in body['gpu_1'] and '"gpu_1/x#0"' in body['gpu_1']
    assert '"Relu (op#3)"' in body['cpu_0'] and '"cpu_out#0"' in body['cpu_0']
    assert all('"Sum (op#2)"' not in b and '"total#0"' not in b for b in body.values())
    sum_line = [line for line in text.splitlines() if line.strip().startswith('"Sum (op#2)"')]
    assert sum_line and 'peripheries="2"' in sum_line[0]


@needs_dot
@pytest.mark.parametrize('blob', ['with "quotes"', 'back\\slash', 'ends with \\',
                                  'two words', 'caf\u00e9 \u6570\u636e', 'new\nline',
                                  '\\N', '<html>', '{brace}; ->'])
def test_weird_blob_names_render(blob):
    net = doppio_pb2.NetDef(name='weird ' + blob)
    net.op.extend([op('Relu', [blob], [blob]), op('Relu', [blob], ['out'])])
    graph = net_drawer.GetPydotGraph(net)
    svg = graph.create_svg()
    nodes, _, _ = svg_graph(svg)
    # The node ids survive graphviz's parser as two distinct versions, and
    # each label reads exactly the blob's name (a newline breaks the line).
    blob_labels = [lines for title, lines in nodes.items() if 'op#' not in title]
    assert sorted(map(tuple, blob_labels)) == sorted(
        [tuple(blob.split('\n'))] * 2 + [('out',)])
    assert len(nodes) == 5
    assert graph.create_png().startswith(b'\x89PNG\r\n\x1a\n')


@needs_dot
def test_png_svg_and_files(tmp_path):
    graph = net_drawer.GetPydotGraph(sample_net(), rankdir='TB')
    assert graph.create_png().startswith(b'\x89PNG\r\n\x1a\n')
    assert b'<svg' in graph.create_svg()
    graph.write_png(str(tmp_path / 'g.png'))
    graph.write_svg(str(tmp_path / 'g.svg'))
    graph.write(str(tmp_path / 'g.dot'))  # raw DOT text, as pydot
    assert (tmp_path / 'g.png').read_bytes().startswith(b'\x89PNG')
    assert (tmp_path / 'g.dot').read_text() == graph.to_string()
    assert 'rankdir="TB"' in graph.to_string()
    result = subprocess.run(['dot', '-Tsvg'], input=graph.to_string().encode(),
                            capture_output=True)
    assert result.returncode == 0, result.stderr


def test_missing_dot_binary_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv('PATH', str(tmp_path))  # an empty folder: no graphviz
    graph = net_drawer.GetPydotGraph(sample_net())
    with pytest.raises(RuntimeError, match="graphviz's 'dot' program is not on PATH"):
        graph.create_png()
    # The DOT text needs no graphviz, and the safe helper returns a blank PNG.
    assert graph.to_string().startswith('digraph "sample"')
    png = net_drawer.GetGraphPngSafe(net_drawer.GetPydotGraph, sample_net())
    assert png.startswith(b'\x89PNG\r\n\x1a\n')


def test_plan_operator_map_and_caffe2_alias():
    plan = doppio_pb2.PlanDef(name='plan')
    plan.network.add(name='init').op.extend([op('ConstantFill', [], ['x'])])
    plan.network.add().op.extend([op('Relu', ['x'], ['y'])])
    ops = net_drawer.GetOperatorMapForPlan(plan)
    assert sorted(ops) == ['plan_init', 'plan_network_1']
    assert [o.type for o in ops['plan_network_1']] == ['Relu']
    from caffe2.python import net_drawer as caffe2_net_drawer
    assert caffe2_net_drawer is net_drawer
    assert net_drawer.OP_STYLE['shape'] == 'box' and net_drawer.BLOB_STYLE == {'shape': 'octagon'}


def test_bad_operand_is_a_type_error():
    with pytest.raises(TypeError, match='OperatorDef'):
        net_drawer.GetPydotGraph([1, 2])


@needs_dot
@pytest.mark.parametrize('binary', [False, True])
def test_command_line(tmp_path, binary):
    net = sample_net()
    path = tmp_path / ('net.pb' if binary else 'net.pbtxt')
    if binary:
        path.write_bytes(net.SerializeToString())
    else:
        path.write_text(str(net))
    prefix = str(tmp_path / 'out_')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run([sys.executable, '-m', 'doppio.net_drawer', '--input', str(path),
                             '--output_prefix', prefix, '--append_output'],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    dot_text = (tmp_path / 'out_sample.dot').read_text()
    assert (tmp_path / 'out_sample.pdf').read_bytes().startswith(b'%PDF')
    # --append_output puts each op's outputs under its name.
    assert '"FC (op#0)\\nfc"' in dot_text
    assert subprocess.run(['dot', '-Tsvg'], input=dot_text.encode(),
                          capture_output=True).returncode == 0
    # A plan file draws one graph per net.
    plan = doppio_pb2.PlanDef(name='p')
    plan.network.add().CopyFrom(net)
    plan_path = tmp_path / 'plan.pb'
    plan_path.write_bytes(plan.SerializeToString())
    result = subprocess.run([sys.executable, '-m', 'doppio.net_drawer', '--input',
                             str(plan_path), '--output_prefix', prefix, '--minimal'],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / 'out_p_sample.dot').exists()
    # An unreadable input is a message and exit code 1, not a traceback.
    garbage = tmp_path / 'garbage.pb'
    garbage.write_bytes(b'\xff\xfe\x00garbage')
    result = subprocess.run([sys.executable, '-m', 'doppio.net_drawer', '--input',
                             str(garbage)], capture_output=True, text=True, env=env,
                            timeout=120)
    assert result.returncode == 1 and 'neither a NetDef nor a PlanDef' in result.stderr
    assert 'Traceback' not in result.stderr


def graphviz_json(dot_text):
    """(nodes, edges, {cluster: its nodes}) as graphviz itself parsed the DOT
    text (dot -Tjson0), not as the drawer meant it."""
    result = subprocess.run(['dot', '-Tjson0'], input=dot_text.encode('utf-8'),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout.decode('utf-8'))
    objects = data['objects']
    clusters = {o['name'][len('cluster_'):]: {objects[i]['name'] for i in o.get('nodes', [])}
                for o in objects if o['name'].startswith('cluster_')}
    nodes = {o['name'] for o in objects if not o['name'].startswith('cluster_')}
    edges = {objects[e['tail']]['name'] + '->' + objects[e['head']]['name']
             for e in data.get('edges', [])}
    return nodes, edges, clusters


def parallelized_net(num_devices=2):
    """The train net of a small MLP after Parallelize_CPU on cpu_0..cpu_{n-1}."""
    def forward(model, loss_scale):
        hidden = brew.fc(model, 'data', 'fc1', 5, 7)
        hidden = brew.relu(model, hidden, 'relu1')
        logits = brew.fc(model, hidden, 'fc2', 7, 3)
        _, loss = model.net.SoftmaxWithLoss([logits, 'label'], ['softmax', 'avg_loss'])
        return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]

    optimizer.reset_optimizer_instance_count()
    model = model_helper.ModelHelper(name='drawn_parallel')
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward,
        optimizer_builder_fun=lambda m: optimizer.build_sgd(m, 0.1, momentum=0.9),
        devices=list(range(num_devices)), num_threads_per_device=1)
    return model.net.Proto()


def blob_scopes(op_def):
    return {b.split('/')[0] for b in list(op_def.input) + list(op_def.output)
            if re.match(r'(cpu|gpu)_\d+/', b)}


@needs_dot
def test_parallelized_net_is_grouped_by_device():
    net = parallelized_net(2)
    assert any(o.type == 'Allreduce' for o in net.op)
    graph = net_drawer.GetPydotGraph(net, group_by_device=True)
    nodes, edges, clusters = graphviz_json(graph.to_string())
    # Every op and blob version is drawn, every edge is an input or output.
    assert (nodes, edges) == expected_drawing(net)
    assert set(clusters) == {'cpu_0', 'cpu_1'}
    in_a_cluster = set().union(*clusters.values())
    crossing = 0
    for op_id, op_def in enumerate(net.op):
        op_node = op_node_name(op_def, op_id)
        if len(blob_scopes(op_def)) > 1:  # Allreduce over both devices' gradients
            crossing += 1
            assert op_node not in in_a_cluster, op_node
        else:
            device = 'cpu_%d' % op_def.device_option.cuda_gpu_id
            assert op_node in clusters[device], (op_node, device)
    assert crossing == sum(o.type == 'Allreduce' for o in net.op) > 0
    for node in nodes:
        match = re.match(r'(cpu_\d+)/', node)
        if match and '(op#' not in node:
            assert node in clusters[match.group(1)], node
    # graphviz renders it: the SVG is XML with one node group per node, the
    # PNG has PNG's signature.
    svg = graph.create_svg()
    svg_nodes, svg_edges, svg_clusters = svg_graph(svg)
    assert set(svg_nodes) == nodes and svg_edges == edges
    assert svg_clusters == {'cluster_cpu_0', 'cluster_cpu_1'}
    png = graph.create_png()
    assert png.startswith(b'\x89PNG\r\n\x1a\n') and len(png) > 1000


@needs_dot
def test_command_line_svg_png_and_auto_grouping(tmp_path):
    net = parallelized_net(2)
    path = tmp_path / 'parallel.pbtxt'
    path.write_text(str(net))
    prefix = str(tmp_path / 'drawn_')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run([sys.executable, '-m', 'doppio.net_drawer', '--input', str(path),
                             '--output_prefix', prefix, '--format', 'svg,png'],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    stem = tmp_path / ('drawn_' + net.name)
    svg = ElementTree.parse(str(stem) + '.svg').getroot()
    assert svg.tag == SVG + 'svg'
    png = (tmp_path / ('drawn_' + net.name + '.png')).read_bytes()
    assert png.startswith(b'\x89PNG\r\n\x1a\n') and len(png) > 1000
    assert not (tmp_path / ('drawn_' + net.name + '.pdf')).exists()
    # Several devices: grouped without being asked; --group_by_device=no
    # draws it flat.
    _, _, clusters = graphviz_json((tmp_path / ('drawn_' + net.name + '.dot')).read_text())
    assert set(clusters) == {'cpu_0', 'cpu_1'}
    result = subprocess.run([sys.executable, '-m', 'doppio.net_drawer', '--input', str(path),
                             '--output_prefix', prefix + 'flat_', '--format', 'svg',
                             '--group_by_device=no'],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    _, _, clusters = graphviz_json(
        (tmp_path / ('drawn_flat_' + net.name + '.dot')).read_text())
    assert clusters == {}
    result = subprocess.run([sys.executable, '-m', 'doppio.net_drawer', '--input', str(path),
                             '--format', 'gif'], capture_output=True, text=True, env=env,
                            timeout=120)
    assert result.returncode == 2 and '--format' in result.stderr


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))

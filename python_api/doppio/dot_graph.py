"""DOT graphs with the parts of pydot's interface that Caffe2 scripts use
(Graph as pydot.Dot, Node, Edge, and Cluster subgraphs), written as DOT text
here and rendered by graphviz's `dot` program. doppio.net_drawer builds its
drawings with these; Doppio does not depend on pydot.
"""

import collections
import subprocess


def _escape(text):
    """`text` as the body of a DOT quoted string: quotes and backslashes are
    escaped (so escString sequences like \\N never trigger), a newline becomes
    a line break, other control characters are shown as \\xNN."""
    text = str(text)
    out = []
    for char in text:
        if char == '\\':
            out.append('\\\\')
        elif char == '"':
            out.append('\\"')
        elif char == '\n':
            out.append('\\n')
        elif ord(char) < 32 or ord(char) == 127:
            out.append('\\\\x%02x' % ord(char))
        else:
            out.append(char)
    return ''.join(out)


def _quote(text):
    return '"' + _escape(text) + '"'


def _attr_list(attrs):
    if not attrs:
        return ''
    return ' [' + ', '.join('{}={}'.format(key, _quote(value))
                            for key, value in attrs.items()) + ']'


class Node(object):
    """A graph node: its name (the DOT node id) and attributes."""

    def __init__(self, name, **attrs):
        self._name = str(name)
        self._attrs = collections.OrderedDict(attrs)

    def get_name(self):
        return self._name

    def get(self, key):
        return self._attrs.get(key)

    def set(self, key, value):
        self._attrs[key] = value

    def get_attributes(self):
        return dict(self._attrs)

    def to_string(self):
        return _quote(self._name) + _attr_list(self._attrs) + ';'


def _node_name(node_or_name):
    return node_or_name.get_name() if isinstance(node_or_name, Node) else str(node_or_name)


class Edge(object):
    """A directed edge between two nodes (Node objects or node names)."""

    def __init__(self, src, dst, **attrs):
        self._src = _node_name(src)
        self._dst = _node_name(dst)
        self._attrs = collections.OrderedDict(attrs)

    def get_source(self):
        return self._src

    def get_destination(self):
        return self._dst

    def get_attributes(self):
        return dict(self._attrs)

    def to_string(self):
        return '{} -> {}{};'.format(_quote(self._src), _quote(self._dst),
                                    _attr_list(self._attrs))


class Cluster(object):
    """A DOT `subgraph cluster_*`: its nodes are drawn inside one box."""

    def __init__(self, name, **attrs):
        self._name = str(name)
        self._attrs = collections.OrderedDict(attrs)
        self._nodes = collections.OrderedDict()

    def get_name(self):
        return self._name

    def add_node(self, node):
        self._nodes.setdefault(node.get_name(), node)

    def get_nodes(self):
        return list(self._nodes.values())

    def to_string(self, indent='  '):
        lines = [indent + 'subgraph ' + _quote('cluster_' + self._name) + ' {']
        for key, value in self._attrs.items():
            lines.append(indent + '  {}={};'.format(key, _quote(value)))
        lines.extend(indent + '  ' + node.to_string() for node in self._nodes.values())
        lines.append(indent + '}')
        return '\n'.join(lines)


class Graph(object):
    """A directed graph with pydot.Dot's interface for the parts Caffe2
    scripts use. Rendering runs graphviz's `prog` (default `dot`)."""

    def __init__(self, graph_name='G', **attrs):
        self._name = str(graph_name)
        self._attrs = collections.OrderedDict(attrs)
        self._nodes = collections.OrderedDict()
        self._edges = []
        self._clusters = collections.OrderedDict()

    def get_name(self):
        return self._name

    def set(self, key, value):
        self._attrs[key] = value

    def add_node(self, node):
        """Adds `node`; a node of the same name added again is the same node
        (DOT merges them too)."""
        self._nodes.setdefault(node.get_name(), node)

    def add_edge(self, edge):
        self._edges.append(edge)

    def add_subgraph(self, cluster):
        self._clusters.setdefault(cluster.get_name(), cluster)

    def get_nodes(self):
        return list(self._nodes.values())

    def get_node(self, name):
        node = self._nodes.get(str(name))
        return [node] if node is not None else []

    def get_edges(self):
        return list(self._edges)

    def get_subgraphs(self):
        return list(self._clusters.values())

    def to_string(self):
        in_cluster = set()
        for cluster in self._clusters.values():
            in_cluster.update(node.get_name() for node in cluster.get_nodes())
        lines = ['digraph ' + _quote(self._name) + ' {']
        lines.extend('  {}={};'.format(key, _quote(value)) for key, value in self._attrs.items())
        lines.extend(cluster.to_string() for cluster in self._clusters.values())
        lines.extend('  ' + node.to_string() for name, node in self._nodes.items()
                     if name not in in_cluster)
        lines.extend('  ' + edge.to_string() for edge in self._edges)
        lines.append('}')
        return '\n'.join(lines) + '\n'

    def __str__(self):
        return self.to_string()

    def create(self, prog='dot', format='png'):
        """The drawing as bytes in graphviz output `format`; 'raw' is the DOT
        text itself. Raises RuntimeError when graphviz is missing or fails."""
        if format == 'raw':
            return self.to_string().encode('utf-8')
        try:
            result = subprocess.run([prog, '-T' + format], input=self.to_string().encode('utf-8'),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except FileNotFoundError:
            raise RuntimeError(
                "net_drawer: cannot render graph {!r} as {}: graphviz's '{}' program is not on "
                "PATH (install graphviz, or use to_string() / write(path, format='raw') for the "
                "DOT text)".format(self._name, format, prog)) from None
        if result.returncode != 0:
            raise RuntimeError("net_drawer: '{} -T{}' failed on graph {!r} (exit code {}): {}".format(
                prog, format, self._name, result.returncode,
                result.stderr.decode('utf-8', 'replace').strip()))
        return result.stdout

    def write(self, path, prog='dot', format='raw'):
        data = self.create(prog=prog, format=format)
        with open(path, 'wb') as out:
            out.write(data)
        return True

    def create_png(self, prog='dot'):
        return self.create(prog, 'png')

    def create_svg(self, prog='dot'):
        return self.create(prog, 'svg')

    def create_pdf(self, prog='dot'):
        return self.create(prog, 'pdf')

    def create_dot(self, prog='dot'):
        return self.create(prog, 'dot')

    def write_png(self, path, prog='dot'):
        return self.write(path, prog, 'png')

    def write_svg(self, path, prog='dot'):
        return self.write(path, prog, 'svg')

    def write_pdf(self, path, prog='dot'):
        return self.write(path, prog, 'pdf')

    def write_dot(self, path, prog='dot'):
        return self.write(path, prog, 'dot')

    def write_raw(self, path):
        return self.write(path, format='raw')

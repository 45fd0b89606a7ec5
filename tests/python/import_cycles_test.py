"""The doppio package has no import cycle: every `import` and `from ...
import` of one of its modules by another, at module level or inside a
function, is an edge, and the graph must be acyclic. A cycle is what made
modules import each other inside functions and re-export at the bottom."""
import ast
import os
import unittest

import doppio

PACKAGE_DIR = os.path.dirname(os.path.abspath(doppio.__file__))


def modules(package_dir):
    """{dotted module name: path} of every .py file of the package."""
    found = {}
    for root, _, files in os.walk(package_dir):
        for name in files:
            if not name.endswith('.py'):
                continue
            path = os.path.join(root, name)
            parts = ['doppio'] + os.path.relpath(path, package_dir)[:-3].split(os.sep)
            if parts[-1] == '__init__':
                parts.pop()
            found['.'.join(parts)] = path
    return found


def imported(module, path, known):
    """The package modules `module` imports anywhere in its source."""
    is_package = path.endswith('__init__.py')
    package = module if is_package else module.rsplit('.', 1)[0]
    targets = set()
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                parts = package.split('.')[:len(package.split('.')) - (node.level - 1)]
                base = '.'.join(parts + ([base] if base else []))
            for alias in node.names:
                # `from doppio import core` names a module; `from doppio.core
                # import Net` names the module it comes from.
                child = base + '.' + alias.name
                targets.add(child if child in known else base)
    return {t for t in targets if t in known and t != module}


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


class ImportCyclesTest(unittest.TestCase):

    def test_the_checker_finds_a_cycle(self):
        graph = {'a': {'b'}, 'b': {'c'}, 'c': {'a'}, 'd': {'a'}}
        self.assertEqual(cycles(graph), [['a', 'b', 'c']])
        self.assertEqual(cycles({'a': {'b'}, 'b': set()}), [])

    def test_the_checker_reads_function_level_and_relative_imports(self):
        known = {'doppio', 'doppio.core', 'doppio.plan', 'doppio.onnx',
                 'doppio.onnx.backend'}
        import tempfile
        with tempfile.TemporaryDirectory() as scratch:
            path = os.path.join(scratch, 'backend.py')
            with open(path, 'w') as f:
                f.write('def f():\n    from doppio import core\n'
                        'from .. import plan\nfrom doppio.core import Net\n')
            self.assertEqual(imported('doppio.onnx.backend', path, known),
                             {'doppio.core', 'doppio.plan'})

    def test_the_doppio_package_has_none(self):
        known = modules(PACKAGE_DIR)
        self.assertIn('doppio.core', known)
        self.assertIn('doppio.workspace', known)
        graph = {module: imported(module, path, known) for module, path in known.items()}
        self.assertGreater(sum(len(targets) for targets in graph.values()), 20)
        self.assertEqual(cycles(graph), [], 'modules that import each other')


if __name__ == '__main__':
    unittest.main()

"""Where tools/python's doppio and caffe2 packages come from.

This py_binary exists for its runfiles tree: Bazel merges the package's
sources, the generated doppio_pb2.py and the built _C.so there into one
importable directory, which tools/python puts on PYTHONPATH. Run on its own
(tools/python tools/python_env.py) it reports what that directory provides.
"""
import os

import caffe2.python.core
import doppio
from doppio import core, workspace


def main():
    assert caffe2.python.core is core
    print('doppio  ', os.path.dirname(doppio.__file__))
    print('_C      ', workspace.C.__file__)
    print('ops     ', len(workspace.RegisteredOperators()), 'registered')


if __name__ == '__main__':
    main()

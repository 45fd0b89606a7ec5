"""caffe2.python.test_util: the base TestCase of Caffe2-style unit tests.

Each test starts and ends with an empty workspace; the class starts with
no engine preferences, so an op test exercises the default kernels."""
import collections.abc
import unittest

import numpy as np

from doppio import core, workspace


def rand_array(*dims):
    """A float32 array of the given dims, uniform in [-0.5, 0.5) (a 0-d array
    for no dims)."""
    return np.array(np.random.rand(*dims) - 0.5).astype(np.float32)


class _BlobHandle(object):
    """Caffe2's Blob object: a named blob of the current workspace."""

    def __init__(self, name):
        self._name = name

    def feed(self, value, device_option=None):
        return workspace.FeedBlob(self._name, value, device_option)

    def fetch(self):
        return workspace.FetchBlob(self._name)

    def is_tensor(self):
        return isinstance(workspace.FetchBlob(self._name), np.ndarray)


class _NetHandle(object):
    """Caffe2's Net object: a net created in the current workspace."""

    def __init__(self, name):
        self.name = name

    def run(self):
        return workspace.RunNet(self.name)


class _Blobs(collections.abc.Mapping):
    def __getitem__(self, name):
        if not workspace.HasBlob(name):
            raise KeyError(name)
        return _BlobHandle(str(name))

    def __iter__(self):
        return iter(workspace.Blobs())

    def __len__(self):
        return len(workspace.Blobs())


class _CurrentWorkspace(object):
    """What Caffe2 tests reach through `self.ws` (Caffe2's Workspace object):
    blobs (Blob objects with fetch/feed), nets and runs, of the workspace
    that is current when they are used (the test's, fresh per test)."""

    @property
    def blobs(self):
        return _Blobs()

    @property
    def nets(self):
        return {name: _NetHandle(name) for name in workspace.Nets()}

    def create_blob(self, name):
        workspace.CreateBlob(name)
        return _BlobHandle(str(name))

    def create_net(self, net, overwrite=False):
        workspace.CreateNet(net, overwrite)
        return _NetHandle(workspace.StringifyNetName(net))

    def run(self, obj):
        """Runs an OperatorDef, a Net/NetDef (once) or a Plan/PlanDef."""
        from doppio.proto import doppio_pb2
        if isinstance(obj, _NetHandle):
            return obj.run()
        if isinstance(obj, doppio_pb2.OperatorDef):
            return workspace.RunOperatorOnce(obj)
        if isinstance(obj, (doppio_pb2.PlanDef, core.Plan)):
            return workspace.RunPlan(obj)
        return workspace.RunNetOnce(obj)


class TestCase(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        workspace.GlobalInit(['caffe2', '--caffe2_log_level=0'])
        core.SetEnginePref({}, {})

    def setUp(self):
        self.ws = _CurrentWorkspace()
        workspace.ResetWorkspace()

    def tearDown(self):
        workspace.ResetWorkspace()

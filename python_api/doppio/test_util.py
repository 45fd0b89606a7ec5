"""caffe2.python.test_util: the base TestCase of Caffe2-style unit tests.

Each test starts and ends with an empty workspace; the class starts with
no engine preferences, so an op test exercises the default kernels."""
import unittest

import numpy as np

from doppio import core, workspace


def rand_array(*dims):
    """A float32 array of the given dims, uniform in [-0.5, 0.5) (a 0-d array
    for no dims)."""
    return np.array(np.random.rand(*dims) - 0.5).astype(np.float32)


class _CurrentWorkspace(object):
    """What Caffe2 tests reach through `self.ws` (Caffe2's Workspace object
    for the current workspace): blobs, nets and runs of the workspace that is
    current when they are used."""

    @property
    def blobs(self):
        return workspace.blobs

    def create_blob(self, name):
        workspace.CreateBlob(name)
        return _BlobHandle(name)

    def create_net(self, net, overwrite=False):
        workspace.CreateNet(net, overwrite)
        return workspace.StringifyNetName(net)

    def run(self, obj):
        """Runs an OperatorDef, a Net/NetDef (once) or a Plan/PlanDef."""
        from doppio.proto import doppio_pb2
        if isinstance(obj, doppio_pb2.OperatorDef):
            return workspace.RunOperatorOnce(obj)
        if isinstance(obj, (doppio_pb2.PlanDef, core.Plan)):
            return workspace.RunPlan(obj)
        return workspace.RunNetOnce(obj)


class _BlobHandle(object):
    def __init__(self, name):
        self._name = name

    def feed(self, value, device_option=None):
        return workspace.FeedBlob(self._name, value, device_option)

    def fetch(self):
        return workspace.FetchBlob(self._name)


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

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


class TestCase(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        workspace.GlobalInit(['caffe2', '--caffe2_log_level=0'])
        core.SetEnginePref({}, {})

    def setUp(self):
        # A separate workspace object, as in Caffe2; the module functions
        # keep acting on the current workspace.
        self.ws = workspace.C.Workspace()
        workspace.ResetWorkspace()

    def tearDown(self):
        workspace.ResetWorkspace()

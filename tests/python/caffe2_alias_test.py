"""The caffe2 alias package: a script written for Caffe2, imports unchanged,
runs on Doppio, and its modules are doppio's own (not copies)."""
import importlib
import sys

import numpy as np
import pytest

# Caffe2-style imports, exactly as legacy scripts spell them.
from caffe2.proto import caffe2_pb2
from caffe2.python import core, scope, workspace

import doppio.core
import doppio.scope
import doppio.workspace
from doppio.proto import doppio_pb2


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def test_alias_modules_are_the_doppio_modules():
    assert core is doppio.core
    assert workspace is doppio.workspace
    assert scope is doppio.scope
    assert sys.modules['caffe2.python.core'] is doppio.core
    assert workspace.C is doppio.workspace.C


def test_caffe2_pb2_messages_are_doppio_messages():
    assert caffe2_pb2.NetDef is doppio_pb2.NetDef
    assert caffe2_pb2.OperatorDef is doppio_pb2.OperatorDef
    assert caffe2_pb2.TensorProto is doppio_pb2.TensorProto
    assert caffe2_pb2.CPU == 0
    net = core.Net('typed')
    net.Relu('x', 'y')
    assert isinstance(net.Proto(), caffe2_pb2.NetDef)


def test_blob_references_and_scopes_are_shared_across_names():
    ref = core.BlobReference('w')
    assert isinstance(ref, doppio.core.BlobReference)
    # One scope stack, whichever name a script enters it by.
    with core.NameScope('tower'):
        assert doppio.scope.CurrentNameScope() == 'tower/'
        assert str(doppio.core.ScopedBlobReference('w')) == 'tower/w'
    with doppio.scope.DeviceScope(core.DeviceOption(caffe2_pb2.CPU)):
        assert scope.CurrentDeviceScope().device_type == caffe2_pb2.CPU
    assert scope.CurrentNameScope() == ''
    assert scope.CurrentDeviceScope() is None


def test_caffe2_style_script_builds_runs_and_fetches():
    rng = np.random.RandomState(4)
    x = rng.randn(5, 3).astype(np.float32)
    w = rng.randn(4, 3).astype(np.float32)
    b = rng.randn(4).astype(np.float32)
    cpu = core.DeviceOption(caffe2_pb2.CPU, 0)
    workspace.FeedBlob('x', x, device_option=cpu)
    workspace.FeedBlob('w', w)
    workspace.FeedBlob('b', b)

    net = core.Net('legacy_script')
    hidden = net.FC(['x', 'w', 'b'], 'hidden')
    activated = hidden.Relu([], 'activated')
    net.Scale(activated, 'scaled', scale=0.5)
    net.AddExternalOutput('scaled')
    workspace.RunNetOnce(net)

    want = 0.5 * np.maximum(x @ w.T + b, 0.0)
    np.testing.assert_allclose(workspace.FetchBlob('scaled'), want,
                               rtol=1e-5, atol=1e-6)

    # The same net as a named, persistent net, run repeatedly by name.
    workspace.FeedBlob('x', 2 * x)
    workspace.CreateNet(net)
    workspace.RunNet(net.Name(), num_iter=2)
    np.testing.assert_allclose(workspace.FetchBlob('scaled'),
                               0.5 * np.maximum(2 * x @ w.T + b, 0.0),
                               rtol=1e-5, atol=1e-6)
    assert set(workspace.Blobs()) >= {'x', 'w', 'b', 'hidden', 'activated', 'scaled'}


def test_runtime_errors_reach_caffe2_scripts_as_exceptions():
    with pytest.raises(RuntimeError, match='nope'):
        workspace.FetchBlob('nope')


@pytest.mark.parametrize('name', ['model_helper', 'brew'])
def test_later_modules_forward_to_doppio(name):
    """caffe2.python.model_helper / brew are doppio's once those exist; until
    then importing them fails the way importing doppio's would."""
    try:
        target = importlib.import_module('doppio.' + name)
    except ModuleNotFoundError as missing:
        assert missing.name == 'doppio.' + name
        with pytest.raises(ModuleNotFoundError, match='doppio.' + name):
            importlib.import_module('caffe2.python.' + name)
        return
    assert importlib.import_module('caffe2.python.' + name) is target


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))

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


CAFFE2_MODULES = [
    # (Caffe2's name, the Doppio module it is)
    ('caffe2.python.model_helper', 'doppio.model_helper'),
    ('caffe2.python.brew', 'doppio.brew'),
    ('caffe2.python.experiment_util', 'doppio.experiment_util'),
    ('caffe2.python.timeout_guard', 'doppio.timeout_guard'),
    ('caffe2.python.dyndep', 'doppio.dyndep'),
    ('caffe2.python.data_parallel_model_utils', 'doppio.data_parallel_model_utils'),
    ('caffe2.python.predictor_constants', 'doppio.predictor_constants'),
    ('caffe2.python.models.resnet', 'doppio.models.resnet'),
    ('caffe2.python.modeling.initializers', 'doppio.modeling.initializers'),
    ('caffe2.python.modeling.parameter_info', 'doppio.modeling.parameter_info'),
    ('caffe2.python.predictor.predictor_exporter', 'doppio.predictor.predictor_exporter'),
    ('caffe2.python.predictor.predictor_py_utils', 'doppio.predictor.predictor_py_utils'),
    ('caffe2.python.onnx.backend', 'doppio.onnx.backend'),
    ('caffe2.proto.caffe2_pb2', 'doppio.proto.caffe2_pb2'),
    ('caffe2.proto.metanet_pb2', 'doppio.proto.metanet_pb2'),
    ('caffe2.proto.predictor_consts_pb2', 'doppio.proto.predictor_consts_pb2'),
]


@pytest.mark.parametrize('caffe2_name,doppio_name', CAFFE2_MODULES)
def test_caffe2_modules_are_the_doppio_modules(caffe2_name, doppio_name):
    module = importlib.import_module(caffe2_name)
    assert module is importlib.import_module(doppio_name)
    assert sys.modules[caffe2_name] is module
    # `from caffe2.python.models import resnet` binds the same object.
    parent, _, child = caffe2_name.rpartition('.')
    assert getattr(importlib.import_module(parent), child) is module


def test_submodule_classes_exist_once():
    from caffe2.python.modeling.initializers import Initializer
    from caffe2.python.model_helper import Initializer as helper_initializer
    from caffe2.proto import metanet_pb2
    import doppio.modeling.initializers
    assert Initializer is doppio.modeling.initializers.Initializer is helper_initializer
    assert metanet_pb2.MetaNetDef is doppio_pb2.MetaNetDef
    # A MetaNetDef's nets are the NetDefs every other module builds.
    meta = metanet_pb2.MetaNetDef()
    meta.nets.add(key='k', value=core.Net('n').Proto())
    assert isinstance(meta.nets[0].value, caffe2_pb2.NetDef)


@pytest.mark.parametrize('name', ['caffe2.python.no_such_module',
                                  'caffe2.python.models.no_such_model',
                                  'caffe2.proto.no_such_pb2'])
def test_missing_caffe2_modules_fail_like_python_imports(name):
    with pytest.raises(ModuleNotFoundError) as raised:
        importlib.import_module(name)
    assert raised.value.name == name


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))

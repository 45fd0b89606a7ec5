"""doppio.scope: name and device scopes nest, restore, stay per thread, and
reach the ops and blob names core builds."""
import sys
import threading

import pytest

from doppio import core, scope
from doppio.proto import doppio_pb2


def test_defaults_outside_every_scope():
    assert scope.CurrentNameScope() == ""
    assert scope.CurrentDeviceScope() is None


def test_name_scopes_nest_and_restore():
    with scope.NameScope("a"):
        assert scope.CurrentNameScope() == "a/"
        with scope.NameScope("b/"):
            # A trailing separator is not doubled.
            assert scope.CurrentNameScope() == "a/b/"
            with scope.NameScope("top", reset=True):
                assert scope.CurrentNameScope() == "top/"
            assert scope.CurrentNameScope() == "a/b/"
            with scope.NameScope(""):
                assert scope.CurrentNameScope() == "a/b/"
        assert scope.CurrentNameScope() == "a/"
    assert scope.CurrentNameScope() == ""


def test_name_scope_restores_after_an_exception():
    with pytest.raises(KeyError):
        with scope.NameScope("gpu_0"):
            raise KeyError("boom")
    assert scope.CurrentNameScope() == ""


def test_device_scopes_nest_copy_and_restore():
    gpu1 = doppio_pb2.DeviceOption(device_type=doppio_pb2.CUDA, cuda_gpu_id=1)
    cpu = doppio_pb2.DeviceOption(device_type=doppio_pb2.CPU)
    with scope.DeviceScope(gpu1):
        current = scope.CurrentDeviceScope()
        assert current.device_type == doppio_pb2.CUDA and current.cuda_gpu_id == 1
        # The scope holds a copy: later edits to the argument do not leak in.
        gpu1.cuda_gpu_id = 7
        assert scope.CurrentDeviceScope().cuda_gpu_id == 1
        with scope.DeviceScope(cpu):
            assert scope.CurrentDeviceScope().device_type == doppio_pb2.CPU
        assert scope.CurrentDeviceScope().device_type == doppio_pb2.CUDA
    assert scope.CurrentDeviceScope() is None


def test_device_scope_node_name():
    with scope.DeviceScope(doppio_pb2.DeviceOption(), node_name="node3"):
        assert scope.CurrentDeviceScope().node_name == "node3"
    with scope.DeviceScope(None, node_name="only_node"):
        assert scope.CurrentDeviceScope().node_name == "only_node"
    assert scope.CurrentDeviceScope() is None


def test_device_scope_rejects_bad_arguments():
    with pytest.raises(TypeError, match="DeviceOption"):
        with scope.DeviceScope("gpu"):
            pass
    with pytest.raises(ValueError, match="node_name"):
        with scope.DeviceScope(None):
            pass
    assert scope.CurrentDeviceScope() is None


def test_scopes_are_per_thread():
    seen = {}

    def other_thread():
        seen["name"] = scope.CurrentNameScope()
        seen["device"] = scope.CurrentDeviceScope()
        with scope.NameScope("worker"):
            seen["inner"] = scope.CurrentNameScope()

    with scope.NameScope("main"), scope.DeviceScope(core.DeviceOption(doppio_pb2.CUDA, 2)):
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
        assert scope.CurrentNameScope() == "main/"
    assert seen == {"name": "", "device": None, "inner": "worker/"}


def test_scopes_apply_to_created_ops_and_blob_names():
    device = core.DeviceOption(doppio_pb2.CUDA, 3)
    with scope.NameScope("gpu_3"), scope.DeviceScope(device):
        op = core.CreateOperator("Relu", "x", "y")
        net = core.Net("scoped_net")
        out = net.Relu("in", "out")
        assert core.ScopedName("w") == "gpu_3/w"
        assert str(core.ScopedBlobReference("w")) == "gpu_3/w"
    assert list(op.input) == ["gpu_3/x"] and list(op.output) == ["gpu_3/y"]
    assert op.device_option == device
    assert str(out) == "gpu_3/out"
    assert list(net.Proto().op[0].input) == ["gpu_3/in"]
    assert net.Proto().op[0].device_option.cuda_gpu_id == 3
    # Outside the scopes nothing is applied.
    plain = core.CreateOperator("Relu", "x", "y")
    assert list(plain.input) == ["x"] and not plain.HasField("device_option")


def test_device_scope_is_exported_by_core():
    assert core.DeviceScope is scope.DeviceScope
    assert core.NameScope is scope.NameScope


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))

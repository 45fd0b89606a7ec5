"""Caffe2's transform registry from Python (caffe2.python.workspace's
ApplyTransform and ApplyTransformIfFaster, re-exported by doppio.workspace):
the C++ transforms of transforms/registry.h applied to a NetDef."""
import time

from doppio import _C as C
from doppio.proto import doppio_pb2 as caffe2_pb2


def ApplyTransform(transform_key, net):
    """The NetDef `net` rewritten by the registered transform
    `transform_key` (transforms/registry.h lists them)."""
    net = net.Proto() if hasattr(net, 'Proto') else net
    out = caffe2_pb2.NetDef()
    out.ParseFromString(C.apply_transform(str(transform_key), net.SerializeToString()))
    return out


def _average_run_seconds(net, warmup_runs, main_runs):
    C.create_net(net.SerializeToString(), True)
    C.run_net(net.name, warmup_runs)
    start = time.perf_counter()
    C.run_net(net.name, main_runs)
    return (time.perf_counter() - start) / max(main_runs, 1)


def ApplyTransformIfFaster(transform_key, net, init_net, warmup_runs=5, main_runs=10,
                           improvement_threshold=1.0):
    """The transformed net if, timed in a scratch workspace set up by
    `init_net`, it runs faster than `net` by more than improvement_threshold
    (a ratio of average times); else `net` unchanged, as in Caffe2."""
    net = net.Proto() if hasattr(net, 'Proto') else net
    init_net = init_net.Proto() if hasattr(init_net, 'Proto') else init_net
    transformed = ApplyTransform(transform_key, net)
    # One scratch workspace, emptied after each use: calls leave nothing
    # behind (workspace.WorkspaceGuard's switch, without importing workspace,
    # which imports this module).
    previous = C.current_workspace()
    C.switch_workspace('_transform_timing', True)
    try:
        C.run_net_once(init_net.SerializeToString())
        before = _average_run_seconds(net, warmup_runs, main_runs)
        after = _average_run_seconds(transformed, warmup_runs, main_runs)
    finally:
        C.reset_workspace()
        C.switch_workspace(previous, False)
    return transformed if before > after * improvement_threshold else net

"""Caffe2's engine preferences from Python (core.SetEnginePref and friends):
the dicts cross to C++ (core/engine_pref.h owns the rule, tested there) and
bad keys are refused by name."""
import pytest

from caffe2.proto import caffe2_pb2
from caffe2.python import core, workspace


@pytest.fixture(autouse=True)
def clear_preferences():
    yield
    core.SetEnginePref({}, {})


def preferred(op_type, device_type=caffe2_pb2.CPU):
    return workspace.C.preferred_engines(op_type, device_type)


def test_preferences_reach_the_runtime_and_clear():
    core.SetEnginePref({caffe2_pb2.CPU: {'Conv': ['DNNL']}}, {caffe2_pb2.CPU: ['IM2COL']})
    assert preferred('Conv') == ['DNNL', 'IM2COL']
    assert preferred('FC') == ['IM2COL']
    core.SetOpEnginePref('FC', {caffe2_pb2.CPU: ['DNNL']})
    assert preferred('FC') == ['DNNL', 'IM2COL']
    core.SetGlobalEnginePref({})
    core.SetPerOpEnginePref({caffe2_pb2.CPU: {'Conv': ['IM2COL']}})
    assert preferred('Conv') == ['IM2COL'] and preferred('FC') == []
    core.SetEnginePref({}, {})
    assert preferred('Conv') == []


def test_an_op_still_runs_with_a_preferred_engine():
    import numpy as np
    core.SetGlobalEnginePref({caffe2_pb2.CPU: ['NO_SUCH_ENGINE', 'DNNL']})
    workspace.FeedBlob('x', np.ones((2, 3), np.float32))
    workspace.FeedBlob('w', np.ones((4, 3), np.float32))
    workspace.FeedBlob('b', np.zeros(4, np.float32))
    workspace.RunOperatorOnce(core.CreateOperator('FC', ['x', 'w', 'b'], ['y']))
    np.testing.assert_array_equal(workspace.FetchBlob('y'), np.full((2, 4), 3, np.float32))


def test_bad_preferences_are_refused_by_name():
    with pytest.raises(RuntimeError, match="'NoSuchOp'"):
        core.SetOpEnginePref('NoSuchOp', {caffe2_pb2.CPU: ['DNNL']})
    with pytest.raises(ValueError, match='device type 7'):
        core.SetGlobalEnginePref({7: ['DNNL']})


if __name__ == '__main__':
    import sys
    sys.exit(pytest.main([__file__, '-q', '-rs', '-p', 'no:cacheprovider']))

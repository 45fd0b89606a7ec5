"""core.Plan / core.ExecutionStep build Caffe2's PlanDef, and
workspace.RunPlan runs it: nets the right number of times, until a
should_stop_blob, and failures as RuntimeError with the runtime's message."""
import sys
import threading
import time

import numpy as np
import pytest

from doppio import core, workspace
from doppio.proto import doppio_pb2


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def counting_nets():
    """init: acc = 0, one = 1. body: acc += 1 and the Iter counter ticks."""
    init = core.Net('init')
    init.ConstantFill([], 'acc', shape=[1], value=0.0)
    init.ConstantFill([], 'one', shape=[1], value=1.0)
    body = core.Net('body')
    body.Sum(['acc', 'one'], 'acc')
    body.Iter([], 'body_iter')
    return init, body


def test_two_nets_num_iter_and_substeps():
    init, body = counting_nets()
    outer = core.ExecutionStep('outer')
    outer.AddSubstep(core.ExecutionStep('init_step', init))
    outer.AddSubstep(core.ExecutionStep('loop', body, num_iter=7))
    outer.SetIter(3)
    plan = core.Plan('train')
    plan.AddStep(outer)
    proto = plan.Proto()
    assert [net.name for net in proto.network] == [init.Name(), body.Name()]
    assert [s.name for s in proto.execution_step[0].substep] == ['init_step', 'loop']
    assert proto.execution_step[0].num_iter == 3
    assert workspace.RunPlan(plan) is True
    # init resets acc at each of the 3 outer iterations; Iter never resets.
    np.testing.assert_array_equal(workspace.FetchBlob('acc'), [7.0])
    np.testing.assert_array_equal(workspace.FetchBlob('body_iter'), [21])


def test_run_plan_takes_step_proto_and_bytes():
    init, body = counting_nets()
    step = core.execution_step('both', [init, body], num_iter=4)
    assert list(step.Proto().network) == [init.Name(), body.Name()]
    workspace.RunPlan(step)  # a lone step becomes a plan of its own
    np.testing.assert_array_equal(workspace.FetchBlob('acc'), [1.0])
    np.testing.assert_array_equal(workspace.FetchBlob('body_iter'), [4])
    plan = doppio_pb2.PlanDef(name='by_proto')
    plan.network.add().CopyFrom(body.Proto())
    plan.execution_step.add(name='s', network=[body.Name()], num_iter=5)
    workspace.RunPlan(plan)
    workspace.RunPlan(plan.SerializeToString())
    np.testing.assert_array_equal(workspace.FetchBlob('acc'), [11.0])
    np.testing.assert_array_equal(workspace.FetchBlob('body_iter'), [14])


def test_should_stop_blob():
    workspace.FeedBlob('limit', np.array([5], np.int64))
    tick = core.Net('tick')
    tick.Iter([], 'ticks')
    tick.GE(['ticks', 'limit'], 'stop')
    step = core.execution_step('until_five', tick,
                               should_stop_blob=core.BlobReference('stop'))
    assert step.Proto().should_stop_blob == 'stop'
    workspace.RunPlan(core.Plan(step))
    np.testing.assert_array_equal(workspace.FetchBlob('ticks'), [5])
    with pytest.raises(TypeError, match='BlobReference'):
        core.ExecutionStep('s').SetShouldStopBlob('stop')


def test_concurrent_substeps_each_run():
    nets = []
    for i in range(3):
        net = core.Net('worker_%d' % i)
        net.Iter([], 'count_%d' % i)
        nets.append(net)
    top = core.ExecutionStep('top')
    for i, net in enumerate(nets):
        top.AddSubstep(core.ExecutionStep('w%d' % i, net, num_iter=i + 2))
    top.SetConcurrentSubsteps(True)
    workspace.RunPlan(core.Plan(top))
    for i in range(3):
        np.testing.assert_array_equal(workspace.FetchBlob('count_%d' % i), [i + 2])


def test_step_builder_rules():
    init, body = counting_nets()
    with_nets = core.ExecutionStep('with_nets', init)
    with pytest.raises(ValueError, match='both'):
        with_nets.AddSubstep(core.ExecutionStep('sub', body))
    with_substeps = core.ExecutionStep('with_substeps')
    with_substeps.AddSubstep(core.ExecutionStep('sub', body))
    with pytest.raises(ValueError, match='both'):
        with_substeps.AddNet(init)
    plan = core.Plan('p')
    plan.AddStep(with_nets)
    with pytest.raises(RuntimeError, match='already added'):
        with_nets.SetIter(2)
    # An empty step adds nothing, as in Caffe2.
    plan.AddStep(core.ExecutionStep('empty'))
    assert len(plan.Proto().execution_step) == 1
    with pytest.raises(ValueError):
        core.Plan(42)
    from caffe2.python import core as caffe2_core
    assert caffe2_core.Plan is core.Plan and caffe2_core.execution_step is core.execution_step


def test_unknown_net_in_plan():
    plan = doppio_pb2.PlanDef(name='broken_plan')
    plan.execution_step.add(name='lost', network=['no_such_net'])
    with pytest.raises(RuntimeError, match="no_such_net"):
        workspace.RunPlan(plan)


def test_failing_op_in_plan():
    workspace.FeedBlob('a', np.ones(2, np.float32))
    workspace.FeedBlob('b', np.ones(3, np.float32))
    bad = core.Net('bad_net')
    bad.Add(['a', 'b'], 'c')
    with pytest.raises(RuntimeError) as error:
        workspace.RunPlan(core.execution_step('fails', bad))
    message = str(error.value)
    assert 'Add' in message and 'bad_net' in message
    # The interpreter and the workspace are still usable.
    workspace.FeedBlob('after', np.arange(3))
    np.testing.assert_array_equal(workspace.FetchBlob('after'), [0, 1, 2])


def test_bad_plan_values():
    with pytest.raises(RuntimeError, match='PlanDef'):
        workspace.RunPlan(b'\xff\xff not a plan')
    with pytest.raises(TypeError, match='RunPlan'):
        workspace.RunPlan(3)
    assert not workspace.HasBlob('c')


def test_run_plan_releases_the_gil():
    workspace.FeedBlob('x', np.ones(16, np.float32))
    net = core.Net('busy')
    net.Relu('x', 'y')
    plan = core.Plan(core.execution_step('busy_step', net, num_iter=1000000))
    done = []
    runner = threading.Thread(target=lambda: done.append(workspace.RunPlan(plan)))
    spins = 0
    start = time.time()
    runner.start()
    while runner.is_alive():
        spins += 1
    runner.join()
    elapsed = time.time() - start
    assert done == [True]
    # Holding the GIL for the whole run would leave this thread a handful of
    # turns at most; a released GIL lets it spin throughout.
    if elapsed > 0.1:
        assert spins > 1000, (spins, elapsed)


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))

"""net_builder, task and session (Caffe2's single-process surface): loops,
conditionals, stops and task setup steps run by the plan executor must give
what a plain Python loop computes; LocalSession runs TaskGroups and fetches
their outputs; Plan.create_from_proto and Net.ClonePartial rebuild what
they are given."""
import sys

import numpy as np
import pytest

from doppio import core, workspace
from doppio.net_builder import NetBuilder, ops
from doppio.session import LocalSession
from doppio.task import Node, Task, TaskGroup, WorkspaceType, final_output


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def run(builder):
    plan = core.Plan('test_plan')
    plan.AddStep(core.to_execution_step(builder))
    workspace.RunPlan(plan)


def fetch(blob):
    return workspace.FetchBlob(str(blob))


@pytest.mark.parametrize('start', [0, 1, 4, 7])
def test_loop_with_stop_if_and_nested_if(start):
    with NetBuilder() as nb:
        c = ops.Const(start)
        d = ops.Const(0)
        with ops.loop():
            ops.stop_if(ops.LE([c, ops.Const(0)]))
            ops.Add([c, ops.Const(-1)], [c])
            with ops.If(ops.GE([c, ops.Const(3)])):
                ops.Add([d, ops.Const(10)], [d])
    run(nb)
    c_ref, d_ref = start, 0
    while c_ref > 0:
        c_ref -= 1
        if c_ref >= 3:
            d_ref += 10
    assert fetch(c) == c_ref and fetch(d) == d_ref


@pytest.mark.parametrize('iters', [0, 1, 5])
def test_counted_loop_and_its_counter(iters):
    with NetBuilder() as nb:
        total = ops.Const(0)
        with ops.loop(iters) as loop:
            ops.Add([total, loop.iter()], [total])
    run(nb)
    assert fetch(total) == sum(range(iters))


@pytest.mark.parametrize('value', [-2, 0, 5])
def test_if_elif_else_picks_one_branch(value):
    with NetBuilder() as nb:
        x = ops.Const(value)
        branch = ops.Const(0)
        with ops.If(ops.LT([x, ops.Const(0)])) as cond:
            ops.Copy(ops.Const(1), branch)
        with cond.Elif(ops.EQ([x, ops.Const(0)])):
            ops.Copy(ops.Const(2), branch)
        with cond.Else():
            ops.Copy(ops.Const(3), branch)
    run(nb)
    assert fetch(branch) == (1 if value < 0 else 2 if value == 0 else 3)


def test_stop_guard_reports_whether_it_stopped():
    with NetBuilder() as nb:
        reached = ops.Const(0)
        with ops.stop_guard() as stopped:
            ops.stop_if(ops.Const(True))
            ops.Copy(ops.Const(1), reached)
        with ops.stop_guard() as ran:
            ops.stop_if(ops.Const(False))
            ops.Copy(ops.Const(2), reached)
    run(nb)
    assert fetch(stopped.has_stopped()) and not fetch(ran.has_stopped())
    assert fetch(reached) == 2


def test_nets_are_named_under_their_builder():
    with NetBuilder(name='outer'):
        with ops.loop(1):
            named = ops.net(name='inner')
            ops.stop()
    assert named.Name().startswith('outer/inner')


@pytest.mark.parametrize('switch', [-0.5, 0.5])
def test_control_op_if_else_builds_one_net(switch):
    with NetBuilder(_use_control_ops=True) as nb:
        x = ops.Const(np.array([1.0, 2.0], dtype=np.float32), 'x')
        y = ops.Copy(x, 'y')
        with ops.IfNet(ops.LT([ops.Const(np.float32(switch)), ops.Const(np.float32(0))])):
            tmp = ops.Scale(x, 'branch_tmp', scale=3.0)
            ops.Add([tmp, x], y)
        with ops.Else():
            ops.Sub([x, ops.Const(np.array([5.0, 5.0], dtype=np.float32))], y)
    nets = nb.get()
    assert len(nets) == 1
    workspace.RunNetOnce(nets[0])
    xs = np.array([1.0, 2.0], dtype=np.float32)
    expected = xs * 3 + xs if switch < 0 else xs - 5
    np.testing.assert_array_equal(fetch('y'), expected)
    # The branch's own blob stays in its scope.
    assert not workspace.HasBlob('branch_tmp')


def test_control_op_while_with_condition_counts_like_python():
    with NetBuilder(_use_control_ops=True) as nb:
        ops.Copy(ops.Const(0), 'i')
        ops.Copy(ops.Const(1), 'one')
        ops.Copy(ops.Const(5), 'n')
        ops.Copy(ops.Const(1), 'product')
        with ops.WhileNet():
            with ops.Condition():
                ops.Add(['i', 'one'], 'i')
                ops.LE(['i', 'n'])
            ops.Mul(['product', 'i'], 'product')
    workspace.RunNetOnce(nb.get()[0])
    expected, i = 1, 1
    while i <= 5:
        expected *= i
        i += 1
    assert fetch('product') == expected
    assert fetch('i') == i


def test_control_op_builders_refuse_stop_blobs():
    with pytest.raises(AssertionError, match='Stop blobs'):
        NetBuilder(_use_control_ops=True, _stop_blob_required=True)
    with NetBuilder(_use_control_ops=True):
        with pytest.raises(AssertionError, match='Stop blobs'):
            ops.stop()


@pytest.mark.parametrize('instances,iters', [(1, 3), (2, 100), (3, 7)])
def test_task_setup_steps_and_instances(instances, iters):
    with TaskGroup() as group:
        with Node('trainer'), Task(name='count', num_instances=instances):
            with ops.task_init():
                shared = ops.Const(0)
            with ops.task_instance_init():
                local = ops.Const(0)
            with ops.loop(iters):
                ops.Add([local, ops.Const(1)], [local])
            with ops.task_instance_exit():
                ops.Add([shared, local], [shared])
            with ops.task_exit():
                ops.Mul([shared, shared], [shared])
            out = final_output(shared)
    LocalSession().run(group)
    assert out.fetch() == (instances * iters) ** 2


def test_task_group_runs_every_node_and_returns_outputs():
    with TaskGroup(WorkspaceType.GLOBAL) as group:
        outputs = []
        for node, value in [('a', 3), ('b', 4)]:
            with Node(node), Task():
                outputs.append(final_output(ops.Mul([ops.Const(value), ops.Const(value)])))
    session = LocalSession()
    session.run(group)
    assert [o.fetch() for o in outputs] == [9, 16]


def test_session_runs_nets_and_steps():
    net = core.Net('add')
    net.Add([net.Const(np.array([1.0], np.float32)), net.Const(np.array([2.0], np.float32))],
            'three')
    LocalSession().run(net)
    np.testing.assert_array_equal(workspace.FetchBlob('three'), [3.0])


def test_plan_round_trips_through_its_proto():
    with NetBuilder() as nb:
        total = ops.Const(0)
        with ops.loop(4) as loop:
            ops.Add([total, loop.iter()], [total])
    plan = core.Plan('original')
    plan.AddStep(core.to_execution_step(nb))
    copy = core.Plan.create_from_proto(plan.Proto())
    assert [s.Name() for s in copy.Steps()] == [s.Name() for s in plan.Steps()]
    assert len(copy.Nets()) == len(plan.Nets())
    workspace.RunPlan(copy)
    assert fetch(total) == 0 + 1 + 2 + 3


def test_clone_partial_keeps_only_the_path():
    net = core.Net('original')
    a, b = net.AddExternalInput('a', 'b')
    c = net.Add([a, b], 'c')
    net.Mul([a, b], 'unrelated')
    d = net.Mul([c, c], 'd')
    part, (d2,) = net.ClonePartial('part', {c: 'given_c'}, [d])
    assert [op.type for op in part.Proto().op] == ['Mul']
    assert list(part.Proto().external_input) == ['given_c'] and str(d2) == 'part/d'
    workspace.FeedBlob('given_c', np.array([3.0], np.float32))
    workspace.RunNetOnce(part)
    np.testing.assert_array_equal(workspace.FetchBlob('part/d'), [9.0])
    # An input the needed ops would themselves compute is refused.
    relu = net.Relu(c, 'relu_c')
    e = net.Mul([c, a], 'e')
    with pytest.raises(AssertionError):
        net.ClonePartial('bad', [a, b, relu], [e])


def test_op_names_from_their_creation_sites():
    net = core.Net('named')
    net.Relu('x', 'y')
    line = sys._getframe().f_lineno - 1
    net.PopulateProtoWithFileName()
    assert net.Proto().op[0].name == '{}:{}:{}'.format(
        __file__, line, 'test_op_names_from_their_creation_sites')


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))

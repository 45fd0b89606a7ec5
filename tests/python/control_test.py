"""doppio.control (caffe2.python.control): every loop and conditional, run
by the plan executor, must do what the same Python control flow does; and
the counter ops it uses (operators/counter_ops.h) against a Python model."""
import sys

import numpy as np
import pytest

from doppio import control, core, workspace


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def run(step):
    plan = core.Plan('control_plan')
    plan.AddStep(step)
    workspace.RunPlan(plan)


def value(name):
    return workspace.FetchBlob(name).item()


def init(**ints):
    for name, v in ints.items():
        workspace.FeedBlob(name, np.array(v, dtype=np.int64))


def add_net(blob, amount, name='add'):
    """A net adding `amount` to the int64 scalar `blob`."""
    net = core.Net(name)
    net.Add([blob, net.Const(np.int64(amount))], blob)
    return net


def less_than_net(blob, limit, name='less_than'):
    """A condition net: its last external output is blob < limit."""
    net = core.Net(name)
    cond = net.LT([blob, net.Const(np.int64(limit))])
    net.AddExternalOutput(cond)
    return net


def bool_blob(name, flag):
    workspace.FeedBlob(name, np.array(flag))
    return core.BlobReference(name)


@pytest.mark.parametrize('n', [0, 1, 5])
def test_for_runs_the_body_n_times(n):
    init(x=0)
    run(control.For('for', add_net('x', 2), n))
    assert value('x') == 2 * n


@pytest.mark.parametrize('start', [0, 3, 9])
def test_while_and_until_check_before_the_body(start):
    init(x=start, y=start)
    run(control.While('while', less_than_net('x', 7), add_net('x', 2)))
    x = start
    while x < 7:
        x += 2
    assert value('x') == x
    cond = less_than_net('y', 7)
    ge = core.Net('ge')
    ge.Proto().op.extend(cond.Proto().op)
    stop = ge.Not(control.GetConditionBlobFromNet(cond))
    ge.AddExternalOutput(stop)
    run(control.Until('until', ge, add_net('y', 2)))
    assert value('y') == x


@pytest.mark.parametrize('start', [0, 9])
def test_do_while_and_do_until_run_the_body_first(start):
    init(x=start, y=start)
    run(control.DoWhile('dowhile', less_than_net('x', 7), add_net('x', 3)))
    x = start + 3
    while x < 7:
        x += 3
    assert value('x') == x
    flag = bool_blob('never', False)
    done = core.Net('done')
    done.Copy(done.Const(True), flag)
    body = add_net('y', 1)
    body.Proto().op.extend(done.Proto().op)
    run(control.DoUntil('dountil', flag, body))
    assert value('y') == start + 1


@pytest.mark.parametrize('flag', [True, False])
def test_if_and_if_not_pick_one_branch(flag):
    init(a=0, b=0, c=0)
    cond = bool_blob('cond', flag)
    run(control.If('if', cond, add_net('a', 1), add_net('b', 1)))
    run(control.IfNot('ifnot', cond, add_net('c', 5)))
    assert (value('a'), value('b'), value('c')) == ((1, 0, 0) if flag else (0, 1, 5))


def test_if_with_a_condition_net_and_steps_as_branches():
    init(x=4, hit=0)
    then_step = control.Do('then', add_net('hit', 10, 'then_a'), add_net('hit', 1, 'then_b'))
    run(control.If('if_net', less_than_net('x', 5), then_step))
    assert value('hit') == 11


def test_switch_runs_each_true_case_once():
    init(a=0, b=0, c=0)
    cases = [(bool_blob('t1', True), add_net('a', 1)), (bool_blob('f', False), add_net('b', 1)),
             (bool_blob('t2', True), add_net('c', 1))]
    run(control.Switch('switch', *cases))
    assert (value('a'), value('b'), value('c')) == (1, 0, 1)
    run(control.SwitchNot('switch_not', *cases))
    assert (value('a'), value('b'), value('c')) == (1, 1, 1)


def test_do_parallel_runs_every_step():
    init(a=0, b=0)
    steps = [control.Do('left', add_net('a', 1)), control.Do('right', add_net('b', 2))]
    run(control.DoParallel('parallel', steps))
    assert (value('a'), value('b')) == (1, 2)


@pytest.mark.parametrize('relation,expect', [('And', False), ('Or', True)])
def test_merged_and_combined_conditions(relation, expect):
    init(x=3)
    nets = [less_than_net('x', 5, 'lt5'), less_than_net('x', 2, 'lt2')]
    merged = control.MergeConditionNets('merged', nets, relation)
    workspace.RunNetOnce(merged)
    assert workspace.FetchBlob(str(control.GetConditionBlobFromNet(merged))) == expect
    combined = control.CombineConditions('combined', nets, relation)
    workspace.RunNetOnce(combined)  # the condition blobs exist from the merged run
    assert workspace.FetchBlob(str(control.GetConditionBlobFromNet(combined))) == expect


def test_bool_and_not_nets():
    workspace.RunNetOnce(control.BoolNet(('p', True), ('q', False)))
    assert workspace.FetchBlob('p') and not workspace.FetchBlob('q')
    not_net, out = control.NotNet(core.BlobReference('p'))
    workspace.RunNetOnce(not_net)
    assert not workspace.FetchBlob(str(out))


def test_counter_ops_follow_a_python_counter():
    net = core.Net('counter_ops')
    counter = net.CreateCounter([], init_count=2)
    outputs = []
    for k in range(4):
        outputs.append(net.CountDown([counter], 'down%d' % k))
    net.CheckCounterDone([counter], 'done')
    net.CountUp([counter], 'before_up')
    net.RetrieveCount([counter], 'count')
    net.ResetCounter([counter], 'previous', init_count=7)
    net.RetrieveCount([counter], 'after_reset')
    workspace.RunNetOnce(net)
    count, downs = 2, []
    for _ in range(4):
        downs.append(count <= 0)
        count -= 1
    assert [bool(workspace.FetchBlob(str(o))) for o in outputs] == downs
    assert bool(workspace.FetchBlob('done')) == (count <= 0)
    assert value('before_up') == count
    count += 1
    assert (value('count'), value('previous'), value('after_reset')) == (count, count, 7)


def test_counter_ops_refuse_bad_input():
    workspace.FeedBlob('not_a_counter', np.zeros(1, np.float32))
    with pytest.raises(RuntimeError, match="'not_a_counter' holds .*not a counter"):
        workspace.RunOperatorOnce(core.CreateOperator('CountDown', ['not_a_counter'], ['d']))
    with pytest.raises(RuntimeError, match='init_count must not be negative'):
        workspace.RunOperatorOnce(core.CreateOperator('CreateCounter', [], ['c'], init_count=-1))


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-rs', '-p', 'no:cacheprovider']))

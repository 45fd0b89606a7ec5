"""Control-flow ops (operators/control_ops.h): If, While, Do with scoped
workspaces, CreateScope / HasScope, and the builders over them
(brew.cond / brew.loop, control_ops_util). Every result is checked against
the same computation in plain Python / numpy; every malformed op must fail
with an error naming what is wrong."""
import os
import subprocess
import sys

import numpy as np
import pytest
from google.protobuf import text_format

from doppio import brew, core, workspace
from doppio.control_ops_util import add_while_op
from doppio.model_helper import ModelHelper
from doppio.net_builder import NetBuilder, ops

from control_flow_nets import adder_net, all_ops, squaring_loop


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def feed(**blobs):
    for name, value in blobs.items():
        workspace.FeedBlob(name, np.asarray(value))


def fetch(name):
    return workspace.FetchBlob(str(name))


def test_do_binds_outer_blobs_under_inner_names():
    x, y = np.array([1., 2.], np.float32), np.array([3., 4.], np.float32)
    feed(outer_X=x, outer_Y=y)
    net = core.Net('do_net')
    net.CreateScope([], 'W')
    net.Do(['outer_X', 'outer_Y', 'W'], ['outer_Z', 'W'], net=adder_net().Proto(),
           inner_blobs=['X', 'Y', 'Z'], outer_blobs_idx=[0, 1, 2])
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(fetch('outer_Z'), (x + y) * y)
    # The subnet's own blobs stay in its workspace.
    for name in ('T', 'X', 'Z'):
        assert not workspace.HasBlob(name)


def test_do_reuse_workspace_sees_the_previous_runs_blobs():
    init = core.Net('init_subnet')
    init.ConstantFill([], 'P', shape=[2], value=1.5)
    use = core.Net('use_subnet')
    use.Scale('P', 'Q', scale=2.0)
    net = core.Net('reuse')
    net.CreateScope([], 'W')
    net.Do('W', 'W', net=init.Proto(), inner_blobs=[], outer_blobs_idx=[])
    net.Do('W', ['out', 'W'], net=use.Proto(), inner_blobs=['Q'], outer_blobs_idx=[0],
           reuse_workspace=True)
    net.HasScope('W', 'has_scope')
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(fetch('out'), [3.0, 3.0])
    assert not workspace.HasBlob('P')
    assert fetch('has_scope')


@pytest.mark.parametrize('kwargs,words', [
    (dict(inner_blobs=['X', 'Y'], outer_blobs_idx=[0, 1]), 'must be bound'),
    (dict(inner_blobs=['X', 'Y', 'Z'], outer_blobs_idx=[0, 1, 7]), 'outer_blobs_idx[2] = 7'),
    (dict(inner_blobs=['X', 'X', 'Z'], outer_blobs_idx=[0, 1, 2]), "'X' is bound twice"),
    (dict(inner_blobs=['X', 'Y'], outer_blobs_idx=[0]), 'one entry per binding'),
])
def test_do_refuses_bad_bindings(kwargs, words):
    feed(outer_X=[1.0], outer_Y=[2.0])
    net = core.Net('bad_do')
    net.CreateScope([], 'W')
    net.Do(['outer_X', 'outer_Y', 'W'], ['outer_Z', 'W'], net=adder_net().Proto(), **kwargs)
    with pytest.raises(RuntimeError) as error:
        workspace.RunNetOnce(net)
    assert words in str(error.value) and 'Do' in str(error.value)


def test_do_refuses_a_stack_blob_holding_a_tensor():
    feed(outer_X=[1.0], outer_Y=[2.0], W=[0.0])
    net = core.Net('tensor_stack')
    net.Do(['outer_X', 'outer_Y', 'W'], ['outer_Z', 'W'], net=adder_net().Proto(),
           inner_blobs=['X', 'Y', 'Z'], outer_blobs_idx=[0, 1, 2])
    with pytest.raises(RuntimeError, match="'W' holds .*not a workspace stack"):
        workspace.RunNetOnce(net)
    np.testing.assert_array_equal(fetch('W'), [0.0])  # the tensor is kept


@pytest.mark.parametrize('condition', [True, False])
def test_if_runs_the_chosen_branch(condition):
    feed(cond=np.array(condition), a=np.float32([2.0]), b=np.float32([5.0]))
    then_net, else_net = core.Net('then'), core.Net('else')
    then_net.Add(['a', 'b'], 'out')
    else_net.Sub(['a', 'b'], 'out')
    net = core.Net('if_net')
    net.If(['cond', 'a', 'b'], ['out'], then_net=then_net.Proto(), else_net=else_net.Proto())
    workspace.RunNetOnce(net)
    assert fetch('out')[0] == (2.0 + 5.0 if condition else 2.0 - 5.0)


def test_if_without_else_and_with_a_text_format_branch():
    feed(cond=np.array(False), a=np.float32([2.0]), out=np.float32([-1.0]))
    then_net = core.Net('then')
    then_net.Scale('a', 'out', scale=4.0)
    net = core.Net('if_text')
    net.If(['cond', 'a'], ['out'], then_net=text_format.MessageToString(then_net.Proto()))
    workspace.RunNetOnce(net)
    assert fetch('out')[0] == -1.0  # nothing ran
    feed(cond=np.array(True))
    workspace.RunNetOnce(net)
    assert fetch('out')[0] == 8.0


def test_if_and_while_name_a_bad_condition_and_a_missing_net():
    feed(cond=np.float32([1.0]), a=np.float32([2.0]))
    body = core.Net('body')
    body.Scale('a', 'a', scale=2.0)
    net = core.Net('bad_if')
    net.If(['cond', 'a'], ['a'], then_net=body.Proto())
    with pytest.raises(RuntimeError, match="condition 'cond' must be one bool"):
        workspace.RunNetOnce(net)
    missing = core.Net('no_loop_net')
    missing.While(['cond'], [])
    with pytest.raises(RuntimeError, match="'loop_net'.*missing"):
        workspace.RunNetOnce(missing)


def test_while_repeats_until_the_condition_net_says_stop():
    feed(i=np.int32([0]), n=np.int32([6]), one=np.int32([1]), total=np.int64([0]),
         cond=np.array(True))
    cond_net = core.Net('cond_net')
    cond_net.LT(['i', 'n'], 'cond_vec')
    cond_net.Reshape(['cond_vec'], ['cond', 'old_shape'], shape=[])
    loop_net = core.Net('loop_net')
    loop_net.Add(['i', 'one'], 'i')
    loop_net.Cast('i', 'i64', to=core.DataType.INT64)
    loop_net.Mul(['i64', 'i64'], 'square')
    loop_net.Add(['total', 'square'], 'total')
    net = core.Net('while_net')
    net.While(['cond', 'i', 'n', 'one', 'total'], ['i', 'total'], loop_net=loop_net.Proto(),
              cond_net=cond_net.Proto())
    workspace.RunNetOnce(net)
    assert fetch('total')[0] == sum(k * k for k in range(1, 7))
    assert fetch('i')[0] == 6


@pytest.mark.parametrize('condition', [True, False])
def test_brew_cond_keeps_branch_blobs_local(condition):
    feed(cond=np.array(condition), then_value=np.float32([1.5]), else_value=np.float32([-2.0]),
         output_blob=np.float32([0.0]))
    then_model, else_model = ModelHelper(name='then_model'), ModelHelper(name='else_model')
    then_model.net.Scale('then_value', 'then_local', scale=2.0)
    then_model.net.Copy('then_local', 'output_blob')
    else_model.net.Copy('else_value', 'output_blob')
    model = ModelHelper(name='cond_model')
    brew.cond(model, 'cond', ['then_value', 'else_value', 'output_blob'], then_model,
              else_model)
    workspace.RunNetOnce(model.param_init_net)
    workspace.RunNetOnce(model.net)
    assert fetch('output_blob')[0] == (3.0 if condition else -2.0)
    assert not workspace.HasBlob('then_local')


def test_brew_loop_with_a_condition_model():
    feed(cond=np.array(True), step=np.int64([3]), limit=np.int64([4]), one=np.int64([1]),
         counter=np.int64([0]), acc=np.int64([0]))
    loop_model, cond_model = ModelHelper(name='loop_model'), ModelHelper(name='cond_model')
    loop_model.net.Add(['acc', 'step'], 'acc')
    cond_model.net.Add(['counter', 'one'], 'counter')
    below = cond_model.net.LE(['counter', 'limit'])
    cond_model.net.Reshape([below], ['cond', 'unused_shape'], shape=[])
    model = ModelHelper(name='loop')
    brew.loop(model, 'cond', ['cond', 'step', 'limit', 'one', 'counter', 'acc'], loop_model,
              cond_model)
    workspace.RunNetOnce(model.net)
    acc, counter = 0, 0
    while True:
        counter += 1
        if not counter <= 4:
            break
        acc += 3
    assert fetch('acc')[0] == acc
    assert fetch('counter')[0] == counter


def test_nested_if_in_while_from_net_builder():
    with NetBuilder(_use_control_ops=True) as nb:
        ops.Copy(ops.Const(0), 'i')
        ops.Copy(ops.Const(1), 'one')
        ops.Copy(ops.Const(2), 'two')
        ops.Copy(ops.Const(2.0), 'x')
        ops.Copy(ops.Const(3.0), 'y')
        ops.Copy(ops.Const(2.0), 'z')
        with ops.WhileNet():
            with ops.Condition():
                ops.Add(['i', 'one'], 'i')
                ops.LE(['i', 'two'])
            ops.Pow('x', 'x', exponent=2.0)
            with ops.IfNet(ops.LT(['i', 'two'])):
                ops.Pow('y', 'y', exponent=2.0)
            with ops.Else():
                ops.Pow('z', 'z', exponent=3.0)
    workspace.RunNetOnce(nb.get()[0])
    x, y, z, i = 2.0, 3.0, 2.0, 0
    while True:
        i += 1
        if not i <= 2:
            break
        x = x ** 2
        if i < 2:
            y = y ** 2
        else:
            z = z ** 3
    assert (fetch('x'), fetch('y'), fetch('z'), fetch('i')) == (x, y, z, i)


_BUILD_IF_NET = """
from doppio import core
from doppio.control_ops_util import add_if_op
net, then_net = core.Net('det'), core.Net('then')
for k in range(8):
    then_net.Copy('in%d' % k, 'out%d' % k)
add_if_op(net, 'cond', ['in%d' % k for k in range(8)] + ['out%d' % k for k in range(8)],
          then_net)
print(net.Proto())
"""


def test_scoped_nets_are_the_same_in_every_process():
    """Blob sets iterate in a per-process order (string hashing); the nets
    built from them must not."""
    protos = set()
    for seed in ('1', '2', '3'):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        protos.add(subprocess.run([sys.executable, '-c', _BUILD_IF_NET], env=env, check=True,
                                  stdout=subprocess.PIPE).stdout)
    assert len(protos) == 1


def test_add_while_op_checks_the_condition_net_writes_the_condition():
    body, cond_net = core.Net('body'), core.Net('cond')
    body.Copy('a', 'b')
    cond_net.Copy('a', 'not_the_condition')
    with pytest.raises(AssertionError, match='does not write into condition blob'):
        add_while_op(core.Net('w'), 'cond', ['a', 'b', 'cond', 'not_the_condition'], body,
                     cond_net)


def run_gradients(net, loss, fetch_names):
    """Runs `net` with its gradient ops for `loss`; the fetched blobs."""
    net.AddGradientOperators([loss])
    workspace.RunNetOnce(net)
    return [fetch(name) for name in fetch_names]


def test_do_gradient_matches_the_analytic_one():
    x, y = np.array([0.5, -1.5], np.float32), np.array([2.0, 3.0], np.float32)
    feed(outer_X=x, outer_Y=y)
    net = core.Net('do_grad')
    net.CreateScope([], 'W')
    # Z = (X + Y) * Y inside the scope
    net.Do(['outer_X', 'outer_Y', 'W'], ['outer_Z', 'W'], net=adder_net().Proto(),
           inner_blobs=['X', 'Y', 'Z'], outer_blobs_idx=[0, 1, 2])
    net.SumElements('outer_Z', 'loss')
    dx, dy = run_gradients(net, 'loss', ['outer_X_grad', 'outer_Y_grad'])
    np.testing.assert_allclose(dx, y, rtol=1e-6)
    np.testing.assert_allclose(dy, x + 2 * y, rtol=1e-6)


@pytest.mark.parametrize('condition', [True, False])
def test_if_gradient_follows_the_branch_that_ran(condition):
    rng = np.random.RandomState(int(condition))
    x = rng.randn(3, 2).astype(np.float32)
    w_a, w_b = rng.randn(1, 2).astype(np.float32), rng.randn(1, 2).astype(np.float32)
    with NetBuilder(_use_control_ops=True, initial_scope=['x', 'w_a', 'w_b', 'b']) as nb:
        y = ops.ConstantFill([], 'y', shape=[3, 1], value=0.0)
        with ops.IfNet(ops.Const(condition)):
            ops.FC(['x', 'w_a', 'b'], y)
        with ops.Else():
            ops.FC(['x', 'w_b', 'b'], 'fc_b')
            ops.Mul(['fc_b', 'fc_b'], y)
        loss = ops.SumElements(y, 'loss')
    feed(x=x, w_a=w_a, w_b=w_b, b=np.float32([0.25]))
    net = nb.get()[0]
    g_a, g_b, g_x = run_gradients(net, loss, ['w_a_grad', 'w_b_grad', 'x_grad'])
    if condition:
        np.testing.assert_allclose(g_a, x.sum(axis=0, keepdims=True), rtol=1e-5)
        np.testing.assert_allclose(g_x, np.repeat(w_a, 3, axis=0), rtol=1e-5)
        np.testing.assert_array_equal(g_b, np.zeros_like(w_b))  # the else branch's zeros
    else:
        fc = x @ w_b.T + 0.25
        np.testing.assert_allclose(g_b, (2 * fc * x).sum(axis=0, keepdims=True), rtol=1e-5)
        np.testing.assert_allclose(g_x, 2 * fc @ w_b, rtol=1e-5)
        np.testing.assert_array_equal(g_a, np.zeros_like(w_a))


@pytest.mark.parametrize('rounds', [1, 2, 3])
def test_while_gradient_undoes_each_iteration(rounds):
    x, y, dx = run_gradients(squaring_loop(rounds), 's', ['x', 'y', 'x_grad'])
    # Forward in plain Python; d s / d x0 by central differences in float64.
    def forward(x0):
        x, y = x0, 0.5
        for _ in range(rounds):
            x = x ** 2
            y = y + x
        return x, y
    fx, fy = forward(1.5)
    assert np.isclose(x, fx) and np.isclose(y, fy)
    eps = 1e-6
    numeric = (sum(forward(1.5 + eps)) - sum(forward(1.5 - eps))) / (2 * eps)
    np.testing.assert_allclose(dx, numeric, rtol=1e-4)


def test_gradient_subnets_run_on_the_forward_ops_device():
    """The copies, zero fills and HasScope ops the Do/If/While gradient makers
    add to subnets run where the forward op runs (a CPU Copy inside a GPU
    net would be handed GPU tensors). Building needs no GPU."""
    from doppio.proto import doppio_pb2
    with core.DeviceScope(core.DeviceOption(doppio_pb2.CUDA, 0)):
        net = core.Net('do_grad_on_gpu')
        net.CreateScope([], 'W')
        net.Do(['outer_X', 'outer_Y', 'W'], ['outer_Z', 'W'], net=adder_net().Proto(),
               inner_blobs=['X', 'Y', 'Z'], outer_blobs_idx=[0, 1, 2])
        net.SumElements('outer_Z', 'loss')
        net.AddGradientOperators(['loss'])
        with NetBuilder(_use_control_ops=True, initial_scope=['x', 'w']) as nb:
            ops.Copy(ops.Const(1.5), 'y')
            with ops.IfNet(ops.Const(True)):
                ops.Mul(['x', 'w'], 'y')
            with ops.WhileNet():
                with ops.Condition():
                    ops.LE(['y', 'x'])
                ops.Pow('y', 'y', exponent=2.0)
            ops.Add(['y', 'w'], 's')
        control = nb.get()[0]
        control.AddGradientOperators(['s'])
    for proto in (net.Proto(), control.Proto()):
        off = [(name, op.type) for name, op in all_ops(proto)
               if op.device_option.device_type != doppio_pb2.CUDA]
        assert off == []


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-rs', '-p', 'no:cacheprovider']))

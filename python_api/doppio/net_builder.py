"""Caffe2's net_builder: build nets, loops and conditional blocks by scope.

    from caffe2.python.net_builder import NetBuilder, ops
    with NetBuilder() as nb:
        c = ops.Const(5)
        with ops.loop():
            ops.stop_if(ops.LE([c, ops.Const(0)]))
            ops.Add([c, ops.Const(-1)], [c])
    step = core.to_execution_step(nb)

Inside a NetBuilder, `ops.<Op>(...)` adds the op to the builder's current
net; a nested builder (loop, If, stop_guard, task_init ...) ends that net,
so what follows goes to a new one. A builder becomes an ExecutionStep whose
children (nets and nested steps) run in order, and whose stop blob (set by
ops.stop / ops.stop_if) ends it early.

The control-op forms (NetBuilder(_use_control_ops=True), ops.IfNet,
ops.Else, ops.WhileNet, ops.Condition) build one net instead, with If and
While ops whose branches run in scopes of their own (control_ops_util): a
builder's lexical scope, the blobs its parents and earlier children made,
is what its branches can see and write.
"""
from doppio import context
from doppio import core
from doppio import core_net
from doppio.control_ops_util import add_if_op, add_while_op

# The attribute keys under which nets register setup and report steps
# (task.Task and task.TaskGroup name them too).
TASK_SETUP = 'task_setup'
TASK_INSTANCE_SETUP = 'task_instance_setup'
REPORT_STEP = 'report_step'
LOCAL_SETUP = 'local_setup'

# The task module, which sits above this one, registers its classes here
# when it loads (ops.task_group and ops.local_reporter make TaskGroups).
_task_classes = {}


def RegisterTaskClasses(**classes):
    _task_classes.update(classes)


def _task_class(name):
    if name not in _task_classes:
        raise RuntimeError('this needs caffe2.python.task (doppio.task); import it first')
    return _task_classes[name]


_STOP_WITH_CONTROL_OPS = 'Stop blobs are not used with control operators'


@context.define_context()
class NetBuilder(object):
    """A scope collecting nets and nested builders, in order.

    name: the builder's name (prefixed with its parent's);
    initial_scope: blobs readable and writable in it."""

    def __init__(self, name=None, initial_scope=None, _stop_blob_required=False,
                 _stop_blob=None, _fullname=None, _use_control_ops=False):
        if _use_control_ops and (_stop_blob_required or _stop_blob):
            raise AssertionError(_STOP_WITH_CONTROL_OPS)
        parent = NetBuilder.current(required=False)
        if _fullname and name:
            raise AssertionError('Cannot set both _fullname and name')
        self.name = _fullname or '/'.join(
            n for n in (parent.name if parent else None, name) if n)
        self._frozen = False
        self._current_net = None
        self._children = []
        if parent:
            parent._update_lexical_scope()
        self._init_lexical_scope = set(parent._lexical_scope) if parent else set()
        self._init_lexical_scope |= set(str(b) for b in (initial_scope or []))
        self._lexical_scope = set(self._init_lexical_scope)
        self._stop_blob = _stop_blob
        self._stop_blob_required = _stop_blob_required
        self._use_control_ops = _use_control_ops

    def stop_blob(self):
        """The builder's stop blob (a bool), made on first use: set in the
        current net, and initialized to False by a net of its own at the
        start when the current net is not the first child."""
        if self._use_control_ops:
            raise AssertionError(_STOP_WITH_CONTROL_OPS)
        if self._stop_blob is None:
            net = self.current_net()
            self._stop_blob = core.BlobReference(net.NextName('stop_blob'), net=net)
            net.Const(False, blob_out=self._stop_blob)
            if self._current_net is not self._children[0]:
                init = core.Net('stop_blob_init')
                init.Const(False, blob_out=self._stop_blob)
                self._children.insert(0, init)
        return self._stop_blob

    def stop_if(self, blob):
        stop_blob = self.stop_blob()
        ops.Or([stop_blob, blob], [stop_blob])
        # The stop is checked after each child: what follows is a new net.
        self._current_net = None

    def _assert_mutable(self):
        if self._frozen:
            raise AssertionError('This NetBuilder ({}) has been built already.'.format(self.name))

    def _update_lexical_scope(self):
        """The blobs visible here: the initial scope, those the child nets
        use and those of control-op child builders."""
        self._lexical_scope = set(self._init_lexical_scope)
        for child in self._children:
            if isinstance(child, core.Net):
                self._lexical_scope |= child.UsedBlobNames()
            elif isinstance(child, NetBuilder) and child._use_control_ops:
                self._lexical_scope |= child._lexical_scope

    def _reset_children(self):
        self._current_net = None
        self._children = []
        self._lexical_scope = set(self._init_lexical_scope)

    def add(self, child):
        """Appends a net, a nested builder or a TaskGroup; returns it."""
        self._assert_mutable()
        if self._use_control_ops and not (
                isinstance(child, core.Net) or
                (isinstance(child, NetBuilder) and child._use_control_ops)):
            raise AssertionError('Expected Net or NetBuilder with control ops')
        self._current_net = child if isinstance(child, core.Net) else None
        self._children.append(child)
        self._update_lexical_scope()
        return child

    def current_net(self, name=None):
        self._assert_mutable()
        if self._current_net is None or name is not None:
            self.add(core.Net(name))
        return self._current_net

    def freeze(self):
        for child in self._children:
            if hasattr(child, 'freeze'):
                child.freeze()
        self._current_net = None
        self._frozen = True

    def get(self):
        """The children, frozen: nets, builders and task groups."""
        self.freeze()
        return self._children

    def __exit__(self, etype, *args):
        if self._use_control_ops and self._children:
            children = self._children
            self._reset_children()
            merged = NetBuilder.merge_nets(children, self._lexical_scope)
            assert merged, 'Expected a non-empty merge of children'
            self._children = [merged]
        self.freeze()
        if etype is not None:
            return
        if self._stop_blob_required and self._stop_blob is None:
            raise AssertionError('This NetBuilder ({}) requires a stop condition to be set '
                                 'with `stop` or `stop_if`'.format(self.name))

    def __str__(self):
        return self.name or 'Un-named NetBuilder'

    @staticmethod
    def merge_nets(nets_or_builders, outer_blob_names):
        """One net: the nets, and the nets of control-op builders, appended
        in order; its external outputs are only the outer blobs (a blob
        local to a branch is not an output of the whole)."""
        net = None
        for child in nets_or_builders:
            if isinstance(child, NetBuilder):
                assert child._use_control_ops, \
                    'Merging of NetBuilder supported only for control ops'
                nets = child.get()
                assert len(nets) == 1 and isinstance(nets[0], core.Net), \
                    'Invalid control op net builder'
                child = nets[0]
            assert isinstance(child, core.Net)
            if net:
                net.AppendNet(child)
            else:
                net = child
        if net:
            outputs = [o for o in net.Proto().external_output if o in outer_blob_names]
            net.Proto().external_output[:] = outputs
        return net


class Operations(object):
    """`ops`: the operations available inside a NetBuilder."""

    def net(self, net=None, name=None):
        """With `net`, adds it to the active builder; else its current net
        (a new one named `name` when given)."""
        if name is not None and net is not None:
            raise AssertionError('Cannot provide both `net` and `name`.')
        if net is not None:
            NetBuilder.current().add(net)
            return net
        return NetBuilder.current().current_net(name=name)

    def __getattr__(self, op_type):
        if op_type.startswith('__'):
            raise AttributeError(op_type)
        if NetBuilder.current(required=False) is None:
            raise AttributeError('No active NetBuilder.')
        return getattr(self.net(), op_type)

    def task_group(self):
        """A TaskGroup run as the next step of the active builder."""
        builder = NetBuilder.current()
        with _task_class('Cluster')():
            with _task_class('Node')('local'):
                group = _task_class('TaskGroup')()
                builder.add(group)
                return group

    def stop(self):
        """Ends the current execution step here."""
        return self.stop_if(ops.Const(True))

    def stop_if(self, blob):
        """Ends the current execution step here when the scalar bool `blob`
        is true."""
        return NetBuilder.current().stop_if(blob)

    def loop(self, iters=None, name=None):
        """A builder run repeatedly: `iters` times (an int or a blob), or
        until ops.stop / ops.stop_if."""
        return NetBuilder.current().add(_Loop(iters, name=name))

    def stop_guard(self, has_stopped_blob=None, name=None):
        """A builder run once; has_stopped() then tells whether a stop in it
        cut it short."""
        return NetBuilder.current().add(_StopGuard(has_stopped_blob=has_stopped_blob, name=name))

    def If(self, cond, name=None):
        """A builder run once when the scalar bool `cond` is true; .Elif /
        .Else on it add the other branches."""
        return NetBuilder.current().add(_RunIf(cond, name=name))

    def IfNet(self, cond, name=None):
        """A control-op builder: its ops become the then branch of an If op
        on the scalar bool `cond` (ops.Else after it adds the else
        branch)."""
        return NetBuilder.current().add(_RunIfNet(cond, name=name))

    def Else(self, name=None):
        """The else branch of the IfNet just before it."""
        return _RunElseNet(name=name)

    def WhileNet(self, name=None):
        """A control-op builder: a While op whose body is the builder's ops;
        its first child must be ops.Condition()."""
        return NetBuilder.current().add(_RunWhileNet(name=name))

    def Condition(self, name=None):
        """Inside WhileNet, before the body: ops computing the loop
        condition, the last of them writing one bool (not a child of the
        WhileNet: what it makes stays out of the loop's scope)."""
        return _RunWhileCondition(name=name)

    def _setup(self, kind, key, name=None):
        setup = _SetupBuilder(kind, name)
        attribute = {'task': TASK_SETUP, 'instance': TASK_INSTANCE_SETUP,
                     'local': LOCAL_SETUP}[key]
        self.net().add_attribute(attribute, setup)
        return setup

    def task_init(self):
        """Ops run once when the task starts (before every instance)."""
        return self._setup(_SetupBuilder.INIT, 'task')

    def task_exit(self):
        """Ops run once when the task ends (after every instance)."""
        return self._setup(_SetupBuilder.EXIT, 'task')

    def task_instance_init(self):
        """Ops run at the start of each instance of the task."""
        return self._setup(_SetupBuilder.INIT, 'instance')

    def task_instance_exit(self):
        """Ops run at the end of each instance of the task."""
        return self._setup(_SetupBuilder.EXIT, 'instance')

    def local_init(self):
        """Ops run once per node when the TaskGroup starts."""
        return self._setup(_SetupBuilder.INIT, 'local')

    def local_exit(self, name=None):
        """Ops run once per node when the TaskGroup ends."""
        return self._setup(_SetupBuilder.EXIT, 'local', name)

    def task_reporter(self, interval_ms=1000, name=None):
        """Ops run every interval_ms while the task runs, and once after."""
        return _ReporterBuilder(interval_ms, net=self.net(), name=name)

    def local_reporter(self, interval_ms=1000, name=None):
        """Ops run every interval_ms while any task of the group runs."""
        return _ReporterBuilder(interval_ms, name=name)


ops = Operations()


def _current_builder_name():
    builder = NetBuilder.current(required=False)
    return builder.name if builder else ''


core_net.SetNetNamePrefix(_current_builder_name)


class _ReporterBuilder(NetBuilder):
    def __init__(self, interval_ms, net=None, name=None):
        NetBuilder.__init__(self, name)
        self._net = net
        self.interval_ms = interval_ms

    def __exit__(self, etype, *args):
        if etype is None:
            step = core.to_execution_step(self)
            step.RunEveryMillis(self.interval_ms)
            if self._net:
                self._net.add_attribute(REPORT_STEP, step)
            else:
                _task_class('TaskGroup').current().report_step(step,
                                                               interval_ms=self.interval_ms)
        NetBuilder.__exit__(self, etype, *args)


class _SetupBuilder(NetBuilder):
    INIT = 'init'
    EXIT = 'exit'

    def __init__(self, type, name=None):
        NetBuilder.__init__(self, name)
        self.type = type

    def setup(self, net):
        if self.type == _SetupBuilder.INIT:
            return core.to_execution_step(self)
        return None

    def exit(self, net):
        if self.type == _SetupBuilder.EXIT:
            return core.to_execution_step(self)
        return None


class _RunOnce(NetBuilder):
    def __exit__(self, etype, *args):
        # A stop inside ends this block only; stopping again at its end
        # makes the block run once whatever happened.
        if etype is None and self._stop_blob is not None:
            ops.stop()
        NetBuilder.__exit__(self, etype, *args)


class _StopGuard(_RunOnce):
    def __init__(self, has_stopped_blob=None, name=None):
        _RunOnce.__init__(self, name)
        self._stopped = has_stopped_blob
        self._ran = False

    def __enter__(self):
        result = NetBuilder.__enter__(self)
        self._stopped = ops.Const(True, blob_out=self._stopped)
        return result

    def __exit__(self, etype, *args):
        if etype is None:
            self._ran = True
            ops.Const(False, blob_out=self._stopped)
        _RunOnce.__exit__(self, etype, *args)

    def has_stopped(self):
        """A bool blob, true after the block ran iff a stop cut it short."""
        if not self._ran:
            raise AssertionError('Context not used yet.')
        return self._stopped


class _Loop(NetBuilder):
    def __init__(self, iters=None, name=None):
        NetBuilder.__init__(self, name, _stop_blob_required=True)
        self._iter = None
        if iters is not None:
            self._inc = ops.Const(1)
            self._iter = ops.Const(0)
            self._num_iters = (iters if isinstance(iters, core.BlobReference)
                               else ops.Const(iters))
        else:
            self._num_iters = None

    def iter(self):
        """The loop's counter blob (0, 1, ...), for a loop with iters."""
        if self._num_iters is None:
            raise AssertionError('This loop does not have a number of iterations.')
        return self._iter

    def __enter__(self):
        builder = NetBuilder.__enter__(self)
        if self._num_iters is not None:
            ops.stop_if(ops.GE([self._iter, self._num_iters]))
        return builder

    def __exit__(self, etype, *args):
        if etype is None and self._num_iters is not None:
            self.current_net().Add([self._iter, self._inc], [self._iter])
        NetBuilder.__exit__(self, etype, *args)


class _RunIf(_RunOnce):
    def __init__(self, cond_blob=None, name=None, _already_ran=None):
        _RunOnce.__init__(self, name)
        if cond_blob is None and _already_ran is None:
            raise AssertionError('If needs a condition')
        self._is_else = cond_blob is None
        if _already_ran is None:
            self._else_blob = ops.Not(cond_blob)
            self._already_ran = ops.Const(False)
        else:
            self._already_ran = _already_ran
            self._else_blob = _already_ran if cond_blob is None else (
                ops.Or([_already_ran, ops.Not(cond_blob)]))

    def __enter__(self):
        result = NetBuilder.__enter__(self)
        ops.stop_if(self._else_blob)
        ops.Const(True, blob_out=self._already_ran)
        return result

    def Elif(self, cond, name=None):
        if self._is_else:
            raise AssertionError('Elif not allowed after an Else.')
        return NetBuilder.current().add(
            _RunIf(cond, name=name or self.name, _already_ran=self._already_ran))

    def Else(self, name=None):
        if self._is_else:
            raise AssertionError('Else not allowed after an Else.')
        return NetBuilder.current().add(
            _RunIf(name=name or self.name, _already_ran=self._already_ran))


class _RunIfNet(NetBuilder):
    """One net holding an If op (its children form the then branch)."""

    def __init__(self, cond_blob, name=None):
        NetBuilder.__init__(self, name=name, _use_control_ops=True)
        assert cond_blob, 'Conditional blob is not specified for an If net'
        self._cond_blob = cond_blob
        self._then_net = None
        self._else_net = None

    def __exit__(self, etype, *args):
        if etype is None:
            then_nets = self._children
            self._reset_children()
            self._then_net = (NetBuilder.merge_nets(then_nets, self._lexical_scope) or
                              core.Net('empty_then_net'))
            if_net = core.Net(self.name + '/if_net')
            add_if_op(if_net, self._cond_blob, self._lexical_scope, self._then_net)
            self._current_net = if_net
            self._children = [if_net]
        NetBuilder.__exit__(self, etype, *args)


class _RunElseNet(NetBuilder):
    """The else branch: rebuilds the preceding IfNet's net with both
    branches."""

    def __init__(self, name=None):
        NetBuilder.__init__(self, name=name, _use_control_ops=True)
        parent = NetBuilder.current(required=False)
        assert parent and parent._children and isinstance(parent._children[-1], _RunIfNet), \
            'Invalid use of Else builder'
        self._if_builder = parent._children[-1]

    def __exit__(self, etype, *args):
        if etype is None:
            else_nets = self._children
            self._reset_children()
            if_builder = self._if_builder
            if_builder._else_net = NetBuilder.merge_nets(else_nets, self._lexical_scope)
            if if_builder._else_net:
                if_else_net = core.Net(self.name + '/if_else_net')
                add_if_op(if_else_net, if_builder._cond_blob, self._lexical_scope,
                          if_builder._then_net, if_builder._else_net)
                if_builder._current_net = if_else_net
                if_builder._children = [if_else_net]
        NetBuilder.__exit__(self, etype, *args)


class _RunWhileNet(NetBuilder):
    """One net holding a While op; the first child is its condition."""

    def __init__(self, name=None):
        NetBuilder.__init__(self, name=name, _use_control_ops=True)
        self._cond_builder = None

    def __exit__(self, etype, *args):
        if etype is None:
            assert self._cond_builder, 'Condition builder must be specified in While op'
            body = self._children
            self._reset_children()
            body_net = (NetBuilder.merge_nets(body, self._lexical_scope) or
                        core.Net('empty_loop_body_net'))
            while_net = core.Net(self.name + '/while_net')
            add_while_op(while_net, self._cond_builder._cond_blob, self._lexical_scope,
                         body_net, self._cond_builder._cond_net)
            self._current_net = while_net
            self._children = [while_net]
        NetBuilder.__exit__(self, etype, *args)


class _RunWhileCondition(NetBuilder):
    """The loop condition of a WhileNet: its last op writes one bool, the
    condition; nothing else it makes is visible outside."""

    def __init__(self, name=None):
        NetBuilder.__init__(self, name=name, _use_control_ops=True)
        parent = NetBuilder.current(required=False)
        assert parent and isinstance(parent, _RunWhileNet), 'Invalid use of loop condition builder'
        assert not parent._cond_builder, 'Multiple loop condition builders specified'
        assert not parent._children, "Condition definition must be specified before the loop's body"
        parent._cond_builder = self
        self._cond_blob = None
        self._cond_net = None

    def __exit__(self, etype, *args):
        if etype is None:
            children = self._children
            self._reset_children()
            self._cond_net = NetBuilder.merge_nets(children, self._lexical_scope)
            assert self._cond_net and self._cond_net.Proto().op, 'Invalid loop condition specified'
            last_op = self._cond_net.Proto().op[-1]
            assert len(last_op.output) == 1, 'Invalid condition net'
            self._cond_blob = core.BlobReference(name=last_op.output[0], net=None)
            self._current_net = self._cond_net
            self._children = [self._cond_net]
        NetBuilder.__exit__(self, etype, *args)

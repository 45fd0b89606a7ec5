"""Caffe2's task module: Tasks (an execution step and its outputs) grouped
in TaskGroups and placed on Nodes, as single-process programs use them
with session.LocalSession.

    with TaskGroup() as tg:
        with Node('trainer'), Task(name='train', num_instances=2):
            with ops.task_init():
                total = ops.Const(0)
            with ops.loop(10):
                ops.Add([total, ops.Const(1)], [total])
            final_output(total)
    LocalSession().run(tg)

A Task's step is wrapped with the setup steps its nets registered
(ops.task_init / task_exit once per task, task_instance_init / exit once
per instance); num_instances > 1 runs that many instances concurrently,
each in a child workspace. A TaskGroup runs its tasks concurrently, one
combined task per node, between the nodes' local_init and local_exit steps.
Schema records (caffe2.python.schema) are not supported as outputs.
"""
import collections

from doppio import context
from doppio import core
from doppio import net_builder


@context.define_context(allow_default=True)
class Cluster(object):
    """The node names used (made by the first Node when none is active)."""

    def __init__(self):
        self._nodes = []
        self._node_kwargs = {}

    def add_node(self, node):
        if str(node) not in self._nodes:
            self._nodes.append(str(node))
        merged = dict(self._node_kwargs.get(str(node)) or {})
        merged.update(node.kwargs() or {})
        self._node_kwargs[str(node)] = merged

    def nodes(self):
        return self._nodes

    def node_kwargs(self):
        return self._node_kwargs


@context.define_context(allow_default=True)
class Node(object):
    """Tasks created inside run on this node (only its name counts)."""

    def __init__(self, node='local', **kwargs):
        self._name = str(node)
        self._kwargs = kwargs
        Cluster.current().add_node(self)

    def __str__(self):
        return self._name

    def kwargs(self):
        return self._kwargs


class WorkspaceType(object):
    """PRIVATE: each run gets a child workspace, dropped afterwards;
    GLOBAL: tasks run in the session's workspace, kept across runs."""
    PRIVATE = 'private'
    GLOBAL = 'global'


def get_setup_nets(key, steps_or_nets, target):
    """(init, exit) nets and steps from the setup objects registered under
    `key` on the given steps' and nets' attributes, each used once."""
    init_net = core.Net(key + '/init')
    exit_net = core.Net(key + '/exit')
    init_nets, exit_nets, objects = [], [], []
    for step_or_net in steps_or_nets:
        if hasattr(step_or_net, 'get_all_attributes'):
            objects += step_or_net.get_all_attributes(key)
        elif hasattr(step_or_net, 'get_attributes'):
            objects += step_or_net.get_attributes(key)
    for obj in objects:
        if getattr(obj, '_setup_used', False):
            continue
        if hasattr(obj, '_setup_target') and obj._setup_target != target:
            continue
        for method, collected, net in (('setup', init_nets, init_net),
                                       ('exit', exit_nets, exit_net)):
            if not hasattr(obj, method):
                continue
            made = getattr(obj, method)(net)
            if isinstance(made, (list, tuple)):
                collected += made
            elif isinstance(made, (core.Net, core.ExecutionStep)):
                collected.append(made)
            elif made is not None:
                raise TypeError('Unsupported type for setup: {}'.format(type(made).__name__))
            obj._setup_used = True
    if init_net.Proto().op:
        init_nets.insert(0, init_net)
    if exit_net.Proto().op:
        exit_nets.insert(0, exit_net)
    return init_nets, exit_nets


def add_setup_steps(step, init_nets, exit_nets, name):
    if not init_nets and not exit_nets:
        return step
    steps = []
    if init_nets:
        steps.append(core.execution_step('%s:init' % name, init_nets))
    steps.append(step)
    if exit_nets:
        steps.append(core.execution_step('%s:exit' % name, exit_nets))
    return core.execution_step(name, steps)


@context.define_context(allow_default=False)
class TaskGroup(object):
    """Tasks that run concurrently, on one or more nodes; tasks on one node
    share its workspace."""

    LOCAL_SETUP = net_builder.LOCAL_SETUP

    def __init__(self, workspace_type=None):
        self._tasks = []
        self._already_used = False
        self._tasks_to_add = []
        self._report_nets = {}
        self._report_steps = []
        self._workspace_type = workspace_type
        self._tasks_by_node = None

    def add(self, task):
        if self._already_used:
            raise AssertionError('Cannot add Task to an already used TaskGroup.')
        if (self._workspace_type is not None and task._workspace_type is not None and
                self._workspace_type != task._workspace_type):
            raise AssertionError('the task workspace type {} differs from the group\'s {}'
                                 .format(task._workspace_type, self._workspace_type))
        if task._workspace_type is None:
            task._workspace_type = self._workspace_type or WorkspaceType.PRIVATE
        if self._workspace_type is None:
            self._workspace_type = task._workspace_type
        task._notify_used()
        self._tasks.append(task)

    def tasks(self):
        for task in self._tasks_to_add:
            self.add(task)
        self._tasks_to_add = []
        self._already_used = True
        return self._tasks

    def num_registered_tasks(self):
        return len(self._tasks_to_add) + len(self._tasks)

    def used_nodes(self):
        used = []
        for task in self._tasks + self._tasks_to_add:
            if task.node not in used:
                used.append(task.node)
        return used

    def report_step(self, step=None, node=None, interval_ms=1000):
        """A step run every interval_ms on the node while the group runs,
        and at least once after its tasks finish."""
        step = core.to_execution_step(step)
        step.RunEveryMillis(interval_ms)
        self._report_steps.append((str(node or Node.current(node)), step))

    def report_net(self, net=None, node=None, report_interval=5):
        """Deprecated in Caffe2: report_step with a net."""
        node = str(node or Node.current(node))
        if net is not None and node in self._report_nets:
            raise AssertionError('node {} already has a report net'.format(node))
        if node not in self._report_nets:
            self._report_nets[node] = (net if net else core.Net('%s/reporter' % node),
                                       report_interval)
        return self._report_nets[node][0]

    def _node_step(self, node, tasks, report_steps):
        inits, exits = get_setup_nets(TaskGroup.LOCAL_SETUP,
                                      [t.get_step() for t in tasks] + report_steps, self)
        steps = list(report_steps)
        outputs = []
        workspace_type = WorkspaceType.PRIVATE
        for task in tasks:
            step = task.get_step()
            step.SetCreateWorkspace(task.workspace_type() == WorkspaceType.PRIVATE)
            steps.append(step)
            outputs += task.outputs()
            if task.workspace_type() == WorkspaceType.GLOBAL:
                workspace_type = WorkspaceType.GLOBAL
        if not steps:
            steps.append(core.execution_step('empty', []))
        step = steps[0] if len(steps) == 1 else core.execution_step(
            '%s:body' % node, steps, concurrent_substeps=True)
        if inits or exits:
            around = []
            if inits:
                around.append(core.execution_step('%s:init' % node, inits))
            around.append(step)
            if exits:
                around.append(core.execution_step('%s:exit' % node, exits))
            step = core.execution_step(node, around)
        return step, outputs, workspace_type

    def tasks_by_node(self, node_remap=None):
        """A TaskGroup of one combined task per (remapped) node."""
        node_map = {}
        for task in self.tasks():
            node_map[task.node] = node_remap(task.node) if node_remap else task.node
        if self._tasks_by_node is not None:
            grouped, previous_map = self._tasks_by_node
            if previous_map != node_map:
                raise AssertionError('Cannot call tasks_by_node multiple times.')
            return grouped
        for node, (net, interval) in self._report_nets.items():
            self.report_step(net, node=node, interval_ms=interval * 1000)
        self._report_nets = {}
        tasks_by_node = collections.OrderedDict()
        for task in self.tasks():
            tasks_by_node.setdefault(node_map[task.node], []).append(task)
        reports_by_node = collections.defaultdict(list)
        for node, step in self._report_steps:
            reports_by_node[node_map.get(node, node)].append(step)
        grouped = TaskGroup()
        for node, tasks in tasks_by_node.items():
            step, outputs, workspace_type = self._node_step(node, tasks, reports_by_node[node])
            Task(node=node, step=step, outputs=outputs, name='grouped_by_node', group=grouped,
                 workspace_type=workspace_type)
        self._tasks_by_node = (grouped, node_map)
        return grouped

    def to_task(self, node=None):
        node = str(Node.current(node))
        tasks = self.tasks_by_node(lambda _: node).tasks()
        return tasks[0] if tasks else Task()

    def workspace_type(self):
        return self._workspace_type


class TaskOutput(object):
    """An output of a task: a blob or a list of blobs, whose value the
    session fetches when the task has run."""

    def __init__(self, names):
        self._is_scalar = type(names) not in (tuple, list)
        self.names = [names] if self._is_scalar else list(names)
        self._values = None
        self._fetch_func = None

    def set(self, values, _fetch_func=None):
        if len(values) != len(self.names):
            raise AssertionError('{} values for {} outputs'.format(len(values), len(self.names)))
        self._values = values
        self._fetch_func = _fetch_func

    def get(self):
        if self._values is None:
            raise AssertionError('Output value not set yet.')
        return self._values[0] if self._is_scalar else self._values

    def fetch(self):
        if self._fetch_func is None:
            raise AssertionError('Cannot fetch value for this output.')
        fetched = [self._fetch_func(v) for v in self._values]
        return fetched[0] if self._is_scalar else fetched


def final_output(blob_or_record):
    """Adds an output to the current Task (or to a new one): its value when
    the task has run."""
    task = Task.current(required=False) or Task()
    return task.add_output(blob_or_record)


class TaskOutputList(object):
    def __init__(self, outputs=None):
        self.outputs = outputs or []

    def names(self):
        names = []
        for output in self.outputs:
            names += output.names
        return names

    def set_values(self, values, _fetch_func=None):
        offset = 0
        for output in self.outputs:
            count = len(output.names)
            output.set(values[offset:offset + count], _fetch_func)
            offset += count
        if offset != len(values):
            raise AssertionError('Wrong number of output values.')


@context.define_context()
class Task(object):
    """An execution step and its outputs, added to the current TaskGroup
    (if any) on the current Node. Used as a `with` block, the ops the block
    adds (net_builder.ops) become its step."""

    TASK_SETUP = net_builder.TASK_SETUP
    TASK_INSTANCE_SETUP = net_builder.TASK_INSTANCE_SETUP
    REPORT_STEP = net_builder.REPORT_STEP
    _global_names_used = set()

    @staticmethod
    def _get_next_name(node, group, name):
        basename = '{}/{}'.format(node, name)
        used = (Task._global_names_used if group is None
                else set(t.name for t in group._tasks_to_add))
        candidate, i = basename, 0
        while candidate in used:
            i += 1
            candidate = '%s:%d' % (basename, i)
        return candidate

    def __init__(self, step=None, outputs=None, workspace_type=None, group=None, node=None,
                 name=None, num_instances=None):
        if not name and isinstance(step, core.ExecutionStep):
            name = step.Proto().name
        name = name or 'task'
        self.node = str(Node.current(None if node is None else Node(node)))
        self.group = TaskGroup.current(group, required=False)
        self.name = Task._get_next_name(self.node, self.group, name)
        if self.group is not None:
            self.group._tasks_to_add.append(self)
        self._already_used = False
        self._step = None
        self._step_with_setup = None
        self._outputs = []
        self._net_builder = None
        self._workspace_type = workspace_type
        self._num_instances = num_instances
        if step is not None:
            self.set_step(step)
        if outputs is not None:
            self.add_outputs(outputs)

    def __enter__(self):
        if self.group is not None:
            self.group._tasks_to_add.remove(self)
        self._assert_not_used()
        if self._step is not None:
            raise AssertionError('This Task already has an execution step.')
        self._net_builder = net_builder.NetBuilder(_fullname=self.name)
        self._net_builder.__enter__()
        return self

    def __exit__(self, etype, value, traceback):
        self._net_builder.__exit__(etype, value, traceback)
        if etype is None:
            self.set_step(self._net_builder)
        if self.group is not None:
            self.group._tasks_to_add.append(self)
        self._net_builder = None

    def workspace_type(self):
        return self._workspace_type

    def _assert_not_used(self):
        if self._already_used:
            raise AssertionError('Cannot modify task since it is already been used.')

    def add_output(self, output):
        self._assert_not_used()
        output = output if isinstance(output, TaskOutput) else TaskOutput(output)
        self._outputs.append(output)
        return output

    def add_outputs(self, outputs):
        self._assert_not_used()
        if type(outputs) not in (list, tuple):
            return self.add_output(outputs)
        return [self.add_output(output) for output in outputs]

    def set_step(self, step):
        self._assert_not_used()
        self._step = core.to_execution_step(step)

    def get_step(self):
        """The task's step wrapped in its setup steps (built once)."""
        if self._step_with_setup is not None:
            return self._step_with_setup
        if self._step is None:
            self._step_with_setup = core.execution_step(self.name, [])
            return self._step_with_setup
        report_steps = [s for s in self._step.get_all_attributes(Task.REPORT_STEP)
                        if not hasattr(s, '_report_step_used')]
        for step in report_steps:
            step._report_step_used = True
            if not step.Proto().run_every_ms:
                step.RunEveryMillis(1000)
        task_inits, task_exits = get_setup_nets(Task.TASK_SETUP, [self._step] + report_steps,
                                                self)
        instance_inits, instance_exits = get_setup_nets(
            Task.TASK_INSTANCE_SETUP, [self._step] + report_steps, self)
        if not self._outputs:
            # Every task returns something: a constant, as in Caffe2.
            output_net = core.Net('%s:output' % self.name)
            self.add_output(output_net.ConstantFill([], 1, dtype=core.DataType.INT32,
                                                    value=0))
            task_exits.append(output_net)
        body = self._step if not report_steps else core.execution_step(
            '%s:body' % self.name, report_steps + [self._step])
        step = add_setup_steps(body, instance_inits, instance_exits, self.name + ':instance')
        if self._num_instances and self._num_instances > 1:
            step.SetCreateWorkspace(True)
            step = core.execution_step('%s:parallel' % self.name, [step],
                                       num_concurrent_instances=self._num_instances)
        self._step_with_setup = add_setup_steps(step, task_inits, task_exits, self.name)
        return self._step_with_setup

    def output_list(self):
        return TaskOutputList(self._outputs)

    def outputs(self):
        return self._outputs

    def _notify_used(self):
        self.get_step()
        self._already_used = True


class SetupNets(object):
    """Nets to run once at the start (init_nets) and end (exit_nets) of a
    Task or TaskGroup run, registered on a net with
    net.add_attribute(Task.TASK_SETUP or TaskGroup.LOCAL_SETUP, SetupNets(...))."""

    def __init__(self, init_nets=None, exit_nets=None):
        self.init_nets = init_nets
        self.exit_nets = exit_nets

    def setup(self, init_net):
        return self.init_nets

    def exit(self, exit_net):
        return self.exit_nets


net_builder.RegisterTaskClasses(Cluster=Cluster, Node=Node, TaskGroup=TaskGroup)

"""Plans and execution steps, as caffe2.python.core's Plan and ExecutionStep.

A PlanDef holds nets and a tree of ExecutionSteps; workspace.RunPlan hands it
to the C++ runtime (core/plan.h), which creates the nets and runs the steps.
These classes only build the proto; they are re-exported by doppio.core, so
scripts spell them core.Plan / core.ExecutionStep / core.execution_step.
"""

import collections

from doppio.core_blob import ScopedName
from doppio.core_net import BlobReference, Net
from doppio.proto import doppio_pb2 as caffe2_pb2


def get_net_name(netlike):
    """The name of a Net, a NetDef, or the name itself."""
    if isinstance(netlike, Net):
        return netlike.Proto().name
    if isinstance(netlike, caffe2_pb2.NetDef):
        return netlike.name
    return netlike


def _add_net_to_dict(net_dict, net):
    """Records `net` under its name; False when that name is already there.
    Two different Net objects under one name would make the plan ambiguous."""
    name = get_net_name(net)
    if name in net_dict:
        if net_dict[name] is not None and net is not net_dict[name] and \
                isinstance(net, Net):
            raise ValueError('Different nets with same name: ' + name)
        return False
    net_dict[name] = net if isinstance(net, Net) else None
    return True


class ExecutionStep(object):
    """One caffe2_pb2.ExecutionStep under construction: either nets or
    substeps, repeated num_iter times or until should_stop_blob is true."""

    _step_names_used = set()

    @staticmethod
    def _get_next_step_name(basename):
        name = basename
        next_idx = 1
        while name in ExecutionStep._step_names_used:
            name = basename + '_' + str(next_idx)
            next_idx += 1
        ExecutionStep._step_names_used.add(name)
        return name

    def __init__(self, name, nets=None, num_iter=None):
        self._step = caffe2_pb2.ExecutionStep()
        self._step.name = name or ExecutionStep._get_next_step_name('step')
        self._net_dict = collections.OrderedDict()
        self._is_used = False
        self._substeps = []
        if nets is not None:
            if isinstance(nets, Net):
                nets = [nets]
            for net in nets:
                if _add_net_to_dict(self._net_dict, net):
                    self._step.network.extend([get_net_name(net)])
        if num_iter is not None:
            self._step.num_iter = num_iter

    def get_net(self, name):
        return self._net_dict[name]

    _OPTIONAL_FIELDS = ('num_iter', 'concurrent_substeps', 'only_once',
                        'num_concurrent_instances', 'create_workspace', 'run_every_ms')

    @classmethod
    def create_from_proto(cls, step_proto, net_obj_dict, net_proto_dict):
        """The step (recursively) of an ExecutionStep proto, over the Net
        objects of net_obj_dict (made from net_proto_dict when missing)."""
        if bool(step_proto.network) == bool(step_proto.substep):
            raise ValueError('execution step {!r} must have either nets or substeps'.format(
                step_proto.name))
        if step_proto.substep:
            children = [cls.create_from_proto(sub, net_obj_dict, net_proto_dict)
                        for sub in step_proto.substep]
        else:
            children = []
            for name in step_proto.network:
                if name not in net_obj_dict:
                    if name not in net_proto_dict:
                        raise ValueError('execution step {!r} runs net {!r}, which the plan '
                                         'does not have'.format(step_proto.name, name))
                    net_obj_dict[name] = Net(net_proto_dict[name])
                children.append(net_obj_dict[name])
        options = {field: getattr(step_proto, field) for field in cls._OPTIONAL_FIELDS
                   if step_proto.HasField(field)}
        if step_proto.HasField('should_stop_blob'):
            options['should_stop_blob'] = BlobReference(step_proto.should_stop_blob)
        return execution_step(step_proto.name, children, **options)

    def get_all_attributes(self, name):
        """The attributes `name` of every net this step and its substeps
        run (see Net.add_attribute)."""
        return [attr for net in self._net_dict.values() for attr in net.get_attributes(name)]

    def Name(self):
        return self._step.name

    def __str__(self):
        return self._step.name

    def _assert_can_mutate(self):
        # A step's proto is copied into its parent when added; later edits
        # would silently not reach the plan.
        if self._is_used:
            raise RuntimeError('cannot change execution step {!r}: it was already added '
                               'to a plan or step'.format(self.Name()))

    def _assert_no_nets(self):
        if self.HasNets():
            raise ValueError('execution step {!r} has nets; a step cannot have both nets '
                             'and substeps'.format(self.Name()))

    def _notify_is_used(self):
        self._is_used = True

    def Proto(self):
        return self._step

    def HasNets(self):
        return len(self._step.network) > 0

    def HasSubsteps(self):
        return len(self._step.substep) > 0

    def Nets(self):
        return list(self._net_dict.values())

    def Substeps(self):
        return self._substeps

    def SetIter(self, num_iter):
        self._assert_can_mutate()
        self._step.num_iter = num_iter

    def SetCreateWorkspace(self, create_workspace):
        self._assert_can_mutate()
        self._step.create_workspace = create_workspace

    def SetNumConcurrentInstances(self, num_concurrent_instances):
        self._assert_can_mutate()
        self._step.num_concurrent_instances = num_concurrent_instances

    def SetOnlyOnce(self, only_once):
        self._assert_can_mutate()
        self._step.only_once = only_once

    def SetShouldStopBlob(self, should_stop_blob):
        if not isinstance(should_stop_blob, BlobReference):
            raise TypeError('SetShouldStopBlob expects a BlobReference, got {}'.format(
                type(should_stop_blob).__name__))
        self._assert_can_mutate()
        self._step.should_stop_blob = str(should_stop_blob)

    def RunEveryMillis(self, interval):
        self._assert_can_mutate()
        self._step.run_every_ms = interval

    def SetReportNet(self, report_net, report_interval):
        self._assert_can_mutate()
        _add_net_to_dict(self._net_dict, report_net)
        self._step.report_net = get_net_name(report_net)
        self._step.report_interval = report_interval

    def AddSubstep(self, substep):
        self._assert_can_mutate()
        self._assert_no_nets()
        if isinstance(substep, ExecutionStep):
            substep._notify_is_used()
            if not substep.HasNets() and not substep.HasSubsteps():
                return self  # an empty step does nothing (as in Caffe2)
            for net in substep.Nets():
                _add_net_to_dict(self._net_dict, net)
            self._substeps.append(substep)
            proto = substep.Proto()
        else:
            proto = substep
        self._step.substep.add().CopyFrom(proto)
        return self

    def SetConcurrentSubsteps(self, concurrent_substeps):
        self._assert_can_mutate()
        self._assert_no_nets()
        self._step.concurrent_substeps = concurrent_substeps

    def AddNet(self, net):
        self._assert_can_mutate()
        if self.HasSubsteps():
            raise ValueError('execution step {!r} has substeps; a step cannot have both '
                             'nets and substeps'.format(self.Name()))
        if not isinstance(net, Net):
            raise TypeError('AddNet expects a core.Net, got {}'.format(type(net).__name__))
        _add_net_to_dict(self._net_dict, net)
        self._step.network.extend([get_net_name(net)])
        return self


def add_nets_in_order(step, net_list):
    """Appends the names of the nets `step` uses to net_list, substeps' first,
    each once: the order a plan lists them in."""
    proto = step.Proto()
    for substep in step.Substeps():
        add_nets_in_order(substep, net_list)
    for net in proto.network:
        if net not in net_list:
            net_list.append(net)
    if proto.report_net and proto.report_net not in net_list:
        net_list.append(proto.report_net)


class Plan(object):
    """A caffe2_pb2.PlanDef under construction: AddStep copies a step and
    the nets it uses into the plan."""

    def __init__(self, name_or_step):
        self._plan = caffe2_pb2.PlanDef()
        self._net_dict = collections.OrderedDict()
        self._steps = []
        if isinstance(name_or_step, ExecutionStep):
            self._plan.name = name_or_step.Name()
            self.AddStep(name_or_step)
        elif isinstance(name_or_step, str):
            self._plan.name = name_or_step
        else:
            raise ValueError('name_or_step must be a string or ExecutionStep')

    def __str__(self):
        return self._plan.name

    def Proto(self):
        return self._plan

    def AddNets(self, nets):
        for net in nets:
            if _add_net_to_dict(self._net_dict, net):
                if not isinstance(net, Net):
                    raise TypeError('Plan.AddNets expects core.Net objects, got {}'.format(
                        type(net).__name__))
                self._plan.network.add().CopyFrom(net.Proto())

    def Nets(self):
        return list(self._net_dict.values())

    def AddStep(self, step):
        if not isinstance(step, ExecutionStep):
            raise TypeError('Plan.AddStep expects an ExecutionStep, got {}'.format(
                type(step).__name__))
        step._notify_is_used()
        if not step.HasNets() and not step.HasSubsteps():
            return
        self._plan.execution_step.add().CopyFrom(step.Proto())
        self._steps.append(step)
        net_list = []
        add_nets_in_order(step, net_list)
        self.AddNets([step.get_net(n) for n in net_list])

    def Steps(self):
        return self._steps

    @classmethod
    def create_from_proto(cls, plan_proto):
        """A Plan rebuilt from a PlanDef: its nets become Net objects (named
        anew, as every Net is) and its steps ExecutionSteps over them."""
        if not isinstance(plan_proto, caffe2_pb2.PlanDef):
            raise TypeError('create_from_proto expects a PlanDef, got {}'.format(
                type(plan_proto).__name__))
        plan = cls(plan_proto.name)
        net_protos = {}
        for net_proto in plan_proto.network:
            if net_proto.name in net_protos:
                raise ValueError('plan {!r} has two nets named {!r}'.format(
                    plan_proto.name, net_proto.name))
            net_protos[net_proto.name] = net_proto
        nets = {name: Net(proto) for name, proto in net_protos.items()}
        for step_proto in plan_proto.execution_step:
            plan.AddStep(ExecutionStep.create_from_proto(step_proto, nets, net_protos))
        return plan


def to_execution_step(step_or_nets, default_name=None):
    """A step from a step, a net, a list of nets or steps, or a
    net_builder.NetBuilder (its children in order, until its stop blob)."""
    if isinstance(step_or_nets, ExecutionStep):
        return step_or_nets
    if not default_name and hasattr(step_or_nets, 'name'):
        default_name = step_or_nets.name
    stop_blob = None
    # A NetBuilder, by its interface (net_builder is above this module).
    if hasattr(step_or_nets, '_stop_blob') and hasattr(step_or_nets, 'get'):
        stop_blob = step_or_nets._stop_blob
        step_or_nets = step_or_nets.get()
    elif hasattr(step_or_nets, 'tasks_by_node'):
        # A task.TaskGroup: its tasks, gathered into one, as a step.
        step_or_nets = step_or_nets.to_task().get_step()
    return execution_step(default_name or ExecutionStep._get_next_step_name("step"),
                          step_or_nets, should_stop_blob=stop_blob)


def scoped_execution_step(name, *args, **kwargs):
    """execution_step with the name prefixed by the current name scope."""
    return execution_step(ScopedName(name) if name else name, *args, **kwargs)


def execution_step(default_name, steps_or_nets, num_iter=None, report_net=None,
                   report_interval=None, concurrent_substeps=None, should_stop_blob=None,
                   only_once=None, num_concurrent_instances=None, create_workspace=False,
                   run_every_ms=None):
    """Caffe2's helper: a step named `default_name` over a net, a step, or a
    list of nets (run in order) or of steps (substeps)."""
    if default_name is None:
        raise ValueError('execution_step needs a name')
    if should_stop_blob is None and num_iter is None:
        num_iter = 1  # Caffe2's default: run once
    step = ExecutionStep(default_name)
    if should_stop_blob is not None:
        step.SetShouldStopBlob(should_stop_blob)
    if num_iter is not None:
        step.SetIter(num_iter)
    if only_once is not None:
        step.SetOnlyOnce(only_once)
    if concurrent_substeps is not None:
        step.SetConcurrentSubsteps(concurrent_substeps)
    if report_net is not None:
        if report_interval is None:
            raise ValueError('execution_step: report_net needs report_interval')
        step.SetReportNet(report_net, report_interval)
    if num_concurrent_instances is not None:
        step.SetNumConcurrentInstances(num_concurrent_instances)
    if create_workspace:
        step.SetCreateWorkspace(True)
    if run_every_ms:
        step.RunEveryMillis(run_every_ms)

    if isinstance(steps_or_nets, ExecutionStep):
        step.AddSubstep(steps_or_nets)
    elif isinstance(steps_or_nets, Net):
        step.AddNet(steps_or_nets)
    elif isinstance(steps_or_nets, list):
        if all(isinstance(x, Net) for x in steps_or_nets):
            for net in steps_or_nets:
                step.AddNet(net)
        else:
            for substep in steps_or_nets:
                step.AddSubstep(to_execution_step(substep))
    elif steps_or_nets:
        raise ValueError('steps_or_nets must be a step, a net, or a list of nets or steps, '
                         'got {}'.format(type(steps_or_nets).__name__))
    return step

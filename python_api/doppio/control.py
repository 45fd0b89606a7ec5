"""caffe2.python.control: loops and conditionals made of execution steps.

Each function returns an ExecutionStep (or a net list wrapped in one) that a
Plan runs: Do / DoParallel (once, in order or concurrently), For (a fixed
count, with a counter), While / Until / DoWhile / DoUntil (a step's
should_stop_blob), If / IfNot / Switch / SwitchNot (only_once steps). A
condition is a bool blob, or a net whose last external output is that blob
(the net runs each time the condition is needed).
"""
from doppio import core

_used_step_names = set()
_next_suffix = [1]


def _get_next_step_name(control_name, base_name):
    """'<base>/<control>', made unique within the process."""
    name = candidate = '%s/%s' % (base_name, control_name)
    while name in _used_step_names:
        name = '%s_%d' % (candidate, _next_suffix[0])
        _next_suffix[0] += 1
    _used_step_names.add(name)
    return name


def _MakeList(input):
    """(a, b) -> [a, b]; (a,) -> [a]; ([a, b],) -> [a, b]."""
    if len(input) == 0:
        raise ValueError('input cannot be empty.')
    if len(input) == 1:
        return input[0] if isinstance(input[0], list) else [input[0]]
    return list(input)


def _IsNets(nets_or_steps):
    if isinstance(nets_or_steps, list):
        return all(isinstance(n, core.Net) for n in nets_or_steps)
    return isinstance(nets_or_steps, core.Net)


def _PrependNets(nets_or_steps, *nets):
    body, nets = _MakeList((nets_or_steps,)), _MakeList(nets)
    return nets + body if _IsNets(body) else [Do('prepend', nets)] + body


def _AppendNets(nets_or_steps, *nets):
    body, nets = _MakeList((nets_or_steps,)), _MakeList(nets)
    return body + nets if _IsNets(body) else body + [Do('append', nets)]


def GetConditionBlobFromNet(condition_net):
    """The condition of a condition net: its last external output."""
    outputs = condition_net.Proto().external_output
    assert len(outputs) > 0, \
        'Condition net %s must has at least one external output' % condition_net.Name()
    return core.BlobReference(outputs[-1])


def _condition_blob(condition_blob_or_net):
    if isinstance(condition_blob_or_net, core.Net):
        return GetConditionBlobFromNet(condition_blob_or_net)
    return condition_blob_or_net


def BoolNet(*blobs_with_bool_value):
    """A net setting each (blob, value) pair's blob to the bool value."""
    net = core.Net('bool_net')
    for blob, value in _MakeList(blobs_with_bool_value):
        out = net.ConstantFill([], [blob], shape=[], value=value, dtype=core.DataType.BOOL)
        net.AddExternalOutput(out)
    return net


def NotNet(condition_blob_or_net):
    """(a net computing the negation of the condition, its output blob)."""
    net = core.Net('not_net')
    out = net.Not(_condition_blob(condition_blob_or_net))
    net.AddExternalOutput(out)
    return net, out


def _CopyConditionBlobNet(condition_blob):
    net = core.Net('copy_condition_blob_net')
    out = net.Copy(condition_blob)
    net.AddExternalOutput(out)
    return net, out


def _check_same_kind(net, merged):
    assert net.Proto().device_option == merged.Proto().device_option
    assert net.Proto().type == merged.Proto().type


def MergeConditionNets(name, condition_nets, relation):
    """One condition net running all of `condition_nets` (their ops and
    attributes copied in) whose condition is their conditions combined with
    `relation` ('And' or 'Or')."""
    if not isinstance(condition_nets, list):
        return condition_nets
    if len(condition_nets) <= 1:
        return condition_nets[0] if condition_nets else None
    merged = core.Net(name)
    condition = None
    for net in condition_nets:
        _check_same_kind(net, merged)
        merged.Proto().op.extend(net.Proto().op)
        merged.Proto().external_input.extend(net.Proto().external_input)
        current = GetConditionBlobFromNet(net)
        condition = current if condition is None else getattr(merged, relation)(
            [condition, current])
        for key, values in net._attr_dict.items():
            merged._attr_dict[key] += values
    merged.AddExternalOutput(condition)
    return merged


def CombineConditions(name, condition_nets, relation):
    """A net combining the conditions of `condition_nets` with `relation`,
    without running those nets (they run elsewhere)."""
    if not condition_nets:
        return None
    if not isinstance(condition_nets, list):
        raise ValueError('condition_nets must be a list of nets.')
    if len(condition_nets) == 1:
        return _CopyConditionBlobNet(GetConditionBlobFromNet(condition_nets[0]))[0]
    combined = core.Net(name)
    condition = GetConditionBlobFromNet(condition_nets[0])
    for net in condition_nets[1:]:
        condition = getattr(combined, relation)([condition, GetConditionBlobFromNet(net)])
    combined.AddExternalOutput(condition)
    return combined


def Do(name, *nets_or_steps):
    """Runs the nets or steps once, in order (a single step is returned as
    it is)."""
    body = _MakeList(nets_or_steps)
    if len(body) == 1 and isinstance(body[0], core.ExecutionStep):
        return body[0]
    return core.scoped_execution_step(_get_next_step_name('Do', name), body)


def DoParallel(name, *nets_or_steps):
    """Runs the nets or steps once, concurrently."""
    body = _MakeList(nets_or_steps)
    if len(body) == 1 and isinstance(body[0], core.ExecutionStep):
        return body[0]
    return core.scoped_execution_step(_get_next_step_name('DoParallel', name), body,
                                      concurrent_substeps=True)


def _with_condition_first(condition_blob_or_net, nets_or_steps, *more_nets):
    """The body with the condition net (if the condition is one) and
    `more_nets` run before it."""
    if isinstance(condition_blob_or_net, core.Net):
        return _PrependNets(nets_or_steps, condition_blob_or_net, *more_nets)
    return _PrependNets(nets_or_steps, *more_nets) if more_nets else nets_or_steps


def _stop_when_false(name, control_name, condition_blob_or_net, nets_or_steps, **step_args):
    """A step running the body while the condition holds: the body starts
    with the condition's negation, the step's stop blob. A body of nets gets
    the stop blob initialized first (it is read before the first net runs)."""
    not_net, stop_blob = NotNet(condition_blob_or_net)
    body = _with_condition_first(condition_blob_or_net, nets_or_steps, not_net)

    def step(control):
        return core.scoped_execution_step(_get_next_step_name(control, name), body,
                                          should_stop_blob=stop_blob, **step_args)
    if _IsNets(body):
        return Do(name + '/' + control_name, BoolNet((stop_blob, False)),
                  step(control_name + '-inner'))
    return step(control_name)


def _RunOnceIf(name, condition_blob_or_net, nets_or_steps):
    """Runs the body once if the condition is true."""
    return _stop_when_false(name, '_RunOnceIf', condition_blob_or_net, nets_or_steps,
                            only_once=True)


def _RunOnceIfNot(name, condition_blob_or_net, nets_or_steps):
    """Runs the body once if the condition is false."""
    if isinstance(condition_blob_or_net, core.Net):
        condition = GetConditionBlobFromNet(condition_blob_or_net)
        body = _PrependNets(nets_or_steps, condition_blob_or_net)
    else:
        copy_net, condition = _CopyConditionBlobNet(condition_blob_or_net)
        body = _PrependNets(nets_or_steps, copy_net)
    return core.scoped_execution_step(_get_next_step_name('_RunOnceIfNot', name), body,
                                      should_stop_blob=condition, only_once=True)


def For(name, nets_or_steps, iter_num):
    """Runs the body iter_num times (a counter counts the iterations down)."""
    init_net = core.Net('init-net')
    counter = init_net.CreateCounter([], init_count=iter_num)
    iter_net = core.Net('For-iter')
    done = iter_net.CountDown([counter])
    loop = core.scoped_execution_step(_get_next_step_name('For-inner', name),
                                      _PrependNets(nets_or_steps, iter_net),
                                      should_stop_blob=done)
    return Do(name + '/For', Do(name + '/For-init-net', init_net), loop)


def While(name, condition_blob_or_net, nets_or_steps):
    """Runs the body while the condition (checked first) is true."""
    return _stop_when_false(name, 'While', condition_blob_or_net, nets_or_steps)


def Until(name, condition_blob_or_net, nets_or_steps):
    """Runs the body until the condition (checked first) is true."""
    body = _with_condition_first(condition_blob_or_net, nets_or_steps)
    stop_blob = (GetConditionBlobFromNet(condition_blob_or_net)
                 if isinstance(condition_blob_or_net, core.Net)
                 else core.BlobReference(str(condition_blob_or_net)))
    return core.scoped_execution_step(_get_next_step_name('Until', name), body,
                                      should_stop_blob=stop_blob)


def DoWhile(name, condition_blob_or_net, nets_or_steps):
    """Runs the body, then again while the condition (checked after) holds."""
    not_net, stop_blob = NotNet(condition_blob_or_net)
    if isinstance(condition_blob_or_net, core.Net):
        body = _AppendNets(nets_or_steps, condition_blob_or_net, not_net)
    else:
        body = _AppendNets(nets_or_steps, not_net)
    return Do(name + '/DoWhile', BoolNet((stop_blob, False)),
              core.scoped_execution_step(_get_next_step_name('DoWhile-inner', name), body,
                                         should_stop_blob=stop_blob))


def DoUntil(name, condition_blob_or_net, nets_or_steps):
    """Runs the body, then again until the condition (checked after) holds."""
    if not isinstance(condition_blob_or_net, core.Net):
        return core.scoped_execution_step(_get_next_step_name('DoUntil', name), nets_or_steps,
                                          should_stop_blob=core.BlobReference(
                                              condition_blob_or_net))
    stop_blob = GetConditionBlobFromNet(condition_blob_or_net)
    body = _AppendNets(nets_or_steps, condition_blob_or_net)
    return Do(name + '/DoUntil', BoolNet((stop_blob, False)),
              core.scoped_execution_step(_get_next_step_name('DoUntil-inner', name), body,
                                         should_stop_blob=stop_blob))


def Switch(name, *conditions):
    """For each (condition, body) pair in order, runs the body once if its
    condition is true."""
    pairs = _MakeList(conditions)
    return core.scoped_execution_step(
        _get_next_step_name('Switch', name),
        [_RunOnceIf(name + '/Switch', cond, body) for cond, body in pairs])


def SwitchNot(name, *conditions):
    """For each (condition, body) pair in order, runs the body once if its
    condition is false."""
    pairs = _MakeList(conditions)
    return core.scoped_execution_step(
        _get_next_step_name('SwitchNot', name),
        [_RunOnceIfNot(name + '/SwitchNot', cond, body) for cond, body in pairs])


def If(name, condition_blob_or_net, true_nets_or_steps, false_nets_or_steps=None):
    """Runs true_nets_or_steps once if the condition is true, else
    false_nets_or_steps (if given). A condition net runs once."""
    if not false_nets_or_steps:
        return _RunOnceIf(name + '/If', condition_blob_or_net, true_nets_or_steps)
    return Do(name + '/If',
              _RunOnceIf(name + '/If-true', condition_blob_or_net, true_nets_or_steps),
              _RunOnceIfNot(name + '/If-false', _condition_blob(condition_blob_or_net),
                            false_nets_or_steps))


def IfNot(name, condition_blob_or_net, true_nets_or_steps, false_nets_or_steps=None):
    """Runs true_nets_or_steps once if the condition is false, else
    false_nets_or_steps (if given)."""
    if not false_nets_or_steps:
        return _RunOnceIfNot(name + '/IfNot', condition_blob_or_net, true_nets_or_steps)
    return Do(name + '/IfNot',
              _RunOnceIfNot(name + '/IfNot-true', condition_blob_or_net, true_nets_or_steps),
              _RunOnceIf(name + '/IfNot-false', _condition_blob(condition_blob_or_net),
                         false_nets_or_steps))

"""caffe2.python.control_ops_util: adds If / While ops whose branches and
bodies run in scopes of their own (operators/control_ops.h).

A branch or body net sees the outer blobs named in `lexical_scope` that it
reads or writes, and the blobs it reads before writing them (which must be
in the lexical scope); every other blob it makes stays inside its scope,
invisible to the outer net. Each scoped net is wrapped in a Do op over a
workspace stack blob made by CreateScope.
"""

from doppio import core


def get_external_blob_names(net, lexical_scope):
    """(blobs `net` reads before writing, outer blobs it writes); the first
    must all be in `lexical_scope`."""
    proto = net.Proto()
    ssa, _ = core.get_ssa(proto)
    input_names = core.get_undefined_blobs(ssa)
    for name in input_names:
        assert str(name) in lexical_scope, "Input blob " + name + " is undefined"
    output_names = set(output for op in proto.op for output in op.output
                       if output in lexical_scope)
    return input_names, output_names


def _refs(names):
    # Sorted: set order varies between processes, and the nets must not.
    return [core.BlobReference(name=str(name), net=None) for name in sorted(names, key=str)]


def _scoped_net(name, body_net, input_names, output_names, workspace_blob, **do_args):
    """A net of one Do op running `body_net` with the given outer inputs and
    outputs bound under their own names (the Do op's binding is by index into
    its inputs then outputs)."""
    inputs, outputs = _refs(input_names), _refs(output_names)
    ordered = [str(b) for b in inputs + outputs]
    outer = sorted(set(map(str, input_names)) | set(map(str, output_names)))
    wrapper = core.Net(name)
    wrapper.Do(inputs + [workspace_blob], outputs + [workspace_blob], net=body_net.Proto(),
               inner_blobs=outer, outer_blobs_idx=[ordered.index(b) for b in outer], **do_args)
    wrapper.AddExternalOutput(*(outputs + [workspace_blob]))
    return wrapper, inputs, outputs


def add_if_op(if_net, cond_blob, lexical_scope, then_net, else_net=None):
    """Adds to `if_net` an If on `cond_blob` (a bool scalar) that runs
    `then_net`, or `else_net`, each in its own scope."""
    branches = [('then', then_net)] + ([('else', else_net)] if else_net else [])
    if_inputs, if_outputs, if_args = [cond_blob], [], {}
    scopes = []
    input_names, output_names = set(), set()
    for kind, net in branches:
        reads, writes = get_external_blob_names(net, lexical_scope)
        input_names |= set(reads)
        output_names |= writes
        scopes.append((kind, net, reads, writes))
    if_inputs += _refs(input_names)
    if_outputs += _refs(output_names)
    for kind, net, reads, writes in scopes:
        workspace_blob = if_net.NextScopedBlob(if_net.Name() + '/workspace_if_' + kind)
        wrapper, _, _ = _scoped_net('do_%s_net' % kind, net, reads, writes, workspace_blob)
        if_args[kind + '_net'] = wrapper.Proto()
        if_inputs.append(workspace_blob)
        if_outputs.append(workspace_blob)
        if_net.CreateScope([], [workspace_blob])
    if_net.If(if_inputs, if_outputs, **if_args)
    if_net.AddExternalOutput(*if_outputs)


def add_while_op(while_net, cond_blob, lexical_scope, loop_body_net, condition_body_net=None):
    """Adds to `while_net` a While on `cond_blob` running `loop_body_net` in
    its own scope; `condition_body_net`, if given, runs before each check in
    a scope of its own and must write `cond_blob`."""
    reads, writes = get_external_blob_names(loop_body_net, lexical_scope)
    # The body may run zero times: what it would write must already exist.
    reads = set(reads) | writes
    body_blob = while_net.NextScopedBlob(while_net.Name() + '/workspace_loop_body')
    body, body_inputs, body_outputs = _scoped_net(
        'do_loop_body_net', loop_body_net, reads, writes, body_blob, copy_external_blobs=True)
    while_inputs = [cond_blob] + body_inputs + [body_blob]
    while_outputs = body_outputs + [body_blob]
    while_args = {'loop_net': body.Proto()}
    cond_scope_blob = None
    if condition_body_net:
        cond_reads, cond_writes = get_external_blob_names(condition_body_net, lexical_scope)
        assert any(str(cond_blob) in op.output for op in condition_body_net.Proto().op), \
            "Condition net does not write into condition blob"
        cond_writes.add(str(cond_blob))
        cond_scope_blob = while_net.NextScopedBlob(while_net.Name() + '/workspace_loop_cond')
        condition, cond_inputs, cond_outputs = _scoped_net(
            'do_loop_condition_net', condition_body_net, cond_reads, cond_writes,
            cond_scope_blob)
        while_args['cond_net'] = condition.Proto()
        while_inputs += [b for b in cond_inputs if str(b) not in reads] + [cond_scope_blob]
        while_outputs += [b for b in cond_outputs if str(b) not in writes] + [cond_scope_blob]
        if str(cond_blob) not in lexical_scope:
            while_net.ConstantFill([], cond_blob, dtype=core.DataType.BOOL, value=False)
    while_net.CreateScope([], [body_blob])
    if cond_scope_blob:
        while_net.CreateScope([], [cond_scope_blob])
    while_net.While(while_inputs, while_outputs, **while_args)
    while_net.AddExternalOutput(*while_outputs)

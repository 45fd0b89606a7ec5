"""caffe2.python.recurrent: builds a RecurrentNetwork op from a step net.

recurrent_net writes the op's arguments the way Caffe2 does (nets saved by
Caffe2 and nets built here run alike): the step net, its backward pass (the
gradient ops of the step net, from the C++ gradient registry), the links that
give each timestep views of the input sequence and of the recurrent states,
and the aliases that expose the states as outputs. The op itself is C++
(operators/recurrent_network_op.h).
"""
from doppio import core, workspace
from doppio.proto import caffe2_pb2


def _references(cell_net, input_blobs, initial_cell_inputs, timestep):
    """Step-net inputs that come from outside the op's sequence and states:
    the parameters, passed to the op as extra inputs."""
    known = set(input_blobs)
    known.update(str(x[1]) for x in initial_cell_inputs)
    known.update(str(x[0]) for x in initial_cell_inputs)
    if timestep is not None:
        known.add(str(timestep))
    return [core.BlobReference(b) for b in cell_net.Proto().external_input if b not in known]


def _backward_step_net(cell_net, recompute_blobs_on_backward, state_outputs):
    """(backward step net, {blob: gradient}, blob versions of the backward
    net) for the step net. The states it outputs get the gradient
    '<output>_grad' from outside (linked to the state gradients); its other
    outputs get only what the step's own ops pass back (Caffe2 gives those
    a gradient name nothing writes, and drops it when an op reads them)."""
    proto = cell_net.Proto()
    output_grads = {o: o + '_grad' for o in proto.external_output if o in state_outputs}
    backward_ops, mapping = core.GradientRegistry.GetBackwardPass(proto.op, output_grads)
    mapping = {str(k): v for k, v in mapping.items()}
    backward = core.Net('RecurrentBackwardStep')
    del backward.Proto().op[:]
    if recompute_blobs_on_backward is not None:
        recompute = {str(b) for b in recompute_blobs_on_backward}
        # The forward ops writing them, in forward order, run again first.
        for op in proto.op:
            if not recompute.isdisjoint(op.output):
                if not set(op.output).issubset(recompute):
                    raise ValueError(
                        'recompute_blobs_on_backward: op {} also writes {}, which are not '
                        'recomputed'.format(op.type, sorted(set(op.output) - recompute)))
                backward.Proto().op.extend([op])
    backward.Proto().op.extend(backward_ops)
    backward_ssa, backward_versions = core.get_ssa(backward.Proto())
    undefined = core.get_undefined_blobs(backward_ssa)
    # Forward intermediates the backward ops read are taken from the step's
    # workspace.
    _, forward_versions = core.get_ssa(proto)
    scratches = [blob for blob, version in forward_versions.items()
                 if version > 0 and blob in undefined and blob not in proto.external_output]
    backward.Proto().external_input.extend(scratches)
    backward.Proto().type = 'simple'
    return backward, mapping, backward_versions


def _accumulate_external_writes(backward_cell_net):
    """A backward op that overwrites a blob the step gets from outside (a
    gradient linked to a state) would lose what is there: it writes
    '<blob>_accum' instead, and a Sum adds that in."""
    proto = backward_cell_net.Proto()
    ops = list(proto.op)
    del proto.op[:]
    for op in ops:
        proto.op.extend([op])
        for j, output in enumerate(op.output):
            if output in proto.external_input and output not in op.input:
                accum = str(output) + '_accum'
                proto.op[-1].output[j] = accum
                backward_cell_net.Sum([output, accum], [output])


def _unpack_triples(triples):
    if not triples:
        return [], [], []
    a, b, c = zip(*triples)
    return list(a), list(b), list(c)


def recurrent_net(net, cell_net, inputs, initial_cell_inputs, links, timestep=None, scope=None,
                  outputs_with_grads=(0,), recompute_blobs_on_backward=None,
                  forward_only=False):
    """Adds a RecurrentNetwork op to `net` running `cell_net` once per
    timestep; returns its outputs: for each recurrent state, every step's
    value ([T, N, D]) and the last one ([1, N, D]).

    inputs: [(step-net input name, sequence blob [T, N, ...])] (one sequence).
    initial_cell_inputs: [(step-net state input, blob with its initial value)].
    links: {step-net state input: step-net output that is its next value}.
    timestep: the step net's timestep blob (default 'timestep').
    scope: prefix of the op's internal blobs (default: a fresh op name).
    outputs_with_grads: outputs whose gradients the backward pass takes.
    recompute_blobs_on_backward: step blobs the backward pass recomputes
        instead of keeping one per timestep.
    forward_only: no backward step net (the op then has no gradient)."""
    if len(inputs) != 1:
        raise ValueError('recurrent_net takes one input sequence, not {}'.format(len(inputs)))
    input_blobs = [str(i[0]) for i in inputs]
    op_name = net.NextName('recurrent')

    def s(name):
        return '{}/{}'.format(str(op_name if scope is None else scope), str(name))

    references = _references(cell_net, input_blobs, initial_cell_inputs, timestep)
    if forward_only:
        backward_cell_net, backward_mapping, backward_versions = None, {}, {}
    else:
        backward_cell_net, backward_mapping, backward_versions = _backward_step_net(
            cell_net, recompute_blobs_on_backward, {str(o) for o in links.values()})

    all_inputs = [i[1] for i in inputs] + [x[1] for x in initial_cell_inputs] + references
    all_outputs = []
    cell_net.Proto().type = 'simple'
    forward_links, backward_links, aliases, recurrent_states = [], [], [], []
    for cell_input, _ in initial_cell_inputs:
        cell_input = str(cell_input)
        state = s(cell_input + '_states')
        cell_output = links[cell_input]
        # The state tensor is [T + 1, N, D]: at step t the input is slice t
        # and the output slice t + 1.
        forward_links.append((cell_input, state, 0))
        forward_links.append((cell_output, state, 1))
        aliases.append((state, cell_output + '_all', 1))
        aliases.append((state, cell_output + '_last', -1))
        all_outputs.extend([cell_output + '_all', cell_output + '_last'])
        recurrent_states.append(state)
        if backward_cell_net is not None:
            states_grad = state + '_grad'
            backward_links.append((cell_output + '_grad', states_grad, 1))
            backward_cell_net.Proto().external_input.append(str(cell_output) + '_grad')
            input_grad = cell_input + '_grad'
            if not backward_versions.get(input_grad, 0):
                # Nothing writes it: the gradient is another blob (a Sum's
                # output gradient passes straight through).
                input_grad = backward_mapping[cell_input]
            backward_links.append((input_grad, states_grad, 0))
    for input_t, input_blob in inputs:
        forward_links.append((str(input_t), str(input_blob), 0))

    if backward_cell_net is not None:
        for input_t, input_blob in inputs:
            backward_links.append((backward_mapping[str(input_t)], str(input_blob) + '_grad', 0))
        backward_cell_net.Proto().external_input.extend(cell_net.Proto().external_input)
        backward_cell_net.Proto().external_input.extend(cell_net.Proto().external_output)
        _accumulate_external_writes(backward_cell_net)

    link_internal, link_external, link_offset = _unpack_triples(forward_links)
    alias_src, alias_dst, alias_offset = _unpack_triples(aliases)
    recurrent_inputs = [str(x[1]) for x in initial_cell_inputs]
    all_input_names = [str(i) for i in all_inputs]

    backward_args = {}
    if backward_cell_net is not None:
        b_internal, b_external, b_offset = _unpack_triples(backward_links)
        params = [x for x in references if str(x) in backward_mapping]
        backward_args = {
            'param': [all_input_names.index(str(p)) for p in params],
            'backward_link_internal': [str(x) for x in b_internal],
            'backward_link_external': [str(x) for x in b_external],
            'backward_link_offset': b_offset,
            'outputs_with_grads': list(outputs_with_grads),
            'recompute_blobs_on_backward': [str(b) for b in (recompute_blobs_on_backward or [])],
            'param_grads': [str(backward_mapping[str(p)]) for p in params],
        }
        if len(backward_cell_net.Proto().op) != 0:
            backward_args['backward_step_net'] = backward_cell_net.Proto()

    results = net.RecurrentNetwork(
        all_inputs,
        all_outputs + [s('step_workspaces')],
        alias_src=alias_src,
        alias_dst=[str(a) for a in alias_dst],
        alias_offset=alias_offset,
        recurrent_states=recurrent_states,
        initial_recurrent_state_ids=[all_input_names.index(i) for i in recurrent_inputs],
        link_internal=[str(x) for x in link_internal],
        link_external=[str(x) for x in link_external],
        link_offset=link_offset,
        enable_rnn_executor=1,
        step_net=cell_net.Proto(),
        timestep='timestep' if timestep is None else str(timestep),
        **backward_args)
    # The last output holds the step workspaces, for the gradient only.
    return results[:-1]


def set_rnn_executor_config(rnn_op, num_threads=None, max_cuda_streams=None):
    """Caffe2's RNN executor settings, recorded as arguments (Doppio runs the
    steps serially and keeps them only so the net round-trips)."""
    if rnn_op.type not in ('RecurrentNetwork', 'RecurrentNetworkGradient'):
        raise ValueError('{} is not a RecurrentNetwork op'.format(rnn_op.type))
    for key, value in (('num_threads', num_threads), ('max_cuda_streams', max_cuda_streams)):
        if value is not None:
            arg = caffe2_pb2.Argument()
            arg.name = 'rnn_executor.' + key
            arg.i = value
            rnn_op.arg.extend([arg])


def retrieve_step_blobs(net, prefix='rnn'):
    """Copies the blobs of every RecurrentNetwork op's step workspaces into the
    current workspace as '<prefix>_<blob><t>' and returns their names (as
    bytes, the way FetchBlob gives a string tensor's elements, as Caffe2)."""
    names = []
    count = 1
    for op in net.Proto().op:
        if op.type != 'RecurrentNetwork':
            continue
        blob_name = '{}_{}'.format(prefix, count)
        count += 1
        workspace.RunOperatorOnce(core.CreateOperator(
            'RecurrentNetworkBlobFetcher', [op.output[-1]], [blob_name], prefix=prefix))
        names += workspace.FetchBlob(blob_name).tolist()
    return names

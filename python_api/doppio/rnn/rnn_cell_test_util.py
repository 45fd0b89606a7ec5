"""caffe2.python.rnn.rnn_cell_test_util: numpy activations and the model
setup Caffe2's recurrent-cell tests (and users' own) build on."""
import numpy as np

from doppio import scope, workspace
from doppio.model_helper import ModelHelper


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def tanh(x):
    # Written through sigmoid, as the kernels' reference was.
    return 2.0 * sigmoid(2.0 * x) - 1


def _prepare_rnn(t, n, dim_in, create_rnn, outputs_with_grads, forget_bias, memory_optim=False,
                 forward_only=False, drop_states=False, T=None, two_d_initial_states=None,
                 dim_out=None, num_states=2, **kwargs):
    """Builds `create_rnn` (rnn_cell.LSTM or alike) in a model named
    'external' under the name scope 'test_name_scope', feeding random
    initial states 'state_<i>/layer_<l>' ([n, d] or [1, n, d], chosen at
    random unless two_d_initial_states says) and random seq_lengths in
    [1, t]. Returns (the rnn's outputs, the net, the initial state blobs plus
    the input blob). T set: the static (unrolled) RNN of that length."""
    if dim_out is None:
        dim_out = [dim_in]
    print('Dims: ', t, n, dim_in, dim_out)
    model = ModelHelper(name='external')
    if two_d_initial_states is None:
        two_d_initial_states = np.random.randint(2)

    def initial_state(d):
        shape = (n, d) if two_d_initial_states else (1, n, d)
        return np.random.randn(*shape).astype(np.float32)

    states = []
    for layer_id, d in enumerate(dim_out):
        for i in range(num_states):
            states.append(model.net.AddExternalInput('state_{}/layer_{}'.format(i, layer_id)))
            workspace.FeedBlob(states[-1], initial_state(d))
    with scope.NameScope('test_name_scope'):
        input_blob, seq_lengths = model.net.AddScopedExternalInputs('input_blob', 'seq_lengths')
        outputs = create_rnn(
            model, input_blob, seq_lengths, states, dim_in=dim_in, dim_out=dim_out,
            scope='external/recurrent', outputs_with_grads=outputs_with_grads,
            memory_optimization=memory_optim, forget_bias=forget_bias,
            forward_only=forward_only, drop_states=drop_states, static_rnn_unroll_size=T,
            **kwargs)
    workspace.RunNetOnce(model.param_init_net)
    workspace.FeedBlob(seq_lengths, np.random.randint(1, t + 1, size=(n,)).astype(np.int32))
    return outputs, model.net, states + [input_blob]

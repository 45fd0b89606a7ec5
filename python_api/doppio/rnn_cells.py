"""The recurrent cells of caffe2.python.rnn_cell (which re-exports them):
the RNNCell base, whose apply_over_sequence runs a cell's step over a
sequence with a RecurrentNetwork op, and the LSTM-family, basic, dropout,
stacked and unrolled cells. Names, arguments and blob names follow Caffe2's,
so scripts and saved parameters carry over."""
import inspect
import itertools
import logging

from doppio import brew, core, recurrent, scope
from doppio.model_helper import ModelHelper
from doppio.modeling.initializers import Initializer
from doppio.proto import caffe2_pb2


def _RectifyName(blob_reference_or_name):
    if blob_reference_or_name is None:
        return None
    if isinstance(blob_reference_or_name, (str, bytes)):
        return core.ScopedBlobReference(blob_reference_or_name)
    if not isinstance(blob_reference_or_name, core.BlobReference):
        raise TypeError('expected a blob name or BlobReference, not {!r}'.format(
            blob_reference_or_name))
    return blob_reference_or_name


def _RectifyNames(blob_references_or_names):
    if blob_references_or_names is None:
        return None
    return [_RectifyName(i) for i in blob_references_or_names]


class RNNCell(object):
    """Base of recurrent cells: subclasses implement apply_override (one
    step) and get_state_names_override; apply_over_sequence runs the step
    over a whole sequence."""

    def __init__(self, name=None, forward_only=False, initializer=None):
        self.name = name
        self.recompute_blobs = []
        self.forward_only = forward_only
        self._initializer = initializer

    @property
    def initializer(self):
        return self._initializer

    @initializer.setter
    def initializer(self, value):
        self._initializer = value

    def scope(self, name):
        return self.name + '/' + name if self.name is not None else name

    def apply_over_sequence(self, model, inputs, seq_lengths=None, initial_states=None,
                            outputs_with_grads=None):
        """(output sequence, [state_1_all, state_1_last, ...]) of the cell
        run over `inputs` [T, N, D]."""
        if initial_states is None:
            with scope.NameScope(self.name):
                if self.initializer is None:
                    raise ValueError('Either initial states or initializer have to be set')
                initial_states = self.initializer.create_states(model)
        preprocessed_inputs = self.prepare_input(model, inputs)
        step_model = ModelHelper(name=self.name, param_model=model)
        input_t, timestep = step_model.net.AddScopedExternalInputs('input_t', 'timestep')
        if len(initial_states) != len(self.get_state_names()):
            raise ValueError(
                "Number of initial state values provided doesn't match the number of states: "
                '{} != {}'.format(len(initial_states), len(self.get_state_names())))
        states_prev = step_model.net.AddScopedExternalInputs(
            *[s + '_prev' for s in self.get_state_names()])
        states = self._apply(model=step_model, input_t=input_t, seq_lengths=seq_lengths,
                             states=states_prev, timestep=timestep)
        external_outputs = set(step_model.net.Proto().external_output)
        for state in states:
            if state not in external_outputs:
                step_model.net.AddExternalOutput(state)
        if outputs_with_grads is None:
            outputs_with_grads = [self.get_output_state_index() * 2]
        # (state_1_all, state_1_last, state_2_all, state_2_last, ...)
        states_for_all_steps = recurrent.recurrent_net(
            net=model.net,
            cell_net=step_model.net,
            inputs=[(input_t, preprocessed_inputs)],
            initial_cell_inputs=list(zip(states_prev, initial_states)),
            links=dict(zip(states_prev, states)),
            timestep=timestep,
            scope=self.name,
            forward_only=self.forward_only,
            outputs_with_grads=outputs_with_grads,
            recompute_blobs_on_backward=self.recompute_blobs,
        )
        output = self._prepare_output_sequence(model, states_for_all_steps)
        return output, states_for_all_steps

    def apply(self, model, input_t, seq_lengths, states, timestep):
        """One step outside a RecurrentNetwork: (output, next states)."""
        input_t = self.prepare_input(model, input_t)
        states = self._apply(model, input_t, seq_lengths, states, timestep)
        return self._prepare_output(model, states), states

    def _apply(self, model, input_t, seq_lengths, states, timestep, extra_inputs=None):
        """apply_override under the cell's name scope; the inputs keep the
        scope they were named in."""
        args = self._rectify_apply_inputs(input_t, seq_lengths, states, timestep, extra_inputs)
        with core.NameScope(self.name):
            return self.apply_override(model, *args)

    def _rectify_apply_inputs(self, input_t, seq_lengths, states, timestep, extra_inputs):
        input_t, seq_lengths, timestep = _RectifyNames([input_t, seq_lengths, timestep])
        states = _RectifyNames(states)
        if extra_inputs:
            names, sizes = zip(*extra_inputs)
            extra_inputs = list(zip(_RectifyNames(names), sizes))
        rectified = [input_t, seq_lengths, states, timestep]
        if 'extra_inputs' in inspect.signature(self.apply_override).parameters:
            rectified.append(extra_inputs)
        return rectified

    def apply_override(self, model, input_t, seq_lengths, timestep, extra_inputs=None):
        """One step: adds ops computing the next states to `model`; returns
        them. input_t is [1, N, D] (after prepare_input)."""
        raise NotImplementedError('Abstract method')

    def prepare_input(self, model, input_blob):
        """Work on the input alone, done once for the whole sequence."""
        return input_blob

    def get_output_state_index(self):
        return 0

    def get_state_names(self):
        return list(map(self.scope, self.get_state_names_override()))

    def get_state_names_override(self):
        raise NotImplementedError('Abstract method')

    def get_output_dim(self):
        raise NotImplementedError('Abstract method')

    def _prepare_output(self, model, states):
        return states[self.get_output_state_index()]

    def _prepare_output_sequence(self, model, state_outputs):
        # state_outputs alternates every-step and last values per state.
        return state_outputs[2 * self.get_output_state_index()]


class LSTMInitializer(object):
    """Zero initial hidden and cell states, as parameters."""

    def __init__(self, hidden_size):
        self.hidden_size = hidden_size

    def create_states(self, model):
        return [
            model.create_param(param_name=name,
                               initializer=Initializer(operator_name='ConstantFill', value=0.0),
                               shape=[self.hidden_size])
            for name in ('initial_hidden_state', 'initial_cell_state')
        ]


def _mask_ended_rows(model, seq_lengths, timestep, hidden_t, hidden_t_prev, drop_states):
    """hidden_t where timestep < seq_lengths, else the previous state (or 0
    with drop_states), with broadcast ops: BasicRNNCell has no fused unit."""
    timestep = model.net.CopyFromCPUInput(timestep, 'timestep_gpu')
    valid_b = model.net.GT([seq_lengths, timestep], 'valid_b', broadcast=1)
    invalid_b = model.net.LE([seq_lengths, timestep], 'invalid_b', broadcast=1)
    valid = model.net.Cast(valid_b, 'valid', to='float')
    invalid = model.net.Cast(invalid_b, 'invalid', to='float')
    hidden_valid = model.net.Mul([hidden_t, valid], 'hidden_valid', broadcast=1, axis=1)
    if drop_states:
        return hidden_valid
    hidden_invalid = model.net.Mul([hidden_t_prev, invalid], 'hidden_invalid', broadcast=1,
                                   axis=1)
    return model.net.Add([hidden_valid, hidden_invalid], hidden_t)


class BasicRNNCell(RNNCell):
    """h_t = activation(W_i x_t + b_i + W_h h_{t-1} + b_h), activation 'relu'
    or 'tanh' (torch.nn.RNNCell)."""

    def __init__(self, input_size, hidden_size, forget_bias, memory_optimization,
                 drop_states=False, initializer=None, activation=None, **kwargs):
        super(BasicRNNCell, self).__init__(**kwargs)
        self.drop_states = drop_states
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.activation = activation
        if self.activation not in ('relu', 'tanh'):
            raise RuntimeError('BasicRNNCell with unknown activation function ({})'.format(
                self.activation))

    def apply_override(self, model, input_t, seq_lengths, states, timestep, extra_inputs=None):
        hidden_t_prev = states[0]
        gates_t = brew.fc(model, hidden_t_prev, 'gates_t', dim_in=self.hidden_size,
                          dim_out=self.hidden_size, axis=2)
        brew.sum(model, [gates_t, input_t], gates_t)
        if self.activation == 'tanh':
            hidden_t = model.net.Tanh(gates_t, 'hidden_t')
        else:
            hidden_t = model.net.Relu(gates_t, 'hidden_t')
        if seq_lengths is not None:
            hidden_t = _mask_ended_rows(model, seq_lengths, timestep, hidden_t, hidden_t_prev,
                                        self.drop_states)
        return (hidden_t,)

    def prepare_input(self, model, input_blob):
        return brew.fc(model, input_blob, self.scope('i2h'), dim_in=self.input_size,
                       dim_out=self.hidden_size, axis=2)

    def get_state_names(self):
        return (self.scope('hidden_t'),)

    def get_output_dim(self):
        return self.hidden_size


class LSTMCell(RNNCell):
    """The standard LSTM (LSTMUnit): gates from i2h (prepare_input, on the
    whole sequence) plus gates_t (the recurrent FC)."""

    def __init__(self, input_size, hidden_size, forget_bias, memory_optimization,
                 drop_states=False, initializer=None, **kwargs):
        super(LSTMCell, self).__init__(initializer=initializer, **kwargs)
        self.initializer = initializer or LSTMInitializer(hidden_size=hidden_size)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.forget_bias = float(forget_bias)
        self.memory_optimization = memory_optimization
        self.drop_states = drop_states
        self.gates_size = 4 * self.hidden_size

    def _gates_input(self, model, hidden_t_prev, extra_inputs, concat_name):
        if extra_inputs is None:
            return hidden_t_prev, self.hidden_size
        blobs, sizes = zip(*extra_inputs)
        fc_input = brew.concat(model, [hidden_t_prev] + list(blobs), concat_name, axis=2)
        return fc_input, self.hidden_size + sum(sizes)

    def apply_override(self, model, input_t, seq_lengths, states, timestep, extra_inputs=None):
        hidden_t_prev, cell_t_prev = states
        fc_input, fc_input_dim = self._gates_input(model, hidden_t_prev, extra_inputs,
                                                   'gates_concatenated_input_t')
        gates_t = brew.fc(model, fc_input, 'gates_t', dim_in=fc_input_dim,
                          dim_out=self.gates_size, axis=2)
        brew.sum(model, [gates_t, input_t], gates_t)
        if seq_lengths is not None:
            inputs = [hidden_t_prev, cell_t_prev, gates_t, seq_lengths, timestep]
        else:
            inputs = [hidden_t_prev, cell_t_prev, gates_t, timestep]
        hidden_t, cell_t = model.net.LSTMUnit(
            inputs, ['hidden_state', 'cell_state'], forget_bias=self.forget_bias,
            drop_states=self.drop_states, sequence_lengths=(seq_lengths is not None))
        model.net.AddExternalOutputs(hidden_t, cell_t)
        if self.memory_optimization:
            self.recompute_blobs = [gates_t]
        return hidden_t, cell_t

    def get_input_params(self):
        return {'weights': self.scope('i2h') + '_w', 'biases': self.scope('i2h') + '_b'}

    def get_recurrent_params(self):
        return {'weights': self.scope('gates_t') + '_w', 'biases': self.scope('gates_t') + '_b'}

    def prepare_input(self, model, input_blob):
        return brew.fc(model, input_blob, self.scope('i2h'), dim_in=self.input_size,
                       dim_out=self.gates_size, axis=2)

    def get_state_names_override(self):
        return ['hidden_t', 'cell_t']

    def get_output_dim(self):
        return self.hidden_size


class LayerNormLSTMCell(LSTMCell):
    """LSTMCell with layer normalization (brew.layer_norm, learned scale and
    bias) of the gate pre-activations."""

    def _apply(self, model, input_t, seq_lengths, states, timestep, extra_inputs=None):
        hidden_t_prev, cell_t_prev = states
        fc_input, fc_input_dim = self._gates_input(
            model, hidden_t_prev, extra_inputs, self.scope('gates_concatenated_input_t'))
        gates_t = brew.fc(model, fc_input, self.scope('gates_t'), dim_in=fc_input_dim,
                          dim_out=self.gates_size, axis=2)
        brew.sum(model, [gates_t, input_t], gates_t)
        gates_t, _, _ = brew.layer_norm(model, self.scope('gates_t'), self.scope('gates_t_norm'),
                                        dim_in=self.gates_size, axis=-1)
        hidden_t, cell_t = model.net.LSTMUnit(
            [hidden_t_prev, cell_t_prev, gates_t, seq_lengths, timestep],
            self.get_state_names(), forget_bias=self.forget_bias, drop_states=self.drop_states)
        model.net.AddExternalOutputs(hidden_t, cell_t)
        if self.memory_optimization:
            self.recompute_blobs = [gates_t]
        return hidden_t, cell_t


class MILSTMCell(LSTMCell):
    """Multiplicative-integration LSTM (Wu et al. 2016): the gates are
    alpha * x * h + beta_h * h + beta_i * x + b with x the input projection
    and h the recurrent one."""

    def _mi_gates(self, model, input_t, hidden_t_prev, extra_inputs):
        fc_input, fc_input_dim = self._gates_input(
            model, hidden_t_prev, extra_inputs, self.scope('gates_concatenated_input_t'))
        prev_t = brew.fc(model, fc_input, self.scope('prev_t'), dim_in=fc_input_dim,
                         dim_out=self.gates_size, axis=2)
        alpha, beta_h, beta_i, b = [
            model.create_param(self.scope(name), shape=[self.gates_size],
                               initializer=Initializer('ConstantFill', value=value))
            for name, value in (('alpha', 1.0), ('beta1', 1.0), ('beta2', 1.0), ('b', 0.0))]
        alpha_input_beta_h = model.net.ElementwiseLinear(
            [input_t, alpha, beta_h], self.scope('alpha_by_input_t_plus_beta_h'), axis=2)
        times_prev = model.net.Mul([alpha_input_beta_h, prev_t],
                                   self.scope('alpha_by_input_t_plus_beta_h_by_prev_t'))
        beta_i_input_b = model.net.ElementwiseLinear(
            [input_t, beta_i, b], self.scope('beta_i_by_input_t_plus_b'), axis=2)
        return brew.sum(model, [times_prev, beta_i_input_b], self.scope('gates_t'))

    def _mi_unit(self, model, hidden_t_prev, cell_t_prev, gates_t, seq_lengths, timestep):
        hidden_t, cell_t = model.net.LSTMUnit(
            [hidden_t_prev, cell_t_prev, gates_t, seq_lengths, timestep],
            [self.scope('hidden_t_intermediate'), self.scope('cell_t')],
            forget_bias=self.forget_bias, drop_states=self.drop_states)
        model.net.AddExternalOutputs(cell_t, hidden_t)
        if self.memory_optimization:
            self.recompute_blobs = [gates_t]
        return hidden_t, cell_t

    def _apply(self, model, input_t, seq_lengths, states, timestep, extra_inputs=None):
        hidden_t_prev, cell_t_prev = states
        gates_t = self._mi_gates(model, input_t, hidden_t_prev, extra_inputs)
        return self._mi_unit(model, hidden_t_prev, cell_t_prev, gates_t, seq_lengths, timestep)


class LayerNormMILSTMCell(MILSTMCell):
    """MILSTMCell with layer normalization of the gate pre-activations."""

    def _apply(self, model, input_t, seq_lengths, states, timestep, extra_inputs=None):
        hidden_t_prev, cell_t_prev = states
        self._mi_gates(model, input_t, hidden_t_prev, extra_inputs)
        gates_t, _, _ = brew.layer_norm(model, self.scope('gates_t'), self.scope('gates_t_norm'),
                                        dim_in=self.gates_size, axis=-1)
        return self._mi_unit(model, hidden_t_prev, cell_t_prev, gates_t, seq_lengths, timestep)


class DropoutCell(RNNCell):
    """Wraps a cell and applies dropout to its output (not to the recurrent
    connection). Needs is_test."""

    def __init__(self, internal_cell, dropout_ratio=None, use_cudnn=False, **kwargs):
        self.internal_cell = internal_cell
        self.dropout_ratio = dropout_ratio
        if 'is_test' not in kwargs:
            raise ValueError("DropoutCell: argument 'is_test' is required")
        self.is_test = kwargs.pop('is_test')
        self.use_cudnn = use_cudnn
        super(DropoutCell, self).__init__(**kwargs)
        self.prepare_input = internal_cell.prepare_input
        self.get_output_state_index = internal_cell.get_output_state_index
        self.get_state_names = internal_cell.get_state_names
        self.get_output_dim = internal_cell.get_output_dim
        self.mask = 0

    def _apply(self, model, input_t, seq_lengths, states, timestep, extra_inputs=None):
        return self.internal_cell._apply(model, input_t, seq_lengths, states, timestep,
                                         extra_inputs)

    def _prepare_output(self, model, states):
        output = self.internal_cell._prepare_output(model, states)
        return self._apply_dropout(model, output) if self.dropout_ratio is not None else output

    def _prepare_output_sequence(self, model, state_outputs):
        output = self.internal_cell._prepare_output_sequence(model, state_outputs)
        return self._apply_dropout(model, output) if self.dropout_ratio is not None else output

    def _apply_dropout(self, model, output):
        if self.dropout_ratio and not self.forward_only:
            with core.NameScope(self.name or ''):
                output = brew.dropout(
                    model, output, str(output) + '_with_dropout_mask{}'.format(self.mask),
                    ratio=float(self.dropout_ratio), is_test=self.is_test,
                    use_cudnn=self.use_cudnn)
                self.mask += 1
        return output


class MultiRNNCellInitializer(object):
    def __init__(self, cells):
        self.cells = cells

    def create_states(self, model):
        states = []
        for i, cell in enumerate(self.cells):
            if cell.initializer is None:
                raise ValueError('Either initial states or initializer have to be set')
            with core.NameScope('layer_{}'.format(i)), core.NameScope(cell.name):
                states.extend(cell.initializer.create_states(model))
        return states


class MultiRNNCell(RNNCell):
    """Stacked cells: each layer's output is the next one's input;
    residual_output_layers add a layer's input to its output (not layer 0)."""

    def __init__(self, cells, residual_output_layers=None, **kwargs):
        super(MultiRNNCell, self).__init__(**kwargs)
        self.cells = cells
        self.residual_output_layers = list(residual_output_layers or [])
        output_index_per_layer = []
        base_index = 0
        for cell in self.cells:
            output_index_per_layer.append(base_index + cell.get_output_state_index())
            base_index += len(cell.get_state_names())
        # The layers whose outputs sum into the cell's output: the last one
        # and the unbroken run of residual layers before it.
        self.output_connected_layers = []
        self.output_indices = []
        for i in range(len(self.cells) - 1):
            if (i + 1) in self.residual_output_layers:
                self.output_connected_layers.append(i)
                self.output_indices.append(output_index_per_layer[i])
            else:
                self.output_connected_layers = []
                self.output_indices = []
        self.output_connected_layers.append(len(self.cells) - 1)
        self.output_indices.append(output_index_per_layer[-1])
        self.state_names = []
        for i, cell in enumerate(self.cells):
            self.state_names.extend(map(self.layer_scoper(i), cell.get_state_names()))
        self.initializer = MultiRNNCellInitializer(cells)

    def layer_scoper(self, layer_id):
        def helper(name):
            return '{}/layer_{}/{}'.format(self.name, layer_id, name)
        return helper

    def prepare_input(self, model, input_blob):
        input_blob = _RectifyName(input_blob)
        with core.NameScope(self.name or ''):
            return self.cells[0].prepare_input(model, input_blob)

    def _apply(self, model, input_t, seq_lengths, states, timestep, extra_inputs=None):
        input_t, seq_lengths, states, timestep, extra_inputs = self._rectify_apply_inputs(
            input_t, seq_lengths, states, timestep, extra_inputs)
        states_per_layer = [len(cell.get_state_names()) for cell in self.cells]
        if len(states) != sum(states_per_layer):
            raise ValueError('MultiRNNCell: {} states given, the layers have {}'.format(
                len(states), sum(states_per_layer)))
        next_states = []
        states_index = 0
        layer_input = input_t
        for i, layer_cell in enumerate(self.cells):
            with core.NameScope(self.name), core.NameScope('layer_{}'.format(i)):
                layer_states = states[states_index:states_index + states_per_layer[i]]
                states_index += states_per_layer[i]
                prepared = layer_cell.prepare_input(model, layer_input) if i > 0 else layer_input
                layer_next_states = layer_cell._apply(
                    model, prepared, seq_lengths, layer_states, timestep,
                    extra_inputs=(None if i > 0 else extra_inputs))
                if i != len(self.cells) - 1:
                    layer_output = layer_cell._prepare_output(model, layer_next_states)
                    if i > 0 and i in self.residual_output_layers:
                        layer_input = brew.sum(model, [layer_output, layer_input],
                                               self.scope('residual_output_{}'.format(i)))
                    else:
                        layer_input = layer_output
                next_states.extend(layer_next_states)
        return next_states

    def get_state_names(self):
        return self.state_names

    def get_output_state_index(self):
        index = sum(len(cell.get_state_names()) for cell in self.cells[:-1])
        return index + self.cells[-1].get_output_state_index()

    def _connected_outputs(self, model, states, per_state, prepare, name):
        outputs = []
        index = 0
        for i, cell in enumerate(self.cells):
            count = per_state * len(cell.get_state_names())
            if i in self.output_connected_layers:
                outputs.append(prepare(cell)(model, states[index:index + count]))
            index += count
        if len(outputs) > 1:
            return brew.sum(model, outputs, self.scope(name))
        return outputs[0]

    def _prepare_output(self, model, states):
        return self._connected_outputs(model, states, 1, lambda c: c._prepare_output,
                                       'residual_output')

    def _prepare_output_sequence(self, model, states):
        return self._connected_outputs(model, states, 2, lambda c: c._prepare_output_sequence,
                                       'residual_output_sequence')


class UnrolledCell(RNNCell):
    """Runs a cell T times in the main net (no RecurrentNetwork op), sharing
    the parameters of every step."""

    def __init__(self, cell, T):
        self.T = T
        self.cell = cell

    def apply_over_sequence(self, model, inputs, seq_lengths, initial_states,
                            outputs_with_grads=None):
        from doppio.modeling.parameter_sharing import ParameterSharing
        inputs = self.cell.prepare_input(model, inputs)
        split_inputs = model.net.Split(
            inputs, [str(inputs) + '_timestep_{}'.format(i) for i in range(self.T)], axis=0)
        if self.T == 1:
            split_inputs = [split_inputs]
        states = initial_states
        all_states = []
        for t in range(self.T):
            scope_name = 'timestep_{}'.format(t)
            with ParameterSharing({scope_name: ''}), scope.NameScope(scope_name):
                timestep = model.param_init_net.ConstantFill(
                    [], 'timestep', value=t, shape=[1], dtype=core.DataType.INT32,
                    device_option=core.DeviceOption(caffe2_pb2.CPU))
                states = self.cell._apply(model=model, input_t=split_inputs[t],
                                          seq_lengths=seq_lengths, states=states,
                                          timestep=timestep)
            all_states.append(states)
        prefix = len('timestep_0/')
        all_states = [
            model.net.Concat(list(full), [str(full[0])[prefix:] + '_concat',
                                          str(full[0])[prefix:] + '_concat_info'], axis=0)[0]
            for full in zip(*all_states)
        ]
        # (state_1_all, state_1_last, ...), as RecurrentNetwork's outputs.
        outputs = tuple(itertools.chain.from_iterable(zip(all_states, states)))
        without_grad = set(range(len(outputs))) - set(outputs_with_grads or [])
        for i in sorted(without_grad):
            model.net.ZeroGradient(outputs[i], [])
        logging.debug('Added 0 gradients for blobs: %s', [outputs[i] for i in without_grad])
        return self.cell._prepare_output_sequence(model, outputs), outputs

// LSTMUnit: one LSTM step over fused gate pre-activations, sequence-length
// aware (Caffe2's op, the cell RecurrentNetwork runs for rnn_cell.LSTM);
// LSTMUnitGradient its gradient.
//
// Gates X are [1, N, 4D] in the order input, forget, output, cell (i, f, o,
// g): c = sigmoid(f + forget_bias) * c_prev + sigmoid(i) * tanh(g),
// h = sigmoid(o) * tanh(c). A batch row whose sequence has ended (t >=
// seq_lengths[n]) keeps its previous state, or zeros with drop_states.
#pragma once

#include "core/operator.h"

namespace doppio {

// Inputs hidden_prev [1, N, D], cell_prev [1, N, D], gates [1, N, 4D],
// seq_lengths [N] int32 (left out when sequence_lengths is false), timestep
// (int32 scalar, on the host). Outputs hidden, cell.
class LSTMUnitOp final : public Operator<CPUContext> {
 public:
  LSTMUnitOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  float forget_bias_;
  bool sequence_lengths_;
  bool drop_states_;
};

// Inputs: LSTMUnit's inputs, then hidden, cell, hidden_grad, cell_grad.
// Outputs: gradients of hidden_prev, cell_prev, gates. (hidden_prev reaches
// the cell only through the gates, computed outside the unit: its gradient
// here is non-zero only for rows whose sequence has ended.)
class LSTMUnitGradientOp final : public Operator<CPUContext> {
 public:
  LSTMUnitGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  float forget_bias_;
  bool sequence_lengths_;
  bool drop_states_;
};

}  // namespace doppio

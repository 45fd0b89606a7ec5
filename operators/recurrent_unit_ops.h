// Fused recurrent cell steps, sequence-length aware (Caffe2's ops, the cells
// RecurrentNetwork runs for rnn_cell.LSTM and gru_cell.GRU), and their
// gradients.
//
// LSTMUnit:
// Gates X are [1, N, 4D] in the order input, forget, output, cell (i, f, o,
// g): c = sigmoid(f + forget_bias) * c_prev + sigmoid(i) * tanh(g),
// h = sigmoid(o) * tanh(c). A batch row whose sequence has ended (t >=
// seq_lengths[n]) keeps its previous state, or zeros with drop_states.
//
// GRUUnit: gates X are [1, N, 3D] in the order reset, update, output, the
// reset gate already applied (gru_cell does that in the graph):
// u = sigmoid(update), h = u * h_prev + (1 - u) * tanh(output).
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

// Inputs hidden_prev [1, N, D], gates [1, N, 3D], seq_lengths (unless
// sequence_lengths is false), timestep. Output hidden.
class GRUUnitOp final : public Operator<CPUContext> {
 public:
  GRUUnitOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  bool sequence_lengths_;
  bool drop_states_;
};

// Inputs: GRUUnit's inputs, hidden, hidden_grad. Outputs: gradients of
// hidden_prev and of the gates (the reset gate's is zero: it acts before
// the unit).
class GRUUnitGradientOp final : public Operator<CPUContext> {
 public:
  GRUUnitGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  bool sequence_lengths_;
  bool drop_states_;
};

}  // namespace doppio

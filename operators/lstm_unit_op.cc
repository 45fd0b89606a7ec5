#include "operators/lstm_unit_op.h"

#include <cmath>
#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {

namespace {

float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// Sizes and per-row validity shared by the op and its gradient.
struct LSTMUnitGeometry {
  int64_t batch = 0;
  int64_t depth = 0;
  int timestep = 0;
  const int32_t* seq_lengths = nullptr;  // null: every row is valid
  bool Valid(int64_t n) const { return seq_lengths == nullptr || timestep < seq_lengths[n]; }
};

// Inputs 0..2 are hidden_prev, cell_prev, gates; then seq_lengths (if
// `with_lengths`) and the timestep.
LSTMUnitGeometry ReadGeometry(const OperatorBase& op, const Tensor& hidden_prev,
                              const Tensor& cell_prev, const Tensor& gates,
                              const Tensor* seq_lengths, const Tensor& timestep) {
  DOPPIO_ENFORCE(cell_prev.ndim() == 3 && cell_prev.dtype() == DataType::kFloat, "cell_prev '",
                 op.input_name(1), "' must be float32 [1, N, D], not ", cell_prev.DebugString());
  LSTMUnitGeometry geometry;
  geometry.batch = cell_prev.dim(1);
  geometry.depth = cell_prev.dim(2);
  DOPPIO_ENFORCE(hidden_prev.dims() == cell_prev.dims() && hidden_prev.dtype() == DataType::kFloat,
                 "hidden_prev '", op.input_name(0), "' ", hidden_prev.DebugString(),
                 " must match cell_prev ", cell_prev.DebugString());
  DOPPIO_ENFORCE(gates.ndim() == 3 && gates.dtype() == DataType::kFloat &&
                     gates.dim(1) == geometry.batch && gates.dim(2) == 4 * geometry.depth,
                 "gates '", op.input_name(2), "' must be float32 [1, ", geometry.batch, ", ",
                 4 * geometry.depth, "] (4 gates of cell_prev's depth), not ", gates.DebugString());
  DOPPIO_ENFORCE(timestep.dtype() == DataType::kInt32 && timestep.numel() == 1,
                 "the timestep must be one int32, not ", timestep.DebugString());
  geometry.timestep = timestep.data<int32_t>()[0];
  if (seq_lengths != nullptr) {
    DOPPIO_ENFORCE(
        seq_lengths->dtype() == DataType::kInt32 && seq_lengths->numel() == geometry.batch,
        "seq_lengths '", op.input_name(3), "' must be int32 with one length per row (",
        geometry.batch, "), not ", seq_lengths->DebugString());
    geometry.seq_lengths = seq_lengths->data<int32_t>();
  }
  return geometry;
}

// The LSTM step of one row.
void LSTMRow(int64_t depth, float forget_bias, const float* x, const float* c_prev, float* h,
             float* c) {
  for (int64_t d = 0; d < depth; ++d) {
    const float i = Sigmoid(x[d]);
    const float f = Sigmoid(x[depth + d] + forget_bias);
    const float o = Sigmoid(x[2 * depth + d]);
    const float g = std::tanh(x[3 * depth + d]);
    c[d] = f * c_prev[d] + i * g;
    h[d] = o * std::tanh(c[d]);
  }
}

// Its gradient: dc, dh of the row's outputs to dc_prev and dx.
void LSTMRowGradient(int64_t depth, float forget_bias, const float* x, const float* c_prev,
                     const float* c, const float* dh, const float* dc, float* dc_prev, float* dx) {
  for (int64_t d = 0; d < depth; ++d) {
    const float i = Sigmoid(x[d]);
    const float f = Sigmoid(x[depth + d] + forget_bias);
    const float o = Sigmoid(x[2 * depth + d]);
    const float g = std::tanh(x[3 * depth + d]);
    const float tanh_c = std::tanh(c[d]);
    const float dc_total = dc[d] + dh[d] * o * (1 - tanh_c * tanh_c);
    dc_prev[d] = dc_total * f;
    dx[d] = dc_total * g * i * (1 - i);
    dx[depth + d] = dc_total * c_prev[d] * f * (1 - f);
    dx[2 * depth + d] = dh[d] * tanh_c * o * (1 - o);
    dx[3 * depth + d] = dc_total * i * (1 - g * g);
  }
}

}  // namespace

LSTMUnitOp::LSTMUnitOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      forget_bias_(GetSingleArgument<float>("forget_bias", 0.0f)),
      sequence_lengths_(GetSingleArgument<bool>("sequence_lengths", true)),
      drop_states_(GetSingleArgument<bool>("drop_states", false)) {
  DOPPIO_ENFORCE_EQ(InputSize(), sequence_lengths_ ? 5 : 4,
                    "inputs: hidden_prev, cell_prev, gates, ",
                    sequence_lengths_ ? "seq_lengths, " : "", "timestep");
}

void LSTMUnitOp::RunOnDevice() {
  const Tensor& hidden_prev = Input(0);
  const Tensor& cell_prev = Input(1);
  const Tensor& gates = Input(2);
  const LSTMUnitGeometry geo =
      ReadGeometry(*this, hidden_prev, cell_prev, gates, sequence_lengths_ ? &Input(3) : nullptr,
                   Input(sequence_lengths_ ? 4 : 3));
  const int64_t depth = geo.depth;
  // Outputs may be views into the states (RecurrentNetwork's links).
  Tensor* hidden = Output(0);
  Tensor* cell = Output(1);
  hidden->ResizeLike(cell_prev);
  cell->ResizeLike(cell_prev);
  float* h = hidden->mutable_data<float>();
  float* c = cell->mutable_data<float>();
  const float* h_prev = hidden_prev.data<float>();
  const float* c_prev = cell_prev.data<float>();
  const float* x = gates.data<float>();
  for (int64_t n = 0; n < geo.batch; ++n) {
    const int64_t row = n * depth;
    if (geo.Valid(n)) {
      LSTMRow(depth, forget_bias_, x + 4 * row, c_prev + row, h + row, c + row);
      continue;
    }
    for (int64_t d = 0; d < depth; ++d) {
      h[row + d] = drop_states_ ? 0.0f : h_prev[row + d];
      c[row + d] = drop_states_ ? 0.0f : c_prev[row + d];
    }
  }
}

LSTMUnitGradientOp::LSTMUnitGradientOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      forget_bias_(GetSingleArgument<float>("forget_bias", 0.0f)),
      sequence_lengths_(GetSingleArgument<bool>("sequence_lengths", true)),
      drop_states_(GetSingleArgument<bool>("drop_states", false)) {
  DOPPIO_ENFORCE_EQ(InputSize(), sequence_lengths_ ? 9 : 8,
                    "inputs: LSTMUnit's inputs, hidden, cell, hidden_grad, cell_grad");
}

void LSTMUnitGradientOp::RunOnDevice() {
  const int base = sequence_lengths_ ? 5 : 4;
  const Tensor& hidden_prev = Input(0);
  const Tensor& cell_prev = Input(1);
  const Tensor& gates = Input(2);
  const LSTMUnitGeometry geo =
      ReadGeometry(*this, hidden_prev, cell_prev, gates, sequence_lengths_ ? &Input(3) : nullptr,
                   Input(base - 1));
  const Tensor& cell = Input(base + 1);
  const Tensor& hidden_grad = Input(base + 2);
  const Tensor& cell_grad = Input(base + 3);
  for (const Tensor* t : {&cell, &hidden_grad, &cell_grad}) {
    DOPPIO_ENFORCE(t->dims() == cell_prev.dims() && t->dtype() == DataType::kFloat,
                   "cell, hidden_grad and cell_grad must be float32 ", cell_prev.dims(), ", not ",
                   t->DebugString());
  }
  Tensor* hidden_prev_grad = Output(0);
  Tensor* cell_prev_grad = Output(1);
  Tensor* gates_grad = Output(2);
  hidden_prev_grad->ResizeLike(hidden_prev);
  cell_prev_grad->ResizeLike(cell_prev);
  gates_grad->ResizeLike(gates);
  float* dh_prev = hidden_prev_grad->mutable_data<float>();
  float* dc_prev = cell_prev_grad->mutable_data<float>();
  float* dx = gates_grad->mutable_data<float>();
  const float* dh = hidden_grad.data<float>();
  const float* dc = cell_grad.data<float>();
  const int64_t depth = geo.depth;
  for (int64_t n = 0; n < geo.batch; ++n) {
    const int64_t row = n * depth;
    if (geo.Valid(n)) {
      LSTMRowGradient(depth, forget_bias_, gates.data<float>() + 4 * row,
                      cell_prev.data<float>() + row, cell.data<float>() + row, dh + row, dc + row,
                      dc_prev + row, dx + 4 * row);
      for (int64_t d = 0; d < depth; ++d) dh_prev[row + d] = 0.0f;
      continue;
    }
    // An ended row passed its state through (or dropped it).
    for (int64_t d = 0; d < depth; ++d) {
      dh_prev[row + d] = drop_states_ ? 0.0f : dh[row + d];
      dc_prev[row + d] = drop_states_ ? 0.0f : dc[row + d];
    }
    for (int64_t d = 0; d < 4 * depth; ++d) dx[4 * row + d] = 0.0f;
  }
}

REGISTER_CPU_OPERATOR(LSTMUnit, LSTMUnitOp);
REGISTER_CPU_OPERATOR(LSTMUnitGradient, LSTMUnitGradientOp);

namespace {
constexpr const char kSequenceLengthsDoc[] =
    "(bool, default true) whether the seq_lengths input is given; without it every row is "
    "valid and the timestep input moves up by one";
}  // namespace

OPERATOR_SCHEMA(LSTMUnit)
    .NumInputs(4, 5)
    .NumOutputs(2)
    .Arg("forget_bias", "(float, default 0) added to the forget gate's pre-activation")
    .Arg("sequence_lengths", kSequenceLengthsDoc)
    .Arg("drop_states",
         "(bool, default false) ended rows get zero states instead of "
         "keeping their previous ones")
    .Input(0, "hidden_prev", "previous hidden state, float32 [1, N, D]")
    .Input(1, "cell_prev", "previous cell state, float32 [1, N, D]")
    .Input(2, "gates", "gate pre-activations [1, N, 4D] in the order i, f, o, g")
    .Input(3, "seq_lengths", "int32 [N] (only with sequence_lengths), then the int32 timestep")
    .Output(0, "hidden", "hidden state [1, N, D]")
    .Output(1, "cell", "cell state [1, N, D]")
    .Doc(
        "One LSTM step (no peepholes): c = sigmoid(f + forget_bias) * c_prev + sigmoid(i) * "
        "tanh(g), h = sigmoid(o) * tanh(c); rows whose sequence has ended (timestep >= "
        "seq_lengths[n]) keep their previous state, or get zeros with drop_states.");

OPERATOR_SCHEMA(LSTMUnitGradient)
    .NumInputs(8, 9)
    .NumOutputs(3)
    .Arg("forget_bias", "as LSTMUnit's")
    .Arg("sequence_lengths", kSequenceLengthsDoc)
    .Arg("drop_states", "as LSTMUnit's")
    .Input(0, "inputs", "LSTMUnit's inputs, then hidden, cell, hidden_grad, cell_grad")
    .Output(0, "hidden_prev_grad", "gradient of hidden_prev (non-zero only for ended rows)")
    .Output(1, "cell_prev_grad", "gradient of cell_prev")
    .Output(2, "gates_grad", "gradient of the gates")
    .Doc("Gradient of LSTMUnit.");

namespace {

class GetLSTMUnitGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    std::vector<std::string> inputs;
    for (int i = 0; i < Def().input_size(); ++i) inputs.push_back(I(i));
    for (const auto& name : {O(0), O(1), GO(0), GO(1)}) inputs.push_back(name);
    return SingleGradientDef("LSTMUnitGradient", "", inputs, {GI(0), GI(1), GI(2)}, Def().arg());
  }
};

}  // namespace

REGISTER_GRADIENT(LSTMUnit, GetLSTMUnitGradient);
SHOULD_NOT_DO_GRADIENT(LSTMUnitGradient,
                       "it is a gradient op; second derivatives are not supported");

}  // namespace doppio

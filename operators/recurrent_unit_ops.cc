#include "operators/recurrent_unit_ops.h"

#include <cmath>
#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/recurrent_network_op.h"

namespace doppio {

namespace {

float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// Sizes and per-row validity shared by the ops and their gradients.
struct UnitGeometry {
  int64_t batch = 0;
  int64_t depth = 0;
  int timestep = 0;
  const int32_t* seq_lengths = nullptr;  // null: every row is valid
  bool Valid(int64_t n) const { return seq_lengths == nullptr || timestep < seq_lengths[n]; }
};

// Checks a unit's inputs: the [1, N, D] state its gates belong to (input
// `state_index`), the gates [1, N, gate_count * D] (input `gates_index`),
// seq_lengths (input `lengths_index`, when given) and the timestep, which
// follows them.
UnitGeometry ReadGeometry(const OperatorBase& op, int state_index, int gates_index, int gate_count,
                          bool with_lengths, int lengths_index) {
  const Tensor& state = op.InputBlob(state_index).GetTensor();
  const Tensor& gates = op.InputBlob(gates_index).GetTensor();
  DOPPIO_ENFORCE(state.ndim() == 3 && state.dtype() == DataType::kFloat, "'",
                 op.input_name(state_index), "' must be float32 [1, N, D], not ",
                 state.DebugString());
  UnitGeometry geometry;
  geometry.batch = state.dim(1);
  geometry.depth = state.dim(2);
  DOPPIO_ENFORCE(gates.ndim() == 3 && gates.dtype() == DataType::kFloat &&
                     gates.dim(1) == geometry.batch && gates.dim(2) == gate_count * geometry.depth,
                 "gates '", op.input_name(gates_index), "' must be float32 [1, ", geometry.batch,
                 ", ", gate_count * geometry.depth, "] (", gate_count, " gates of depth ",
                 geometry.depth, "), not ", gates.DebugString());
  const int timestep_index = with_lengths ? lengths_index + 1 : lengths_index;
  geometry.timestep =
      rnn::ReadTimestep(op, timestep_index, op.InputBlob(timestep_index).GetTensor());
  if (with_lengths) {
    const Tensor& lengths = op.InputBlob(lengths_index).GetTensor();
    DOPPIO_ENFORCE(lengths.dtype() == DataType::kInt32 && lengths.numel() == geometry.batch,
                   "seq_lengths '", op.input_name(lengths_index),
                   "' must be int32 with one length per row (", geometry.batch, "), not ",
                   lengths.DebugString());
    geometry.seq_lengths = lengths.data<int32_t>();
  }
  return geometry;
}

// LSTMUnit's (and its gradient's) first inputs: hidden_prev, cell_prev,
// gates, [seq_lengths,] timestep.
UnitGeometry ReadLSTMGeometry(const OperatorBase& op, bool with_lengths) {
  const Tensor& hidden_prev = op.InputBlob(0).GetTensor();
  const Tensor& cell_prev = op.InputBlob(1).GetTensor();
  DOPPIO_ENFORCE(hidden_prev.dims() == cell_prev.dims() && hidden_prev.dtype() == DataType::kFloat,
                 "hidden_prev '", op.input_name(0), "' ", hidden_prev.DebugString(),
                 " must match cell_prev ", cell_prev.DebugString());
  return ReadGeometry(op, 1, 2, 4, with_lengths, 3);
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

// The GRU step of one row (the reset gate was applied before the unit).
void GRURow(int64_t depth, const float* x, const float* h_prev, float* h) {
  for (int64_t d = 0; d < depth; ++d) {
    const float u = Sigmoid(x[depth + d]);
    h[d] = u * h_prev[d] + (1 - u) * std::tanh(x[2 * depth + d]);
  }
}

void GRURowGradient(int64_t depth, const float* x, const float* h_prev, const float* dh,
                    float* dh_prev, float* dx) {
  for (int64_t d = 0; d < depth; ++d) {
    const float u = Sigmoid(x[depth + d]);
    const float o = std::tanh(x[2 * depth + d]);
    dh_prev[d] = dh[d] * u;
    dx[d] = 0.0f;
    dx[depth + d] = dh[d] * (h_prev[d] - o) * u * (1 - u);
    dx[2 * depth + d] = dh[d] * (1 - u) * (1 - o * o);
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
  const UnitGeometry geo = ReadLSTMGeometry(*this, sequence_lengths_);
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
  const UnitGeometry geo = ReadLSTMGeometry(*this, sequence_lengths_);
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

GRUUnitOp::GRUUnitOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      sequence_lengths_(GetSingleArgument<bool>("sequence_lengths", true)),
      drop_states_(GetSingleArgument<bool>("drop_states", false)) {
  DOPPIO_ENFORCE_EQ(InputSize(), sequence_lengths_ ? 4 : 3, "inputs: hidden_prev, gates, ",
                    sequence_lengths_ ? "seq_lengths, " : "", "timestep");
}

void GRUUnitOp::RunOnDevice() {
  const Tensor& hidden_prev = Input(0);
  const Tensor& gates = Input(1);
  const UnitGeometry geo = ReadGeometry(*this, 0, 1, 3, sequence_lengths_, 2);
  Tensor* hidden = Output(0);
  hidden->ResizeLike(hidden_prev);
  float* h = hidden->mutable_data<float>();
  const float* h_prev = hidden_prev.data<float>();
  const int64_t depth = geo.depth;
  for (int64_t n = 0; n < geo.batch; ++n) {
    const int64_t row = n * depth;
    if (geo.Valid(n)) {
      GRURow(depth, gates.data<float>() + 3 * row, h_prev + row, h + row);
      continue;
    }
    for (int64_t d = 0; d < depth; ++d) h[row + d] = drop_states_ ? 0.0f : h_prev[row + d];
  }
}

GRUUnitGradientOp::GRUUnitGradientOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      sequence_lengths_(GetSingleArgument<bool>("sequence_lengths", true)),
      drop_states_(GetSingleArgument<bool>("drop_states", false)) {
  DOPPIO_ENFORCE_EQ(InputSize(), sequence_lengths_ ? 6 : 5,
                    "inputs: GRUUnit's inputs, hidden, hidden_grad");
}

void GRUUnitGradientOp::RunOnDevice() {
  const int base = sequence_lengths_ ? 4 : 3;
  const Tensor& hidden_prev = Input(0);
  const Tensor& gates = Input(1);
  const UnitGeometry geo = ReadGeometry(*this, 0, 1, 3, sequence_lengths_, 2);
  const Tensor& hidden_grad = Input(base + 1);
  DOPPIO_ENFORCE(
      hidden_grad.dims() == hidden_prev.dims() && hidden_grad.dtype() == DataType::kFloat,
      "hidden_grad '", input_name(base + 1), "' must be float32 ", hidden_prev.dims(), ", not ",
      hidden_grad.DebugString());
  Tensor* hidden_prev_grad = Output(0);
  Tensor* gates_grad = Output(1);
  hidden_prev_grad->ResizeLike(hidden_prev);
  gates_grad->ResizeLike(gates);
  float* dh_prev = hidden_prev_grad->mutable_data<float>();
  float* dx = gates_grad->mutable_data<float>();
  const float* dh = hidden_grad.data<float>();
  const int64_t depth = geo.depth;
  for (int64_t n = 0; n < geo.batch; ++n) {
    const int64_t row = n * depth;
    if (geo.Valid(n)) {
      GRURowGradient(depth, gates.data<float>() + 3 * row, hidden_prev.data<float>() + row,
                     dh + row, dh_prev + row, dx + 3 * row);
      continue;
    }
    for (int64_t d = 0; d < depth; ++d) dh_prev[row + d] = drop_states_ ? 0.0f : dh[row + d];
    for (int64_t d = 0; d < 3 * depth; ++d) dx[3 * row + d] = 0.0f;
  }
}

REGISTER_CPU_OPERATOR(LSTMUnit, LSTMUnitOp);
REGISTER_CPU_OPERATOR(GRUUnit, GRUUnitOp);
REGISTER_CPU_OPERATOR(GRUUnitGradient, GRUUnitGradientOp);
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

OPERATOR_SCHEMA(GRUUnit)
    .NumInputs(3, 4)
    .NumOutputs(1)
    .Arg("sequence_lengths", kSequenceLengthsDoc)
    .Arg("drop_states",
         "(bool, default false) ended rows get a zero state instead of "
         "keeping their previous one")
    .Arg("forget_bias", "accepted for Caffe2 nets and unused, as in Caffe2")
    .Input(0, "hidden_prev", "previous hidden state, float32 [1, N, D]")
    .Input(1, "gates",
           "gate pre-activations [1, N, 3D] in the order reset, update, output "
           "(the reset gate already applied to the output gate's input)")
    .Input(2, "seq_lengths", "int32 [N] (only with sequence_lengths), then the int32 timestep")
    .Output(0, "hidden", "hidden state [1, N, D]")
    .Doc(
        "One GRU step: u = sigmoid(update), h = u * h_prev + (1 - u) * tanh(output); rows "
        "whose sequence has ended keep their previous state, or get zeros with drop_states.");

OPERATOR_SCHEMA(GRUUnitGradient)
    .NumInputs(5, 6)
    .NumOutputs(2)
    .Arg("sequence_lengths", kSequenceLengthsDoc)
    .Arg("drop_states", "as GRUUnit's")
    .Input(0, "inputs", "GRUUnit's inputs, then hidden and hidden_grad")
    .Output(0, "hidden_prev_grad", "gradient of hidden_prev")
    .Output(1, "gates_grad", "gradient of the gates (zero for the reset gate)")
    .Doc("Gradient of GRUUnit.");

namespace {

class GetGRUUnitGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    std::vector<std::string> inputs;
    for (int i = 0; i < Def().input_size(); ++i) inputs.push_back(I(i));
    inputs.push_back(O(0));
    inputs.push_back(GO(0));
    return SingleGradientDef("GRUUnitGradient", "", inputs, {GI(0), GI(1)}, Def().arg());
  }
};

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
REGISTER_GRADIENT(GRUUnit, GetGRUUnitGradient);
SHOULD_NOT_DO_GRADIENT(GRUUnitGradient,
                       "it is a gradient op; second derivatives are not supported");
SHOULD_NOT_DO_GRADIENT(LSTMUnitGradient,
                       "it is a gradient op; second derivatives are not supported");

}  // namespace doppio

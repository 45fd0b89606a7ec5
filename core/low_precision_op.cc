#include "core/low_precision_op.h"

#include <cstring>
#include <utility>

#include "core/enforce.h"
#include "core/workspace.h"

namespace doppio {
namespace {

// Widening float16 by lookup: the scalar conversion branches on every
// element, the table is 256 KiB and built once.
const float* HalfTable() {
  static const float* table = [] {
    auto* values = new float[1 << 16];
    for (uint32_t bits = 0; bits < (1u << 16); ++bits) {
      values[bits] = HalfToFloat(float16{static_cast<uint16_t>(bits)});
    }
    return values;
  }();
  return table;
}

}  // namespace

void WidenToFloat(const Tensor& in, Tensor* out) {
  DOPPIO_ENFORCE(IsLowPrecision(in.dtype()), "expected a float16 or bfloat16 tensor, got ",
                 DataTypeName(in.dtype()));
  out->Resize(in.dims());
  float* dst = out->mutable_data<float>();
  const int64_t n = in.numel();
  const auto* src = static_cast<const uint16_t*>(in.raw_data());
  if (in.dtype() == DataType::kBFloat16) {
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t bits = static_cast<uint32_t>(src[i]) << 16;
      std::memcpy(dst + i, &bits, sizeof(bits));
    }
  } else {
    const float* table = HalfTable();
    for (int64_t i = 0; i < n; ++i) dst[i] = table[src[i]];
  }
}

void NarrowFromFloat(const Tensor& in, DataType low, Tensor* out) {
  DOPPIO_ENFORCE(IsLowPrecision(low), "cannot narrow to ", DataTypeName(low));
  DOPPIO_ENFORCE(in.dtype() == DataType::kFloat, "expected a float32 tensor, got ",
                 DataTypeName(in.dtype()));
  out->Resize(in.dims());
  const float* src = in.data<float>();
  const int64_t n = in.numel();
  if (low == DataType::kBFloat16) {
    bfloat16* dst = out->mutable_data<bfloat16>();
    for (int64_t i = 0; i < n; ++i) dst[i] = FloatToBFloat16(src[i]);
  } else {
    float16* dst = out->mutable_data<float16>();
    for (int64_t i = 0; i < n; ++i) dst[i] = FloatToHalf(src[i]);
  }
}

LowPrecisionOp::LowPrecisionOp(const OperatorDef& def, Workspace* workspace, Creator creator,
                               std::set<int> float32_outputs)
    : OperatorBase(def, workspace),
      creator_(std::move(creator)),
      float32_outputs_(std::move(float32_outputs)),
      direct_(creator_(def, workspace)) {}

LowPrecisionOp::~LowPrecisionOp() = default;

DataType LowPrecisionOp::LowInputType() const {
  DataType low = DataType::kFloat;
  for (int i = 0; i < InputSize(); ++i) {
    const Blob& blob = InputBlob(i);
    if (!blob.IsTensor() || !IsLowPrecision(blob.GetTensor().dtype())) continue;
    const DataType dtype = blob.GetTensor().dtype();
    DOPPIO_ENFORCE(low == DataType::kFloat || low == dtype, "inputs mix float16 and bfloat16 ('",
                   input_name(i), "' is ", DataTypeName(dtype), ")");
    low = dtype;
  }
  return low;
}

std::string LowPrecisionOp::RandomState() const {
  return ran_widened_ ? widened_->RandomState() : direct_->RandomState();
}

void LowPrecisionOp::SetRandomState(const std::string& state) {
  direct_->SetRandomState(state);
  if (widened_) widened_->SetRandomState(state);
  restored_state_ = state;
}

void LowPrecisionOp::Run() {
  const DataType low = LowInputType();
  ran_widened_ = low != DataType::kFloat;
  if (!ran_widened_) {
    direct_->Run();
    return;
  }
  RunWidened(low);
}

void LowPrecisionOp::RunWidened(DataType low) {
  if (!widened_) {
    shadow_ = std::make_unique<Workspace>();
    for (int i = 0; i < InputSize(); ++i) shadow_inputs_.push_back(shadow_->CreateBlob(input_name(i)));
    for (int j = 0; j < OutputSize(); ++j) {
      shadow_outputs_.push_back(shadow_->CreateBlob(output_name(j)));
    }
    widened_ = creator_(def(), shadow_.get());
    if (!restored_state_.empty()) widened_->SetRandomState(restored_state_);
  }
  std::set<const Blob*> widened_inputs;
  for (int i = 0; i < InputSize(); ++i) {
    const Blob& real = InputBlob(i);
    DOPPIO_ENFORCE(real.IsTensor(), "input ", i, " ('", input_name(i),
                   "') should be a tensor but holds ", real.TypeName());
    Tensor* shadow = shadow_inputs_[i]->GetMutableTensor();
    if (IsLowPrecision(real.GetTensor().dtype())) {
      WidenToFloat(real.GetTensor(), shadow);
      widened_inputs.insert(shadow_inputs_[i]);
    } else {
      shadow->ShareData(real.GetTensor());
    }
  }
  widened_->Run();
  for (int j = 0; j < OutputSize(); ++j) {
    const Tensor& result = shadow_outputs_[j]->GetTensor();
    Tensor* real = OutputBlob(j)->GetMutableTensor();
    bool in_place_over_float = false;
    for (int i = 0; i < InputSize(); ++i) {
      if (shadow_inputs_[i] == shadow_outputs_[j] && !widened_inputs.count(shadow_inputs_[i])) {
        in_place_over_float = true;
      }
    }
    if (result.dtype() != DataType::kFloat || in_place_over_float ||
        float32_outputs_.count(j)) {
      // Not narrowed: share the kernel's result unless it already is the
      // real blob's storage (in place over a shared float input).
      if (!real->SharesStorageWith(result) || real->dims() != result.dims()) {
        real->CopyFrom(result);
      }
    } else {
      NarrowFromFloat(result, low, real);
    }
  }
  // The float32 copies live only during the run: keeping them would hold
  // twice the memory the low-precision model saves.
  for (Blob* blob : shadow_inputs_) blob->GetMutableTensor()->Reset();
  for (Blob* blob : shadow_outputs_) blob->GetMutableTensor()->Reset();
}

}  // namespace doppio

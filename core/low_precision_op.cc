#include "core/low_precision_op.h"

#include <utility>

#include "core/enforce.h"
#include "core/workspace.h"

namespace doppio {
namespace {

// Float32 scratch tensors for the widened copies, reused by the low-precision
// ops a thread runs one after another: allocating them afresh for every op
// cost page faults on every run (a tenth of a bfloat16 training step). A
// thread keeps at most kMaxScratch, so its scratch is a few activations.
class Scratch {
 public:
  static Tensor Take() {
    auto& pool = Pool();
    if (pool.empty()) return Tensor();
    Tensor tensor = std::move(pool.back());
    pool.pop_back();
    return tensor;
  }
  static void Give(Tensor* tensor) {
    auto& pool = Pool();
    if (tensor->has_storage() && pool.size() < kMaxScratch) pool.push_back(std::move(*tensor));
    tensor->Reset();
  }

 private:
  static constexpr size_t kMaxScratch = 8;
  static std::vector<Tensor>& Pool() {
    thread_local std::vector<Tensor> pool;
    return pool;
  }
};

}  // namespace

void WidenToFloat(const Tensor& in, Tensor* out) {
  DOPPIO_ENFORCE(IsLowPrecision(in.dtype()), "expected a float16 or bfloat16 tensor, got ",
                 DataTypeName(in.dtype()));
  out->Resize(in.dims());
  float* dst = out->mutable_data<float>();
  if (in.dtype() == DataType::kBFloat16) {
    BFloat16ToFloat(in.data<bfloat16>(), dst, in.numel());
  } else {
    HalfToFloat(in.data<float16>(), dst, in.numel());
  }
}

void NarrowFromFloat(const Tensor& in, DataType low, Tensor* out) {
  DOPPIO_ENFORCE(IsLowPrecision(low), "cannot narrow to ", DataTypeName(low));
  DOPPIO_ENFORCE(in.dtype() == DataType::kFloat, "expected a float32 tensor, got ",
                 DataTypeName(in.dtype()));
  out->Resize(in.dims());
  if (low == DataType::kBFloat16) {
    FloatToBFloat16(in.data<float>(), out->mutable_data<bfloat16>(), in.numel());
  } else {
    FloatToHalf(in.data<float>(), out->mutable_data<float16>(), in.numel());
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
    for (int i = 0; i < InputSize(); ++i) {
      shadow_inputs_.push_back(shadow_->CreateBlob(input_name(i)));
    }
    for (int j = 0; j < OutputSize(); ++j) {
      shadow_outputs_.push_back(shadow_->CreateBlob(output_name(j)));
    }
    widened_ = creator_(def(), shadow_.get());
    if (!restored_state_.empty()) widened_->SetRandomState(restored_state_);
  }
  // Each shadow blob is scratch (a widened input, an output of its own) or
  // an alias of a float32 input's storage.
  std::set<Blob*> scratch, aliases;
  for (int i = 0; i < InputSize(); ++i) {
    const Blob& real = InputBlob(i);
    DOPPIO_ENFORCE(real.IsTensor(), "input ", i, " ('", input_name(i),
                   "') should be a tensor but holds ", real.TypeName());
    Tensor* shadow = shadow_inputs_[i]->GetMutableTensor();
    if (IsLowPrecision(real.GetTensor().dtype())) {
      if (scratch.insert(shadow_inputs_[i]).second) *shadow = Scratch::Take();
      WidenToFloat(real.GetTensor(), shadow);
    } else {
      shadow->ShareData(real.GetTensor());
      aliases.insert(shadow_inputs_[i]);
    }
  }
  for (Blob* blob : shadow_outputs_) {
    if (!aliases.count(blob) && scratch.insert(blob).second) {
      *blob->GetMutableTensor() = Scratch::Take();
    }
  }
  widened_->Run();
  for (int j = 0; j < OutputSize(); ++j) {
    const Tensor& result = shadow_outputs_[j]->GetTensor();
    Tensor* real = OutputBlob(j)->GetMutableTensor();
    const bool in_place_over_float = aliases.count(shadow_outputs_[j]) > 0;
    if (result.dtype() != DataType::kFloat || in_place_over_float ||
        float32_outputs_.count(j)) {
      // Not narrowed: copied, unless it already is the real blob's storage
      // (in place over a shared float input).
      if (!real->SharesStorageWith(result) || real->dims() != result.dims()) {
        real->CopyFrom(result);
      }
    } else {
      NarrowFromFloat(result, low, real);
    }
  }
  // The float32 copies live only during the run: kept per op, they would
  // hold twice the memory the low-precision model saves.
  for (Blob* blob : scratch) Scratch::Give(blob->GetMutableTensor());
  for (Blob* blob : aliases) blob->GetMutableTensor()->Reset();
}

}  // namespace doppio

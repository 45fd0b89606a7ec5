// CUDA fills (ConstantFill, UniformFill, GaussianFill, XavierFill, MSRAFill)
// written on the device. The random ones evaluate the Philox functors of
// elementwise_functors.h per element: no cuRAND, and one seed gives the same
// tensor on any GPU. Float32 only; shapes come from FillerOp as on the CPU.
#include <cmath>
#include <cstdint>
#include <random>

#include "core/cuda/cuda_context.h"
#include "core/registry.h"
#include "operators/elementwise_op_gpu.h"
#include "operators/filler_op.h"

namespace doppio {
namespace {

// The op's Philox stream: keyed by the DeviceOption's random_seed (or a draw
// from the context's generator when unseeded), with the offset advanced on
// every run so successive runs draw fresh numbers.
class PhiloxSource {
 public:
  PhiloxSource(const OperatorDef& def, CUDAContext& context) {
    if (def.device_option().has_random_seed()) {
      seed_ = def.device_option().random_seed();
    } else {
      std::mt19937& generator = context.RandGenerator();
      seed_ = (static_cast<uint64_t>(generator()) << 32) | generator();
    }
  }
  functors::PhiloxStream Next() { return functors::PhiloxStream{seed_, offset_++}; }

 private:
  uint64_t seed_ = 0;
  uint64_t offset_ = 0;
};

class CudaFillerBase : public FillerOp<CUDAContext> {
 public:
  CudaFillerBase(const OperatorDef& def, Workspace* workspace)
      : FillerOp<CUDAContext>(def, workspace), philox_(def, context_) {
    const int dtype = GetSingleArgument<int>("dtype", TensorProto::FLOAT);
    DOPPIO_ENFORCE(dtype == TensorProto::FLOAT,
                   "CUDA kernel: only dtype FLOAT (1) is supported, got ", dtype);
  }

 protected:
  void Uniform(Tensor* output, float min, float max) {
    LaunchUniformFillCuda(functors::UniformFill{philox_.Next(), min, max}, output->numel(),
                          output->mutable_data<float>(), context_.cuda_stream());
  }
  void Gaussian(Tensor* output, float mean, float std) {
    LaunchGaussianFillCuda(functors::GaussianFill{philox_.Next(), mean, std}, output->numel(),
                           output->mutable_data<float>(), context_.cuda_stream());
  }

 private:
  PhiloxSource philox_;
};

class CudaConstantFillOp final : public CudaFillerBase {
 public:
  CudaConstantFillOp(const OperatorDef& def, Workspace* workspace)
      : CudaFillerBase(def, workspace), value_(GetSingleArgument<float>("value", 0.0f)) {}

 protected:
  void Fill(Tensor* output) override {
    LaunchConstantFillCuda(output->numel(), value_, output->mutable_data<float>(),
                           context_.cuda_stream());
  }

 private:
  float value_;
};

class CudaUniformFillOp final : public CudaFillerBase {
 public:
  CudaUniformFillOp(const OperatorDef& def, Workspace* workspace)
      : CudaFillerBase(def, workspace),
        min_(GetSingleArgument<float>("min", 0.0f)),
        max_(GetSingleArgument<float>("max", 1.0f)) {
    DOPPIO_ENFORCE(min_ <= max_, "argument 'min' (", min_, ") is greater than 'max' (", max_, ")");
  }

 protected:
  void Fill(Tensor* output) override { Uniform(output, min_, max_); }

 private:
  float min_, max_;
};

class CudaGaussianFillOp final : public CudaFillerBase {
 public:
  CudaGaussianFillOp(const OperatorDef& def, Workspace* workspace)
      : CudaFillerBase(def, workspace),
        mean_(GetSingleArgument<float>("mean", 0.0f)),
        std_(GetSingleArgument<float>("std", 1.0f)) {
    DOPPIO_ENFORCE(std_ >= 0.0f, "argument 'std' must not be negative, got ", std_);
  }

 protected:
  void Fill(Tensor* output) override { Gaussian(output, mean_, std_); }

 private:
  float mean_, std_;
};

// Uniform on [-sqrt(3 / fan_in), sqrt(3 / fan_in)], fan_in = numel / dim 0.
class CudaXavierFillOp final : public CudaFillerBase {
 public:
  using CudaFillerBase::CudaFillerBase;

 protected:
  void Fill(Tensor* output) override {
    DOPPIO_ENFORCE(output->ndim() >= 1, "the output needs at least one dimension to define fan_in");
    if (output->numel() == 0) return;
    const int64_t fan_in = output->numel() / output->dim(0);
    const float scale = std::sqrt(3.0f / static_cast<float>(fan_in));
    Uniform(output, -scale, scale);
  }
};

// Normal(0, sqrt(2 / fan_out)), fan_out = numel / dim 1.
class CudaMSRAFillOp final : public CudaFillerBase {
 public:
  using CudaFillerBase::CudaFillerBase;

 protected:
  void Fill(Tensor* output) override {
    DOPPIO_ENFORCE(output->ndim() >= 2,
                   "the output needs at least two dimensions to define fan_out, got ",
                   output->dims());
    if (output->numel() == 0) return;
    const int64_t fan_out = output->numel() / output->dim(1);
    Gaussian(output, 0.0f, std::sqrt(2.0f / static_cast<float>(fan_out)));
  }
};

}  // namespace

REGISTER_CUDA_OPERATOR(ConstantFill, CudaConstantFillOp);
REGISTER_CUDA_OPERATOR(UniformFill, CudaUniformFillOp);
REGISTER_CUDA_OPERATOR(GaussianFill, CudaGaussianFillOp);
REGISTER_CUDA_OPERATOR(XavierFill, CudaXavierFillOp);
REGISTER_CUDA_OPERATOR(MSRAFill, CudaMSRAFillOp);

}  // namespace doppio

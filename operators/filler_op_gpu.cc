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
#include "operators/op_type_dispatch.h"

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

// What the random CUDA fills share: the op's Philox stream and float32
// output.
class CudaRandomFillBase : public FillerOp<CUDAContext> {
 public:
  CudaRandomFillBase(const OperatorDef& def, Workspace* workspace)
      : FillerOp<CUDAContext>(def, workspace), philox_(def, context_) {
    const DataType dtype =
        DtypeArgumentType(def.type(), GetSingleArgument<int>("dtype", TensorProto::FLOAT));
    DOPPIO_ENFORCE(dtype == DataType::kFloat, "the CUDA random fills write float32 only, not ",
                   DataTypeName(dtype), " (argument dtype)");
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

// Caffe2's CUDA ConstantFill writes these too: NetBuilder's ops.Const of a
// bool under a GPU device scope is the usual If/While condition.
using ConstantFillTypes = TypeList<float, double, int32_t, int64_t, bool, uint8_t, uint16_t>;

// ConstantFill with Caffe2's dtype rule (ConstantFillType); the value input
// V is CPU-only.
class CudaConstantFillOp final : public FillerOp<CUDAContext> {
 public:
  CudaConstantFillOp(const OperatorDef& def, Workspace* workspace)
      : FillerOp<CUDAContext>(def, workspace), dtype_(ConstantFillType(def)) {
    DOPPIO_ENFORCE(InputSize() < 2, "the value input V is supported on the CPU only");
    DOPPIO_ENFORCE(TypeListHas(ConstantFillTypes{}, dtype_), "the CUDA ConstantFill writes ",
                   TypeListNames(ConstantFillTypes{}), ", not ", DataTypeName(dtype_),
                   " (argument dtype or value)");
    value_.Resize({});
    DispatchTypes(ConstantFillTypes{}, "value", dtype_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      *value_.mutable_data<T>() = ScalarArgumentAs<T>(*this, "value", T());
    });
  }

 protected:
  void Fill(Tensor* output) override {
    DispatchTypes(ConstantFillTypes{}, "argument dtype", dtype_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      LaunchConstantFillCuda<T>(output->numel(), value_.data<T>()[0], output->mutable_data<T>(),
                                context_.cuda_stream());
    });
  }

 private:
  DataType dtype_;
  Tensor value_;  // the parsed `value`, a host scalar of dtype_
};

class CudaUniformFillOp final : public CudaRandomFillBase {
 public:
  CudaUniformFillOp(const OperatorDef& def, Workspace* workspace)
      : CudaRandomFillBase(def, workspace), range_(ReadUniformRange<float>(*this)) {
    DOPPIO_ENFORCE(InputSize() < 3, "min and max as inputs are supported on the CPU only");
  }

 protected:
  void Fill(Tensor* output) override { Uniform(output, range_.min, range_.max); }

 private:
  UniformRange<float> range_;
};

class CudaGaussianFillOp final : public CudaRandomFillBase {
 public:
  CudaGaussianFillOp(const OperatorDef& def, Workspace* workspace)
      : CudaRandomFillBase(def, workspace), args_(ReadGaussianArgs(*this)) {}

 protected:
  void Fill(Tensor* output) override { Gaussian(output, args_.mean, args_.std); }

 private:
  GaussianArgs args_;
};

// Uniform on [-sqrt(3 / fan_in), sqrt(3 / fan_in)], fan_in = numel / dim 0.
class CudaXavierFillOp final : public CudaRandomFillBase {
 public:
  using CudaRandomFillBase::CudaRandomFillBase;

 protected:
  void Fill(Tensor* output) override {
    const float scale = XavierFillScale(*output);
    if (output->numel() == 0) return;
    Uniform(output, -scale, scale);
  }
};

// Normal(0, sqrt(2 / fan_out)), fan_out = numel / dim 1.
class CudaMSRAFillOp final : public CudaRandomFillBase {
 public:
  using CudaRandomFillBase::CudaRandomFillBase;

 protected:
  void Fill(Tensor* output) override {
    const float stddev = MSRAFillStd(*output);
    if (output->numel() == 0) return;
    Gaussian(output, 0.0f, stddev);
  }
};

}  // namespace

REGISTER_CUDA_OPERATOR(ConstantFill, CudaConstantFillOp);
REGISTER_CUDA_OPERATOR(UniformFill, CudaUniformFillOp);
REGISTER_CUDA_OPERATOR(GaussianFill, CudaGaussianFillOp);
REGISTER_CUDA_OPERATOR(XavierFill, CudaXavierFillOp);
REGISTER_CUDA_OPERATOR(MSRAFill, CudaMSRAFillOp);

}  // namespace doppio

#include "parallel/allreduce_op.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <exception>
#include <string>

#include "core/gradient.h"
#include "core/intra_op_threads.h"
#include "core/registry.h"
#include "core/schema.h"
#include "parallel/collective_util.h"

namespace doppio {
namespace {

// Elements per accumulator block: 2-4 KiB, resident in L1 while the n
// buffers stream through. A compile-time length lets GCC vectorize at -O2.
constexpr int64_t kBlock = 512;
// Below this many elements per thread, a second thread costs more than it
// saves (waking a worker is a few microseconds).
constexpr int64_t kMinElementsPerThread = 16384;

// acc = x_0 + x_1 + ... + x_{n-1}, in that order, for `length` elements.
template <typename T, typename Acc, int64_t kLength>
inline void SumFixed(T* const* buffers, int n, int64_t offset, Acc* acc) {
  const T* first = buffers[0] + offset;
  for (int64_t j = 0; j < kLength; ++j) acc[j] = static_cast<Acc>(first[j]);
  for (int k = 1; k < n; ++k) {
    const T* x = buffers[k] + offset;
    for (int64_t j = 0; j < kLength; ++j) acc[j] += static_cast<Acc>(x[j]);
  }
}

template <typename T, typename Acc>
inline void SumTail(T* const* buffers, int n, int64_t offset, int64_t length, Acc* acc) {
  const T* first = buffers[0] + offset;
  for (int64_t j = 0; j < length; ++j) acc[j] = static_cast<Acc>(first[j]);
  for (int k = 1; k < n; ++k) {
    const T* x = buffers[k] + offset;
    for (int64_t j = 0; j < length; ++j) acc[j] += static_cast<Acc>(x[j]);
  }
}

// Sums [begin, end) across the buffers and writes the sum to each of them.
template <typename T>
void AllreduceRange(T* const* buffers, int n, int64_t begin, int64_t end) {
  alignas(64) T acc[kBlock];
  for (int64_t offset = begin; offset < end; offset += kBlock) {
    const int64_t length = std::min(kBlock, end - offset);
    if (length == kBlock) {
      SumFixed<T, T, kBlock>(buffers, n, offset, acc);
    } else {
      SumTail<T, T>(buffers, n, offset, length, acc);
    }
    for (int k = 0; k < n; ++k) std::memcpy(buffers[k] + offset, acc, length * sizeof(T));
  }
}

// float16 sums in float and rounds once per element: more accurate than
// rounding after every addition, and still fixed in order.
template <>
void AllreduceRange<float16>(float16* const* buffers, int n, int64_t begin, int64_t end) {
  float acc[kBlock];
  for (int64_t offset = begin; offset < end; offset += kBlock) {
    const int64_t length = std::min(kBlock, end - offset);
    for (int64_t j = 0; j < length; ++j) acc[j] = HalfToFloat(buffers[0][offset + j]);
    for (int k = 1; k < n; ++k) {
      for (int64_t j = 0; j < length; ++j) acc[j] += HalfToFloat(buffers[k][offset + j]);
    }
    for (int64_t j = 0; j < length; ++j) {
      const float16 sum = FloatToHalf(acc[j]);
      for (int k = 0; k < n; ++k) buffers[k][offset + j] = sum;
    }
  }
}

}  // namespace

AllreduceOp::AllreduceOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      num_threads_(GetSingleArgument<int>("num_threads", 0)) {
  DOPPIO_ENFORCE(num_threads_ >= 0, "argument num_threads must be >= 0 (0: every core), got ",
                 num_threads_);
  if (num_threads_ == 0) num_threads_ = AvailableCores();
  EnforceOneToOneInplace(*this);
}

int AllreduceOp::ThreadsFor(int64_t numel) const {
  const int64_t useful = std::max<int64_t>(1, numel / kMinElementsPerThread);
  return static_cast<int>(std::min<int64_t>(num_threads_, useful));
}

void AllreduceOp::RunOnThreads(int threads, const std::function<void(int)>& task) {
  if (threads > 1) {
    if (pool_ == nullptr || pool_->size() < threads - 1) {
      pool_ = std::make_unique<ThreadPool>(num_threads_ - 1, "Allreduce " + DisplayName());
    }
    for (int t = 1; t < threads; ++t) pool_->Submit([&task, t] { task(t); });
  }
  // The workers hold a reference to `task`: wait for them even when this
  // thread's share fails, then report the first error.
  std::exception_ptr error;
  try {
    task(0);
  } catch (...) {
    error = std::current_exception();
  }
  if (threads > 1) pool_->WaitIdle();
  if (error) std::rethrow_exception(error);
}

void AllreduceOp::RunOnDevice() {
  const int n = InputSize();
  std::vector<Tensor*> replicas;
  for (int i = 0; i < n; ++i) replicas.push_back(ReplicaTensor(this, i));
  EnforceSameDimsAndType(*this, replicas);
  const Tensor& first = *replicas[0];
  const int64_t numel = first.numel();
  if (n == 1 || numel == 0) {
    // Nothing to add, but reading proves the blob was written.
    first.raw_data();
    return;
  }

  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<T*> buffers;
    for (int i = 0; i < n; ++i) {
      replicas[i]->raw_data();  // an error if never written
      buffers.push_back(replicas[i]->template mutable_data<T>());
    }
    const int threads = ThreadsFor(numel);
    // Ranges are whole blocks, so every thread but the last runs full,
    // vectorized blocks.
    const int64_t blocks = (numel + kBlock - 1) / kBlock;
    const int64_t per_thread = (blocks + threads - 1) / threads * kBlock;
    RunOnThreads(threads, [&](int t) {
      const int64_t begin = std::min(numel, t * per_thread);
      const int64_t end = std::min(numel, begin + per_thread);
      if (begin < end) AllreduceRange<T>(buffers.data(), n, begin, end);
    });
  };
  switch (first.dtype()) {
    case DataType::kFloat: return run(TypeTag<float>{});
    case DataType::kDouble: return run(TypeTag<double>{});
    case DataType::kFloat16: return run(TypeTag<float16>{});
    default: break;
  }
  DOPPIO_THROW("input 0 ('", input_name(0), "') holds ", DataTypeName(first.dtype()),
               "; Allreduce sums float32, float64 and float16 tensors");
}

REGISTER_CPU_OPERATOR(Allreduce, AllreduceOp);

OPERATOR_SCHEMA(Allreduce)
    .NumInputs(1, INT_MAX)
    .NumOutputs(1, INT_MAX)
    // One schema serves both engines: inputs X_0..X_{n-1} in process, or a
    // common world followed by X_0..X_{n-1} for "GLOO"; blobs are in place.
    .NumInputsOutputs([](int in, int out) { return in == out || in == out + 1; })
    .AllowInplace([](int in, int out) { return in == out || in == out + 1; })
    .TensorInferenceFunction(InPlaceCollectiveShapes)
    .Arg("num_threads",
         "(int, default 0) threads that share the work; 0 uses every core this process "
         "may run on. Tensors under 16384 elements per thread use fewer. The result "
         "does not depend on it.")
    .Arg("algorithm", "(string, engine GLOO) \"ring\", \"ring_chunked\" or "
         "\"halving_doubling\"; unset picks halving_doubling for power-of-two worlds, "
         "else ring_chunked")
    .Arg("status_blob", "(string, engine GLOO) the last output receives an int32 status "
         "(0 ok, 1 failed) instead of the op throwing; an extra last output does the same")
    .Input(0, "X_0", "device 0's tensor (float32, float64 or float16)")
    .Input(1, "X_1...", "the other devices' tensors: same shape and type")
    .Output(0, "X_0", "in place: the sum of every input")
    .Output(1, "X_1...", "in place: the same sum, one per input")
    .Doc(
        "In-process allreduce for CPU devices: every blob becomes the elementwise sum "
        "X_0 + X_1 + ... + X_{n-1} (added in that order, so the result is identical on "
        "every run and thread count). Runs in place: output i must be input i. All cores "
        "share the work (a fused reduce-scatter and all-gather over contiguous ranges). "
        "Cross-process allreduce is the same op type under engine \"GLOO\", whose input "
        "0 is a common world (CreateCommonWorld) followed by the tensors.");

NO_GRADIENT(Allreduce,
            "a collective that sums gradients across devices after the backward pass; "
            "it is inserted by the Parallelize pass, not differentiated through");

}  // namespace doppio

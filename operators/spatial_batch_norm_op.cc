#include "operators/spatial_batch_norm_op.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/normalization_utils.h"
#include "operators/op_cost.h"
#include "operators/op_type_dispatch.h"
#include "operators/parallel_for.h"

namespace doppio {

SpatialBNArgs ReadSpatialBNArgs(const OperatorBase& op) {
  SpatialBNArgs args;
  args.is_test = op.GetSingleArgument<bool>("is_test", false);
  args.epsilon = op.GetSingleArgument<float>("epsilon", 1e-5f);
  args.momentum = op.GetSingleArgument<float>("momentum", 0.9f);
  args.channels_last = ReadChannelsLast(op);
  args.num_batches = op.GetSingleArgument<int>("num_batches", 1);
  DOPPIO_ENFORCE(args.epsilon > 0, "argument 'epsilon' is ", args.epsilon, "; it must be positive");
  DOPPIO_ENFORCE(args.momentum >= 0 && args.momentum <= 1, "argument 'momentum' is ", args.momentum,
                 "; it must lie in [0, 1]");
  DOPPIO_ENFORCE(args.num_batches >= 1, "argument 'num_batches' is ", args.num_batches,
                 "; it must be at least 1");
  if (args.num_batches > 1) {
    DOPPIO_ENFORCE(!args.is_test && op.InputSize() == 7, "num_batches=", args.num_batches,
                   " needs training mode and 7 inputs (the last two the per-channel "
                   "aggregates), got ",
                   op.InputSize(), " inputs", args.is_test ? " with is_test=1" : "");
  }
  return args;
}

namespace {

// The per-element loops below work in blocks of kLanes independent values,
// which GCC vectorizes at -O2 (its cheap cost model leaves loops of unknown
// length scalar), and are built twice, for AVX2 and for the baseline x86-64
// the tree targets, the CPU picking one at load time: 3-4x faster on this
// memory-light work. Both clones do the same float operations in the same
// order (the avx2 target has no FMA), so results do not depend on the CPU.
// Not under ThreadSanitizer: clone resolvers (ifuncs) run while libraries
// load, before the TSan runtime is up, and crash there. Not under clang
// either (the fuzz build): clang 14 cannot clone function templates.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    !defined(__SANITIZE_THREAD__)
#define DOPPIO_BN_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define DOPPIO_BN_VECTOR_CLONES
#endif
constexpr int kLanes = 8;

// The NCHW loops split channels (statistics) or rows (elementwise work)
// across the op's OpenMP threads, oneDNN's pool, sized by the intra-op thread
// count. Each channel's sums stay with one thread in batch order, so results
// do not depend on the thread count. Smaller tensors stay on one thread.
constexpr int64_t kParallelMinValues = int64_t{1} << 15;

// y[i] = a * x[i] + b over n contiguous values; y may be x.
template <typename T>
DOPPIO_BN_VECTOR_CLONES void AffineRow(const T* x, int64_t n, T a, T b, T* y) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    // Every load of a block precedes its stores, so in place is safe.
    T block[kLanes];
    for (int k = 0; k < kLanes; ++k) block[k] = a * x[i + k] + b;
    for (int k = 0; k < kLanes; ++k) y[i + k] = block[k];
  }
  for (; i < n; ++i) y[i] = a * x[i] + b;
}

// dx[i] = a * dy[i] + b * x[i] + g over n contiguous values.
template <typename T>
DOPPIO_BN_VECTOR_CLONES void InputGradientRow(const T* dy, const T* x, int64_t n, T a, T b,
                                              T g, T* dx) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    T block[kLanes];
    for (int k = 0; k < kLanes; ++k) block[k] = a * dy[i + k] + b * x[i + k] + g;
    for (int k = 0; k < kLanes; ++k) dx[i + k] = block[k];
  }
  for (; i < n; ++i) dx[i] = a * dy[i] + b * x[i] + g;
}

// Y = alpha[c] * X + beta[c]; Y may be X.
template <typename T>
void AffinePerChannel(const T* x, const std::vector<double>& alpha,
                      const std::vector<double>& beta, int64_t batch, int64_t channels,
                      int64_t inner, bool channels_last, T* y) {
  if (channels_last) {
    std::vector<T> a(alpha.begin(), alpha.end()), b(beta.begin(), beta.end());
    const T* ap = a.data();
    const T* bp = b.data();
    // Rows are independent and each element is read before it is written:
    // any split, vectorized, gives the same bits.
    ParallelFor(
        batch * inner,
        [&](int64_t begin, int64_t end) {
          for (int64_t row = begin; row < end; ++row) {
            const T* xr = x + row * channels;
            T* yr = y + row * channels;
#pragma omp simd
            for (int64_t c = 0; c < channels; ++c) yr[c] = ap[c] * xr[c] + bp[c];
          }
        },
        RowsPerThread(channels));
    return;
  }
  const int64_t rows = batch * channels;
#pragma omp parallel for schedule(static) if (rows * inner >= kParallelMinValues)
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t c = row % channels;
    AffineRow(x + row * inner, inner, static_cast<T>(alpha[c]), static_cast<T>(beta[c]),
              y + row * inner);
  }
}

// Sums of (p[i] - shift) and (p[i] - shift)^2 over n contiguous values.
// Eight independent partial sums in T let the compiler vectorize; the
// partials are short enough for float32 and are combined in double.
template <typename T>
DOPPIO_BN_VECTOR_CLONES void ShiftedSums(const T* p, int64_t n, T shift, double* sum,
                                         double* sumsq) {
  T s[kLanes] = {}, q[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) {
      const T d = p[i + k] - shift;
      s[k] += d;
      q[k] += d * d;
    }
  }
  double total = 0, total_sq = 0;
  for (; i < n; ++i) {
    const double d = p[i] - shift;
    total += d;
    total_sq += d * d;
  }
  for (int k = 0; k < kLanes; ++k) {
    total += s[k];
    total_sq += q[k];
  }
  *sum = total;
  *sumsq = total_sq;
}

// Sums of dy and dy * (x - mean) over n contiguous values, as ShiftedSums.
template <typename T>
DOPPIO_BN_VECTOR_CLONES void GradientSums(const T* dy, const T* x, int64_t n, T mean,
                                          double* sum, double* sum_centred) {
  T s[kLanes] = {}, q[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) {
      s[k] += dy[i + k];
      q[k] += dy[i + k] * (x[i + k] - mean);
    }
  }
  double total = 0, total_centred = 0;
  for (; i < n; ++i) {
    total += dy[i];
    total_centred += static_cast<double>(dy[i]) * (x[i] - mean);
  }
  for (int k = 0; k < kLanes; ++k) {
    total += s[k];
    total_centred += q[k];
  }
  *sum = total;
  *sum_centred = total_centred;
}

// NHWC per-channel sums over `rows` rows of `channels` values: add_row(row,
// s, q) adds one row's terms to s[c] and q[c] across the channels (a loop
// the compiler vectorizes). Rows go in fixed chunks, each summed in T from
// zero; the chunk partials are added in double in chunk order. The chunks
// do not depend on the thread count, so neither do the results.
constexpr int64_t kChunkRows = 128;

template <typename T, typename AddRow>
void ChannelsLastSums(int64_t rows, int64_t channels, const AddRow& add_row, double* first,
                      double* second) {
  const int64_t chunks = (rows + kChunkRows - 1) / kChunkRows;
  std::vector<T> partial(chunks * 2 * channels, T(0));
  ParallelFor(
      chunks,
      [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) {
          T* s = partial.data() + k * 2 * channels;
          T* q = s + channels;
          const int64_t last = std::min(rows, (k + 1) * kChunkRows);
          for (int64_t row = k * kChunkRows; row < last; ++row) add_row(row, s, q);
        }
      },
      RowsPerThread(kChunkRows * channels));
  std::fill(first, first + channels, 0.0);
  std::fill(second, second + channels, 0.0);
  for (int64_t k = 0; k < chunks; ++k) {
    const T* s = partial.data() + k * 2 * channels;
    for (int64_t c = 0; c < channels; ++c) {
      first[c] += s[c];
      second[c] += s[channels + c];
    }
  }
}

// The running statistic tensor (output `output`, the same blob as input
// `output + 2`), made {C} and zero-filled when the blob is still empty, as
// Caffe2 does for uninitialized running statistics.
template <typename T>
T* RunningStatistic(Operator<CPUContext>& op, Tensor* running, int input,
                    int64_t channels, const char* what) {
  if (running->numel() == 0) {
    running->Resize({channels});
    T* data = running->mutable_data<T>();
    std::fill(data, data + channels, T(0));
    return data;
  }
  CheckParameter(op, input, *running, channels, DataTypeFor<T>(), what);
  running->Resize({channels});
  return running->mutable_data<T>();
}

}  // namespace

// ---- SpatialBN ----

SpatialBNOp::SpatialBNOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), args_(ReadSpatialBNArgs(*this)) {
  const int want = args_.is_test ? 1 : 5;
  DOPPIO_ENFORCE(OutputSize() == want, "with is_test=", args_.is_test ? 1 : 0, " it has ", want,
                 " output(s), got ", OutputSize());
}

void SpatialBNOp::RunOnDevice() {
  DispatchInput(FloatTypes{}, *this, 0, Input(0).dtype(),
                [&](auto tag) { Run<typename decltype(tag)::type>(); });
}

template <typename T>
void SpatialBNOp::BatchMoments(const Tensor& X, int64_t batch, int64_t channels,
                               int64_t inner, double* mean, double* var) const {
  std::fill(mean, mean + channels, 0.0);
  std::fill(var, var + channels, 0.0);
  if (args_.num_batches > 1) {
    const Tensor& sums = Input(5);
    const Tensor& sumsq = Input(6);
    CheckParameter(*this, 5, sums, channels, X.dtype(), "per-channel sum");
    CheckParameter(*this, 6, sumsq, channels, X.dtype(), "per-channel sum of squares");
    const double count = static_cast<double>(args_.num_batches) * batch * inner;
    for (int64_t c = 0; c < channels; ++c) {
      mean[c] = sums.data<T>()[c] / count;
      var[c] = std::max(sumsq.data<T>()[c] / count - mean[c] * mean[c], 0.0);
    }
    return;
  }
  // One pass over X for sums of (x - shift) and its square; shifting by a
  // value of the channel keeps the variance accurate when |mean| >> std.
  const T* x = X.data<T>();
  const int64_t count = batch * inner;
  if (count == 0) return;
  std::vector<T> shift(channels);
  for (int64_t c = 0; c < channels; ++c) shift[c] = x[args_.channels_last ? c : c * inner];
  std::vector<double> sum(channels, 0.0), sumsq(channels, 0.0);
  if (args_.channels_last) {
    const T* shift_data = shift.data();
    ChannelsLastSums<T>(
        count, channels,
        [&](int64_t row, T* s, T* q) {
          const T* xr = x + row * channels;
#pragma omp simd
          for (int64_t c = 0; c < channels; ++c) {
            const T d = xr[c] - shift_data[c];
            s[c] += d;
            q[c] += d * d;
          }
        },
        sum.data(), sumsq.data());
  } else {
#pragma omp parallel for schedule(static) if (count * channels >= kParallelMinValues)
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t n = 0; n < batch; ++n) {
        double run_sum, run_sumsq;
        ShiftedSums(x + (n * channels + c) * inner, inner, shift[c], &run_sum, &run_sumsq);
        sum[c] += run_sum;
        sumsq[c] += run_sumsq;
      }
    }
  }
  for (int64_t c = 0; c < channels; ++c) {
    const double shifted_mean = sum[c] / count;
    mean[c] = shift[c] + shifted_mean;
    var[c] = std::max(sumsq[c] / count - shifted_mean * shifted_mean, 0.0);
  }
}

template <typename T>
void SpatialBNOp::Run() {
  const Tensor& X = Input(0);
  const ChannelView view = ViewByChannel(*this, 0, X, args_.channels_last, 2);
  const int64_t N = view.batch, C = view.channels, inner = view.inner;
  CheckParameter(*this, 1, Input(1), C, X.dtype(), "scale");
  CheckParameter(*this, 2, Input(2), C, X.dtype(), "bias");
  const T* scale = Input(1).data<T>();
  const T* bias = Input(2).data<T>();

  std::vector<double> mean(C), var(C), alpha(C), beta(C);
  if (args_.is_test) {
    CheckParameter(*this, 3, Input(3), C, X.dtype(), "mean");
    CheckParameter(*this, 4, Input(4), C, X.dtype(), "var");
    for (int64_t c = 0; c < C; ++c) {
      mean[c] = Input(3).data<T>()[c];
      var[c] = Input(4).data<T>()[c];
    }
  } else {
    T* running_mean = RunningStatistic<T>(*this, Output(1), 3, C, "running mean");
    T* running_var = RunningStatistic<T>(*this, Output(2), 4, C, "running variance");
    Tensor* saved_mean = Output(3);
    Tensor* saved_inv_std = Output(4);
    const int64_t reduce_size = static_cast<int64_t>(args_.num_batches) * N * inner;
    if (N * inner == 0) {
      // Nothing to normalize: no statistics, running ones unchanged.
      for (Tensor* saved : {saved_mean, saved_inv_std}) {
        saved->Resize({C});
        T* data = saved->mutable_data<T>();
        std::fill(data, data + C, T(0));
      }
      Output(0)->Resize(X.dims());
      Output(0)->mutable_data<T>();
      return;
    }
    DOPPIO_ENFORCE(reduce_size > 1, "training needs more than one value ",
                   "per channel to estimate a variance, but '", input_name(0), "' has shape ",
                   X.dims());
    BatchMoments<T>(X, N, C, inner, mean.data(), var.data());
    const double unbias = static_cast<double>(reduce_size) / (reduce_size - 1);
    const double m = args_.momentum;
    for (int64_t c = 0; c < C; ++c) {
      running_mean[c] = static_cast<T>(m * running_mean[c] + (1 - m) * mean[c]);
      running_var[c] = static_cast<T>(m * running_var[c] + (1 - m) * unbias * var[c]);
    }
    saved_mean->Resize({C});
    saved_inv_std->Resize({C});
    T* saved_mean_data = saved_mean->mutable_data<T>();
    T* saved_inv_std_data = saved_inv_std->mutable_data<T>();
    for (int64_t c = 0; c < C; ++c) {
      saved_mean_data[c] = static_cast<T>(mean[c]);
      saved_inv_std_data[c] = static_cast<T>(1.0 / std::sqrt(var[c] + args_.epsilon));
    }
  }
  for (int64_t c = 0; c < C; ++c) {
    alpha[c] = scale[c] / std::sqrt(var[c] + args_.epsilon);
    beta[c] = bias[c] - alpha[c] * mean[c];
  }
  Tensor* Y = Output(0);
  Y->Resize(X.dims());
  AffinePerChannel(X.data<T>(), alpha, beta, N, C, inner, args_.channels_last,
                   Y->mutable_data<T>());
}

// ---- SpatialBNGradient ----

SpatialBNGradientOp::SpatialBNGradientOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), args_(ReadSpatialBNArgs(*this)) {}

void SpatialBNGradientOp::RunOnDevice() {
  DispatchInput(FloatTypes{}, *this, 0, Input(0).dtype(),
                [&](auto tag) { Run<typename decltype(tag)::type>(); });
}

template <typename T>
void SpatialBNGradientOp::Run() {
  const Tensor& X = Input(0);
  const Tensor& scale = Input(1);
  const Tensor& dY = Input(2);
  const ChannelView view = ViewByChannel(*this, 0, X, args_.channels_last, 2);
  const int64_t N = view.batch, C = view.channels, inner = view.inner;
  CheckParameter(*this, 1, scale, C, X.dtype(), "scale");
  DOPPIO_ENFORCE(dY.dims() == X.dims() && dY.dtype() == X.dtype(), "gradient '", input_name(2),
                 "' is ", dY.DebugString(), " but '", input_name(0), "' is ", X.DebugString());
  CheckParameter(*this, 3, Input(3), C, X.dtype(), args_.is_test ? "mean" : "saved mean");
  CheckParameter(*this, 4, Input(4), C, X.dtype(),
                 args_.is_test ? "var" : "saved inverse std");
  const T* x = X.data<T>();
  const T* dy = dY.data<T>();
  const T* mean = Input(3).data<T>();
  std::vector<double> inv_std(C);
  for (int64_t c = 0; c < C; ++c) {
    const double v = Input(4).data<T>()[c];
    inv_std[c] = args_.is_test ? 1.0 / std::sqrt(v + args_.epsilon) : v;
  }

  // dbias = sum(dY), dscale = sum(dY * (X - mean)) * inv_std, per channel.
  std::vector<double> dbias(C, 0.0), dscale(C, 0.0);
  if (args_.num_batches > 1) {
    CheckParameter(*this, 5, Input(5), C, X.dtype(), "aggregated scale gradient");
    CheckParameter(*this, 6, Input(6), C, X.dtype(), "aggregated bias gradient");
    for (int64_t c = 0; c < C; ++c) {
      dscale[c] = Input(5).data<T>()[c] / args_.num_batches;
      dbias[c] = Input(6).data<T>()[c] / args_.num_batches;
    }
  } else if (args_.channels_last) {
    ChannelsLastSums<T>(
        N * inner, C,
        [&](int64_t row, T* s, T* q) {
          const T* xr = x + row * C;
          const T* dyr = dy + row * C;
#pragma omp simd
          for (int64_t c = 0; c < C; ++c) {
            s[c] += dyr[c];
            q[c] += dyr[c] * (xr[c] - mean[c]);
          }
        },
        dbias.data(), dscale.data());
    for (int64_t c = 0; c < C; ++c) dscale[c] *= inv_std[c];
  } else {
#pragma omp parallel for schedule(static) if (N * C * inner >= kParallelMinValues)
    for (int64_t c = 0; c < C; ++c) {
      for (int64_t n = 0; n < N; ++n) {
        const int64_t offset = (n * C + c) * inner;
        double sum, sum_centred;
        GradientSums(dy + offset, x + offset, inner, mean[c], &sum, &sum_centred);
        dbias[c] += sum;
        dscale[c] += sum_centred;
      }
    }
    for (int64_t c = 0; c < C; ++c) dscale[c] *= inv_std[c];
  }

  // dX = a * dY + b * X + g per channel. Training also flows through the
  // batch mean and variance: with M values per channel,
  //   dX = scale * inv_std * (dY - dbias / M - (X - mean) * inv_std * dscale / M).
  std::vector<double> a(C), b(C), g(C);
  const double M = static_cast<double>(N) * inner;
  for (int64_t c = 0; c < C; ++c) {
    a[c] = scale.data<T>()[c] * inv_std[c];
    if (args_.is_test || M == 0) {
      b[c] = 0;
      g[c] = 0;
    } else {
      b[c] = -a[c] * inv_std[c] * dscale[c] / M;
      g[c] = -b[c] * mean[c] - a[c] * dbias[c] / M;
    }
  }
  // The outputs are written last: dscale/dbias may share the aggregates' blobs.
  Tensor* dX = Output(0);
  dX->Resize(X.dims());
  T* dx = dX->mutable_data<T>();
  if (args_.channels_last) {
    // In T, as the NCHW rows below; rows are independent, so any split
    // gives the same bits.
    const std::vector<T> at(a.begin(), a.end()), bt(b.begin(), b.end()), gt(g.begin(), g.end());
    const T* ap = at.data();
    const T* bp = bt.data();
    const T* gp = gt.data();
    ParallelFor(
        N * inner,
        [&](int64_t begin, int64_t end) {
          for (int64_t row = begin; row < end; ++row) {
            const int64_t offset = row * C;
#pragma omp simd
            for (int64_t c = 0; c < C; ++c) {
              dx[offset + c] = ap[c] * dy[offset + c] + bp[c] * x[offset + c] + gp[c];
            }
          }
        },
        RowsPerThread(C));
  } else {
#pragma omp parallel for schedule(static) if (N * C * inner >= kParallelMinValues)
    for (int64_t row = 0; row < N * C; ++row) {
      const int64_t c = row % C;
      InputGradientRow(dy + row * inner, x + row * inner, inner, static_cast<T>(a[c]),
                       static_cast<T>(b[c]), static_cast<T>(g[c]), dx + row * inner);
    }
  }
  Tensor* dScale = Output(1);
  Tensor* dBias = Output(2);
  dScale->Resize(scale.dims());
  dBias->Resize(scale.dims());
  T* dscale_data = dScale->mutable_data<T>();
  T* dbias_data = dBias->mutable_data<T>();
  for (int64_t c = 0; c < C; ++c) {
    dscale_data[c] = static_cast<T>(dscale[c]);
    dbias_data[c] = static_cast<T>(dbias[c]);
  }
}

// ---- registration ----

REGISTER_CPU_OPERATOR(SpatialBN, SpatialBNOp);
REGISTER_CPU_OPERATOR(SpatialBNGradient, SpatialBNGradientOp);

// Schemas and the gradient maker: spatial_batch_norm_schema.cc.

}  // namespace doppio

#include "operators/fc_op_gpu.h"

#include <algorithm>

namespace doppio {

namespace {

constexpr int kThreads = 256;
// The grid-stride loops below cover any size; this only bounds the launch.
constexpr int64_t kMaxBlocks = 4096;

template <typename T>
__global__ void AddRowBiasKernel(int64_t rows, int64_t cols, const T* bias, bool relu, T* y) {
  const int64_t total = rows * cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const T value = y[i] + bias[i % cols];
    y[i] = relu && value < T(0) ? T(0) : value;
  }
}

// A 32-column by kRowLanes-row tile per block: lanes of a warp read adjacent
// columns (coalesced), the row lanes split the rows, and a shared-memory
// pass adds the row lanes' partial sums in a fixed order.
constexpr int kColumnLanes = 32;
constexpr int kRowLanes = 8;

template <typename T>
__global__ void ColumnSumsKernel(int64_t rows, int64_t cols, const T* x, T* sums) {
  __shared__ T partial[kRowLanes][kColumnLanes];
  const int64_t col = blockIdx.x * static_cast<int64_t>(kColumnLanes) + threadIdx.x;
  T sum = 0;
  if (col < cols) {
    for (int64_t row = threadIdx.y; row < rows; row += kRowLanes) sum += x[row * cols + col];
  }
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    T total = 0;
    for (int lane = 0; lane < kRowLanes; ++lane) total += partial[lane][threadIdx.x];
    sums[col] = total;
  }
}

template <typename T>
void AddRowBias(int64_t rows, int64_t cols, const T* bias, bool relu, T* y, cudaStream_t stream) {
  const int64_t total = rows * cols;
  if (total == 0) return;
  const int64_t blocks = std::min<int64_t>((total + kThreads - 1) / kThreads, kMaxBlocks);
  AddRowBiasKernel<T>
      <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(rows, cols, bias, relu, y);
}

template <typename T>
void ColumnSums(int64_t rows, int64_t cols, const T* x, T* sums, cudaStream_t stream) {
  if (cols == 0) return;
  const int64_t blocks = (cols + kColumnLanes - 1) / kColumnLanes;
  ColumnSumsKernel<T><<<static_cast<unsigned>(blocks), dim3(kColumnLanes, kRowLanes), 0,
                        stream>>>(rows, cols, x, sums);
}

}  // namespace

void LaunchAddRowBias(int64_t rows, int64_t cols, const float* bias, bool relu, float* y,
                      cudaStream_t stream) {
  AddRowBias(rows, cols, bias, relu, y, stream);
}
void LaunchAddRowBias(int64_t rows, int64_t cols, const double* bias, bool relu, double* y,
                      cudaStream_t stream) {
  AddRowBias(rows, cols, bias, relu, y, stream);
}
void LaunchColumnSums(int64_t rows, int64_t cols, const float* x, float* sums,
                      cudaStream_t stream) {
  ColumnSums(rows, cols, x, sums, stream);
}
void LaunchColumnSums(int64_t rows, int64_t cols, const double* x, double* sums,
                      cudaStream_t stream) {
  ColumnSums(rows, cols, x, sums, stream);
}

}  // namespace doppio

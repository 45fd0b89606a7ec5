// Caffe2's fused 8-bit row-wise quantization, for embedding tables kept in a
// quarter of their float size:
//
//   FloatToFused8BitRowwiseQuantized(float [R, C]) -> uint8 [R, C + 8]
//   Fused8BitRowwiseQuantizedToFloat(uint8 [R, C + 8]) -> float [R, C]
//   GatherFused8BitRowwise(DATA, INDICES) -> float [N, C], rows dequantized
//   SparseLengths{Sum,Mean}Fused8BitRowwise(DATA, INDICES, LENGTHS)
//   SparseLengthsWeightedSumFused8BitRowwise(DATA, WEIGHTS, INDICES, LENGTHS)
//       -> float [segments, C], SparseLengthsSum's reductions over the
//       dequantized rows.
//
// A fused row holds C quantized bytes, then the row's scale and bias as two
// little-endian float32s: value = byte * scale + bias, with bias the row's
// minimum and scale its range / 255 (Caffe2's layout, so tables it saved
// load here).
#pragma once

#include <cstdint>

#include "core/operator.h"

namespace doppio {

class FloatToFused8BitRowwiseQuantizedOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

class Fused8BitRowwiseQuantizedToFloatOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

class GatherFused8BitRowwiseOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

enum class FusedReduction { kSum, kWeightedSum, kMean };

template <FusedReduction kReduction>
class SparseLengthsFused8BitRowwiseOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;

 private:
  static constexpr bool kWeighted = kReduction == FusedReduction::kWeightedSum;
  static constexpr int kIndicesInput = kWeighted ? 2 : 1;
  static constexpr int kLengthsInput = kWeighted ? 3 : 2;
};

}  // namespace doppio

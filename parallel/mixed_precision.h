// Mixed precision as a graph pass: a float32 forward net becomes one that
// runs its compute-bound ops in bfloat16 or float16 and the rest where it is
// safe, as PyTorch's autocast decides per op at run time, decided here once
// per op before backward is derived (so the gradient ops follow).
//
// Per op, by type (PrecisionPolicyOf):
//   kLow      Conv, ConvTranspose, FC, FCTransposed, MatMul, BatchMatMul:
//             float32 inputs are cast to the low type (one cast per blob,
//             reused until the blob is written again); the output is low.
//   kFollow   ops whose CPU kernels take the low types (their schema says
//             LowPrecisionInFloat32, core/schema.h) and the ops that only move
//             data (Reshape, Flatten, Concat, ...): low when all their data
//             inputs are low; with low and float32 data inputs mixed, the low
//             ones are cast up and the op stays float32. SpatialBN's scale,
//             bias and statistics stay float32 either way.
//   kFloat32  everything else (softmax, losses, exp/log, reductions, ops the
//             pass does not know): low inputs are cast to float32 first.
// Conversions already in the net (Cast, FloatToHalf, HalfToFloat) stay as they
// are, their outputs low when they convert to the low type: lowering a
// lowered net changes nothing.
// Params stay float32 (the master weights the optimizer updates): the casts
// are forward ops, so each param's gradient arrives in float32 through the
// cast's gradient. Casts are `Cast` with `to` and `from_type`, which
// differentiate.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/types.h"
#include "proto/doppio.pb.h"

namespace doppio {

enum class PrecisionPolicy { kLow, kFollow, kFloat32 };

PrecisionPolicy PrecisionPolicyOf(const std::string& op_type);

// "fp32"/"float32", "bf16"/"bfloat16", "fp16"/"float16" -> kFloat, kBFloat16,
// kFloat16; InvalidArgumentError otherwise.
DataType ParsePrecision(const std::string& precision);

// What LowerPrecision decided, printable before anything runs.
struct PrecisionPlan {
  DataType low = DataType::kFloat;
  // Index in the input net and type of each op that runs in `low`.
  std::vector<std::pair<int, std::string>> low_ops;
  // Each cast inserted: source blob -> cast blob, in net order.
  std::vector<std::pair<std::string, std::string>> casts;
  // "" for float32 (nothing lowered).
  std::string ToString() const;
};

struct LoweredNet {
  NetDef net;
  PrecisionPlan plan;
};

// The rewrite above. `low` kFloat returns the net unchanged. Blobs the pass
// names (X_bf16, X_fp16, X_fp32) get a numeric suffix when the net already
// uses the name.
LoweredNet LowerPrecision(const NetDef& net, DataType low);

}  // namespace doppio

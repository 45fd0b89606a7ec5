// Argument and layout handling shared by the normalization ops (SpatialBN,
// InstanceNorm, LayerNorm, LRN): the storage order, the [N, C, inner] view of
// an activation, float/double dispatch and per-channel parameter checks, each
// failing with a message that names the op and the blob.
#pragma once

#include <cstdint>
#include <string>

#include "core/operator.h"
#include "core/tensor.h"

namespace doppio {

// The op's "order" argument (default "NCHW"): true for "NHWC" (channels
// last), false for "NCHW"; any other string is an error naming the op.
bool ReadChannelsLast(const OperatorBase& op);

// An activation seen as [batch, channels, inner] (NCHW) or
// [batch, inner, channels] (NHWC), where inner is the product of the spatial
// dims (1 for a 2-D input).
struct ChannelView {
  int64_t batch = 0;
  int64_t channels = 0;
  int64_t inner = 0;
};

// The view of input `input` of `op`; its rank must be at least `min_rank`.
ChannelView ViewByChannel(const OperatorBase& op, int input, const Tensor& X,
                          bool channels_last, int min_rank);

// Input `input` must hold `count` elements of `dtype` (a per-channel or
// per-feature parameter); `what` says what it is ("scale", "running mean").
void CheckParameter(const OperatorBase& op, int input, const Tensor& parameter,
                    int64_t count, DataType dtype, const char* what);

// Throws the error for an input dtype the normalization ops do not support.

}  // namespace doppio

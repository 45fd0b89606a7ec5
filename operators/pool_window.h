// The windows of the CPU pooling kernels (operators/pool_op.cc): geometry of
// 1-D to 3-D pooling as 3-D, and the walks over each window's input
// positions, dilated windows included (a window's taps are `dilation` apart).
// Internal to the pooling ops; header-only because the walks take lambdas.
#pragma once

#include <algorithm>
#include <cstdint>

#include "operators/conv_pool_op_base.h"

namespace doppio {
namespace pool_window {

// The taps of a window on one axis that fall inside the input: begin,
// begin + step, ... below end.
struct Range {
  int64_t begin, end, step;
  int64_t count() const { return begin < end ? (end - begin + step - 1) / step : 0; }
};

// Pooling geometry with 1-D and 2-D padded to 3-D by leading unit axes, so
// one loop nest serves every rank.
struct Pool3 {
  int64_t in[3], out[3], kernel[3], stride[3], pad[3], dilation[3];
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  bool dilated() const { return dilation[0] != 1 || dilation[1] != 1 || dilation[2] != 1; }
};

inline Pool3 ToPool3(const ConvPoolGeometry& g) {
  Pool3 s;
  const int lead = 3 - g.num_spatial();
  for (int axis = 0; axis < 3; ++axis) {
    const int k = axis - lead;
    s.in[axis] = k < 0 ? 1 : g.input[k];
    s.out[axis] = k < 0 ? 1 : g.output[k];
    s.kernel[axis] = k < 0 ? 1 : g.kernel[k];
    s.stride[axis] = k < 0 ? 1 : g.stride[k];
    s.pad[axis] = k < 0 ? 0 : g.pad_begin(k);
    s.dilation[axis] = k < 0 ? 1 : g.dilation[k];
  }
  return s;
}

// Output position `o`'s taps on `axis`, clipped to the input.
inline Range Clip(const Pool3& s, int axis, int64_t o) {
  const int64_t start = o * s.stride[axis] - s.pad[axis];
  const int64_t step = s.dilation[axis];
  // The first tap at or after 0 and one past the last tap inside the input.
  const int64_t first = start >= 0 ? start : start + (-start + step - 1) / step * step;
  const int64_t last_tap = start + (s.kernel[axis] - 1) * step;
  const int64_t last = std::min<int64_t>(last_tap, s.in[axis] - 1);
  return Range{first, last < first ? first : last + 1, step};
}

// Calls fn(output_index, d, h, w) with each window clipped to the input.
template <typename Fn>
void ForEachWindow(const Pool3& s, Fn&& fn) {
  int64_t index = 0;
  for (int64_t od = 0; od < s.out[0]; ++od) {
    const Range d = Clip(s, 0, od);
    for (int64_t oh = 0; oh < s.out[1]; ++oh) {
      const Range h = Clip(s, 1, oh);
      for (int64_t ow = 0; ow < s.out[2]; ++ow) fn(index++, d, h, Clip(s, 2, ow));
    }
  }
}

// Calls fn(input_index) for each input position in a window, row-major.
template <typename Fn>
void ForEachInWindow(const Pool3& s, const Range& d, const Range& h, const Range& w, Fn&& fn) {
  for (int64_t i = d.begin; i < d.end; i += d.step) {
    for (int64_t j = h.begin; j < h.end; j += h.step) {
      const int64_t row = (i * s.in[1] + j) * s.in[2];
      for (int64_t k = w.begin; k < w.end; k += w.step) fn(row + k);
    }
  }
}

inline int64_t WindowCount(const Range& d, const Range& h, const Range& w) {
  return d.count() * h.count() * w.count();
}

// The first input position of a window (in row-major order) whose value
// equals the window's maximum `top`, or -1 when none does (a NaN maximum).
// The max-pool gradient goes to that one position, as in PyTorch, cuDNN and
// oneDNN, and MaxPool's Indices output names it. Caffe2's CPU kernel instead
// gives the full gradient to every tied position, which multiplies it on flat
// regions (an image's uniform background ties after Conv + BN + Relu) and
// makes CPU and GPU disagree.
template <typename T>
int64_t FirstMaxInWindow(const Pool3& s, const Range& d, const Range& h, const Range& w, const T* x,
                         int64_t step, T top) {
  for (int64_t i = d.begin; i < d.end; i += d.step) {
    for (int64_t j = h.begin; j < h.end; j += h.step) {
      const int64_t row = (i * s.in[1] + j) * s.in[2];
      for (int64_t k = w.begin; k < w.end; k += w.step) {
        if (x[(row + k) * step] == top) return row + k;
      }
    }
  }
  return -1;
}

}  // namespace pool_window
}  // namespace doppio

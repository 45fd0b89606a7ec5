#include "operators/conv_depthwise_gradient.h"

#include "operators/parallel_for.h"

namespace doppio {

void DepthwiseWeightGradient(const ConvProblem& p, const float* x, const float* dy, float* dw,
                             float* dbias) {
  const ConvPoolGeometry& g = p.geometry;
  const int64_t C = g.channels, IH = g.input[0], IW = g.input[1];
  const int64_t OH = g.output[0], OW = g.output[1], KH = g.kernel[0], KW = g.kernel[1];
  ParallelFor(
      C,
      [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c) {
          for (int64_t i = 0; i < KH; ++i) {
            for (int64_t j = 0; j < KW; ++j) {
              float sum = 0;
              for (int64_t n = 0; n < g.batch; ++n) {
                const float* xc = x + (n * C + c) * IH * IW;
                const float* dyc = dy + (n * C + c) * OH * OW;
                for (int64_t oh = 0; oh < OH; ++oh) {
                  const int64_t ih = oh * g.stride[0] - g.pad_begin(0) + i * g.dilation[0];
                  if (ih < 0 || ih >= IH) continue;
                  for (int64_t ow = 0; ow < OW; ++ow) {
                    const int64_t iw = ow * g.stride[1] - g.pad_begin(1) + j * g.dilation[1];
                    if (iw >= 0 && iw < IW) sum += dyc[oh * OW + ow] * xc[ih * IW + iw];
                  }
                }
              }
              dw[(c * KH + i) * KW + j] = sum;
            }
          }
          if (dbias != nullptr) {
            float sum = 0;
            for (int64_t n = 0; n < g.batch; ++n) {
              const float* dyc = dy + (n * C + c) * OH * OW;
              for (int64_t k = 0; k < OH * OW; ++k) sum += dyc[k];
            }
            dbias[c] = sum;
          }
        }
      },
      1);
}

}  // namespace doppio

// The host-side plan of a cuDNN transposed convolution (1-D to 3-D),
// resolved from Caffe2's ConvTranspose arguments and the input/filter shapes
// before any CUDA call, so shape and argument errors surface, and are
// testable, without a GPU.
//
// cuDNN has no transposed convolution of its own: ConvTranspose is the data
// gradient of the ordinary convolution that maps a Y-shaped tensor to an
// X-shaped one with the same filter. The filter's layout [C, M / group,
// kernel...] (NHWC: [C, kernel..., M / group]) is exactly cuDNN's filter of
// that convolution (K = C output channels, M / group input channels per
// group), so it is passed as it is. Hence
//   ConvTranspose forward    Y  = cudnnConvolutionBackwardData(W, X)
//   its gradient             dX = cudnnConvolutionForward(dY, W)
//                            dW = cudnnConvolutionBackwardFilter(dY, X)
//                            db = cudnnConvolutionBackwardBias(dY)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/operator.h"
#include "operators/conv_pool_op_base.h"
#include "operators/conv_transpose_op.h"

namespace doppio {

struct CudnnConvTransposePlan {
  StorageOrder order = StorageOrder::kNCHW;
  int64_t batch = 0;
  int64_t in_channels = 0;   // C: X's channels, the filter's dim 0
  int64_t out_channels = 0;  // M: Y's channels, (M / group) * group
  int64_t group = 1;
  std::vector<int64_t> output_dims;  // Y's full dims, in X's order
  // What cuDNN is given, in N, C, spatial... order whatever the memory order
  // (K, C, spatial... for the filter), a 1-D problem lifted to 2-D: X is the
  // output of the convolution cuDNN computes the data gradient of, Y its
  // input.
  std::vector<int64_t> cudnn_x_dims, cudnn_y_dims, cudnn_w_dims;
  // Per cuDNN spatial axis; the pad is symmetric (cuDNN's rule), an unequal
  // end pad being folded into the size of Y (see ResolveCudnnConvTranspose).
  std::vector<int64_t> pads, strides, dilations;
};

// Validates X (3-D to 5-D, NCHW or NHWC per `args`), the filter and the
// arguments as the CPU ConvTranspose does, and computes
//   output = (in - 1) * stride + dilation * (kernel - 1) + 1 + adj
//            - pad_begin - pad_end.
// cuDNN wants equal pads and an output its convolution maps back onto X
// exactly, so it needs 0 <= adj + pad_begin - pad_end < stride on every axis
// (true for Caffe2's usual adj < stride with equal pads); other cases are
// refused with a message naming `args.op_type()` and the blobs.
CudnnConvTransposePlan ResolveCudnnConvTranspose(const ConvPoolArgs& args,
                                                 const ConvTransposeAdj& adj,
                                                 const std::string& x_name,
                                                 const std::vector<int64_t>& x_dims,
                                                 const std::string& w_name,
                                                 const std::vector<int64_t>& w_dims);

}  // namespace doppio

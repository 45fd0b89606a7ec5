// im2col / col2im for 1-D, 2-D and 3-D images in NCHW and NHWC order: they
// lay every (dilated, strided, padded) kernel window of an image out as a
// matrix column or row, so a convolution becomes one GEMM.
//
// NCHW: the image is [channels, image...] (contiguous); the column buffer is
//       a (channels * prod(kernel)) x prod(output) row-major matrix whose row
//       index is (c, k_0, ..., k_{d-1}) and column index the output position.
// NHWC: the image is [image..., pixel_stride] and the first `channels`
//       values of each pixel are used (so a group's channels are taken by
//       offsetting the image pointer); the column buffer is a
//       prod(output) x (prod(kernel) * channels) row-major matrix whose
//       column index is (k_0, ..., k_{d-1}, c).
// Positions that fall in the padding read as zero (im2col) or are dropped
// (col2im).
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <vector>

#include "operators/conv_pool_op_base.h"

namespace doppio {

struct Im2ColShape {
  std::vector<int64_t> image;      // spatial input sizes
  std::vector<int64_t> output;     // spatial output sizes
  std::vector<int64_t> kernel;     // per spatial axis
  std::vector<int64_t> stride;     // per spatial axis
  std::vector<int64_t> dilation;   // per spatial axis
  std::vector<int64_t> pad_begin;  // per spatial axis
  int64_t channels = 0;            // channels taken into the columns
  int64_t pixel_stride = 0;        // NHWC: values per image pixel (>= channels)

  // The shape of one group of `group_channels` channels of geometry g's input.
  static Im2ColShape FromGeometry(const ConvPoolGeometry& g, int64_t group_channels);
  int64_t kernel_size() const;  // prod(kernel)
  int64_t output_size() const;  // prod(output)
  int64_t image_size() const;   // prod(image)
  // Whether im2col would just copy the image (1x1 kernel, unit stride, no
  // padding) so a caller may use the image as the column buffer.
  bool IsIdentity() const;
};

// Fills `col` (see above for its layout) from `image`.
template <typename T>
void Im2ColNd(StorageOrder order, const Im2ColShape& shape, const T* image, T* col);

// Adds every column entry back onto the image position it came from:
// image += col2im(col). The caller zeroes the image first where needed.
template <typename T>
void Col2ImNdAdd(StorageOrder order, const Im2ColShape& shape, const T* col, T* image);

}  // namespace doppio

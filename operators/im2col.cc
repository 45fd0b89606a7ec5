#include "operators/im2col.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace doppio {
namespace {

int64_t Product(const std::vector<int64_t>& values) {
  return std::accumulate(values.begin(), values.end(), int64_t{1}, std::multiplies<int64_t>());
}

// Advances a row-major multi-index over `extent`; false after the last one.
bool NextIndex(const std::vector<int64_t>& extent, std::vector<int64_t>* index) {
  for (int axis = static_cast<int>(extent.size()) - 1; axis >= 0; --axis) {
    if (++(*index)[axis] < extent[axis]) return true;
    (*index)[axis] = 0;
  }
  return false;
}

// The half-open range of output positions o along one axis for which the
// input position o * stride - pad + offset lies in [0, in_size).
void ValidOutputRange(int64_t in_size, int64_t out_size, int64_t stride, int64_t pad,
                      int64_t offset, int64_t* begin, int64_t* end) {
  const int64_t shift = offset - pad;  // input position of output 0
  // o * stride + shift >= 0  <=>  o >= ceil(-shift / stride)
  int64_t lo = shift >= 0 ? 0 : (-shift + stride - 1) / stride;
  // o * stride + shift <= in_size - 1  <=>  o <= floor((in_size - 1 - shift) / stride)
  const int64_t last = in_size - 1 - shift;
  int64_t hi = last < 0 ? 0 : last / stride + 1;
  lo = std::min(lo, out_size);
  hi = std::min(hi, out_size);
  *begin = lo;
  *end = std::max(lo, hi);
}

// Walks every (kernel offset, output row) pair of a channel-first image and
// calls visit(image_row_offset_or_-1, out_row_offset, inner_begin,
// inner_end, inner_input_start) where the inner (last) axis runs from
// inner_begin to inner_end over valid positions with input index
// inner_input_start + o * stride_last. Shared by Im2Col and Col2Im (NCHW).
template <typename Visit>
void ForEachNchwRun(const Im2ColShape& s, Visit&& visit) {
  const int dims = static_cast<int>(s.image.size());
  const int last = dims - 1;
  const int64_t out_inner = s.output[last];
  std::vector<int64_t> image_strides(dims, 1);
  for (int axis = dims - 2; axis >= 0; --axis)
    image_strides[axis] = image_strides[axis + 1] * s.image[axis + 1];
  const std::vector<int64_t> outer_extent(s.output.begin(), s.output.end() - 1);
  std::vector<int64_t> k(dims, 0);
  int64_t row = 0;
  do {
    const int64_t inner_offset = k[last] * s.dilation[last];
    int64_t inner_begin, inner_end;
    ValidOutputRange(s.image[last], out_inner, s.stride[last], s.pad_begin[last], inner_offset,
                     &inner_begin, &inner_end);
    const int64_t inner_input_start = inner_offset - s.pad_begin[last];
    std::vector<int64_t> o(dims - 1, 0);
    int64_t out_row = 0;
    do {
      int64_t image_offset = 0;
      bool valid = true;
      for (int axis = 0; axis < last; ++axis) {
        const int64_t in = o[axis] * s.stride[axis] - s.pad_begin[axis] + k[axis] * s.dilation[axis];
        if (in < 0 || in >= s.image[axis]) {
          valid = false;
          break;
        }
        image_offset += in * image_strides[axis];
      }
      visit(row, valid ? image_offset : -1, out_row * out_inner, inner_begin, inner_end,
            inner_input_start);
      ++out_row;
    } while (NextIndex(outer_extent, &o));
    ++row;
  } while (NextIndex(s.kernel, &k));
}

template <typename T>
void Im2ColNchw(const Im2ColShape& s, const T* image, T* col) {
  const int64_t image_size = s.image_size();
  const int64_t kernel_size = s.kernel_size();
  const int64_t out_size = s.output_size();
  const int64_t out_inner = s.output.back();
  const int64_t stride = s.stride.back();
  for (int64_t c = 0; c < s.channels; ++c) {
    const T* channel = image + c * image_size;
    T* channel_rows = col + c * kernel_size * out_size;
    ForEachNchwRun(s, [&](int64_t row, int64_t image_offset, int64_t out_offset, int64_t begin,
                          int64_t end, int64_t input_start) {
      T* dst = channel_rows + row * out_size + out_offset;
      if (image_offset < 0) {
        std::fill(dst, dst + out_inner, T(0));
        return;
      }
      // Offsets stay integers until valid: the window may start in the pad.
      const int64_t base = image_offset + input_start;
      std::fill(dst, dst + begin, T(0));
      if (stride == 1) {
        if (end > begin) std::memcpy(dst + begin, channel + base + begin, (end - begin) * sizeof(T));
      } else {
        for (int64_t o = begin; o < end; ++o) dst[o] = channel[base + o * stride];
      }
      std::fill(dst + end, dst + out_inner, T(0));
    });
  }
}

template <typename T>
void Col2ImNchwAdd(const Im2ColShape& s, const T* col, T* image) {
  const int64_t image_size = s.image_size();
  const int64_t kernel_size = s.kernel_size();
  const int64_t out_size = s.output_size();
  const int64_t stride = s.stride.back();
  for (int64_t c = 0; c < s.channels; ++c) {
    T* channel = image + c * image_size;
    const T* channel_rows = col + c * kernel_size * out_size;
    ForEachNchwRun(s, [&](int64_t row, int64_t image_offset, int64_t out_offset, int64_t begin,
                          int64_t end, int64_t input_start) {
      if (image_offset < 0) return;
      const T* src = channel_rows + row * out_size + out_offset;
      const int64_t base = image_offset + input_start;
      for (int64_t o = begin; o < end; ++o) channel[base + o * stride] += src[o];
    });
  }
}

// Walks every (output position, kernel offset) pair of a channel-last image
// and calls visit(col_offset, image_pixel_or_-1).
template <typename Visit>
void ForEachNhwcPatch(const Im2ColShape& s, Visit&& visit) {
  const int dims = static_cast<int>(s.image.size());
  std::vector<int64_t> image_strides(dims, 1);
  for (int axis = dims - 2; axis >= 0; --axis)
    image_strides[axis] = image_strides[axis + 1] * s.image[axis + 1];
  const int64_t kernel_size = s.kernel_size();
  std::vector<int64_t> o(dims, 0);
  int64_t col_offset = 0;
  do {
    std::vector<int64_t> k(dims, 0);
    for (int64_t kidx = 0; kidx < kernel_size; ++kidx) {
      int64_t pixel = 0;
      bool valid = true;
      for (int axis = 0; axis < dims; ++axis) {
        const int64_t in = o[axis] * s.stride[axis] - s.pad_begin[axis] + k[axis] * s.dilation[axis];
        if (in < 0 || in >= s.image[axis]) {
          valid = false;
          break;
        }
        pixel += in * image_strides[axis];
      }
      visit(col_offset, valid ? pixel : -1);
      col_offset += s.channels;
      NextIndex(s.kernel, &k);
    }
  } while (NextIndex(s.output, &o));
}

template <typename T>
void Im2ColNhwc(const Im2ColShape& s, const T* image, T* col) {
  ForEachNhwcPatch(s, [&](int64_t col_offset, int64_t pixel) {
    T* dst = col + col_offset;
    if (pixel < 0) {
      std::fill(dst, dst + s.channels, T(0));
    } else {
      std::memcpy(dst, image + pixel * s.pixel_stride, s.channels * sizeof(T));
    }
  });
}

template <typename T>
void Col2ImNhwcAdd(const Im2ColShape& s, const T* col, T* image) {
  ForEachNhwcPatch(s, [&](int64_t col_offset, int64_t pixel) {
    if (pixel < 0) return;
    const T* src = col + col_offset;
    T* dst = image + pixel * s.pixel_stride;
    for (int64_t c = 0; c < s.channels; ++c) dst[c] += src[c];
  });
}

}  // namespace

Im2ColShape Im2ColShape::FromGeometry(const ConvPoolGeometry& g, int64_t group_channels) {
  Im2ColShape s;
  s.image = g.input;
  s.output = g.output;
  s.kernel = g.kernel;
  s.stride = g.stride;
  s.dilation = g.dilation;
  s.pad_begin.assign(g.pads.begin(), g.pads.begin() + g.num_spatial());
  s.channels = group_channels;
  s.pixel_stride = g.channels;
  return s;
}

int64_t Im2ColShape::kernel_size() const { return Product(kernel); }
int64_t Im2ColShape::output_size() const { return Product(output); }
int64_t Im2ColShape::image_size() const { return Product(image); }

bool Im2ColShape::IsIdentity() const {
  for (size_t axis = 0; axis < image.size(); ++axis) {
    if (kernel[axis] != 1 || stride[axis] != 1 || pad_begin[axis] != 0 ||
        output[axis] != image[axis]) {
      return false;
    }
  }
  return true;
}

template <typename T>
void Im2ColNd(StorageOrder order, const Im2ColShape& shape, const T* image, T* col) {
  if (shape.output_size() == 0 || shape.channels == 0) return;
  if (order == StorageOrder::kNCHW) {
    Im2ColNchw(shape, image, col);
  } else {
    Im2ColNhwc(shape, image, col);
  }
}

template <typename T>
void Col2ImNdAdd(StorageOrder order, const Im2ColShape& shape, const T* col, T* image) {
  if (shape.output_size() == 0 || shape.channels == 0) return;
  if (order == StorageOrder::kNCHW) {
    Col2ImNchwAdd(shape, col, image);
  } else {
    Col2ImNhwcAdd(shape, col, image);
  }
}

template void Im2ColNd<float>(StorageOrder, const Im2ColShape&, const float*, float*);
template void Im2ColNd<double>(StorageOrder, const Im2ColShape&, const double*, double*);
template void Col2ImNdAdd<float>(StorageOrder, const Im2ColShape&, const float*, float*);
template void Col2ImNdAdd<double>(StorageOrder, const Im2ColShape&, const double*, double*);

}  // namespace doppio

#include "operators/dnnl_permute.h"

#include <dnnl.hpp>
#include <map>
#include <utility>

#include "operators/dnnl_util.h"

namespace doppio {

namespace {

// Below this many elements the primitive's call overhead outweighs the loop.
constexpr int64_t kMinElements = 4096;
constexpr size_t kMaxCached = 256;

struct CachedReorder {
  dnnl::reorder primitive;
  dnnl::memory src, dst;
  bool supported = false;
};

CachedReorder& Lookup(const std::vector<int64_t>& in_dims, const std::vector<int>& axes) {
  thread_local std::map<std::pair<std::vector<int64_t>, std::vector<int>>, CachedReorder> cache;
  auto key = std::make_pair(in_dims, axes);
  auto found = cache.find(key);
  if (found != cache.end()) return found->second;
  if (cache.size() >= kMaxCached) cache.clear();
  CachedReorder& entry = cache[std::move(key)];
  const int ndim = static_cast<int>(in_dims.size());
  dnnl::memory::dims in_strides(ndim, 1), out_dims(ndim), strides(ndim);
  for (int i = ndim - 2; i >= 0; --i) in_strides[i] = in_strides[i + 1] * in_dims[i + 1];
  for (int i = 0; i < ndim; ++i) {
    out_dims[i] = in_dims[axes[i]];
    strides[i] = in_strides[axes[i]];
  }
  dnnl::memory::dims out_strides(ndim, 1);
  for (int i = ndim - 2; i >= 0; --i) out_strides[i] = out_strides[i + 1] * out_dims[i + 1];
  try {
    // The input seen in output order, read with the input's strides.
    const dnnl::memory::desc src(out_dims, dnnl::memory::data_type::f32, strides);
    const dnnl::memory::desc dst(out_dims, dnnl::memory::data_type::f32, out_strides);
    const dnnl::reorder::primitive_desc pd(DnnlCpuEngine(), src, DnnlCpuEngine(), dst,
                                           UserScratchpadAttr());
    // Plain reorders need no scratchpad; one that did would need ours.
    if (pd.scratchpad_desc().get_size() != 0) return entry;
    entry.primitive = dnnl::reorder(pd);
    entry.src = dnnl::memory(src, DnnlCpuEngine(), nullptr);
    entry.dst = dnnl::memory(dst, DnnlCpuEngine(), nullptr);
    entry.supported = true;
  } catch (const dnnl::error&) {
    // Left unsupported: the caller permutes.
  }
  return entry;
}

}  // namespace

bool DnnlPermuteFloat(const std::vector<int64_t>& in_dims, const std::vector<int>& axes,
                      const float* x, float* y) {
  int64_t total = 1;
  for (int64_t dim : in_dims) total *= dim;
  if (total < kMinElements || in_dims.size() > DNNL_MAX_NDIMS || in_dims.size() < 2) {
    return false;
  }
  CachedReorder& entry = Lookup(in_dims, axes);
  if (!entry.supported) return false;
  try {
    thread_local dnnl::stream stream(DnnlCpuEngine());
    entry.src.set_data_handle(const_cast<float*>(x));
    entry.dst.set_data_handle(y);
    entry.primitive.execute(stream, {{DNNL_ARG_FROM, entry.src}, {DNNL_ARG_TO, entry.dst}});
    stream.wait();
  } catch (const dnnl::error&) {
    return false;
  }
  return true;
}

}  // namespace doppio

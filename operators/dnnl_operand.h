// The buffers and reorders around one oneDNN primitive's arguments, for
// ops whose primitives run on our tensors (Conv, ConvGradient).
//
// An op's transient buffers (operands reordered into oneDNN's layouts,
// scratchpads) live only while it runs, in one block of the running
// thread's ThreadArena (operators/thread_arena.h): ArenaLayout says where
// each lies in the block, Bind points them at it. Objects of these classes
// belong to one op and are used by one thread at a time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <dnnl.hpp>
#include <unordered_map>

#include "operators/dnnl_util.h"
#include "operators/thread_arena.h"

namespace doppio {
namespace dnnl_operand {

using dnnl::memory;

// Where an op's transient buffers lie in one block of the running thread's
// ThreadArena. They are needed only during Run: weights change every step,
// activations every batch, so nothing is worth keeping between runs.
// Buffers of primitives that run one after another may share bytes: Rewind
// to a mark taken before the first.
class ArenaLayout {
 public:
  static constexpr size_t kAlignment = 64;  // what oneDNN's own buffers get
  size_t Place(size_t bytes) {
    const size_t offset = end_;
    end_ += (bytes + kAlignment - 1) / kAlignment * kAlignment;
    total_ = std::max(total_, end_);
    return offset;
  }
  size_t Mark() const { return end_; }
  void Rewind(size_t mark) { end_ = mark; }
  size_t total() const { return total_; }

 private:
  size_t end_ = 0;
  size_t total_ = 0;
};

inline char* ArenaBlock(size_t bytes) {
  return static_cast<char*>(ThreadArena::ForThisThread().Reserve(bytes));
}

// One buffer for all primitives of an op: they run one after another.
class Scratchpad {
 public:
  void Reset() { bytes_ = 0; }
  void Need(const memory::desc& desc) { bytes_ = std::max(bytes_, desc.get_size()); }
  void Place(ArenaLayout* layout) {
    const memory::dims dims{static_cast<memory::dim>(std::max<size_t>(bytes_, 1))};
    buffer_ = memory(memory::desc(dims, memory::data_type::u8, memory::format_tag::x),
                     DnnlCpuEngine(), nullptr);
    offset_ = layout->Place(buffer_.get_desc().get_size());
  }
  void Bind(char* block) { buffer_.set_data_handle(block + offset_); }
  void AddTo(std::unordered_map<int, memory>* args) const {
    (*args)[DNNL_ARG_SCRATCHPAD] = buffer_;
  }
  std::unordered_map<int, memory> With(std::unordered_map<int, memory> args) const {
    AddTo(&args);
    return args;
  }

 private:
  size_t bytes_ = 0;
  size_t offset_ = 0;
  memory buffer_;
};

// A dense row-major descriptor of `desc`'s dims.
inline memory::desc DenseDesc(const memory::desc& desc) {
  const memory::dims dims = desc.dims();
  memory::dims strides(dims.size());
  memory::dim step = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    strides[d] = step;
    step *= dims[d];
  }
  return memory::desc(dims, memory::data_type::f32, strides);
}

// One argument of a primitive: the user's buffer in our layout and, when the
// primitive wants another layout, a buffer in the arena plus the reorder
// between. oneDNN converts into some layouts (Winograd's filter) only from a
// dense one: then the data goes through a dense buffer in between.
struct Operand {
  memory user;
  memory inner;
  bool reordered = false;

  void Init(const memory::desc& user_desc, const memory::desc& inner_desc, bool is_input,
            Scratchpad* scratchpad) {
    user = memory(user_desc, DnnlCpuEngine(), nullptr);
    reordered = !(user_desc == inner_desc);
    staged_ = false;
    if (!reordered) {
      inner = user;
      return;
    }
    inner = memory(inner_desc, DnnlCpuEngine(), nullptr);
    scratchpad_ = scratchpad;
    const memory& from = is_input ? user : inner;
    const memory& to = is_input ? inner : user;
    try {
      first_ = MakeReorder(from, to);
    } catch (const dnnl::error&) {
      staged_ = true;
      staging_ = memory(DenseDesc(user_desc), DnnlCpuEngine(), nullptr);
      first_ = MakeReorder(from, staging_);
      second_ = MakeReorder(staging_, to);
    }
  }
  // `inner_in_arena` false: the caller points inner at its own buffer.
  void Place(ArenaLayout* layout, bool inner_in_arena = true) {
    inner_placed_ = reordered && inner_in_arena;
    if (inner_placed_) offset_ = layout->Place(inner.get_desc().get_size());
    if (staged_) staging_offset_ = layout->Place(staging_.get_desc().get_size());
  }
  void Bind(char* block) {
    if (inner_placed_) inner.set_data_handle(block + offset_);
    if (staged_) staging_.set_data_handle(block + staging_offset_);
  }
  // Points at the caller's input and converts it to the primitive's layout.
  void In(dnnl::stream& stream, const float* data) {
    user.set_data_handle(const_cast<float*>(data));
    if (reordered) Reorder(stream, user, inner);
  }
  void SetOut(float* data) { user.set_data_handle(data); }
  // Converts the primitive's result into the caller's output.
  void Out(dnnl::stream& stream) {
    if (reordered) Reorder(stream, inner, user);
  }
  // Converts the caller's `data` into `target`, another operand's buffer of
  // this one's inner layout (a sum post-op's summand into dst).
  void InTo(dnnl::stream& stream, const float* data, const memory& target) {
    user.set_data_handle(const_cast<float*>(data));
    Reorder(stream, user, target);
  }

 private:
  dnnl::reorder MakeReorder(const memory& from, const memory& to) {
    const dnnl::reorder::primitive_desc pd(from, to, UserScratchpadAttr());
    scratchpad_->Need(pd.scratchpad_desc());
    return dnnl::reorder(pd);
  }
  void Reorder(dnnl::stream& stream, const memory& from, const memory& to) {
    if (!staged_) {
      first_.execute(stream, scratchpad_->With({{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}));
      return;
    }
    first_.execute(stream, scratchpad_->With({{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, staging_}}));
    second_.execute(stream, scratchpad_->With({{DNNL_ARG_FROM, staging_}, {DNNL_ARG_TO, to}}));
  }
  Scratchpad* scratchpad_ = nullptr;
  dnnl::reorder first_, second_;
  bool staged_ = false;
  memory staging_;
  bool inner_placed_ = false;
  size_t offset_ = 0;
  size_t staging_offset_ = 0;
};

}  // namespace dnnl_operand
}  // namespace doppio

// Debian's libgloo-dev (0.0~git20220518) installs gloo/transport/tcp/pair.h
// but not the gloo/common/memory.h it includes. lost_peers.cc reads a TCP
// pair's state through pair.h, so this stands in for the missing header.
// Only the layout matters here: pair.h embeds WeakNonOwningPtr in its
// members, so each wrapper must hold exactly the one smart pointer that
// Gloo's own does (a weak_ptr or shared_ptr to T). Nothing here is called.
#pragma once

#if defined(__has_include_next) && __has_include_next(<gloo/common/memory.h>)
#include_next <gloo/common/memory.h>
#else

#include <memory>

namespace gloo {

template <typename T>
class ShareableNonOwningPtr;

template <typename T>
class WeakNonOwningPtr final {
 public:
  WeakNonOwningPtr() = default;

 private:
  std::weak_ptr<T> ptr_;
};

template <typename T>
class NonOwningPtr final {
 public:
  NonOwningPtr() = default;

 private:
  std::shared_ptr<T> ptr_;
};

}  // namespace gloo

#endif

// Feeding and fetching float/int tensors by blob name, for the parallel
// tests that train small nets in a Workspace. Header-only, test-only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/workspace.h"

namespace doppio {
namespace testing {

inline void FeedFloats(Workspace* ws, const std::string& name,
                       const std::vector<int64_t>& dims, const std::vector<float>& values) {
  Tensor* tensor = ws->CreateBlob(name)->GetMutableTensor();
  tensor->Resize(dims);
  std::copy(values.begin(), values.end(), tensor->mutable_data<float>());
}

inline void FeedInts(Workspace* ws, const std::string& name,
                     const std::vector<int32_t>& values) {
  Tensor* tensor = ws->CreateBlob(name)->GetMutableTensor();
  tensor->Resize({static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), tensor->mutable_data<int32_t>());
}

// A float blob's values, or a test failure (and nothing) when it is missing.
inline std::vector<float> Fetch(Workspace* ws, const std::string& name) {
  const Blob* blob = ws->GetBlob(name);
  if (blob == nullptr) {
    ADD_FAILURE() << "no blob '" << name << "'";
    return {};
  }
  const Tensor& tensor = blob->GetTensor();
  return {tensor.data<float>(), tensor.data<float>() + tensor.numel()};
}

}  // namespace testing
}  // namespace doppio

// Utility operators: Copy (deep copy of any dtype), CopyOnDeviceLike (Copy's
// gradient, as in Caffe2), Alias (shares storage) and Print (dumps a tensor
// to stdout or a file).
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>

#include "core/operator.h"

namespace doppio {

// Y = a deep copy of X: shape, dtype and elements, strings included.
class CopyOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// Y = output 0 shares input 0's storage; writing one changes the other.
class AliasOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

class PrintOp final : public Operator<CPUContext> {
 public:
  PrintOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

  // The file `to_file` writes to: the input blob's name with '/' (name
  // scopes) replaced by '_', plus ".log", in the current directory.
  static std::string LogFileName(const std::string& blob_name);

 private:
  std::ostream& Stream();

  int64_t limit_;
  int every_n_;
  int64_t runs_ = 0;
  std::unique_ptr<std::ofstream> file_;
};

}  // namespace doppio

// Typed access to the `arg` list of an OperatorDef or NetDef.
//
// Arguments are read once, in an operator's constructor. A wrong type (a
// string where an int is expected, a float given for an int, a value that does
// not fit) throws an Error naming the argument.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/types.h"
#include "proto/doppio.pb.h"

namespace doppio {

class ArgumentHelper {
 public:
  explicit ArgumentHelper(
      const google::protobuf::RepeatedPtrField<Argument>& args);
  explicit ArgumentHelper(const OperatorDef& def) : ArgumentHelper(def.arg()) {}
  explicit ArgumentHelper(const NetDef& def) : ArgumentHelper(def.arg()) {}

  bool Has(const std::string& name) const { return Find(name) != nullptr; }

  // Supported T: float, double, bool, int, int64_t, std::string, NetDef.
  template <typename T>
  T GetSingle(const std::string& name, const T& default_value) const;
  // Supported T: float, double, bool, int, int64_t, std::string, NetDef.
  template <typename T>
  std::vector<T> GetRepeated(const std::string& name,
                             const std::vector<T>& default_value = {}) const;
  // True when the argument is present and holds a value of kind T.
  template <typename T>
  bool HasSingleOfType(const std::string& name) const;

 private:
  const Argument* Find(const std::string& name) const;
  const google::protobuf::RepeatedPtrField<Argument>& args_;
};

// Replaces the argument `name` (or appends it) with the integer `value`: a
// rewrite must not leave two arguments of one name, since readers take the
// first.
void SetArgument(OperatorDef* op, const std::string& name, int64_t value);
void SetArgument(NetDef* net, const std::string& name, int64_t value);
// The same for an argument of any kind, replacing the one of its name.
void SetArgument(OperatorDef* op, const Argument& arg);

// The dtype argument `name` of an op of `op_type` names: a TensorProto
// DataType number, or its name in any case ("float16"). Errors name the op;
// BYTE (deprecated) and types no tensor holds are refused. What Cast's `to`
// and `from_type` mean, for the ops and for the passes that read them.
DataType CastTypeArgument(const std::string& op_type, const ArgumentHelper& args,
                          const std::string& name);

}  // namespace doppio

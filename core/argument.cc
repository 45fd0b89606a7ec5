#include "core/argument.h"

#include <cctype>
#include <cmath>
#include <limits>

#include "core/enforce.h"

namespace doppio {
namespace {

// What the argument actually carries, for error messages.
std::string DescribeKind(const Argument& arg) {
  if (arg.has_f()) return "a float";
  if (arg.has_i()) return "an int";
  if (arg.has_s()) return "a string";
  if (arg.has_n()) return "a net";
  if (arg.floats_size()) return "a list of floats";
  if (arg.ints_size()) return "a list of ints";
  if (arg.strings_size()) return "a list of strings";
  if (arg.nets_size()) return "a list of nets";
  return "no value";
}

template <typename T>
T IntegerFrom(const Argument& arg, int64_t value) {
  DOPPIO_ENFORCE(value >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                     value <= static_cast<int64_t>(std::numeric_limits<T>::max()),
                 "argument '", arg.name(), "' value ", value,
                 " does not fit the expected integer type");
  return static_cast<T>(value);
}

[[noreturn]] void WrongKind(const Argument& arg, const char* expected) {
  DOPPIO_THROW("argument '", arg.name(), "' should be ", expected, " but holds ",
               DescribeKind(arg));
}

// One conversion per supported type, shared by single and repeated access.
template <typename T>
struct Convert;

template <>
struct Convert<float> {
  static bool HasSingle(const Argument& a) { return a.has_f() || a.has_i(); }
  // Integer literals are accepted for floats, as Caffe2's Python front end
  // writes `alpha=1` as i.
  static float Single(const Argument& a) {
    if (a.has_f()) return a.f();
    if (a.has_i()) return static_cast<float>(a.i());
    WrongKind(a, "a float");
  }
  static std::vector<float> Repeated(const Argument& a) {
    if (a.ints_size() && !a.floats_size()) {
      return std::vector<float>(a.ints().begin(), a.ints().end());
    }
    return std::vector<float>(a.floats().begin(), a.floats().end());
  }
  static bool RepeatedOk(const Argument& a) {
    return !a.strings_size() && !a.nets_size();
  }
};

template <>
struct Convert<double> {
  static bool HasSingle(const Argument& a) { return Convert<float>::HasSingle(a); }
  static double Single(const Argument& a) { return Convert<float>::Single(a); }
  static std::vector<double> Repeated(const Argument& a) {
    auto values = Convert<float>::Repeated(a);
    return std::vector<double>(values.begin(), values.end());
  }
  static bool RepeatedOk(const Argument& a) { return Convert<float>::RepeatedOk(a); }
};

template <typename Int>
struct ConvertInteger {
  static bool HasSingle(const Argument& a) { return a.has_i(); }
  static Int Single(const Argument& a) {
    if (a.has_i()) return IntegerFrom<Int>(a, a.i());
    if (a.has_f()) {
      // A float that is exactly an integer is accepted (Python writes 2.0).
      const float f = a.f();
      if (std::isfinite(f) && std::floor(f) == f) {
        return IntegerFrom<Int>(a, static_cast<int64_t>(f));
      }
      DOPPIO_THROW("argument '", a.name(), "' should be an int but holds the float ", f);
    }
    WrongKind(a, "an int");
  }
  static std::vector<Int> Repeated(const Argument& a) {
    std::vector<Int> values;
    for (int64_t v : a.ints()) values.push_back(IntegerFrom<Int>(a, v));
    return values;
  }
  static bool RepeatedOk(const Argument& a) {
    return !a.floats_size() && !a.strings_size() && !a.nets_size();
  }
};

template <>
struct Convert<int> : ConvertInteger<int> {};
template <>
struct Convert<int64_t> : ConvertInteger<int64_t> {};

template <>
struct Convert<bool> {
  static bool HasSingle(const Argument& a) { return a.has_i(); }
  static bool Single(const Argument& a) {
    return ConvertInteger<int64_t>::Single(a) != 0;
  }
  static std::vector<bool> Repeated(const Argument& a) {
    std::vector<bool> values;
    for (int64_t v : a.ints()) values.push_back(v != 0);
    return values;
  }
  static bool RepeatedOk(const Argument& a) { return ConvertInteger<int64_t>::RepeatedOk(a); }
};

template <>
struct Convert<std::string> {
  static bool HasSingle(const Argument& a) { return a.has_s(); }
  static std::string Single(const Argument& a) {
    if (a.has_s()) return a.s();
    WrongKind(a, "a string");
  }
  static std::vector<std::string> Repeated(const Argument& a) {
    return std::vector<std::string>(a.strings().begin(), a.strings().end());
  }
  static bool RepeatedOk(const Argument& a) {
    return !a.floats_size() && !a.ints_size() && !a.nets_size();
  }
};

template <>
struct Convert<NetDef> {
  static bool HasSingle(const Argument& a) { return a.has_n(); }
  static NetDef Single(const Argument& a) {
    if (a.has_n()) return a.n();
    WrongKind(a, "a net");
  }
  static std::vector<NetDef> Repeated(const Argument& a) {
    return std::vector<NetDef>(a.nets().begin(), a.nets().end());
  }
  static bool RepeatedOk(const Argument& a) {
    return !a.floats_size() && !a.ints_size() && !a.strings_size();
  }
};

}  // namespace

ArgumentHelper::ArgumentHelper(
    const google::protobuf::RepeatedPtrField<Argument>& args)
    : args_(args) {}

const Argument* ArgumentHelper::Find(const std::string& name) const {
  // Later duplicates win, as when a Profile overrides an argument.
  const Argument* found = nullptr;
  for (const Argument& arg : args_) {
    if (arg.name() == name) found = &arg;
  }
  return found;
}

template <typename T>
T ArgumentHelper::GetSingle(const std::string& name, const T& default_value) const {
  const Argument* arg = Find(name);
  if (arg == nullptr) return default_value;
  return Convert<T>::Single(*arg);
}

template <typename T>
std::vector<T> ArgumentHelper::GetRepeated(const std::string& name,
                                           const std::vector<T>& default_value) const {
  const Argument* arg = Find(name);
  if (arg == nullptr) return default_value;
  if (!Convert<T>::RepeatedOk(*arg)) {
    DOPPIO_THROW("argument '", name, "' holds ", DescribeKind(*arg),
                 ", which is not the list type expected");
  }
  return Convert<T>::Repeated(*arg);
}

template <typename T>
bool ArgumentHelper::HasSingleOfType(const std::string& name) const {
  const Argument* arg = Find(name);
  return arg != nullptr && Convert<T>::HasSingle(*arg);
}

#define DOPPIO_INSTANTIATE_ARGUMENT_(T)                                        \
  template T ArgumentHelper::GetSingle<T>(const std::string&, const T&) const; \
  template std::vector<T> ArgumentHelper::GetRepeated<T>(                      \
      const std::string&, const std::vector<T>&) const;                        \
  template bool ArgumentHelper::HasSingleOfType<T>(const std::string&) const;
DOPPIO_INSTANTIATE_ARGUMENT_(float)
DOPPIO_INSTANTIATE_ARGUMENT_(double)
DOPPIO_INSTANTIATE_ARGUMENT_(bool)
DOPPIO_INSTANTIATE_ARGUMENT_(int)
DOPPIO_INSTANTIATE_ARGUMENT_(int64_t)
DOPPIO_INSTANTIATE_ARGUMENT_(std::string)
DOPPIO_INSTANTIATE_ARGUMENT_(NetDef)
#undef DOPPIO_INSTANTIATE_ARGUMENT_

namespace {

void SetInArgs(google::protobuf::RepeatedPtrField<Argument>* args, const Argument& value) {
  for (Argument& arg : *args) {
    if (arg.name() == value.name()) {
      arg = value;
      return;
    }
  }
  *args->Add() = value;
}

void SetIntInArgs(google::protobuf::RepeatedPtrField<Argument>* args, const std::string& name,
                  int64_t value) {
  Argument arg;
  arg.set_name(name);
  arg.set_i(value);
  SetInArgs(args, arg);
}

}  // namespace

void SetArgument(OperatorDef* op, const std::string& name, int64_t value) {
  SetIntInArgs(op->mutable_arg(), name, value);
}

void SetArgument(NetDef* net, const std::string& name, int64_t value) {
  SetIntInArgs(net->mutable_arg(), name, value);
}

void SetArgument(OperatorDef* op, const Argument& arg) { SetInArgs(op->mutable_arg(), arg); }

DataType CastTypeArgument(const std::string& op_type, const ArgumentHelper& args,
                          const std::string& name) {
  DOPPIO_ENFORCE(args.Has(name), "op ", op_type, ": argument '", name, "' is required");
  int value = 0;
  if (args.HasSingleOfType<std::string>(name)) {
    std::string text = args.GetSingle<std::string>(name, "");
    for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    TensorProto::DataType parsed;
    DOPPIO_ENFORCE(TensorProto::DataType_Parse(text, &parsed), "op ", op_type,
                   ": argument '", name, "' is '", args.GetSingle<std::string>(name, ""),
                   "', not the name of a TensorProto.DataType");
    value = parsed;
  } else {
    value = args.GetSingle<int>(name, 0);
  }
  const DataType dtype = static_cast<DataType>(value);
  DOPPIO_ENFORCE(dtype != DataType::kByte, "op ", op_type, ": argument '", name,
                 "' is BYTE, which is deprecated; use UINT8");
  DOPPIO_ENFORCE(IsStorableType(dtype), "op ", op_type, ": argument '", name, "' is ", value,
                 ", not a TensorProto.DataType a tensor can hold");
  return dtype;
}

}  // namespace doppio

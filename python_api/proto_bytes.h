// Protobuf messages cross the Python boundary as serialized bytes (Python
// keeps its own mutable messages, as Caffe2 does). These two helpers are the
// only way the bindings convert them; parsing checks the size limit
// (core/limits.h) before it allocates, and a failure names what was parsed.
#pragma once

#include <string>

#include <google/protobuf/message.h>
#include <pybind11/pybind11.h>

#include "core/enforce.h"
#include "core/limits.h"

namespace doppio {
namespace python {

template <typename Message>
Message ParseProto(const pybind11::bytes& bytes, const std::string& what) {
  Message message;
  const std::string data = bytes;
  EnforceProtoBytesLimit(static_cast<int64_t>(data.size()), what + " from bytes");
  DOPPIO_ENFORCE(message.ParseFromString(data), "cannot parse the ", what, " passed from Python (",
                 data.size(), " bytes)");
  return message;
}

inline pybind11::bytes SerializeProto(const google::protobuf::Message& message) {
  return pybind11::bytes(message.SerializeAsString());
}

}  // namespace python
}  // namespace doppio

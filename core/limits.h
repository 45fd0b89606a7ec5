// Caps on what untrusted input may make Doppio allocate or build.
//
// A tensor in a checkpoint, a TensorProto or a .npy file states its own
// shape; a NetDef states its own number of operators. Those numbers are
// checked against these caps BEFORE anything is allocated from them, so a
// tiny hostile or corrupt file fails with an Error instead of exhausting
// memory. The caps are generous, meant to stop absurd inputs rather than
// large models:
//
//   max tensor bytes  default 16 GiB   env DOPPIO_MAX_TENSOR_BYTES  (suffixes
//                                      K, M, G, T: binary multiples)
//   max net ops       default 1000000  env DOPPIO_MAX_NET_OPS
//   max proto bytes   default 1 GiB    env DOPPIO_MAX_PROTO_BYTES  (suffixes
//                                      as above)
//
// The proto cap bounds a serialized NetDef, PlanDef or TensorProto (a file
// or bytes handed over from Python) before it is parsed: protobuf builds the
// whole message in memory, several times larger than its wire bytes.
//
// The environment is read the first time a cap is consulted; a setter
// overrides it for the rest of the process. A malformed environment value
// fails every check that consults it (naming the variable) rather than being
// ignored, so a typo cannot silently lift or tighten a cap.
//
// Thread-safety: the getters, setters and checks may be called from any
// thread; a set cap applies to checks that start after it.
#pragma once

#include <cstdint>
#include <string>

#include "core/types.h"

namespace doppio {

constexpr int64_t kDefaultMaxTensorBytes = int64_t{16} << 30;
constexpr int64_t kDefaultMaxNetOps = 1000000;
constexpr const char* kMaxTensorBytesEnvVar = "DOPPIO_MAX_TENSOR_BYTES";
constexpr const char* kMaxNetOpsEnvVar = "DOPPIO_MAX_NET_OPS";
constexpr int64_t kDefaultMaxProtoBytes = int64_t{1} << 30;
constexpr const char* kMaxProtoBytesEnvVar = "DOPPIO_MAX_PROTO_BYTES";

// The current caps (from the setter, else the environment, else the default).
int64_t MaxTensorBytes();
int64_t MaxNetOps();
int64_t MaxProtoBytes();

// Replace a cap (> 0) for the whole process; return the previous one. Call
// with the returned value to restore it.
int64_t SetMaxTensorBytes(int64_t bytes);
int64_t SetMaxNetOps(int64_t ops);
int64_t SetMaxProtoBytes(int64_t bytes);

// Throws unless `numel` elements of `dtype` fit MaxTensorBytes(). `what`
// names the tensor and where it comes from ("tensor 'fc_w'", "'x.npy'");
// callers up the stack add the file.
void EnforceTensorBytesLimit(int64_t numel, DataType dtype, const std::string& what);

// Throws unless a net of `num_ops` operators fits MaxNetOps(). `what` names
// the net ("net 'train'").
void EnforceNetOpsLimit(int64_t num_ops, const std::string& what);

// Throws unless a serialized message of `bytes` bytes fits MaxProtoBytes().
// `what` names it and its source ("NetDef file 'net.pb'", "NetDef from
// bytes").
void EnforceProtoBytesLimit(int64_t bytes, const std::string& what);

// Parses a cap as the environment spells it: a positive decimal integer,
// optionally followed by K, M, G or T (powers of 1024) when `allow_suffix`.
// Throws an Error naming `name` on anything else. Exposed for tests.
int64_t ParseLimitValue(const std::string& text, const std::string& name, bool allow_suffix);

}  // namespace doppio

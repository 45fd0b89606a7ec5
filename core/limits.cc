#include "core/limits.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <limits>
#include <mutex>

#include "core/enforce.h"

namespace doppio {
namespace {

// One cap: an explicit setting wins over the environment, which is read
// once (a getenv per deserialized tensor would be wasteful, and a process's
// environment is not expected to change under it).
class Limit {
 public:
  Limit(const char* env_var, int64_t default_value, bool allow_suffix)
      : env_var_(env_var), default_value_(default_value), allow_suffix_(allow_suffix) {}

  int64_t Get() const {
    const int64_t set = explicit_value_.load(std::memory_order_acquire);
    if (set > 0) return set;
    const EnvValue& env = FromEnvironment();
    if (!env.error.empty()) throw Error(env.error);
    return env.value;
  }

  int64_t Set(int64_t value, const char* what) {
    DOPPIO_ENFORCE_GT(value, 0, what, " must be positive");
    int64_t previous = explicit_value_.exchange(value, std::memory_order_acq_rel);
    if (previous > 0) return previous;
    // The first setter reports what was in force; a malformed environment
    // value reports the default, since that is what a restore should mean.
    const EnvValue& env = FromEnvironment();
    return env.error.empty() ? env.value : default_value_;
  }

  const char* env_var() const { return env_var_; }

 private:
  struct EnvValue {
    int64_t value = 0;
    std::string error;
  };

  const EnvValue& FromEnvironment() const {
    std::call_once(env_once_, [this] {
      env_.value = default_value_;
      const char* text = std::getenv(env_var_);
      if (text == nullptr || *text == '\0') return;
      try {
        env_.value = ParseLimitValue(text, env_var_, allow_suffix_);
      } catch (const Error& error) {
        env_.error = error.what();
      }
    });
    return env_;
  }

  const char* env_var_;
  int64_t default_value_;
  bool allow_suffix_;
  std::atomic<int64_t> explicit_value_{0};
  mutable std::once_flag env_once_;
  mutable EnvValue env_;
};

Limit& TensorBytesLimit() {
  static Limit limit(kMaxTensorBytesEnvVar, kDefaultMaxTensorBytes, /*allow_suffix=*/true);
  return limit;
}

Limit& NetOpsLimit() {
  static Limit limit(kMaxNetOpsEnvVar, kDefaultMaxNetOps, /*allow_suffix=*/false);
  return limit;
}

Limit& ProtoBytesLimit() {
  static Limit limit(kMaxProtoBytesEnvVar, kDefaultMaxProtoBytes, /*allow_suffix=*/true);
  return limit;
}

}  // namespace

int64_t ParseLimitValue(const std::string& text, const std::string& name, bool allow_suffix) {
  const std::string expected =
      allow_suffix ? "a positive integer, optionally followed by K, M, G or T"
                   : "a positive integer";
  size_t pos = 0;
  uint64_t value = 0;
  const uint64_t max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    const uint64_t digit = static_cast<uint64_t>(text[pos] - '0');
    DOPPIO_ENFORCE(value <= (max - digit) / 10, "limit ", name, "='", text, "' is too large");
    value = value * 10 + digit;
    ++pos;
  }
  DOPPIO_ENFORCE(pos > 0, "limit ", name, "='", text, "' is not ", expected);
  int shift = 0;
  if (allow_suffix && pos + 1 == text.size()) {
    switch (std::toupper(static_cast<unsigned char>(text[pos]))) {
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      case 'T': shift = 40; break;
      default: break;
    }
    if (shift > 0) ++pos;
  }
  DOPPIO_ENFORCE(pos == text.size(), "limit ", name, "='", text, "' is not ", expected);
  DOPPIO_ENFORCE(value > 0, "limit ", name, "='", text, "' must be positive");
  DOPPIO_ENFORCE(value <= (max >> shift), "limit ", name, "='", text, "' is too large");
  return static_cast<int64_t>(value << shift);
}

int64_t MaxTensorBytes() { return TensorBytesLimit().Get(); }
int64_t MaxNetOps() { return NetOpsLimit().Get(); }
int64_t MaxProtoBytes() { return ProtoBytesLimit().Get(); }

int64_t SetMaxTensorBytes(int64_t bytes) {
  return TensorBytesLimit().Set(bytes, "the tensor byte limit");
}
int64_t SetMaxNetOps(int64_t ops) { return NetOpsLimit().Set(ops, "the net op limit"); }
int64_t SetMaxProtoBytes(int64_t bytes) {
  return ProtoBytesLimit().Set(bytes, "the proto byte limit");
}

void EnforceTensorBytesLimit(int64_t numel, DataType dtype, const std::string& what) {
  DOPPIO_ENFORCE(numel >= 0, "", what, " has a negative element count ", numel);
  const int64_t limit = MaxTensorBytes();
  const int64_t item = static_cast<int64_t>(std::max<size_t>(ItemSize(dtype), 1));
  if (numel <= limit / item) return;
  const int64_t max = std::numeric_limits<int64_t>::max();
  const std::string bytes = numel <= max / item ? std::to_string(numel * item)
                                                : "more than " + std::to_string(max);
  DOPPIO_THROW(what, " would take ", bytes, " bytes (", numel, " elements of ",
               DataTypeName(dtype), "), more than the limit of ", limit,
               " bytes on a tensor read from a file or proto; if the input is trusted, "
               "raise the limit with the environment variable ",
               TensorBytesLimit().env_var(), " (e.g. ", TensorBytesLimit().env_var(),
               "=64G) or doppio::SetMaxTensorBytes");
}

void EnforceNetOpsLimit(int64_t num_ops, const std::string& what) {
  const int64_t limit = MaxNetOps();
  if (num_ops <= limit) return;
  DOPPIO_THROW(what, " has ", num_ops, " operators, more than the limit of ", limit,
               "; if the net is trusted, raise the limit with the environment variable ",
               NetOpsLimit().env_var(), " or doppio::SetMaxNetOps");
}

void EnforceProtoBytesLimit(int64_t bytes, const std::string& what) {
  DOPPIO_ENFORCE(bytes >= 0, "", what, " has a negative size ", bytes);
  const int64_t limit = MaxProtoBytes();
  if (bytes <= limit) return;
  DOPPIO_THROW(what, " is ", bytes, " bytes, more than the limit of ", limit,
               " bytes on a serialized protobuf message (NetDef, PlanDef, TensorProto ...); if "
               "the input is trusted, raise the limit with the environment variable ",
               ProtoBytesLimit().env_var(), " (e.g. ", ProtoBytesLimit().env_var(),
               "=4G) or doppio::SetMaxProtoBytes");
}

}  // namespace doppio

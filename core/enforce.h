// Error reporting for Doppio.
//
// Every user-reachable failure throws doppio::Error with a message that says
// what was wrong and where. As an error travels up (operator -> net ->
// workspace -> Python), each layer appends context (the op's type and name,
// the blob, the net, the file) with AppendContext, so the final message reads
// from the innermost cause outwards. Nothing here aborts the process.
//
// Thread-safety: Error is a value type; the macros are reentrant.
#pragma once

#include <exception>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace doppio {

namespace detail {
inline void StreamAll(std::ostringstream&) {}

template <typename T>
void StreamOne(std::ostringstream& ss, const T& value) {
  ss << value;
}

// Vectors (dims, blob lists) print as [a, b, c]: the commonest context.
template <typename T>
void StreamOne(std::ostringstream& ss, const std::vector<T>& values) {
  ss << '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) ss << ", ";
    ss << values[i];
  }
  ss << ']';
}

template <typename T, typename... Rest>
void StreamAll(std::ostringstream& ss, const T& first, const Rest&... rest) {
  StreamOne(ss, first);
  StreamAll(ss, rest...);
}
}  // namespace detail

// Concatenates any streamable values into a string.
template <typename... Args>
std::string MakeString(const Args&... args) {
  std::ostringstream ss;
  detail::StreamAll(ss, args...);
  return ss.str();
}

class Error : public std::exception {
 public:
  explicit Error(std::string message) : message_(std::move(message)) {}
  Error(const char* file, int line, const std::string& condition,
        const std::string& message);

  const char* what() const noexcept override { return message_.c_str(); }
  // The message without the source location, for one-line CLI reports.
  const std::string& message() const { return message_; }

  // Adds one line of context ("while running op ..."); the outermost layer
  // appends last.
  void AppendContext(const std::string& context);

 private:
  std::string message_;
};

// Errors a front end maps to its own types (Python: ValueError and
// NotImplementedError); every other Error is a runtime error there. Thrown
// where a caller can act on the kind: an argument it passed is invalid, or a
// combination it asked for is not supported yet.
class InvalidArgumentError : public Error {
 public:
  using Error::Error;
};

class NotImplementedError : public Error {
 public:
  using Error::Error;
};

}  // namespace doppio

#define DOPPIO_THROW(...) \
  throw ::doppio::Error(__FILE__, __LINE__, "", ::doppio::MakeString(__VA_ARGS__))

#define DOPPIO_ENFORCE(condition, ...)                                                          \
  do {                                                                                          \
    if (!(condition)) {                                                                         \
      throw ::doppio::Error(__FILE__, __LINE__, #condition, ::doppio::MakeString(__VA_ARGS__)); \
    }                                                                                           \
  } while (false)

// As DOPPIO_ENFORCE, for a case the code does not support (yet), though the
// input is valid: throws NotImplementedError, which a caller may act on (a
// CUDA op then runs its CPU kernel, core/cuda/cuda_fallback_op.h).
#define DOPPIO_ENFORCE_SUPPORTED(condition, ...)                              \
  do {                                                                        \
    if (!(condition)) {                                                       \
      throw ::doppio::NotImplementedError(__FILE__, __LINE__, #condition,     \
                                          ::doppio::MakeString(__VA_ARGS__)); \
    }                                                                         \
  } while (false)

#define DOPPIO_ENFORCE_BINARY_(op, a, b, ...)                                 \
  do {                                                                        \
    const auto& doppio_lhs_ = (a);                                            \
    const auto& doppio_rhs_ = (b);                                            \
    if (!(doppio_lhs_ op doppio_rhs_)) {                                      \
      throw ::doppio::Error(                                                  \
          __FILE__, __LINE__, #a " " #op " " #b,                              \
          ::doppio::MakeString(doppio_lhs_, " vs ", doppio_rhs_, ". ",        \
                               ##__VA_ARGS__));                               \
    }                                                                         \
  } while (false)

#define DOPPIO_ENFORCE_EQ(a, b, ...) DOPPIO_ENFORCE_BINARY_(==, a, b, ##__VA_ARGS__)
#define DOPPIO_ENFORCE_NE(a, b, ...) DOPPIO_ENFORCE_BINARY_(!=, a, b, ##__VA_ARGS__)
#define DOPPIO_ENFORCE_LT(a, b, ...) DOPPIO_ENFORCE_BINARY_(<, a, b, ##__VA_ARGS__)
#define DOPPIO_ENFORCE_LE(a, b, ...) DOPPIO_ENFORCE_BINARY_(<=, a, b, ##__VA_ARGS__)
#define DOPPIO_ENFORCE_GT(a, b, ...) DOPPIO_ENFORCE_BINARY_(>, a, b, ##__VA_ARGS__)
#define DOPPIO_ENFORCE_GE(a, b, ...) DOPPIO_ENFORCE_BINARY_(>=, a, b, ##__VA_ARGS__)

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

// The kinds of Error, chosen where the check is written. A front end maps
// each to its own type (Python: ValueError, IndexError, LookupError and
// NotImplementedError, each also a RuntimeError so code written for Caffe2,
// whose errors were all RuntimeError, still catches them); a plain Error is
// a runtime failure (a file that cannot be read, a peer that died, a bug).
//
//   InvalidArgumentError  a value the caller passed is wrong: an option, an
//                         op argument, a shape, a type (DOPPIO_ENFORCE_ARG)
//   IndexError            an index or position out of its range
//                         (DOPPIO_ENFORCE_INDEX)
//   NotFoundError         a name that does not exist: a blob, an op type, a
//                         net, a key (DOPPIO_ENFORCE_FOUND)
//   NotImplementedError   valid input the code does not support (yet)
//                         (DOPPIO_ENFORCE_SUPPORTED, DOPPIO_NOT_IMPLEMENTED)
class InvalidArgumentError : public Error {
 public:
  using Error::Error;
};

class IndexError : public Error {
 public:
  using Error::Error;
};

class NotFoundError : public Error {
 public:
  using Error::Error;
};

class NotImplementedError : public Error {
 public:
  using Error::Error;
};

}  // namespace doppio

// Every check below throws KIND with the message, the failed condition and
// the file and line; one definition, so all kinds read alike.
// The condition's text is passed in, stringized by the public macro, so it
// reads as written rather than macro-expanded.
#define DOPPIO_ENFORCE_KIND_(kind, condition, text, ...)                       \
  do {                                                                         \
    if (!(condition)) {                                                        \
      throw kind(__FILE__, __LINE__, text, ::doppio::MakeString(__VA_ARGS__)); \
    }                                                                          \
  } while (false)

#define DOPPIO_THROW(...) \
  throw ::doppio::Error(__FILE__, __LINE__, "", ::doppio::MakeString(__VA_ARGS__))

// A runtime failure: I/O, a peer, an invariant of Doppio's own.
#define DOPPIO_ENFORCE(condition, ...) \
  DOPPIO_ENFORCE_KIND_(::doppio::Error, condition, #condition, ##__VA_ARGS__)

// A value the user passed (an option, an op argument, an input's shape or
// type) is invalid: ValueError in Python.
#define DOPPIO_ENFORCE_ARG(condition, ...) \
  DOPPIO_ENFORCE_KIND_(::doppio::InvalidArgumentError, condition, #condition, ##__VA_ARGS__)
#define DOPPIO_THROW_ARG(...)                                                       \
  throw ::doppio::InvalidArgumentError(__FILE__, __LINE__, "",                      \
                                       ::doppio::MakeString(__VA_ARGS__))

// An index out of its range: IndexError in Python.
#define DOPPIO_ENFORCE_INDEX(condition, ...) \
  DOPPIO_ENFORCE_KIND_(::doppio::IndexError, condition, #condition, ##__VA_ARGS__)

// A name that must exist does not (blob, op type, net, key): LookupError in
// Python.
#define DOPPIO_ENFORCE_FOUND(condition, ...) \
  DOPPIO_ENFORCE_KIND_(::doppio::NotFoundError, condition, #condition, ##__VA_ARGS__)

// A case the code does not support (yet), though the input is valid:
// NotImplementedError, which a caller may act on (a CUDA op then runs its
// CPU kernel, core/cuda/cuda_fallback_op.h).
#define DOPPIO_ENFORCE_SUPPORTED(condition, ...) \
  DOPPIO_ENFORCE_KIND_(::doppio::NotImplementedError, condition, #condition, ##__VA_ARGS__)
#define DOPPIO_NOT_IMPLEMENTED(...)                                                 \
  throw ::doppio::NotImplementedError(__FILE__, __LINE__, "",                       \
                                      ::doppio::MakeString(__VA_ARGS__))

#define DOPPIO_ENFORCE_BINARY_(kind, op, a, b, ...)                           \
  do {                                                                        \
    const auto& doppio_lhs_ = (a);                                            \
    const auto& doppio_rhs_ = (b);                                            \
    if (!(doppio_lhs_ op doppio_rhs_)) {                                      \
      throw kind(__FILE__, __LINE__, #a " " #op " " #b,                       \
                 ::doppio::MakeString(doppio_lhs_, " vs ", doppio_rhs_, ". ", \
                                      ##__VA_ARGS__));                        \
    }                                                                         \
  } while (false)

#define DOPPIO_ENFORCE_EQ(a, b, ...) \
  DOPPIO_ENFORCE_BINARY_(::doppio::Error, ==, a, b, ##__VA_ARGS__)
#define DOPPIO_ENFORCE_NE(a, b, ...) \
  DOPPIO_ENFORCE_BINARY_(::doppio::Error, !=, a, b, ##__VA_ARGS__)
#define DOPPIO_ENFORCE_LT(a, b, ...) \
  DOPPIO_ENFORCE_BINARY_(::doppio::Error, <, a, b, ##__VA_ARGS__)
#define DOPPIO_ENFORCE_LE(a, b, ...) \
  DOPPIO_ENFORCE_BINARY_(::doppio::Error, <=, a, b, ##__VA_ARGS__)
#define DOPPIO_ENFORCE_GT(a, b, ...) \
  DOPPIO_ENFORCE_BINARY_(::doppio::Error, >, a, b, ##__VA_ARGS__)
#define DOPPIO_ENFORCE_GE(a, b, ...) \
  DOPPIO_ENFORCE_BINARY_(::doppio::Error, >=, a, b, ##__VA_ARGS__)

// The same comparisons for user input (InvalidArgumentError).
#define DOPPIO_ENFORCE_ARG_EQ(a, b, ...) \
  DOPPIO_ENFORCE_BINARY_(::doppio::InvalidArgumentError, ==, a, b, ##__VA_ARGS__)
#define DOPPIO_ENFORCE_ARG_NE(a, b, ...) \
  DOPPIO_ENFORCE_BINARY_(::doppio::InvalidArgumentError, !=, a, b, ##__VA_ARGS__)
#define DOPPIO_ENFORCE_ARG_LT(a, b, ...) \
  DOPPIO_ENFORCE_BINARY_(::doppio::InvalidArgumentError, <, a, b, ##__VA_ARGS__)
#define DOPPIO_ENFORCE_ARG_LE(a, b, ...) \
  DOPPIO_ENFORCE_BINARY_(::doppio::InvalidArgumentError, <=, a, b, ##__VA_ARGS__)
#define DOPPIO_ENFORCE_ARG_GT(a, b, ...) \
  DOPPIO_ENFORCE_BINARY_(::doppio::InvalidArgumentError, >, a, b, ##__VA_ARGS__)
#define DOPPIO_ENFORCE_ARG_GE(a, b, ...) \
  DOPPIO_ENFORCE_BINARY_(::doppio::InvalidArgumentError, >=, a, b, ##__VA_ARGS__)
